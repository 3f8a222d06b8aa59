// Imports: host modules registered by stdlib/ ("jax.numpy", "functools", ...)
// and sibling .pxl files, loaded once per interpreter and cached.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "lang/interp_impl.hpp"
#include "lang/parser.hpp"

namespace fs = std::filesystem;

namespace pxl {

void InterpreterImpl::register_module(const std::string& name, Value module) {
  modules_[name] = module;
  // A stdlib source module (scipy_linalg) takes the public dotted name it is
  // first registered under (jax.scipy.linalg), which its repr and errors show.
  if (module.is_obj(ObjKind::Module) && name.find('.') != std::string::npos) {
    auto* m = module.as<ModuleObj>();
    if (m->name.find('.') == std::string::npos && source_modules_.count(m->name)) m->name = name;
  }
  // Make "a.b" reachable as attribute b of module a when both are host modules.
  size_t dot = name.rfind('.');
  if (dot != std::string::npos) {
    auto parent = modules_.find(name.substr(0, dot));
    if (parent != modules_.end() && parent->second.is_obj(ObjKind::Module)) {
      auto& vars = parent->second.as<ModuleObj>()->env->vars;
      if (!vars.count(name.substr(dot + 1))) vars[name.substr(dot + 1)] = module;
    }
  }
  // ... and its submodules registered before it, attributes of it.
  if (!module.is_obj(ObjKind::Module)) return;
  auto& vars = module.as<ModuleObj>()->env->vars;
  const std::string prefix = name + ".";
  for (auto it = modules_.lower_bound(prefix);
       it != modules_.end() && it->first.starts_with(prefix); ++it) {
    std::string child = it->first.substr(prefix.size());
    if (child.find('.') == std::string::npos && !vars.count(child)) vars[child] = it->second;
  }
}

Value InterpreterImpl::import_module(const std::string& dotted, const Span& where,
                                     const std::string& from_dir) {
  auto it = modules_.find(dotted);
  if (it != modules_.end()) return it->second;
  // A stdlib module written in pxl (nn, optim): loaded once, then a host module.
  auto src = source_modules_.find(dotted);
  if (src != source_modules_.end()) {
    // As Python, a package loads before its submodules: `import a.b.c` where
    // a.b is itself a stdlib source module makes c an attribute of a loaded a.b.
    size_t dot = dotted.rfind('.');
    if (dot != std::string::npos && source_modules_.count(dotted.substr(0, dot)))
      import_module(dotted.substr(0, dot), where, from_dir);
    it = modules_.find(dotted); // the package may have imported its submodule
    if (it != modules_.end()) return it->second;
    Value m = load_source_module(dotted, "<stdlib>/" + dotted, src->second.first,
                                 src->second.second, where);
    register_module(dotted, m);
    return m;
  }
  // A .pxl file next to the importing script: "import helpers" -> helpers.pxl.
  std::string rel = dotted;
  for (char& c : rel)
    if (c == '.') c = '/';
  std::vector<fs::path> candidates = {fs::path(from_dir.empty() ? "." : from_dir) / (rel + ".pxl")};
  for (const fs::path& p : candidates) {
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) continue;
    std::string key = fs::weakly_canonical(p, ec).string();
    auto cached = file_modules_.find(key);
    if (cached != file_modules_.end()) return cached->second;
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    if (!f) throw Error(ErrCode::IO, "cannot read module file '" + p.string() + "'", where);
    return load_source_module(dotted, key, p.string(), ss.str(), where);
  }
  std::string top = dotted.substr(0, dotted.find('.'));
  std::string hint;
  if (top == "torch" || top == "tensorflow" || top == "flax" || top == "optax")
    hint = "pxl provides jax, jax.numpy, jax.lax, jax.random, jax.sharding, "
           "jax.experimental.shard_map, jax.tree_util, nn, optim, functools, itertools, "
           "collections, time, math and os";
  throw Error(ErrCode::Import,
              "no module named '" + dotted + "' (not a pxl stdlib module, and no " + rel +
                  ".pxl next to the script)",
              where, hint);
}

Value InterpreterImpl::load_source_module(const std::string& dotted, const std::string& key,
                                          const std::string& path, std::string text,
                                          const Span& where) {
  if (std::find(importing_.begin(), importing_.end(), key) != importing_.end())
    throw Error(ErrCode::Import, "circular import of '" + dotted + "'", where);
  auto mod = std::make_shared<ModuleObj>(dotted);
  mod->path = path;
  mod->env = std::make_shared<Env>(builtins_);
  mod->env->vars["__name__"] = make_str(dotted);
  mod->env->vars["__file__"] = make_str(path);
  Value mv = Value::object(mod);
  importing_.push_back(key);
  try {
    auto src = std::make_shared<SourceFile>(path, std::move(text));
    run_source(src, mod->env, false);
  } catch (...) {
    importing_.pop_back();
    throw;
  }
  importing_.pop_back();
  file_modules_[key] = mv;
  return mv;
}

} // namespace pxl
