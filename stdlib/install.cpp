// Builds every stdlib module and the predeclared globals (DESIGN §2: np, lax,
// jax, devices, device_count, tree_map, ...).
#include "lang/args.hpp"
#include "stdlib/arraylike_checks.hpp"
#include "stdlib/checkify.hpp"
#include "stdlib/convert.hpp"
#include "stdlib/module_builder.hpp"
#include "stdlib/mutable_ref.hpp"
#include "stdlib/numpy_twin.hpp"
#include "stdlib/prng_key.hpp"
#include "stdlib/pytree.hpp"
#include "stdlib/sharding.hpp"
#include "stdlib/transforms.hpp"

namespace pxl {

Value make_functools_module();
Value make_time_module();
Value make_os_module(InterpreterImpl& in);  // stdlib/mod_os.cpp
Value make_sys_module(InterpreterImpl& in); // stdlib/mod_sys.cpp
Value make_math_module();
void add_grad_functions(InterpreterImpl& in, Value& jax);     // stdlib/mod_grad.cpp
void add_lax_functions(InterpreterImpl& in, Value& lax);      // stdlib/mod_lax.cpp
void add_lax_complex(Value& lax);                             // stdlib/mod_lax_complex.cpp
void add_jax_misc(InterpreterImpl& in, Value& jax);           // stdlib/mod_jax_misc.cpp
void install_sharded_op_runner(InterpreterImpl& in);          // stdlib/eager_sharded.cpp
void add_custom_derivatives(InterpreterImpl& in, Value& jax); // stdlib/custom_derivatives.cpp
void add_custom_batching(InterpreterImpl& in, Value& jax);    // stdlib/custom_batching.cpp

Value make_lax_module(InterpreterImpl& in, const Value& np) {
  (void)in;
  ModuleBuilder b("jax.lax");
  static const char* same[] = {
      "exp",    "log",   "log1p", "expm1",   "sqrt",      "rsqrt",       "tanh",   "sin",
      "cos",    "tan",   "abs",   "sign",    "floor",     "ceil",        "round",  "pow",
      "square", "clamp", "dot",   "reshape", "transpose", "concatenate", "select", "is_finite"};
  const auto& src = np.as<ModuleObj>()->env->vars;
  for (const char* n : same)
    if (src.count(n)) b.alias(n, np);
  static const std::pair<const char*, const char*> renamed[] = {{"neg", "negative"},
                                                                {"add", "add"},
                                                                {"sub", "subtract"},
                                                                {"mul", "multiply"},
                                                                {"max", "maximum"},
                                                                {"min", "minimum"},
                                                                {"atan2", "arctan2"},
                                                                {"eq", "equal"},
                                                                {"ne", "not_equal"},
                                                                {"lt", "less"},
                                                                {"le", "less_equal"},
                                                                {"gt", "greater"},
                                                                {"ge", "greater_equal"},
                                                                {"bitwise_and", "bitwise_and"},
                                                                {"bitwise_or", "bitwise_or"},
                                                                {"bitwise_xor", "bitwise_xor"},
                                                                {"select", "where"},
                                                                {"is_finite", "isfinite"},
                                                                {"convert_element_type", "astype"},
                                                                {"broadcast_to", "broadcast_to"}};
  for (auto [mine, theirs] : renamed) b.alias(mine, np, theirs);
  b.fn("logistic", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("logistic", a, {"x"}, 1);
    return make_array(np::unary(in.ops(), np::UnOp::Logistic, in.to_tensor(r[0], Span{})));
  });
  b.fn("erf", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("erf", a, {"x"}, 1);
    return make_array(np::unary(in.ops(), np::UnOp::Erf, in.to_tensor(r[0], Span{})));
  });
  b.fn("erf_inv", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("erf_inv", a, {"x"}, 1);
    return make_array(np::unary(in.ops(), np::UnOp::ErfInv, in.to_tensor(r[0], Span{})));
  });
  return b.value();
}

void install_ufuncs(InterpreterImpl& in, const Value& np); // stdlib/ufunc.cpp

