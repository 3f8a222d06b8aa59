// See ref_fft_pocket.hpp. The plans and the order of every float operation
// follow DUCC's pocketfft (ducc0/fft/fft1d_impl.h, the version XLA's CPU
// runtime calls, measured against JAX 0.10): a length is factored into passes
// of radix 8, 4, 2 (first), 3, 5, 7, 11 and odd generic factors below 110
// (135 for real transforms), larger primes go to Bluestein's algorithm, and
// each pass combines its inputs exactly as DUCC's does. Twiddle factors are
// the float-rounded roots of unity.
#include "ir/ref_fft_pocket.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

namespace pxl::ref::pocket {

namespace {

struct Cx {
  float r, i;
};
Cx operator+(Cx a, Cx b) { return {a.r + b.r, a.i + b.i}; }
Cx operator-(Cx a, Cx b) { return {a.r - b.r, a.i - b.i}; }
Cx operator*(Cx a, float s) { return {a.r * s, a.i * s}; }
Cx operator*(Cx a, Cx b) { return {a.r * b.r - a.i * b.i, a.r * b.i + a.i * b.r}; }
Cx conj(Cx a) { return {a.r, -a.i}; }

// v times w (backward) or times conj(w) (forward).
template <bool fwd> Cx twiddle(Cx v, Cx w) {
  return fwd ? Cx{v.r * w.r + v.i * w.i, v.i * w.r - v.r * w.i}
             : Cx{v.r * w.r - v.i * w.i, v.r * w.i + v.i * w.r};
}
// Multiplication by -i (forward) or i (backward): exact.
template <bool fwd> Cx rot90(Cx a) { return fwd ? Cx{a.i, -a.r} : Cx{-a.i, a.r}; }

// a = c * e + d * f, b = c * f - d * e: a product with a conjugated twiddle.
void mulpm(float& a, float& b, float c, float d, float e, float f) {
  a = c * e + d * f;
  b = c * f - d * e;
}

// exp(2 pi i k / n) in double, exact at multiples of an eighth turn and
// symmetric, rounded to float.
Cx unit_root(size_t k, size_t n) {
  auto exact = [&](size_t num, size_t den) { return k * den == n * num; };
  if (2 * k > n) return conj(unit_root(n - k, n));
  if (k == 0) return {1, 0};
  if (exact(1, 2)) return {-1, 0};
  if (exact(1, 4)) return {0, 1};
  if (4 * k > n) { // second quadrant: exp(i(pi - t)) = -conj(exp(it))
    Cx r = unit_root(n - 2 * k, 2 * n);
    return {-r.r, r.i};
  }
  if (exact(1, 8)) {
    auto h = static_cast<float>(std::sqrt(0.5));
    return {h, h};
  }
  double t = 2.0 * std::numbers::pi * static_cast<double>(k) / static_cast<double>(n);
  return {static_cast<float>(std::cos(t)), static_cast<float>(std::sin(t))};
}

class Roots {
public:
  explicit Roots(size_t n) : v_(n) {
    for (size_t k = 0; k < n; ++k) v_[k] = unit_root(k, n);
  }
  size_t size() const { return v_.size(); }
  Cx operator[](size_t k) const { return v_[k]; }

private:
  std::vector<Cx> v_;
};
using RootsPtr = std::shared_ptr<const Roots>;

std::vector<size_t> odd_factors(size_t n, std::vector<size_t> f) {
  for (size_t d = 3; d * d <= n; d += 2)
    while (n % d == 0) {
      f.push_back(d);
      n /= d;
    }
  if (n > 1) f.push_back(n);
  return f;
}

// DUCC's factorizations: 8s (complex only), 4s, then a 2 moved to the front.
std::vector<size_t> factorize(size_t n, bool with_eight) {
  std::vector<size_t> f;
  if (with_eight)
    for (; (n & 7) == 0; n >>= 3) f.push_back(8);
  for (; (n & 3) == 0; n >>= 2) f.push_back(4);
  if ((n & 1) == 0) {
    n >>= 1;
    f.push_back(2);
    std::swap(f.front(), f.back());
  }
  return odd_factors(n, std::move(f));
}

// The smallest product of 2, 3, 5, 7 and 11 that is at least n.
size_t good_size_cmplx(size_t n) {
  if (n <= 12) return n;
  size_t best = 2 * n;
  for (size_t f11 = 1; f11 < best; f11 *= 11)
    for (size_t f117 = f11; f117 < best; f117 *= 7)
      for (size_t f1175 = f117; f1175 < best; f1175 *= 5) {
        size_t x = f1175;
        while (x < n) x *= 2;
        for (;;) {
          if (x < n) {
            x *= 3;
          } else if (x > n) {
            best = std::min(best, x);
            if (x & 1) break;
            x >>= 1;
          } else {
            return n;
          }
        }
      }
  return best;
}

} // namespace

// ---------------------------------------------------------------- complex --

// One pass of a complex plan: it reads cc (ido x ip x l1) and writes the
// transformed data (ido x l1 x ip) to cc or ch, whichever it returns.
class CPass {
public:
  virtual ~CPass() = default;
  virtual Cx* exec(Cx* cc, Cx* ch, bool fwd) const = 0;
};

namespace {

std::shared_ptr<const CPass> make_cpass(size_t l1, size_t ido, size_t ip, const RootsPtr& roots);

class CIdentity final : public CPass {
public:
  Cx* exec(Cx* cc, Cx*, bool) const override { return cc; }
};

// A radix pass: its geometry and twiddles W(j, i) = root(j * l1 * i).
class CRadix : public CPass {
public:
  CRadix(size_t l1, size_t ido, size_t ip, RootsPtr roots)
      : l1_(l1), ido_(ido), ip_(ip), rfct_(roots->size() / (l1 * ido * ip)),
        roots_(std::move(roots)) {}
  Cx* exec(Cx* cc, Cx* ch, bool fwd) const override {
    return fwd ? run<true>(cc, ch) : run<false>(cc, ch);
  }

protected:
  Cx W(size_t j, size_t i) const { return (*roots_)[rfct_ * j * l1_ * i]; }
  Cx& CC(Cx* cc, size_t a, size_t b, size_t c) const { return cc[a + ido_ * (b + ip_ * c)]; }
  Cx& CH(Cx* ch, size_t a, size_t b, size_t c) const { return ch[a + ido_ * (b + l1_ * c)]; }
  // Stores butterfly output j of (i, k): twiddled unless i == 0.
  template <bool fwd> void put(Cx* ch, size_t i, size_t k, size_t j, Cx v) const {
    CH(ch, i, k, j) = i == 0 ? v : twiddle<fwd>(v, W(j, i));
  }
  virtual Cx* run_fwd(Cx* cc, Cx* ch) const = 0;
  virtual Cx* run_bwd(Cx* cc, Cx* ch) const = 0;
  template <bool fwd> Cx* run(Cx* cc, Cx* ch) const {
    return fwd ? run_fwd(cc, ch) : run_bwd(cc, ch);
  }

