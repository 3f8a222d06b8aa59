// Transcendental math inside the kernels: ir/ref_math.cpp's functions written
// as straight-line LLVM IR (explicit llvm.fma, branches turned into selects),
// so the loop vectorizer can vectorize loops that call them and the results
// stay bit-identical to the reference (and hence to XLA's CPU kernels). Both
// arms of every branch are computed; the arms that are not selected may see
// out-of-range arguments, so nothing here may produce poison on them (the
// float->int conversions clamp first).
#include <bit>
#include <cstdint>
#include <limits>

#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/Transforms/Utils/ModuleUtils.h>

#include "codegen/emitter.hpp"
#include "ir/ref_math.hpp"

namespace pxl::codegen {

using llvm::Value;

namespace {

class Math {
public:
  Math(llvm::IRBuilder<>& b, ScalarEmitter& se, DType d, llvm::Type* t)
      : b_(b), se_(se), d_(d), t_(t) {}

  Value* c(double v) { return llvm::ConstantFP::get(t_, v); }
  Value* cf(uint32_t bits) { return c(static_cast<double>(std::bit_cast<float>(bits))); }
  Value* cd(uint64_t bits) { return c(std::bit_cast<double>(bits)); }
  Value* fma(Value* a, Value* x, Value* y) {
    return b_.CreateIntrinsic(llvm::Intrinsic::fma, {a->getType()}, {a, x, y});
  }
  Value* un(llvm::Intrinsic::ID id, Value* x) { return b_.CreateUnaryIntrinsic(id, x); }
  Value* sel(Value* cond, Value* a, Value* x) { return b_.CreateSelect(cond, a, x); }
  // Eigen-style clamp that lets NaN through: select(x < lo, lo, x), then hi.
  Value* clamp_nan(Value* x, Value* lo, Value* hi) {
    x = sel(b_.CreateFCmpOLT(x, lo), lo, x);
    return sel(b_.CreateFCmpOGT(x, hi), hi, x);
  }
  Value* copysign_one(Value* x) {
    return b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, c(1.0), x);
  }
  // The half-type rounding of XLA's multi-op expansions (Round in ref_math).
  Value* r(Value* v) { return se_.round_to(d_, v); }

  Value* exp_core(Value* x);
  Value* exp_f32(Value* x) {
    return exp_core(clamp_nan(x, c(static_cast<double>(-87.8f)), c(static_cast<double>(88.8f))));
  }
  Value* log_core(Value* x);
  Value* log_special(Value* x, Value* core);
  Value* log_f32(Value* x) { return log_special(x, log_core(x)); }
  Value* log1p_f32(Value* x);
  Value* tanh_f32(Value* x);
  Value* expm1_f32(Value* x);
  Value* erf_f32(Value* x);
  Value* erf_inv(Value* x, Value* log1p_neg_x2);
  Value* logistic_f32(Value* x) {
    return r(b_.CreateFDiv(c(1.0), r(b_.CreateFAdd(r(exp_f32(b_.CreateFNeg(x))), c(1.0)))));
  }
  Value* sincos_f32(Value* x, bool cos);
  Value* pow_f32(Value* x, Value* y);
  Value* atan_f32(Value* x);
  Value* atan2_f32(Value* y, Value* x);
  Value* tanh_f64(Value* x);
  Value* exp_f64(Value* x);
  Value* expm1_f64(Value* x);

private:
  struct Quadrant {
    Value* r; // double
    Value* n; // i32
    Value* m; // i32
  };
  Quadrant reduce_quadrant(Value* y, Value* top);
  Value* quadrant_poly(Value* r, Value* odd, Value* m);
  template <class T> Value* table_load(const char* name, const T* data, size_t n, Value* index);
  Value* pow_log2(Value* ix);
  Value* pow_exp2(Value* x, Value* sign_bias);

  llvm::IRBuilder<>& b_;
  ScalarEmitter& se_;
  DType d_;
  llvm::Type* t_;
};

Value* Math::exp_core(Value* x) {
  Value* fx = un(llvm::Intrinsic::floor, fma(x, cf(0x3FB8AA3B), c(0.5))); // x * log2(e) + 0.5
  fx = clamp_nan(fx, c(-127.0), c(127.0));
  Value* nfx = b_.CreateFNeg(fx);
  Value* rr = fma(nfx, cf(0x3F318000), x); // x - fx * ln2_hi
  rr = fma(nfx, cf(0xB95E8083), rr);       // x - fx * ln2_lo
  Value* y = fma(rr, cf(0x39506967), cf(0x3AB743CE));
  y = fma(y, rr, cf(0x3C088908));
  y = fma(y, rr, cf(0x3D2AA9C1));
  y = fma(y, rr, cf(0x3E2AAAAA));
  y = fma(y, rr, c(0.5));
  Value* z = b_.CreateFMul(rr, rr);
  y = b_.CreateFAdd(fma(y, z, rr), c(1.0));
  // The reference converts NaN to INT32_MIN (cvttps2dq), whose 2^n bits come
  // out as 1.0, as do those of 0: convert 0 instead (fptosi(NaN) is poison).
  Value* safe = sel(b_.CreateFCmpUNO(fx, fx), c(0.0), fx);
  llvm::Type* it = b_.getInt32Ty();
  Value* n = b_.CreateFPToSI(safe, it);
  Value* pow2 = b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(n, b_.getInt32(127)), 23), t_);
  return b_.CreateFMul(y, pow2);
}