void install_stdlib(InterpreterImpl& in) {
  install_sharded_op_runner(in);
  Value np = make_numpy_module(in);
  Value lax = make_lax_module(in, np);
  add_lax_functions(in, lax);
  add_lax_complex(lax);
  Value random = make_random_module(in);
  install_key_arrays(in, np, random);

  ModuleBuilder jax("jax");
  jax.val("numpy", np);
  jax.val("lax", lax);
  jax.val("random", random);
  jax.fn("devices", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("devices", a, {"backend"});
    ValueList out;
    for (const Device& d : in.platform().devices()) out.push_back(device_value(d.platform, d.id));
    return make_list(std::move(out));
  });
  jax.alias("local_devices", jax.value(), "devices");
  jax.fn("device_count", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("device_count", a, {"backend"});
    return Value::integer(in.platform().device_count());
  });
  jax.alias("local_device_count", jax.value(), "device_count");
  jax.fn("default_backend", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("default_backend", a, {});
    return make_str(in.platform().name() == "cuda" ? "gpu" : "cpu"); // JAX's names
  });
  jax.fn("block_until_ready", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("block_until_ready", a, {"x"}, 1);
    // CUDA results are computed asynchronously; the CPU's are ready on return.
    ValueList leaves;
    tree_flatten(in, r[0], leaves);
    for (const Value& l : leaves)
      if (l.is_obj(ObjKind::Array)) {
        if (l.as<ArrayObj>()->deleted)
          throw Error(
              ErrCode::Value,
              "INVALID_ARGUMENT: BlockHostUntilReady() called on deleted or donated buffer");
        wait_ready(*l.as<ArrayObj>()->tensor);
      }
    return r[0];
  });
  jax.fn("device_get", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("device_get", a, {"x"}, 1);
    // JAX hands back host (numpy) arrays; pxl's nearest is each array whole on
    // one device: a sharded array is assembled, a deleted one is JAX's error.
    return map_tree(in, r[0], [&in](const Value& leaf) {
      if (!leaf.is_obj(ObjKind::Array)) return leaf;
      leaf.as<ArrayObj>()->check_live();
      const Tensor& t = leaf.as<ArrayObj>()->tensor;
      if (!t->sharded || !t->sharded->spans_devices()) return leaf;
      return make_array(make_tensor(in.ops().concrete(t)));
    });
  });
  Value jax_v = jax.value();

  ModuleBuilder tree_util("jax.tree_util"), tree("jax.tree");
  Value tu = tree_util.value(), tr = tree.value();
  add_tree_functions(in, tu, tr, jax_v);
  jax.val("tree_util", tu);
  jax.val("tree", tr);
  ModuleBuilder sharding("jax.sharding"), experimental("jax.experimental"),
      shard_map_mod("jax.experimental.shard_map");
  experimental.val("shard_map", shard_map_mod.value());
  jax.val("sharding", sharding.value());
  jax.val("experimental", experimental.value());

  Value sharding_v = sharding.value(), shard_map_v = shard_map_mod.value();
  add_sharding_functions(in, sharding_v, jax_v);
  add_spmd_functions(in, jax_v, shard_map_v);
  add_grad_functions(in, jax_v);
  add_custom_derivatives(in, jax_v);
  add_custom_batching(in, jax_v);
  add_jax_misc(in, jax_v);
  add_mutable_refs(in, jax_v);
  add_collectives(in, lax);
  add_jit(in, jax_v);
  add_vmap(in, jax_v);
  add_checkify(in, experimental);
  in.register_module("jax", jax_v);
  in.register_module("jax.numpy", np);
  in.register_module("jax.lax", lax);
  in.register_module("jax.random", random);
  in.register_module("jax.tree_util", tu);
  in.register_module("jax.tree", tr);
  in.register_module("jax.sharding", sharding.value());
  in.register_module("jax.experimental", experimental.value());
  in.register_module("jax.experimental.shard_map", shard_map_mod.value());
  in.register_module("functools", make_functools_module());
  in.register_module("time", make_time_module());
  in.register_module("math", make_math_module());
  Value os = make_os_module(in);
  in.register_module("os", os);
  in.register_module("os.path", os.as<ModuleObj>()->env->vars.at("path"));
  in.register_module("sys", make_sys_module(in));

  // Predeclared names: a script may use them without importing anything.
  in.define_builtin("np", np); // DESIGN §2: the predeclared np is jax.numpy
  in.define_builtin("lax", lax);
  in.define_builtin("jax", jax_v);
  for (const char* n : {"devices", "device_count", "tree_map"})
    in.define_builtin(n, jax_v.as<ModuleObj>()->env->vars.at(n));
  add_pxl_modules(in, jax_v); // nn.pxl imports jax
  // numpy converts lists where jax.numpy refuses them: its twin is made
  // before jax.numpy's functions get JAX's checks (stdlib/arraylike_checks.cpp).
  Value numpy = make_numpy_twin(in, np); // what `import numpy` gives
  add_arraylike_checks(in);
  install_ufuncs(in, np); // jnp.add & co. as ufunc objects (stdlib/ufunc.cpp)
  install_ufuncs(in, numpy);
  add_out_sharding(in, jax_v); // wraps functions of both kinds
}

} // namespace pxl