  size_t l1_, ido_, ip_, rfct_;
  RootsPtr roots_;
};

// Declares run_fwd/run_bwd as the two instances of a template body.
#define PXL_POCKET_DIRECTIONS                                                                      \
  Cx* run_fwd(Cx* cc, Cx* ch) const override { return body<true>(cc, ch); }                        \
  Cx* run_bwd(Cx* cc, Cx* ch) const override { return body<false>(cc, ch); }

class CPass2 final : public CRadix {
public:
  CPass2(size_t l1, size_t ido, RootsPtr r) : CRadix(l1, ido, 2, std::move(r)) {}

private:
  PXL_POCKET_DIRECTIONS
  template <bool fwd> Cx* body(Cx* cc, Cx* ch) const {
    for (size_t k = 0; k < l1_; ++k)
      for (size_t i = 0; i < ido_; ++i) {
        Cx a = CC(cc, i, 0, k), b = CC(cc, i, 1, k);
        CH(ch, i, k, 0) = a + b;
        put<fwd>(ch, i, k, 1, a - b);
      }
    return ch;
  }
};

class CPass3 final : public CRadix {
public:
  CPass3(size_t l1, size_t ido, RootsPtr r) : CRadix(l1, ido, 3, std::move(r)) {}

private:
  PXL_POCKET_DIRECTIONS
  template <bool fwd> Cx* body(Cx* cc, Cx* ch) const {
    constexpr float twr = -0.5f, twi = (fwd ? -1 : 1) * 0.8660254037844386467637231707529362f;
    for (size_t k = 0; k < l1_; ++k)
      for (size_t i = 0; i < ido_; ++i) {
        Cx t0 = CC(cc, i, 0, k), t1 = CC(cc, i, 1, k) + CC(cc, i, 2, k),
           t2 = CC(cc, i, 1, k) - CC(cc, i, 2, k);
        CH(ch, i, k, 0) = t0 + t1;
        Cx ca = t0 + t1 * twr, cb{-t2.i * twi, t2.r * twi};
        put<fwd>(ch, i, k, 1, ca + cb);
        put<fwd>(ch, i, k, 2, ca - cb);
      }
    return ch;
  }
};

class CPass4 final : public CRadix {
public:
  CPass4(size_t l1, size_t ido, RootsPtr r) : CRadix(l1, ido, 4, std::move(r)) {}

private:
  PXL_POCKET_DIRECTIONS
  template <bool fwd> Cx* body(Cx* cc, Cx* ch) const {
    for (size_t k = 0; k < l1_; ++k)
      for (size_t i = 0; i < ido_; ++i) {
        Cx c0 = CC(cc, i, 0, k), c1 = CC(cc, i, 1, k), c2 = CC(cc, i, 2, k), c3 = CC(cc, i, 3, k);
        Cx t2 = c0 + c2, t1 = c0 - c2, t3 = c1 + c3, t4 = rot90<fwd>(c1 - c3);
        CH(ch, i, k, 0) = t2 + t3;
        put<fwd>(ch, i, k, 1, t1 + t4);
        put<fwd>(ch, i, k, 2, t2 - t3);
        put<fwd>(ch, i, k, 3, t1 - t4);
      }
    return ch;
  }
};

// The odd prime radices 5, 7 and 11: DUCC's hand-written butterflies, which
// pair inputs j and p - j and sum the cosine and sine terms left to right.
template <size_t P> class CPassOdd final : public CRadix {
public:
  CPassOdd(size_t l1, size_t ido, RootsPtr r) : CRadix(l1, ido, P, std::move(r)) {}

private:
  PXL_POCKET_DIRECTIONS
  static constexpr size_t H = P / 2;
  // cos and sin(2 pi m / P) for m = 1..H, as DUCC's float constants.
  static constexpr long double kCos[3][5] = {
      {0.3090169943749474241022934171828191L, -0.8090169943749474241022934171828191L},
      {0.6234898018587335305250048840042398L, -0.2225209339563144042889025644967948L,
       -0.9009688679024191262361023195074451L},
      {0.8412535328311811688618116489193677L, 0.4154150130018864255292741492296232L,
       -0.1423148382732851404437926686163697L, -0.6548607339452850640569250724662936L,
       -0.9594929736144973898903680570663277L}};
  static constexpr long double kSin[3][5] = {
      {0.9510565162951535721164393333793821L, 0.5877852522924731291687059546390728L},
      {0.7818314824680298087084445266740578L, 0.9749279121818236070181316829939312L,
       0.433883739117558120475768332848359L},
      {0.5406408174555975821076359543186917L, 0.9096319953545183714117153830790285L,
       0.9898214418809327323760920377767188L, 0.7557495743542582837740358439723444L,
       0.2817325568414296977114179153466169L}};
  static constexpr size_t kRow = P == 5 ? 0 : P == 7 ? 1 : 2;

  template <bool fwd> Cx* body(Cx* cc, Cx* ch) const {
    float cs[H + 1], sn[H + 1];
    for (size_t m = 1; m <= H; ++m) {
      cs[m] = static_cast<float>(kCos[kRow][m - 1]);
      sn[m] = (fwd ? -1 : 1) * static_cast<float>(kSin[kRow][m - 1]);
    }
    for (size_t k = 0; k < l1_; ++k)
      for (size_t i = 0; i < ido_; ++i) {
        Cx t0 = CC(cc, i, 0, k), sum[H + 1], dif[H + 1];
        for (size_t m = 1; m <= H; ++m) {
          sum[m] = CC(cc, i, m, k) + CC(cc, i, P - m, k);
          dif[m] = CC(cc, i, m, k) - CC(cc, i, P - m, k);
        }
        Cx c0 = t0;
        for (size_t m = 1; m <= H; ++m) c0 = c0 + sum[m];
        CH(ch, i, k, 0) = c0;
        for (size_t u = 1; u <= H; ++u) {
          // The angle of term m in output u is u * m (mod P), folded into 1..H.
          Cx ca = t0;
          float cbi = 0, cbr = 0;
          for (size_t m = 1; m <= H; ++m) {
            size_t a = (u * m) % P;
            bool neg = a > H;
            size_t f = neg ? P - a : a;
            float s = neg ? -sn[f] : sn[f];
            ca = ca + sum[m] * cs[f];
            cbi = m == 1 ? s * dif[m].r : cbi + s * dif[m].r;
            cbr = m == 1 ? s * dif[m].i : cbr + s * dif[m].i;
          }
          Cx cb{-cbr, cbi};
          put<fwd>(ch, i, k, u, ca + cb);
          put<fwd>(ch, i, k, P - u, ca - cb);
        }
      }
    return ch;
  }
};

class CPass8 final : public CRadix {
public:
  CPass8(size_t l1, size_t ido, RootsPtr r) : CRadix(l1, ido, 8, std::move(r)) {}

private:
  PXL_POCKET_DIRECTIONS
  static constexpr float kH = 0.707106781186547524400844362104849f;
  template <bool fwd> static Cx rot45(Cx a) {
    return fwd ? Cx{kH * (a.r + a.i), kH * (a.i - a.r)} : Cx{kH * (a.r - a.i), kH * (a.i + a.r)};
  }
  template <bool fwd> static Cx rot135(Cx a) {
    return fwd ? Cx{kH * (a.i - a.r), kH * (-a.r - a.i)} : Cx{kH * (-a.r - a.i), kH * (a.r - a.i)};
  }
  template <bool fwd> Cx* body(Cx* cc, Cx* ch) const {
    for (size_t k = 0; k < l1_; ++k)
      for (size_t i = 0; i < ido_; ++i) {
        auto c = [&](size_t j) { return CC(cc, i, j, k); };
        Cx a1 = c(1) + c(5), a5 = c(1) - c(5), a3 = c(3) + c(7), a7 = c(3) - c(7);
        Cx t = a1;
        a1 = t + a3;
        a3 = rot90<fwd>(t - a3);
        a7 = rot90<fwd>(a7);
        t = a5;
        a5 = rot45<fwd>(t + a7);
        a7 = rot135<fwd>(t - a7);
        Cx a0 = c(0) + c(4), a4 = c(0) - c(4), a2 = c(2) + c(6), a6 = c(2) - c(6);
        Cx s02 = a0 + a2, d02 = a0 - a2;
        CH(ch, i, k, 0) = s02 + a1;
        put<fwd>(ch, i, k, 4, s02 - a1);
        put<fwd>(ch, i, k, 2, d02 + a3);
        put<fwd>(ch, i, k, 6, d02 - a3);
        a6 = rot90<fwd>(a6);
        Cx s46 = a4 + a6, d46 = a4 - a6;
        put<fwd>(ch, i, k, 1, s46 + a5);
        put<fwd>(ch, i, k, 5, s46 - a5);
        put<fwd>(ch, i, k, 3, d46 + a7);
        put<fwd>(ch, i, k, 7, d46 - a7);
      }
    return ch;
  }
};

// An odd radix without a dedicated butterfly (up to 109).
class CPassGeneric final : public CRadix {
public:
  CPassGeneric(size_t l1, size_t ido, size_t ip, RootsPtr r) : CRadix(l1, ido, ip, std::move(r)) {
    for (size_t j = 0; j < ip; ++j) cs_.push_back((*roots_)[rfct_ * ido * l1 * j]);
  }

private:
  PXL_POCKET_DIRECTIONS
  std::vector<Cx> cs_;

