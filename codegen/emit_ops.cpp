// Scalar semantics of the fusible ops in LLVM IR. Every case mirrors the
// reference kernel (ir/ref_kernels.cpp, ir/ref_reduce.cpp, Array::get/set for
// conversions) so compiled and interpreted results are bit-identical: XLA's
// integer division/shift rules, NaN-propagating max/min, saturating float->int
// conversions, and transcendental math either inline (emit_math.cpp, the
// reference's algorithms as IR) or through the very functions the reference
// calls (codegen/jit_runtime.cpp).
#include <limits>

#include "codegen/emitter.hpp"
#include "lang/diag.hpp"

namespace pxl::codegen {

using llvm::Value;

llvm::Type* ScalarEmitter::compute_type(DType d) {
  switch (d) {
  case DType::Bool:
    return b_.getInt1Ty();
  case DType::Int8:
  case DType::UInt8:
    return b_.getInt8Ty();
  case DType::Int16:
  case DType::UInt16:
    return b_.getInt16Ty();
  case DType::Int32:
  case DType::UInt32:
    return b_.getInt32Ty();
  case DType::Float16:
  case DType::BFloat16:
  case DType::Float32:
    return b_.getFloatTy();
  case DType::Float64:
    return b_.getDoubleTy();
  case DType::Int2:
  case DType::Int4:
  case DType::UInt2:
  case DType::UInt4: // i2/i4: arithmetic wraps at the type's width by itself
    return b_.getIntNTy(static_cast<unsigned>(dtype_bits(d)));
  case DType::Complex64: // never fused (fusible_instr): complex ops run as host steps
  PXL_SMALL_FLOAT_CASES:
    break;
  }
  internal_error(__FILE__, __LINE__, "bad dtype");
}

llvm::Type* ScalarEmitter::storage_type(DType d) {
  switch (d) {
  case DType::Bool:
  case DType::Int2:
  case DType::Int4:
  case DType::UInt2:
  case DType::UInt4:
    return b_.getInt8Ty();
  case DType::Float16:
  case DType::BFloat16:
    return b_.getInt16Ty();
  default:
    return compute_type(d);
  }
}

Value* ScalarEmitter::call_rt(const std::string& name, llvm::Type* ret,
                              const std::vector<Value*>& args) {
  llvm::Function* fn = m_.getFunction(name);
  if (!fn) {
    std::vector<llvm::Type*> params;
    for (Value* a : args) params.push_back(a->getType());
    auto* ty = llvm::FunctionType::get(ret, params, false);
    fn = llvm::Function::Create(ty, llvm::Function::ExternalLinkage, name, m_);
    // Pure functions: lets LLVM hoist, CSE and delete them like arithmetic.
    fn->setDoesNotAccessMemory();
    fn->setDoesNotThrow();
    fn->setWillReturn();
  }
  return b_.CreateCall(fn, args);
}

Value* ScalarEmitter::libm_call(Op op, Value* x) {
  return call_rt(op == Op::Exp ? "pxl.libm.exp.f32" : "pxl.libm.log.f32", x->getType(), {x});
}

Value* ScalarEmitter::rt_by_width(const char* base, DType d, const std::vector<Value*>& args) {
  std::string suffix = d == DType::Float64 ? ".f64" : ".f32";
  return call_rt(std::string("pxl.") + base + suffix, compute_type(d), args);
}

Value* ScalarEmitter::load_convert(DType d, Value* s) {
  switch (d) {
  case DType::Bool:
    return b_.CreateICmpNE(s, b_.getInt8(0));
  case DType::Float16: {
    // half_to_float with integer ops (so the loop vectorizes): rebias the
    // exponent; inf/NaN keep their payload; subnormals are mant * 2^-24.
    llvm::Type* i32 = b_.getInt32Ty();
    Value* h = b_.CreateZExt(s, i32);
    Value* sign = b_.CreateShl(b_.CreateAnd(h, 0x8000), 16);
    Value* exp = b_.CreateAnd(b_.CreateLShr(h, 10), 0x1f);
    Value* mant = b_.CreateAnd(h, 0x3ff);
    Value* normal =
        b_.CreateOr(b_.CreateShl(b_.CreateAdd(exp, b_.getInt32(112)), 23), b_.CreateShl(mant, 13));
    Value* special = b_.CreateOr(b_.getInt32(0x7f800000), b_.CreateShl(mant, 13));
    Value* sub = b_.CreateBitCast(b_.CreateFMul(b_.CreateUIToFP(mant, b_.getFloatTy()),
                                                llvm::ConstantFP::get(b_.getFloatTy(), 0x1p-24)),
                                  i32);
    Value* mag = b_.CreateSelect(b_.CreateICmpEQ(exp, b_.getInt32(0x1f)), special, normal);
    mag = b_.CreateSelect(b_.CreateICmpEQ(exp, b_.getInt32(0)), sub, mag);
    return b_.CreateBitCast(b_.CreateOr(sign, mag), b_.getFloatTy());
  }
  case DType::BFloat16:
    return b_.CreateBitCast(b_.CreateShl(b_.CreateZExt(s, b_.getInt32Ty()), 16), b_.getFloatTy());
  case DType::Int2:
  case DType::Int4:
  case DType::UInt2:
  case DType::UInt4:
    return b_.CreateTrunc(s, compute_type(d));
  default:
    return s;
  }
}

Value* ScalarEmitter::store_convert(DType d, Value* v) {
  switch (d) {
  case DType::Bool:
    return b_.CreateZExt(v, b_.getInt8Ty());
  case DType::Float16: {
    // float_to_half with integer ops: round to nearest even at bit 13 of the
    // significand (normal results) or at the subnormal's shift, carrying into
    // the exponent; overflow gives inf, NaN stays quiet with its top payload.
    llvm::Type* i32 = b_.getInt32Ty();
    auto k = [&](uint32_t c) { return b_.getInt32(c); };
    Value* x = b_.CreateBitCast(v, i32);
    Value* sign = b_.CreateAnd(b_.CreateLShr(x, 16), 0x8000);
    Value* exp = b_.CreateAnd(b_.CreateLShr(x, 23), 0xff);
    Value* mant = b_.CreateAnd(x, 0x7fffff);
    Value* e = b_.CreateSub(exp, k(112)); // the half's biased exponent
    // Normal: the top 10 mantissa bits under the exponent, rounded on 13 bits.
    Value* nh = b_.CreateOr(b_.CreateShl(e, 10), b_.CreateLShr(mant, 13));
    auto round = [&](Value* half, Value* rem, Value* mid) {
      Value* up = b_.CreateOr(
          b_.CreateICmpUGT(rem, mid),
          b_.CreateAnd(b_.CreateICmpEQ(rem, mid), b_.CreateICmpNE(b_.CreateAnd(half, 1), k(0))));
      return b_.CreateAdd(half, b_.CreateZExt(up, i32));
    };
    Value* normal = round(nh, b_.CreateAnd(mant, 0x1fff), k(0x1000));
    // Subnormal (-10 <= e <= 0): the 24-bit significand shifted by 14 - e.
    Value* is_sub = b_.CreateAnd(b_.CreateICmpSLE(e, k(0)),
                                 b_.CreateICmpSGE(e, b_.getInt32(static_cast<uint32_t>(-10))));
    Value* shift = b_.CreateSelect(is_sub, b_.CreateSub(k(14), e), k(14));
    Value* m = b_.CreateOr(mant, 0x800000);
    Value* sh = b_.CreateLShr(m, shift);
    Value* one = b_.CreateShl(k(1), shift);
    Value* subn = round(sh, b_.CreateAnd(m, b_.CreateSub(one, k(1))), b_.CreateLShr(one, 1));
    Value* nan = b_.CreateSelect(b_.CreateICmpEQ(mant, k(0)), k(0x7c00),
                                 b_.CreateOr(k(0x7e00), b_.CreateLShr(mant, 13)));
    Value* mag =
        b_.CreateSelect(b_.CreateICmpSLT(e, b_.getInt32(static_cast<uint32_t>(-10))), k(0), normal);
    mag = b_.CreateSelect(is_sub, subn, mag);
    mag = b_.CreateSelect(b_.CreateICmpSGE(e, k(31)), k(0x7c00), mag);
    mag = b_.CreateSelect(b_.CreateICmpEQ(exp, k(0xff)), nan, mag);
    return b_.CreateTrunc(b_.CreateOr(sign, mag), b_.getInt16Ty());
  }
  case DType::BFloat16: {
    // float_to_bfloat16: NaN keeps its top bits and gets the quiet bit;
    // everything else rounds to nearest even by adding 0x7fff + lsb.
    Value* x = b_.CreateBitCast(v, b_.getInt32Ty());
    Value* hi = b_.CreateLShr(x, 16);
    Value* nan = b_.CreateOr(hi, 0x40);
    Value* lsb = b_.CreateAnd(hi, 1);
    Value* rounded = b_.CreateLShr(b_.CreateAdd(b_.CreateAdd(x, b_.getInt32(0x7fff)), lsb), 16);
    Value* r = b_.CreateSelect(b_.CreateFCmpUNO(v, v), nan, rounded);
    return b_.CreateTrunc(r, b_.getInt16Ty());
  }
  case DType::Int2:
  case DType::Int4:
  case DType::UInt2:
  case DType::UInt4: // the byte holds the value extended, as Array::set writes it
    return b_.CreateIntCast(v, b_.getInt8Ty(), is_signed_int(d));
  default:
    return v;
  }
}

Value* ScalarEmitter::round_to(DType d, Value* v) {
  if (d != DType::Float16 && d != DType::BFloat16) return v;
  return load_convert(d, store_convert(d, v));
}

Value* ScalarEmitter::convert(DType from, DType to, Value* v) {
  // As Array::get/set: through double/int64 scalars. Those routes are exact
  // except float->int (saturating, NaN -> 0: llvm.fpto*i.sat on the double)
  // and f64 -> half (rounded to f32 first, then to the half type).
  bool from_float = is_floating(from);
  llvm::Type* ct = compute_type(to);
  switch (to) {
  case DType::Bool:
    if (from == DType::Bool) return v;
    return from_float ? b_.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0))
                      : b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  case DType::Int8:
  case DType::UInt8:
  case DType::Int16:
  case DType::UInt16:
  case DType::Int32:
  case DType::UInt32:
  case DType::Int2:
  case DType::Int4:
  case DType::UInt2:
  case DType::UInt4: {
    if (from == DType::Bool) return b_.CreateZExt(v, ct);
    // Integer to integer wraps: truncate, or extend by the source's signedness.
    if (!from_float) return b_.CreateIntCast(v, ct, is_signed_int(from));
    Value* dv = b_.CreateFPExt(v, b_.getDoubleTy());
    auto id = is_signed_int(to) ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat;
    return b_.CreateIntrinsic(id, {ct, b_.getDoubleTy()}, {dv});
  }
  case DType::Float16:
  case DType::BFloat16:
  case DType::Float32:
  case DType::Float64: {
    Value* r;
    if (from == DType::Bool || is_unsigned_int(from))
      r = b_.CreateUIToFP(v, ct);
    else if (is_signed_int(from))
      r = b_.CreateSIToFP(v, ct);
    else if (v->getType() == ct)
      r = v;
    else
      r = to == DType::Float64 ? b_.CreateFPExt(v, ct) : b_.CreateFPTrunc(v, ct);
    return round_to(to, r);
  }
  case DType::Complex64: // never fused
  PXL_SMALL_FLOAT_CASES:
    break;
  }
  internal_error(__FILE__, __LINE__, "bad dtype");
}

