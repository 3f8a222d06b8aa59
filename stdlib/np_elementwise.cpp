// Elementwise functions and operators: jnp's promotion and broadcasting on top
// of the equal-shape, equal-dtype primitives.
#include <algorithm>
#include <limits>
#include <string_view>

#include "ir/ref_math.hpp"
#include "lang/tracer.hpp"
#include "runtime/eager.hpp"
#include "stdlib/np_internal.hpp"

namespace pxl::np {

using namespace detail;

namespace detail {

// JAX's TypeErrors from the lax primitive a jnp function lowers to, which checks
// its operand dtypes: `lax_fn` names the primitive, `accepted` its dtype classes.
[[noreturn]] void lax_dtype_error(const char* lax_fn, DType d, const char* accepted) {
  throw Error(ErrCode::Type, std::string(lax_fn) + " does not accept dtype " + dtype_name(d) +
                                 ". Accepted dtypes are subtypes of " + accepted + ".");
}
[[noreturn]] void lax_dtype_error0(const char* lax_fn, DType d, const char* accepted) {
  throw Error(ErrCode::Type, std::string(lax_fn) + " does not accept dtype " + dtype_name(d) +
                                 " at position 0. Accepted dtypes at position 0 are subtypes of " +
                                 accepted + ".");
}

} // namespace detail

namespace {

const char* bin_name(BinOp op) {
  switch (op) {
  case BinOp::Add:
    return "add";
  case BinOp::Sub:
    return "subtract";
  case BinOp::Mul:
    return "multiply";
  case BinOp::TrueDiv:
    return "true_divide";
  case BinOp::FloorDiv:
    return "floor_divide";
  case BinOp::Mod:
    return "remainder";
  case BinOp::Pow:
    return "power";
  case BinOp::Maximum:
    return "maximum";
  case BinOp::Minimum:
    return "minimum";
  case BinOp::BitAnd:
    return "bitwise_and";
  case BinOp::BitOr:
    return "bitwise_or";
  case BinOp::BitXor:
    return "bitwise_xor";
  case BinOp::LeftShift:
    return "left_shift";
  case BinOp::RightShift:
    return "right_shift";
  case BinOp::Eq:
    return "equal";
  case BinOp::Ne:
    return "not_equal";
  case BinOp::Lt:
    return "less";
  case BinOp::Le:
    return "less_equal";
  case BinOp::Gt:
    return "greater";
  case BinOp::Ge:
    return "greater_equal";
  case BinOp::Arctan2:
    return "arctan2";
  }
  return "?";
}

Tensor p2(OpContext& cx, Op op, const Tensor& a, const Tensor& b) {
  return bind(cx, op, {}, {a, b});
}
Tensor p1(OpContext& cx, Op op, const Tensor& a) { return bind(cx, op, {}, {a}); }
// A scalar of x's dtype and weak type broadcast to x's shape.
Tensor like(OpContext& cx, const Tensor& x, const Scalar& v) {
  return fill(cx, av(x).shape, v, av(x).dtype, av(x).weak);
}

// XLA's atan2 of complex y and x: -i log((x + i y) / sqrt(x^2 + y^2)).
Tensor complex_atan2(OpContext& cx, const Tensor& y, const Tensor& x) {
  Tensor i = like(cx, x, Scalar::of_complex(0, 1)), neg_i = like(cx, x, Scalar::of_complex(0, -1));
  Tensor r = p1(cx, Op::Sqrt, p2(cx, Op::Add, p2(cx, Op::Mul, x, x), p2(cx, Op::Mul, y, y)));
  Tensor w = p2(cx, Op::Div, p2(cx, Op::Add, x, p2(cx, Op::Mul, i, y)), r);
  return p2(cx, Op::Mul, neg_i, p1(cx, Op::Log, w));
}

// jnp.floor_divide on operands of one dtype and shape.
Tensor floor_divide(OpContext& cx, const Tensor& a, const Tensor& b) {
  DType d = av(a).dtype;
  if (is_unsigned_int(d)) return p2(cx, Op::Div, a, b);
  if (is_signed_int(d)) {
    Tensor q = p2(cx, Op::Div, a, b);
    Tensor sign_differs = p2(cx, Op::Ne, p1(cx, Op::Sign, a), p1(cx, Op::Sign, b));
    Tensor inexact = p2(cx, Op::Ne, p2(cx, Op::Rem, a, b), like(cx, a, Scalar::of_int(0)));
    Tensor adjust = p2(cx, Op::And, sign_differs, inexact);
    return bind(cx, Op::Select, {},
                {adjust, p2(cx, Op::Sub, q, like(cx, q, Scalar::of_int(1))), q});
  }
  // Floats: CPython's float_divmod, as jnp does.
  Tensor zero = like(cx, a, Scalar::of_int(0));
  Tensor mod = p2(cx, Op::Rem, a, b);
  Tensor corrected =
      bind(cx, Op::Select, {}, {p2(cx, Op::Eq, b, zero), a, p2(cx, Op::Sub, a, mod)});
  Tensor div = p2(cx, Op::Div, corrected, b);
  Tensor ind = p2(cx, Op::And, p2(cx, Op::Ne, mod, zero),
                  p2(cx, Op::Ne, p1(cx, Op::Sign, b), p1(cx, Op::Sign, mod)));
  div =
      bind(cx, Op::Select, {}, {ind, p2(cx, Op::Sub, div, like(cx, div, Scalar::of_int(1))), div});
  return p1(cx, Op::Round, div);
}

// jnp.remainder (the sign of the divisor; x % 0 is 0 for ints).
Tensor remainder(OpContext& cx, const Tensor& a, Tensor b) {
  Tensor zero = like(cx, a, Scalar::of_int(0));
  if (is_integer(av(b).dtype))
    b = bind(cx, Op::Select, {}, {p2(cx, Op::Eq, b, zero), like(cx, b, Scalar::of_int(1)), b});
  Tensor trunc = p2(cx, Op::Rem, a, b);
  Tensor nonzero = p2(cx, Op::Ne, trunc, zero);
  Tensor do_plus = p2(
      cx, Op::And, p2(cx, Op::Ne, p2(cx, Op::Lt, trunc, zero), p2(cx, Op::Lt, b, zero)), nonzero);
  return bind(cx, Op::Select, {}, {do_plus, p2(cx, Op::Add, trunc, b), trunc});
}

// XLA's algebraic simplifier turns convert(pred) * y into select(pred, y, 0), so a bool
// operand converted to an inexact type (bfloat16 aside: it is upcast around the fusion)
// zeroes even an infinite or NaN factor; a broadcast bool operand escapes the pattern.
bool bool_operand(const Tensor& x0, const Shape& shape, DType to) {
  return av(x0).dtype == DType::Bool && av(x0).shape == shape && is_inexact(to) &&
         !upcast_around_fusion(to);
}

Tensor bool_mask(OpContext& cx, const Tensor& pred, const Tensor& y) {
  return bind(cx, Op::Select, {}, {pred, y, like(cx, y, Scalar::of_int(0))});
}

// The lax primitive JAX's binary operator reaches first (its broadcasting errors name it).
const char* lax_name(BinOp op) {
  switch (op) {
  case BinOp::Add:
    return "add";
  case BinOp::Sub:
    return "sub";
  case BinOp::Mul:
    return "mul";
  case BinOp::TrueDiv:
  case BinOp::FloorDiv:
    return "div";
  case BinOp::Mod:
    return "rem";
  case BinOp::Pow:
    return "pow";
  case BinOp::Maximum:
    return "max";
  case BinOp::Minimum:
    return "min";
  case BinOp::BitAnd:
    return "and";
  case BinOp::BitOr:
    return "or";
  case BinOp::BitXor:
    return "xor";
  case BinOp::LeftShift:
    return "shift_left";
  case BinOp::RightShift:
    return "shift_right_arithmetic";
  case BinOp::Eq:
    return "eq";
  case BinOp::Ne:
    return "ne";
  case BinOp::Lt:
    return "lt";
  case BinOp::Le:
    return "le";
  case BinOp::Gt:
    return "gt";
  case BinOp::Ge:
    return "ge";
  case BinOp::Arctan2:
    return "atan2";
  }
  return bin_name(op);
}

// JAX's texts: operands of one rank reach the lax primitive's shape rule, operands of
// different ranks fail in jnp's rank promotion.
void check_broadcastable(BinOp op, const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da == db || da == 1 || db == 1) continue;
    if (a.size() == b.size())
      throw Error(ErrCode::Shape, std::string(lax_name(op)) +
                                      " got incompatible shapes for broadcasting: " + shape_str(a) +
                                      ", " + shape_str(b) + ".");
    throw Error(ErrCode::Shape, "Incompatible shapes for broadcasting: shapes=[" + shape_str(a) +
                                    ", " + shape_str(b) + "]");
  }
}

} // namespace

