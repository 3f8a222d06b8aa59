// jax.random against values produced by JAX 0.10.2 on an x86-64 CPU with FMA
// (defaults: threefry2x32, jax_threefry_partitionable=True, x64 disabled).
// Large outputs are compared by an FNV-1a hash of their bytes, computed from
// JAX's arrays in the same way.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "lang/diag.hpp"
#include "runtime/eager.hpp"
#include "runtime/threefry.hpp"
#include "stdlib/np.hpp"

using namespace pxl;

namespace {

template <class T> std::vector<T> values(const Tensor& t) {
  const Array& a = *t->concrete;
  std::vector<T> out(static_cast<size_t>(a.size()));
  std::memcpy(out.data(), a.data(), out.size() * sizeof(T));
  return out;
}

uint64_t fnv1a(const Tensor& t) {
  const Array& a = *t->concrete;
  const auto* p = static_cast<const unsigned char*>(a.data());
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < a.nbytes(); ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

using U = std::vector<uint32_t>;
using H = std::vector<uint16_t>;

} // namespace

TEST_CASE("threefry2x32 block function", "[random]") {
  // Known-answer values: JAX's split of PRNGKey(0) hashes counters (0, 0) and (0, 1).
  CHECK(threefry2x32({0, 0}, 0, 0) == std::array<uint32_t, 2>{1797259609u, 2579123966u});
  CHECK(threefry2x32({0, 0}, 0, 1) == std::array<uint32_t, 2>{928981903u, 3453687069u});
}

TEST_CASE("PRNGKey, split and fold_in match JAX", "[random]") {
  EagerContext cx;
  Tensor k = np::prng_key(cx, 0);
  CHECK(k->aval.dtype == DType::UInt32);
  CHECK(k->aval.shape == Shape{2});
  CHECK(values<uint32_t>(k) == U{0, 0});
  CHECK(values<uint32_t>(np::prng_key(cx, 42)) == U{0, 42});
  CHECK(values<uint32_t>(np::prng_key(cx, -1)) == U{0, 4294967295u});
  CHECK(values<uint32_t>(np::prng_key(cx, (int64_t{1} << 40) + 3)) == U{0, 3});

  Tensor s2 = np::random_split(cx, k, 2);
  CHECK(s2->aval.shape == Shape{2, 2});
  CHECK(values<uint32_t>(s2) == U{1797259609u, 2579123966u, 928981903u, 3453687069u});
  CHECK(values<uint32_t>(np::random_split(cx, k, 3)) ==
        U{1797259609u, 2579123966u, 928981903u, 3453687069u, 4146024105u, 2718843009u});
  CHECK(values<uint32_t>(np::random_fold_in(cx, k, 7)) == U{2716826189u, 292468403u});
  CHECK(values<uint32_t>(np::random_fold_in(cx, np::prng_key(cx, 42), 4294967295ll)) ==
        U{2398536845u, 3890976714u});

  // split(split(k, 3)[1]): a key taken out of a split array.
  Array k1(DType::UInt32, {2});
  k1.as<uint32_t>()[0] = 928981903u;
  k1.as<uint32_t>()[1] = 3453687069u;
  CHECK(values<uint32_t>(np::random_split(cx, cx.constant(k1), 2)) ==
        U{346279018u, 360566543u, 3968330031u, 3923691647u});
}

TEST_CASE("normal matches JAX bit for bit", "[random]") {
  EagerContext cx;
  Tensor k = np::prng_key(cx, 0);
  Tensor n = np::random_normal(cx, k, {3});
  CHECK(n->aval.dtype == DType::Float32);
  CHECK(values<uint32_t>(n) == U{0x3fcfb2bd, 0x40019df0, 0xbede0017});
  Tensor s = np::random_normal(cx, np::prng_key(cx, 42), {});
  CHECK(s->aval.shape == Shape{});
  CHECK(values<uint32_t>(s) == U{0xbce7df15});
  CHECK(fnv1a(np::random_normal(cx, np::prng_key(cx, 42), {100000})) == 0x2040ec649aee816eull);
  // 16-bit types: uniform in the type, erfinv in float32, product in the type.
  CHECK(values<uint16_t>(np::random_normal(cx, k, {4}, DType::Float16)) ==
        H{0xb7e6, 0xba5d, 0xbe65, 0x3672});
  CHECK(values<uint16_t>(np::random_normal(cx, k, {4}, DType::BFloat16)) ==
        H{0x3ec6, 0x3e3b, 0xbf80, 0xbf53});
  CHECK(fnv1a(np::random_normal(cx, np::prng_key(cx, 3), {20000}, DType::Float16)) ==
        0x8d39214428d54813ull);
  CHECK(fnv1a(np::random_normal(cx, np::prng_key(cx, 3), {20000}, DType::BFloat16)) ==
        0x046c0b3c8a8b33fdull);
  // float64 needs x64 in JAX; without it JAX returns float32.
  CHECK(np::random_normal(cx, k, {3}, DType::Float64)->aval.dtype == DType::Float32);
}

TEST_CASE("uniform matches JAX bit for bit", "[random]") {
  EagerContext cx;
  Tensor k = np::prng_key(cx, 0);
  Tensor u = np::random_uniform(cx, k, {2, 2});
  CHECK(u->aval.shape == Shape{2, 2});
  CHECK(values<uint32_t>(u) == U{0x3f729a4e, 0x3f7a8436, 0x3eaa221c, 0x3eeff550});
  CHECK(values<uint32_t>(np::random_uniform(cx, k, {6}, DType::Float32, 0.1, 0.7)) ==
        U{0x3f2b2961, 0x3f2fe8ed, 0x3e9947aa, 0x3ec32cc9, 0x3ee24512, 0x3e4c15c6});
  CHECK(fnv1a(np::random_uniform(cx, np::prng_key(cx, 1), {100000}, DType::Float32, -2.5, 0.3)) ==
        0x82e27ccb52132ce0ull);
  CHECK(values<uint16_t>(np::random_uniform(cx, k, {4}, DType::Float16, 0.1, 0.7)) ==
        H{0x3495, 0x334a, 0x3040, 0x37e6});
  CHECK(values<uint16_t>(np::random_uniform(cx, k, {4}, DType::BFloat16)) ==
        H{0x3f26, 0x3f12, 0x3e20, 0x3e50});
}

TEST_CASE("randint and permutation match JAX", "[random]") {
  EagerContext cx;
  Tensor k = np::prng_key(cx, 0);
  Tensor r = np::random_randint(cx, k, {6}, 0, 10);
  CHECK(r->aval.dtype == DType::Int32);
  CHECK(values<int32_t>(r) == std::vector<int32_t>{9, 0, 2, 3, 1, 7});
  CHECK(values<int32_t>(
            np::random_randint(cx, k, {4}, -(int64_t{1} << 31), (int64_t{1} << 31) - 1)) ==
        std::vector<int32_t>{-2116156571, -2057756336, 349724616, -593401283});
  Tensor ru = np::random_randint(cx, k, {4}, 0, (int64_t{1} << 31) - 1, DType::UInt32);
  CHECK(ru->aval.dtype == DType::UInt32);
  CHECK(values<uint32_t>(ru) == U{31327077u, 89727312u, 349724617u, 1554082365u});
  CHECK(values<int32_t>(np::random_randint(cx, k, {3}, 5, 2)) == std::vector<int32_t>{5, 5, 5});
  CHECK(fnv1a(np::random_randint(cx, np::prng_key(cx, 5), {20000}, -1000, 70000)) ==
        0xb1e435f9472a0e41ull);

  CHECK(values<int32_t>(np::random_permutation(cx, k, 10)) ==
        std::vector<int32_t>{0, 1, 8, 5, 6, 4, 3, 2, 7, 9});
  // 3000 elements take two sorting rounds.
  CHECK(fnv1a(np::random_permutation(cx, np::prng_key(cx, 42), 3000)) == 0x18bf85b3700da3e5ull);
  CHECK(np::random_permutation(cx, k, 0)->aval.shape == Shape{0});
}

TEST_CASE("random functions reject bad keys and arguments", "[random]") {
  EagerContext cx;
  Tensor k = np::prng_key(cx, 0);
  Tensor not_key = cx.constant(Array(DType::Float32, {2}));
  CHECK_THROWS_AS(np::random_normal(cx, not_key, {3}), Error);
  CHECK_THROWS_WITH(np::random_normal(cx, np::random_split(cx, k, 3), {3}),
                    Catch::Contains("accepts a single key"));
  CHECK_THROWS_AS(np::random_uniform(cx, k, {3}, DType::Int32), Error);
  CHECK_THROWS_AS(np::random_randint(cx, k, {3}, 0, 5, DType::Float32), Error);
  CHECK_THROWS_AS(np::random_normal(cx, k, {-1}), Error);
  CHECK_THROWS_AS(np::random_fold_in(cx, k, -1), Error);
  CHECK_THROWS_AS(np::random_permutation(cx, k, -3), Error);
}