Value* ScalarEmitter::nan_minmax(bool is_max, DType d, Value* a, Value* b) {
  if (d == DType::Bool) return is_max ? b_.CreateOr(a, b) : b_.CreateAnd(a, b);
  if (!is_floating(d)) {
    bool s = is_signed_int(d);
    Value* c = is_max ? (s ? b_.CreateICmpSGT(a, b) : b_.CreateICmpUGT(a, b))
                      : (s ? b_.CreateICmpSLT(a, b) : b_.CreateICmpULT(a, b));
    return b_.CreateSelect(c, a, b);
  }
  // The reference: a NaN `a` wins, then a NaN `b`, else the larger (smaller).
  // The ordered compare is false when `b` is NaN, so it already picks `b`.
  Value* c = is_max ? b_.CreateFCmpOGT(a, b) : b_.CreateFCmpOLT(a, b);
  Value* r = b_.CreateSelect(c, a, b);
  // Equal operands differ at most in the sign of a zero, and -0 orders below
  // +0 (XLA's max/min): max ANDs the bits, min ORs them.
  if (a->getType()->isFloatingPointTy()) {
    llvm::Type* it = b_.getIntNTy(a->getType()->getPrimitiveSizeInBits());
    Value* ai = b_.CreateBitCast(a, it);
    Value* bi = b_.CreateBitCast(b, it);
    Value* z = b_.CreateBitCast(is_max ? b_.CreateAnd(ai, bi) : b_.CreateOr(ai, bi), a->getType());
    r = b_.CreateSelect(b_.CreateFCmpOEQ(a, b), z, r);
  }
  return b_.CreateSelect(b_.CreateFCmpUNO(a, a), a, r);
}