  template <bool fwd> Cx* body(Cx* cc, Cx* ch) const {
    size_t ip = ip_, ipph = (ip + 1) / 2, idl1 = ido_ * l1_;
    auto CX = [&](size_t a, size_t b, size_t c) -> Cx& { return cc[a + ido_ * (b + l1_ * c)]; };
    auto CX2 = [&](size_t a, size_t b) -> Cx& { return cc[a + idl1 * b]; };
    auto CH2 = [&](size_t a, size_t b) -> Cx& { return ch[a + idl1 * b]; };
    auto cs = [&](size_t j) { return fwd ? conj(cs_[j]) : cs_[j]; };
    for (size_t k = 0; k < l1_; ++k)
      for (size_t i = 0; i < ido_; ++i) CH(ch, i, k, 0) = CC(cc, i, 0, k);
    for (size_t j = 1, jc = ip - 1; j < ipph; ++j, --jc)
      for (size_t k = 0; k < l1_; ++k)
        for (size_t i = 0; i < ido_; ++i) {
          Cx a = CC(cc, i, j, k), b = CC(cc, i, jc, k);
          CH(ch, i, k, j) = a + b;
          CH(ch, i, k, jc) = a - b;
        }
    for (size_t k = 0; k < l1_; ++k)
      for (size_t i = 0; i < ido_; ++i) {
        Cx tmp = CH(ch, i, k, 0);
        for (size_t j = 1; j < ipph; ++j) tmp = tmp + CH(ch, i, k, j);
        CX(i, k, 0) = tmp;
      }
    for (size_t l = 1, lc = ip - 1; l < ipph; ++l, --lc) {
      Cx wal = cs(l), wal2 = cs(2 * l);
      for (size_t ik = 0; ik < idl1; ++ik) {
        CX2(ik, l).r = CH2(ik, 0).r + wal.r * CH2(ik, 1).r + wal2.r * CH2(ik, 2).r;
        CX2(ik, l).i = CH2(ik, 0).i + wal.r * CH2(ik, 1).i + wal2.r * CH2(ik, 2).i;
        CX2(ik, lc).r = -wal.i * CH2(ik, ip - 1).i - wal2.i * CH2(ik, ip - 2).i;
        CX2(ik, lc).i = wal.i * CH2(ik, ip - 1).r + wal2.i * CH2(ik, ip - 2).r;
      }
      size_t iwal = 2 * l, j = 3, jc = ip - 3;
      auto next = [&] {
        iwal += l;
        if (iwal > ip) iwal -= ip;
        return cs(iwal);
      };
      for (; j < ipph - 1; j += 2, jc -= 2) {
        Cx x1 = next(), x2 = next();
        for (size_t ik = 0; ik < idl1; ++ik) {
          CX2(ik, l).r += CH2(ik, j).r * x1.r + CH2(ik, j + 1).r * x2.r;
          CX2(ik, l).i += CH2(ik, j).i * x1.r + CH2(ik, j + 1).i * x2.r;
          CX2(ik, lc).r -= CH2(ik, jc).i * x1.i + CH2(ik, jc - 1).i * x2.i;
          CX2(ik, lc).i += CH2(ik, jc).r * x1.i + CH2(ik, jc - 1).r * x2.i;
        }
      }
      for (; j < ipph; ++j, --jc) {
        Cx x1 = next();
        for (size_t ik = 0; ik < idl1; ++ik) {
          CX2(ik, l).r += CH2(ik, j).r * x1.r;
          CX2(ik, l).i += CH2(ik, j).i * x1.r;
          CX2(ik, lc).r -= CH2(ik, jc).i * x1.i;
          CX2(ik, lc).i += CH2(ik, jc).r * x1.i;
        }
      }
    }
    for (size_t j = 1, jc = ip - 1; j < ipph; ++j, --jc)
      for (size_t k = 0; k < l1_; ++k)
        for (size_t i = 0; i < ido_; ++i) {
          Cx a = CX(i, k, j), b = CX(i, k, jc);
          CX(i, k, j) = i == 0 ? a + b : twiddle<fwd>(a + b, W(j, i));
          CX(i, k, jc) = i == 0 ? a - b : twiddle<fwd>(a - b, W(jc, i));
        }
    return cc;
  }
};

// Runs a plan's passes over n contiguous points; the result lands in `data`.
Cx* run_passes(const CPass& pass, Cx* data, std::vector<Cx>& scratch, bool fwd) {
  return pass.exec(data, scratch.data(), fwd);
}

// Bluestein's algorithm for a prime radix of 110 or more: a convolution with
// the chirp bk, done with a composite transform of length ip2 >= 2 ip - 1.
class CPassBlue final : public CRadix {
public:
  CPassBlue(size_t l1, size_t ido, size_t ip, RootsPtr r)
      : CRadix(l1, ido, ip, std::move(r)), ip2_(good_size_cmplx(2 * ip - 1)),
        sub_(make_cpass(1, 1, ip2_, std::make_shared<const Roots>(ip2_))), bk_(ip),
        bkf_(ip2_ / 2 + 1) {
    RootsPtr roots2 =
        roots_->size() % (2 * ip) == 0 ? roots_ : std::make_shared<const Roots>(2 * ip);
    size_t rfct2 = roots2->size() / (2 * ip), coeff = 0;
    bk_[0] = {1, 0};
    for (size_t m = 1; m < ip; ++m) {
      coeff += 2 * m - 1;
      if (coeff >= 2 * ip) coeff -= 2 * ip;
      bk_[m] = (*roots2)[coeff * rfct2];
    }
    std::vector<Cx> tbkf(ip2_, Cx{0, 0}), scratch(ip2_);
    float xn2 = 1.0f / static_cast<float>(ip2_);
    tbkf[0] = bk_[0] * xn2;
    for (size_t m = 1; m < ip; ++m) tbkf[m] = tbkf[ip2_ - m] = bk_[m] * xn2;
    Cx* res = sub_->exec(tbkf.data(), scratch.data(), true);
    for (size_t i = 0; i < bkf_.size(); ++i) bkf_[i] = res[i];
  }

private:
  PXL_POCKET_DIRECTIONS
  size_t ip2_;
  std::shared_ptr<const CPass> sub_;
  std::vector<Cx> bk_, bkf_;

  template <bool fwd> Cx* body(Cx* cc, Cx* ch) const {
    std::vector<Cx> akf(ip2_), scratch(ip2_);
    for (size_t k = 0; k < l1_; ++k)
      for (size_t i = 0; i < ido_; ++i) {
        for (size_t m = 0; m < ip_; ++m) akf[m] = twiddle<fwd>(CC(cc, i, m, k), bk_[m]);
        Cx zero = akf[0] * 0.0f;
        for (size_t m = ip_; m < ip2_; ++m) akf[m] = zero;
        Cx* res = sub_->exec(akf.data(), scratch.data(), true);
        res[0] = twiddle<!fwd>(res[0], bkf_[0]);
        for (size_t m = 1; m < (ip2_ + 1) / 2; ++m) {
          res[m] = twiddle<!fwd>(res[m], bkf_[m]);
          res[ip2_ - m] = twiddle<!fwd>(res[ip2_ - m], bkf_[m]);
        }
        if ((ip2_ & 1) == 0) res[ip2_ / 2] = twiddle<!fwd>(res[ip2_ / 2], bkf_[ip2_ / 2]);
        Cx* other = res == akf.data() ? scratch.data() : akf.data();
        res = sub_->exec(res, other, false);
        for (size_t m = 0; m < ip_; ++m)
          CH(ch, i, k, m) = twiddle<fwd>(res[m], i == 0 || m == 0 ? bk_[m] : bk_[m] * W(m, i));
      }
    return ch;
  }
};

// Several passes over one length: l1 == ido == 1 runs them in turn; a pass of
// a longer length (above 10000 points, split in two packets) runs them per
// transform and twiddles (l1 == 1) or transposes (ido == 1) the results.
class CMultipass final : public CRadix {
public:
  CMultipass(size_t l1, size_t ido, size_t ip, RootsPtr r) : CRadix(l1, ido, ip, std::move(r)) {
    std::vector<size_t> factors;
    if (ip <= 10000) {
      factors = factorize(ip, true);
    } else {
      std::vector<size_t> primes, packets{1, 1};
      size_t n = ip;
      for (; (n & 1) == 0; n >>= 1) primes.push_back(2);
      primes = odd_factors(n, std::move(primes));
      std::sort(primes.begin(), primes.end(), std::greater<size_t>());
      for (size_t f : primes) (packets[0] > packets[1] ? packets[1] : packets[0]) *= f;
      factors = packets;
    }
    size_t l1l = 1;
    for (size_t f : factors) {
      passes_.push_back(make_cpass(l1l, ip / (f * l1l), f, roots_));
      l1l *= f;
    }
  }

private:
  PXL_POCKET_DIRECTIONS
  std::vector<std::shared_ptr<const CPass>> passes_;

  Cx* chain(Cx* p1, Cx* p2, bool fwd) const {
    for (const auto& pass : passes_)
      if (pass->exec(p1, p2, fwd) == p2) std::swap(p1, p2);
    return p1;
  }