Value* Math::log_core(Value* x) {
  x = sel(b_.CreateFCmpOGT(x, cf(0x00800000)), x, cf(0x00800000));
  Value* bx = b_.CreateBitCast(x, b_.getInt32Ty());
  Value* e = b_.CreateFAdd(
      b_.CreateSIToFP(b_.CreateSub(b_.CreateLShr(bx, 23), b_.getInt32(127)), t_), c(1.0));
  Value* m = b_.CreateBitCast(
      b_.CreateOr(b_.CreateAnd(bx, b_.getInt32(0x807FFFFF)), b_.getInt32(0x3F000000)), t_);
  Value* small = b_.CreateFCmpOLT(m, cf(0x3F3504F3)); // sqrt(1/2)
  Value* tmp = sel(small, m, c(0.0));
  Value* xm = b_.CreateFSub(m, c(1.0));
  e = b_.CreateFSub(e, sel(small, c(1.0), c(0.0)));
  xm = b_.CreateFAdd(xm, tmp);
  Value* x2 = b_.CreateFMul(xm, xm);
  Value* x3 = b_.CreateFMul(x2, xm);
  Value* y = fma(xm, cf(0x3D9021BB), cf(0xBDEBD1B8));
  Value* y1 = fma(xm, cf(0xBDFE5D4F), cf(0x3E11E9BF));
  Value* y2 = fma(xm, cf(0x3E4CCEAC), cf(0xBE7FFFFC));
  y = fma(y, xm, cf(0x3DEF251A));
  y1 = fma(y1, xm, cf(0xBE2AAE50));
  y2 = fma(y2, xm, cf(0x3EAAAAAA));
  y = fma(y, x3, y1);
  y = fma(y, x3, y2);
  y = fma(y, x3, b_.CreateFMul(e, cf(0xB95E8083)));
  Value* rr = fma(c(-0.5), x2, xm);
  rr = b_.CreateFAdd(rr, y);
  return fma(e, cf(0x3F318000), rr);
}

Value* Math::log_special(Value* x, Value* core) {
  Value* nan = b_.CreateBitCast(b_.getInt32(0xFFFFFFFFu), t_);
  Value* v = sel(b_.CreateFCmpOGT(x, c(0.0)), core, nan);
  double inf = std::numeric_limits<double>::infinity();
  v = sel(b_.CreateFCmpOEQ(x, c(inf)), c(inf), v);
  return sel(b_.CreateFCmpOEQ(x, c(0.0)), c(-inf), v);
}

Value* Math::log1p_f32(Value* x) {
  Value* x2 = b_.CreateFMul(x, x);
  Value* q = fma(x, c(0.0), c(1.0));
  for (uint32_t k : {0x417101ADu, 0x42A6185Bu, 0x435DC32Du, 0x439A8CA3u, 0x43586D8Au, 0x42707982u})
    q = fma(q, x, cf(k));
  Value* p = fma(x, c(0.0), c(static_cast<double>(4.527e-05f)));
  for (uint32_t k : {0x3EFF40C5u, 0x40D284FAu, 0x41EF4B9Cu, 0x4273CC76u, 0x426473ADu, 0x41A05101u})
    p = fma(p, x, cf(k));
  Value* t = b_.CreateFMul(b_.CreateFMul(x, x2), b_.CreateFDiv(p, q));
  Value* near = b_.CreateFAdd(x, fma(x2, c(-0.5), t));
  Value* u = b_.CreateFAdd(x, c(1.0));
  Value* far = log_special(u, log_core(u));
  Value* small = b_.CreateFCmpOLT(un(llvm::Intrinsic::fabs, x), cf(0x3ED413CD));
  return sel(small, near, far);
}

// ref::xla::erf_inv_f32 (and _f64, the same polynomial), given log1p(x * -x).
Value* Math::erf_inv(Value* x, Value* l) {
  Value* small = b_.CreateFCmpOGT(l, c(-5.0));
  Value* t = sel(small, b_.CreateFSub(c(-2.5), l),
                 b_.CreateFAdd(un(llvm::Intrinsic::sqrt, b_.CreateFNeg(l)), c(-3.0)));
  Value* p = sel(small, cf(ref::xla::kErfInvSmall[0]), cf(ref::xla::kErfInvLarge[0]));
  for (int i = 1; i < 9; ++i)
    p = fma(t, p, sel(small, cf(ref::xla::kErfInvSmall[i]), cf(ref::xla::kErfInvLarge[i])));
  Value* one = b_.CreateFCmpOEQ(un(llvm::Intrinsic::fabs, x), c(1.0));
  return b_.CreateFMul(x, sel(one, c(std::numeric_limits<double>::infinity()), p));
}

Value* Math::tanh_f32(Value* x) {
  Value* ax = un(llvm::Intrinsic::fabs, x);
  Value* cl = clamp_nan(x, cf(0xC0FFF644), cf(0x40FFF644));
  Value* c2 = b_.CreateFMul(cl, cl);
  Value* p = fma(c2, cf(0xA59F25C0), cf(0x2A61337E));
  for (uint32_t k : {0xAEBD37FFu, 0x335C0041u, 0x3779434Au, 0x3A270DEDu, 0x3BA059DCu})
    p = fma(c2, p, cf(k));
  p = b_.CreateFMul(cl, p);
  Value* q = fma(c2, cf(0x35A0D3D8), cf(0x38F895D6));
  q = fma(c2, q, cf(0x3B14AA05));
  q = fma(c2, q, cf(0x3BA059DD));
  Value* v = b_.CreateFDiv(p, q);
  v = sel(b_.CreateFCmpOLT(ax, c(static_cast<double>(4.0e-4f))), x, v);
  return sel(b_.CreateFCmpOGE(ax, c(20.0)), copysign_one(x), v);
}

