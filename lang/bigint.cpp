// Arbitrary-precision integers: schoolbook arithmetic on base 2^32 limbs
// (Knuth's algorithm D for division), enough for the ints scripts write
// (2**100, math.factorial(30), 10**30 // 7), not for huge computations.
#include "lang/bigint.hpp"

#include <algorithm>
#include <cmath>

namespace pxl {

void BigInt::trim(Mag& m) {
  while (!m.empty() && m.back() == 0) m.pop_back();
}

BigInt BigInt::make(bool neg, Mag m) {
  trim(m);
  BigInt r;
  r.neg_ = neg && !m.empty();
  r.mag_ = std::move(m);
  return r;
}

BigInt::BigInt(int64_t v) {
  uint64_t u = v < 0 ? static_cast<uint64_t>(-(v + 1)) + 1 : static_cast<uint64_t>(v);
  neg_ = v < 0;
  if (u) mag_.push_back(static_cast<uint32_t>(u));
  if (u >> 32) mag_.push_back(static_cast<uint32_t>(u >> 32));
}

std::optional<BigInt> BigInt::parse(std::string_view digits, int base) {
  if (digits.empty()) return std::nullopt;
  Mag m;
  for (char c : digits) {
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'z' ? c - 'a' + 10
            : c >= 'A' && c <= 'Z' ? c - 'A' + 10
                                   : 99;
    if (d >= base) return std::nullopt;
    uint64_t carry = static_cast<uint64_t>(d);
    for (auto& limb : m) {
      uint64_t t = static_cast<uint64_t>(limb) * static_cast<uint64_t>(base) + carry;
      limb = static_cast<uint32_t>(t);
      carry = t >> 32;
    }
    if (carry) m.push_back(static_cast<uint32_t>(carry));
  }
  return make(false, std::move(m));
}

BigInt BigInt::from_double(double d) {
  d = std::trunc(d);
  if (std::fabs(d) < 9.2e18) return BigInt(static_cast<int64_t>(d));
  int e = 0;
  double f = std::frexp(std::fabs(d), &e); // |d| = f * 2**e, e >= 63
  auto mant = static_cast<int64_t>(std::ldexp(f, 53));
  BigInt r = BigInt(mant).shl(static_cast<uint64_t>(e - 53));
  return d < 0 ? -r : r;
}

std::optional<int64_t> BigInt::to_int64() const {
  if (mag_.size() > 2) return std::nullopt;
  uint64_t u = 0;
  for (size_t i = mag_.size(); i-- > 0;) u = (u << 32) | mag_[i];
  if (!neg_) {
    if (u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (u > static_cast<uint64_t>(INT64_MAX) + 1) return std::nullopt;
  return u == static_cast<uint64_t>(INT64_MAX) + 1 ? INT64_MIN : -static_cast<int64_t>(u);
}

uint64_t BigInt::bit_length() const {
  if (mag_.empty()) return 0;
  return 32 * (mag_.size() - 1) + (32 - static_cast<uint64_t>(__builtin_clz(mag_.back())));
}

std::optional<double> BigInt::to_double() const {
  uint64_t n = bit_length();
  uint64_t m = 0;
  int shift = 0;
  if (n <= 64) {
    for (size_t i = mag_.size(); i-- > 0;) m = (m << 32) | mag_[i];
  } else {
    // The top 64 bits, the lowest of them ORed with every bit below: the
    // conversion to double then rounds half-to-even exactly as on the whole.
    shift = static_cast<int>(n - 64);
    BigInt top = (neg_ ? -*this : *this).shr(static_cast<uint64_t>(shift));
    for (size_t i = top.mag_.size(); i-- > 0;) m = (m << 32) | top.mag_[i];
    bool sticky = false;
    for (size_t i = 0; i < static_cast<size_t>(shift) / 32 && !sticky; ++i) sticky = mag_[i] != 0;
    if (!sticky && shift % 32)
      sticky = (mag_[static_cast<size_t>(shift) / 32] & ((1u << (shift % 32)) - 1)) != 0;
    m |= sticky ? 1 : 0;
  }
  double d = std::ldexp(static_cast<double>(m), shift);
  if (std::isinf(d)) return std::nullopt;
  return neg_ ? -d : d;
}

std::string BigInt::to_string(int base) const {
  if (mag_.empty()) return "0";
  std::string out;
  if (base == 10) {
    Mag m = mag_;
    while (!m.empty()) {
      uint64_t rem = 0;
      for (size_t i = m.size(); i-- > 0;) {
        uint64_t cur = (rem << 32) | m[i];
        m[i] = static_cast<uint32_t>(cur / 1000000000u);
        rem = cur % 1000000000u;
      }
      trim(m);
      for (int k = 0; k < 9 && (!m.empty() || rem); ++k, rem /= 10)
        out.push_back(static_cast<char>('0' + rem % 10));
    }
  } else {
    int bits = base == 2 ? 1 : base == 8 ? 3 : 4;
    uint64_t total = bit_length();
    for (uint64_t pos = 0; pos < total; pos += static_cast<uint64_t>(bits)) {
      unsigned d = 0;
      for (int k = 0; k < bits; ++k) {
        uint64_t b = pos + static_cast<uint64_t>(k);
        if (b < total && ((mag_[b / 32] >> (b % 32)) & 1)) d |= 1u << k;
      }
      out.push_back("0123456789abcdef"[d]);
    }
  }
  if (neg_) out.push_back('-');
  std::reverse(out.begin(), out.end());
  return out;
}

int64_t BigInt::py_hash() const {
  const uint64_t P = (uint64_t{1} << 61) - 1;
  unsigned __int128 x = 0;
  for (size_t i = mag_.size(); i-- > 0;) x = ((x << 32) | mag_[i]) % P;
  auto h = static_cast<int64_t>(x);
  if (neg_) h = -h;
  return h == -1 ? -2 : h;
}

int BigInt::cmp_mag(const Mag& a, const Mag& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  for (size_t i = a.size(); i-- > 0;)
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  return 0;
}

int BigInt::compare(const BigInt& a, const BigInt& b) {
  if (a.neg_ != b.neg_) return a.neg_ ? -1 : 1;
  int c = cmp_mag(a.mag_, b.mag_);
  return a.neg_ ? -c : c;
}

BigInt::Mag BigInt::add_mag(const Mag& a, const Mag& b) {
  const Mag& x = a.size() >= b.size() ? a : b;
  const Mag& y = a.size() >= b.size() ? b : a;
  Mag r(x.size() + 1);
  uint64_t carry = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    uint64_t t = static_cast<uint64_t>(x[i]) + (i < y.size() ? y[i] : 0) + carry;
    r[i] = static_cast<uint32_t>(t);
    carry = t >> 32;
  }
  r[x.size()] = static_cast<uint32_t>(carry);
  trim(r);
  return r;
}

BigInt::Mag BigInt::sub_mag(const Mag& a, const Mag& b) {
  Mag r(a.size());
  int64_t borrow = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    int64_t t = static_cast<int64_t>(a[i]) - (i < b.size() ? b[i] : 0) - borrow;
    borrow = t < 0 ? 1 : 0;
    r[i] = static_cast<uint32_t>(t);
  }
  trim(r);
  return r;
}

BigInt::Mag BigInt::mul_mag(const Mag& a, const Mag& b) {
  if (a.empty() || b.empty()) return {};
  Mag r(a.size() + b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    uint64_t carry = 0;
    for (size_t j = 0; j < b.size(); ++j) {
      uint64_t t = static_cast<uint64_t>(a[i]) * b[j] + r[i + j] + carry;
      r[i + j] = static_cast<uint32_t>(t);
      carry = t >> 32;
    }
    r[i + b.size()] = static_cast<uint32_t>(carry);
  }
  trim(r);
  return r;
}

BigInt BigInt::operator-() const {
  BigInt r = *this;
  r.neg_ = !neg_ && !mag_.empty();
  return r;
}

BigInt operator+(const BigInt& a, const BigInt& b) {
  if (a.neg_ == b.neg_) return BigInt::make(a.neg_, BigInt::add_mag(a.mag_, b.mag_));
  int c = BigInt::cmp_mag(a.mag_, b.mag_);
  if (c >= 0) return BigInt::make(a.neg_, BigInt::sub_mag(a.mag_, b.mag_));
  return BigInt::make(b.neg_, BigInt::sub_mag(b.mag_, a.mag_));
}

BigInt operator-(const BigInt& a, const BigInt& b) { return a + (-b); }

BigInt operator*(const BigInt& a, const BigInt& b) {
  return BigInt::make(a.neg_ != b.neg_, BigInt::mul_mag(a.mag_, b.mag_));
}

// Knuth, TAOCP vol. 2, 4.3.1, algorithm D (as in Hacker's Delight's divmnu).
void BigInt::divmod_mag(const Mag& a, const Mag& b, Mag& q, Mag& r) {
  if (cmp_mag(a, b) < 0) {
    q.clear();
    r = a;
    return;
  }
  const uint64_t B = uint64_t{1} << 32;
  if (b.size() == 1) {
    uint64_t rem = 0;
    q.assign(a.size(), 0);
    for (size_t i = a.size(); i-- > 0;) {
      uint64_t cur = (rem << 32) | a[i];
      q[i] = static_cast<uint32_t>(cur / b[0]);
      rem = cur % b[0];
    }
    trim(q);
    r.clear();
    if (rem) r.push_back(static_cast<uint32_t>(rem));
    return;
  }
  size_t n = b.size(), m = a.size() - n;
  int s = __builtin_clz(b.back());
  Mag vn(n), un(a.size() + 1);
  for (size_t i = n; i-- > 0;)
    vn[i] = (b[i] << s) | (s && i ? static_cast<uint32_t>(b[i - 1] >> (32 - s)) : 0);
  un[a.size()] = s ? static_cast<uint32_t>(a.back() >> (32 - s)) : 0;
  for (size_t i = a.size(); i-- > 0;)
    un[i] = (a[i] << s) | (s && i ? static_cast<uint32_t>(a[i - 1] >> (32 - s)) : 0);
  q.assign(m + 1, 0);
  for (size_t j = m + 1; j-- > 0;) {
    uint64_t num = (static_cast<uint64_t>(un[j + n]) << 32) | un[j + n - 1];
    uint64_t qhat = num / vn[n - 1], rhat = num % vn[n - 1];
    while (qhat >= B || qhat * vn[n - 2] > ((rhat << 32) | un[j + n - 2])) {
      --qhat;
      rhat += vn[n - 1];
      if (rhat >= B) break;
    }
    int64_t borrow = 0;
    uint64_t carry = 0;
    for (size_t i = 0; i < n; ++i) {
      uint64_t p = qhat * vn[i] + carry;
      carry = p >> 32;
      int64_t t = static_cast<int64_t>(un[i + j]) - static_cast<int64_t>(p & 0xffffffffu) - borrow;
      un[i + j] = static_cast<uint32_t>(t);
      borrow = t < 0 ? 1 : 0;
    }
    int64_t t = static_cast<int64_t>(un[j + n]) - static_cast<int64_t>(carry) - borrow;
    un[j + n] = static_cast<uint32_t>(t);
    if (t < 0) { // qhat was one too large: add the divisor back
      --qhat;
      uint64_t c = 0;
      for (size_t i = 0; i < n; ++i) {
        uint64_t sum = static_cast<uint64_t>(un[i + j]) + vn[i] + c;
        un[i + j] = static_cast<uint32_t>(sum);
        c = sum >> 32;
      }
      un[j + n] = static_cast<uint32_t>(un[j + n] + c);
    }
    q[j] = static_cast<uint32_t>(qhat);
  }
  trim(q);
  r.assign(n, 0);
  for (size_t i = 0; i < n; ++i)
    r[i] = (un[i] >> s) |
           (s ? static_cast<uint32_t>(static_cast<uint64_t>(un[i + 1]) << (32 - s)) : 0);
  trim(r);
}

void BigInt::divmod(const BigInt& a, const BigInt& b, BigInt& q, BigInt& r) {
  Mag qm, rm;
  divmod_mag(a.mag_, b.mag_, qm, rm);
  q = make(a.neg_ != b.neg_, std::move(qm));
  r = make(a.neg_, std::move(rm));
  // Truncated to floored: a nonzero remainder of the other sign moves one step.
  if (!r.is_zero() && r.neg_ != b.neg_) {
    q = q - BigInt(1);
    r = r + b;
  }
}

BigInt BigInt::pow(BigInt base, uint64_t exp) {
  BigInt result(1);
  while (exp) {
    if (exp & 1) result = result * base;
    exp >>= 1;
    if (exp) base = base * base;
  }
  return result;
}

BigInt BigInt::shl(uint64_t n) const {
  if (mag_.empty()) return *this;
  size_t limbs = static_cast<size_t>(n / 32);
  unsigned bits = static_cast<unsigned>(n % 32);
  Mag r(limbs + mag_.size() + 1, 0);
  for (size_t i = 0; i < mag_.size(); ++i) {
    uint64_t t = static_cast<uint64_t>(mag_[i]) << bits;
    r[limbs + i] |= static_cast<uint32_t>(t);
    r[limbs + i + 1] |= static_cast<uint32_t>(t >> 32);
  }
  return make(neg_, std::move(r));
}

BigInt BigInt::shr(uint64_t n) const {
  if (neg_) return -((-*this - BigInt(1)).shr(n) + BigInt(1));
  size_t limbs = static_cast<size_t>(n / 32);
  if (limbs >= mag_.size()) return BigInt();
  unsigned bits = static_cast<unsigned>(n % 32);
  Mag r(mag_.size() - limbs);
  for (size_t i = 0; i < r.size(); ++i) {
    uint64_t lo = mag_[i + limbs];
    uint64_t hi = i + limbs + 1 < mag_.size() ? mag_[i + limbs + 1] : 0;
    r[i] = static_cast<uint32_t>(((hi << 32) | lo) >> bits);
  }
  return make(false, std::move(r));
}

std::vector<uint32_t> BigInt::twos(size_t limbs) const {
  std::vector<uint32_t> w(limbs, 0);
  if (!neg_) {
    std::copy(mag_.begin(), mag_.end(), w.begin());
    return w;
  }
  Mag m = sub_mag(mag_, {1}); // -x = ~(x - 1)
  for (size_t i = 0; i < limbs; ++i) w[i] = ~(i < m.size() ? m[i] : 0u);
  return w;
}

BigInt BigInt::from_twos(std::vector<uint32_t> w) {
  if (w.empty() || !(w.back() >> 31)) return make(false, std::move(w));
  for (auto& x : w) x = ~x;
  BigInt m = make(false, std::move(w));
  return -(m + BigInt(1));
}

template <class F> BigInt BigInt::bitwise(const BigInt& a, const BigInt& b, F f) {
  size_t limbs = std::max(a.mag_.size(), b.mag_.size()) + 1;
  std::vector<uint32_t> x = a.twos(limbs), y = b.twos(limbs);
  for (size_t i = 0; i < limbs; ++i) x[i] = f(x[i], y[i]);
  return from_twos(std::move(x));
}

BigInt operator&(const BigInt& a, const BigInt& b) {
  return BigInt::bitwise(a, b, [](uint32_t x, uint32_t y) { return x & y; });
}
BigInt operator|(const BigInt& a, const BigInt& b) {
  return BigInt::bitwise(a, b, [](uint32_t x, uint32_t y) { return x | y; });
}
BigInt operator^(const BigInt& a, const BigInt& b) {
  return BigInt::bitwise(a, b, [](uint32_t x, uint32_t y) { return x ^ y; });
}

Value make_int(BigInt v) {
  if (auto i = v.to_int64()) return Value::integer(*i);
  return Value::object(std::make_shared<BigIntObj>(std::move(v)));
}

BigInt to_bigint(const Value& v) {
  if (is_bigint(v)) return v.as<BigIntObj>()->value;
  return BigInt(v.as_int());
}

std::optional<int> compare_with_double(const BigInt& a, double d) {
  if (std::isnan(d)) return std::nullopt;
  if (std::isinf(d)) return d > 0 ? -1 : 1;
  double t = std::trunc(d);
  int c = BigInt::compare(a, BigInt::from_double(t));
  if (c != 0) return c;
  return d > t ? -1 : d < t ? 1 : 0;
}

double bigint_to_double(const BigInt& v) {
  if (auto d = v.to_double()) return *d;
  throw Error(ErrCode::Value, "int too large to convert to float");
}

} // namespace pxl
