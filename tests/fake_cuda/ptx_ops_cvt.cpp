// cvt: integer resizing (.sat clamps), float to integer (.rni/.rzi/.rmi/.rpi,
// always saturating, NaN to 0), integer to float and float to float in a
// rounding mode, with .ftz and .sat; f16/bf16 through ptx_float.hpp.
#include <limits>

#include "ptx_float.hpp"
#include "ptx_ops_common.hpp"

namespace ptxemu {
namespace {

template <class T> __int128 lo_of() { return std::numeric_limits<T>::min(); }
template <class T> __int128 hi_of() { return std::numeric_limits<T>::max(); }

template <class D, class S> struct CvtInt {
  static void run(const Instr& in, Lane& l) {
    S v = get<S>(l, in.op[1]);
    if (in.mode & 16) { // .sat
      __int128 w = v;
      w = std::max(std::min(w, hi_of<D>()), lo_of<D>());
      put<D>(l, in.op[0], static_cast<D>(w));
    } else {
      put<D>(l, in.op[0], static_cast<D>(v));
    }
  }
};

// CvtInt to destination type D, by source type (by_int's one-type handlers).
template <class D> struct CvtTo { template <class S> using From = CvtInt<D, S>; };
template <class D> Handler by_src(Ty s) { return by_int<CvtTo<D>::template From>(s); }

Handler int_to_int(Ty d, Ty s) {
  switch (d) {
  case Ty::B8:
  case Ty::U8:
    return by_src<uint8_t>(s);
  case Ty::S8:
    return by_src<int8_t>(s);
  case Ty::B16:
  case Ty::U16:
    return by_src<uint16_t>(s);
  case Ty::S16:
    return by_src<int16_t>(s);
  case Ty::B32:
  case Ty::U32:
    return by_src<uint32_t>(s);
  case Ty::S32:
    return by_src<int32_t>(s);
  case Ty::B64:
  case Ty::U64:
    return by_src<uint64_t>(s);
  case Ty::S64:
    return by_src<int64_t>(s);
  default:
    return nullptr;
  }
}

// The rounding mode for the rest of a scope, chosen at run time.
struct DynRound {
  explicit DynRound(int r) : on(r != RN) {
    if (r == RZ) std::fesetround(FE_TOWARDZERO);
    if (r == RM) std::fesetround(FE_DOWNWARD);
    if (r == RP) std::fesetround(FE_UPWARD);
  }
  ~DynRound() {
    if (on) std::fesetround(FE_TONEAREST);
  }
  DynRound(const DynRound&) = delete;
  DynRound& operator=(const DynRound&) = delete;
  bool on;
};

double read_float(Ty t, uint64_t v, bool ftz) {
  switch (t) {
  case Ty::F32: {
    float f = f32_of(static_cast<uint32_t>(v));
    return ftz ? flush(f, 0x1p-126f) : f;
  }
  case Ty::F64:
    return f64_of(v);
  case Ty::F16:
    return small_to_double(static_cast<uint16_t>(v), kHalf);
  default:
    return small_to_double(static_cast<uint16_t>(v), kBf16);
  }
}

// `x` (exact, or already rounded in mode r) as the float type t's bits.
uint64_t write_float(Ty t, double x, int r, bool ftz) {
  switch (t) {
  case Ty::F32: {
    float f;
    {
      DynRound g(r);
      f = static_cast<float>(x);
    }
    return bits_of(ftz ? flush(f, 0x1p-126f) : f);
  }
  case Ty::F64:
    return bits_of(x);
  case Ty::F16:
    return double_to_small(x, kHalf, r);
  default:
    return double_to_small(x, kBf16, r);
  }
}

double round_integral(double x, int r) {
  switch (r) {
  case RN:
    return std::nearbyint(x); // the default mode: ties to even
  case RZ:
    return std::trunc(x);
  case RM:
    return std::floor(x);
  default:
    return std::ceil(x);
  }
}

// The other conversions: in.sub is the source type, in.width the
// destination's, mode bits 0-1 the rounding, 2 integer rounding (.rni...),
// 3 .ftz, 4 .sat.
void cvt_float(const Instr& in, Lane& l) {
  Ty src = static_cast<Ty>(in.sub), dst = static_cast<Ty>(in.width);
  int r = in.mode & 3;
  bool irnd = in.mode & 4, ftz = in.mode & 8, sat = in.mode & 16;
  uint64_t raw = l.regs[in.op[1].reg] + in.op[1].imm;
  if (!ty_float(src)) { // integer to float
    int sh = 64 - 8 * ty_bytes(src);
    int64_t sv = static_cast<int64_t>(raw << sh) >> sh;
    uint64_t uv = sh ? raw & ((uint64_t{1} << (64 - sh)) - 1) : raw;
    bool sgn = ty_signed(src);
    if (dst == Ty::F32) {
      float f;
      {
        DynRound g(r);
        f = sgn ? static_cast<float>(sv) : static_cast<float>(uv);
      }
      if (sat) f = std::min(std::max(f, 0.0f), 1.0f);
      l.regs[in.op[0].reg] = bits_of(ftz ? flush(f, 0x1p-126f) : f);
      return;
    }
    double x;
    {
      DynRound g(r);
      x = sgn ? static_cast<double>(sv) : static_cast<double>(uv);
    }
    if (sat) x = std::min(std::max(x, 0.0), 1.0);
    l.regs[in.op[0].reg] = write_float(dst, x, r, ftz);
    return;
  }
  double x = read_float(src, raw, ftz);
  if (!ty_float(dst)) { // float to integer: rounded, saturated, NaN is 0
    int bytes = ty_bytes(dst);
    x = round_integral(x, r);
    uint64_t out;
    if (std::isnan(x)) {
      out = 0;
    } else if (ty_signed(dst)) {
      double lo = -std::ldexp(1.0, 8 * bytes - 1), hi = std::ldexp(1.0, 8 * bytes - 1);
      int64_t v = x <= lo   ? static_cast<int64_t>(lo)
                  : x >= hi ? (bytes == 8 ? INT64_MAX : static_cast<int64_t>(hi) - 1)
                            : static_cast<int64_t>(x);
      out = static_cast<uint64_t>(v);
    } else {
      double hi = std::ldexp(1.0, 8 * bytes);
      uint64_t v = x <= 0    ? 0
                   : x >= hi ? (bytes == 8 ? UINT64_MAX : static_cast<uint64_t>(hi) - 1)
                             : static_cast<uint64_t>(x);
      out = v;
    }
    if (bytes < 8) {
      int sh = 64 - 8 * bytes;
      out = ty_signed(dst) ? static_cast<uint64_t>(static_cast<int64_t>(out << sh) >> sh)
                           : out & ((uint64_t{1} << (64 - sh)) - 1);
    }
    l.regs[in.op[0].reg] = out;
    return;
  }
  if (irnd) x = round_integral(x, r);
  if (sat) x = std::isnan(x) ? 0.0 : std::min(std::max(x, 0.0), 1.0);
  l.regs[in.op[0].reg] = write_float(dst, x, irnd ? RN : r, ftz);
}

// cvt.rn.{f16x2,bf16x2}.f32 d, a, b: a to the upper half, b to the lower.
void cvt_pack(const Instr& in, Lane& l) {
  Small s = in.width == static_cast<uint8_t>(Ty::F16x2) ? kHalf : kBf16;
  int r = in.mode & 3;
  bool ftz = in.mode & 8;
  double a = read_float(Ty::F32, l.regs[in.op[1].reg] + in.op[1].imm, ftz);
  double b = read_float(Ty::F32, l.regs[in.op[2].reg] + in.op[2].imm, ftz);
  if (in.mode & 16) {
    a = std::isnan(a) ? 0.0 : std::min(std::max(a, 0.0), 1.0);
    b = std::isnan(b) ? 0.0 : std::min(std::max(b, 0.0), 1.0);
  }
  l.regs[in.op[0].reg] = uint64_t{double_to_small(a, s, r)} << 16 | double_to_small(b, s, r);
}

} // namespace

Dec decode_cvt(const Opcode& op, const std::vector<Arg>& args, Instr& in, std::string& err) {
  if (op.base != "cvt") return Dec::No;
  if (op.types.size() != 2) return err = "cvt needs two types", Dec::Bad;
  Ty d = op.type(0), s = op.type(1);
  if (!only(op, {"rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi", "ftz", "sat", "relu"}, err))
    return Dec::Bad;
  if (op.has("relu")) return err = "unsupported modifier .relu", Dec::Bad;
  int fr = op.rounding(false), ir = op.rounding(true);
  in.mode =
      static_cast<uint8_t>((fr >= 0   ? fr
                            : ir >= 0 ? ir
                                      : 0) |
                           (ir >= 0 ? 4 : 0) | (op.has("ftz") ? 8 : 0) | (op.has("sat") ? 16 : 0));
  if (d == Ty::F16x2 || d == Ty::BF16x2) {
    if (s != Ty::F32 || !plain_operands(args, 3, 1, in, err)) return Dec::Bad;
    in.width = static_cast<uint8_t>(d);
    in.fn = cvt_pack;
    return Dec::Ok;
  }
  if (!plain_operands(args, 2, 1, in, err)) return Dec::Bad;
  if (ty_int(d) && ty_int(s)) {
    if (fr >= 0 || ir >= 0 || op.has("ftz")) return err = "rounding on an integer cvt", Dec::Bad;
    in.fn = int_to_int(d, s);
    return in.fn ? Dec::Ok : Dec::Bad;
  }
  bool dfloat = ty_float(d) && d != Ty::F16x2 && d != Ty::BF16x2;
  bool sfloat = ty_float(s) && s != Ty::F16x2 && s != Ty::BF16x2;
  if ((!dfloat && !ty_int(d)) || (!sfloat && !ty_int(s)))
    return err = "unsupported types", Dec::Bad;
  // PTX requires the rounding where the conversion can be inexact.
  if (sfloat && !dfloat && ir < 0)
    return err = "float-to-integer cvt needs .rni/.rzi/.rmi/.rpi", Dec::Bad;
  if (!sfloat && fr < 0) return err = "integer-to-float cvt needs .rn/.rz/.rm/.rp", Dec::Bad;
  in.sub = static_cast<uint8_t>(s);
  in.width = static_cast<uint8_t>(d);
  in.fn = cvt_float;
  return Dec::Ok;
}

} // namespace ptxemu