Value* Math::expm1_f32(Value* x) {
  Value* e =
      r(exp_core(clamp_nan(x, c(static_cast<double>(-87.8f)), c(static_cast<double>(88.8f)))));
  Value* h = r(b_.CreateFMul(x, c(0.5)));
  Value* v = r(b_.CreateFMul(r(tanh_f32(h)), r(b_.CreateFAdd(e, c(1.0)))));
  v = sel(b_.CreateFCmpOGT(un(llvm::Intrinsic::fabs, x), c(0.5)), r(b_.CreateFSub(e, c(1.0))), v);
  return sel(b_.CreateFCmpOEQ(h, c(0.0)), x, v);
}

Value* Math::erf_f32(Value* x) {
  Value* x2 = b_.CreateFMul(x, x);
  Value* p = fma(x2, cf(0x39702D51), cf(0x3B5F5DA2));
  for (uint32_t k : {0x3D50B6EBu, 0x3E3DA740u, 0x3F906EBAu}) p = fma(x2, p, cf(k));
  p = b_.CreateFMul(x, p);
  Value* q = fma(x2, cf(0xB3FD3906), cf(0x37C588DF));
  for (uint32_t k : {0x3A856D28u, 0x3C6687D4u, 0x3DE34C21u, 0x3EFEB44Au}) q = fma(x2, q, cf(k));
  q = fma(x2, q, c(1.0));
  Value* big = b_.CreateFCmpOGE(un(llvm::Intrinsic::fabs, x), cf(0x407547CB));
  return sel(big, copysign_one(x), b_.CreateFDiv(p, q));
}

// A load of data[index] from a constant table of the module (a gather once
// vectorized); T is uint32_t, uint64_t or double.
template <class T>
Value* Math::table_load(const char* name, const T* data, size_t n, Value* index) {
  llvm::Module& mod = *b_.GetInsertBlock()->getModule();
  llvm::GlobalVariable* g = mod.getNamedGlobal(name);
  if (!g) {
    auto* init = llvm::ConstantDataArray::get(mod.getContext(), llvm::ArrayRef<T>(data, n));
    g = new llvm::GlobalVariable(mod, init->getType(), true, llvm::GlobalValue::PrivateLinkage,
                                 init, name);
  }
  auto* at = llvm::cast<llvm::ArrayType>(g->getValueType());
  Value* p = b_.CreateInBoundsGEP(at, g, {b_.getInt64(0), index});
  return b_.CreateLoad(at->getElementType(), p);
}

// ref_math.cpp's reduce_quadrant, all three ranges computed and selected;
// `top` is the float's biased exponent and top mantissa bits (bits 20..30).
Math::Quadrant Math::reduce_quadrant(Value* y, Value* top) {
  namespace x = ref::xla;
  llvm::Type* i32 = b_.getInt32Ty();
  llvm::Type* i64 = b_.getInt64Ty();
  llvm::Type* f64 = b_.getDoubleTy();
  auto dc = [&](double v) { return llvm::ConstantFP::get(f64, v); };
  Value* bx = b_.CreateBitCast(y, i32);
  Value* xd = b_.CreateFPExt(y, f64);
  // |x| < 120: n = round(x * 2/pi), r = x - n * pi/2. Other lanes reduce 0
  // instead (their fptosi would be poison).
  Value* fast = b_.CreateICmpULT(top, b_.getInt32(x::kTrigFastTop));
  Value* xf = sel(fast, xd, dc(0.0));
  Value* nf = b_.CreateFPToSI(b_.CreateFMul(xf, dc(x::kTrigHpiInv)), i32);
  nf = b_.CreateAShr(b_.CreateAdd(nf, b_.getInt32(0x800000)), 24);
  Value* rf = fma(b_.CreateFNeg(b_.CreateSIToFP(nf, f64)), dc(x::kTrigHpi), xf);
  // Larger: |x| * 4/pi mod 8 in 2.62 fixed point, from a 96-bit window of 4/pi.
  Value* idx = b_.CreateZExt(b_.CreateAnd(b_.CreateLShr(bx, 26), 15), i64);
  Value* w0 = table_load("pxl.inv_pio4", x::kInvPio4, 24, idx);
  Value* w4 = table_load("pxl.inv_pio4", x::kInvPio4, 24, b_.CreateAdd(idx, b_.getInt64(4)));
  Value* w8 = table_load("pxl.inv_pio4", x::kInvPio4, 24, b_.CreateAdd(idx, b_.getInt64(8)));
  Value* xi = b_.CreateShl(b_.CreateOr(b_.CreateAnd(bx, 0xffffff), 0x800000),
                           b_.CreateAnd(b_.CreateLShr(bx, 23), 7));
  Value* xw = b_.CreateZExt(xi, i64);
  Value* r0 = b_.CreateZExt(b_.CreateMul(xi, w0), i64);
  Value* r1 = b_.CreateMul(xw, b_.CreateZExt(w4, i64));
  Value* r2 = b_.CreateMul(xw, b_.CreateZExt(w8, i64));
  r0 = b_.CreateAdd(b_.CreateOr(b_.CreateLShr(r2, 32), b_.CreateShl(r0, 32)), r1);
  Value* nl = b_.CreateLShr(b_.CreateAdd(r0, b_.getInt64(1ull << 61)), 62);
  r0 = b_.CreateSub(r0, b_.CreateShl(nl, 62));
  Value* rl = b_.CreateFMul(b_.CreateSIToFP(r0, f64), dc(x::kTrigPio2p63));
  Value* nl32 = b_.CreateTrunc(nl, i32);
  Value* ml = b_.CreateAdd(nl32, b_.CreateLShr(bx, 31));
  Value* small = b_.CreateICmpULT(top, b_.getInt32(x::kTrigSmallTop));
  Value* zero = b_.getInt32(0);
  return {sel(small, xd, sel(fast, rf, rl)), sel(small, zero, sel(fast, nf, nl32)),
          sel(small, zero, sel(fast, nf, ml))};
}

