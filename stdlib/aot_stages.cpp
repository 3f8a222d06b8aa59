#include "stdlib/aot_stages.hpp"

#include <algorithm>

#include "lang/args.hpp"
#include "stdlib/shape_dtype_struct.hpp"
#include "stdlib/sharding_rules.hpp"

namespace pxl {

namespace {

// Python's type of a pytree node, as JAX's equality errors name it.
std::string node_type(const TreeDef& d) {
  switch (d.kind) {
  case TreeDef::Kind::Leaf:
    return "pytree leaf";
  case TreeDef::Kind::None:
    return "<class 'NoneType'>";
  case TreeDef::Kind::Tuple:
    return "<class 'tuple'>";
  case TreeDef::Kind::List:
    return "<class 'list'>";
  case TreeDef::Kind::Dict:
    return "<class 'dict'>";
  case TreeDef::Kind::NamedTuple:
    return "<class '__main__." + d.nt_type->name + "'>";
  case TreeDef::Kind::Key:
    return "pytree leaf";
  case TreeDef::Kind::Partial:
    return "<class 'jax._src.tree_util.Partial'>";
  }
  return "?";
}

struct Mismatch {
  std::string path, now, seen, why;
};

// JAX's tree_util._equality_errors between the called (`now`) and the
// compiled (`seen`) argument trees.
void equality_errors(const TreeDef& now, const TreeDef& seen, const std::string& path,
                     std::vector<Mismatch>& out) {
  bool now_leaf = now.kind == TreeDef::Kind::Leaf, seen_leaf = seen.kind == TreeDef::Kind::Leaf;
  if (now_leaf && seen_leaf) return;
  if (now.kind != seen.kind ||
      (now.kind == TreeDef::Kind::NamedTuple && now.nt_type != seen.nt_type)) {
    out.push_back({path, node_type(now), node_type(seen), "their Python types differ"});
    return;
  }
  bool seq = now.kind == TreeDef::Kind::Tuple || now.kind == TreeDef::Kind::List;
  std::string name = now.kind == TreeDef::Kind::Tuple ? "tuple" : "list";
  if (seq && now.children.size() != seen.children.size()) {
    out.push_back({path, name + " of length " + std::to_string(now.children.size()),
                   name + " of length " + std::to_string(seen.children.size()),
                   "the lengths do not match"});
    return;
  }
  auto children = [&](const TreeDef& d) {
    size_t k = d.children.size();
    return node_type(d) + " with " + std::to_string(k) + " child" + (k > 1 ? "ren" : "");
  };
  if (now.children.size() != seen.children.size()) {
    std::string why = "the numbers of children do not match";
    if (now.kind == TreeDef::Kind::Dict) { // JAX names the keys only one side has, as a Python set
      std::vector<std::string> only;
      auto add_missing = [&](const TreeDef& a, const TreeDef& b) {
        for (const Value& k : a.keys) {
          bool found = false;
          for (const Value& o : b.keys) found = found || repr(o) == repr(k);
          if (!found) only.push_back(repr(k));
        }
      };
      add_missing(now, seen);
      add_missing(seen, now);
      std::sort(only.begin(), only.end());
      std::string set;
      for (const std::string& k : only) set += (set.empty() ? "" : ", ") + k;
      why += ", with the symmetric difference of key sets: {" + set + "}";
    }
    out.push_back({path, children(now), children(seen), why});
    return;
  }
  auto same_keys = [](const ValueList& a, const ValueList& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (repr(a[i]) != repr(b[i])) return false;
    return true;
  };
  if (now.kind == TreeDef::Kind::Dict && !same_keys(now.keys, seen.keys)) {
    auto keys = [](const TreeDef& d) {
      std::string s = "[";
      for (size_t i = 0; i < d.keys.size(); ++i) s += (i ? ", " : "") + repr(d.keys[i]);
      return s + "]";
    };
    out.push_back({path, node_type(now) + " with pytree metadata " + keys(now),
                   node_type(seen) + " with pytree metadata " + keys(seen),
                   "the pytree node metadata does not match"});
    return;
  }
  for (size_t i = 0; i < now.children.size(); ++i) {
    std::string key = now.kind == TreeDef::Kind::Dict ? "[" + repr(now.keys[i]) + "]"
                                                      : "[" + std::to_string(i) + "]";
    if (now.kind == TreeDef::Kind::NamedTuple) key = "." + now.nt_type->fields[i];
    equality_errors(now.children[i], seen.children[i], path + key, out);
  }
}

struct StageObj : OpaqueObj {
  std::shared_ptr<const StagedCall> s;
  bool compiled;
  StageObj(std::shared_ptr<const StagedCall> sc, bool c) : s(std::move(sc)), compiled(c) {}
  std::string type_name() const override { return compiled ? "Compiled" : "Lowered"; }
  std::string repr() const override { return "<jax._src.stages." + type_name() + " object>"; }

