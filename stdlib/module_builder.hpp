// A small helper for defining host modules in C++.
#pragma once
#include "lang/interp_impl.hpp"

namespace pxl {

struct ModuleBuilder {
  explicit ModuleBuilder(const std::string& name) : mod(std::make_shared<ModuleObj>(name)) {}
  std::shared_ptr<ModuleObj> mod;
  void fn(const std::string& name, NativeFn f) {
    mod->env->vars[name] = make_builtin(name, std::move(f));
  }
  void val(const std::string& name, Value v) { mod->env->vars[name] = std::move(v); }
  Value value() const { return Value::object(mod); }
  // Copies an attribute of another module (aliases such as jax.numpy.sum == np.sum).
  void alias(const std::string& name, const Value& other_module,
             const std::string& other_name = "") {
    mod->env->vars[name] =
        other_module.as<ModuleObj>()->env->vars.at(other_name.empty() ? name : other_name);
  }
};

// Module installers (stdlib/mod_*.cpp).
Value make_numpy_module(InterpreterImpl& in);
Value make_random_module(InterpreterImpl& in);
Value make_numpy_random_module(InterpreterImpl& in); // numpy.random (mod_numpy_random.cpp)
Value make_lax_module(InterpreterImpl& in, const Value& np);
// finfo, iinfo, result_type, promote_types, issubdtype (stdlib/np_dtypes.cpp).
void def_dtype_queries(ModuleBuilder& b);

} // namespace pxl