// Whether jnp's division by a broadcast is rewritten here, as the XLA program
// it is compiled in would rewrite it. Eagerly, and under an eager vmap or
// reverse-mode derivative, JAX compiles the call alone (its batched, forward or
// transposed program): rewritten here. Under jit or pmap, and in a loop body,
// the division stays in the traced program (where grad differentiates JAX's
// division) and the whole program is rewritten (ir/simplify.cpp). XLA leaves a division by a
// broadcast scalar exact when the scalar has other uses, as in an eager jvp's program (the tangent
// is divided by it too): there only a divisor of more than one element is rewritten. Elsewhere
// (cond bodies, shard_map, custom_jvp functions: sub-programs the whole-program rewrites do not
// reach), rewritten.
bool rewrite_division_here(OpContext& cx, bool scalar_divisor) {
  static constexpr std::string_view see_through[] = {"vmap", "grad", "value_and_grad", "vjp"};
  static constexpr std::string_view whole_program[] = {"jit", "pmap", "while_loop"};
  auto in = [](std::string_view w, const auto& names) {
    return std::find(std::begin(names), std::end(names), w) != std::end(names);
  };
  OpContext* c = &cx;
  while (auto* t = dynamic_cast<TraceContext*>(c)) {
    if (in(t->what(), whole_program)) return false;
    if (t->what() == "jvp") return !scalar_divisor;
    if (!in(t->what(), see_through)) return true;
    c = &t->outer();
  }
  return true;
}

