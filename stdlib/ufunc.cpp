// jnp's ufuncs (jnp.add, jnp.multiply, ... and what jnp.frompyfunc makes):
// callable objects with NumPy's ufunc attributes (nin, nout, nargs, identity)
// and methods (reduce, accumulate, outer, at, reduceat), which
// stdlib/numpy_ufunc.pxl implements following JAX's jax.numpy.ufunc.
#include <cmath>

#include "lang/args.hpp"
#include "stdlib/module_builder.hpp"

namespace pxl {

namespace {

struct UfuncObj : OpaqueObj {
  Value fn;   // what a call runs (numpy's function, or the vectorized Python function)
  Value func; // the function given to frompyfunc (JAX's _func); fn for the built-in ones
  std::string name;
  int64_t nin = 2, nout = 1;
  Value identity; // None when the operation has none
  std::string type_name() const override { return "ufunc"; }
  std::string repr() const override { return "<jnp.ufunc '" + name + "'>"; }
  bool call(InterpreterImpl& in, CallArgs& args, const Span& where, Value& out) override {
    // JAX's ufunc __call__ refuses out= (and where=) before calling.
    for (auto it = args.kw.begin(); it != args.kw.end();) {
      if (it->first != "out" && it->first != "where") {
        ++it;
        continue;
      }
      if (!it->second.is_none())
        throw Error(ErrCode::Unsupported, it->first + " argument of <jnp.ufunc '" + name + "'>",
                    where);
      it = args.kw.erase(it);
    }
    out = in.call(fn, args, where);
    return true;
  }
  bool get_attr(InterpreterImpl& in, const std::string& attr, Value& out) override {
    if (attr == "nin") return out = Value::integer(nin), true;
    if (attr == "nout") return out = Value::integer(nout), true;
    if (attr == "nargs") return out = Value::integer(nin), true;
    if (attr == "identity") return out = identity, true;
    if (attr == "__name__") return out = make_str(name), true;
    if (attr == "_func") return out = func, true;
    for (const char* m : {"reduce", "accumulate", "outer", "at", "reduceat"}) {
      if (attr != m) continue;
      // numpy_ufunc.<m>(ufunc, *args, **kwargs), bound to this ufunc.
      Value impl = in.get_attr(in.import_module("numpy_ufunc", Span{}, ""), m, Span{});
      auto self = std::make_shared<UfuncObj>(*this);
      out = make_builtin(attr, [impl, self](InterpreterImpl& in, CallArgs& a) {
        CallArgs b = a;
        b.pos.insert(b.pos.begin(), Value::object(self));
        return in.call(impl, b, in.ops().loc); // at the user's call, for errors raised in impl
      });
      return true;
    }
    return false;
  }
  std::vector<std::string> attr_names() const override {
    return {"__name__", "_func", "accumulate", "at",     "identity", "nargs",
            "nin",      "nout",  "outer",      "reduce", "reduceat"};
  }
  bool equals(const OpaqueObj& o) const override {
    auto* u = dynamic_cast<const UfuncObj*>(&o);
    return u && values_equal(u->func, func) && u->nin == nin && u->nout == nout &&
           values_equal(u->identity, identity);
  }
};

Value make_ufunc(Value fn, Value func, std::string name, int64_t nin, int64_t nout,
                 Value identity) {
  auto u = std::make_shared<UfuncObj>();
  u->fn = std::move(fn);
  u->func = std::move(func);
  u->name = std::move(name);
  u->nin = nin;
  u->nout = nout;
  u->identity = std::move(identity);
  return Value::object(u);
}

} // namespace

// Makes np's ufuncs ufunc objects over the functions np already has, and adds
// jnp.ufunc (the class) and jnp.frompyfunc.
void install_ufuncs(InterpreterImpl& in, const Value& np) {
  (void)in;
  auto& vars = np.as<ModuleObj>()->env->vars;
  const Value none;
  const std::pair<const char*, Value> binary[] = {{"add", Value::integer(0)},
                                                  {"bitwise_and", Value::integer(-1)},
                                                  {"bitwise_or", Value::integer(0)},
                                                  {"bitwise_xor", Value::integer(0)},
                                                  {"logaddexp", Value::number(-INFINITY)},
                                                  {"logaddexp2", Value::number(-INFINITY)},
                                                  {"logical_and", Value::boolean(true)},
                                                  {"logical_or", Value::boolean(false)},
                                                  {"logical_xor", Value::boolean(false)},
                                                  {"maximum", none},
                                                  {"minimum", none},
                                                  {"multiply", Value::integer(1)},
                                                  {"subtract", none}};
  for (const auto& [name, identity] : binary) {
    auto it = vars.find(name);
    if (it == vars.end()) continue;
    Value f = it->second;
    it->second = make_ufunc(f, f, name, 2, 1, identity);
  }
  if (auto it = vars.find("negative"); it != vars.end())
    it->second = make_ufunc(it->second, it->second, "negative", 1, 1, none);
  vars["ufunc"] = make_type("ufunc");
  Value vectorize = vars.at("vectorize");
  vars["frompyfunc"] = make_builtin("frompyfunc", [vectorize](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("frompyfunc", a, {"func", "nin", "nout", "identity"}, 3);
    int64_t nin = r.get_int(1), nout = r.get_int(2);
    std::string name = "<function>";
    if (r[0].is_obj(ObjKind::Function))
      name = r[0].as<FunctionObj>()->name;
    else if (r[0].is_obj(ObjKind::Builtin))
      name = r[0].as<BuiltinObj>()->name;
    else if (auto* u = r[0].is_obj(ObjKind::Opaque) ? dynamic_cast<UfuncObj*>(r[0].as<OpaqueObj>())
                                                    : nullptr)
      name = u->name;
    // A call maps the function over the broadcast elements (JAX's vectorize).
    Value fn = in.call(vectorize, ValueList{r[0]}, Span{});
    return make_ufunc(fn, r[0], name, nin, nout, r.has(3) ? r[3] : Value());
  });
}

} // namespace pxl
