// Host-only modules: functools, time, math; and the pytree utilities.
#include <chrono>
#include <cmath>
#include <thread>

#include "lang/args.hpp"
#include "lang/bigint.hpp"
#include "stdlib/convert.hpp"
#include "stdlib/module_builder.hpp"
#include "stdlib/pytree.hpp"

namespace pxl {

namespace {

// functools' cached wrapper of `fn`: at most `maxsize` results (-1: no limit),
// the least recently used dropped first; cache_clear() empties it.
Value memoize(InterpreterImpl& in, const Value& fn, int64_t maxsize) {
  Value name = in.has_attr(fn, "__name__") ? in.get_attr(fn, "__name__", Span{}) : make_str("");
  auto cache = std::make_shared<DictObj>();
  Value wrapper = make_builtin(
      name.is_obj(ObjKind::Str) ? name.as<StrObj>()->value : std::string("lru_cache_wrapper"),
      [fn, cache, maxsize](InterpreterImpl& in, CallArgs& a) {
        ValueList key = a.pos;
        if (!a.kw.empty()) {                   // keywords follow a marker, as in Python's key
          key.push_back(Value::object(cache)); // (never an argument: unique)
          for (auto& [k, v] : a.kw) key.push_back(make_tuple({make_str(k), v}));
        }
        Value k = make_tuple(std::move(key));
        if (!is_hashable(k)) {
          for (const Value& v : a.pos)
            if (!is_hashable(v))
              throw Error(ErrCode::Type, "unhashable type: '" + type_name(v) + "'");
          for (auto& [kw, v] : a.kw)
            if (!is_hashable(v))
              throw Error(ErrCode::Type, "unhashable type: '" + type_name(v) + "'");
        }
        if (const Value* hit = cache->find(k)) {
          Value out = *hit;
          if (maxsize > 0) { // most recently used: to the end
            cache->erase(k);
            cache->set(k, out);
          }
          return out;
        }
        Value out = in.call(fn, a, Span{});
        if (maxsize != 0) cache->set(k, out);
        if (maxsize > 0 && static_cast<int64_t>(cache->size()) > maxsize)
          for (size_t i = 0; i < cache->entries.size(); ++i)
            if (cache->live[i]) {
              cache->erase(Value(cache->entries[i].first));
              break;
            }
        return out;
      });
  wrapper.as<BuiltinObj>()->attrs.emplace_back(
      "cache_clear", make_builtin("cache_clear", [cache](InterpreterImpl&, CallArgs& a) {
        ArgReader r("cache_clear", a, {});
        cache->entries.clear();
        cache->live.clear();
        cache->index.clear();
        return Value();
      }));
  wrapper.as<BuiltinObj>()->attrs.emplace_back("__wrapped__", fn);
  return wrapper;
}

} // namespace

Value make_functools_module() {
  ModuleBuilder b("functools");
  b.fn("partial", [](InterpreterImpl&, CallArgs& a) {
    if (a.pos.empty()) throw Error(ErrCode::Type, "type 'partial' takes at least one argument");
    if (is_plain_data(a.pos[0])) throw Error(ErrCode::Type, "the first argument must be callable");
    auto p = std::make_shared<PartialObj>();
    p->fn = a.pos[0];
    p->bound.pos.assign(a.pos.begin() + 1, a.pos.end());
    p->bound.kw = a.kw;
    return Value::object(p);
  });
  // functools.wraps(wrapped)(f): f under wrapped's __name__ (pxl functions
  // have no other metadata to copy); anything else is returned as it is.
  b.fn("wraps", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("wraps", a, {"wrapped", "assigned", "updated"}, 1);
    Value name = in.get_attr(r[0], "__name__", Span{});
    return make_builtin("wraps", [name](InterpreterImpl&, CallArgs& d) {
      ArgReader w("wraps(...)", d, {"f"}, 1);
      if (!w[0].is_obj(ObjKind::Function) || !name.is_obj(ObjKind::Str)) return w[0];
      auto f = std::make_shared<FunctionObj>(*w[0].as<FunctionObj>());
      f->name = name.as<StrObj>()->value;
      return Value::object(f);
    });
  });
  // lru_cache(maxsize=128, typed=False) / lru_cache(f) / cache(f): a wrapper
  // that remembers f's results by its arguments (hashable, as Python's).
  b.fn("lru_cache", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("lru_cache", a, {"maxsize", "typed"});
    if (r.has(0) && !r[0].is_none() && !r[0].is_intlike()) // lru_cache(f): maxsize 128
      return memoize(in, r[0], 128);
    int64_t maxsize = !r.has(0) ? 128 : r[0].is_none() ? -1 : std::max<int64_t>(r[0].as_int(), 0);
    return make_builtin("decorating_function", [maxsize](InterpreterImpl& in, CallArgs& d) {
      ArgReader w("decorating_function", d, {"user_function"}, 1);
      return memoize(in, w[0], maxsize);
    });
  });
  b.fn("cache", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("cache", a, {"user_function"}, 1);
    return memoize(in, r[0], -1);
  });
  b.fn("reduce", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("reduce", a, {"function", "iterable", "initial"}, 2);
    ValueList items = in.iterate(r[1], Span{});
    size_t i = 0;
    Value acc;
    if (r.has(2))
      acc = r[2];
    else if (items.empty())
      throw Error(ErrCode::Type, "reduce() of empty iterable with no initial value");
    else
      acc = items[i++];
    for (; i < items.size(); ++i) acc = in.call(r[0], ValueList{acc, items[i]}, Span{});
    return acc;
  });
  return b.value();
}