  template <bool fwd> Cx* body(Cx* cc, Cx* ch) const {
    if (l1_ == 1 && ido_ == 1) return chain(cc, ch, fwd);
    std::vector<Cx> a(ip_), b(ip_);
    if (ido_ == 1) {
      for (size_t n = 0; n < l1_; ++n) {
        std::copy(cc + n * ip_, cc + (n + 1) * ip_, a.begin());
        Cx* res = chain(a.data(), b.data(), fwd);
        for (size_t m = 0; m < ip_; ++m) ch[n + m * l1_] = res[m];
      }
      return ch;
    }
    for (size_t i = 0; i < ido_; ++i) { // l1 == 1
      for (size_t m = 0; m < ip_; ++m) a[m] = cc[i + ido_ * m];
      Cx* res = chain(a.data(), b.data(), fwd);
      for (size_t m = 0; m < ip_; ++m)
        cc[i + ido_ * m] =
            i == 0 || m == 0 ? res[m] : twiddle<fwd>(res[m], (*roots_)[rfct_ * m * i]);
    }
    return cc;
  }
};

std::shared_ptr<const CPass> make_cpass(size_t l1, size_t ido, size_t ip, const RootsPtr& roots) {
  if (ip == 1) return std::make_shared<CIdentity>();
  if (factorize(ip, true).size() > 1) return std::make_shared<CMultipass>(l1, ido, ip, roots);
  switch (ip) {
  case 2:
    return std::make_shared<CPass2>(l1, ido, roots);
  case 3:
    return std::make_shared<CPass3>(l1, ido, roots);
  case 4:
    return std::make_shared<CPass4>(l1, ido, roots);
  case 5:
    return std::make_shared<CPassOdd<5>>(l1, ido, roots);
  case 7:
    return std::make_shared<CPassOdd<7>>(l1, ido, roots);
  case 8:
    return std::make_shared<CPass8>(l1, ido, roots);
  case 11:
    return std::make_shared<CPassOdd<11>>(l1, ido, roots);
  default:
    if (ip < 110) return std::make_shared<CPassGeneric>(l1, ido, ip, roots);
    return std::make_shared<CPassBlue>(l1, ido, ip, roots);
  }
}

// DUCC's plan for one long transform on its own (more than 300 points, a
// multiple of 4): a radix-4 pass first, then four transforms of n/4 points
// (run side by side in SIMD lanes), whose outputs interleave.
class CVecPass final : public CPass {
public:
  CVecPass(size_t n, const RootsPtr& roots)
      : n_(n), first_(make_cpass(1, n / 4, 4, roots)), rest_(make_cpass(1, 1, n / 4, roots)) {}
  Cx* exec(Cx* cc, Cx* ch, bool fwd) const override {
    size_t q = n_ / 4;
    Cx* res = first_->exec(cc, ch, fwd);
    std::vector<Cx> a(q), b(q);
    std::vector<Cx> out(n_);
    for (size_t j = 0; j < 4; ++j) {
      std::copy(res + j * q, res + (j + 1) * q, a.begin());
      Cx* r = rest_->exec(a.data(), b.data(), fwd);
      for (size_t i = 0; i < q; ++i) out[i * 4 + j] = r[i];
    }
    std::copy(out.begin(), out.end(), cc);
    return cc;
  }

private:
  size_t n_;
  std::shared_ptr<const CPass> first_, rest_;
};

std::shared_ptr<const CPass> make_cplan(size_t n, bool single = false) {
  auto roots = std::make_shared<const Roots>(n);
  if (single && n > 300 && n % 4 == 0) return std::make_shared<CVecPass>(n, roots);
  return make_cpass(1, 1, n, roots);
}

} // namespace

// ------------------------------------------------------------------- real --

// One pass of a real plan, in FFTPACK's halfcomplex layout: forward passes
// read cc (ido x l1 x ip) and write ido x ip x l1, backward ones the reverse.
class RPass {
public:
  virtual ~RPass() = default;
  virtual float* exec(float* cc, float* ch, bool fwd) const = 0;
};

namespace {

std::shared_ptr<const RPass> make_rpass(size_t l1, size_t ido, size_t ip, const RootsPtr& roots);

class RIdentity final : public RPass {
public:
  float* exec(float* cc, float*, bool) const override { return cc; }
};

class RRadix : public RPass {
public:
  RRadix(size_t l1, size_t ido, size_t ip, const RootsPtr& roots)
      : l1_(l1), ido_(ido), ip_(ip), wa_((ip - 1) * (ido - 1)) {
    size_t rfct = roots->size() / (l1 * ido * ip);
    for (size_t j = 1; j < ip; ++j)
      for (size_t i = 1; i <= (ido - 1) / 2; ++i) {
        Cx v = (*roots)[rfct * j * l1 * i];
        wa_[(j - 1) * (ido - 1) + 2 * i - 2] = v.r;
        wa_[(j - 1) * (ido - 1) + 2 * i - 1] = v.i;
      }
  }
  float* exec(float* cc, float* ch, bool fwd) const override {
    return fwd ? forward(cc, ch) : backward(cc, ch);
  }

protected:
  virtual float* forward(float* cc, float* ch) const = 0;
  virtual float* backward(float* cc, float* ch) const = 0;
  float WA(size_t x, size_t i) const { return wa_[i + x * (ido_ - 1)]; }
  // Forward passes read CF and write HF; backward ones read HB, write CB.
  float& CF(float* p, size_t a, size_t b, size_t c) const { return p[a + ido_ * (b + l1_ * c)]; }
  float& HF(float* p, size_t a, size_t b, size_t c) const { return p[a + ido_ * (b + ip_ * c)]; }

