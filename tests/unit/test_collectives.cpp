// The runtime collectives (runtime/collectives.hpp) on real device threads:
// every collective, dtype and reduction against a serial rank-order reference
// and hand-computed values, on 1, 2, 4 and 8 threads with 1 and 2 participants
// per thread, 1-d meshes and 2x2 / 2x2x2 meshes grouped over one axis and over
// several axes in both orders; the watchdog (timeout, abort, diverging
// devices); determinism; DeviceThreads.
//
// Data races: build a ThreadSanitizer tree and run these tests there —
//   cmake -S . -B build-tsan -G Ninja -DPXL_SANITIZE=thread -DCMAKE_BUILD_TYPE=RelWithDebInfo
//   ninja -C build-tsan -j2 unit_tests && build-tsan/bin/unit_tests "[collectives]"
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <cstring>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>

#include "ir/dtype.hpp"
#include "lang/diag.hpp"
#include "runtime/collectives.hpp"

using namespace pxl;

namespace {

// Participants of a mesh of `shape` (row-major ids) grouped over `axes`: a
// group is every participant sharing the other coordinates, ranked by the
// mixed-radix index over `axes`, first axis major.
GroupLayout mesh_groups(const std::vector<int>& shape, const std::vector<int>& axes) {
  int n = 1;
  for (int s : shape) n *= s;
  GroupLayout g;
  g.num_participants = n;
  std::vector<int> key_of(size_t(n), -1);
  std::vector<std::vector<std::pair<int, int>>> by_key; // (rank, id)
  for (int p = 0; p < n; ++p) {
    std::vector<int> coord(shape.size());
    for (int d = int(shape.size()) - 1, rest = p; d >= 0; --d) {
      coord[size_t(d)] = rest % shape[size_t(d)];
      rest /= shape[size_t(d)];
    }
    int rank = 0;
    for (int a : axes) rank = rank * shape[size_t(a)] + coord[size_t(a)];
    int key = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      if (std::find(axes.begin(), axes.end(), int(d)) == axes.end())
        key = key * shape[d] + coord[d];
    if (size_t(key) >= by_key.size()) by_key.resize(size_t(key) + 1);
    by_key[size_t(key)].push_back({rank, p});
  }
  for (auto& members : by_key) {
    std::sort(members.begin(), members.end());
    std::vector<int> ids;
    for (auto [r, id] : members) ids.push_back(id);
    g.groups.push_back(ids);
  }
  return g;
}

// Storage type S, accumulator A, conversions: the reference semantics.
template <class S_, class A_> struct Tr {
  using S = S_;
  using A = A_;
  static A ld(S v) { return A(v); }
  static S st(A v) { return S(v); }
};
struct TrF16 {
  using S = uint16_t;
  using A = float;
  static A ld(S v) { return half_to_float(v); }
  static S st(A v) { return float_to_half(v); }
};
struct TrBF16 {
  using S = uint16_t;
  using A = float;
  static A ld(S v) { return bfloat16_to_float(v); }
  static S st(A v) { return float_to_bfloat16(v); }
};

// The narrow integers: a byte each, summed in int, wrapped to their width.
template <DType D> struct TrNarrow {
  using S = std::conditional_t<is_signed_int(D), int8_t, uint8_t>;
  using A = int32_t;
  static A ld(S v) { return v; }
  static S st(A v) { return S(wrap_to(D, v)); }
};

// The small floats: a byte each, summed in float and rounded once.
template <DType D> struct TrSmall {
  using S = uint8_t;
  using A = float;
  static A ld(S v) { return static_cast<A>(small_to_float(D, v)); }
  static S st(A v) { return float_to_small(D, v); }
};

template <class F> void with_dtype(DType d, F f) {
  switch (d) {
  case DType::Bool:
    return f(Tr<uint8_t, uint8_t>{});
  case DType::Int8:
    return f(Tr<int8_t, int8_t>{});
  case DType::UInt8:
    return f(Tr<uint8_t, uint8_t>{});
  case DType::Int16:
    return f(Tr<int16_t, int16_t>{});
  case DType::UInt16:
    return f(Tr<uint16_t, uint16_t>{});
  case DType::Int32:
    return f(Tr<int32_t, int32_t>{});
  case DType::UInt32:
    return f(Tr<uint32_t, uint32_t>{});
  case DType::Float16:
    return f(TrF16{});
  case DType::BFloat16:
    return f(TrBF16{});
  case DType::Float32:
    return f(Tr<float, float>{});
  case DType::Float64:
    return f(Tr<double, double>{});
  case DType::Int2:
    return f(TrNarrow<DType::Int2>{});
  case DType::Int4:
    return f(TrNarrow<DType::Int4>{});
  case DType::UInt2:
    return f(TrNarrow<DType::UInt2>{});
  case DType::UInt4:
    return f(TrNarrow<DType::UInt4>{});
  case DType::Float8E4M3FN:
    return f(TrSmall<DType::Float8E4M3FN>{});
  case DType::Float8E5M2:
    return f(TrSmall<DType::Float8E5M2>{});
  case DType::Float8E4M3FNUZ:
    return f(TrSmall<DType::Float8E4M3FNUZ>{});
  case DType::Float8E5M2FNUZ:
    return f(TrSmall<DType::Float8E5M2FNUZ>{});
  case DType::Float8E4M3B11FNUZ:
    return f(TrSmall<DType::Float8E4M3B11FNUZ>{});
  case DType::Float8E4M3:
    return f(TrSmall<DType::Float8E4M3>{});
  case DType::Float8E3M4:
    return f(TrSmall<DType::Float8E3M4>{});
  case DType::Float8E8M0FNU:
    return f(TrSmall<DType::Float8E8M0FNU>{});
  case DType::Float4E2M1FN:
    return f(TrSmall<DType::Float4E2M1FN>{});
  case DType::Complex64: // no complex collectives here: the loop below skips it
    break;
  }
}

using Bytes = std::vector<std::byte>;

// Inputs that exercise each type: int sums overflow and wrap, floats are not
// exactly summable in f16/bf16 so the accumulate-then-round rule matters.
template <class T> typename T::S input_value(DType d, int p, int64_t i) {
  uint32_t h = uint32_t(p) * 2654435761u + uint32_t(i) * 40503u + 12345u;
  if (d == DType::Bool) return typename T::S((p * 3 + i) % 5 == 0);
  if (is_integer(d)) return T::st(typename T::A(h * 0x9E3779B9u));
  // Small floats: positive (float8_e8m0fnu has no zero or negatives) and small
  // enough that no sum overflows to NaN, which the reference's max does not order.
  if (is_small_float(d)) return T::st(typename T::A(int(h % 200) + 1) * typename T::A(0.01));
  return T::st(typename T::A(int(h % 2001) - 1000) * typename T::A(0.3751));
}

template <class T> typename T::A combine(DType d, ReduceKind k, typename T::A a, typename T::A b) {
  using A = typename T::A;
  if (d == DType::Bool) return k == ReduceKind::Min ? A(a && b) : A(a || b);
  if (k == ReduceKind::Max) return a > b ? a : b;
  if (k == ReduceKind::Min) return a < b ? a : b;
  if (is_integer(d)) return A(uint32_t(a) + uint32_t(b)); // wraps at A's width
  return a + b;
}

enum class Coll { AllReduce, AllGather, ReduceScatter, AllToAll, Ppermute };

struct Case {
  Coll coll;
  ReduceKind kind = ReduceKind::Sum;
  DType dtype;
  int64_t count;
  std::vector<std::pair<int, int>> perm;
};

int64_t out_count(const Case& c, int G) {
  if (c.coll == Coll::AllGather) return c.count * G;
  if (c.coll == Coll::ReduceScatter) return c.count / G;
  return c.count;
}

// The serial reference: what participant `members[r]` must hold afterwards.
Bytes reference(const Case& c, const std::vector<Bytes>& in, const std::vector<int>& members,
                int r) {
  const int G = int(members.size());
  Bytes out(size_t(out_count(c, G)) * dtype_size(c.dtype));
  with_dtype(c.dtype, [&](auto tr) {
    using T = decltype(tr);
    using S = typename T::S;
    auto at = [&](int rank, int64_t i) {
      return reinterpret_cast<const S*>(in[size_t(members[size_t(rank)])].data())[i];
    };
    S* o = reinterpret_cast<S*>(out.data());
    int64_t n = c.count, ch = n / G;
    auto reduce_at = [&](ReduceKind k, int64_t i) {
      typename T::A acc = T::ld(at(0, i));
      for (int j = 1; j < G; ++j) acc = combine<T>(c.dtype, k, acc, T::ld(at(j, i)));
      return T::st(acc);
    };
    switch (c.coll) {
    case Coll::AllReduce:
      for (int64_t i = 0; i < n; ++i) o[i] = reduce_at(c.kind, i);
      break;
    case Coll::ReduceScatter:
      for (int64_t i = 0; i < ch; ++i) o[i] = reduce_at(ReduceKind::Sum, r * ch + i);
      break;
    case Coll::AllGather:
      for (int j = 0; j < G; ++j)
        for (int64_t i = 0; i < n; ++i) o[j * n + i] = at(j, i);
      break;
    case Coll::AllToAll:
      for (int j = 0; j < G; ++j)
        for (int64_t i = 0; i < ch; ++i) o[j * ch + i] = at(j, r * ch + i);
      break;
    case Coll::Ppermute:
      for (auto [s, d] : c.perm)
        if (d == r)
          for (int64_t i = 0; i < n; ++i) o[i] = at(s, i);
      break;
    }
  });
  return out;
}

void call(CommWorld& w, int t, std::span<const LocalBuffers> mine, const GroupLayout& g,
          const Case& c, const CollectiveSite& site) {
  switch (c.coll) {
  case Coll::AllReduce:
    return w.all_reduce(t, mine, g, c.kind, c.dtype, c.count, site);
  case Coll::AllGather:
    return w.all_gather(t, mine, g, c.dtype, c.count, site);
  case Coll::ReduceScatter:
    return w.reduce_scatter(t, mine, g, c.dtype, c.count, site);
  case Coll::AllToAll:
    return w.all_to_all(t, mine, g, c.dtype, c.count, site);
  case Coll::Ppermute:
    return w.ppermute(t, mine, g, c.perm, c.dtype, c.count, site);
  }
}

// Runs `c` on every thread of `w` with generated inputs (or `given`) and
// returns each participant's output.
std::vector<Bytes> run_case(DeviceThreads& pool, CommWorld& w, const GroupLayout& g, const Case& c,
                            std::vector<Bytes>* given = nullptr) {
  const int T = w.num_threads(), k = w.participants_per_thread(), P = T * k;
  const int G = int(g.groups[0].size());
  std::vector<Bytes> in(static_cast<size_t>(P)), out(static_cast<size_t>(P));
  for (int p = 0; p < P; ++p) {
    if (given) {
      in[size_t(p)] = (*given)[size_t(p)];
    } else {
      in[size_t(p)].resize(size_t(c.count) * dtype_size(c.dtype));
      with_dtype(c.dtype, [&](auto tr) {
        using T = decltype(tr);
        auto* s = reinterpret_cast<typename T::S*>(in[size_t(p)].data());
        for (int64_t i = 0; i < c.count; ++i) s[i] = input_value<T>(c.dtype, p, i);
      });
    }
    // Garbage, so a receiver the collective forgets to write is noticed.
    out[size_t(p)].assign(size_t(out_count(c, G)) * dtype_size(c.dtype), std::byte{0xAB});
  }
  CollectiveSite site{"test collective", "test.pxl:1:1"};
  pool.run(T, [&](int t) {
    std::vector<LocalBuffers> mine;
    for (int i = 0; i < k; ++i)
      mine.push_back({in[size_t(t * k + i)].data(), out[size_t(t * k + i)].data()});
    try {
      call(w, t, mine, g, c, site);
    } catch (...) {
      w.abort("thread " + std::to_string(t) + " failed");
      throw;
    }
  });
  if (!given) {
    for (const auto& members : g.groups)
      for (int r = 0; r < G; ++r) {
        INFO("participant " << members[size_t(r)] << " rank " << r);
        CHECK((out[size_t(members[size_t(r)])] == reference(c, in, members, r)));
      }
  }
  return out;
}

struct Layout {
  std::vector<int> shape, axes;
};

std::vector<Layout> layouts_for(int P) {
  std::vector<Layout> v = {{{P}, {0}}};
  if (P == 4)
    v.push_back({{2, 2}, {1}}), v.push_back({{2, 2}, {0, 1}}), v.push_back({{2, 2}, {1, 0}});
  if (P == 8) {
    for (std::vector<int> axes :
         std::vector<std::vector<int>>{{0}, {1}, {2}, {0, 1}, {1, 0}, {0, 2}, {2, 1}, {2, 1, 0}})
      v.push_back({{2, 2, 2}, axes});
    v.push_back({{4, 2}, {0}});
  }
  if (P == 16) v.push_back({{2, 4, 2}, {1, 2}}), v.push_back({{2, 4, 2}, {2, 0}});
  return v;
}

template <class S> Bytes bytes_of(std::initializer_list<S> v) {
  Bytes b(v.size() * sizeof(S));
  std::memcpy(b.data(), v.begin(), b.size());
  return b;
}
template <class S> std::vector<S> values_of(const Bytes& b) {
  std::vector<S> v(b.size() / sizeof(S));
  std::memcpy(v.data(), b.data(), b.size());
  return v;
}

} // namespace

