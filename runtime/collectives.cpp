// CommWorld: every collective is one of two shapes.
//
// Small (each participant's input <= small_bytes_): every thread copies its
// participants' inputs into the world's staging area, one barrier, then each
// thread computes its own participants' outputs from the staged copies. One
// barrier per call is the whole latency, and nobody reads another thread's
// buffers, so callers may reuse them as soon as the call returns.
//
// Large: every thread publishes pointers to its participants' buffers, barrier,
// then the element space of all groups is cut into T contiguous ranges and each
// thread does its range for every participant involved (for all_reduce: read
// the G inputs once in rank order, write the result straight into all G
// outputs — one pass, the memory-traffic minimum), then a second barrier so no
// buffer is reused while another thread still reads or writes it.
//
// Tables written before a barrier and read after it are double-buffered by the
// parity of the call number: call n+2 can only overwrite call n's entries after
// passing call n+1's barrier, which every thread reaches only once done with n.
#include "runtime/collectives.hpp"

#include <algorithm>
#include <cstring>

#include "lang/diag.hpp"
#include "runtime/collective_kernels.hpp"
#include "runtime/rendezvous.hpp"

namespace pxl {

namespace {

enum class Op : uint8_t { AllReduce, AllGather, ReduceScatter, AllToAll, Ppermute, Barrier };

const char* op_name(Op op) {
  switch (op) {
  case Op::AllReduce:
    return "all_reduce";
  case Op::AllGather:
    return "all_gather";
  case Op::ReduceScatter:
    return "reduce_scatter";
  case Op::AllToAll:
    return "all_to_all";
  case Op::Ppermute:
    return "ppermute";
  case Op::Barrier:
    return "barrier";
  }
  return "?";
}

// What each thread says it is calling; compared after the first barrier so a
// program whose devices diverge fails loudly instead of mixing up buffers.
struct CallDesc {
  Op op = Op::Barrier;
  ReduceKind kind = ReduceKind::Sum;
  DType dtype = DType::Float32;
  int64_t count = 0;
  uint64_t layout_hash = 0;
  uint64_t perm_hash = 0;
  bool operator==(const CallDesc&) const = default;
};

// One per thread, on its own cache line: every thread writes its own.
struct alignas(64) PaddedDesc {
  CallDesc d;
};

struct Slot {
  const void* in = nullptr;
  void* out = nullptr;
};

std::string site_text(const CollectiveSite& site) {
  std::string s = site.what.empty() ? "collective" : site.what;
  if (!site.location.empty()) s += " at " + site.location;
  return s;
}

std::string describe_call(const CallDesc& d) {
  std::string s = op_name(d.op);
  if (d.op != Op::Barrier)
    s += std::string("(") + dtype_name(d.dtype) + "[" + std::to_string(d.count) + "])";
  return s;
}

uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 1099511628211ull; }

// Per call, one contiguous range of a rows x row element space per thread, cut
// at multiples of `align` elements so two threads never write one cache line.
int64_t cut(int t, int nthreads, int64_t rows, int64_t row, int64_t align) {
  int64_t total = rows * row;
  if (t >= nthreads) return total;
  int64_t b = int64_t((__int128)total * t / nthreads);
  int64_t r = b / row, e = b % row;
  return r * row + (e - e % align);
}

// Calls fn(row, first, len) for the pieces of [begin, end) in a rows x row
// space, never crossing a multiple of `piece` within a row.
template <class Fn> void for_range(int64_t begin, int64_t end, int64_t row, int64_t piece, Fn fn) {
  for (int64_t pos = begin; pos < end;) {
    int64_t r = pos / row, e = pos % row;
    int64_t len = std::min({row - e, end - pos, piece - e % piece});
    fn(r, e, len);
    pos += len;
  }
}

} // namespace

struct CommWorld::Impl {
  struct alignas(64) PerThread {
    uint64_t calls = 0;
    // This thread's participants: group and rank of mine[i].
    std::vector<int> group, rank;
    std::vector<char> seen;
    std::vector<const void*> ins;
    std::vector<void*> outs;
    std::vector<int> src_of; // ppermute: source rank of each destination rank
  };