// sin(r) or (where `odd`) cos(r) in double, rounded to float and negated
// in the quadrants that need it.
Value* Math::quadrant_poly(Value* r, Value* odd, Value* m) {
  namespace x = ref::xla;
  auto dc = [&](double v) { return llvm::ConstantFP::get(b_.getDoubleTy(), v); };
  Value* r2 = b_.CreateFMul(r, r);
  Value* r4 = b_.CreateFMul(r2, r2);
  Value* c2 = fma(r2, dc(x::kTrigCos[4]), dc(x::kTrigCos[3]));
  Value* c1 = fma(r2, dc(x::kTrigCos[1]), dc(x::kTrigCos[0]));
  Value* cv = fma(b_.CreateFMul(r4, r2), c2, fma(r4, dc(x::kTrigCos[2]), c1));
  Value* r3 = b_.CreateFMul(r, r2);
  Value* s1 = fma(r2, dc(x::kTrigSin[2]), dc(x::kTrigSin[1]));
  Value* sv = fma(b_.CreateFMul(r3, r2), s1, fma(r3, dc(x::kTrigSin[0]), r));
  Value* f = b_.CreateFPTrunc(sel(odd, cv, sv), t_);
  // Negated where bit 1 of m is set (cosine), or bits 0 and 1 differ (sine).
  Value* mx = b_.CreateSelect(odd, b_.CreateLShr(m, 1), b_.CreateXor(m, b_.CreateLShr(m, 1)));
  Value* neg = b_.CreateICmpNE(b_.CreateAnd(mx, 1), b_.getInt32(0));
  return sel(neg, b_.CreateFNeg(f), f);
}

Value* Math::sincos_f32(Value* y, bool cos) {
  Value* bx = b_.CreateBitCast(y, b_.getInt32Ty());
  Value* top = b_.CreateAnd(b_.CreateLShr(bx, 20), 0x7ff);
  Quadrant q = reduce_quadrant(y, top);
  Value* n_odd = b_.CreateICmpNE(b_.CreateAnd(q.n, 1), b_.getInt32(0));
  Value* v = quadrant_poly(q.r, cos ? b_.CreateNot(n_odd) : n_odd, q.m);
  v = sel(b_.CreateICmpULT(top, b_.getInt32(ref::xla::kTrigTinyTop)), cos ? c(1.0) : y, v);
  Value* d = b_.CreateFSub(y, y); // inf, NaN: (x - x) / (x - x)
  return sel(b_.CreateICmpUGE(top, b_.getInt32(0x7f8)), b_.CreateFDiv(d, d), v);
}

// ref_math.cpp's pow_log2: log2 of the positive normal float with bits ix.
Value* Math::pow_log2(Value* ix) {
  namespace x = ref::xla;
  llvm::Type* f64 = b_.getDoubleTy();
  auto dc = [&](double v) { return llvm::ConstantFP::get(f64, v); };
  Value* tmp = b_.CreateSub(ix, b_.getInt32(0x3f330000));
  Value* i = b_.CreateZExt(b_.CreateAnd(b_.CreateLShr(tmp, 19), 15), b_.getInt64Ty());
  Value* top = b_.CreateAnd(tmp, 0xff800000);
  Value* z = b_.CreateFPExt(b_.CreateBitCast(b_.CreateSub(ix, top), b_.getFloatTy()), f64);
  Value* k = b_.CreateSIToFP(b_.CreateAShr(top, 23), f64);
  Value* invc = table_load("pxl.pow_invc", x::kPowInvc, 16, i);
  Value* logc = table_load("pxl.pow_logc", x::kPowLogc, 16, i);
  Value* r = fma(z, invc, dc(-1.0));
  Value* y0 = b_.CreateFAdd(logc, k);
  Value* r2 = b_.CreateFMul(r, r);
  const double* a = x::kPowLog2Poly;
  Value* y = fma(dc(a[0]), r, dc(a[1]));
  Value* p = fma(dc(a[2]), r, dc(a[3]));
  Value* q = fma(dc(a[4]), r, y0);
  q = fma(p, r2, q);
  return fma(y, b_.CreateFMul(r2, r2), q);
}

// ref_math.cpp's pow_exp2: 2^x as a float, negated by sign_bias = 1 << 16.
Value* Math::pow_exp2(Value* xd, Value* sign_bias) {
  namespace x = ref::xla;
  llvm::Type* f64 = b_.getDoubleTy();
  auto dc = [&](double v) { return llvm::ConstantFP::get(f64, v); };
  Value* kd = b_.CreateFAdd(xd, dc(x::kExp2fShift));
  Value* ki = b_.CreateBitCast(kd, b_.getInt64Ty());
  kd = b_.CreateFSub(kd, dc(x::kExp2fShift));
  Value* r = b_.CreateFSub(xd, kd);
  Value* t = table_load("pxl.exp2f_tab", x::kExp2fTab, 32, b_.CreateAnd(ki, 31));
  t = b_.CreateAdd(t, b_.CreateShl(b_.CreateAdd(ki, sign_bias), 47));
  const double* c = x::kExp2fPoly;
  Value* z = fma(dc(c[0]), r, dc(c[1]));
  Value* y = fma(dc(c[2]), r, dc(1.0));
  y = fma(z, b_.CreateFMul(r, r), y);
  return b_.CreateFPTrunc(b_.CreateFMul(y, b_.CreateBitCast(t, f64)), t_);
}

