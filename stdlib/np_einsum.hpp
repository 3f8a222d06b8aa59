// jnp.einsum's parsing and contraction order, as JAX's (which parses with
// opt_einsum and contracts along its path): used by the jnp module's einsum
// and einsum_path bindings.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "stdlib/np.hpp"

namespace pxl::np {

// A contraction path: each step names the positions (in the current operand
// list, where each step's result goes last) of the operands it contracts.
using EinsumPath = std::vector<std::vector<int64_t>>;

// How the path is chosen: JAX's optimize= (True and the strategy names pick
// opt_einsum's optimal path, False contracts left to right) or a given path.
struct EinsumOptimize {
  bool left_to_right = false;
  std::optional<EinsumPath> path;
};

Tensor einsum(OpContext& cx, const std::string& spec, const std::vector<Tensor>& operands,
              const EinsumOptimize& optimize, std::array<uint8_t, 2> precision = {});

// jnp.einsum_path: the path einsum takes and opt_einsum's printed PathInfo.
struct EinsumPathInfo {
  EinsumPath path;
  std::string info;
};
EinsumPathInfo einsum_path(const std::string& spec, const std::vector<Shape>& shapes,
                           const EinsumOptimize& optimize);

} // namespace pxl::np