  Impl(int t, int k, std::chrono::milliseconds timeout)
      : num_threads(t), per_thread(k), num_participants(t * k), rv(t, timeout),
        timeout_ms(timeout.count()) {
    // Staging: both parities, every participant. Capped so a pmap over
    // thousands of elements does not pin hundreds of MiB; larger inputs take
    // the two-barrier path, which stages nothing.
    small_bytes =
        std::clamp<size_t>((32u << 20) / size_t(num_participants), 256, 8192) & ~size_t(63);
    for (int p = 0; p < 2; ++p) {
      slots[p].resize(size_t(num_participants));
      descs[p].reset(new PaddedDesc[size_t(num_threads)]);
      staging[p].reset(new (std::align_val_t(64)) std::byte[small_bytes * num_participants]);
    }
    threads.reset(new PerThread[size_t(num_threads)]);
  }

  struct AlignedDelete {
    void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t(64)); }
  };

  const int num_threads, per_thread, num_participants;
  Rendezvous rv;
  const long long timeout_ms;
  size_t small_bytes = 0;
  std::vector<Slot> slots[2];
  std::unique_ptr<PaddedDesc[]> descs[2];
  std::unique_ptr<std::byte[], AlignedDelete> staging[2];
  std::unique_ptr<PerThread[]> threads;

  [[noreturn]] void fail(const CollectiveSite& site) {
    Rendezvous::Failure f = rv.failure();
    std::string msg = f.from_outside ? site_text(site) + " abandoned: " + f.message : f.message;
    throw Error(ErrCode::Device, msg);
  }
  // A bad call on one thread must not leave the others waiting for it.
  [[noreturn]] void misuse(const CollectiveSite& site, const std::string& what) {
    rv.abort(site_text(site) + ": " + what);
    throw Error(ErrCode::Internal, site_text(site) + ": " + what);
  }
  void arrive(int thread, const CollectiveSite& site) {
    auto describe = [&](const std::vector<int>& missing) {
      std::string s = site_text(site) + " timed out after " + std::to_string(timeout_ms) +
                      " ms: device" + (missing.size() == 1 ? " " : "s ");
      for (size_t i = 0; i < missing.size(); ++i) s += (i ? ", " : "") + std::to_string(missing[i]);
      s += " of " + std::to_string(num_threads) +
           " never reached it (every device must run the same collectives in the same order)";
      return s;
    };
    if (!rv.arrive(thread, describe)) fail(site);
  }

  // Checks the arguments, finds this thread's participants in the layout and
  // publishes the call. Returns the parity for the double-buffered tables.
  int begin(int thread, std::span<const LocalBuffers> mine, const GroupLayout& g, CallDesc desc,
            const CollectiveSite& site, const std::vector<std::pair<int, int>>* perm);
  // After the first barrier: every thread must be making the same call.
  void check_agreement(int parity, int thread, const CollectiveSite& site) {
    const PaddedDesc* d = descs[parity].get();
    for (int t = 1; t < num_threads; ++t) {
      if (d[t].d == d[0].d) continue;
      std::string msg = site_text(site) + ": devices disagree on the collective: device 0 called " +
                        describe_call(d[0].d) + ", device " + std::to_string(t) + " called " +
                        describe_call(d[t].d);
      rv.abort(msg);
      fail(site);
    }
    (void)thread;
  }
  std::byte* stage(int parity, int pid) {
    return staging[parity].get() + size_t(pid) * small_bytes;
  }

  void run(int thread, std::span<const LocalBuffers> mine, const GroupLayout& g, CallDesc desc,
           const CollectiveSite& site, const std::vector<std::pair<int, int>>* perm = nullptr);
  void run_small(int parity, int thread, std::span<const LocalBuffers> mine, const GroupLayout& g,
                 const CallDesc& d);
  void run_large(int parity, int thread, const GroupLayout& g, const CallDesc& d);
};