TEST_CASE("collectives: hand-computed values on 4 devices", "[collectives]") {
  DeviceThreads pool(4);
  CommWorld w(4, 1);
  GroupLayout all = mesh_groups({4}, {0});
  std::vector<Bytes> in = {bytes_of<float>({1, 2, 3, 4}), bytes_of<float>({10, 20, 30, 40}),
                           bytes_of<float>({-1, 5, 0, 4}), bytes_of<float>({0.5f, 0, 0, -100})};
  auto out = run_case(pool, w, all, {Coll::AllReduce, ReduceKind::Sum, DType::Float32, 4, {}}, &in);
  for (int p = 0; p < 4; ++p)
    CHECK(values_of<float>(out[size_t(p)]) == std::vector<float>{10.5f, 27, 33, -52});
  out = run_case(pool, w, all, {Coll::AllReduce, ReduceKind::Max, DType::Float32, 4, {}}, &in);
  CHECK(values_of<float>(out[2]) == std::vector<float>{10, 20, 30, 40});
  out = run_case(pool, w, all, {Coll::AllReduce, ReduceKind::Min, DType::Float32, 4, {}}, &in);
  CHECK(values_of<float>(out[3]) == std::vector<float>{-1, 0, 0, -100});
  out = run_case(pool, w, all, {Coll::ReduceScatter, ReduceKind::Sum, DType::Float32, 4, {}}, &in);
  CHECK(values_of<float>(out[0]) == std::vector<float>{10.5f});
  CHECK(values_of<float>(out[3]) == std::vector<float>{-52});
  out = run_case(pool, w, all, {Coll::AllToAll, ReduceKind::Sum, DType::Float32, 4, {}}, &in);
  CHECK(values_of<float>(out[1]) == std::vector<float>{2, 20, 5, 0});
  // Two groups of two ({0,1}, {2,3}): the groups act independently.
  GroupLayout pairs = mesh_groups({2, 2}, {1});
  out = run_case(pool, w, pairs, {Coll::AllGather, ReduceKind::Sum, DType::Float32, 2, {}},
                 &(in = {bytes_of<float>({1, 2}), bytes_of<float>({3, 4}), bytes_of<float>({5, 6}),
                         bytes_of<float>({7, 8})}));
  CHECK(values_of<float>(out[1]) == std::vector<float>{1, 2, 3, 4});
  CHECK(values_of<float>(out[2]) == std::vector<float>{5, 6, 7, 8});
  // A shift by one with rank 0 receiving nothing: zeros.
  out =
      run_case(pool, w, all,
               {Coll::Ppermute, ReduceKind::Sum, DType::Float32, 2, {{0, 1}, {1, 2}, {2, 3}}}, &in);
  CHECK(values_of<float>(out[0]) == std::vector<float>{0, 0});
  CHECK(values_of<float>(out[3]) == std::vector<float>{5, 6});
  // int32 wraps; bool psum is logical or, pmin logical and.
  in = {bytes_of<int32_t>({INT32_MAX, -5}), bytes_of<int32_t>({1, 2}), bytes_of<int32_t>({0, 0}),
        bytes_of<int32_t>({0, 0})};
  out = run_case(pool, w, all, {Coll::AllReduce, ReduceKind::Sum, DType::Int32, 2, {}}, &in);
  CHECK(values_of<int32_t>(out[0]) == std::vector<int32_t>{INT32_MIN, -3});
  in = {bytes_of<uint8_t>({0, 1, 1}), bytes_of<uint8_t>({0, 0, 1}), bytes_of<uint8_t>({0, 0, 1}),
        bytes_of<uint8_t>({0, 0, 1})};
  out = run_case(pool, w, all, {Coll::AllReduce, ReduceKind::Sum, DType::Bool, 3, {}}, &in);
  CHECK(values_of<uint8_t>(out[0]) == std::vector<uint8_t>{0, 1, 1});
  out = run_case(pool, w, all, {Coll::AllReduce, ReduceKind::Min, DType::Bool, 3, {}}, &in);
  CHECK(values_of<uint8_t>(out[0]) == std::vector<uint8_t>{0, 0, 1});
  // float16: 2048 + 1 + 1 is 2050 when accumulated in f32 and rounded once
  // (f16 spacing at 2048 is 2, so rounding after each add would give 2048).
  in = {bytes_of<uint16_t>({float_to_half(2048)}), bytes_of<uint16_t>({float_to_half(1)}),
        bytes_of<uint16_t>({float_to_half(1)}), bytes_of<uint16_t>({float_to_half(0)})};
  out = run_case(pool, w, all, {Coll::AllReduce, ReduceKind::Sum, DType::Float16, 1, {}}, &in);
  CHECK(half_to_float(values_of<uint16_t>(out[0])[0]) == 2050.0f);
  // Max propagates NaN whichever rank holds it.
  float nan = std::nanf("");
  in = {bytes_of<float>({1, nan}), bytes_of<float>({nan, 1}), bytes_of<float>({0, 0}),
        bytes_of<float>({0, 0})};
  out = run_case(pool, w, all, {Coll::AllReduce, ReduceKind::Max, DType::Float32, 2, {}}, &in);
  CHECK(std::isnan(values_of<float>(out[0])[0]));
  CHECK(std::isnan(values_of<float>(out[0])[1]));
}