Value* ScalarEmitter::unary(Op op, DType d, Value* x) {
  llvm::Type* t = x->getType();
  bool flt = is_floating(d);
  auto fc = [&](double c) { return llvm::ConstantFP::get(t, c); };
  auto ic = [&](int64_t c) { return llvm::ConstantInt::get(t, static_cast<uint64_t>(c), true); };
  auto intr = [&](llvm::Intrinsic::ID id) { return b_.CreateUnaryIntrinsic(id, x); };
  const char* rsuffix = d == DType::Float16 ? "pxl.%s.f16" : "pxl.%s.bf16";
  auto rounding_rt = [&](const char* base) -> Value* {
    if (d == DType::Float16 || d == DType::BFloat16) {
      char name[64];
      std::snprintf(name, sizeof name, rsuffix, base);
      return call_rt(name, t, {x});
    }
    return rt_by_width(base, d, {x});
  };
  if (flt)
    if (Value* v = inline_math(op, d, x)) return v;
  switch (op) {
  case Op::Neg:
    return flt ? b_.CreateFNeg(x) : b_.CreateSub(ic(0), x);
  case Op::Exp:
    return rt_by_width("exp", d, {x});
  case Op::Log:
    return rt_by_width("log", d, {x});
  case Op::Log1p:
    return rt_by_width("log1p", d, {x});
  case Op::Expm1:
    return rounding_rt("expm1");
  case Op::Sqrt:
    return intr(llvm::Intrinsic::sqrt);
  case Op::Rsqrt:
    if (d != DType::Float64) return rsqrt_call(x);
    return rt_by_width("rsqrt", d, {x});
  case Op::Tanh:
    return rt_by_width("tanh", d, {x});
  case Op::Sin:
    return rt_by_width("sin", d, {x});
  case Op::Cos:
    return rt_by_width("cos", d, {x});
  case Op::Tan:
    return rt_by_width("tan", d, {x});
  case Op::Cbrt:
    return rt_by_width("cbrt", d, {x});
  case Op::Logistic:
    return rounding_rt("logistic");
  case Op::Erf:
    return rt_by_width("erf", d, {x});
  case Op::Abs:
    if (flt) return intr(llvm::Intrinsic::fabs);
    if (is_unsigned_int(d)) return x;
    return b_.CreateSelect(b_.CreateICmpSLT(x, ic(0)), b_.CreateSub(ic(0), x), x);
  case Op::Sign:
    if (flt) {
      Value* keep = b_.CreateOr(b_.CreateFCmpUNO(x, x), b_.CreateFCmpOEQ(x, fc(0)));
      return b_.CreateSelect(keep, x, b_.CreateSelect(b_.CreateFCmpOGT(x, fc(0)), fc(1), fc(-1)));
    }
    if (is_unsigned_int(d)) return b_.CreateZExt(b_.CreateICmpUGT(x, ic(0)), t);
    return b_.CreateSelect(b_.CreateICmpSGT(x, ic(0)), ic(1),
                           b_.CreateSelect(b_.CreateICmpSLT(x, ic(0)), ic(-1), ic(0)));
  case Op::Floor:
    return intr(llvm::Intrinsic::floor);
  case Op::Ceil:
    return intr(llvm::Intrinsic::ceil);
  case Op::Round:
    return intr(llvm::Intrinsic::roundeven); // nearbyint, default rounding
  case Op::IsFinite:
    return b_.CreateFCmpOLT(intr(llvm::Intrinsic::fabs),
                            fc(std::numeric_limits<double>::infinity()));
  case Op::Not:
    return b_.CreateNot(x);
  case Op::ShardingConstraint:
    return x;
  default:
    internal_error(__FILE__, __LINE__, std::string("not unary: ") + op_name(op));
  }
}