// exp or log; compiled alone by XLA (an eager op, or one of an op-by-op
// transform, called by the user rather than by a library composite), a small
// float32 vector's last elements take the C library's functions
// (OpAttrs::libm_tail).
namespace {
Tensor exp_or_log(OpContext& cx, Op op, const Tensor& x) {
  OpAttrs a;
  const AVal& xa = av(x);
  a.libm_tail = xa.dtype == DType::Float32 &&
                ref::xla::libm_tail_start(static_cast<int64_t>(xa.ndim()), xa.size()) >= 0 &&
                !cx.library_call && rewrite_division_here(cx, false);
  return bind(cx, op, a, {x});
}
} // namespace

Tensor times_reciprocal(OpContext& cx, const Tensor& a, const Tensor& divisor) {
  Tensor inv = p2(cx, Op::Div, like(cx, divisor, Scalar::of_int(1)), divisor);
  return p2(cx, Op::Mul, a, broadcast(cx, inv, av(a).shape, "true_divide"));
}

Tensor integer_pow(OpContext& cx, const Tensor& x, int64_t n) {
  OpAttrs a;
  a.exponent = n;
  return bind(cx, Op::IntegerPow, a, {x});
}

// lax.pow: the pow primitive itself, also for a known integer exponent (which
// jnp.power makes an integer_pow); an integer exponent takes the base's type.
// The result is weak when both operands are.
Tensor lax_pow(OpContext& cx, const Tensor& x, const Tensor& y) {
  OpAttrs at;
  at.int_exponent = is_integer(av(y).dtype);
  bool weak = av(x).weak && av(y).weak;
  Shape shape = broadcast_shapes("pow", av(x).shape, av(y).shape);
  Tensor a = broadcast(cx, convert(cx, x, av(x).dtype, weak), shape, "pow");
  Tensor b = broadcast(cx, convert(cx, y, av(x).dtype, weak), shape, "pow");
  return bind(cx, Op::Pow, at, {a, b});
}

