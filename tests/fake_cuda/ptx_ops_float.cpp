// Floating-point arithmetic: add/sub/mul/fma/div/sqrt in every rounding mode
// (the host FPU's, switched per instruction), .ftz flushing subnormal inputs
// and results to zero of the same sign, .sat, min/max with PTX's NaN rules,
// the .approx functions as the libm function rounded once to the format,
// copysign, testp and setp.
#include <limits>

#include "ptx_float.hpp"
#include "ptx_ops_common.hpp"

namespace ptxemu {

double small_to_double(uint16_t bits, Small f) {
  int bias = (1 << (f.exp - 1)) - 1;
  int e = (bits >> f.man) & ((1 << f.exp) - 1);
  int m = bits & ((1 << f.man) - 1);
  double v;
  if (e == (1 << f.exp) - 1)
    v = m ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else if (e == 0)
    v = std::ldexp(m, 1 - bias - f.man);
  else
    v = std::ldexp((1 << f.man) + m, e - bias - f.man);
  return (bits >> 15) ? -v : v;
}

uint16_t double_to_small(double x, Small f, int rnd) {
  if (std::isnan(x)) return 0x7fff;
  bool neg = std::signbit(x);
  double a = std::fabs(x);
  int bias = (1 << (f.exp - 1)) - 1, emin = 1 - bias;
  uint16_t sign = static_cast<uint16_t>(neg ? 0x8000 : 0);
  uint16_t inf = static_cast<uint16_t>(sign | (((1 << f.exp) - 1) << f.man));
  uint16_t max = static_cast<uint16_t>(inf - 1);
  if (std::isinf(a)) return inf;
  int e;
  std::frexp(a, &e);
  int ea = a == 0 ? emin : std::max(e - 1, emin);
  double q = std::ldexp(1.0, ea - f.man); // the spacing of the format at a
  double n = a / q, fl = std::floor(n), frac = n - fl;
  bool up = false;
  if (rnd == RN) up = frac > 0.5 || (frac == 0.5 && std::fmod(fl, 2.0) == 1.0);
  if (rnd == RM) up = neg && frac > 0;
  if (rnd == RP) up = !neg && frac > 0;
  double r = (fl + (up ? 1 : 0)) * q;
  if (r >= std::ldexp(1.0, bias + 1)) { // overflow
    bool to_inf = rnd == RN || (rnd == RM && neg) || (rnd == RP && !neg);
    return to_inf ? inf : max;
  }
  if (r < std::ldexp(1.0, emin))
    return static_cast<uint16_t>(sign | static_cast<uint16_t>(r / std::ldexp(1.0, emin - f.man)));
  std::frexp(r, &e);
  int E = e - 1;
  auto mant = static_cast<uint32_t>(r / std::ldexp(1.0, E - f.man)) - (1u << f.man);
  return static_cast<uint16_t>(sign | ((E + bias) << f.man) | mant);
}

namespace {

template <class C> C saturate(C x) {
  if (std::isnan(x)) return C{0};
  return x < C{0} ? C{0} : x > C{1} ? C{1} : x;
}

// One arithmetic instruction: each lane of the format read (flushed if Ftz),
// computed under rounding mode R, then .sat (mode bit 0) and the output flush.
template <class F, int R, bool Ftz, class Op> void fop(const Instr& in, Lane& l) {
  using C = typename F::C;
  uint64_t a = l.regs[in.op[1].reg] + in.op[1].imm, b = l.regs[in.op[2].reg] + in.op[2].imm,
           c = l.regs[in.op[3].reg] + in.op[3].imm, out = 0;
  for (int i = 0; i < F::lanes; ++i) {
    int sh = i * F::bits;
    C x = F::dec(a >> sh), y = F::dec(b >> sh), z = F::dec(c >> sh);
    if constexpr (Ftz) x = flush(x, F::tiny()), y = flush(y, F::tiny()), z = flush(z, F::tiny());
    C r;
    {
      RoundScope<R> scope;
      r = Op::template f<F>(x, y, z);
    }
    if (in.mode & 1) r = saturate(r);
    if constexpr (Ftz) r = flush(r, F::tiny());
    uint64_t e = F::template enc<R>(r);
    if constexpr (F::bits < 64) e &= (uint64_t{1} << F::bits) - 1;
    out |= e << sh;
  }
  l.regs[in.op[0].reg] = out;
}

#define PXL_FOP(NAME, ARITY, EXPR)                                                                 \
  struct NAME {                                                                                    \
    static constexpr int arity = ARITY;                                                            \
    template <class F, class C> static C f(C a, C b, C c) {                                        \
      (void)a, (void)b, (void)c;                                                                   \
      return EXPR;                                                                                 \
    }                                                                                              \
  };
PXL_FOP(Add, 2, a + b)
PXL_FOP(Sub, 2, a - b)
PXL_FOP(Mul, 2, a* b)
PXL_FOP(Fma, 3, std::fma(a, b, c))
PXL_FOP(Div, 2, a / b)
PXL_FOP(Rcp, 1, C{1} / a)
PXL_FOP(Sqrt, 1, std::sqrt(a))
PXL_FOP(Abs, 1, std::fabs(a))
PXL_FOP(Neg, 1, -a)
// copysign.f32 d, a, b: b's magnitude with a's sign.
PXL_FOP(CopySign, 2, std::copysign(b, a))
// The approximate functions: the libm function in double, rounded once.
PXL_FOP(Rsqrt, 1, static_cast<C>(1.0 / std::sqrt(static_cast<double>(a))))
PXL_FOP(Sin, 1, static_cast<C>(std::sin(static_cast<double>(a))))
PXL_FOP(Cos, 1, static_cast<C>(std::cos(static_cast<double>(a))))
PXL_FOP(Ex2, 1, static_cast<C>(std::exp2(static_cast<double>(a))))
PXL_FOP(Lg2, 1, static_cast<C>(std::log2(static_cast<double>(a))))
PXL_FOP(Tanh, 1, static_cast<C>(std::tanh(static_cast<double>(a))))
PXL_FOP(RcpApprox, 1, static_cast<C>(1.0 / static_cast<double>(a)))
PXL_FOP(DivApprox, 2, static_cast<C>(static_cast<double>(a) / static_cast<double>(b)))
#undef PXL_FOP

// min/max: a NaN operand gives the other one (both NaN: the canonical NaN);
// -0 is below +0. With .NaN any NaN operand gives the canonical NaN.
template <bool IsMax, bool PropagateNan> struct MinMax {
  static constexpr int arity = 2;
  template <class F, class C> static C f(C a, C b, C) {
    bool na = std::isnan(a), nb = std::isnan(b);
    if (na || nb) {
      if (PropagateNan || (na && nb)) return F::nan();
      return na ? b : a;
    }
    if (a == b) return (std::signbit(a) != IsMax) ? a : b;
    return (a < b) != IsMax ? a : b;
  }
};

// The instance for format F, rounding r and ftz.
template <class F, class Op> Handler pick_r(int r, bool ftz) {
  switch (r * 2 + ftz) {
  case 0:
    return fop<F, RN, false, Op>;
  case 1:
    return fop<F, RN, true, Op>;
  case 2:
    return fop<F, RZ, false, Op>;
  case 3:
    return fop<F, RZ, true, Op>;
  case 4:
    return fop<F, RM, false, Op>;
  case 5:
    return fop<F, RM, true, Op>;
  case 6:
    return fop<F, RP, false, Op>;
  default:
    return fop<F, RP, true, Op>;
  }
}
template <class Op> Handler pick(Ty t, int r, bool ftz) {
  switch (t) {
  case Ty::F32:
    return pick_r<Fmt32, Op>(r, ftz);
  case Ty::F64:
    return pick_r<Fmt64, Op>(r, ftz);
  case Ty::F16:
    return pick_r<FmtF16, Op>(r, ftz);
  case Ty::F16x2:
    return pick_r<FmtF16x2, Op>(r, ftz);
  case Ty::BF16:
    return pick_r<FmtBF16, Op>(r, ftz);
  case Ty::BF16x2:
    return pick_r<FmtBF16x2, Op>(r, ftz);
  default:
    return nullptr;
  }
}

// testp.{finite,infinite,number,notanumber,normal,subnormal} p, a (mode 0-5).
template <class F> void testp(const Instr& in, Lane& l) {
  auto x = F::dec(l.regs[in.op[1].reg] + in.op[1].imm);
  bool t = false;
  switch (in.mode) {
  case 0:
    t = std::isfinite(x);
    break;
  case 1:
    t = std::isinf(x);
    break;
  case 2:
    t = !std::isnan(x);
    break;
  case 3:
    t = std::isnan(x);
    break;
  case 4:
    t = std::isfinite(x) && std::fabs(x) >= F::tiny();
    break;
  default:
    t = x != 0 && std::fabs(x) < F::tiny();
  }
  l.regs[in.op[0].reg] = t;
}

// setp.cmp.f: `sub` is the comparison: eq ne lt le gt ge (false on NaN), then
// equ neu ltu leu gtu geu (true on NaN), num, nan.
template <class F, bool Ftz> void setp_float(const Instr& in, Lane& l) {
  auto a = F::dec(l.regs[in.op[2].reg] + in.op[2].imm);
  auto b = F::dec(l.regs[in.op[3].reg] + in.op[3].imm);
  if constexpr (Ftz) a = flush(a, F::tiny()), b = flush(b, F::tiny());
  bool nan = std::isnan(a) || std::isnan(b), t;
  int c = in.sub;
  switch (c % 6) {
  case 0:
    t = a == b;
    break;
  case 1:
    t = a != b;
    break;
  case 2:
    t = a < b;
    break;
  case 3:
    t = a <= b;
    break;
  case 4:
    t = a > b;
    break;
  default:
    t = a >= b;
  }
  if (c < 6)
    t = t && !nan;
  else if (c < 12)
    t = t || nan;
  else
    t = c == 12 ? !nan : nan;
  setp_result(in, l, t);
}

template <class F> Handler setp_pick(bool ftz) {
  return ftz ? setp_float<F, true> : setp_float<F, false>;
}

} // namespace

Dec decode_float(const Opcode& op, const std::vector<Arg>& args, Instr& in, std::string& err) {
  Ty t = op.type();
  if (!ty_float(t) || op.types.size() != 1) return Dec::No;
  const std::string& b = op.base;
  bool ftz = op.has("ftz");
  if (b == "setp") {
    static const char* cmps[] = {"eq",  "ne",  "lt",  "le",  "gt",  "ge",  "equ",
                                 "neu", "ltu", "leu", "gtu", "geu", "num", "nan"};
    int c = -1;
    for (int i = 0; i < 14; ++i)
      if (op.has(cmps[i])) c = i;
    if (c < 0) return err = "unknown comparison", Dec::Bad;
    if (!only(op, {cmps[c], "ftz", "and", "or", "xor"}, err)) return Dec::Bad;
    if (!setp_operands(op, args, in, err)) return Dec::Bad;
    in.sub = static_cast<uint8_t>(c);
    switch (t) {
    case Ty::F32:
      in.fn = setp_pick<Fmt32>(ftz);
      break;
    case Ty::F64:
      in.fn = setp_pick<Fmt64>(ftz);
      break;
    case Ty::F16:
      in.fn = setp_pick<FmtF16>(ftz);
      break;
    case Ty::BF16:
      in.fn = setp_pick<FmtBF16>(ftz);
      break;
    default:
      return err = "unsupported type", Dec::Bad;
    }
    return Dec::Ok;
  }
  if (b == "testp") {
    static const char* kinds[] = {"finite",     "infinite", "number",
                                  "notanumber", "normal",   "subnormal"};
    int k = -1;
    for (int i = 0; i < 6; ++i)
      if (op.has(kinds[i])) k = i;
    if (k < 0 || op.mods.size() != 1 || !plain_operands(args, 2, 1, in, err)) return Dec::Bad;
    in.mode = static_cast<uint8_t>(k);
    in.fn = t == Ty::F32 ? testp<Fmt32> : t == Ty::F64 ? testp<Fmt64> : nullptr;
    return in.fn ? Dec::Ok : (err = "unsupported type", Dec::Bad);
  }
  int r = op.rounding(false);
  bool approx = op.has("approx");
  Handler h = nullptr;
  int arity = 2;
  auto with = [&](auto o, std::initializer_list<const char*> allowed) {
    if (!only(op, allowed, err)) return;
    arity = decltype(o)::arity;
    h = pick<decltype(o)>(t, r < 0 ? RN : r, ftz);
  };
  if (b == "add")
    with(Add{}, {"rn", "rz", "rm", "rp", "ftz", "sat"});
  else if (b == "sub")
    with(Sub{}, {"rn", "rz", "rm", "rp", "ftz", "sat"});
  else if (b == "mul")
    with(Mul{}, {"rn", "rz", "rm", "rp", "ftz", "sat"});
  else if (b == "fma" || (b == "mad" && r >= 0))
    with(Fma{}, {"rn", "rz", "rm", "rp", "ftz", "sat"});
  else if (b == "div" && (approx || op.has("full")))
    with(DivApprox{}, {"approx", "full", "ftz"});
  else if (b == "div" && r >= 0)
    with(Div{}, {"rn", "rz", "rm", "rp", "ftz"});
  else if (b == "rcp" && approx)
    with(RcpApprox{}, {"approx", "ftz"});
  else if (b == "rcp" && r >= 0)
    with(Rcp{}, {"rn", "rz", "rm", "rp", "ftz"});
  else if (b == "sqrt" && approx)
    with(Sqrt{}, {"approx", "ftz"});
  else if (b == "sqrt" && r >= 0)
    with(Sqrt{}, {"rn", "rz", "rm", "rp", "ftz"});
  else if (b == "rsqrt" && approx)
    with(Rsqrt{}, {"approx", "ftz"});
  else if (b == "sin" && approx)
    with(Sin{}, {"approx", "ftz"});
  else if (b == "cos" && approx)
    with(Cos{}, {"approx", "ftz"});
  else if (b == "ex2" && approx)
    with(Ex2{}, {"approx", "ftz"});
  else if (b == "lg2" && approx)
    with(Lg2{}, {"approx", "ftz"});
  else if (b == "tanh" && approx)
    with(Tanh{}, {"approx"});
  else if (b == "abs")
    with(Abs{}, {"ftz"});
  else if (b == "neg")
    with(Neg{}, {"ftz"});
  else if (b == "copysign")
    with(CopySign{}, {});
  else if (b == "min" || b == "max") {
    bool nan = op.has("NaN"), mx = b == "max";
    if (mx)
      nan ? with(MinMax<true, true>{}, {"ftz", "NaN"}) : with(MinMax<true, false>{}, {"ftz"});
    else
      nan ? with(MinMax<false, true>{}, {"ftz", "NaN"}) : with(MinMax<false, false>{}, {"ftz"});
  } else
    return Dec::No;
  if (!err.empty()) return Dec::Bad;
  if (!h) return err = "unsupported type", Dec::Bad;
  if (!plain_operands(args, static_cast<size_t>(arity) + 1, 1, in, err)) return Dec::Bad;
  // Unused sources read the zero slot.
  for (int i = arity + 1; i < 4; ++i) in.op[i] = Operand{};
  in.mode = op.has("sat") ? 1 : 0;
  in.fn = h;
  return Dec::Ok;
}

} // namespace ptxemu
