// Smaller parts of the jax namespace: ShapeDtypeStruct and eval_shape (trace
// without running), make_jaxpr (pxl's IR of a call), jax.config, and the
// single-process answers of process_index / process_count.
#include <map>

#include "lang/args.hpp"
#include "lang/ast.hpp"
#include "lang/bigint.hpp"
#include "lang/tracer.hpp"
#include "lang/type_object.hpp"
#include "runtime/eager.hpp"
#include "runtime/platform.hpp"
#include "stdlib/convert.hpp"
#include "stdlib/jaxpr_eqns.hpp"
#include "stdlib/module_builder.hpp"
#include "stdlib/mutable_ref.hpp"
#include "stdlib/np.hpp"
#include "stdlib/pytree.hpp"
#include "stdlib/shape_dtype_struct.hpp"
#include "stdlib/sharding.hpp"
#include "stdlib/trace_origin.hpp"
#include "stdlib/trace_util.hpp"

namespace pxl {

namespace {

bool is_bare_spec(const Value& v) {
  return v.is_obj(ObjKind::Opaque) && dynamic_cast<SpecObj*>(v.as<OpaqueObj>());
}

struct ShapeDtypeStructObj : OpaqueObj {
  AVal aval;
  Value sharding; // None, a Sharding, or a PartitionSpec given with no mesh current
  // The sharding, which a bare PartitionSpec (no mesh was current) cannot give.
  const Value& checked_sharding() const {
    if (is_bare_spec(sharding))
      throw Error(ErrCode::Type,
                  "When specifying PartitionSpec to `ShapeDtypeStruct`, the context mesh cannot be "
                  "empty. Please use `jax.set_mesh` to set the mesh context.");
    return sharding;
  }
  // eval_shape inside shard_map: the manual axes the value varies over (JAX's
  // manual_axis_type), which jax.typeof shows.
  std::vector<std::string> varying;
  std::string type_name() const override { return "ShapeDtypeStruct"; }
  std::string repr() const override {
    std::string s =
        "ShapeDtypeStruct(shape=" + shape_str(aval.shape) + ", dtype=" + dtype_name(aval.dtype);
    if (!sharding.is_none()) s += ", sharding=" + pxl::repr(checked_sharding());
    if (aval.weak) s += ", weak_type=True";
    return s + ")";
  }
  bool get_attr(InterpreterImpl&, const std::string& name, Value& out) override {
    if (name == "sharding") return out = checked_sharding(), true;
    if (name == "update") { // a copy with the given fields replaced, as JAX's
      AVal a0 = aval;
      Value sh0 = sharding;
      out = make_builtin("update", [a0, sh0](InterpreterImpl&, CallArgs& a) {
        ArgReader r("update", a, {"shape", "dtype", "sharding", "weak_type"}, 0);
        auto s = std::make_shared<ShapeDtypeStructObj>();
        s->aval = a0;
        s->sharding = sh0; // (update() keeps no varying axes)
        if (r.has(0)) s->aval.shape = value_to_shape(r[0], "ShapeDtypeStruct.update() shape");
        if (r.has(1)) s->aval.dtype = required_dtype(r[1], "ShapeDtypeStruct.update() dtype");
        if (r.has(2)) s->sharding = r[2];
        if (r.has(3)) s->aval.weak = r.get_bool(3, false);
        return Value::object(s);
      });
      return true;
    }
    return aval_attr(aval, name, out);
  }
  std::vector<std::string> attr_names() const override {
    return {"shape", "dtype", "ndim", "size", "sharding", "weak_type", "update"};
  }
  // len() is the leading dimension, as JAX's ShapeDtypeStruct.__len__ (a
  // scalar has none: "object ... has no len()"); the items carry no values.
  bool items(ValueList& out) const override {
    if (aval.shape.empty()) return false;
    out.assign(static_cast<size_t>(aval.shape[0]), Value());
    return true;
  }
  bool equals(const OpaqueObj& o) const override {
    auto* s = dynamic_cast<const ShapeDtypeStructObj*>(&o);
    return s && s->aval.shape == aval.shape && s->aval.dtype == aval.dtype;
  }
};

Value make_struct(const AVal& aval, Value sharding = Value()) {
  auto s = std::make_shared<ShapeDtypeStructObj>();
  s->aval = aval;
  s->sharding = std::move(sharding);
  return Value::object(s);
}

const ShapeDtypeStructObj* as_struct(const Value& v) {
  return v.is_obj(ObjKind::Opaque) ? dynamic_cast<const ShapeDtypeStructObj*>(v.as<OpaqueObj>())
                                   : nullptr;
}

// Traces fun(*args) where ShapeDtypeStruct leaves stand for arrays of their
// type (only a scalar placeholder is made for them, never the array).
TracedFunction trace_abstract(InterpreterImpl& in, const Value& fun, const ValueList& args,
                              const Span& where, const char* what,
                              const std::function<void(TraceContext&)>& prepare = nullptr) {
  ValueList leaves;
  TreeDef def = tree_flatten(in, make_tuple(args), leaves);
  std::vector<AVal> avals;
  for (Value& l : leaves) {
    if (const ShapeDtypeStructObj* s = as_struct(l)) {
      avals.push_back(s->aval);
      l = make_array(np::zeros(in.ops(), {}, s->aval.dtype));
    } else if (auto r = as_ref(l)) { // (its writes are forgotten: RefMode::Discard)
      avals.push_back(load_ref(in, *r).as<ArrayObj>()->tensor->aval);
    } else {
      avals.push_back(in.to_tensor(l, where)->aval);
    }
  }
  Value placed = tree_unflatten(def, leaves);
  return trace_function(in, fun, *sequence_items(placed), where, what, &avals, nullptr, prepare,
                        false, RefMode::Discard);
}

// make_jaxpr's result: prints as JAX's jaxpr text of pxl's IR of the traced
// call (stdlib/jaxpr_print.cpp); its jaxpr
// attributes (eqns, in_avals, out_avals, consts, jaxpr) come from
// jax_rest._jaxpr_attr over the IR read as equations (stdlib/jaxpr_eqns.cpp).
struct JaxprObj : OpaqueObj {
  std::shared_ptr<Function> fn;
  std::vector<Tensor> consts; // the values of fn's consts
  std::string type_name() const override { return "ClosedJaxpr"; }
  std::shared_ptr<JaxprRecord> record; // JAX's nesting (lang/jaxpr_record.hpp)
  std::string repr() const override { return jaxpr_text(*fn, consts, record.get()); }
  bool get_attr(InterpreterImpl& in, const std::string& name, Value& out) override {
    static const char* names[] = {"eqns",     "jaxpr",   "in_avals", "out_avals", "consts",
                                  "literals", "effects", "invars",   "outvars",   "constvars"};
    bool known = false;
    for (const char* n : names) known = known || name == n;
    if (!known) return false;
    Value typeof_fn = in.import_module("jax", Span{}, "").as<ModuleObj>()->env->vars.at("typeof");
    auto aval_value = [&](const AVal& a) {
      return in.call(typeof_fn, ValueList{make_struct(a)}, Span{});
    };
    ValueList ins, outs, cs;
    for (int p : fn->params) ins.push_back(aval_value(fn->values[static_cast<size_t>(p)].aval));
    for (int r : fn->results) outs.push_back(aval_value(fn->values[static_cast<size_t>(r)].aval));
    // (A scalar constant is a literal in a jaxpr, not one of its consts.)
    for (const Tensor& c : consts)
      if (!c->aval.shape.empty()) cs.push_back(make_array(c));
    Value helper =
        in.import_module("jax_rest", Span{}, "").as<ModuleObj>()->env->vars.at("_jaxpr_attr");
    out = in.call(helper,
                  ValueList{make_str(name), make_str(repr()),
                            jaxpr_eqns(*fn, consts, record.get(), aval_value), make_list(ins),
                            make_list(outs), make_list(cs)},
                  Span{});
    return true;
  }
  std::vector<std::string> attr_names() const override {
    return {"consts", "eqns", "in_avals", "jaxpr", "literals", "out_avals"};
  }
};

// jax.config.update('jax_num_cpu_devices', n): the CPU mesh's size, before
// anything has used the devices (JAX's backend initialization); n < 0 keeps
// the default (--devices / PXL_DEVICES).
void set_num_cpu_devices(InterpreterImpl& in, const Value& given) {
  Value n = given.is_none() ? Value::integer(-1) : given; // (None: the default)
  if (!is_py_int(n))
    throw Error(ErrCode::Value, "new int config value must be None or of type int, got " + str(n) +
                                    " of type <class '" + type_name(n) + "'>");
  if (!n.is_intlike() || n.as_int() == 0 || n.as_int() > kMaxDevices) // (a bigint: out of range)
    throw Error(ErrCode::Value, "jax_num_cpu_devices must be in [1, " +
                                    std::to_string(kMaxDevices) +
                                    "] (or negative for the default), got " + str(n));
  if (!in.platform().set_cpu_device_count(static_cast<int>(std::max<int64_t>(n.as_int(), -1))))
    throw Error(ErrCode::Device,
                "jax_num_cpu_devices config should be updated before backends are initialized "
                "i.e. before any JAX operation is executed. You should initialize this config "
                "immediately after `import jax`.");
}

// jax.config: flags are recorded; the ones pxl cannot honour say so.
struct ConfigObj : OpaqueObj {
  std::map<std::string, Value> flags;
  std::string type_name() const override { return "Config"; }
  std::string repr() const override { return "<jax config>"; }
  bool get_attr(InterpreterImpl&, const std::string& name, Value& out) override {
    if (name == "update") {
      auto* self = this;
      out = make_builtin("update", [self](InterpreterImpl& in, CallArgs& a) {
        ArgReader r("config.update", a, {"name", "val"}, 2);
        std::string flag = r.get_str(0);
        if (flag == "jax_enable_x64" && in.truthy(r[1], Span{}))
          throw Error(ErrCode::Unsupported,
                      "jax_enable_x64 is not supported: pxl's default dtypes are JAX's 32-bit ones",
                      Span{}, "ask for float64 explicitly (dtype=jnp.float64)");
        if (flag == "jax_threefry_partitionable" && !in.truthy(r[1], Span{}))
          throw Error(ErrCode::Unsupported,
                      "jax_threefry_partitionable=False is not supported: pxl draws random bits as "
                      "JAX's default (partitionable) threefry does");
        if (flag == "jax_num_cpu_devices") set_num_cpu_devices(in, r[1]);
        self->flags[flag] = r[1];
        if (flag == "jax_debug_nans" || flag == "jax_debug_infs")
          if (auto* eager = dynamic_cast<EagerContext*>(&in.root_ops())) {
            FloatChecks c = eager->float_checks();
            (flag == "jax_debug_nans" ? c.nans : c.infs) = in.truthy(r[1], Span{});
            eager->set_float_checks(c);
          }
        return Value();
      });
      return true;
    }
    if (name == "read") { // jax.config.read(name): a flag's value
      auto* self = this;
      out = make_builtin("read", [self](InterpreterImpl& in, CallArgs& a) {
        ArgReader r("config.read", a, {"name"}, 1);
        Value v;
        if (!self->get_attr(in, r.get_str(0), v))
          throw Error(ErrCode::Attribute, "Unrecognized config option: " + r.get_str(0));
        return v;
      });
      return true;
    }
    auto it = flags.find(name);
    if (it != flags.end()) return out = it->second, true;
    // JAX's defaults of the flags that are not booleans (or not False).
    if (name == "jax_numpy_rank_promotion") return out = make_str("allow"), true;
    if (name == "jax_numpy_dtype_promotion") return out = make_str("standard"), true;
    if (name == "jax_default_prng_impl") return out = make_str("threefry2x32"), true;
    if (name == "jax_default_matmul_precision") return out = Value(), true;
    if (name == "jax_threefry_partitionable") return out = Value::boolean(true), true;
    if (name == "jax_num_cpu_devices") return out = Value::integer(-1), true;
    if (name == "jax_legacy_prng_key") return out = make_str("allow"), true;
    if (name == "jax_array_garbage_collection_guard") return out = Value(), true;
    if (name.rfind("jax_", 0) == 0) return out = Value::boolean(false), true;
    return false;
  }
};

// jax.disable_jit(): while it is entered, the jax_disable_jit flag is set, and
// jitted functions run their Python function op by op (jit.cpp checks the flag).
struct DisableJitObj : OpaqueObj {
  std::shared_ptr<ConfigObj> config;
  bool disable;
  Value saved;
  DisableJitObj(std::shared_ptr<ConfigObj> c, bool d) : config(std::move(c)), disable(d) {}
  std::string type_name() const override { return "_GeneratorContextManager"; }
  std::string repr() const override { return "<contextlib._GeneratorContextManager object>"; }
  bool enter(InterpreterImpl&, Value& bound) override {
    auto it = config->flags.find("jax_disable_jit");
    saved = it == config->flags.end() ? Value::boolean(false) : it->second;
    config->flags["jax_disable_jit"] = Value::boolean(disable);
    bound = Value();
    return true;
  }
  void exit(InterpreterImpl&) override { config->flags["jax_disable_jit"] = saved; }
};

} // namespace

// (stdlib/prng_key.cpp: the abstract key arrays eval_shape returns.)
const AVal* shape_dtype_struct_aval(const Value& v) {
  const ShapeDtypeStructObj* s = as_struct(v);
  return s ? &s->aval : nullptr;
}

std::vector<std::string> shape_dtype_struct_varying(const Value& v) {
  const ShapeDtypeStructObj* s = as_struct(v);
  return s ? s->varying : std::vector<std::string>{};
}

void add_jax_misc(InterpreterImpl& in, Value& jax) {
  auto& vars = jax.as<ModuleObj>()->env->vars;
  auto def = [&](const std::string& name, NativeFn f) {
    vars[name] = make_builtin(name, std::move(f));
  };
  // jax.Array: the class of every array (isinstance(x, jax.Array)); jnp.ndarray is its other name.
  vars["Array"] = make_type_at("Array", "jax.jaxlib._jax.Array");
  vars["numpy"].as<ModuleObj>()->env->vars["ndarray"] = vars["Array"]; // jnp.ndarray is jax.Array
  // jax.Device: the class of every device (type(jax.devices()[0]) == jax.Device).
  vars["Device"] = make_type_at("Device", "jaxlib._jax.Device");
  def("ShapeDtypeStruct", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("ShapeDtypeStruct", a, {"shape", "dtype", "sharding", "weak_type"}, 2);
    AVal aval;
    aval.shape = value_to_shape(r[0], "ShapeDtypeStruct() shape");
    aval.dtype = required_dtype(r[1], "ShapeDtypeStruct() dtype");
    aval.weak = r.get_bool(3, false);
    Value sharding = r.has(2) ? r[2] : Value();
    // A bare PartitionSpec names axes of the jax.set_mesh mesh, as in JAX
    // (with none, reading the sharding is JAX's TypeError).
    if (is_bare_spec(sharding))
      if (const Value* current = in.context_mesh(); current && value_to_mesh(*current))
        sharding = spec_over_current_mesh(in, sharding, "ShapeDtypeStruct");
    return make_struct(aval, sharding);
  });
  def("eval_shape", [](InterpreterImpl& in, CallArgs& a) {
    if (a.pos.empty())
      throw Error(ErrCode::Arguments, "eval_shape() missing required argument 'fun'");
    if (!a.kw.empty())
      throw Error(ErrCode::Arguments, "eval_shape() takes positional arguments only");
    Value fun = a.pos[0];
    ValueList args(a.pos.begin() + 1, a.pos.end());
    TracedFunction t = trace_abstract(in, fun, args, Span{}, "eval_shape");
    ValueList outs;
    for (int id : t.fn->results) {
      Value v = make_struct(t.fn->values[id].aval);
      AxisSet vma = t.fn->values[id].vma;
      auto* st = static_cast<ShapeDtypeStructObj*>(v.as<OpaqueObj>());
      for (size_t b = 0; b < t.fn->mesh_axes.size(); ++b)
        if (vma & (AxisSet{1} << b)) st->varying.push_back(t.fn->mesh_axes[b]);
      outs.push_back(v);
    }
    return tree_unflatten(t.out_tree, outs);
  });
  def("make_jaxpr", [](InterpreterImpl& in, CallArgs& a) {
    auto in_iterate_ints = [&](const Value& v) { return in.iterate(v, Span{}); };
    ArgReader r("make_jaxpr", a, {"fun", "static_argnums", "axis_env", "return_shape"}, 1);
    Value fun = r[0];
    std::vector<int64_t> statics;
    if (r.has(1) && !r[1].is_none()) {
      if (r[1].is_intlike())
        statics.push_back(r[1].as_int());
      else
        for (const Value& v : in_iterate_ints(r[1])) statics.push_back(v.as_int());
    }
    bool return_shape = r.get_bool(3, false);
    return make_builtin("make_jaxpr", [fun, statics, return_shape](InterpreterImpl& in,
                                                                   CallArgs& c) {
      if (!c.kw.empty())
        throw Error(ErrCode::Arguments, "make_jaxpr(f)() takes positional arguments only");
      // static_argnums: those arguments are bound into the traced function.
      auto is_static = [&](size_t i) {
        for (int64_t s : statics)
          if (s == static_cast<int64_t>(i) ||
              s + static_cast<int64_t>(c.pos.size()) == static_cast<int64_t>(i))
            return true;
        return false;
      };
      Value target = fun;
      ValueList dyn;
      if (!statics.empty()) {
        ValueList all = c.pos;
        std::vector<bool> stat;
        for (size_t i = 0; i < all.size(); ++i) {
          stat.push_back(is_static(i));
          if (!stat.back()) dyn.push_back(all[i]);
        }
        target = make_builtin("make_jaxpr", [fun, all, stat](InterpreterImpl& in2, CallArgs& d) {
          ValueList full;
          size_t k = 0;
          for (size_t i = 0; i < all.size(); ++i) full.push_back(stat[i] ? all[i] : d.pos.at(k++));
          return in2.call(fun, full, Span{});
        });
      } else {
        dyn = c.pos;
      }
      auto j = std::make_shared<JaxprObj>();
      // A value Python needs but cannot have: JAX's error with its origin (JAX's
      // make_jaxpr traces for jit).
      auto unknown = std::make_shared<UnknownValueLog>();
      TracedFunction t;
      try {
        auto log = log_unknown_values(nullptr, unknown);
        auto record = std::make_shared<JaxprRecord>();
        j->record = record;
        t = trace_abstract(in, target, dyn, Span{}, "make_jaxpr", [log, record](TraceContext& tc) {
          if (log) log(tc);
          tc.jaxpr_record = record;
        });
      } catch (Error& e) {
        if (!quotes_unknown_value(e)) throw;
        std::vector<std::string> param_names; // the function's parameter of each dynamic argument
        Value f = unwrapped_function(fun);
        const std::vector<Param>* ps =
            f.is_obj(ObjKind::Function) ? f.as<FunctionObj>()->params : nullptr;
        for (size_t i = 0; i < c.pos.size(); ++i) {
          if (is_static(i)) continue;
          std::string name;
          if (ps && i < ps->size() && (*ps)[i].kind == Param::Kind::Normal) name = (*ps)[i].name;
          param_names.push_back(name);
        }
        ValueList leaves;
        std::vector<std::string> names;
        for (const std::string& k : leaf_keystrs(tree_flatten(in, make_tuple(dyn), leaves))) {
          size_t close = k.find(']');
          size_t idx = static_cast<size_t>(std::stoll(k.substr(1, close - 1)));
          names.push_back(idx < param_names.size() && !param_names[idx].empty()
                              ? param_names[idx] + k.substr(close + 1)
                              : "");
        }
        throw with_trace_origin(e, "make_jaxpr", function_source_info(fun), names, *unknown, "jit");
      }
      j->fn = t.fn;
      j->consts = t.consts;
      if (!return_shape) return Value::object(j);
      // (jaxpr, the outputs' ShapeDtypeStructs in their tree)
      ValueList outs;
      for (int id : t.fn->results) {
        outs.push_back(make_struct(t.fn->values[static_cast<size_t>(id)].aval));
      }
      return make_tuple({Value::object(j), tree_unflatten(t.out_tree, outs)});
    });
  });
  def("process_index", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("process_index", a, {"backend"});
    return Value::integer(0);
  });
  def("process_count", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("process_count", a, {"backend"});
    return Value::integer(1);
  });
  auto config = std::make_shared<ConfigObj>();
  vars["config"] = Value::object(config);
  def("disable_jit", [config](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("disable_jit", a, {"disable"});
    bool disable = r.has(0) ? in.truthy(r[0], Span{}) : true;
    return Value::object(std::make_shared<DisableJitObj>(config, disable));
  });
  // jax.checkpoint_policies: remat's policy= is accepted and has no effect in
  // pxl (jax.checkpoint returns the function itself), but the names exist.
  ModuleBuilder policies("jax.checkpoint_policies");
  for (const char* name :
       {"everything_saveable", "nothing_saveable", "dots_saveable", "checkpoint_dots",
        "dots_with_no_batch_dims_saveable", "checkpoint_dots_with_no_batch_dims"}) {
    bool saves_all = std::string(name) == "everything_saveable";
    policies.fn(name,
                [saves_all](InterpreterImpl&, CallArgs&) { return Value::boolean(saves_all); });
  }
  for (const char* name :
       {"save_only_these_names", "save_any_names_but_these", "save_anything_except_these_names"})
    policies.fn(name, [name](InterpreterImpl&, CallArgs&) {
      return make_builtin(name, [](InterpreterImpl&, CallArgs&) { return Value::boolean(false); });
    });
  for (const char* name : {"offload_dot_with_no_batch_dims", "save_and_offload_only_these_names",
                           "save_from_both_policies"})
    policies.fn(name, [name](InterpreterImpl&, CallArgs&) {
      return make_builtin(name, [](InterpreterImpl&, CallArgs&) { return Value::boolean(false); });
    });
  vars["checkpoint_policies"] = policies.value();
  // jax.ad_checkpoint: checkpoint/remat and their policies again, and
  // checkpoint_name, which only names a value for a policy (the identity here).
  ModuleBuilder ad_checkpoint("jax.ad_checkpoint");
  ad_checkpoint.fn("checkpoint_name", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("checkpoint_name", a, {"x", "name"}, 2);
    return r[0];
  });
  Value adc = ad_checkpoint.value();
  adc.as<ModuleObj>()->env->vars["checkpoint_policies"] = vars["checkpoint_policies"];
  vars["ad_checkpoint"] = adc;
  in.register_module("jax.ad_checkpoint", adc);
}

} // namespace pxl