  size_t l1_, ido_, ip_;
  std::vector<float> wa_;
};

void pm(float& a, float& b, float c, float d) {
  a = c + d;
  b = c - d;
}
// a2 = a + b, b2 = i (b - a), on real/imaginary parts.
void rearrange(float& rx, float& ix, float& ry, float& iy) {
  float t1 = rx + ry, t2 = ry - rx, t3 = ix + iy, t4 = ix - iy;
  rx = t1;
  ix = t3;
  ry = t4;
  iy = t2;
}

class RPass2 final : public RRadix {
public:
  RPass2(size_t l1, size_t ido, const RootsPtr& r) : RRadix(l1, ido, 2, r) {}

private:
  float* forward(float* cc, float* ch) const override {
    size_t ido = ido_;
    for (size_t k = 0; k < l1_; k++)
      pm(HF(ch, 0, 0, k), HF(ch, ido - 1, 1, k), CF(cc, 0, k, 0), CF(cc, 0, k, 1));
    if ((ido & 1) == 0)
      for (size_t k = 0; k < l1_; k++) {
        HF(ch, 0, 1, k) = -CF(cc, ido - 1, k, 1);
        HF(ch, ido - 1, 0, k) = CF(cc, ido - 1, k, 0);
      }
    if (ido <= 2) return ch;
    for (size_t k = 0; k < l1_; k++)
      for (size_t i = 2; i < ido; i += 2) {
        size_t ic = ido - i;
        float tr2, ti2;
        mulpm(tr2, ti2, WA(0, i - 2), WA(0, i - 1), CF(cc, i - 1, k, 1), CF(cc, i, k, 1));
        pm(HF(ch, i - 1, 0, k), HF(ch, ic - 1, 1, k), CF(cc, i - 1, k, 0), tr2);
        pm(HF(ch, i, 0, k), HF(ch, ic, 1, k), ti2, CF(cc, i, k, 0));
      }
    return ch;
  }
  float* backward(float* cc, float* ch) const override {
    size_t ido = ido_;
    for (size_t k = 0; k < l1_; k++)
      pm(CF(ch, 0, k, 0), CF(ch, 0, k, 1), HF(cc, 0, 0, k), HF(cc, ido - 1, 1, k));
    if ((ido & 1) == 0)
      for (size_t k = 0; k < l1_; k++) {
        CF(ch, ido - 1, k, 0) = 2.0f * HF(cc, ido - 1, 0, k);
        CF(ch, ido - 1, k, 1) = -2.0f * HF(cc, 0, 1, k);
      }
    if (ido <= 2) return ch;
    for (size_t k = 0; k < l1_; ++k)
      for (size_t i = 2; i < ido; i += 2) {
        size_t ic = ido - i;
        float ti2, tr2;
        pm(CF(ch, i - 1, k, 0), tr2, HF(cc, i - 1, 0, k), HF(cc, ic - 1, 1, k));
        pm(ti2, CF(ch, i, k, 0), HF(cc, i, 0, k), HF(cc, ic, 1, k));
        mulpm(CF(ch, i, k, 1), CF(ch, i - 1, k, 1), WA(0, i - 2), WA(0, i - 1), ti2, tr2);
      }
    return ch;
  }
};

class RPass3 final : public RRadix {
public:
  RPass3(size_t l1, size_t ido, const RootsPtr& r) : RRadix(l1, ido, 3, r) {}

private:
  static constexpr float taur = -0.5f, taui = 0.8660254037844386467637231707529362f;
  float* forward(float* cc, float* ch) const override {
    size_t ido = ido_;
    for (size_t k = 0; k < l1_; k++) {
      float cr2 = CF(cc, 0, k, 1) + CF(cc, 0, k, 2);
      HF(ch, 0, 0, k) = CF(cc, 0, k, 0) + cr2;
      HF(ch, 0, 2, k) = taui * (CF(cc, 0, k, 2) - CF(cc, 0, k, 1));
      HF(ch, ido - 1, 1, k) = CF(cc, 0, k, 0) + taur * cr2;
    }
    if (ido == 1) return ch;
    for (size_t k = 0; k < l1_; k++)
      for (size_t i = 2; i < ido; i += 2) {
        size_t ic = ido - i;
        float di2, di3, dr2, dr3;
        mulpm(dr2, di2, WA(0, i - 2), WA(0, i - 1), CF(cc, i - 1, k, 1), CF(cc, i, k, 1));
        mulpm(dr3, di3, WA(1, i - 2), WA(1, i - 1), CF(cc, i - 1, k, 2), CF(cc, i, k, 2));
        rearrange(dr2, di2, dr3, di3);
        HF(ch, i - 1, 0, k) = CF(cc, i - 1, k, 0) + dr2;
        HF(ch, i, 0, k) = CF(cc, i, k, 0) + di2;
        float tr2 = CF(cc, i - 1, k, 0) + taur * dr2;
        float ti2 = CF(cc, i, k, 0) + taur * di2;
        float tr3 = taui * dr3, ti3 = taui * di3;
        pm(HF(ch, i - 1, 2, k), HF(ch, ic - 1, 1, k), tr2, tr3);
        pm(HF(ch, i, 2, k), HF(ch, ic, 1, k), ti3, ti2);
      }
    return ch;
  }
  float* backward(float* cc, float* ch) const override {
    size_t ido = ido_;
    for (size_t k = 0; k < l1_; k++) {
      float tr2 = 2.0f * HF(cc, ido - 1, 1, k);
      float cr2 = HF(cc, 0, 0, k) + taur * tr2;
      CF(ch, 0, k, 0) = HF(cc, 0, 0, k) + tr2;
      float ci3 = 2.0f * taui * HF(cc, 0, 2, k);
      pm(CF(ch, 0, k, 2), CF(ch, 0, k, 1), cr2, ci3);
    }
    if (ido == 1) return ch;
    for (size_t k = 0; k < l1_; k++)
      for (size_t i = 2, ic = ido - 2; i < ido; i += 2, ic -= 2) {
        float tr2 = HF(cc, i - 1, 2, k) + HF(cc, ic - 1, 1, k);
        float ti2 = HF(cc, i, 2, k) - HF(cc, ic, 1, k);
        float cr2 = HF(cc, i - 1, 0, k) + taur * tr2;
        float ci2 = HF(cc, i, 0, k) + taur * ti2;
        CF(ch, i - 1, k, 0) = HF(cc, i - 1, 0, k) + tr2;
        CF(ch, i, k, 0) = HF(cc, i, 0, k) + ti2;
        float cr3 = taui * (HF(cc, i - 1, 2, k) - HF(cc, ic - 1, 1, k));
        float ci3 = taui * (HF(cc, i, 2, k) + HF(cc, ic, 1, k));
        float di2, di3, dr2, dr3;
        pm(dr3, dr2, cr2, ci3);
        pm(di2, di3, ci2, cr3);
        mulpm(CF(ch, i, k, 1), CF(ch, i - 1, k, 1), WA(0, i - 2), WA(0, i - 1), di2, dr2);
        mulpm(CF(ch, i, k, 2), CF(ch, i - 1, k, 2), WA(1, i - 2), WA(1, i - 1), di3, dr3);
      }
    return ch;
  }
};

class RPass4 final : public RRadix {
public:
  RPass4(size_t l1, size_t ido, const RootsPtr& r) : RRadix(l1, ido, 4, r) {}

private:
  float* forward(float* cc, float* ch) const override {
    constexpr float hsqt2 = 0.707106781186547524400844362104849f;
    size_t ido = ido_;
    for (size_t k = 0; k < l1_; k++) {
      float tr1, tr2;
      pm(tr1, HF(ch, 0, 2, k), CF(cc, 0, k, 3), CF(cc, 0, k, 1));
      pm(tr2, HF(ch, ido - 1, 1, k), CF(cc, 0, k, 0), CF(cc, 0, k, 2));
      pm(HF(ch, 0, 0, k), HF(ch, ido - 1, 3, k), tr2, tr1);
    }
    if ((ido & 1) == 0)
      for (size_t k = 0; k < l1_; k++) {
        float ti1 = -hsqt2 * (CF(cc, ido - 1, k, 1) + CF(cc, ido - 1, k, 3));
        float tr1 = hsqt2 * (CF(cc, ido - 1, k, 1) - CF(cc, ido - 1, k, 3));
        pm(HF(ch, ido - 1, 0, k), HF(ch, ido - 1, 2, k), CF(cc, ido - 1, k, 0), tr1);
        pm(HF(ch, 0, 3, k), HF(ch, 0, 1, k), ti1, CF(cc, ido - 1, k, 2));
      }
    if (ido <= 2) return ch;
    for (size_t k = 0; k < l1_; k++)
      for (size_t i = 2; i < ido; i += 2) {
        size_t ic = ido - i;
        float ci2, ci3, ci4, cr2, cr3, cr4, ti1, ti2, ti3, ti4, tr1, tr2, tr3, tr4;
        mulpm(cr2, ci2, WA(0, i - 2), WA(0, i - 1), CF(cc, i - 1, k, 1), CF(cc, i, k, 1));
        mulpm(cr3, ci3, WA(1, i - 2), WA(1, i - 1), CF(cc, i - 1, k, 2), CF(cc, i, k, 2));
        mulpm(cr4, ci4, WA(2, i - 2), WA(2, i - 1), CF(cc, i - 1, k, 3), CF(cc, i, k, 3));
        pm(tr1, tr4, cr4, cr2);
        pm(ti1, ti4, ci2, ci4);
        pm(tr2, tr3, CF(cc, i - 1, k, 0), cr3);
        pm(ti2, ti3, CF(cc, i, k, 0), ci3);
        pm(HF(ch, i - 1, 0, k), HF(ch, ic - 1, 3, k), tr2, tr1);
        pm(HF(ch, i, 0, k), HF(ch, ic, 3, k), ti1, ti2);
        pm(HF(ch, i - 1, 2, k), HF(ch, ic - 1, 1, k), tr3, ti4);
        pm(HF(ch, i, 2, k), HF(ch, ic, 1, k), tr4, ti3);
      }
    return ch;
  }
  float* backward(float* cc, float* ch) const override {
    constexpr float sqrt2 = 1.414213562373095048801688724209698f;
    size_t ido = ido_;
    for (size_t k = 0; k < l1_; k++) {
      float tr1, tr2;
      pm(tr2, tr1, HF(cc, 0, 0, k), HF(cc, ido - 1, 3, k));
      float tr3 = 2.0f * HF(cc, ido - 1, 1, k), tr4 = 2.0f * HF(cc, 0, 2, k);
      pm(CF(ch, 0, k, 0), CF(ch, 0, k, 2), tr2, tr3);
      pm(CF(ch, 0, k, 3), CF(ch, 0, k, 1), tr1, tr4);
    }
    if ((ido & 1) == 0)
      for (size_t k = 0; k < l1_; k++) {
        float tr1, tr2, ti1, ti2;
        pm(ti1, ti2, HF(cc, 0, 3, k), HF(cc, 0, 1, k));
        pm(tr2, tr1, HF(cc, ido - 1, 0, k), HF(cc, ido - 1, 2, k));
        CF(ch, ido - 1, k, 0) = tr2 + tr2;
        CF(ch, ido - 1, k, 1) = sqrt2 * (tr1 - ti1);
        CF(ch, ido - 1, k, 2) = ti2 + ti2;
        CF(ch, ido - 1, k, 3) = -sqrt2 * (tr1 + ti1);
      }
    if (ido <= 2) return ch;
    for (size_t k = 0; k < l1_; ++k)
      for (size_t i = 2; i < ido; i += 2) {
        float ci2, ci3, ci4, cr2, cr3, cr4, ti1, ti2, ti3, ti4, tr1, tr2, tr3, tr4;
        size_t ic = ido - i;
        pm(tr2, tr1, HF(cc, i - 1, 0, k), HF(cc, ic - 1, 3, k));
        pm(ti1, ti2, HF(cc, i, 0, k), HF(cc, ic, 3, k));
        pm(tr4, ti3, HF(cc, i, 2, k), HF(cc, ic, 1, k));
        pm(tr3, ti4, HF(cc, i - 1, 2, k), HF(cc, ic - 1, 1, k));
        pm(CF(ch, i - 1, k, 0), cr3, tr2, tr3);
        pm(CF(ch, i, k, 0), ci3, ti2, ti3);
        pm(cr4, cr2, tr1, tr4);
        pm(ci2, ci4, ti1, ti4);
        mulpm(CF(ch, i, k, 1), CF(ch, i - 1, k, 1), WA(0, i - 2), WA(0, i - 1), ci2, cr2);
        mulpm(CF(ch, i, k, 2), CF(ch, i - 1, k, 2), WA(1, i - 2), WA(1, i - 1), ci3, cr3);
        mulpm(CF(ch, i, k, 3), CF(ch, i - 1, k, 3), WA(2, i - 2), WA(2, i - 1), ci4, cr4);
      }
    return ch;
  }
};

class RPass5 final : public RRadix {
public:
  RPass5(size_t l1, size_t ido, const RootsPtr& r) : RRadix(l1, ido, 5, r) {}

private:
  static constexpr float tr11 = 0.3090169943749474241022934171828191f,
                         ti11 = 0.9510565162951535721164393333793821f,
                         tr12 = -0.8090169943749474241022934171828191f,
                         ti12 = 0.5877852522924731291687059546390728f;
  float* forward(float* cc, float* ch) const override {
    size_t ido = ido_;
    for (size_t k = 0; k < l1_; k++) {
      float cr2, cr3, ci4, ci5;
      pm(cr2, ci5, CF(cc, 0, k, 4), CF(cc, 0, k, 1));
      pm(cr3, ci4, CF(cc, 0, k, 3), CF(cc, 0, k, 2));
      HF(ch, 0, 0, k) = CF(cc, 0, k, 0) + cr2 + cr3;
      HF(ch, ido - 1, 1, k) = CF(cc, 0, k, 0) + tr11 * cr2 + tr12 * cr3;
      HF(ch, 0, 2, k) = ti11 * ci5 + ti12 * ci4;
      HF(ch, ido - 1, 3, k) = CF(cc, 0, k, 0) + tr12 * cr2 + tr11 * cr3;
      HF(ch, 0, 4, k) = ti12 * ci5 - ti11 * ci4;
    }
    if (ido == 1) return ch;
    for (size_t k = 0; k < l1_; ++k)
      for (size_t i = 2, ic = ido - 2; i < ido; i += 2, ic -= 2) {
        float di2, di3, di4, di5, dr2, dr3, dr4, dr5;
        mulpm(dr2, di2, WA(0, i - 2), WA(0, i - 1), CF(cc, i - 1, k, 1), CF(cc, i, k, 1));
        mulpm(dr3, di3, WA(1, i - 2), WA(1, i - 1), CF(cc, i - 1, k, 2), CF(cc, i, k, 2));
        mulpm(dr4, di4, WA(2, i - 2), WA(2, i - 1), CF(cc, i - 1, k, 3), CF(cc, i, k, 3));
        mulpm(dr5, di5, WA(3, i - 2), WA(3, i - 1), CF(cc, i - 1, k, 4), CF(cc, i, k, 4));
        rearrange(dr2, di2, dr5, di5);
        rearrange(dr3, di3, dr4, di4);
        HF(ch, i - 1, 0, k) = CF(cc, i - 1, k, 0) + dr2 + dr3;
        HF(ch, i, 0, k) = CF(cc, i, k, 0) + di2 + di3;
        float tr2 = CF(cc, i - 1, k, 0) + tr11 * dr2 + tr12 * dr3;
        float ti2 = CF(cc, i, k, 0) + tr11 * di2 + tr12 * di3;
        float tr3 = CF(cc, i - 1, k, 0) + tr12 * dr2 + tr11 * dr3;
        float ti3 = CF(cc, i, k, 0) + tr12 * di2 + tr11 * di3;
        float tr5 = ti11 * dr5 + ti12 * dr4, ti5 = ti11 * di5 + ti12 * di4;
        float tr4 = ti12 * dr5 - ti11 * dr4, ti4 = ti12 * di5 - ti11 * di4;
        pm(HF(ch, i - 1, 2, k), HF(ch, ic - 1, 1, k), tr2, tr5);
        pm(HF(ch, i, 2, k), HF(ch, ic, 1, k), ti5, ti2);
        pm(HF(ch, i - 1, 4, k), HF(ch, ic - 1, 3, k), tr3, tr4);
        pm(HF(ch, i, 4, k), HF(ch, ic, 3, k), ti4, ti3);
      }
    return ch;
  }
  float* backward(float* cc, float* ch) const override {
    size_t ido = ido_;
    for (size_t k = 0; k < l1_; k++) {
      float ti5 = HF(cc, 0, 2, k) + HF(cc, 0, 2, k), ti4 = HF(cc, 0, 4, k) + HF(cc, 0, 4, k);
      float tr2 = HF(cc, ido - 1, 1, k) + HF(cc, ido - 1, 1, k);
      float tr3 = HF(cc, ido - 1, 3, k) + HF(cc, ido - 1, 3, k);
      CF(ch, 0, k, 0) = HF(cc, 0, 0, k) + tr2 + tr3;
      float cr2 = HF(cc, 0, 0, k) + tr11 * tr2 + tr12 * tr3;
      float cr3 = HF(cc, 0, 0, k) + tr12 * tr2 + tr11 * tr3;
      float ci4, ci5;
      mulpm(ci5, ci4, ti5, ti4, ti11, ti12);
      pm(CF(ch, 0, k, 4), CF(ch, 0, k, 1), cr2, ci5);
      pm(CF(ch, 0, k, 3), CF(ch, 0, k, 2), cr3, ci4);
    }
    if (ido == 1) return ch;
    for (size_t k = 0; k < l1_; ++k)
      for (size_t i = 2, ic = ido - 2; i < ido; i += 2, ic -= 2) {
        float tr2, tr3, tr4, tr5, ti2, ti3, ti4, ti5;
        pm(tr2, tr5, HF(cc, i - 1, 2, k), HF(cc, ic - 1, 1, k));
        pm(ti5, ti2, HF(cc, i, 2, k), HF(cc, ic, 1, k));
        pm(tr3, tr4, HF(cc, i - 1, 4, k), HF(cc, ic - 1, 3, k));
        pm(ti4, ti3, HF(cc, i, 4, k), HF(cc, ic, 3, k));
        CF(ch, i - 1, k, 0) = HF(cc, i - 1, 0, k) + tr2 + tr3;
        CF(ch, i, k, 0) = HF(cc, i, 0, k) + ti2 + ti3;
        float cr2 = HF(cc, i - 1, 0, k) + tr11 * tr2 + tr12 * tr3;
        float ci2 = HF(cc, i, 0, k) + tr11 * ti2 + tr12 * ti3;
        float cr3 = HF(cc, i - 1, 0, k) + tr12 * tr2 + tr11 * tr3;
        float ci3 = HF(cc, i, 0, k) + tr12 * ti2 + tr11 * ti3;
        float ci4, ci5, cr5, cr4;
        mulpm(cr5, cr4, tr5, tr4, ti11, ti12);
        mulpm(ci5, ci4, ti5, ti4, ti11, ti12);
        float dr2, dr3, dr4, dr5, di2, di3, di4, di5;
        pm(dr4, dr3, cr3, ci4);
        pm(di3, di4, ci3, cr4);
        pm(dr5, dr2, cr2, ci5);
        pm(di2, di5, ci2, cr5);
        mulpm(CF(ch, i, k, 1), CF(ch, i - 1, k, 1), WA(0, i - 2), WA(0, i - 1), di2, dr2);
        mulpm(CF(ch, i, k, 2), CF(ch, i - 1, k, 2), WA(1, i - 2), WA(1, i - 1), di3, dr3);
        mulpm(CF(ch, i, k, 3), CF(ch, i - 1, k, 3), WA(2, i - 2), WA(2, i - 1), di4, dr4);
        mulpm(CF(ch, i, k, 4), CF(ch, i - 1, k, 4), WA(3, i - 2), WA(3, i - 1), di5, dr5);
      }
    return ch;
  }
};

// An odd radix without a dedicated butterfly (up to 133).
class RPassGeneric final : public RRadix {
public:
  RPassGeneric(size_t l1, size_t ido, size_t ip, const RootsPtr& roots)
      : RRadix(l1, ido, ip, roots), cs_(2 * ip) {
    size_t n = l1 * ido * ip, rfct = roots->size() / n;
    cs_[0] = 1;
    cs_[1] = 0;
    for (size_t i = 2, ic = 2 * ip - 2; i <= ic; i += 2, ic -= 2) {
      Cx v = (*roots)[i / 2 * rfct * (n / ip)];
      cs_[i] = v.r;
      cs_[i + 1] = v.i;
      cs_[ic] = v.r;
      cs_[ic + 1] = -v.i;
    }
  }

private:
  std::vector<float> cs_;