TEST_CASE("collectives: every collective, dtype and layout against the reference",
          "[collectives]") {
  for (int T : {1, 2, 4, 8}) {
    DeviceThreads pool(T);
    for (int k : {1, 2}) {
      // One world for every case: small and large calls alternate on it.
      CommWorld w(T, k);
      for (const Layout& lay : layouts_for(T * k)) {
        GroupLayout g = mesh_groups(lay.shape, lay.axes);
        int G = int(g.groups[0].size());
        // Small calls take the staged path, 8448 elements (> 8 KiB even for
        // bool) the two-barrier path.
        for (int64_t count : {int64_t(3 * G), int64_t(8448)}) {
          for (DType d : kAllDTypes) {
            if (is_complex(d)) continue; // psum of complex64 is a float32 sum (runtime test below)
            INFO("T=" << T << " k=" << k << " groups of " << G << " dtype " << dtype_name(d)
                      << " count " << count);
            for (ReduceKind kind : {ReduceKind::Sum, ReduceKind::Max, ReduceKind::Min})
              run_case(pool, w, g, {Coll::AllReduce, kind, d, count, {}});
            run_case(pool, w, g, {Coll::AllGather, ReduceKind::Sum, d, count, {}});
            run_case(pool, w, g, {Coll::ReduceScatter, ReduceKind::Sum, d, count, {}});
            run_case(pool, w, g, {Coll::AllToAll, ReduceKind::Sum, d, count, {}});
            // A cyclic shift, and one that leaves rank 0 (and more) empty.
            std::vector<std::pair<int, int>> shift, partial;
            for (int r = 0; r < G; ++r) shift.push_back({r, (r + 1) % G});
            for (int r = 0; r + 1 < G; r += 2) partial.push_back({r, r + 1});
            run_case(pool, w, g, {Coll::Ppermute, ReduceKind::Sum, d, count, shift});
            run_case(pool, w, g, {Coll::Ppermute, ReduceKind::Sum, d, count, partial});
          }
        }
      }
    }
  }
}

