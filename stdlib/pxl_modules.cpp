// The stdlib modules written in pxl itself (stdlib/*.pxl), embedded at build
// time. `import nn` loads one on first use; jax.nn is the same module as nn.
#include "lang/args.hpp"
#include "stdlib/aot_stages.hpp"
#include "stdlib/float0.hpp"
#include "stdlib/module_builder.hpp"
#include "stdlib/sparse_class.hpp"
#include "stdlib/transforms.hpp"

namespace pxl {

void add_object_makers(ModuleBuilder& types, ModuleBuilder& collections); // stdlib/mod_objects.cpp

namespace {

struct EmbeddedSource {
  const char* name;
  const char* text;
};

constexpr EmbeddedSource kSources[] = {
#include "pxl_stdlib_sources.inc"
};

// types.SimpleNamespace: an object with the given attributes (pxl has no
// classes; optim's optimizers are namespaces of closures, as optax's NamedTuples).
struct Namespace : OpaqueObj {
  std::vector<std::pair<std::string, Value>> fields;
  std::string type_name() const override { return "SimpleNamespace"; }
  std::string repr() const override {
    std::string s = "namespace(";
    for (size_t i = 0; i < fields.size(); ++i)
      s += (i ? ", " : "") + fields[i].first + "=" + pxl::repr(fields[i].second);
    return s + ")";
  }
  bool get_attr(InterpreterImpl&, const std::string& name, Value& out) override {
    for (const auto& [k, v] : fields)
      if (k == name) return out = v, true;
    return false;
  }
  std::vector<std::string> attr_names() const override {
    std::vector<std::string> out;
    for (const auto& f : fields) out.push_back(f.first);
    return out;
  }
};

// Loads the stdlib module `file` and copies its public names into `into`.
void merge_functions(InterpreterImpl& in, const char* file, const Value& into) {
  Value extra = in.import_module(file, Span{}, "");
  for (const auto& [name, v] : extra.as<ModuleObj>()->env->vars) {
    // Everything public but the modules the file imported: functions, namespaces
    // (lax.GatherScatterMode), index objects (jnp.r_), constants, dtype aliases.
    if (!name.empty() && name[0] != '_' && !v.is_obj(ObjKind::Module))
      into.as<ModuleObj>()->env->vars[name] = v;
  }
}

} // namespace

void add_pxl_modules(InterpreterImpl& in, Value& jax) {
  ModuleBuilder types("types");
  types.fn("SimpleNamespace", [](InterpreterImpl&, CallArgs& a) {
    if (!a.pos.empty())
      throw Error(ErrCode::Arguments, "SimpleNamespace() takes keyword arguments only");
    auto ns = std::make_shared<Namespace>();
    ns->fields = a.kw;
    return Value::object(ns);
  });
  ModuleBuilder collections("collections");
  add_object_makers(types, collections);
  add_float0_builtins(types);
  add_sparse_class_builtin(types);       // stdlib/sparse_class.cpp
  types.fn("_lowered", lowered_builtin); // stdlib/aot_stages.cpp
  // _as_user_op(fn, *args): fn(*args) bound as the user's own op, not as part
  // of a library composite (OpContext::library_call): for the stdlib's thin
  // wrappers of one primitive (lax.exp), which XLA compiles alone.
  types.fn("_as_user_op", [](InterpreterImpl& in, CallArgs& a) {
    if (a.pos.empty()) throw Error(ErrCode::Arguments, "_as_user_op() needs a function");
    CallArgs rest;
    rest.pos.assign(a.pos.begin() + 1, a.pos.end());
    rest.kw = a.kw;
    LibraryCallScope user(in.ops(), false);
    return in.call(a.pos[0], rest, Span{});
  });
  // @types._eager_ops: the decorated stdlib function's own ops are the
  // user's (FunctionObj::eager_ops), as a plain Python function's in JAX.
  types.fn("_eager_ops", [](InterpreterImpl&, CallArgs& a) {
    if (a.pos.size() != 1 || !a.kw.empty() || !a.pos[0].is_obj(ObjKind::Function))
      throw Error(ErrCode::Arguments, "_eager_ops() decorates one def");
    a.pos[0].as<FunctionObj>()->eager_ops = true;
    return a.pos[0];
  });
  in.register_module("types", types.value());
  in.register_module("collections", collections.value());
  for (const EmbeddedSource& s : kSources)
    in.register_source_module(s.name, std::string("<stdlib>/") + s.name + ".pxl", s.text);
  // jax.example_libraries: a package whose stax and optimizers load on first
  // import (`from jax.example_libraries import stax` finds them as submodules).
  ModuleBuilder examples("jax.example_libraries");
  jax.as<ModuleObj>()->env->vars["example_libraries"] = examples.value();
  in.register_module("jax.example_libraries", examples.value());
  // Modules JAX loads only when imported by their dotted name: pxl loads them
  // then too (`import jax.experimental.ode`, `from jax.scipy.optimize import minimize`).
  static const std::pair<const char*, const char*> lazy[] = {
      {"jax.example_libraries.stax", "example_libraries_stax"},
      {"jax.example_libraries.optimizers", "example_libraries_optimizers"},
      {"jax.experimental.ode", "experimental_ode"},
      {"jax.experimental.jet", "experimental_jet"},
      {"jax.experimental.sparse", "experimental_sparse"},
      {"jax.scipy.optimize", "scipy_optimize"},
      {"jax._src.scipy.optimize.line_search", "scipy_optimize"}, // what JAX's tests import
      {"jax._src.lax", "jax_src_lax"},                           // its `parallel`
      {"jax._src.lax.parallel", "lax_parallel"},                 // pargmax, pargmin
      {"jax._src.tpu.linalg", "tpu_linalg"},                     // its svd and qdwh
      {"jax.scipy.spatial", "scipy_spatial"},
      {"jax.scipy.spatial.transform", "scipy_spatial_transform"},       // Rotation, Slerp
      {"jax.experimental.sparse.linalg", "experimental_sparse_linalg"}, // lobpcg_standard
      {"jax.experimental.shard_alike", "experimental_shard_alike"},
      {"jax.flatten_util", "flatten_util"}, // ravel_pytree
  };
  for (auto [dotted, file] : lazy)
    for (const EmbeddedSource& s : kSources)
      if (std::string(s.name) == file)
        in.register_source_module(dotted, std::string("<stdlib>/") + s.name + ".pxl", s.text);
  // numpy_*.pxl define more of jax.numpy in pxl: merge their public functions into np.
  Value np = jax.as<ModuleObj>()->env->vars.at("numpy");
  for (const char* file :
       {"numpy_extra", "numpy_more", "numpy_sort", "numpy_elementwise", "numpy_construct",
        "numpy_poly_signal", "numpy_stats", "numpy_index_sets", "numpy_functional", "numpy_rest"})
    merge_functions(in, file, np);
  // jax.lax.linalg: the factorization primitives with their JVP rules.
  Value lax = jax.as<ModuleObj>()->env->vars.at("lax");
  Value lax_linalg = in.import_module("linalg_lax", Span{}, "");
  lax.as<ModuleObj>()->env->vars["linalg"] = lax_linalg;
  in.register_module("jax.lax.linalg", lax_linalg);
  in.register_module("jax._src.lax.linalg", lax_linalg); // what JAX's tests import
  merge_functions(in, "linalg_tridiagonal", lax_linalg); // tridiagonal_solve
  merge_functions(in, "linalg_qdwh", lax_linalg);        // qdwh
  // np.linalg (also jax.numpy.linalg).
  Value linalg = in.import_module("numpy_linalg", Span{}, "");
  np.as<ModuleObj>()->env->vars["linalg"] = linalg;
  in.register_module("jax.numpy.linalg", linalg);
  in.register_module("numpy.linalg", linalg);
  // np.fft (also jax.numpy.fft), on lax.fft.
  Value fft = in.import_module("numpy_fft", Span{}, "");
  np.as<ModuleObj>()->env->vars["fft"] = fft;
  in.register_module("jax.numpy.fft", fft);
  in.register_module("numpy.fft", fft);
  // random_extra.pxl: more samplers, merged into jax.random.
  merge_functions(in, "random_extra", jax.as<ModuleObj>()->env->vars.at("random"));
  // lax_extra.pxl likewise for jax.lax (control flow, slicing helpers).
  merge_functions(in, "lax_extra", lax);
  merge_functions(in, "lax_loops", lax);   // scan, map, cond, switch, while_loop's host loop
  merge_functions(in, "lax_conv", lax);    // convolutions, reduce_window, reduce
  merge_functions(in, "lax_gather", lax);  // gather, scatter
  merge_functions(in, "lax_rest", lax);    // nextafter, mulhi, custom_root, ...
  merge_functions(in, "lax_special", lax); // lgamma, digamma, igamma, betainc, ...
  merge_functions(in, "lax_rng", lax);     // rng_bit_generator (Philox, as XLA on CPU)
  merge_functions(in, "lax_ragged", lax);  // ragged_dot, ragged_dot_general
  // lax names of np functions, some of which the files above just defined.
  static const std::pair<const char*, const char*> from_np[] = {
      {"asin", "arcsin"},   {"acos", "arccos"},   {"atan", "arctan"},
      {"sinh", "sinh"},     {"cosh", "cosh"},     {"asinh", "arcsinh"},
      {"acosh", "arccosh"}, {"atanh", "arctanh"}, {"cbrt", "cbrt"}};
  auto& np_vars = np.as<ModuleObj>()->env->vars;
  for (auto [mine, theirs] : from_np)
    if (np_vars.count(theirs)) lax.as<ModuleObj>()->env->vars[mine] = np_vars.at(theirs);
  merge_functions(in, "lax_checked", lax); // JAX's dtype and shape checks over the above
  // jax_extra.pxl: jvp, jacfwd, jacrev, hessian, checkpoint into jax.
  merge_functions(in, "jax_extra", jax);
  {
    auto& jv = jax.as<ModuleObj>()->env->vars;
    auto& adc = jv.at("ad_checkpoint").as<ModuleObj>()->env->vars; // stdlib/mod_jax_misc.cpp
    adc["checkpoint"] = jv.at("checkpoint");
    adc["remat"] = jv.at("remat");
  }
  merge_functions(in, "jax_rest", jax); // linear_transpose, named_scope, ...
  {
    // jax.pure_callback and jax.experimental.io_callback.
    Value cbs = in.import_module("callbacks", Span{}, "");
    auto& cv = cbs.as<ModuleObj>()->env->vars;
    jax.as<ModuleObj>()->env->vars["pure_callback"] = cv.at("pure_callback");
    jax.as<ModuleObj>()->env->vars.at("experimental").as<ModuleObj>()->env->vars["io_callback"] =
        cv.at("io_callback");
  }
  merge_functions(in, "sharding_axes",
                  jax.as<ModuleObj>()->env->vars.at("sharding")); // auto_axes, explicit_axes
  Value pjit = in.import_module("experimental_pjit", Span{}, ""); // jax.experimental.pjit
  jax.as<ModuleObj>()->env->vars.at("experimental").as<ModuleObj>()->env->vars["pjit"] = pjit;
  in.register_module("jax.experimental.pjit", pjit);
  {
    Value ext_random = in.import_module("jax_extend_random", Span{}, ""); // threefry_2x32
    ModuleBuilder ext("jax.extend");
    ext.val("random", ext_random);
    jax.as<ModuleObj>()->env->vars["extend"] = ext.value();
    in.register_module("jax.extend", ext.value());
    in.register_module("jax.extend.random", ext_random);
  }
  Value test_util = in.import_module("jax_test_util", Span{}, ""); // check_grads, ...
  jax.as<ModuleObj>()->env->vars["test_util"] = test_util;
  in.register_module("jax.test_util", test_util);
  Value multihost = in.import_module("experimental_multihost_utils", Span{}, ""); // one process
  jax.as<ModuleObj>()->env->vars.at("experimental").as<ModuleObj>()->env->vars["multihost_utils"] =
      multihost;
  in.register_module("jax.experimental.multihost_utils", multihost);
  Value ops = in.import_module("jax_ops", Span{}, ""); // segment_sum, ...
  jax.as<ModuleObj>()->env->vars["ops"] = ops;
  in.register_module("jax.ops", ops);
  Value jax_typing = in.import_module("jax_typing", Span{}, ""); // annotation aliases
  jax.as<ModuleObj>()->env->vars["typing"] = jax_typing;
  in.register_module("jax.typing", jax_typing);
  Value dtypes = in.import_module("jax_dtypes", Span{}, "");
  jax.as<ModuleObj>()->env->vars["dtypes"] = dtypes;
  Value float0 = float0_dtype();
  dtypes.as<ModuleObj>()->env->vars["float0"] = float0;
  jax.as<ModuleObj>()->env->vars["float0"] = float0; // jax.float0 is jax.dtypes.float0
  in.register_module("jax.dtypes", dtypes);
  // jax._src.dtypes: the internal module JAX's tests import (is_weakly_typed).
  Value src_dtypes = in.import_module("jax_src_dtypes", Span{}, "");
  ModuleBuilder src("jax._src");
  src.val("dtypes", src_dtypes);
  jax.as<ModuleObj>()->env->vars["_src"] = src.value();
  in.register_module("jax._src", src.value());
  in.register_module("jax._src.dtypes", src_dtypes);
  // jax.scipy: special and the stats distributions (loaded now: attributes of
  // jax.scipy; before nn, whose logsumexp is jax.scipy.special's).
  Value special = in.import_module("scipy_special", Span{}, "");
  ModuleBuilder stats("jax.scipy.stats");
  for (const char* dist :
       {"norm",        "uniform",  "expon",    "gamma",      "beta",     "t",
        "cauchy",      "laplace",  "logistic", "chi2",       "pareto",   "poisson",
        "bernoulli",   "geom",     "binom",    "dirichlet",  "gennorm",  "multivariate_normal",
        "betabinom",   "nbinom",   "vonmises", "wrapcauchy", "gumbel_l", "gumbel_r",
        "multinomial", "truncnorm"}) {
    Value m = in.import_module(std::string("scipy_stats_") + dist, Span{}, "");
    stats.val(dist, m);
    in.register_module(std::string("jax.scipy.stats.") + dist, m);
  }
  Value stats_core = in.import_module("scipy_stats_core", Span{}, "");
  for (const char* fn : {"mode", "rankdata", "sem"})
    stats.val(fn, stats_core.as<ModuleObj>()->env->vars.at(fn));
  Value stats_kde = in.import_module("scipy_stats_kde", Span{}, "");
  stats.val("gaussian_kde", stats_kde.as<ModuleObj>()->env->vars.at("gaussian_kde"));
  Value scipy_linalg = in.import_module("scipy_linalg", Span{}, "");
  merge_functions(in, "scipy_linalg_tridiagonal", scipy_linalg); // eigh_tridiagonal
  merge_functions(in, "scipy_linalg_matrices",
                  scipy_linalg); // pascal, invpascal, invhilbert, dft, fiedler_companion
  Value scipy_signal = in.import_module("scipy_signal", Span{}, "");   // convolve, correlate, ...
  merge_functions(in, "scipy_signal_spectral", scipy_signal);          // stft, istft, csd, welch
  Value scipy_ndimage = in.import_module("scipy_ndimage", Span{}, ""); // map_coordinates
  Value scipy_interpolate =
      in.import_module("scipy_interpolate", Span{}, "");       // RegularGridInterpolator
  Value scipy_fft = in.import_module("scipy_fft", Span{}, ""); // dct, dctn, idct, idctn
  ModuleBuilder scipy("jax.scipy");
  scipy.val("special", special);
  scipy.val("linalg", scipy_linalg);
  scipy.val("signal", scipy_signal);
  scipy.val("ndimage", scipy_ndimage);
  scipy.val("interpolate", scipy_interpolate);
  scipy.val("fft", scipy_fft);
  ModuleBuilder integrate("jax.scipy.integrate"); // trapezoid is jnp.trapezoid, as in JAX
  integrate.val("trapezoid", np_vars.at("trapezoid"));
  scipy.val("integrate", integrate.value());
  scipy.val("stats", stats.value());
  // jax.scipy packages of one pxl module each: jax.scipy.<package>.<sub>.
  auto package = [&](const std::string& name, const std::string& sub, const char* file) {
    Value mod = in.import_module(file, Span{}, "");
    ModuleBuilder pkg("jax.scipy." + name);
    pkg.val(sub, mod);
    scipy.val(name, pkg.value());
    in.register_module("jax.scipy." + name, pkg.value());
    in.register_module("jax.scipy." + name + "." + sub, mod);
  };
  package("cluster", "vq", "scipy_cluster_vq");
  package("sparse", "linalg", "scipy_sparse_linalg"); // cg, gmres, bicgstab
  jax.as<ModuleObj>()->env->vars["scipy"] = scipy.value();
  in.register_module("jax.scipy", scipy.value());
  in.register_module("jax.scipy.special", special);
  in.register_module("jax.scipy.linalg", scipy_linalg);
  in.register_module("jax.scipy.signal", scipy_signal);
  in.register_module("jax.scipy.ndimage", scipy_ndimage);
  in.register_module("jax.scipy.interpolate", scipy_interpolate);
  in.register_module("jax.scipy.fft", scipy_fft);
  in.register_module("jax.scipy.integrate", integrate.value());
  // jax.image: resize and scale_and_translate (stdlib/image.pxl).
  Value image = in.import_module("image", Span{}, "");
  jax.as<ModuleObj>()->env->vars["image"] = image;
  in.register_module("jax.image", image);
  in.register_module("jax.scipy.stats", stats.value());
  // jax.nn must be an attribute of the jax module, so nn loads now (a few defs).
  Value nn = in.import_module("nn", Span{}, "");
  jax.as<ModuleObj>()->env->vars["nn"] = nn;
  in.register_module("jax.nn", nn);
  Value inits = in.import_module("nn_initializers", Span{}, "");
  nn.as<ModuleObj>()->env->vars["initializers"] = inits;
  in.register_module("jax.nn.initializers", inits);
}

} // namespace pxl
