// numpy.random's generators against values numpy 2.4.6 produced (x86-64):
// single draws exactly, long runs by an FNV-1a hash of their bytes, computed
// from numpy's arrays in the same way.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include "stdlib/np_random_bitgen.hpp"

using namespace pxl::nprandom;

namespace {
template <class T> uint64_t fnv1a(const std::vector<T>& xs) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const T& x : xs) {
    unsigned char b[sizeof(T)];
    std::memcpy(b, &x, sizeof(T));
    for (unsigned char c : b) h = (h ^ c) * 0x100000001b3ull;
  }
  return h;
}
} // namespace

TEST_CASE("RandomState(seed) draws numpy's legacy MT19937 stream", "[np_random]") {
  MT19937 a(0);
  CHECK(a.legacy_gauss() == 1.764052345967664);
  CHECK(a.legacy_gauss() == 0.40015720836722329);
  CHECK(a.legacy_gauss() == 0.9787379841057392);

  MT19937 b(1234);
  CHECK(b.next_double() == 0.19151945037889229);
  CHECK(b.next_double() == 0.62210877103983186);
  std::vector<uint64_t> ints;
  for (int i = 0; i < 4; i++) ints.push_back(bounded_masked(b, 9));
  CHECK(ints == std::vector<uint64_t>{4, 8, 9, 1});
  CHECK(bounded_masked(b, 10000000000ULL) == 9442566174ULL); // 64-bit draws

  MT19937 c(0);
  const uint32_t key[] = {1, 2, 3};
  c.seed_array(key);
  CHECK(c.next_double() == 0.60986127228672893);

  MT19937 d(99);
  std::vector<double> gauss(20000);
  for (double& x : gauss) x = d.legacy_gauss();
  CHECK(fnv1a(gauss) == 0x7cff28ef411076a4ull);
}

TEST_CASE("default_rng(seed) draws numpy's PCG64 stream", "[np_random]") {
  const uint32_t zero[] = {0};
  CHECK(seed_sequence_words(zero, 4) ==
        std::vector<uint32_t>{2968811710U, 3677149159U, 745650761U, 2884920346U});
  PCG64 g(zero);
  CHECK(g.next_double() == 0.63696168732145431);
  CHECK(g.next_double() == 0.26978671376387031);
  std::vector<uint64_t> ints;
  for (int i = 0; i < 4; i++) ints.push_back(bounded_lemire(g, 9));
  CHECK(ints == std::vector<uint64_t>{3, 0, 0, 0});
  CHECK(bounded_lemire(g, 10000000000ULL) == 8132702392ULL);

  const uint32_t big[] = {7, 256}; // 2**40 + 7 as SeedSequence's words
  PCG64 h(big);
  CHECK(h.next_double() == 0.82981289182941298);

  // Long runs reach the ziggurat's slow paths (the wedges and the tail).
  const uint32_t five[] = {5}, six[] = {6};
  PCG64 z(five);
  std::vector<double> normals(100000);
  for (double& x : normals) x = standard_normal_ziggurat(z);
  CHECK(fnv1a(normals) == 0xaa646648ca57f9fdull);
  PCG64 zf(six);
  std::vector<float> normals_f(100000);
  for (float& x : normals_f) x = standard_normal_ziggurat_f(zf);
  CHECK(fnv1a(normals_f) == 0xebe0c1924429d35eull);
}