TEST_CASE("collectives: all_reduce in place", "[collectives]") {
  DeviceThreads pool(4);
  CommWorld w(4, 2);
  GroupLayout g = mesh_groups({8}, {0});
  for (int64_t n : {int64_t(5), int64_t(100000)}) {
    std::vector<std::vector<float>> buf(8, std::vector<float>(size_t(n)));
    for (int p = 0; p < 8; ++p)
      for (int64_t i = 0; i < n; ++i) buf[size_t(p)][size_t(i)] = float(p + 1) * float(i % 7);
    pool.run(4, [&](int t) {
      LocalBuffers mine[2] = {{buf[size_t(2 * t)].data(), buf[size_t(2 * t)].data()},
                              {buf[size_t(2 * t + 1)].data(), buf[size_t(2 * t + 1)].data()}};
      w.all_reduce(t, mine, g, ReduceKind::Sum, DType::Float32, n, {"psum", ""});
    });
    for (int p = 0; p < 8; ++p)
      for (int64_t i = 0; i < n; i += 997) CHECK(buf[size_t(p)][size_t(i)] == 36.0f * float(i % 7));
  }
}

TEST_CASE("collectives: float sums are identical run to run", "[collectives]") {
  const int T = 8, k = 2, P = 16;
  DeviceThreads pool(T);
  CommWorld w(T, k);
  GroupLayout g = mesh_groups({P}, {0});
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1e6f, 1e6f);
  for (int64_t n : {int64_t(1000), int64_t(50000)}) {
    std::vector<Bytes> in(P, Bytes(size_t(n) * 4));
    for (auto& b : in)
      for (int64_t i = 0; i < n; ++i) {
        float v = dist(rng) * std::pow(10.0f, float(int(rng() % 9) - 4));
        std::memcpy(b.data() + i * 4, &v, 4);
      }
    Case c{Coll::AllReduce, ReduceKind::Sum, DType::Float32, n, {}};
    std::vector<Bytes> first = run_case(pool, w, g, c, &in);
    CHECK((first[0] == reference(c, in, g.groups[0], 0)));
    for (int rep = 0; rep < 50; ++rep) CHECK((run_case(pool, w, g, c, &in) == first));
  }
}