  bool get_attr(InterpreterImpl& in, const std::string& name, Value& out) override {
    // What only a Compiled knows (its shardings), computed when asked: the
    // attrs' "_compiled_NAME" function (stdlib/jax_rest.pxl).
    if (compiled && s->attrs.is_obj(ObjKind::Dict))
      if (const Value* fn = s->attrs.as<DictObj>()->find(make_str("_compiled_" + name)))
        return out = in.call(*fn, ValueList{}, Span{}), true;
    if (s->attrs.is_obj(ObjKind::Dict))
      if (const Value* v = s->attrs.as<DictObj>()->find(make_str(name))) return out = *v, true;
    auto staged = s;
    if (name == "compile" && !compiled) {
      out = make_builtin("compile", [staged](InterpreterImpl&, CallArgs& a) {
        ArgReader r("compile", a, {"compiler_options"}, 0);
        if (r.has(0) && r[0].is_obj(ObjKind::Dict))
          r[0].as<DictObj>()->for_each([](const Value& k, const Value&) {
            // XLA knows its own flags (xla_*) only: JAX's JaxRuntimeError.
            std::string key = k.is_obj(ObjKind::Str) ? k.as<StrObj>()->value : pxl::repr(k);
            if (key.rfind("xla_", 0) != 0)
              throw Error(ErrCode::Value,
                          "INVALID_ARGUMENT: No such compile option: '" + key + "'");
          });
        return Value::object(std::make_shared<StageObj>(staged, true));
      });
      return true;
    }
    if (name == "as_text" || name == "compiler_ir") { // the traced program: pxl's IR, not StableHLO
      out = make_builtin(name,
                         [staged](InterpreterImpl&, CallArgs&) { return make_str(staged->text); });
      return true;
    }
    if (name == "cost_analysis" || name == "memory_analysis") { // nothing measured: empty
      out = make_builtin(name, [](InterpreterImpl&, CallArgs&) {
        return Value::object(std::make_shared<DictObj>());
      });
      return true;
    }
    if (name == "runtime_executable") {
      out = make_builtin(name, [staged](InterpreterImpl&, CallArgs&) { return staged->fn; });
      return true;
    }
    if (name == "in_tree") return out = tree_structure_value(s->in_tree), true;
    if (name == "_no_kwargs") return out = Value::boolean(false), true;
    return false;
  }
  std::vector<std::string> attr_names() const override {
    std::vector<std::string> names{"as_text", "compiler_ir", "cost_analysis", "in_tree"};
    if (compiled)
      names.insert(names.end(), {"memory_analysis", "runtime_executable"});
    else
      names.push_back("compile");
    if (s->attrs.is_obj(ObjKind::Dict))
      s->attrs.as<DictObj>()->for_each([&](const Value& k, const Value&) {
        std::string n = pxl::str(k);
        if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
      });
    return names;
  }