Value* ScalarEmitter::binary(Op op, DType d, Value* x, Value* y) {
  llvm::Type* t = x->getType();
  bool flt = is_floating(d), sgn = is_signed_int(d);
  auto ic = [&](int64_t c) { return llvm::ConstantInt::get(t, static_cast<uint64_t>(c), true); };
  switch (op) {
  case Op::Add:
    return flt ? b_.CreateFAdd(x, y) : b_.CreateAdd(x, y);
  case Op::Sub:
    return flt ? b_.CreateFSub(x, y) : b_.CreateSub(x, y);
  case Op::Mul:
    return flt ? b_.CreateFMul(x, y) : b_.CreateMul(x, y);
  case Op::Div:
  case Op::Rem: {
    if (flt) return op == Op::Div ? b_.CreateFDiv(x, y) : rt_by_width("fmod", d, {x, y});
    // XLA: x/0 = -1, x%0 = x; INT_MIN/-1 = INT_MIN, INT_MIN%-1 = 0. The
    // divisor is made safe first so the hardware division never traps.
    Value* zero = b_.CreateICmpEQ(y, ic(0));
    Value* ovf = sgn ? b_.CreateAnd(b_.CreateICmpEQ(x, ic(int_min(d))), b_.CreateICmpEQ(y, ic(-1)))
                     : b_.getFalse();
    Value* safe = b_.CreateSelect(b_.CreateOr(zero, ovf), ic(1), y);
    if (op == Op::Div) {
      Value* q = sgn ? b_.CreateSDiv(x, safe) : b_.CreateUDiv(x, safe);
      return b_.CreateSelect(zero, ic(-1), q); // ovf: x / 1 = INT_MIN already
    }
    Value* r = sgn ? b_.CreateSRem(x, safe) : b_.CreateURem(x, safe);
    return b_.CreateSelect(zero, x, r); // ovf: x % 1 = 0 already
  }
  case Op::Pow:
    if (flt) {
      if (Value* v = inline_math2(op, d, x, y)) return v;
      return rt_by_width("pow", d, {x, y});
    }
    if (t != b_.getInt32Ty()) {
      // Narrow integers: the 32-bit power wraps to the same low bits, and a
      // negative exponent (0 unless the base is +-1) keeps its sign when extended.
      llvm::Type* i32 = b_.getInt32Ty();
      Value* p = call_rt(sgn ? "pxl.pow.i32" : "pxl.pow.u32", i32,
                         {b_.CreateIntCast(x, i32, sgn), b_.CreateIntCast(y, i32, sgn)});
      return b_.CreateTrunc(p, t);
    }
    return call_rt(sgn ? "pxl.pow.i32" : "pxl.pow.u32", t, {x, y});
  case Op::Max:
    return nan_minmax(true, d, x, y);
  case Op::Min:
    return nan_minmax(false, d, x, y);
  case Op::And:
    return b_.CreateAnd(x, y);
  case Op::Or:
    return b_.CreateOr(x, y);
  case Op::Xor:
    return b_.CreateXor(x, y);
  case Op::Atan2:
    if (Value* v = inline_math2(op, d, x, y)) return v;
    return rt_by_width("atan2", d, {x, y});
  case Op::ShiftLeft:
  case Op::ShiftRightLogical:
  case Op::ShiftRightArithmetic: {
    // Shift counts are unsigned; at least the bit width gives 0 (or the sign).
    Value* big = b_.CreateICmpUGE(y, ic(t->getIntegerBitWidth()));
    Value* safe = b_.CreateSelect(big, ic(0), y);
    if (op == Op::ShiftLeft) return b_.CreateSelect(big, ic(0), b_.CreateShl(x, safe));
    if (op == Op::ShiftRightLogical) return b_.CreateSelect(big, ic(0), b_.CreateLShr(x, safe));
    // Arithmetic: the sign bit fills, for unsigned types too (XLA).
    Value* fill = b_.CreateSelect(b_.CreateICmpSLT(x, ic(0)), ic(-1), ic(0));
    return b_.CreateSelect(big, fill, b_.CreateAShr(x, safe));
  }
  case Op::Eq:
    return flt ? b_.CreateFCmpOEQ(x, y) : b_.CreateICmpEQ(x, y);
  case Op::Ne:
    return flt ? b_.CreateFCmpUNE(x, y) : b_.CreateICmpNE(x, y);
  case Op::Lt:
    return flt ? b_.CreateFCmpOLT(x, y) : sgn ? b_.CreateICmpSLT(x, y) : b_.CreateICmpULT(x, y);
  case Op::Le:
    return flt ? b_.CreateFCmpOLE(x, y) : sgn ? b_.CreateICmpSLE(x, y) : b_.CreateICmpULE(x, y);
  case Op::Gt:
    return flt ? b_.CreateFCmpOGT(x, y) : sgn ? b_.CreateICmpSGT(x, y) : b_.CreateICmpUGT(x, y);
  case Op::Ge:
    return flt ? b_.CreateFCmpOGE(x, y) : sgn ? b_.CreateICmpSGE(x, y) : b_.CreateICmpUGE(x, y);
  default:
    internal_error(__FILE__, __LINE__, std::string("not binary: ") + op_name(op));
  }
}