// ref_math.cpp's pow_f32 with every branch computed and selected, the
// special cases last (in the reverse of the reference's order).
Value* Math::pow_f32(Value* xv, Value* yv) {
  namespace x = ref::xla;
  llvm::Type* i32 = b_.getInt32Ty();
  auto k = [&](uint32_t v) { return b_.getInt32(v); };
  Value* ix = b_.CreateBitCast(xv, i32);
  Value* iy = b_.CreateBitCast(yv, i32);
  // pow_checkint(iy) as two flags (y an integer; y an odd integer).
  Value* e = b_.CreateAnd(b_.CreateLShr(iy, 23), 0xff);
  Value* ge1 = b_.CreateICmpUGE(e, k(0x7f));
  Value* big = b_.CreateICmpUGT(e, k(0x7f + 23));
  Value* sh =
      b_.CreateSelect(b_.CreateAnd(ge1, b_.CreateNot(big)), b_.CreateSub(k(0x7f + 23), e), k(0));
  Value* bit = b_.CreateShl(k(1), sh);
  Value* frac0 = b_.CreateICmpEQ(b_.CreateAnd(iy, b_.CreateSub(bit, k(1))), k(0));
  Value* is_int = b_.CreateAnd(ge1, b_.CreateOr(big, frac0));
  Value* is_odd = b_.CreateAnd(b_.CreateAnd(ge1, b_.CreateNot(big)),
                               b_.CreateAnd(frac0, b_.CreateICmpNE(b_.CreateAnd(iy, bit), k(0))));
  auto zin = [&](Value* i) { // zero, inf or NaN
    return b_.CreateICmpUGE(b_.CreateSub(b_.CreateShl(i, 1), k(1)), k(2u * 0x7f800000 - 1));
  };
  auto snan = [&](Value* i) {
    return b_.CreateICmpUGT(b_.CreateShl(b_.CreateXor(i, k(0x00400000)), 1), k(2u * 0x7fc00000));
  };
  Value* xneg = b_.CreateICmpSLT(ix, k(0));
  Value* yneg = b_.CreateICmpSLT(iy, k(0));
  // The main path: |x| (normalized if subnormal) and a sign for odd y.
  Value* ixa = b_.CreateAnd(ix, 0x7fffffff);
  Value* scaled = b_.CreateBitCast(b_.CreateFMul(xv, c(0x1p23)), i32);
  Value* ixs = b_.CreateSub(b_.CreateAnd(scaled, 0x7fffffff), k(23u << 23));
  Value* ixm = b_.CreateSelect(b_.CreateICmpULT(ixa, k(0x00800000)), ixs, ixa);
  Value* ylogx = b_.CreateFMul(b_.CreateFPExt(yv, b_.getDoubleTy()), pow_log2(ixm));
  Value* negres = b_.CreateAnd(xneg, is_odd);
  Value* sign_bias = b_.CreateSelect(negres, b_.getInt64(1u << 16), b_.getInt64(0));
  Value* v = pow_exp2(ylogx, sign_bias);
  double inf = std::numeric_limits<double>::infinity();
  auto dc = [&](double d) { return llvm::ConstantFP::get(b_.getDoubleTy(), d); };
  v = sel(b_.CreateFCmpOGT(ylogx, dc(x::kPowOverflow)), sel(negres, c(-inf), c(inf)), v);
  v = sel(b_.CreateFCmpOLE(ylogx, dc(-150.0)), sel(negres, c(-0.0), c(0.0)), v);
  Value* d = b_.CreateFSub(xv, xv);
  v = sel(b_.CreateAnd(xneg, b_.CreateNot(is_int)), b_.CreateFDiv(d, d), v);
  // x zero, inf or NaN.
  Value* x2 = b_.CreateFMul(xv, xv);
  x2 = sel(negres, b_.CreateFNeg(x2), x2);
  v = sel(zin(ix), sel(yneg, b_.CreateFDiv(c(1.0), x2), x2), v);
  // y zero, inf or NaN.
  Value* ix2 = b_.CreateShl(ix, 1);
  Value* iy2 = b_.CreateShl(iy, 1);
  Value* sum = b_.CreateFAdd(xv, yv);
  Value* w = b_.CreateFMul(yv, yv);
  w = sel(b_.CreateICmpEQ(b_.CreateICmpULT(ix2, k(2u * 0x3f800000)), b_.CreateNot(yneg)), c(0.0),
          w);
  w = sel(b_.CreateICmpEQ(ix2, k(2u * 0x3f800000)), c(1.0), w);
  w = sel(b_.CreateOr(b_.CreateICmpUGT(ix2, k(2u * 0x7f800000)),
                      b_.CreateICmpUGT(iy2, k(2u * 0x7f800000))),
          sum, w);
  w = sel(b_.CreateICmpEQ(ix, k(0x3f800000)), sel(snan(iy), sum, c(1.0)), w);
  w = sel(b_.CreateICmpEQ(iy2, k(0)), sel(snan(ix), sum, c(1.0)), w);
  return sel(zin(iy), w, v);
}