Value make_time_module() {
  ModuleBuilder b("time");
  auto seconds = [](auto clock) {
    return [clock](InterpreterImpl&, CallArgs& a) {
      ArgReader r("perf_counter", a, {});
      (void)clock;
      using C = decltype(clock);
      return Value::number(std::chrono::duration<double>(C::now().time_since_epoch()).count());
    };
  };
  b.fn("perf_counter", seconds(std::chrono::steady_clock()));
  b.fn("monotonic", seconds(std::chrono::steady_clock()));
  b.fn("time", seconds(std::chrono::system_clock()));
  b.fn("sleep", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("sleep", a, {"secs"}, 1);
    double s = r.get_float(0);
    if (s < 0) throw Error(ErrCode::Value, "sleep length must be non-negative");
    std::this_thread::sleep_for(std::chrono::duration<double>(std::min(s, 1e6)));
    return Value();
  });
  return b.value();
}

namespace {

// An int argument of any size (Python's "cannot be interpreted as an integer").
BigInt math_int(const Value& v) {
  if (!is_py_int(v))
    throw Error(ErrCode::Type, "'" + type_name(v) + "' object cannot be interpreted as an integer");
  return to_bigint(v);
}
int64_t math_int(const ArgReader& r, size_t i) {
  BigInt v = math_int(r[i]);
  if (auto small = v.to_int64()) return *small;
  throw Error(ErrCode::Value, "Python int too large to convert to C long");
}

// Python's math functions of integers: gcd lcm factorial comb perm isqrt
// (their results may leave 64 bits: lang/bigint.hpp).
void add_math_integer_functions(ModuleBuilder& b) {
  auto gcd2 = [](BigInt x, BigInt y) {
    if (x.negative()) x = -x;
    if (y.negative()) y = -y;
    BigInt q, r;
    while (!y.is_zero()) {
      BigInt::divmod(x, y, q, r);
      x = y;
      y = r;
    }
    return x;
  };
  for (bool is_lcm : {false, true}) {
    std::string name = is_lcm ? "lcm" : "gcd";
    b.fn(name, [name, is_lcm, gcd2](InterpreterImpl&, CallArgs& a) {
      if (!a.kw.empty()) throw Error(ErrCode::Arguments, name + "() takes no keyword arguments");
      BigInt acc(is_lcm ? 1 : 0);
      for (const Value& v : a.pos) {
        BigInt x = math_int(v);
        if (!is_lcm) {
          acc = gcd2(acc, x);
        } else if (acc.is_zero() || x.is_zero()) {
          acc = BigInt(0);
        } else {
          BigInt q, r;
          BigInt::divmod(acc, gcd2(acc, x), q, r);
          acc = q * x;
          if (acc.negative()) acc = -acc;
        }
      }
      return make_int(acc);
    });
  }
  // Products past this many bits are refused rather than left to run for long.
  constexpr uint64_t kMaxBits = uint64_t{1} << 20; // (as lang/bigint_ops.cpp's limit)
  b.fn("factorial", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("factorial", a, {"n"}, 1);
    int64_t n = math_int(r, 0);
    if (n < 0) throw Error(ErrCode::Value, "factorial() not defined for negative values");
    BigInt acc(1);
    for (int64_t k = 2; k <= n; ++k) {
      acc = acc * BigInt(k);
      if (acc.bit_length() > kMaxBits) throw Error(ErrCode::Value, "factorial() result too large");
    }
    return make_int(acc);
  });
  for (bool is_perm : {false, true}) {
    std::string name = is_perm ? "perm" : "comb";
    b.fn(name, [name, is_perm](InterpreterImpl&, CallArgs& a) {
      ArgReader r(name, a, {"n", "k"}, is_perm ? 1 : 2);
      int64_t n = math_int(r, 0);
      int64_t k = is_perm && (!r.has(1) || r[1].is_none()) ? n : math_int(r, 1);
      if (n < 0) throw Error(ErrCode::Value, "n must be a non-negative integer");
      if (k < 0) throw Error(ErrCode::Value, "k must be a non-negative integer");
      if (k > n) return Value::integer(0);
      if (!is_perm) k = std::min(k, n - k);
      // comb: acc * (n - i) / (i + 1) stays an integer at every step.
      BigInt acc(1), q, rem;
      for (int64_t i = 0; i < k; ++i) {
        acc = acc * BigInt(n - i);
        if (!is_perm) {
          BigInt::divmod(acc, BigInt(i + 1), q, rem);
          acc = q;
        }
        if (acc.bit_length() > kMaxBits) throw Error(ErrCode::Value, name + "() result too large");
      }
      return make_int(acc);
    });
  }
  b.fn("isqrt", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("isqrt", a, {"n"}, 1);
    int64_t n = math_int(r, 0);
    if (n < 0) throw Error(ErrCode::Value, "isqrt() argument must be nonnegative");
    auto x = static_cast<int64_t>(std::sqrt(static_cast<double>(n)));
    while (x > 0 && static_cast<__int128>(x) * x > n) --x;
    while (static_cast<__int128>(x + 1) * (x + 1) <= n) ++x;
    return Value::integer(x);
  });
}

