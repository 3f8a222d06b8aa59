// Host-only modules: functools, time, math; and the pytree utilities.
#include <chrono>
#include <cmath>
#include <thread>

#include "lang/args.hpp"
#include "stdlib/convert.hpp"
#include "stdlib/module_builder.hpp"
#include "stdlib/pytree.hpp"

namespace pxl {

Value make_functools_module() {
  ModuleBuilder b("functools");
  b.fn("partial", [](InterpreterImpl&, CallArgs& a) {
    if (a.pos.empty()) throw Error(ErrCode::Arguments, "partial() needs a function to wrap");
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

Value make_math_module() {
  ModuleBuilder b("math");
  static const std::pair<const char*, double (*)(double)> fns[] = {
      {"sqrt", std::sqrt}, {"exp", std::exp},   {"log2", std::log2},   {"log10", std::log10},
      {"sin", std::sin},   {"cos", std::cos},   {"tan", std::tan},     {"tanh", std::tanh},
      {"fabs", std::fabs}, {"erf", std::erf},   {"log1p", std::log1p}, {"expm1", std::expm1},
      {"atan", std::atan}, {"asin", std::asin}, {"acos", std::acos}};
  for (auto [name, f] : fns) {
    std::string n = name;
    auto fp = f;
    b.fn(n, [n, fp](InterpreterImpl&, CallArgs& a) {
      ArgReader r(n, a, {"x"}, 1);
      double x = r.get_float(0);
      if ((n == "sqrt" && x < 0) || (n == "log2" && x <= 0) || (n == "log10" && x <= 0))
        throw Error(ErrCode::Value, "math domain error");
      return Value::number(fp(x));
    });
  }
  b.fn("log", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("log", a, {"x", "base"}, 1);
    double x = r.get_float(0);
    if (x <= 0) throw Error(ErrCode::Value, "math domain error");
    return Value::number(r.has(1) ? std::log(x) / std::log(r.get_float(1)) : std::log(x));
  });
  auto rounding = [](const char* name, double (*f)(double)) {
    return [name, f](InterpreterImpl&, CallArgs& a) {
      ArgReader r(name, a, {"x"}, 1);
      if (r[0].is_intlike()) return Value::integer(r[0].as_int());
      double x = f(r.get_float(0));
      if (!std::isfinite(x))
        throw Error(ErrCode::Value, "cannot convert float infinity or nan to integer");
      return Value::integer(static_cast<int64_t>(x));
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