int CommWorld::Impl::begin(int thread, std::span<const LocalBuffers> mine, const GroupLayout& g,
                           CallDesc desc, const CollectiveSite& site,
                           const std::vector<std::pair<int, int>>* perm) {
  if (rv.aborted()) fail(site);
  if (thread < 0 || thread >= num_threads)
    misuse(site, "thread index " + std::to_string(thread) + " out of range");
  PerThread& me = threads[thread];
  if (desc.op != Op::Barrier) {
    if (int64_t(mine.size()) != per_thread)
      misuse(site, "expected " + std::to_string(per_thread) + " local buffers, got " +
                       std::to_string(mine.size()));
    if (desc.count < 0) misuse(site, "negative element count");
    if (g.num_participants != num_participants || g.groups.empty())
      misuse(site, "group layout is for " + std::to_string(g.num_participants) +
                       " participants, the world has " + std::to_string(num_participants));
    size_t gsize = g.groups[0].size();
    if (gsize == 0 || gsize * g.groups.size() != size_t(num_participants))
      misuse(site, "groups must partition the participants into equal non-empty groups");
    me.seen.assign(size_t(num_participants), 0);
    me.group.assign(size_t(per_thread), -1);
    me.rank.assign(size_t(per_thread), -1);
    uint64_t h = mix(mix(1469598103934665603ull, gsize), g.groups.size());
    for (size_t gi = 0; gi < g.groups.size(); ++gi) {
      const auto& grp = g.groups[gi];
      if (grp.size() != gsize) misuse(site, "groups of different sizes");
      for (size_t r = 0; r < gsize; ++r) {
        int p = grp[r];
        if (p < 0 || p >= num_participants || me.seen[size_t(p)])
          misuse(site, "participant " + std::to_string(p) + " out of range or in two groups");
        me.seen[size_t(p)] = 1;
        h = mix(h, uint64_t(p));
        if (p / per_thread == thread) {
          me.group[size_t(p % per_thread)] = int(gi);
          me.rank[size_t(p % per_thread)] = int(r);
        }
      }
    }
    desc.layout_hash = h;
    int G = int(gsize);
    if ((desc.op == Op::ReduceScatter || desc.op == Op::AllToAll) && desc.count % G != 0)
      misuse(site, "element count " + std::to_string(desc.count) +
                       " is not divisible by the group size " + std::to_string(G));
    if (perm) {
      me.src_of.assign(size_t(G), -1);
      std::vector<char> sends(size_t(G), 0);
      uint64_t ph = 1469598103934665603ull;
      for (auto [s, d] : *perm) {
        if (s < 0 || s >= G || d < 0 || d >= G || sends[size_t(s)] || me.src_of[size_t(d)] >= 0)
          misuse(site, "ppermute pairs must be unique ranks in [0, " + std::to_string(G) + ")");
        sends[size_t(s)] = 1;
        me.src_of[size_t(d)] = s;
        ph = mix(mix(ph, uint64_t(s)), uint64_t(d));
      }
      desc.perm_hash = ph;
    }
    if (desc.count > 0)
      for (const LocalBuffers& b : mine)
        if (!b.in || !b.out) misuse(site, "null buffer");
  }
  int parity = int(me.calls++ & 1);
  descs[parity][thread].d = desc;
  return parity;
}

void CommWorld::Impl::run(int thread, std::span<const LocalBuffers> mine, const GroupLayout& g,
                          CallDesc desc, const CollectiveSite& site,
                          const std::vector<std::pair<int, int>>* perm) {
  int parity = begin(thread, mine, g, desc, site, perm);
  const CallDesc& d = descs[parity][thread].d;
  if (d.op == Op::Barrier) {
    arrive(thread, site);
    check_agreement(parity, thread, site);
    return;
  }
  size_t bytes = size_t(d.count) * dtype_size(d.dtype);
  bool small = bytes <= small_bytes;
  if (small) {
    for (int i = 0; i < per_thread; ++i)
      if (bytes) std::memcpy(stage(parity, thread * per_thread + i), mine[size_t(i)].in, bytes);
  } else {
    for (int i = 0; i < per_thread; ++i)
      slots[parity][size_t(thread * per_thread + i)] = {mine[size_t(i)].in, mine[size_t(i)].out};
  }
  arrive(thread, site);
  check_agreement(parity, thread, site);
  if (small) {
    run_small(parity, thread, mine, g, d);
  } else {
    run_large(parity, thread, g, d);
    arrive(thread, site);
  }
}