// The reference's integer_pow: products by squaring, each rounded in d, then
// 1 / acc for a negative exponent (integers never get one: the shape rule).
Value* ScalarEmitter::integer_pow(DType d, Value* x, int64_t n) {
  llvm::Type* t = x->getType();
  Value* one = is_floating(d) ? llvm::ConstantFP::get(t, 1.0) : llvm::ConstantInt::get(t, 1);
  Value* acc = nullptr;
  for (uint64_t e = n < 0 ? 0 - static_cast<uint64_t>(n) : static_cast<uint64_t>(n); e > 0;) {
    if (e & 1) acc = acc ? round_to(d, binary(Op::Mul, d, acc, x)) : x;
    e >>= 1;
    if (e > 0) x = round_to(d, binary(Op::Mul, d, x, x));
  }
  if (!acc) return one;
  return n > 0 ? acc : round_to(d, binary(Op::Div, d, one, acc));
}

Value* ScalarEmitter::elementwise(const Instr& in, DType result, const std::vector<DType>& types,
                                  const std::vector<Value*>& args) {
  Value* r = nullptr;
  switch (op_family(in.op)) {
  case OpFamily::Unary:
    if (in.op == Op::IntegerPow) return integer_pow(types[0], args[0], in.attrs.exponent);
    if (in.op == Op::Square) return integer_pow(types[0], args[0], 2);
    r = unary(in.op, types[0], args[0]);
    break;
  case OpFamily::Binary:
  case OpFamily::Compare:
    r = binary(in.op, types[0], args[0], args[1]);
    break;
  case OpFamily::Select:
    r = b_.CreateSelect(args[0], args[1], args[2]);
    break;
  case OpFamily::Nary:
    if (in.op == Op::Fma) {
      r = b_.CreateIntrinsic(llvm::Intrinsic::fma, {args[0]->getType()}, args);
      break;
    }
    return threefry2x32(args, static_cast<int>(in.attrs.axis));
  case OpFamily::Convert:
    if (in.op == Op::ConvertElementType) return convert(types[0], result, args[0]);
    return b_.CreateBitCast(args[0], compute_type(result)); // 32/64-bit storage types only
  default:
    internal_error(__FILE__, __LINE__, std::string("not elementwise: ") + op_name(in.op));
  }
  // The reference stores every op's result in its dtype: half types round here.
  return round_to(result, r);
}