TEST_CASE("collectives: a device that never arrives times out", "[collectives]") {
  const int T = 4;
  DeviceThreads pool(T);
  CommWorld w(T, 1, std::chrono::milliseconds(200));
  GroupLayout g = mesh_groups({T}, {0});
  std::vector<std::string> errors(T);
  std::vector<float> in(16, 1.0f), out(16);
  auto t0 = std::chrono::steady_clock::now();
  pool.run(T, [&](int t) {
    if (t == 2) return; // device 2 skips the psum
    LocalBuffers mine[1] = {{in.data(), out.data()}};
    try {
      w.all_reduce(t, mine, g, ReduceKind::Sum, DType::Float32, 16,
                   {"psum over 'i'", "train.pxl:12:9"});
    } catch (const Error& e) { // Catch's assertions are not thread-safe: check below
      errors[size_t(t)] = std::string(err_code_str(e.code())) + " " + e.message();
    }
  });
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  for (int t : {0, 1, 3}) {
    INFO(errors[size_t(t)]);
    CHECK(errors[size_t(t)].rfind("E0400 ", 0) == 0);
    CHECK(errors[size_t(t)].find("psum over 'i' at train.pxl:12:9") != std::string::npos);
    CHECK(errors[size_t(t)].find("timed out") != std::string::npos);
    CHECK(errors[size_t(t)].find("device 2 of 4 never reached it") != std::string::npos);
  }
  // The world is dead: even device 2, arriving late, fails at once.
  LocalBuffers mine[1] = {{in.data(), out.data()}};
  CHECK_THROWS_AS(w.all_reduce(2, mine, g, ReduceKind::Sum, DType::Float32, 16, {"psum", ""}),
                  Error);
}