// Python's math functions of floats beyond the one-argument ones.
void add_math_float_functions(ModuleBuilder& b) {
  auto two = [&b](const char* name, double (*f)(double, double), bool domain_nan) {
    std::string n = name;
    b.fn(n, [n, f, domain_nan](InterpreterImpl&, CallArgs& a) {
      ArgReader r(n, a, {"x", "y"}, 2);
      double x = r.get_float(0), y = r.get_float(1), z = f(x, y);
      if (domain_nan && std::isnan(z) && !std::isnan(x) && !std::isnan(y))
        throw Error(ErrCode::Value, "math domain error");
      return Value::number(z);
    });
  };
  two("copysign", std::copysign, false);
  two("atan2", std::atan2, false);
  two("fmod", std::fmod, true);
  two("remainder", std::remainder, true);
  two("nextafter", std::nextafter, false);
  b.fn("hypot", [](InterpreterImpl&, CallArgs& a) {
    double acc = 0;
    for (const Value& v : a.pos) acc = std::hypot(acc, value_to_float(v, "hypot() argument"));
    return Value::number(acc);
  });
  b.fn("dist", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("dist", a, {"p", "q"}, 2);
    ValueList p = in.iterate(r[0], Span{}), q = in.iterate(r[1], Span{});
    if (p.size() != q.size())
      throw Error(ErrCode::Value, "both points must have the same number of dimensions");
    double acc = 0;
    for (size_t i = 0; i < p.size(); ++i)
      acc = std::hypot(acc, value_to_float(p[i], "dist()") - value_to_float(q[i], "dist()"));
    return Value::number(acc);
  });
  b.fn("fsum", [](InterpreterImpl& in, CallArgs& a) {
    // Exact partial sums (Shewchuk), rounded once, as Python's fsum.
    ArgReader r("fsum", a, {"seq"}, 1);
    std::vector<double> partials;
    for (const Value& v : in.iterate(r[0], Span{})) {
      double x = value_to_float(v, "fsum()");
      size_t i = 0;
      for (double y : partials) {
        if (std::fabs(x) < std::fabs(y)) std::swap(x, y);
        double hi = x + y, lo = y - (hi - x);
        if (lo != 0) partials[i++] = lo;
        x = hi;
      }
      partials.resize(i);
      partials.push_back(x);
    }
    double hi = 0;
    if (!partials.empty()) {
      size_t n = partials.size();
      hi = partials[--n];
      double lo = 0;
      while (n > 0) {
        double x = hi, y = partials[--n];
        hi = x + y;
        lo = y - (hi - x);
        if (lo != 0) break;
      }
      // Round half to even across the remaining partials, as CPython does.
      if (n > 0 && ((lo < 0 && partials[n - 1] < 0) || (lo > 0 && partials[n - 1] > 0))) {
        double y = lo * 2, x = hi + y;
        if (y == x - hi) hi = x;
      }
    }
    return Value::number(hi);
  });
  b.fn("modf", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("modf", a, {"x"}, 1);
    double ip, fp = std::modf(r.get_float(0), &ip);
    return make_tuple({Value::number(fp), Value::number(ip)});
  });
  b.fn("frexp", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("frexp", a, {"x"}, 1);
    int e = 0;
    double m = std::frexp(r.get_float(0), &e);
    return make_tuple({Value::number(m), Value::integer(e)});
  });
  b.fn("ldexp", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("ldexp", a, {"x", "i"}, 2);
    double x = r.get_float(0);
    int64_t e = std::clamp<int64_t>(math_int(r, 1), -100000, 100000);
    double y = std::ldexp(x, static_cast<int>(e));
    if (std::isinf(y) && std::isfinite(x)) throw Error(ErrCode::Value, "math range error");
    return Value::number(y);
  });
  b.fn("isclose", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("isclose", a, {"a", "b", "rel_tol", "abs_tol"}, 2);
    double x = r.get_float(0), y = r.get_float(1);
    double rel = r.has(2) ? r.get_float(2) : 1e-9, abs_tol = r.has(3) ? r.get_float(3) : 0.0;
    if (rel < 0 || abs_tol < 0) throw Error(ErrCode::Value, "tolerances must be non-negative");
    if (x == y) return Value::boolean(true);
    if (std::isinf(x) || std::isinf(y)) return Value::boolean(false);
    double d = std::fabs(y - x);
    return Value::boolean(d <= std::fabs(rel * y) || d <= std::fabs(rel * x) || d <= abs_tol);
  });
  b.fn("degrees", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("degrees", a, {"x"}, 1);
    return Value::number(r.get_float(0) * (180.0 / M_PI));
  });
  b.fn("radians", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("radians", a, {"x"}, 1);
    return Value::number(r.get_float(0) * (M_PI / 180.0));
  });
  b.fn("ulp", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("ulp", a, {"x"}, 1);
    double x = std::fabs(r.get_float(0));
    if (std::isnan(x) || std::isinf(x)) return Value::number(x);
    double next = std::nextafter(x, INFINITY);
    if (std::isinf(next)) return Value::number(x - std::nextafter(x, -INFINITY));
    return Value::number(next - x);
  });
}

} // namespace

