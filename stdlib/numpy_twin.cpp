#include "stdlib/numpy_twin.hpp"

#include "runtime/eager.hpp"
#include "stdlib/module_builder.hpp"

namespace pxl {

namespace {

Value copy_module(const Value& m, const std::string& name) {
  auto twin = std::make_shared<ModuleObj>(name);
  twin->env->vars = m.as<ModuleObj>()->env->vars;
  twin->path = m.as<ModuleObj>()->path;
  return Value::object(twin);
}

// numpy's array(x)/asarray(x) of a device array is a host copy: here the
// array on the default device, uncommitted (one spanning devices gathered).
// A numpy array is never weakly typed: np.array(2.0) is float64 in NumPy,
// which JAX takes as a strong float32 (float64 * f16 array is float32).
void make_host_copies(Value& np, const char* name) {
  auto& vars = np.as<ModuleObj>()->env->vars;
  auto it = vars.find(name);
  if (it == vars.end()) return;
  Value inner = it->second;
  it->second = make_builtin(name, [inner](InterpreterImpl& in, CallArgs& a) {
    Value result = in.call(inner, a, in.ops().loc); // errors inside at the user's call
    auto* eager = dynamic_cast<EagerContext*>(&in.ops());
    if (!eager || !result.is_obj(ObjKind::Array)) return result;
    const Tensor& t = result.as<ArrayObj>()->tensor;
    if (t->sharded && t->sharded->spans_devices())
      return make_array(make_tensor(eager->concrete(t).on_device(eager->device())));
    if (!t->concrete || t->sharded) return result;
    if (t->concrete->weak_type())
      return make_array(make_tensor(t->concrete->with_weak(false).on_device(eager->device())));
    if (t->concrete->device() == eager->device())
      return result.as<ArrayObj>()->committed ? make_array(t) : result;
    return make_array(make_tensor(t->concrete->on_device(eager->device())));
  });
}

} // namespace

Value make_numpy_twin(InterpreterImpl& in, const Value& jnp) {
  Value np = copy_module(jnp, "numpy");
  auto& vars = np.as<ModuleObj>()->env->vars;
  in.register_module("numpy", np);
  for (const char* sub : {"linalg", "fft"}) {
    auto it = vars.find(sub);
    if (it == vars.end() || !it->second.is_obj(ObjKind::Module)) continue;
    it->second = copy_module(it->second, std::string("numpy.") + sub);
    in.register_module(std::string("numpy.") + sub, it->second);
  }
  make_host_copies(np, "array");
  make_host_copies(np, "asarray");
  vars["random"] = make_numpy_random_module(in);
  in.register_module("numpy.random", vars["random"]);
  return np;
}

} // namespace pxl