void CommWorld::Impl::run_small(int parity, int thread, std::span<const LocalBuffers> mine,
                                const GroupLayout& g, const CallDesc& d) {
  PerThread& me = threads[thread];
  const size_t esz = dtype_size(d.dtype);
  const int G = int(g.groups[0].size());
  const int64_t c = d.count / G; // chunk, for the collectives that split
  me.ins.resize(size_t(G));
  for (int i = 0; i < per_thread; ++i) {
    const auto& grp = g.groups[size_t(me.group[size_t(i)])];
    const int r = me.rank[size_t(i)];
    auto* out = static_cast<std::byte*>(mine[size_t(i)].out);
    auto staged = [&](int rank) { return stage(parity, grp[size_t(rank)]); };
    switch (d.op) {
    case Op::AllReduce:
    case Op::ReduceScatter: {
      bool rs = d.op == Op::ReduceScatter;
      for (int j = 0; j < G; ++j) me.ins[size_t(j)] = staged(j) + (rs ? size_t(r * c) * esz : 0);
      void* outs[1] = {out};
      coll::reduce(d.dtype, rs ? ReduceKind::Sum : d.kind, me.ins.data(), G, outs, 1,
                   rs ? c : d.count);
      break;
    }
    case Op::AllGather:
      for (int j = 0; j < G; ++j)
        std::memcpy(out + size_t(j * d.count) * esz, staged(j), size_t(d.count) * esz);
      break;
    case Op::AllToAll:
      for (int j = 0; j < G; ++j)
        std::memcpy(out + size_t(j * c) * esz, staged(j) + size_t(r * c) * esz, size_t(c) * esz);
      break;
    case Op::Ppermute: {
      int s = me.src_of[size_t(r)];
      if (s >= 0)
        std::memcpy(out, staged(s), size_t(d.count) * esz);
      else
        std::memset(out, 0, size_t(d.count) * esz);
      break;
    }
    case Op::Barrier:
      break;
    }
  }
}

void CommWorld::Impl::run_large(int parity, int thread, const GroupLayout& g, const CallDesc& d) {
  PerThread& me = threads[thread];
  const std::vector<Slot>& slot = slots[parity];
  const size_t esz = dtype_size(d.dtype);
  const int G = int(g.groups[0].size());
  const int64_t ngroups = int64_t(g.groups.size());
  const int64_t n = d.count, c = n / G;
  const int64_t align = std::max<int64_t>(1, 64 / int64_t(esz));
  // Buffers this large are long gone from the caches by the time anyone reads
  // them: write around the cache (see coll::reduce).
  const bool st = size_t(n) * esz >= (size_t(4) << 20);
  auto in = [&](int64_t grp, int64_t rank) {
    return static_cast<const std::byte*>(slot[size_t(g.groups[size_t(grp)][size_t(rank)])].in);
  };
  auto out = [&](int64_t grp, int64_t rank) {
    return static_cast<std::byte*>(slot[size_t(g.groups[size_t(grp)][size_t(rank)])].out);
  };
  // Rows: one per group (reductions) or one per (group, rank) (copies).
  bool per_rank = d.op != Op::AllReduce && d.op != Op::ReduceScatter;
  int64_t rows = per_rank ? ngroups * G : ngroups;
  int64_t piece = (d.op == Op::ReduceScatter || d.op == Op::AllToAll) ? c : n;
  int64_t begin = cut(thread, num_threads, rows, n, align);
  int64_t end = cut(thread + 1, num_threads, rows, n, align);
  me.ins.resize(size_t(G));
  me.outs.resize(size_t(G));
  for_range(begin, end, n, piece, [&](int64_t row, int64_t e, int64_t len) {
    const size_t off = size_t(e) * esz, bytes = size_t(len) * esz;
    const int64_t grp = per_rank ? row / G : row;
    const int64_t r = per_rank ? row % G : 0;
    switch (d.op) {
    case Op::AllReduce:
      for (int j = 0; j < G; ++j) {
        me.ins[size_t(j)] = in(grp, j) + off;
        me.outs[size_t(j)] = out(grp, j) + off;
      }
      coll::reduce(d.dtype, d.kind, me.ins.data(), G, me.outs.data(), G, len, st);
      break;
    case Op::ReduceScatter: {
      int64_t dst = e / c;
      for (int j = 0; j < G; ++j) me.ins[size_t(j)] = in(grp, j) + off;
      void* o[1] = {out(grp, dst) + size_t(e - dst * c) * esz};
      coll::reduce(d.dtype, ReduceKind::Sum, me.ins.data(), G, o, 1, len, st);
      break;
    }
    case Op::AllGather: // row = (group, source rank r): r's input to every rank
      for (int j = 0; j < G; ++j)
        coll::copy(out(grp, j) + size_t(r * n) * esz + off, in(grp, r) + off, bytes, st);
      break;
    case Op::AllToAll: { // row = (group, source rank r): chunk e / c goes to that rank
      int64_t dst = e / c;
      coll::copy(out(grp, dst) + size_t(r * c + e - dst * c) * esz, in(grp, r) + off, bytes, st);
      break;
    }
    case Op::Ppermute: { // row = (group, destination rank r)
      int s = me.src_of[size_t(r)];
      if (s >= 0)
        coll::copy(out(grp, r) + off, in(grp, s) + off, bytes, st);
      else
        std::memset(out(grp, r) + off, 0, bytes);
      break;
    }
    case Op::Barrier:
      break;
    }
  });
}