Value make_math_module() {
  ModuleBuilder b("math");
  // One-argument functions with CPython's error rule (math_1): a NaN from a
  // number that is not NaN is a domain error, an infinity from a finite
  // number a range error where the function can overflow, else a domain error.
  static const std::pair<const char*, double (*)(double)> fns[] = {
      {"sqrt", std::sqrt},    {"exp", std::exp},     {"log2", std::log2},   {"log10", std::log10},
      {"sin", std::sin},      {"cos", std::cos},     {"tan", std::tan},     {"tanh", std::tanh},
      {"fabs", std::fabs},    {"erf", std::erf},     {"log1p", std::log1p}, {"expm1", std::expm1},
      {"atan", std::atan},    {"asin", std::asin},   {"acos", std::acos},   {"sinh", std::sinh},
      {"cosh", std::cosh},    {"asinh", std::asinh}, {"acosh", std::acosh}, {"atanh", std::atanh},
      {"erfc", std::erfc},    {"exp2", std::exp2},   {"cbrt", std::cbrt},   {"gamma", std::tgamma},
      {"lgamma", std::lgamma}};
  for (auto [name, f] : fns) {
    std::string n = name;
    auto fp = f;
    b.fn(n, [n, fp](InterpreterImpl&, CallArgs& a) {
      ArgReader r(n, a, {"x"}, 1);
      double x = r.get_float(0);
      double y = fp(x);
      bool can_overflow = n == "exp" || n == "expm1" || n == "exp2" || n == "sinh" || n == "cosh" ||
                          n == "gamma" || n == "lgamma";
      // tgamma/lgamma at 0 and the negative integers are poles: domain errors.
      bool pole = (n == "gamma" || n == "lgamma") && x <= 0 && std::floor(x) == x;
      if ((std::isnan(y) && !std::isnan(x)) ||
          (std::isinf(y) && std::isfinite(x) && !can_overflow) || pole)
        throw Error(ErrCode::Value, "math domain error");
      if (std::isinf(y) && std::isfinite(x)) throw Error(ErrCode::Value, "math range error");
      return Value::number(y);
    });
  }
  add_math_integer_functions(b);
  add_math_float_functions(b);
  b.fn("log", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("log", a, {"x", "base"}, 1);
    double x = r.get_float(0);
    if (x <= 0) throw Error(ErrCode::Value, "math domain error");
    if (!r.has(1)) return Value::number(std::log(x));
    double base = r.get_float(1);
    if (base <= 0) throw Error(ErrCode::Value, "math domain error");
    if (base == 1) throw Error(ErrCode::ZeroDivision, "float division by zero");
    return Value::number(std::log(x) / std::log(base));
  });
  auto rounding = [](const char* name, double (*f)(double)) {
    return [name, f](InterpreterImpl&, CallArgs& a) {
      ArgReader r(name, a, {"x"}, 1);
      if (r[0].is_intlike()) return Value::integer(r[0].as_int());
      if (is_bigint(r[0])) return r[0];
      double x = f(r.get_float(0));
      if (std::isinf(x)) throw Error(ErrCode::Value, "cannot convert float infinity to integer");
      if (std::isnan(x)) throw Error(ErrCode::Value, "cannot convert float NaN to integer");
      return make_int(BigInt::from_double(x));
    };
  };
  b.fn("floor", rounding("floor", std::floor));
  b.fn("ceil", rounding("ceil", std::ceil));
  b.fn("trunc", rounding("trunc", std::trunc));
  auto pred = [](const char* name, int which) {
    return [name, which](InterpreterImpl&, CallArgs& a) {
      ArgReader r(name, a, {"x"}, 1);
      double x = r.get_float(0);
      return Value::boolean(which == 0   ? std::isnan(x)
                            : which == 1 ? std::isinf(x)
                                         : std::isfinite(x));
    };
  };
  b.fn("isnan", pred("isnan", 0));
  b.fn("isinf", pred("isinf", 1));
  b.fn("isfinite", pred("isfinite", 2));
  b.fn("prod", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("prod", a, {"iterable", "start"}, 1);
    Value acc = r.has(1) ? r[1] : Value::integer(1);
    for (const Value& x : in.iterate(r[0], Span{}))
      acc = in.binary_op(BinOpKind::Mul, acc, x, Span{});
    return acc;
  });
  b.fn("pow", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("pow", a, {"x", "y"}, 2);
    return Value::number(std::pow(r.get_float(0), r.get_float(1)));
  });
  b.val("pi", Value::number(M_PI));
  b.val("e", Value::number(M_E));
  b.val("tau", Value::number(2 * M_PI));
  b.val("inf", Value::number(INFINITY));
  b.val("nan", Value::number(NAN));
  return b.value();
}

} // namespace pxl