TEST_CASE("collectives: abort releases every waiting device", "[collectives]") {
  const int T = 8;
  DeviceThreads pool(T);
  CommWorld w(T, 1); // the default 60 s timeout: only abort can end this quickly
  GroupLayout g = mesh_groups({2, 4}, {1});
  std::vector<std::vector<float>> in(T, std::vector<float>(4096, 1.0f)), out = in;
  std::vector<std::string> errors(T);
  auto t0 = std::chrono::steady_clock::now();
  try {
    pool.run(T, [&](int t) {
      try {
        if (t == 5) {
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          throw std::runtime_error("device 5: division by zero");
        }
        LocalBuffers mine[1] = {{in[size_t(t)].data(), out[size_t(t)].data()}};
        w.all_gather(t, mine, g, DType::Float32, 512, {"all_gather over 'y'", "m.pxl:3:1"});
        w.all_reduce(t, mine, g, ReduceKind::Sum, DType::Float32, 4096,
                     {"psum over 'y'", "m.pxl:4:1"});
      } catch (const std::exception& e) {
        errors[size_t(t)] = e.what();
        w.abort(e.what()); // what a device program's error path does
        throw;
      }
    });
    FAIL("run should rethrow");
  } catch (const Error& e) {
    // The lowest-numbered failing thread's error: device 0 abandoned its collective.
    CHECK(e.code() == ErrCode::Device);
    CHECK(std::string(e.what()).find("abandoned: device 5: division by zero") != std::string::npos);
  }
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
  for (int t = 0; t < T; ++t) CHECK(!errors[size_t(t)].empty());
  CHECK(errors[0].find("all_gather over 'y' at m.pxl:3:1 abandoned") != std::string::npos);
  LocalBuffers mine[1] = {{in[0].data(), out[0].data()}};
  CHECK_THROWS_AS(w.barrier(0, {"barrier", ""}), Error);
  CHECK_THROWS_AS(w.all_reduce(0, mine, g, ReduceKind::Sum, DType::Float32, 1, {"psum", ""}),
                  Error);
}