CommWorld::CommWorld(int num_threads, int participants_per_thread,
                     std::chrono::milliseconds timeout)
    : num_threads_(num_threads), per_thread_(participants_per_thread), timeout_(timeout) {
  if (num_threads < 1 || participants_per_thread < 1)
    throw Error(ErrCode::Internal, "CommWorld needs at least one thread and one participant each");
}
CommWorld::~CommWorld() = default;
CommWorld::Impl& CommWorld::impl() {
  std::call_once(made_,
                 [&] { impl_ = std::make_unique<Impl>(num_threads_, per_thread_, timeout_); });
  return *impl_;
}
int CommWorld::num_threads() const { return num_threads_; }
int CommWorld::participants_per_thread() const { return per_thread_; }
void CommWorld::abort(const std::string& why) { impl().rv.abort(why, /*from_outside=*/true); }

void CommWorld::all_reduce(int thread, std::span<const LocalBuffers> mine, const GroupLayout& g,
                           ReduceKind kind, DType dtype, int64_t count,
                           const CollectiveSite& site) {
  impl().run(thread, mine, g, {Op::AllReduce, kind, dtype, count, 0, 0}, site);
}
void CommWorld::all_gather(int thread, std::span<const LocalBuffers> mine, const GroupLayout& g,
                           DType dtype, int64_t count, const CollectiveSite& site) {
  impl().run(thread, mine, g, {Op::AllGather, ReduceKind::Sum, dtype, count, 0, 0}, site);
}
void CommWorld::reduce_scatter(int thread, std::span<const LocalBuffers> mine, const GroupLayout& g,
                               DType dtype, int64_t count, const CollectiveSite& site) {
  impl().run(thread, mine, g, {Op::ReduceScatter, ReduceKind::Sum, dtype, count, 0, 0}, site);
}
void CommWorld::all_to_all(int thread, std::span<const LocalBuffers> mine, const GroupLayout& g,
                           DType dtype, int64_t count, const CollectiveSite& site) {
  impl().run(thread, mine, g, {Op::AllToAll, ReduceKind::Sum, dtype, count, 0, 0}, site);
}
void CommWorld::ppermute(int thread, std::span<const LocalBuffers> mine, const GroupLayout& g,
                         const std::vector<std::pair<int, int>>& perm, DType dtype, int64_t count,
                         const CollectiveSite& site) {
  impl().run(thread, mine, g, {Op::Ppermute, ReduceKind::Sum, dtype, count, 0, 0}, site, &perm);
}
void CommWorld::barrier(int thread, const CollectiveSite& site) {
  impl().run(thread, {}, GroupLayout{}, {}, site);
}

} // namespace pxl