// ref_math.cpp's atan_f32 (float arithmetic in the same order), all ranges
// computed and selected.
Value* Math::atan_f32(Value* xv) {
  namespace x = ref::xla;
  llvm::Type* i32 = b_.getInt32Ty();
  auto k = [&](uint32_t v) { return b_.getInt32(v); };
  auto cf32 = [&](float v) { return c(static_cast<double>(v)); };
  Value* hx = b_.CreateBitCast(xv, i32);
  Value* ix = b_.CreateAnd(hx, 0x7fffffff);
  Value* ax = un(llvm::Intrinsic::fabs, xv);
  auto below = [&](uint32_t t) { return b_.CreateICmpULT(ix, k(t)); };
  Value* x0 = b_.CreateFDiv(b_.CreateFSub(b_.CreateFMul(cf32(2.0f), ax), cf32(1.0f)),
                            b_.CreateFAdd(cf32(2.0f), ax));
  Value* x1 = b_.CreateFDiv(b_.CreateFSub(ax, cf32(1.0f)), b_.CreateFAdd(ax, cf32(1.0f)));
  Value* x2 = b_.CreateFDiv(b_.CreateFSub(ax, cf32(1.5f)),
                            b_.CreateFAdd(cf32(1.0f), b_.CreateFMul(cf32(1.5f), ax)));
  Value* x3 = b_.CreateFDiv(cf32(-1.0f), ax);
  Value* small = below(0x3ee00000);
  Value* xr = sel(below(0x401c0000), x2, x3);
  xr = sel(below(0x3f980000), x1, xr);
  xr = sel(below(0x3f300000), x0, xr);
  xr = sel(small, xv, xr);
  auto pick = [&](const float* t) {
    Value* v = sel(below(0x401c0000), cf32(t[2]), cf32(t[3]));
    v = sel(below(0x3f980000), cf32(t[1]), v);
    return sel(below(0x3f300000), cf32(t[0]), v);
  };
  const float* a = x::kAtanPoly;
  Value* z = b_.CreateFMul(xr, xr);
  Value* w = b_.CreateFMul(z, z);
  auto horner = [&](std::initializer_list<int> idx) { // a[i0] + w * (a[i1] + w * (...))
    std::vector<int> v(idx);
    Value* acc = cf32(a[v.back()]);
    for (size_t i = v.size() - 1; i-- > 0;)
      acc = b_.CreateFAdd(cf32(a[v[i]]), b_.CreateFMul(w, acc));
    return acc;
  };
  Value* s1 = b_.CreateFMul(z, horner({0, 2, 4, 6, 8, 10}));
  Value* s2 = b_.CreateFMul(w, horner({1, 3, 5, 7, 9}));
  Value* xs = b_.CreateFMul(xr, b_.CreateFAdd(s1, s2));
  Value* near = b_.CreateFSub(xr, xs);
  Value* r =
      b_.CreateFSub(pick(x::kAtanHi), b_.CreateFSub(b_.CreateFSub(xs, pick(x::kAtanLo)), xr));
  Value* neg = b_.CreateICmpSLT(hx, k(0));
  r = sel(neg, b_.CreateFNeg(r), r);
  Value* v = sel(small, sel(below(0x31000000), xv, near), r);
  const float far = x::kAtanHi[3] + x::kAtanLo[3], nfar = -x::kAtanHi[3] - x::kAtanLo[3];
  Value* big = sel(b_.CreateICmpSGT(hx, k(0)), cf32(far), cf32(nfar));
  big = sel(b_.CreateICmpUGT(ix, k(0x7f800000)), b_.CreateFAdd(xv, xv), big);
  return sel(b_.CreateICmpUGE(ix, k(0x4c000000)), big, v);
}

// ref_math.cpp's atan2_f32: the general case first, then the special ones
// over it in the reverse of the reference's order.
Value* Math::atan2_f32(Value* yv, Value* xv) {
  namespace x = ref::xla;
  llvm::Type* i32 = b_.getInt32Ty();
  auto k = [&](uint32_t v) { return b_.getInt32(v); };
  auto cf32 = [&](float v) { return c(static_cast<double>(v)); };
  Value* hx = b_.CreateBitCast(xv, i32);
  Value* hy = b_.CreateBitCast(yv, i32);
  Value* ix = b_.CreateAnd(hx, 0x7fffffff);
  Value* iy = b_.CreateAnd(hy, 0x7fffffff);
  Value* m =
      b_.CreateOr(b_.CreateAnd(b_.CreateLShr(hy, 31), 1), b_.CreateAnd(b_.CreateAShr(hx, 30), 2));
  auto is_m = [&](uint32_t v) { return b_.CreateICmpEQ(m, k(v)); };
  Value* xone = b_.CreateICmpEQ(hx, k(0x3f800000));
  Value* q = un(llvm::Intrinsic::fabs, b_.CreateFDiv(yv, xv));
  Value* at = atan_f32(sel(xone, yv, q)); // x = 1: atan(y) itself
  Value* z = at;
  Value* kk = b_.CreateAShr(b_.CreateSub(iy, ix), 23);
  z = sel(b_.CreateICmpSGT(kk, k(x::kAtan2Far)), cf32(x::kAtanPio2 + 0.5f * x::kAtanPiLo), z);
  z = sel(b_.CreateAnd(b_.CreateICmpSLT(hx, k(0)),
                       b_.CreateICmpSLT(kk, k(static_cast<uint32_t>(-x::kAtan2Far)))),
          cf32(0.0f), z);
  Value* zl = b_.CreateFSub(z, cf32(x::kAtanPiLo));
  Value* v = sel(is_m(0), z, b_.CreateFNeg(z));
  v = sel(is_m(2), b_.CreateFSub(cf32(x::kAtanPi), zl), v);
  v = sel(is_m(3), b_.CreateFSub(zl, cf32(x::kAtanPi)), v);
  Value* hy_neg = b_.CreateICmpSLT(hy, k(0));
  Value* half_pi = sel(hy_neg, cf32(-x::kAtanPio2), cf32(x::kAtanPio2));
  v = sel(b_.CreateICmpEQ(iy, k(0x7f800000)), half_pi, v);
  Value* yinf = b_.CreateICmpEQ(iy, k(0x7f800000));
  Value* quarter = sel(yinf, cf32(x::kAtanPio4), cf32(0.0f));
  Value* half = sel(yinf, cf32(3.0f * x::kAtanPio4), cf32(x::kAtanPi));
  Value* xinf = sel(is_m(0), quarter, b_.CreateFNeg(quarter));
  xinf = sel(is_m(2), half, xinf);
  xinf = sel(is_m(3), b_.CreateFNeg(half), xinf);
  v = sel(b_.CreateICmpEQ(ix, k(0x7f800000)), xinf, v);
  v = sel(b_.CreateICmpEQ(ix, k(0)), half_pi, v);
  Value* yzero =
      sel(b_.CreateICmpULT(m, k(2)), yv, sel(is_m(2), cf32(x::kAtanPi), cf32(-x::kAtanPi)));
  v = sel(b_.CreateICmpEQ(iy, k(0)), yzero, v);
  v = sel(xone, at, v);
  Value* nan =
      b_.CreateOr(b_.CreateICmpUGT(ix, k(0x7f800000)), b_.CreateICmpUGT(iy, k(0x7f800000)));
  return sel(nan, b_.CreateFAdd(xv, yv), v);
}

