// Python's arithmetic and comparison operators on host values; any operand
// that is an array sends the operation to the array namespace (np).
#include <cmath>

#include "lang/bigint.hpp"
#include "lang/dict_equal.hpp"
#include "lang/interp_impl.hpp"
#include "lang/op_location.hpp"
#include "lang/py_complex.hpp"
#include "lang/py_set.hpp"
#include "runtime/eager.hpp"
#include "stdlib/lax_precision.hpp"
#include "stdlib/np.hpp"
#include "stdlib/strict_promotion.hpp"

namespace pxl {

bool same_class(const Value& a, const Value& b); // lang/builtins.cpp

namespace {

[[noreturn]] void unsupported(const char* sym, const Value& a, const Value& b, const Span& where) {
  throw Error(ErrCode::Type,
              std::string("unsupported operand type(s) for ") + sym + ": '" + type_name(a) +
                  "' and '" + type_name(b) + "'",
              where);
}

// JAX's arrays refuse lists, tuples, dicts and sets as operands (TypeError), naming
// the array's type as Python does: 'ArrayImpl' where jaxlib raises (+ and * of a
// list or tuple, == and != of any), 'jaxlib._jax.ArrayImpl' where the array's
// method returns NotImplemented and Python raises.
bool rejected_operand(const Value& v) {
  return v.is_obj(ObjKind::List) || v.is_obj(ObjKind::Tuple) || v.is_obj(ObjKind::Dict) ||
         py_set_items(v);
}

std::string jax_type_name(const Value& v, bool short_name) {
  if (!v.is_obj(ObjKind::Array)) return type_name(v);
  return short_name ? "ArrayImpl" : "jaxlib._jax.ArrayImpl";
}

[[noreturn]] void rejected(const std::string& msg, const Span& where) {
  throw Error(ErrCode::Type, msg, where);
}

int64_t floordiv_i(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// Python's modulo (the sign of the divisor) from C's remainder: a - (a // b) * b
// would overflow for a near INT64_MIN although the result is small. b != 0, -1.
int64_t floormod_i(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// JAX's array operators are jitted functions of both operands: a Python int
// operand beyond int32 (x64 is off) fails as the jit parses it.
void check_jit_int(const Value& v, const char* path, const Span& where) {
  if (is_bigint(v) || (v.is_int() && (v.i > INT32_MAX || v.i < INT32_MIN)))
    throw Error(ErrCode::Value,
                std::string("An overflow was encountered while parsing an argument to a jitted "
                            "computation, whose argument path is ") +
                    path + ". Got <class 'int'> with value " + repr(v),
                where);
}

double py_fmod(double a, double b) {
  double m = std::fmod(a, b);
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  if (m == 0) m = std::copysign(0.0, b);
  return m;
}

// The primitive JAX's error names for an operator's jnp function (x + y is
// jnp.add's jit), for the operators whose names it knows.
std::optional<Op> error_op(BinOpKind op) {
  switch (op) {
  case BinOpKind::Add:
    return Op::Add;
  case BinOpKind::Sub:
    return Op::Sub;
  case BinOpKind::Mul:
    return Op::Mul;
  case BinOpKind::Div:
    return Op::Div;
  case BinOpKind::Mod:
    return Op::Rem;
  case BinOpKind::Pow:
    return Op::Pow;
  case BinOpKind::BitAnd:
    return Op::And;
  case BinOpKind::BitOr:
    return Op::Or;
  case BinOpKind::BitXor:
    return Op::Xor;
  default:
    return std::nullopt;
  }
}

// JAX's committed arrays: put on purpose (device_put), or not on the default device.
bool committed_single(const Value& v) {
  if (!v.is_obj(ObjKind::Array)) return false;
  const auto* a = v.as<ArrayObj>();
  return a->tensor->concrete && !a->tensor->sharded &&
         (a->committed || a->tensor->concrete->device() != 0);
}

np::BinOp to_np(BinOpKind op) {
  switch (op) {
  case BinOpKind::Add:
    return np::BinOp::Add;
  case BinOpKind::Sub:
    return np::BinOp::Sub;
  case BinOpKind::Mul:
    return np::BinOp::Mul;
  case BinOpKind::Div:
    return np::BinOp::TrueDiv;
  case BinOpKind::FloorDiv:
    return np::BinOp::FloorDiv;
  case BinOpKind::Mod:
    return np::BinOp::Mod;
  case BinOpKind::Pow:
    return np::BinOp::Pow;
  case BinOpKind::BitAnd:
    return np::BinOp::BitAnd;
  case BinOpKind::BitOr:
    return np::BinOp::BitOr;
  case BinOpKind::BitXor:
    return np::BinOp::BitXor;
  case BinOpKind::LShift:
    return np::BinOp::LeftShift;
  case BinOpKind::RShift:
    return np::BinOp::RightShift;
  case BinOpKind::MatMul:
    break;
  }
  return np::BinOp::Add;
}

np::BinOp cmp_to_np(CmpOpKind op) {
  switch (op) {
  case CmpOpKind::Eq:
    return np::BinOp::Eq;
  case CmpOpKind::Ne:
    return np::BinOp::Ne;
  case CmpOpKind::Lt:
    return np::BinOp::Lt;
  case CmpOpKind::Le:
    return np::BinOp::Le;
  case CmpOpKind::Gt:
    return np::BinOp::Gt;
  case CmpOpKind::Ge:
    return np::BinOp::Ge;
  default:
    return np::BinOp::Eq;
  }
}

// Python's float operators (an int operand already converted).
Value float_binary(BinOpKind op, double x, double y, const Value& a, const Value& b,
                   const char* sym, const Span& where) {
  switch (op) {
  case BinOpKind::Add:
    return Value::number(x + y);
  case BinOpKind::Sub:
    return Value::number(x - y);
  case BinOpKind::Mul:
    return Value::number(x * y);
  case BinOpKind::Div:
    if (y == 0) throw Error(ErrCode::ZeroDivision, "float division by zero", where);
    return Value::number(x / y);
  case BinOpKind::FloorDiv:
    if (y == 0) throw Error(ErrCode::ZeroDivision, "float floor division by zero", where);
    return Value::number(std::floor(x / y));
  case BinOpKind::Mod:
    if (y == 0) throw Error(ErrCode::ZeroDivision, "float modulo by zero", where);
    return Value::number(py_fmod(x, y));
  case BinOpKind::Pow:
    if (x == 0 && y < 0)
      throw Error(ErrCode::ZeroDivision, "0.0 cannot be raised to a negative power", where);
    if (x < 0 && std::floor(y) != y)
      throw Error(ErrCode::Value,
                  "negative number cannot be raised to a fractional power (complex numbers are "
                  "not supported)",
                  where);
    return Value::number(std::pow(x, y));
  default:
    break;
  }
  unsupported(sym, a, b, where); // (@ and the bitwise operators)
}

Value repeat_seq(const ValueList& items, int64_t n, bool tuple) {
  ValueList out;
  // n > limit / size, not size * n > limit: the product wraps for huge n (2**62 copies hung).
  if (n > 0 && !items.empty() && static_cast<size_t>(n) > (size_t{1} << 27) / items.size())
    throw Error(ErrCode::Value, "sequence repetition result is too large");
  for (int64_t k = 0; !items.empty() && k < n; ++k)
    out.insert(out.end(), items.begin(), items.end());
  return tuple ? make_tuple(std::move(out)) : make_list(std::move(out));
}

// An operand that is an array-like object (a typed PRNG key array) decides the
// operator first: returns true and sets `out` when it did.
bool opaque_operator(InterpreterImpl& in, const std::string& op, const Value& a, const Value& b,
                     Value& out, const Span& where) {
  try {
    if (a.is_obj(ObjKind::Opaque) && a.as<OpaqueObj>()->apply_operator(in, op, b, true, out))
      return true;
    if (b.is_obj(ObjKind::Opaque) && b.as<OpaqueObj>()->apply_operator(in, op, a, false, out))
      return true;
  } catch (Error& e) {
    // An operator written in pxl's standard library (a sparse array's) points
    // at the user's expression, as an error in a stdlib function does.
    if (e.has_span() && e.span().file->path().rfind("<stdlib>/", 0) == 0)
      e.add_trace({where, "operator"});
    e.set_span_if_missing(where);
    throw;
  }
  return false;
}

const char* binop_dunder(BinOpKind op) {
  switch (op) {
  case BinOpKind::Add:
    return "add";
  case BinOpKind::Sub:
    return "sub";
  case BinOpKind::Mul:
    return "mul";
  case BinOpKind::Div:
    return "truediv";
  case BinOpKind::FloorDiv:
    return "floordiv";
  case BinOpKind::Mod:
    return "mod";
  case BinOpKind::Pow:
    return "pow";
  case BinOpKind::BitAnd:
    return "and";
  case BinOpKind::BitOr:
    return "or";
  case BinOpKind::BitXor:
    return "xor";
  case BinOpKind::LShift:
    return "lshift";
  case BinOpKind::RShift:
    return "rshift";
  case BinOpKind::MatMul:
    return "matmul";
  }
  return "";
}

const char* cmpop_dunder(CmpOpKind op) {
  switch (op) {
  case CmpOpKind::Eq:
    return "eq";
  case CmpOpKind::Ne:
    return "ne";
  case CmpOpKind::Lt:
    return "lt";
  case CmpOpKind::Le:
    return "le";
  case CmpOpKind::Gt:
    return "gt";
  case CmpOpKind::Ge:
    return "ge";
  default:
    return "";
  }
}

} // namespace

bool InterpreterImpl::is_array_like(const Value& v) const { return v.is_obj(ObjKind::Array); }

// Two Counters' + - | & (Python's): the counts added, subtracted, their
// maximum or minimum, keeping positive results only, a's keys first.
static bool counter_op(InterpreterImpl& in, BinOpKind op, const DictObj& a, const DictObj& b,
                       Value& out, const Span& where) {
  if (op != BinOpKind::Add && op != BinOpKind::Sub && op != BinOpKind::BitOr &&
      op != BinOpKind::BitAnd)
    return false;
  const BinOpKind how = op;
  auto r = std::make_shared<DictObj>();
  r->counter = true;
  const Value zero = Value::integer(0);
  auto combine = [&](const Value& x, const Value& y) {
    if (how == BinOpKind::Add || how == BinOpKind::Sub) return in.binary_op(how, x, y, where);
    bool x_wins = in.less_than(y, x, where) == (how == BinOpKind::BitOr);
    return x_wins ? x : y;
  };
  auto keep = [&](const Value& k, const Value& n) {
    if (in.less_than(zero, n, where)) r->set(k, n);
  };
  a.for_each([&](const Value& k, const Value& n) {
    const Value* m = b.find(k);
    keep(k, combine(n, m ? *m : zero));
  });
  b.for_each([&](const Value& k, const Value& n) {
    if (a.find(k)) return;
    if (how == BinOpKind::Sub)
      keep(k, in.binary_op(BinOpKind::Sub, zero, n, where));
    else if (how != BinOpKind::BitAnd)
      keep(k, n);
  });
  out = Value::object(r);
  return true;
}

Value InterpreterImpl::binary_op(BinOpKind op, const Value& a, const Value& b, const Span& where) {
  const char* sym = binop_symbol(op);
  if (Value r; opaque_operator(*this, binop_dunder(op), a, b, r, where)) return r;
  if (op == BinOpKind::Mod && a.is_obj(ObjKind::Str))
    return make_str(percent_format(a.as<StrObj>()->value, b, where));
  if (a.is_obj(ObjKind::Dict) && b.is_obj(ObjKind::Dict) && a.as<DictObj>()->counter &&
      b.as<DictObj>()->counter)
    if (Value r; counter_op(*this, op, *a.as<DictObj>(), *b.as<DictObj>(), r, where)) return r;
  // Arrays: the array namespace decides (broadcasting, promotion, weak types).
  if (a.is_obj(ObjKind::Array) || b.is_obj(ObjKind::Array)) {
    if (rejected_operand(a) || rejected_operand(b)) {
      auto seq = [](const Value& v) { return v.is_obj(ObjKind::List) || v.is_obj(ObjKind::Tuple); };
      bool short_name = (op == BinOpKind::Add || op == BinOpKind::Mul) && (seq(a) || seq(b));
      std::string s = op == BinOpKind::Pow ? "** or pow()" : sym;
      rejected("unsupported operand type(s) for " + s + ": '" + jax_type_name(a, short_name) +
                   "' and '" + jax_type_name(b, short_name) + "'",
               where);
    }
    if ((!a.is_number() && !is_bigint(a) && !is_py_complex(a) && !a.is_obj(ObjKind::Array) &&
         !a.is_obj(ObjKind::List) && !a.is_obj(ObjKind::Tuple)) ||
        (!b.is_number() && !is_bigint(b) && !is_py_complex(b) && !b.is_obj(ObjKind::Array) &&
         !b.is_obj(ObjKind::List) && !b.is_obj(ObjKind::Tuple)))
      unsupported(sym, a, b, where);
    check_jit_int(a, "x", where);
    check_jit_int(b, "y", where);
    try {
      LocScope loc(ops(), op_location(ops(), where));
      Tensor x = to_tensor(a, where);
      // A Python int exponent stays concrete inside a trace (jnp.power then
      // lowers to integer_pow, which keeps the base's weak type).
      bool int_exponent =
          op == BinOpKind::Pow && b.is_int() && b.i >= INT32_MIN && b.i <= INT32_MAX;
      Tensor y = int_exponent ? make_tensor(Array::scalar(Scalar::of_int(b.i), DType::Int32, true))
                              : to_tensor(b, where);
      if (op == BinOpKind::MatMul) {
        strict_check_join(*this, {x, y});
        return make_array(np::matmul(ops(), x, y, dot_precision(*this, Value())));
      }
      // Operands committed to two devices are JAX's error (the runtime sees
      // only placements, so one committed to the default device is caught
      // here); a result with a committed operand is committed, as JAX's.
      bool ca = committed_single(a), cb = committed_single(b);
      if (ca && cb && x->concrete->device() != y->concrete->device())
        if (std::optional<Op> eop = error_op(op)) {
          Tensor both[] = {x, y};
          throw Error(ErrCode::Value, incompatible_devices_message(*eop, both, 0, 1));
        }
      strict_promote_pair(*this, x, y); // under 'strict': JAX's lattice, or its error
      Value out = make_array(np::binary(ops(), to_np(op), x, y));
      if ((ca || cb) && out.as<ArrayObj>()->tensor->concrete) out.as<ArrayObj>()->committed = true;
      return out;
    } catch (Error& e) {
      e.set_span_if_missing(where);
      throw;
    }
  }
  if ((is_py_complex(a) && (b.is_number() || is_py_complex(b))) ||
      (is_py_complex(b) && a.is_number()))
    return complex_binary(op, a, b, where);
  if ((is_bigint(a) || is_bigint(b)) && (is_py_int(a) || a.is_float()) &&
      (is_py_int(b) || b.is_float())) {
    if (!a.is_float() && !b.is_float()) return bigint_binary(op, to_bigint(a), to_bigint(b), where);
    auto to_double = [&](const Value& v) {
      try {
        return v.is_float() ? v.f : bigint_to_double(to_bigint(v));
      } catch (Error& e) {
        e.set_span_if_missing(where);
        throw;
      }
    };
    return float_binary(op, to_double(a), to_double(b), a, b, sym, where);
  }
  if (a.is_number() && b.is_number()) {
    bool ints = a.is_intlike() && b.is_intlike();
    if (ints) {
      int64_t x = a.as_int(), y = b.as_int(), r = 0;
      switch (op) {
      case BinOpKind::Add:
        if (__builtin_add_overflow(x, y, &r)) return bigint_binary(op, BigInt(x), BigInt(y), where);
        return Value::integer(r);
      case BinOpKind::Sub:
        if (__builtin_sub_overflow(x, y, &r)) return bigint_binary(op, BigInt(x), BigInt(y), where);
        return Value::integer(r);
      case BinOpKind::Mul:
        if (__builtin_mul_overflow(x, y, &r)) return bigint_binary(op, BigInt(x), BigInt(y), where);
        return Value::integer(r);
      case BinOpKind::Div: {
        if (y == 0) throw Error(ErrCode::ZeroDivision, "division by zero", where);
        // Exact in doubles up to 2**53; beyond, Python rounds the true quotient.
        const int64_t exact = int64_t{1} << 53;
        if (x > exact || x < -exact || y > exact || y < -exact)
          return Value::number(int_true_divide(BigInt(x), BigInt(y), where));
        return Value::number(static_cast<double>(x) / static_cast<double>(y));
      }
      case BinOpKind::FloorDiv:
        if (y == 0) throw Error(ErrCode::ZeroDivision, "integer division or modulo by zero", where);
        if (x == INT64_MIN && y == -1) return bigint_binary(op, BigInt(x), BigInt(y), where);
        return Value::integer(floordiv_i(x, y));
      case BinOpKind::Mod:
        if (y == 0) throw Error(ErrCode::ZeroDivision, "integer modulo by zero", where);
        if (y == -1) return Value::integer(0);
        return Value::integer(floormod_i(x, y));
      case BinOpKind::Pow: {
        if (y < 0) {
          if (x == 0)
            throw Error(ErrCode::ZeroDivision, "0 cannot be raised to a negative power", where);
          return Value::number(std::pow(static_cast<double>(x), static_cast<double>(y)));
        }
        int64_t result = 1, base = x, e = y;
        while (e > 0) {
          if ((e & 1) && __builtin_mul_overflow(result, base, &result))
            return bigint_binary(op, BigInt(x), BigInt(y), where);
          e >>= 1;
          if (e && __builtin_mul_overflow(base, base, &base))
            return bigint_binary(op, BigInt(x), BigInt(y), where);
        }
        return Value::integer(result);
      }
      case BinOpKind::BitAnd:
        return a.is_bool() && b.is_bool() ? Value::boolean(a.b && b.b) : Value::integer(x & y);
      case BinOpKind::BitOr:
        return a.is_bool() && b.is_bool() ? Value::boolean(a.b || b.b) : Value::integer(x | y);
      case BinOpKind::BitXor:
        return a.is_bool() && b.is_bool() ? Value::boolean(a.b != b.b) : Value::integer(x ^ y);
      case BinOpKind::LShift:
        if (y < 0) throw Error(ErrCode::Value, "negative shift count", where);
        if (x != 0 && (y >= 63 || x > (INT64_MAX >> y) || x < (INT64_MIN >> y)))
          return bigint_binary(op, BigInt(x), BigInt(y), where);
        return Value::integer(x == 0 ? 0 : x << y);
      case BinOpKind::RShift:
        if (y < 0) throw Error(ErrCode::Value, "negative shift count", where);
        return Value::integer(y >= 63 ? (x < 0 ? -1 : 0) : x >> y);
      case BinOpKind::MatMul:
        unsupported(sym, a, b, where);
      }
    }
    return float_binary(op, a.as_float(), b.as_float(), a, b, sym, where);
  }
  // Sequences and strings.
  if (op == BinOpKind::Add) {
    if (a.is_obj(ObjKind::Str) && b.is_obj(ObjKind::Str))
      return make_str(a.as<StrObj>()->value + b.as<StrObj>()->value);
    if (a.is_obj(ObjKind::List) && b.is_obj(ObjKind::List)) {
      ValueList out = a.as<ListObj>()->items;
      out.insert(out.end(), b.as<ListObj>()->items.begin(), b.as<ListObj>()->items.end());
      return make_list(std::move(out));
    }
    if (a.is_obj(ObjKind::Tuple) && b.is_obj(ObjKind::Tuple)) {
      ValueList out = a.as<TupleObj>()->items;
      out.insert(out.end(), b.as<TupleObj>()->items.begin(), b.as<TupleObj>()->items.end());
      return make_tuple(std::move(out));
    }
  }
  if (op == BinOpKind::Mul) {
    const Value& seq = a.is_intlike() || is_bigint(a) ? b : a;
    const Value& n = a.is_intlike() || is_bigint(a) ? a : b;
    if (is_bigint(n) &&
        (seq.is_obj(ObjKind::Str) || seq.is_obj(ObjKind::List) || seq.is_obj(ObjKind::Tuple)))
      throw Error(ErrCode::Value, "cannot fit 'int' into an index-sized integer", where);
    if (n.is_intlike()) {
      if (seq.is_obj(ObjKind::Str)) {
        std::string out;
        int64_t k = n.as_int();
        size_t len = seq.as<StrObj>()->value.size();
        if (k > 0 && len > 0 && static_cast<size_t>(k) > (size_t{1} << 30) / len)
          throw Error(ErrCode::Value, "string repetition result is too large", where);
        for (int64_t i = 0; len > 0 && i < k; ++i) out += seq.as<StrObj>()->value;
        return make_str(out);
      }
      try {
        if (seq.is_obj(ObjKind::List))
          return repeat_seq(seq.as<ListObj>()->items, n.as_int(), false);
        if (seq.is_obj(ObjKind::Tuple))
          return repeat_seq(seq.as<TupleObj>()->items, n.as_int(), true);
      } catch (Error& e) {
        e.set_span_if_missing(where);
        throw;
      }
    }
  }
  unsupported(sym, a, b, where);
}

Value InterpreterImpl::unary_op(UnaryOpKind op, const Value& a, const Span& where) {
  static const char* dunder[] = {"neg", "pos", "invert", ""};
  if (Value r; op != UnaryOpKind::Not &&
               opaque_operator(*this, dunder[static_cast<int>(op)], a, Value(), r, where))
    return r;
  if (a.is_obj(ObjKind::Array)) {
    try {
      LocScope loc(ops(), op_location(ops(), where));
      const Tensor& t = a.as<ArrayObj>()->tensor;
      switch (op) {
      case UnaryOpKind::Neg:
        return make_array(np::unary(ops(), np::UnOp::Neg, t));
      case UnaryOpKind::Pos:
        return a;
      case UnaryOpKind::Invert:
        return make_array(np::unary(ops(), np::UnOp::Invert, t));
      case UnaryOpKind::Not:
        break;
      }
    } catch (Error& e) {
      e.set_span_if_missing(where);
      throw;
    }
  }
  switch (op) {
  case UnaryOpKind::Neg:
    if (a.is_intlike()) {
      if (a.as_int() == INT64_MIN) return make_int(-BigInt(INT64_MIN));
      return Value::integer(-a.as_int());
    }
    if (is_bigint(a)) return make_int(-a.as<BigIntObj>()->value);
    if (a.is_float()) return Value::number(-a.f);
    if (is_py_complex(a)) return make_complex(-a.as<ComplexObj>()->re, -a.as<ComplexObj>()->im);
    break;
  case UnaryOpKind::Pos:
    if (a.is_intlike()) return Value::integer(a.as_int());
    if (a.is_float() || is_py_complex(a) || is_bigint(a)) return a;
    break;
  case UnaryOpKind::Invert:
    if (a.is_intlike()) return Value::integer(~a.as_int());
    if (is_bigint(a)) return make_int(~a.as<BigIntObj>()->value);
    break;
  case UnaryOpKind::Not:
    return Value::boolean(!truthy(a, where));
  }
  static const char* names[] = {"-", "+", "~", "not"};
  throw Error(ErrCode::Type,
              std::string("bad operand type for unary ") + names[static_cast<int>(op)] + ": '" +
                  type_name(a) + "'",
              where);
}

// Python's ordering of two numbers when one is a big int: exact, as Python
// compares ints with floats (nullopt: NaN, unordered).
static std::optional<int> compare_big(const Value& a, const Value& b) {
  if (a.is_float()) {
    auto c = compare_with_double(to_bigint(b), a.f);
    return c ? std::optional<int>(-*c) : std::nullopt;
  }
  if (b.is_float()) return compare_with_double(to_bigint(a), b.f);
  return BigInt::compare(to_bigint(a), to_bigint(b));
}

// A big int, or an int beyond 2**53 (a double cannot hold every such int)
// against a float: compared exactly.
static bool big_comparable(const Value& a, const Value& b) {
  auto wide = [](const Value& v) {
    return is_bigint(v) || (v.is_int() && (v.i > (int64_t{1} << 53) || v.i < -(int64_t{1} << 53)));
  };
  bool numbers = (is_py_int(a) || a.is_float()) && (is_py_int(b) || b.is_float());
  return numbers &&
         (is_bigint(a) || is_bigint(b) || (wide(a) && b.is_float()) || (wide(b) && a.is_float()));
}

bool InterpreterImpl::less_than(const Value& a, const Value& b, const Span& where) {
  if (big_comparable(a, b)) {
    auto c = compare_big(a, b);
    return c && *c < 0;
  }
  if (a.is_number() && b.is_number()) {
    if (a.is_intlike() && b.is_intlike()) return a.as_int() < b.as_int();
    return a.as_float() < b.as_float();
  }
  if (a.is_obj(ObjKind::Str) && b.is_obj(ObjKind::Str))
    return a.as<StrObj>()->value < b.as<StrObj>()->value;
  bool seq_a = a.is_obj(ObjKind::List) || a.is_obj(ObjKind::Tuple);
  if (seq_a && a.tag == b.tag && a.obj->kind == b.obj->kind) {
    const ValueList& x = a.is_obj(ObjKind::List) ? a.as<ListObj>()->items : a.as<TupleObj>()->items;
    const ValueList& y = b.is_obj(ObjKind::List) ? b.as<ListObj>()->items : b.as<TupleObj>()->items;
    check_stack(where); // self-containing lists recurse without end
    auto is_container = [](const Value& v) {
      return v.is_obj(ObjKind::List) || v.is_obj(ObjKind::Tuple) || v.is_obj(ObjKind::Dict);
    };
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      bool nested = is_container(x[i]) && is_container(y[i]) && x[i].obj != y[i].obj;
      if (nested ? truthy(compare(CmpOpKind::Eq, x[i], y[i], where), where)
                 : values_equal(x[i], y[i]))
        continue;
      return less_than(x[i], y[i], where);
    }
    return x.size() < y.size();
  }
  throw Error(ErrCode::Type,
              "'<' not supported between instances of '" + type_name(a) + "' and '" + type_name(b) +
                  "'",
              where);
}

// Python's == of two tuples, lists or dicts: items compare with their own ==,
// whose result must be truthy (an array's elementwise result is then true when
// all of it is, or bool()'s error for several elements); identical items are
// equal without comparing, as in Python.
static bool containers_equal(InterpreterImpl& in, const Value& a, const Value& b,
                             const Span& where) {
  // Two lists that contain themselves recurse without end: Python's RecursionError,
  // not a native stack overflow.
  in.check_stack(where);
  auto items_equal = [&](const Value& x, const Value& y) {
    if (x.tag == Value::Tag::Obj && y.tag == Value::Tag::Obj && x.obj == y.obj) return true;
    return in.truthy(in.compare(CmpOpKind::Eq, x, y, where), where);
  };
  if (a.obj->kind == ObjKind::Dict)
    return dicts_equal(*a.as<DictObj>(), *b.as<DictObj>(), items_equal);
  const ValueList& x =
      a.obj->kind == ObjKind::Tuple ? a.as<TupleObj>()->items : a.as<ListObj>()->items;
  const ValueList& y =
      b.obj->kind == ObjKind::Tuple ? b.as<TupleObj>()->items : b.as<ListObj>()->items;
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (!items_equal(x[i], y[i])) return false;
  return true;
}

Value InterpreterImpl::compare(CmpOpKind op, const Value& a, const Value& b, const Span& where) {
  switch (op) {
  case CmpOpKind::In:
    return Value::boolean(contains(b, a, where));
  case CmpOpKind::NotIn:
    return Value::boolean(!contains(b, a, where));
  case CmpOpKind::Is:
  case CmpOpKind::IsNot: {
    bool same;
    if (a.tag != b.tag)
      same = false;
    else if (a.tag == Value::Tag::Obj)
      same = a.obj == b.obj || (a.obj->kind == ObjKind::DType && values_equal(a, b)) ||
             same_class(a, b);
    else
      same = values_equal(a, b) && a.tag == b.tag;
    return Value::boolean(op == CmpOpKind::Is ? same : !same);
  }
  default:
    break;
  }
  // A set's __eq__ gives NotImplemented for an array, whose own __eq__ refuses the set.
  if ((op == CmpOpKind::Eq || op == CmpOpKind::Ne) &&
      ((a.is_obj(ObjKind::Array) && py_set_items(b)) ||
       (b.is_obj(ObjKind::Array) && py_set_items(a))))
    rejected("unsupported operand type(s) for ==: 'ArrayImpl' and 'set'", where);
  if (Value r; opaque_operator(*this, cmpop_dunder(op), a, b, r, where)) return r;
  if (a.is_obj(ObjKind::Array) || b.is_obj(ObjKind::Array)) {
    auto scalar_or_array = [](const Value& v) {
      return v.is_number() || is_bigint(v) || is_py_complex(v) || v.is_obj(ObjKind::Array);
    };
    if (scalar_or_array(a) && scalar_or_array(b)) {
      check_jit_int(a, "x", where);
      check_jit_int(b, "y", where);
      try {
        LocScope loc(ops(), op_location(ops(), where));
        Tensor x = to_tensor(a, where), y = to_tensor(b, where);
        strict_promote_pair(*this, x, y); // under 'strict': JAX's lattice, or its error
        return make_array(np::binary(ops(), cmp_to_np(op), x, y));
      } catch (Error& e) {
        e.set_span_if_missing(where);
        throw;
      }
    }
    if (rejected_operand(a) || rejected_operand(b)) {
      if (op == CmpOpKind::Eq || op == CmpOpKind::Ne) { // the array's __eq__ refuses
        const Value& arr = a.is_obj(ObjKind::Array) ? a : b;
        const Value& other = a.is_obj(ObjKind::Array) ? b : a;
        rejected("unsupported operand type(s) for ==: '" + jax_type_name(arr, true) + "' and '" +
                     jax_type_name(other, true) + "'",
                 where);
      }
      rejected(std::string("'") + cmpop_symbol(op) + "' not supported between instances of '" +
                   jax_type_name(a, false) + "' and '" + jax_type_name(b, false) + "'",
               where);
    }
    if (op == CmpOpKind::Eq) return Value::boolean(false);
    if (op == CmpOpKind::Ne) return Value::boolean(true);
  }
  if (big_comparable(a, b) && op != CmpOpKind::In && op != CmpOpKind::NotIn) {
    auto c = compare_big(a, b); // (NaN: unordered, unequal)
    bool r = op == CmpOpKind::Ne ? !c || *c != 0
                                 : c && (op == CmpOpKind::Eq   ? *c == 0
                                         : op == CmpOpKind::Lt ? *c < 0
                                         : op == CmpOpKind::Le ? *c <= 0
                                         : op == CmpOpKind::Gt ? *c > 0
                                                               : *c >= 0);
    return Value::boolean(r);
  }
  if (a.is_number() && b.is_number() && (a.is_float() || b.is_float())) {
    double x = a.as_float(), y = b.as_float(); // IEEE semantics: NaN compares false
    switch (op) {
    case CmpOpKind::Eq:
      return Value::boolean(x == y);
    case CmpOpKind::Ne:
      return Value::boolean(x != y);
    case CmpOpKind::Lt:
      return Value::boolean(x < y);
    case CmpOpKind::Gt:
      return Value::boolean(x > y);
    case CmpOpKind::Le:
      return Value::boolean(x <= y);
    case CmpOpKind::Ge:
      return Value::boolean(x >= y);
    default:
      break;
    }
  }
  if ((op == CmpOpKind::Eq || op == CmpOpKind::Ne) && a.tag == Value::Tag::Obj &&
      b.tag == Value::Tag::Obj && a.obj->kind == b.obj->kind &&
      (a.obj->kind == ObjKind::Tuple || a.obj->kind == ObjKind::List ||
       a.obj->kind == ObjKind::Dict) &&
      !same_class(a, b) && a.obj != b.obj)
    return Value::boolean(containers_equal(*this, a, b, where) == (op == CmpOpKind::Eq));
  switch (op) {
  case CmpOpKind::Eq:
    return Value::boolean(values_equal(a, b));
  case CmpOpKind::Ne:
    return Value::boolean(!values_equal(a, b));
  case CmpOpKind::Lt:
    return Value::boolean(less_than(a, b, where));
  case CmpOpKind::Gt:
    return Value::boolean(less_than(b, a, where));
  case CmpOpKind::Le:
    return Value::boolean(!less_than(b, a, where));
  case CmpOpKind::Ge:
    return Value::boolean(!less_than(a, b, where));
  default:
    break;
  }
  return Value();
}

} // namespace pxl
