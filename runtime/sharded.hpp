// Arrays spread over a mesh (JAX's sharded jax.Array): one block per mesh
// position, laid out by a PartitionSpec. Reading the whole array on the host
// assembles (and caches) it; every such pull is counted.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>

#include "ir/tensor.hpp"
#include "runtime/mesh.hpp"

namespace pxl {

// Every gather of a sharded array to the host, with the .pxl line that caused
// it (the location of the operation being bound when it happened). Shared by
// the interpreter's eager context and the arrays, which may outlive it.
class PullLog {
public:
  struct Pull {
    Span loc;
    int64_t bytes = 0;
  };
  explicit PullLog(const OpContext* cx) : cx_(cx) {}
  void record(int64_t bytes) {
    std::lock_guard<std::mutex> g(m_);
    pulls_.push_back({cx_ ? cx_->loc : Span{}, bytes});
  }
  void detach() {
    std::lock_guard<std::mutex> g(m_);
    cx_ = nullptr;
  }
  // The location of the operation being bound now (none once detached).
  Span site() const {
    std::lock_guard<std::mutex> g(m_);
    return cx_ ? cx_->loc : Span{};
  }
  std::vector<Pull> pulls() const {
    std::lock_guard<std::mutex> g(m_);
    return pulls_;
  }

private:
  mutable std::mutex m_;
  const OpContext* cx_;
  std::vector<Pull> pulls_;
};

struct ShardedData {
  std::shared_ptr<PullLog> pull_log; // may be null (not counted)
  Mesh mesh;
  PartitionSpec spec;
  AVal global;
  std::vector<Array> shards; // one per mesh position, tagged with its device

  // The whole array on the host (device 0), assembled once.
  const Array& assemble() const;
  bool assembled() const { return assembled_.load(std::memory_order_acquire); }
  bool spans_devices() const { return mesh.size() > 1; }

private:
  mutable std::once_flag once_;
  mutable Array whole_;
  mutable std::atomic<bool> assembled_{false};
};

// Splits `global` into the blocks `spec` assigns to each device of `mesh`
// (call check_spec first).
std::shared_ptr<ShardedData> shard_array(const Array& global, const Mesh& mesh,
                                         const PartitionSpec& spec,
                                         std::shared_ptr<PullLog> log = nullptr);
Tensor make_sharded_tensor(std::shared_ptr<const ShardedData> data);
// Waits until a concrete or sharded tensor's contents are computed: device-
// backed arrays (runtime/cuda/) are computed asynchronously (block_until_ready).
void wait_ready(const TensorImpl& t);

// Copies the block [start, start + shape) of `src` (host helper for sharding).
Array slice_block(const Array& src, const std::vector<int64_t>& start, const Shape& shape);
// Writes `block` into `dst` at `start`.
void write_block(Array& dst, const Array& block, const std::vector<int64_t>& start);

} // namespace pxl