  // The angle steps both directions share: rows l and lc of the sums.
  template <typename Get, typename Put>
  void sums(size_t ipph, size_t idl1, Get src, Put dst, bool wrap_at_ip) const {
    size_t ip = ip_;
    for (size_t l = 1, lc = ip - 1; l < ipph; ++l, --lc) {
      for (size_t ik = 0; ik < idl1; ++ik) {
        dst(ik, l) = src(ik, 0) + cs_[2 * l] * src(ik, 1) + cs_[4 * l] * src(ik, 2);
        dst(ik, lc) = cs_[2 * l + 1] * src(ik, ip - 1) + cs_[4 * l + 1] * src(ik, ip - 2);
      }
      size_t iang = 2 * l, j = 3, jc = ip - 3;
      auto step = [&] {
        iang += l;
        if (wrap_at_ip ? iang >= ip : iang > ip) iang -= ip;
        return iang;
      };
      for (; j + 3 < ipph; j += 4, jc -= 4) {
        size_t a1 = step(), a2 = step(), a3 = step(), a4 = step();
        for (size_t ik = 0; ik < idl1; ++ik) {
          dst(ik, l) += cs_[2 * a1] * src(ik, j) + cs_[2 * a2] * src(ik, j + 1) +
                        cs_[2 * a3] * src(ik, j + 2) + cs_[2 * a4] * src(ik, j + 3);
          dst(ik, lc) += cs_[2 * a1 + 1] * src(ik, jc) + cs_[2 * a2 + 1] * src(ik, jc - 1) +
                         cs_[2 * a3 + 1] * src(ik, jc - 2) + cs_[2 * a4 + 1] * src(ik, jc - 3);
        }
      }
      for (; j + 1 < ipph; j += 2, jc -= 2) {
        size_t a1 = step(), a2 = step();
        for (size_t ik = 0; ik < idl1; ++ik) {
          dst(ik, l) += cs_[2 * a1] * src(ik, j) + cs_[2 * a2] * src(ik, j + 1);
          dst(ik, lc) += cs_[2 * a1 + 1] * src(ik, jc) + cs_[2 * a2 + 1] * src(ik, jc - 1);
        }
      }
      for (; j < ipph; ++j, --jc) {
        size_t a1 = step();
        for (size_t ik = 0; ik < idl1; ++ik) {
          dst(ik, l) += cs_[2 * a1] * src(ik, j);
          dst(ik, lc) += cs_[2 * a1 + 1] * src(ik, jc);
        }
      }
    }
  }