Value* Math::tanh_f64(Value* x) {
  Value* cl = sel(b_.CreateFCmpOLT(x, cd(0xC031B6D58F246197)), cd(0xC031B6D58F246197), x);
  cl = sel(b_.CreateFCmpOGT(cl, cd(0x4031B6D58F246197)), cd(0x4031B6D58F246197), cl);
  Value* c2 = b_.CreateFMul(cl, cl);
  Value* p = cd(0x3B3F9F82E5D782DF);
  for (uint64_t k : {0x3C2C3C836C04B4C8ull, 0x3CEC3379F905E662ull, 0x3D929AFF6C8EDD96ull,
                     0x3E2525A389DCE7C2ull, 0x3EA708819BE51CD9ull, 0x3F18996F4026A7FAull,
                     0x3F787F80B957ED00ull, 0x3FC36FBA9B450E5Aull, 0x3FF0000000000000ull})
    p = fma(c2, p, cd(k));
  Value* q = cd(0x3BBE8630CF903250);
  for (uint64_t k : {0x3C90AABCA9A5FEA0ull, 0x3D4232981AA2BBA8ull, 0x3DDEE2F015EA8065ull,
                     0x3E681F1947C52304ull, 0x3EE26C82AB46D140ull, 0x3F4B2E7C4D488C04ull,
                     0x3FA1998830265B50ull, 0x3FDF0D32A2F7DC79ull, 0x3FF0000000000000ull})
    q = fma(c2, q, cd(k));
  Value* v = b_.CreateFDiv(b_.CreateFMul(cl, p), q);
  return sel(b_.CreateFCmpOGE(un(llvm::Intrinsic::fabs, x), c(20.0)), copysign_one(x), v);
}

Value* Math::exp_f64(Value* x) {
  Value* lo = cd(0xC086232BDD7ABCD2);
  Value* hi = cd(0x40862E42FEFA39EF);
  // The core on an in-range argument (the out-of-range ones are selected away).
  Value* xc = sel(b_.CreateFCmpOLT(x, lo), lo, x);
  xc = sel(b_.CreateFCmpOGT(xc, hi), hi, xc);
  xc = sel(b_.CreateFCmpUNO(xc, xc), c(0.0), xc);
  Value* n = un(llvm::Intrinsic::floor, fma(xc, cd(0x3FF71547652B82FE), c(0.5)));
  Value* nn = b_.CreateFNeg(n);
  Value* g = fma(nn, cd(0x3FE62E4000000000), xc);
  g = fma(nn, cd(0x3EB7F7D1CF79ABCA), g);
  Value* gg = b_.CreateFMul(g, g);
  Value* p = fma(gg, cd(0x3F2089CDD5E44BE8), cd(0x3F9F06D10CCA2C7E));
  p = b_.CreateFMul(fma(p, gg, c(1.0)), g);
  Value* q = fma(gg, cd(0x3EC92EB6BC365FA0), cd(0x3F64AE39B508B6C0));
  q = fma(q, gg, cd(0x3FCD17099887E074));
  q = fma(q, gg, c(2.0));
  Value* rr = fma(b_.CreateFDiv(p, b_.CreateFSub(q, p)), c(2.0), c(1.0));
  llvm::Type* i64 = b_.getInt64Ty();
  Value* ni = b_.CreateFPToSI(n, i64);
  ni = b_.CreateSelect(b_.CreateICmpSLT(ni, b_.getInt64(-2099)), b_.getInt64(-2099), ni);
  ni = b_.CreateSelect(b_.CreateICmpSGT(ni, b_.getInt64(2099)), b_.getInt64(2099), ni);
  Value* bb = b_.CreateAShr(ni, 2);
  Value* one = b_.getInt64(0x3FF0000000000000ull);
  Value* s1 = b_.CreateBitCast(b_.CreateAdd(b_.CreateShl(bb, 52), one), t_);
  Value* s2 = b_.CreateBitCast(
      b_.CreateAdd(b_.CreateShl(b_.CreateSub(ni, b_.CreateMul(bb, b_.getInt64(3))), 52), one), t_);
  Value* v = b_.CreateFMul(b_.CreateFMul(b_.CreateFMul(b_.CreateFMul(rr, s1), s1), s1), s2);
  double inf = std::numeric_limits<double>::infinity();
  v = sel(b_.CreateFCmpOGT(x, hi), c(inf), v);
  v = sel(b_.CreateFCmpOLT(x, lo), c(0.0), v);
  return sel(b_.CreateFCmpUNO(x, x), x, v);
}

Value* Math::expm1_f64(Value* x) {
  Value* e = exp_f64(x);
  Value* h = b_.CreateFMul(x, c(0.5));
  Value* v = b_.CreateFMul(tanh_f64(h), b_.CreateFAdd(e, c(1.0)));
  v = sel(b_.CreateFCmpOGT(un(llvm::Intrinsic::fabs, x), c(0.5)), b_.CreateFSub(e, c(1.0)), v);
  return sel(b_.CreateFCmpOEQ(h, c(0.0)), x, v);
}

} // namespace