Tensor binary(OpContext& cx, BinOp op, const Tensor& a0, const Tensor& b0) {
  const char* fn = bin_name(op);
  bool int_pow = false; // jnp.power with a concrete integer scalar exponent
  PromotedType p = promote_types(av(a0).dtype, av(a0).weak, av(b0).dtype, av(b0).weak);
  check_broadcastable(op, av(a0).shape, av(b0).shape); // before the dtype checks, as JAX
  switch (op) {
  case BinOp::TrueDiv:
  case BinOp::Arctan2:
    p = to_inexact(p);
    break;
  case BinOp::BitAnd:
  case BinOp::BitOr:
  case BinOp::BitXor:
    if (is_inexact(p.dtype)) lax_dtype_error0(lax_name(op), p.dtype, "integer, bool");
    break;
  case BinOp::LeftShift:
  case BinOp::RightShift:
    if (p.dtype == DType::Bool) p = {DType::Int32, false}; // jnp's promote_args_numeric
    if (!is_integer(p.dtype)) lax_dtype_error0(lax_name(op), p.dtype, "integer");
    break;
  case BinOp::Sub:
    if (p.dtype == DType::Bool)
      lax_dtype_error0("sub", p.dtype, "integer, floating, complexfloating");
    break;
  case BinOp::FloorDiv:
    if (is_complex(p.dtype))
      throw Error(ErrCode::Type, "floor_divide does not support complex-valued inputs");
    if (p.dtype == DType::Bool) p = {DType::Int32, false};
    break;
  case BinOp::Mod:
    if (is_complex(p.dtype)) lax_dtype_error0("rem", p.dtype, "integer, floating");
    if (p.dtype == DType::Bool) p = {DType::Int32, false};
    break;
  case BinOp::Pow: {
    // As jnp.power: a concrete integer (or bool) scalar exponent makes it
    // lax.integer_pow of the base alone, so the result has the base's dtype and
    // weak type (a bool base becomes int32). Otherwise integer powers go through
    // JAX's _pow_int_int, whose strongly typed constants make the result strong.
    int_pow = b0->concrete && av(b0).ndim() == 0 &&
              (is_integer(av(b0).dtype) || av(b0).dtype == DType::Bool);
    if (int_pow)
      p = av(a0).dtype == DType::Bool ? PromotedType{DType::Int32, false}
                                      : PromotedType{av(a0).dtype, av(a0).weak};
    if (p.dtype == DType::Bool) p = {DType::Int32, false};
    if (!int_pow && is_integer(p.dtype)) p.weak = false;
    // A known integer exponent makes jnp.power an integer_pow, which refuses
    // negative powers of integers: its shape rule raises JAX's TypeError (also
    // for exponents beyond int_pow's range, which JAX sends to integer_pow too).
    if (is_integer(p.dtype) && av(b0).ndim() == 0 && b0->concrete && is_integer(av(b0).dtype) &&
        b0->concrete->get(0).i < 0) {
      OpAttrs ip;
      ip.exponent = b0->concrete->get(0).i;
      AVal base{p.dtype, av(a0).shape, false};
      infer(Op::IntegerPow, ip, std::span<const AVal>(&base, 1));
    }
    break;
  }
  default:
    break;
  }
  Shape shape = broadcast_shapes(fn, av(a0).shape, av(b0).shape);
  Tensor a = broadcast(cx, convert(cx, a0, p.dtype, p.weak), shape, fn);
  Tensor b = broadcast(cx, convert(cx, b0, p.dtype, p.weak), shape, fn);
  bool is_bool = p.dtype == DType::Bool;
  switch (op) {
  case BinOp::Add:
    return p2(cx, is_bool ? Op::Or : Op::Add, a, b); // logical for bool, as jnp
  case BinOp::Sub:
    return p2(cx, Op::Sub, a, b);
  case BinOp::Mul:
    if (bool_operand(a0, shape, p.dtype)) return bool_mask(cx, a0, b);
    if (bool_operand(b0, shape, p.dtype)) return bool_mask(cx, b0, a);
    // XLA's complex multiply fuses a product of the imaginary part by whether
    // an operand is a broadcast scalar, which takes the right-hand side.
    if (is_complex(p.dtype) && (av(a0).size() == 1) != (av(b0).size() == 1)) {
      OpAttrs scalar;
      (av(a0).size() == 1 ? scalar.scalar_lhs : scalar.scalar_rhs) = true;
      return bind(cx, Op::Mul, scalar, {a, b});
    }
    return p2(cx, is_bool ? Op::And : Op::Mul, a, b);
  case BinOp::TrueDiv: {
    // XLA's algebraic simplifier rewrites A / broadcast(B) as A * broadcast(1 / B). A
    // broadcast that only adds size-1 dimensions ((4,) to (1, 4)) is a reshape to XLA, and
    // the division stays exact. Here, or in the program it ends up in
    // (rewrite_division_here).
    // bfloat16 (and float8) arithmetic is upcast to float32 around the fusion,
    // so 1 / B stays unrounded.
    bool bf16 = upcast_around_fusion(p.dtype);
    if (is_floating(p.dtype) && av(b0).size() != shape_size(shape) &&
        (rewrite_division_here(cx, av(b0).size() == 1) || bf16)) {
      Tensor bc = convert(cx, b0, p.dtype, p.weak);
      bool bool_a = bool_operand(a0, shape, p.dtype);
      if (!bf16 && !bool_a) return times_reciprocal(cx, a, bc);
      if (bf16) bc = convert(cx, bc, DType::Float32, false);
      Tensor inv = p2(cx, Op::Div, like(cx, bc, Scalar::of_int(1)), bc);
      if (bool_a) return bool_mask(cx, a0, broadcast(cx, inv, shape, fn));
      Tensor prod =
          p2(cx, Op::Mul, convert(cx, a, DType::Float32, false), broadcast(cx, inv, shape, fn));
      return convert(cx, prod, p.dtype, p.weak);
    }
    return p2(cx, Op::Div, a, b);
  }
  case BinOp::FloorDiv:
    return floor_divide(cx, a, b);
  case BinOp::Mod:
    return remainder(cx, a, b);
  case BinOp::Pow: {
    if (int_pow) return integer_pow(cx, a, b0->concrete->get(0).i);
    OpAttrs at; // JAX's case of an inexact base and an integer exponent: lax.pow(x1, x2)
    at.int_exponent = is_inexact(av(a0).dtype) && is_integer(av(b0).dtype);
    return bind(cx, Op::Pow, at, {a, b});
  }
  case BinOp::Maximum:
    return p2(cx, Op::Max, a, b);
  case BinOp::Minimum:
    return p2(cx, Op::Min, a, b);
  case BinOp::BitAnd:
    return p2(cx, Op::And, a, b);
  case BinOp::BitOr:
    return p2(cx, Op::Or, a, b);
  case BinOp::BitXor:
    return p2(cx, Op::Xor, a, b);
  case BinOp::LeftShift:
    return p2(cx, Op::ShiftLeft, a, b);
  case BinOp::RightShift: // numpy's >>: sign-extending for signed integers
    // (jnp asks numpy, for which ml_dtypes' uint2/uint4 are no unsigned integers)
    return p2(cx,
              is_unsigned_int(p.dtype) && !is_narrow_int(p.dtype) ? Op::ShiftRightLogical
                                                                  : Op::ShiftRightArithmetic,
              a, b);
  case BinOp::Eq:
    return p2(cx, Op::Eq, a, b);
  case BinOp::Ne:
    return p2(cx, Op::Ne, a, b);
  case BinOp::Lt:
    return p2(cx, Op::Lt, a, b);
  case BinOp::Le:
    return p2(cx, Op::Le, a, b);
  case BinOp::Gt:
    return p2(cx, Op::Gt, a, b);
  case BinOp::Ge:
    return p2(cx, Op::Ge, a, b);
  case BinOp::Arctan2:
    if (is_complex(p.dtype)) return complex_atan2(cx, a, b);
    return p2(cx, Op::Atan2, a, b);
  }
  return a;
}