  float* forward(float* cc, float* ch) const override {
    size_t ip = ip_, ido = ido_, l1 = l1_, ipph = (ip + 1) / 2, idl1 = ido * l1;
    auto C1 = [&](size_t a, size_t b, size_t c) -> float& { return cc[a + ido * (b + l1 * c)]; };
    auto C2 = [&](size_t a, size_t b) -> float& { return cc[a + idl1 * b]; };
    auto CH2 = [&](size_t a, size_t b) -> float& { return ch[a + idl1 * b]; };
    if (ido > 1)
      for (size_t j = 1, jc = ip - 1; j < ipph; ++j, --jc) {
        size_t is = (j - 1) * (ido - 1), is2 = (jc - 1) * (ido - 1);
        for (size_t k = 0; k < l1; ++k)
          for (size_t i = 1, idij = is, idij2 = is2; i <= ido - 2; i += 2, idij += 2, idij2 += 2) {
            float t1 = C1(i, k, j), t2 = C1(i + 1, k, j), t3 = C1(i, k, jc), t4 = C1(i + 1, k, jc);
            float x1 = wa_[idij] * t1 + wa_[idij + 1] * t2,
                  x2 = wa_[idij] * t2 - wa_[idij + 1] * t1,
                  x3 = wa_[idij2] * t3 + wa_[idij2 + 1] * t4,
                  x4 = wa_[idij2] * t4 - wa_[idij2 + 1] * t3;
            pm(C1(i, k, j), C1(i + 1, k, jc), x3, x1);
            pm(C1(i + 1, k, j), C1(i, k, jc), x2, x4);
          }
      }
    for (size_t j = 1, jc = ip - 1; j < ipph; ++j, --jc)
      for (size_t k = 0; k < l1; ++k) {
        float t = C1(0, k, jc);
        C1(0, k, jc) = t - C1(0, k, j);
        C1(0, k, j) = t + C1(0, k, j);
      }
    sums(ipph, idl1, C2, CH2, true);
    for (size_t ik = 0; ik < idl1; ++ik) CH2(ik, 0) = C2(ik, 0);
    for (size_t j = 1; j < ipph; ++j)
      for (size_t ik = 0; ik < idl1; ++ik) CH2(ik, 0) += C2(ik, j);
    auto CH = [&](size_t a, size_t b, size_t c) -> float& { return ch[a + ido * (b + l1 * c)]; };
    for (size_t k = 0; k < l1; ++k)
      for (size_t i = 0; i < ido; ++i) HF(cc, i, 0, k) = CH(i, k, 0);
    for (size_t j = 1, jc = ip - 1; j < ipph; ++j, --jc) {
      size_t j2 = 2 * j - 1;
      for (size_t k = 0; k < l1; ++k) {
        HF(cc, ido - 1, j2, k) = CH(0, k, j);
        HF(cc, 0, j2 + 1, k) = CH(0, k, jc);
      }
    }
    if (ido == 1) return cc;
    for (size_t j = 1, jc = ip - 1; j < ipph; ++j, --jc) {
      size_t j2 = 2 * j - 1;
      for (size_t k = 0; k < l1; ++k)
        for (size_t i = 1, ic = ido - i - 2; i <= ido - 2; i += 2, ic -= 2) {
          HF(cc, i, j2 + 1, k) = CH(i, k, j) + CH(i, k, jc);
          HF(cc, ic, j2, k) = CH(i, k, j) - CH(i, k, jc);
          HF(cc, i + 1, j2 + 1, k) = CH(i + 1, k, j) + CH(i + 1, k, jc);
          HF(cc, ic + 1, j2, k) = CH(i + 1, k, jc) - CH(i + 1, k, j);
        }
    }
    return cc;
  }

  float* backward(float* cc, float* ch) const override {
    size_t ip = ip_, ido = ido_, l1 = l1_, ipph = (ip + 1) / 2, idl1 = ido * l1;
    auto C1 = [&](size_t a, size_t b, size_t c) -> float& { return cc[a + ido * (b + l1 * c)]; };
    auto C2 = [&](size_t a, size_t b) -> float& { return cc[a + idl1 * b]; };
    auto CH2 = [&](size_t a, size_t b) -> float& { return ch[a + idl1 * b]; };
    for (size_t k = 0; k < l1; ++k)
      for (size_t i = 0; i < ido; ++i) CF(ch, i, k, 0) = HF(cc, i, 0, k);
    for (size_t j = 1, jc = ip - 1; j < ipph; ++j, --jc) {
      size_t j2 = 2 * j - 1;
      for (size_t k = 0; k < l1; ++k) {
        CF(ch, 0, k, j) = 2.0f * HF(cc, ido - 1, j2, k);
        CF(ch, 0, k, jc) = 2.0f * HF(cc, 0, j2 + 1, k);
      }
    }
    if (ido != 1)
      for (size_t j = 1, jc = ip - 1; j < ipph; ++j, --jc) {
        size_t j2 = 2 * j - 1;
        for (size_t k = 0; k < l1; ++k)
          for (size_t i = 1, ic = ido - i - 2; i <= ido - 2; i += 2, ic -= 2) {
            CF(ch, i, k, j) = HF(cc, i, j2 + 1, k) + HF(cc, ic, j2, k);
            CF(ch, i, k, jc) = HF(cc, i, j2 + 1, k) - HF(cc, ic, j2, k);
            CF(ch, i + 1, k, j) = HF(cc, i + 1, j2 + 1, k) - HF(cc, ic + 1, j2, k);
            CF(ch, i + 1, k, jc) = HF(cc, i + 1, j2 + 1, k) + HF(cc, ic + 1, j2, k);
          }
      }
    sums(ipph, idl1, CH2, C2, false);
    for (size_t j = 1; j < ipph; ++j)
      for (size_t ik = 0; ik < idl1; ++ik) CH2(ik, 0) += CH2(ik, j);
    for (size_t j = 1, jc = ip - 1; j < ipph; ++j, --jc)
      for (size_t k = 0; k < l1; ++k)
        pm(CF(ch, 0, k, jc), CF(ch, 0, k, j), C1(0, k, j), C1(0, k, jc));
    if (ido == 1) return ch;
    for (size_t j = 1, jc = ip - 1; j < ipph; ++j, --jc)
      for (size_t k = 0; k < l1; ++k)
        for (size_t i = 1; i <= ido - 2; i += 2) {
          CF(ch, i, k, j) = C1(i, k, j) - C1(i + 1, k, jc);
          CF(ch, i, k, jc) = C1(i, k, j) + C1(i + 1, k, jc);
          CF(ch, i + 1, k, j) = C1(i + 1, k, j) + C1(i, k, jc);
          CF(ch, i + 1, k, jc) = C1(i + 1, k, j) - C1(i, k, jc);
        }
    for (size_t j = 1; j < ip; ++j) {
      size_t is = (j - 1) * (ido - 1);
      for (size_t k = 0; k < l1; ++k)
        for (size_t i = 1, idij = is; i <= ido - 2; i += 2, idij += 2) {
          float t1 = CF(ch, i, k, j), t2 = CF(ch, i + 1, k, j);
          CF(ch, i, k, j) = wa_[idij] * t1 - wa_[idij + 1] * t2;
          CF(ch, i + 1, k, j) = wa_[idij] * t2 + wa_[idij + 1] * t1;
        }
    }
    return ch;
  }
};

// Bluestein for a real pass of a prime radix of 135 or more: each group of
// ip values goes through a complex transform of length ip.
class RPassBlue final : public RRadix {
public:
  RPassBlue(size_t l1, size_t ido, size_t ip, const RootsPtr& roots)
      : RRadix(l1, ido, ip, roots), cplan_(make_cpass(1, 1, ip, roots)) {}

private:
  std::shared_ptr<const CPass> cplan_;

  float* forward(float* cc, float* ch) const override {
    size_t ip = ip_, ido = ido_;
    std::vector<Cx> a(ip), b(ip);
    for (size_t k = 0; k < l1_; ++k) {
      for (size_t m = 0; m < ip; ++m) a[m] = {CF(cc, 0, k, m), 0.0f};
      Cx* res = cplan_->exec(a.data(), b.data(), true);
      HF(ch, 0, 0, k) = res[0].r;
      for (size_t m = 1; m <= ip / 2; ++m) {
        HF(ch, ido - 1, 2 * m - 1, k) = res[m].r;
        HF(ch, 0, 2 * m, k) = res[m].i;
      }
    }
    if (ido == 1) return ch;
    size_t ipph = (ip + 1) / 2;
    for (size_t k = 0; k < l1_; ++k)
      for (size_t i = 2, ic = ido - 2; i < ido; i += 2, ic -= 2) {
        a[0] = {CF(cc, i - 1, k, 0), CF(cc, i, k, 0)};
        for (size_t m = 1; m < ipph; ++m) {
          mulpm(a[m].r, a[m].i, WA(m - 1, i - 2), WA(m - 1, i - 1), CF(cc, i - 1, k, m),
                CF(cc, i, k, m));
          mulpm(a[ip - m].r, a[ip - m].i, WA(ip - m - 1, i - 2), WA(ip - m - 1, i - 1),
                CF(cc, i - 1, k, ip - m), CF(cc, i, k, ip - m));
        }
        Cx* res = cplan_->exec(a.data(), b.data(), true);
        HF(ch, i - 1, 0, k) = res[0].r;
        HF(ch, i, 0, k) = res[0].i;
        for (size_t m = 1; m < ipph; ++m) {
          HF(ch, i - 1, 2 * m, k) = res[m].r;
          HF(ch, ic - 1, 2 * m - 1, k) = res[ip - m].r;
          HF(ch, i, 2 * m, k) = res[m].i;
          HF(ch, ic, 2 * m - 1, k) = -res[ip - m].i;
        }
      }
    return ch;
  }