TEST_CASE("collectives: devices calling different collectives fail together", "[collectives]") {
  const int T = 4;
  DeviceThreads pool(T);
  CommWorld w(T, 1);
  GroupLayout g = mesh_groups({T}, {0});
  std::vector<float> in(64, 1.0f);
  std::vector<std::vector<float>> out(T, std::vector<float>(256));
  std::atomic<int> failures{0};
  REQUIRE_THROWS_WITH(
      pool.run(T,
               [&](int t) {
                 LocalBuffers mine[1] = {{in.data(), out[size_t(t)].data()}};
                 try {
                   if (t == 1)
                     w.all_gather(t, mine, g, DType::Float32, 64, {"all_gather", "a.pxl:2:1"});
                   else
                     w.all_reduce(t, mine, g, ReduceKind::Sum, DType::Float32, 64,
                                  {"psum", "a.pxl:1:1"});
                 } catch (...) {
                   failures++;
                   throw;
                 }
               }),
      Catch::Contains("devices disagree") &&
          Catch::Contains("device 1 called all_gather(float32[64])"));
  CHECK(failures == T);
}

TEST_CASE("collectives: barrier and sequences of calls", "[collectives]") {
  const int T = 8;
  DeviceThreads pool(T);
  CommWorld w(T, 1);
  std::vector<int> order;
  std::mutex mu;
  // Each step's barrier separates the appends of step s from those of s + 1.
  pool.run(T, [&](int t) {
    for (int s = 0; s < 20; ++s) {
      {
        std::lock_guard<std::mutex> lock(mu);
        order.push_back(s);
      }
      w.barrier(t, {"barrier", ""});
    }
  });
  REQUIRE(order.size() == size_t(20 * T));
  CHECK(std::is_sorted(order.begin(), order.end()));
}

TEST_CASE("DeviceThreads: runs, reuses and rethrows the lowest thread's error", "[collectives]") {
  DeviceThreads pool(6);
  CHECK(pool.size() == 6);
  std::vector<std::atomic<int>> hits(6);
  std::vector<int> expected(6);
  for (int rep = 0; rep < 200; ++rep) {
    pool.run(1 + rep % 6, [&](int t) { hits[size_t(t)]++; });
    for (int t = 0; t < 1 + rep % 6; ++t) expected[size_t(t)]++;
  }
  for (int t = 0; t < 6; ++t) CHECK(hits[size_t(t)] == expected[size_t(t)]);
  std::vector<std::thread::id> ids(6), again(6);
  pool.run(6, [&](int t) { ids[size_t(t)] = std::this_thread::get_id(); });
  pool.run(6, [&](int t) { again[size_t(t)] = std::this_thread::get_id(); });
  CHECK(ids == again);
  CHECK_THROWS_WITH(pool.run(6,
                             [&](int t) {
                               if (t == 4) throw std::runtime_error("four");
                               if (t == 2) throw std::runtime_error("two");
                             }),
                    "two");
  pool.run(6, [&](int t) { hits[size_t(t)]++; }); // still usable after errors
  CHECK(hits[5] == expected[5] + 1);
  CHECK_THROWS_AS(pool.run(7, [](int) {}), Error);
}

TEST_CASE("DeviceThreads: a job that launches on its own pool fails instead of hanging",
          "[collectives]") {
  DeviceThreads pool(2);
  std::atomic<int> refused{0};
  pool.run(2, [&](int) {
    try {
      pool.run(1, [](int) {});
    } catch (const Error& e) {
      if (e.code() == ErrCode::Unsupported) ++refused;
    }
  });
  CHECK(refused == 2);
  int ran = 0;
  pool.run(1, [&](int) { ++ran; }); // the pool still works
  CHECK(ran == 1);
}
