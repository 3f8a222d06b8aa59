// Arrays spread over a mesh (JAX's sharded jax.Array): one block per mesh
// position, laid out by a PartitionSpec. Reading the whole array on the host
// assembles (and caches) it; every such pull is counted.
#pragma once
#include <memory>
#include <mutex>

#include "ir/tensor.hpp"
#include "runtime/mesh.hpp"

namespace pxl {

struct ShardedData {
  Mesh mesh;
  PartitionSpec spec;
  AVal global;
  std::vector<Array> shards; // one per mesh position, tagged with its device

  // The whole array on the host (device 0), assembled once.
  const Array& assemble() const;
  bool spans_devices() const { return mesh.size() > 1; }

private:
  mutable std::once_flag once_;
  mutable Array whole_;
};

// Splits `global` into the blocks `spec` assigns to each device of `mesh`
// (call check_spec first).
std::shared_ptr<ShardedData> shard_array(const Array& global, const Mesh& mesh,
                                         const PartitionSpec& spec);
Tensor make_sharded_tensor(std::shared_ptr<const ShardedData> data);

// Copies the block [start, start + shape) of `src` (host helper for sharding).
Array slice_block(const Array& src, const std::vector<int64_t>& start, const Shape& shape);
// Writes `block` into `dst` at `start`.
void write_block(Array& dst, const Array& block, const std::vector<int64_t>& start);

} // namespace pxl