  float* backward(float* cc, float* ch) const override {
    size_t ip = ip_, ido = ido_;
    std::vector<Cx> a(ip), b(ip);
    for (size_t k = 0; k < l1_; k++) {
      a[0] = {HF(cc, 0, 0, k), 0.0f};
      for (size_t m = 1; m <= ip / 2; ++m) {
        a[m] = {HF(cc, ido - 1, 2 * m - 1, k), HF(cc, 0, 2 * m, k)};
        a[ip - m] = {HF(cc, ido - 1, 2 * m - 1, k), -HF(cc, 0, 2 * m, k)};
      }
      Cx* res = cplan_->exec(a.data(), b.data(), false);
      for (size_t m = 0; m < ip; ++m) CF(ch, 0, k, m) = res[m].r;
    }
    if (ido == 1) return ch;
    for (size_t k = 0; k < l1_; ++k)
      for (size_t i = 2, ic = ido - 2; i < ido; i += 2, ic -= 2) {
        a[0] = {HF(cc, i - 1, 0, k), HF(cc, i, 0, k)};
        for (size_t m = 1; m <= ip / 2; ++m) {
          a[m] = {HF(cc, i - 1, 2 * m, k), HF(cc, i, 2 * m, k)};
          a[ip - m] = {HF(cc, ic - 1, 2 * m - 1, k), -HF(cc, ic, 2 * m - 1, k)};
        }
        Cx* res = cplan_->exec(a.data(), b.data(), false);
        CF(ch, i - 1, k, 0) = res[0].r;
        CF(ch, i, k, 0) = res[0].i;
        for (size_t m = 1; m < ip; ++m)
          mulpm(CF(ch, i - 1, k, m), CF(ch, i, k, m), WA(m - 1, i - 2), -WA(m - 1, i - 1), res[m].r,
                res[m].i);
      }
    return ch;
  }
};

// A composite length: the passes in turn, in reverse order going forward.
class RMultipass final : public RPass {
public:
  RMultipass(size_t ip, const RootsPtr& roots) {
    size_t l1l = 1;
    for (size_t f : factorize(ip, false)) {
      passes_.push_back(make_rpass(l1l, ip / (f * l1l), f, roots));
      l1l *= f;
    }
  }
  float* exec(float* p1, float* p2, bool fwd) const override {
    auto step = [&](const RPass& pass) {
      if (pass.exec(p1, p2, fwd) == p2) std::swap(p1, p2);
    };
    if (fwd)
      for (auto it = passes_.rbegin(); it != passes_.rend(); ++it) step(**it);
    else
      for (const auto& pass : passes_) step(*pass);
    return p1;
  }

private:
  std::vector<std::shared_ptr<const RPass>> passes_;
};

// A long even length with a large prime factor: a complex transform of the
// n/2 interleaved pairs, untangled into the real spectrum.
class RComplexify final : public RPass {
public:
  RComplexify(size_t n, RootsPtr roots)
      : n_(n), roots_(std::move(roots)), pass_(make_cplan(n / 2)) {}

  float* exec(float* cc, float* ch, bool fwd) const override {
    size_t n = n_, h = n / 2;
    std::vector<Cx> a(h), b(h);
    auto root = [&](size_t i) { return (*roots_)[i * (roots_->size() / n)]; };
    if (fwd) {
      for (size_t i = 0; i < h; ++i) a[i] = {cc[2 * i], cc[2 * i + 1]};
      Cx* res = pass_->exec(a.data(), b.data(), true);
      ch[0] = res[0].r + res[0].i;
      for (size_t i = 1, xi = h - 1; i <= xi; ++i, --xi) {
        Cx xe = res[i] + conj(res[xi]);
        Cx xo = Cx{res[i].i + res[xi].i, res[xi].r - res[i].r} * conj(root(i));
        ch[2 * i - 1] = 0.5f * (xe.r + xo.r);
        ch[2 * i] = 0.5f * (xe.i + xo.i);
        ch[2 * xi - 1] = 0.5f * (xe.r - xo.r);
        ch[2 * xi] = 0.5f * (xo.i - xe.i);
      }
      ch[n - 1] = res[0].r - res[0].i;
      return ch;
    }
    a[0] = {cc[0] + cc[n - 1], cc[0] - cc[n - 1]};
    for (size_t i = 1, xi = h - 1; i <= xi; ++i, --xi) {
      Cx t1{cc[2 * i - 1], cc[2 * i]}, t2{cc[2 * xi - 1], -cc[2 * xi]};
      Cx xe = t1 + t2, xo = (t1 - t2) * root(i);
      a[i] = xe + Cx{-xo.i, xo.r};
      a[xi] = conj(xe) + Cx{xo.i, xo.r};
    }
    Cx* res = pass_->exec(a.data(), b.data(), false);
    for (size_t i = 0; i < h; ++i) {
      ch[2 * i] = res[i].r;
      ch[2 * i + 1] = res[i].i;
    }
    return ch;
  }

private:
  size_t n_;
  RootsPtr roots_;
  std::shared_ptr<const CPass> pass_;
};

std::shared_ptr<const RPass> make_rpass(size_t l1, size_t ido, size_t ip, const RootsPtr& roots) {
  if (ip == 1) return std::make_shared<RIdentity>();
  std::vector<size_t> factors = factorize(ip, false);
  if (ip > 1000 && (ip & 1) == 0) {
    bool complexify = ip > 10000;
    for (size_t f : factors) complexify |= f > 5;
    if (complexify) return std::make_shared<RComplexify>(ip, roots);
  }
  if (factors.size() > 1) return std::make_shared<RMultipass>(ip, roots);
  switch (ip) {
  case 2:
    return std::make_shared<RPass2>(l1, ido, roots);
  case 3:
    return std::make_shared<RPass3>(l1, ido, roots);
  case 4:
    return std::make_shared<RPass4>(l1, ido, roots);
  case 5:
    return std::make_shared<RPass5>(l1, ido, roots);
  default:
    if (ip < 135) return std::make_shared<RPassGeneric>(l1, ido, ip, roots);
    return std::make_shared<RPassBlue>(l1, ido, ip, roots);
  }
}
} // namespace

ComplexPlan::ComplexPlan(size_t n, bool single)
    : n_(n), pass_(n ? make_cplan(n, single) : nullptr) {}
ComplexPlan::~ComplexPlan() = default;

void ComplexPlan::exec(std::complex<float>* data, bool forward, float fct) const {
  if (n_ == 0) return;
  std::vector<Cx> a(n_), scratch(n_);
  for (size_t i = 0; i < n_; ++i) a[i] = {data[i].real(), data[i].imag()};
  Cx* res = run_passes(*pass_, a.data(), scratch, forward);
  for (size_t i = 0; i < n_; ++i) {
    Cx v = fct != 1.0f ? res[i] * fct : res[i];
    data[i] = {v.r, v.i};
  }
}

} // namespace pxl::ref::pocket

namespace pxl::ref::pocket {

RealPlan::RealPlan(size_t n)
    : n_(n), pass_(n ? make_rpass(1, 1, n, std::make_shared<const Roots>(n)) : nullptr) {}
RealPlan::~RealPlan() = default;

void RealPlan::r2c(const float* in, std::complex<float>* out, float fct) const {
  if (n_ == 0) return;
  std::vector<float> a(in, in + n_), scratch(n_);
  float* res = pass_->exec(a.data(), scratch.data(), true);
  if (fct != 1.0f)
    for (size_t i = 0; i < n_; ++i) res[i] *= fct;
  out[0] = {res[0], 0.0f};
  size_t i = 1, ii = 1;
  for (; i + 1 < n_; i += 2, ++ii) out[ii] = {res[i], res[i + 1]};
  if (i < n_) out[ii] = {res[i], 0.0f};
}

void RealPlan::c2r(const std::complex<float>* in, float* out, float fct) const {
  if (n_ == 0) return;
  std::vector<float> a(n_), scratch(n_);
  a[0] = in[0].real();
  size_t i = 1, ii = 1;
  for (; i + 1 < n_; i += 2, ++ii) {
    a[i] = in[ii].real();
    a[i + 1] = in[ii].imag();
  }
  if (i < n_) a[i] = in[ii].real();
  float* res = pass_->exec(a.data(), scratch.data(), false);
  for (size_t k = 0; k < n_; ++k) out[k] = fct != 1.0f ? res[k] * fct : res[k];
}

} // namespace pxl::ref::pocket