Tensor unary(OpContext& cx, UnOp op, const Tensor& x0) {
  DType d = av(x0).dtype;
  bool is_bool = d == DType::Bool, is_int = is_integer(d);
  // Transcendental functions promote ints/bools to float32 (keeping weak type).
  auto inexact = [&] { return convert(cx, x0, is_inexact(d) ? d : DType::Float32, av(x0).weak); };
  switch (op) {
  case UnOp::Neg:
    if (is_bool) lax_dtype_error("neg", d, "integer, floating, complexfloating");
    return p1(cx, Op::Neg, x0);
  case UnOp::Pos:
    return x0;
  case UnOp::Invert:
    if (!is_bool && !is_int) lax_dtype_error("not", d, "integer, bool");
    return p1(cx, Op::Not, x0);
  case UnOp::Exp:
    return exp_or_log(cx, Op::Exp, inexact());
  case UnOp::Log:
    return exp_or_log(cx, Op::Log, inexact());
  case UnOp::Log1p:
    return p1(cx, Op::Log1p, inexact());
  case UnOp::Expm1:
    return p1(cx, Op::Expm1, inexact());
  case UnOp::Sqrt:
    return p1(cx, Op::Sqrt, inexact());
  case UnOp::Rsqrt:
    return p1(cx, Op::Rsqrt, inexact());
  case UnOp::Tanh:
    return p1(cx, Op::Tanh, inexact());
  case UnOp::Sin:
    return p1(cx, Op::Sin, inexact());
  case UnOp::Cos:
    return p1(cx, Op::Cos, inexact());
  case UnOp::Tan:
    return p1(cx, Op::Tan, inexact());
  case UnOp::Cbrt:
    if (is_complex(d)) lax_dtype_error("cbrt", d, "floating");
    return p1(cx, Op::Cbrt, inexact());
  case UnOp::Logistic: {
    Tensor x = inexact();
    if (!is_complex(av(x).dtype)) return p1(cx, Op::Logistic, x);
    // The logistic primitive is real-only here; a complex operand takes
    // JAX's own expansion, 1 / (1 + exp(-x)), whose derivatives follow.
    Tensor one = like(cx, x, Scalar::of_int(1));
    return p2(cx, Op::Div, one, p2(cx, Op::Add, one, p1(cx, Op::Exp, p1(cx, Op::Neg, x))));
  }
  case UnOp::Erf:
    return p1(cx, Op::Erf, inexact());
  case UnOp::ErfInv:
    return p1(cx, Op::ErfInv, inexact());
  case UnOp::Reciprocal: {
    Tensor x = inexact();
    return p2(cx, Op::Div, like(cx, x, Scalar::of_int(1)), x);
  }
  case UnOp::Abs:
    if (is_bool || is_unsigned_int(d)) return x0;
    return p1(cx, Op::Abs, x0);
  case UnOp::Sign:
    if (is_bool) lax_dtype_error("sign", d, "integer, floating, complexfloating");
    return p1(cx, Op::Sign, x0);
  // Rounding is the identity on ints and bools (jnp keeps their dtype);
  // complex values round part by part, and have no floor or ceiling (JAX).
  case UnOp::Floor:
    if (is_complex(d)) lax_dtype_error("floor", d, "floating");
    return is_floating(d) ? p1(cx, Op::Floor, x0) : x0;
  case UnOp::Ceil:
    if (is_complex(d)) lax_dtype_error("ceil", d, "floating");
    return is_floating(d) ? p1(cx, Op::Ceil, x0) : x0;
  case UnOp::Round:
    if (is_complex(d))
      return p2(cx, Op::Complex, p1(cx, Op::Round, p1(cx, Op::Real, x0)),
                p1(cx, Op::Round, p1(cx, Op::Imag, x0)));
    return is_floating(d) ? p1(cx, Op::Round, x0) : x0;
  // The weak types follow JAX's definitions: isnan is lax.ne(x, x) (weak for a weak x);
  // isfinite is lax.is_finite (weak for a weak float), or a strong full_like for ints;
  // isinf compares |x| with a strong constant (strong), part by part for complex values
  // (|z| itself would overflow for large finite parts).
  case UnOp::IsNan:
    if (!is_inexact(d))
      return fill(cx, av(x0).shape, Scalar::of_bool(false), DType::Bool, av(x0).weak);
    return p2(cx, Op::Ne, x0, x0);
  case UnOp::IsFinite:
    if (!is_inexact(d)) return fill(cx, av(x0).shape, Scalar::of_bool(true), DType::Bool, false);
    return convert(cx, p1(cx, Op::IsFinite, x0), DType::Bool, av(x0).weak);
  case UnOp::IsInf: {
    if (!is_inexact(d)) return fill(cx, av(x0).shape, Scalar::of_bool(false), DType::Bool, false);
    auto part_inf = [&](const Tensor& p) {
      Tensor ap = p1(cx, Op::Abs, p);
      Tensor inf = fill(cx, av(ap).shape, Scalar::of_float(std::numeric_limits<double>::infinity()),
                        av(ap).dtype, false);
      return p2(cx, Op::Eq, ap, inf);
    };
    if (!is_complex(d)) return part_inf(x0);
    return p2(cx, Op::Or, part_inf(p1(cx, Op::Real, x0)), part_inf(p1(cx, Op::Imag, x0)));
  }
  case UnOp::Square: {
    Tensor x = is_bool ? convert(cx, x0, DType::Int32, false) : x0; // jnp squares bools as int32
    return p1(cx, Op::Square, x);
  }
  case UnOp::LogicalNot: // JAX's lax.ne(x, _const(x, 0)): a weak constant only for a 0-d x
    if (is_bool) return p1(cx, Op::Not, x0);
    return p2(cx, Op::Eq, x0,
              fill(cx, av(x0).shape, Scalar::of_int(0), d, av(x0).weak && av(x0).shape.empty()));
  }
  return x0;
}