Value* ScalarEmitter::rsqrt_call(Value* x) {
  Value* call = call_rt("pxl.rsqrt.f32", b_.getFloatTy(), {x});
#if defined(__x86_64__)
  // The reference's rsqrt_f32 starts from rsqrtss, whose estimate only this
  // CPU knows; its packed form rsqrtps gives the same estimate per lane. So
  // the loop vectorizer gets in-module vector versions of the runtime
  // function (the vector-function ABI), with the reference's Newton steps.
  if (!host_) return call;
  llvm::LLVMContext& ctx = m_.getContext();
  std::string variants;
  for (unsigned n : {4u, 8u, 16u}) {
    std::string name = "pxl.rsqrt.f32.v" + std::to_string(n);
    variants += (variants.empty() ? "" : ",") + ("_ZGV_LLVM_N" + std::to_string(n)) +
                "v_pxl.rsqrt.f32(" + name + ")";
    if (m_.getFunction(name)) continue;
    auto* vt = llvm::FixedVectorType::get(b_.getFloatTy(), n);
    auto* fn = llvm::Function::Create(llvm::FunctionType::get(vt, {vt}, false),
                                      llvm::Function::InternalLinkage, name, m_);
    fn->addFnAttr("denormal-fp-math", "preserve-sign,preserve-sign");
    fn->addFnAttr("denormal-fp-math-f32", "preserve-sign,preserve-sign");
    fn->setDoesNotAccessMemory();
    fn->setDoesNotThrow();
    fn->setWillReturn();
    llvm::IRBuilder<> vb(llvm::BasicBlock::Create(ctx, "entry", fn));
    Value* v = fn->getArg(0);
    Value* y = llvm::PoisonValue::get(vt);
    for (unsigned i = 0; i < n; i += 4) {
      Value* part = vb.CreateShuffleVector(v, {int(i), int(i + 1), int(i + 2), int(i + 3)});
      Value* est = vb.CreateIntrinsic(llvm::Intrinsic::x86_sse_rsqrt_ps, {}, {part});
      for (unsigned j = 0; j < 4; ++j)
        y = vb.CreateInsertElement(y, vb.CreateExtractElement(est, j), i + j);
    }
    auto fc = [&](double c) { return llvm::ConstantFP::get(vt, c); };
    auto fma = [&](Value* a, Value* p, Value* q) {
      return vb.CreateIntrinsic(llvm::Intrinsic::fma, {vt}, {a, p, q});
    };
    // rsqrt_f32's Newton steps, on positive normal finite lanes only.
    Value* better = y;
    for (int step = 0, steps = ref::xla::rsqrt_f32_newton_steps(); step < steps; ++step) {
      Value* t = fma(vb.CreateFMul(v, better), better, fc(-1.0));
      better = fma(vb.CreateFMul(better, fc(-0.5)), t, better);
    }
    Value* normal = vb.CreateAnd(vb.CreateFCmpOGE(v, fc(0x1p-126)),
                                 vb.CreateFCmpOLT(v, fc(std::numeric_limits<double>::infinity())));
    vb.CreateRet(vb.CreateSelect(normal, better, y));
    llvm::appendToCompilerUsed(m_, {fn}); // kept until the vectorizer has looked
  }
  llvm::cast<llvm::CallInst>(call)->addFnAttr(
      llvm::Attribute::get(ctx, "vector-function-abi-variant", variants));
#endif
  return call;
}

Value* ScalarEmitter::inline_math2(Op op, DType d, Value* x, Value* y) {
  if (d == DType::Float64) return nullptr;
  Math m(b_, *this, d, x->getType());
  if (op == Op::Pow) return m.pow_f32(x, y);
  if (op == Op::Atan2) return m.atan2_f32(x, y);
  return nullptr;
}

Value* ScalarEmitter::inline_math(Op op, DType d, Value* x) {
  Math m(b_, *this, d, x->getType());
  if (d == DType::Float64) {
    switch (op) {
    case Op::Exp:
      return m.exp_f64(x);
    case Op::Tanh:
      return m.tanh_f64(x);
    case Op::Expm1:
      return m.expm1_f64(x);
    case Op::Logistic: // 1 / (exp(-x) + 1)
      return b_.CreateFDiv(m.c(1.0), b_.CreateFAdd(m.exp_f64(b_.CreateFNeg(x)), m.c(1.0)));
    case Op::ErfInv:
      return m.erf_inv(x, rt_by_width("log1p", d, {b_.CreateFMul(x, b_.CreateFNeg(x))}));
    default:
      return nullptr;
    }
  }
  switch (op) {
  case Op::Exp:
    return m.exp_f32(x);
  case Op::Log:
    return m.log_f32(x);
  case Op::Log1p:
    return m.log1p_f32(x);
  case Op::Expm1: {
    // float16 rounds each step, bfloat16 only the result (XLA's expansions).
    Math m32(b_, *this, DType::Float32, x->getType());
    return (d == DType::BFloat16 ? m32 : m).expm1_f32(x);
  }
  case Op::Tanh:
    return m.tanh_f32(x);
  case Op::Erf:
    return m.erf_f32(x);
  case Op::ErfInv:
    return m.erf_inv(x, m.log1p_f32(b_.CreateFMul(x, b_.CreateFNeg(x))));
  case Op::Logistic:
    return m.logistic_f32(x);
  case Op::Sin:
    return m.sincos_f32(x, false);
  case Op::Cos:
    return m.sincos_f32(x, true);
  default:
    return nullptr;
  }
}

} // namespace pxl::codegen