  bool call(InterpreterImpl& in, CallArgs& a, const Span& where, Value& out) override {
    if (!compiled) return false;
    StagedCall now;
    stage_arguments(in, a, where, now);
    if (!(now.in_tree == s->in_tree)) {
      std::vector<Mismatch> errs;
      for (size_t i = 0; i < 2 && i < now.in_tree.children.size() && i < s->in_tree.children.size();
           ++i)
        equality_errors(now.in_tree.children[i], s->in_tree.children[i], i ? "kwargs" : "args",
                        errs);
      std::string msg =
          "Function compiled with input pytree does not match the input pytree it was called with. "
          "There are " +
          std::to_string(errs.size()) + " mismatches, including:";
      for (const Mismatch& m : errs)
        msg += "\n    * at " + m.path + ", seen " + m.seen + " but now given " + m.now + ", so " +
               m.why;
      throw Error(ErrCode::Type, msg, where);
    }
    std::vector<std::string> errors;
    for (size_t i = 0; i < now.in_avals.size(); ++i) {
      const AVal &ref = s->in_avals[i], &got = now.in_avals[i];
      if (ref.shape != got.shape || ref.dtype != got.dtype)
        errors.push_back("Argument '" + s->arg_names.at(i) + "' compiled with " +
                         sharded_type_str(ref, {}) + " and called with " +
                         sharded_type_str(got, {}));
    }
    if (!errors.empty()) {
      std::string msg =
          "Argument types differ from the types for which this computation was compiled. Perhaps "
          "you "
          "are calling the compiled executable with a different enable_x64 mode than when it was "
          "AOT "
          "compiled? " +
          std::string(errors.size() >= 5 ? "The first 5 of " + std::to_string(errors.size())
                                         : "The") +
          " mismatches are:";
      for (size_t i = 0; i < errors.size() && i < 5; ++i) msg += "\n" + errors[i];
      throw Error(ErrCode::Type, msg, where);
    }
    out = in.call(s->fn, a, where);
    return true;
  }
};

} // namespace

void stage_arguments(InterpreterImpl& in, const CallArgs& a, const Span& where, StagedCall& s) {
  auto kwargs = std::make_shared<DictObj>();
  for (const auto& [k, v] : a.kw) kwargs->set(make_str(k), v);
  ValueList leaves;
  s.in_tree = tree_flatten(in, make_tuple({make_tuple(a.pos), Value::object(kwargs)}), leaves);
  s.in_avals.clear();
  for (const Value& l : leaves) // a static argument (a hashable Python value) has no type
    if (const AVal* abstract = shape_dtype_struct_aval(l))
      s.in_avals.push_back(*abstract);
    else
      s.in_avals.push_back(l.is_obj(ObjKind::Array) || l.is_number() ? in.to_tensor(l, where)->aval
                                                                     : AVal{});
}

Value make_lowered(StagedCall s) {
  return Value::object(
      std::make_shared<StageObj>(std::make_shared<const StagedCall>(std::move(s)), false));
}

Value lowered_builtin(InterpreterImpl& in, CallArgs& a) {
  ArgReader r("_lowered", a, {"fn", "args", "kwargs", "arg_names", "attrs"}, 5);
  const ValueList* args = sequence_items(r[1]);
  if (!args || !r[2].is_obj(ObjKind::Dict))
    throw Error(ErrCode::Type, "_lowered() takes an args tuple and a kwargs dict");
  StagedCall s;
  s.fn = r[0];
  CallArgs staged;
  staged.pos = *args;
  r[2].as<DictObj>()->for_each([&](const Value& k, const Value& v) {
    staged.kw.push_back({pxl::str(k), v});
  });
  stage_arguments(in, staged, in.ops().loc, s);
  const ValueList* names = sequence_items(r[3]);
  if (!names || names->size() != s.in_avals.size())
    throw Error(ErrCode::Internal, "_lowered() needs one name per argument leaf");
  for (const Value& n : *names) s.arg_names.push_back(pxl::str(n));
  s.attrs = r[4];
  return make_lowered(std::move(s));
}

} // namespace pxl