// runtime/threefry.cpp's rounds as inline i32 arithmetic; both words are
// computed and one returned, so a kernel that uses both words hashes once
// after LLVM's CSE.
Value* ScalarEmitter::threefry2x32(const std::vector<Value*>& args, int word) {
  static constexpr int kRot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  Value* ks[3] = {args[0], args[1],
                  b_.CreateXor(b_.CreateXor(args[0], args[1]), b_.getInt32(0x1BD11BDA))};
  Value* x0 = b_.CreateAdd(args[2], ks[0]);
  Value* x1 = b_.CreateAdd(args[3], ks[1]);
  for (int g = 0; g < 5; ++g) {
    for (int rot : kRot[g % 2]) {
      x0 = b_.CreateAdd(x0, x1);
      x1 = b_.CreateIntrinsic(llvm::Intrinsic::fshl, {x1->getType()}, {x1, x1, b_.getInt32(rot)});
      x1 = b_.CreateXor(x1, x0);
    }
    x0 = b_.CreateAdd(x0, ks[(g + 1) % 3]);
    x1 = b_.CreateAdd(b_.CreateAdd(x1, ks[(g + 2) % 3]), b_.getInt32(g + 1));
  }
  return word == 0 ? x0 : x1;
}

Value* ScalarEmitter::reduce_init(Op op, DType d, bool single) {
  llvm::Type* t = compute_type(d);
  bool flt = is_floating(d);
  double inf = std::numeric_limits<double>::infinity();
  auto ic = [&](uint64_t c) { return llvm::ConstantInt::get(t, c); };
  if (d == DType::Bool && op == Op::ReduceSum) op = Op::ReduceOr;
  if (d == DType::Bool && op == Op::ReduceProd) op = Op::ReduceAnd;
  switch (op) {
  case Op::ReduceSum: // -0.0, addition's identity, keeps a lone -0.0 (XLA's reshape)
    return flt ? llvm::ConstantFP::get(t, single ? -0.0 : 0.0) : ic(0);
  case Op::ReduceProd:
    return flt ? llvm::ConstantFP::get(t, 1.0) : ic(1);
  case Op::ReduceMax:
    if (flt) return llvm::ConstantFP::get(t, -inf);
    if (is_signed_int(d)) return llvm::ConstantInt::getSigned(t, int_min(d));
    return ic(0); // unsigned, bool: false
  case Op::ReduceMin:
    if (flt) return llvm::ConstantFP::get(t, inf);
    return is_signed_int(d) ? llvm::ConstantInt::getSigned(t, int_max(d))
                            : llvm::ConstantInt::getAllOnesValue(t);
  case Op::ReduceAnd:
    return llvm::ConstantInt::getAllOnesValue(t);
  case Op::ReduceOr:
    return ic(0);
  default:
    internal_error(__FILE__, __LINE__, std::string("not a reduction: ") + op_name(op));
  }
}

Value* ScalarEmitter::reduce_step(Op op, DType d, Value* acc, Value* v) {
  bool flt = is_floating(d);
  if (d == DType::Bool && op == Op::ReduceSum) op = Op::ReduceOr; // C++ bool arithmetic
  if (d == DType::Bool && op == Op::ReduceProd) op = Op::ReduceAnd;
  switch (op) {
  case Op::ReduceSum:
    return flt ? b_.CreateFAdd(acc, v) : b_.CreateAdd(acc, v);
  case Op::ReduceProd:
    return flt ? b_.CreateFMul(acc, v) : b_.CreateMul(acc, v);
  case Op::ReduceMax:
    return nan_minmax(true, d, acc, v);
  case Op::ReduceMin:
    return nan_minmax(false, d, acc, v);
  case Op::ReduceAnd:
    return b_.CreateAnd(acc, v);
  case Op::ReduceOr:
    return b_.CreateOr(acc, v);
  default:
    internal_error(__FILE__, __LINE__, std::string("not a reduction: ") + op_name(op));
  }
}

} // namespace pxl::codegen
