// Loops built by transformations (stdlib/while_loop.cpp).
#pragma once
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "ir/tensor.hpp"
#include "runtime/exec_mode.hpp"

namespace pxl {

class CodeCache;
class TraceContext;

// Binds in `cx` a while loop over `init` (typed `carry_avals`) whose cond and
// body are recorded by the callbacks from the carry parameters (values of
// `cx` they use become the loop's constants). `trip_count`: the number of
// iterations when known (ir/while_loop.hpp), else -1.
std::vector<Tensor>
bind_loop(OpContext& cx, const std::string& cond_name, const std::string& body_name,
          const std::vector<AVal>& carry_avals, std::span<const Tensor> init,
          const std::function<Tensor(TraceContext&, std::span<const Tensor>)>& cond,
          const std::function<std::vector<Tensor>(TraceContext&, std::span<const Tensor>)>& body,
          ExecMode mode, CodeCache* cache, int64_t trip_count = -1);

} // namespace pxl
