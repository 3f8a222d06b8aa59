#include "runtime/sharded.hpp"

#include <cstring>
#include <set>

#include "lang/diag.hpp"

namespace pxl {

namespace {

// Copies a rectangular block between row-major arrays of the same dtype:
// `to_block` = true copies src[start + i] -> dst[i], else src[i] -> dst[start + i].
void copy_block(const Array& big, Array& small_or_big, const Array* small_src,
                const std::vector<int64_t>& start, const Shape& shape, bool to_block) {
  size_t es = dtype_size(big.dtype());
  int nd = static_cast<int>(shape.size());
  if (shape_size(shape) == 0) return;
  const Shape& bs = big.shape();
  // Innermost contiguous run.
  int64_t run = nd ? shape[nd - 1] : 1;
  std::vector<int64_t> idx(nd, 0);
  int64_t rows = nd ? shape_size(shape) / run : 1;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t off_big = 0, off_small = 0;
    for (int d = 0; d < nd; ++d) {
      off_big = off_big * bs[d] + start[d] + idx[d];
      off_small = off_small * shape[d] + idx[d];
    }
    if (to_block)
      std::memcpy(static_cast<char*>(small_or_big.data()) + off_small * es,
                  static_cast<const char*>(big.data()) + off_big * es, run * es);
    else
      std::memcpy(static_cast<char*>(small_or_big.data()) + off_big * es,
                  static_cast<const char*>(small_src->data()) + off_small * es, run * es);
    for (int d = nd - 2; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
}

} // namespace

Array slice_block(const Array& src, const std::vector<int64_t>& start, const Shape& shape) {
  // A block is one contiguous run of `src` when it takes whole trailing
  // dimensions after at most one partial one, with single indices before it:
  // then it is a view, not a copy.
  const Shape& full = src.shape();
  size_t nd = shape.size(), k = nd;
  while (k > 0 && shape[k - 1] == full[k - 1]) --k;
  bool contiguous = true;
  for (size_t d = 0; d + 1 < k; ++d) contiguous &= shape[d] == 1;
  if (contiguous && shape_size(shape) > 0) {
    int64_t first = 0;
    for (size_t d = 0; d < nd; ++d) first = first * full[d] + start[d];
    return src.view(first, shape);
  }
  Array out(src.dtype(), shape, src.weak_type());
  copy_block(src, out, nullptr, start, shape, true);
  return out;
}

void write_block(Array& dst, const Array& block, const std::vector<int64_t>& start) {
  copy_block(dst, dst, &block, start, block.shape(), false);
}

namespace {
// Adds device `pos`'s block into `whole` once per distinct block position and
// coordinates along the unreduced axes (replicas over the other axes repeat
// the same partial sum).
void add_partial_block(Array& whole, const Array& block, const ShardBlock& b, const Mesh& mesh,
                       const PartitionSpec& spec, int64_t pos,
                       std::set<std::vector<int64_t>>& written) {
  std::vector<int64_t> key = b.start, c = mesh.coords(pos);
  for (const std::string& u : spec.unreduced)
    if (int a = mesh.axis_of(u); a >= 0) key.push_back(c[static_cast<size_t>(a)]);
  if (!written.insert(key).second) return;
  Array part = slice_block(whole, b.start, b.shape); // zeros until a first block lands
  for (int64_t i = 0; i < part.size(); ++i) {
    Scalar x = block.get(i), acc = part.get(i);
    if (x.kind == Scalar::Kind::Float || x.kind == Scalar::Kind::Complex) {
      Scalar sum = Scalar::of_complex(acc.f + x.f, acc.im + x.im);
      sum.kind = x.kind;
      part.set(i, sum);
    } else if (x.kind == Scalar::Kind::Bool) {
      part.set(i, Scalar::of_bool(acc.i || x.i));
    } else {
      part.set(i, Scalar::of_int(acc.i + x.i));
    }
  }
  write_block(whole, part, b.start);
}
} // namespace

const Array& ShardedData::assemble() const {
  std::call_once(once_, [&] {
    Array whole(global.dtype, global.shape, global.weak);
    // Each block from its first holder (replica 0), as JAX reads it: replicas
    // may differ where nothing checked they agree (pmap's out_axes=None).
    std::set<std::vector<int64_t>> written;
    for (int64_t pos = 0; pos < mesh.size(); ++pos) {
      ShardBlock b = block_of(mesh, spec, global.shape, pos);
      if (!spec.unreduced.empty()) { // partial sums: the whole is their sum
        add_partial_block(whole, shards[pos], b, mesh, spec, pos, written);
        continue;
      }
      if (written.insert(b.start).second) write_block(whole, shards[pos], b.start);
    }
    whole_ = whole;
    assembled_.store(true, std::memory_order_release);
    if (pull_log) pull_log->record(static_cast<int64_t>(whole.nbytes()));
  });
  return whole_;
}

std::shared_ptr<ShardedData> shard_array(const Array& global, const Mesh& mesh,
                                         const PartitionSpec& spec, std::shared_ptr<PullLog> log) {
  auto d = std::make_shared<ShardedData>();
  d->pull_log = std::move(log);
  d->mesh = mesh;
  d->spec = spec;
  d->global = global.aval();
  for (int64_t pos = 0; pos < mesh.size(); ++pos) {
    ShardBlock b = block_of(mesh, spec, global.shape(), pos);
    // Unreduced axes: the value is the sum of the devices' blocks, so (as in
    // JAX) the first device along them holds it and the others zeros.
    bool zero = false;
    std::vector<int64_t> c = mesh.coords(pos);
    for (const std::string& u : spec.unreduced)
      if (int a = mesh.axis_of(u); a >= 0 && c[static_cast<size_t>(a)] != 0) zero = true;
    if (zero) {
      d->shards.push_back(Array(global.dtype(), b.shape, global.weak_type(), mesh.device_ids[pos]));
      continue;
    }
    d->shards.push_back(slice_block(global, b.start, b.shape).on_device(mesh.device_ids[pos]));
  }
  return d;
}

Tensor make_sharded_tensor(std::shared_ptr<const ShardedData> data) {
  auto t = std::make_shared<TensorImpl>();
  t->aval = data->global;
  t->sharded = std::move(data);
  return t;
}

void wait_ready(const TensorImpl& t) {
  if (t.concrete) t.concrete->block_until_ready();
  if (t.sharded)
    for (const Array& shard : t.sharded->shards) shard.block_until_ready();
}

} // namespace pxl