Tensor where(OpContext& cx, const Tensor& cond0, const Tensor& a0, const Tensor& b0) {
  Tensor cond = cond0;
  if (av(cond).dtype != DType::Bool) cond = p2(cx, Op::Ne, cond, like(cx, cond, Scalar::of_int(0)));
  PromotedType p = promote_types(av(a0).dtype, av(a0).weak, av(b0).dtype, av(b0).weak);
  // As JAX's _where: a 0-d condition is not broadcast with the operands (so
  // an error names their shapes only).
  Shape shape = av(cond).shape.empty()
                    ? broadcast_shapes_all({av(a0).shape, av(b0).shape})
                    : broadcast_shapes_all({av(cond).shape, av(a0).shape, av(b0).shape});
  Tensor a = broadcast(cx, convert(cx, a0, p.dtype, p.weak), shape, "where");
  Tensor b = broadcast(cx, convert(cx, b0, p.dtype, p.weak), shape, "where");
  return bind(cx, Op::Select, {}, {broadcast(cx, cond, shape, "where"), a, b});
}

Tensor clip(OpContext& cx, const Tensor& x, const std::optional<Tensor>& lo,
            const std::optional<Tensor>& hi) {
  // As JAX's jnp.clip: complex values have no order, whichever argument carries them.
  for (const Tensor* t : {&x, lo ? &*lo : nullptr, hi ? &*hi : nullptr})
    if (t && is_complex(av(*t).dtype))
      throw Error(ErrCode::Value,
                  "Clip received a complex value either through the input or the min/max keywords. "
                  "Complex values have no ordering and cannot be clipped. Please convert to a real "
                  "value or array by taking the real or imaginary components via "
                  "jax.numpy.real/imag respectively.");
  Tensor out = x;
  if (lo) out = binary(cx, BinOp::Maximum, *lo, out);
  if (hi) out = binary(cx, BinOp::Minimum, *hi, out);
  return out;
}

} // namespace pxl::np
