#include "stdlib/shard_map_checks.hpp"

#include <algorithm>

#include "lang/diag.hpp"
#include "stdlib/sharding.hpp"
#include "stdlib/sharding_rules.hpp"

namespace pxl {

namespace {

void paths_rec(const TreeDef& d, const std::string& cur, std::vector<std::string>& out) {
  switch (d.kind) {
  case TreeDef::Kind::Leaf:
    out.push_back(cur);
    return;
  case TreeDef::Kind::None:
    return;
  case TreeDef::Kind::Key:
    paths_rec(d.children[0], cur, out);
    return;
  default:
    for (size_t i = 0; i < d.children.size(); ++i)
      paths_rec(d.children[i],
                cur + "[" + (d.kind == TreeDef::Kind::Dict ? repr(d.keys[i]) : std::to_string(i)) +
                    "]",
                out);
  }
}

void cover_rec(const Value& specs, const TreeDef& d, const std::string& cur,
               bool (*is_spec)(const Value&), std::vector<std::string>& out) {
  const ValueList* items = sequence_items(specs);
  if (is_spec(specs) || d.kind == TreeDef::Kind::Leaf || d.kind == TreeDef::Kind::None ||
      (!items && !specs.is_obj(ObjKind::Dict))) {
    out.insert(out.end(), d.num_leaves(), cur);
    return;
  }
  for (size_t i = 0; i < d.children.size(); ++i) {
    if (d.kind == TreeDef::Kind::Dict) {
      const Value* p = specs.is_obj(ObjKind::Dict) ? specs.as<DictObj>()->find(d.keys[i]) : nullptr;
      if (p) {
        cover_rec(*p, d.children[i], cur + "[" + repr(d.keys[i]) + "]", is_spec, out);
        continue;
      }
    } else if (items && i < items->size()) {
      cover_rec((*items)[i], d.children[i], cur + "[" + std::to_string(i) + "]", is_spec, out);
      continue;
    }
    out.insert(out.end(), d.children[i].num_leaves(), cur);
  }
}

// What JAX's aval.str_short() prints: float32[4,8].
std::string short_type(const AVal& a) {
  std::string s = std::string(dtype_name(a.dtype)) + "[";
  for (size_t d = 0; d < a.shape.size(); ++d) s += (d ? "," : "") + std::to_string(a.shape[d]);
  return s + "]";
}

// Python's repr of a tuple of strings / ints.
std::string py_tuple(const std::vector<std::string>& items) {
  std::string s = "(";
  for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + items[i];
  return s + (items.size() == 1 ? ",)" : ")");
}

std::string mesh_sentence(const Mesh& mesh) {
  std::vector<std::string> sizes, names;
  for (size_t i = 0; i < mesh.axis_names.size(); ++i) {
    sizes.push_back(std::to_string(mesh.axis_sizes[i]));
    names.push_back("'" + mesh.axis_names[i] + "'");
  }
  return "The mesh given has shape " + py_tuple(sizes) + " with corresponding axis names " +
         py_tuple(names) + ".";
}

// The mesh axes as JAX prints the manual axes: frozenset({'x', 'y'}) (pxl
// lists them in mesh order; Python's set order varies from run to run).
std::string manual_axes(const Mesh& mesh) {
  std::string s;
  for (size_t i = 0; i < mesh.axis_names.size(); ++i)
    s += (i ? ", '" : "'") + mesh.axis_names[i] + "'";
  return "frozenset({" + s + "})";
}

// ", where args[0] is bound to f's parameter 'x'," when `fn` is a pxl function
// that can take the call's positional arguments (JAX binds its signature).
std::string bound_to(const Value& fn_in, const std::string& leaf_path, size_t nargs) {
  // A functools.partial binds as its signature does (Python's inspect): its
  // positional arguments take the first parameters, and a parameter given by
  // keyword, with every one after it, becomes keyword-only.
  Value fn = fn_in;
  size_t skip = 0;
  std::vector<std::string> by_keyword;
  while (fn.is_obj(ObjKind::Partial)) {
    const auto* p = fn.as<PartialObj>();
    skip += p->bound.pos.size();
    for (const auto& kv : p->bound.kw) by_keyword.push_back(kv.first);
    fn = p->fn;
  }
  if (!fn.is_obj(ObjKind::Function)) return "";
  const auto* f = fn.as<FunctionObj>();
  if (!f->params) return "";
  std::vector<const Param*> positional;
  bool varargs = false;
  bool keyword_only = false;
  for (const Param& p : *f->params) {
    if (p.kind == Param::Kind::VarArgs) varargs = true;
    if (p.kind == Param::Kind::KwArgs || p.kind == Param::Kind::KwOnlyMarker || p.keyword_only)
      continue;
    if (std::find(by_keyword.begin(), by_keyword.end(), p.name) != by_keyword.end())
      keyword_only = true;
    if (keyword_only && p.kind != Param::Kind::VarArgs) continue;
    if (skip > 0 && p.kind != Param::Kind::VarArgs) {
      --skip;
      continue;
    }
    positional.push_back(&p);
  }
  size_t fixed = positional.size() - (varargs ? 1 : 0);
  // JAX counts the varargs parameter among the positional ones here.
  size_t counted = positional.size();
  size_t required = 0;
  for (size_t i = 0; i < fixed; ++i)
    if (!positional[i]->default_value) required = i + 1;
  if (nargs < required || (!varargs && nargs > fixed)) return ""; // the signature does not bind
  size_t close = leaf_path.find(']');
  if (close == std::string::npos) return "";
  std::string arg_key = leaf_path.substr(0, close + 1);
  size_t idx = std::stoul(arg_key.substr(1));
  const std::string name = f->name;
  if (idx >= fixed)
    return ", where args" + arg_key + " is the index " + std::to_string(idx + 1 - counted) +
           " component of " + name + "'s varargs parameter '" + positional.back()->name + "',";
  const Param& p = *positional[idx];
  std::string param = p.name;
  if (p.default_value) {
    size_t at = static_cast<size_t>(&p - f->params->data());
    if (at < f->defaults.size()) param += "=" + repr(f->defaults[at]);
  }
  return ", where args" + arg_key + " is bound to " + name + "'s parameter '" + param + "',";
}

std::string join_msgs(std::vector<std::string> msgs) {
  if (msgs.size() == 1) return msgs[0].substr(2); // no bullet for a single one
  std::string s;
  for (size_t i = 0; i < msgs.size(); ++i) s += (i ? "\n\n" : "") + msgs[i];
  return s;
}

std::string rank_message(const std::string& fun, bool input, const std::vector<SpecLeaf>& bad,
                         const Value& fn, size_t nargs) {
  const std::string prefix = input ? "in" : "out";
  const std::string base = input ? "the passed args" : fun + "(*args)";
  std::vector<std::string> msgs;
  bool scalar = false;
  for (const SpecLeaf& l : bad) {
    size_t n = l.spec.entries.size(), r = l.aval.shape.size();
    scalar = scalar || r == 0;
    msgs.push_back("* " + prefix + "_specs" + l.spec_path + " is " + l.spec.repr() +
                   " which has length " + std::to_string(n) + ", but " + base + l.leaf_path +
                   (input ? bound_to(fn, l.leaf_path, nargs) : "") + " has shape " +
                   short_type(l.aval) + l.mat + ", which has rank " + std::to_string(r) + " (and " +
                   std::to_string(r) + " < " + std::to_string(n) + ")");
  }
  std::string msg =
      "shard_map applied to the function '" + fun + "' was given an " + prefix +
      "_specs entry which is too long to be compatible with the corresponding " + prefix +
      "put value from the function:\n\n" + join_msgs(msgs) + "\n\nEntries in " + prefix +
      "_specs must be of length no greater than the number of axes in the corresponding " + prefix +
      "put value.\n\nEither revise the spec to be shorter, or modify '" + fun + "' so that its " +
      prefix + "puts have sufficient rank.";
  if (scalar)
    msg += "\n\nFor scalar values (rank 0), consider using an " + prefix +
           "_specs entry of `P()`, where `P = jax.sharding.PartitionSpec`.";
  if (scalar && !input)
    msg +=
        " In particular, for rank 0 outputs which are not constant over the mesh, add at least one "
        "(singleton) axis to them so that they can be concatenated using out_specs.";
  return msg;
}

size_t num_args(const std::vector<SpecLeaf>& leaves) {
  size_t n = 0;
  for (const SpecLeaf& l : leaves) {
    size_t close = l.leaf_path.find(']');
    if (close != std::string::npos)
      n = std::max(n, std::stoul(l.leaf_path.substr(1, close - 1)) + 1);
  }
  return n;
}

} // namespace

std::vector<std::string> leaf_key_paths(const TreeDef& def) {
  std::vector<std::string> out;
  paths_rec(def, "", out);
  return out;
}

std::vector<std::string> covering_spec_paths(const Value& specs, const TreeDef& def,
                                             bool (*is_spec)(const Value&)) {
  std::vector<std::string> out;
  cover_rec(specs, def, "", is_spec, out);
  return out;
}

std::string shard_map_fun_name(const Value& fn) {
  if (fn.is_obj(ObjKind::Partial))
    return shard_map_fun_name(fn.as<PartialObj>()->fn); // JAX's fun_name
  if (fn.is_obj(ObjKind::Function)) return fn.as<FunctionObj>()->name;
  if (fn.is_obj(ObjKind::Builtin)) return fn.as<BuiltinObj>()->name;
  return type_name(fn);
}

void check_spec_tree(InterpreterImpl& in, const Value& specs, bool input, const Mesh& mesh,
                     const Span& where, const std::vector<std::string>& manual) {
  Mesh manual_mesh = mesh;
  if (!manual.empty()) {
    manual_mesh.axis_names.clear();
    for (const std::string& n : mesh.axis_names)
      if (std::find(manual.begin(), manual.end(), n) != manual.end())
        manual_mesh.axis_names.push_back(n);
  }
  auto is_manual = [&](const std::string& axis) {
    return mesh.axis_of(axis) >= 0 &&
           (manual.empty() || std::find(manual.begin(), manual.end(), axis) != manual.end());
  };
  const std::string prefix = input ? "in" : "out";
  ValueList leaves;
  TreeDef def = tree_flatten(in, specs, leaves);
  std::vector<std::string> paths = leaf_key_paths(def);
  std::vector<std::string> not_specs, unknown;
  std::vector<const PartitionSpec*> found;
  for (size_t i = 0; i < leaves.size(); ++i) {
    auto* s = leaves[i].is_obj(ObjKind::Opaque) ? dynamic_cast<SpecObj*>(leaves[i].as<OpaqueObj>())
                                                : nullptr;
    if (!s) {
      not_specs.push_back("  " + prefix + "_specs" + paths[i] + " is " + str(leaves[i]) +
                          " of type " + type_name(leaves[i]) + ", ");
      continue;
    }
    found.push_back(&s->spec);
    for (const auto& entry : s->spec.entries)
      for (const std::string& axis : entry)
        if (!is_manual(axis))
          unknown.push_back("  " + prefix + "_specs" + paths[i] + " refers to '" + axis + "'");
  }
  auto join = [](const std::vector<std::string>& m) {
    std::string s;
    for (size_t i = 0; i < m.size(); ++i) s += (i ? "\n\n" : "") + m[i];
    return s;
  };
  if (!not_specs.empty())
    throw Error(
        ErrCode::Type,
        "shard_map " + prefix +
            "_specs argument must be a pytree of `jax.sharding.PartitionSpec` instances, but:\n\n" +
            join(not_specs) + "\n\nCheck the " + prefix + "_specs values passed to shard_map.",
        where);
  if (!unknown.empty())
    throw Error(ErrCode::Spec,
                "shard_map " + prefix + "_specs argument must refer to an axis marked as manual (" +
                    manual_axes(manual_mesh) + "), but:\n\n" + join(unknown) + "\n\nCheck the " +
                    prefix + "_specs values passed to shard_map.",
                where);
  for (const PartitionSpec* s : found) {
    std::vector<std::string> seen;
    for (const auto& entry : s->entries)
      for (const std::string& axis : entry) {
        if (std::find(seen.begin(), seen.end(), axis) != seen.end())
          throw Error(
              ErrCode::Spec,
              "DuplicateSpecError: A single NamedSharding spec specification can map every mesh "
              "axis to at most one positional dimension, but " +
                  s->repr() + " has duplicate entries for `" + axis + "`",
              where);
        seen.push_back(axis);
      }
  }
}

void check_in_specs_vs_args(const Value& fn, const Mesh& mesh, const std::vector<SpecLeaf>& leaves,
                            const Span& where) {
  const std::string fun = shard_map_fun_name(fn);
  const size_t nargs = num_args(leaves);
  std::vector<SpecLeaf> bad;
  for (const SpecLeaf& l : leaves)
    if (l.spec.entries.size() > l.aval.shape.size()) bad.push_back(l);
  if (!bad.empty()) throw Error(ErrCode::Spec, rank_message(fun, true, bad, fn, nargs), where);
  std::vector<std::string> msgs;
  for (const SpecLeaf& l : leaves)
    for (size_t d = 0; d < l.spec.entries.size(); ++d) {
      const auto& ns = l.spec.entries[d];
      int64_t size = 1;
      for (const std::string& n : ns) size *= mesh.axis_size(n);
      if (ns.empty() || l.aval.shape[d] % size == 0) continue;
      std::string axis;
      if (ns.size() > 1) {
        std::vector<std::string> quoted;
        for (const std::string& n : ns) quoted.push_back("'" + n + "'");
        axis = "axes " + py_tuple(quoted);
      } else {
        axis = "axis '" + ns[0] + "'";
      }
      msgs.push_back("* the passed args" + l.leaf_path + " of shape " + short_type(l.aval) +
                     bound_to(fn, l.leaf_path, nargs) + " corresponds to in_specs" + l.spec_path +
                     " of value " + l.spec.repr() + ", which maps array axis " + std::to_string(d) +
                     " (of size " + std::to_string(l.aval.shape[d]) + ") to mesh " + axis +
                     " (of " + (ns.size() > 1 ? "total " : "") + "size " + std::to_string(size) +
                     "), but " + std::to_string(size) + " does not evenly divide " +
                     std::to_string(l.aval.shape[d]));
    }
  if (msgs.empty()) return;
  throw Error(
      ErrCode::Spec,
      "shard_map applied to the function '" + fun +
          "' was given argument arrays with axis sizes that are not evenly divisible by the "
          "corresponding mesh axis sizes:\n\n" +
          mesh_sentence(mesh) + "\n\n" + join_msgs(msgs) +
          "\n\nArray arguments' axis sizes must be evenly divisible by the mesh axis or axes "
          "indicated by the corresponding elements of the argument's in_specs entry. Consider "
          "checking that in_specs are correct, and if so consider changing the mesh axis sizes "
          "or else padding the input and adapting '" +
          fun + "' appropriately.",
      where);
}

void check_out_specs_rank(const Value& fn, const std::vector<SpecLeaf>& leaves, const Span& where) {
  std::vector<SpecLeaf> bad;
  for (const SpecLeaf& l : leaves)
    if (l.spec.entries.size() > l.aval.shape.size()) bad.push_back(l);
  if (!bad.empty())
    throw Error(ErrCode::Spec, rank_message(shard_map_fun_name(fn), false, bad, fn, 0), where);
}

std::string out_vma_message(const std::string& fun, const Mesh& mesh, const SpecLeaf& leaf,
                            const std::vector<std::string>& varying) {
  std::vector<std::string> named = leaf.spec.axes(), unmentioned;
  for (const std::string& n : mesh.axis_names)
    if (std::find(named.begin(), named.end(), n) == named.end()) unmentioned.push_back(n);
  auto in_mesh_order = [&](const std::vector<std::string>& axes) {
    std::string s;
    for (const std::string& n : mesh.axis_names)
      if (std::find(axes.begin(), axes.end(), n) != axes.end()) s += (s.empty() ? "" : ",") + n;
    return s;
  };
  std::string item;
  if (unmentioned.size() > 1) {
    std::vector<std::string> diff;
    for (const std::string& n : unmentioned)
      if (std::find(varying.begin(), varying.end(), n) != varying.end()) diff.push_back(n);
    item = "out_specs" + leaf.spec_path + " is " + leaf.spec.repr() +
           " which implies that the corresponding output value is only varying across mesh axes {" +
           in_mesh_order(named) + "} and not {" + in_mesh_order(diff) +
           "}, but it was inferred to be possibly varying over {" + in_mesh_order(varying) + "}";
  } else {
    item = "out_specs" + leaf.spec_path + " is " + leaf.spec.repr() +
           " which implies that the corresponding output value is replicated across mesh axis '" +
           unmentioned.at(0) + "', but could not infer replication over any axes";
  }
  return "shard_map applied to the function '" + fun +
         "' was given out_specs which require "
         "replication which can't be statically inferred given the mesh:\n\n" +
         mesh_sentence(mesh) + "\n\n" + item +
         "\n\nCheck if these output values are meant to be replicated over those mesh axes. If "
         "not, consider revising the corresponding out_specs entries. If so, consider disabling "
         "the check by passing the check_vma=False argument to `jax.shard_map`.";
}

namespace {
void prefix_rec(const Value& prefix, const Value& tree, const std::string& what,
                const std::string& path, bool (*is_spec)(const Value&), const Span& where) {
  if (is_spec(prefix)) return;
  const ValueList* ps = sequence_items(prefix);
  const ValueList* ts = sequence_items(tree);
  if (ps && ts) {
    if (ps->size() != ts->size()) {
      std::string kind = type_name(prefix), full = type_name(tree);
      throw Error(ErrCode::Value,
                  "pytree structure error: different lengths of " + kind + " at key path\n    " +
                      what + path + "\nAt that key path, the prefix pytree " + what +
                      " has a subtree of type " + kind + " of length " +
                      std::to_string(ps->size()) + ", but the full pytree has a subtree of " +
                      (kind == full ? "the same type" : "type " + full) + " but of length " +
                      std::to_string(ts->size()) + ".",
                  where);
    }
    for (size_t i = 0; i < ps->size(); ++i)
      prefix_rec((*ps)[i], (*ts)[i], what, path + "[" + std::to_string(i) + "]", is_spec, where);
    return;
  }
  if (prefix.is_obj(ObjKind::Dict) && tree.is_obj(ObjKind::Dict)) {
    const auto* pd = prefix.as<DictObj>();
    const auto* td = tree.as<DictObj>();
    pd->for_each([&](const Value& key, const Value& value) {
      if (const Value* t = td->find(key))
        prefix_rec(value, *t, what, path + "[" + repr(key) + "]", is_spec, where);
    });
  }
}
} // namespace

void check_prefix_structure(const Value& prefix, const Value& tree, const std::string& what,
                            bool (*is_spec)(const Value&), const Span& where) {
  prefix_rec(prefix, tree, what, "", is_spec, where);
}

void check_closed_over(const std::vector<Tensor>& captured, const Mesh& mesh,
                       const std::vector<std::string>& manual, const Span& where) {
  // JAX casts a closed-over value only when every axis of the body's mesh is
  // Manual or Auto.
  for (size_t a = 0; a < mesh.axis_names.size(); ++a)
    if (!manual.empty() &&
        std::find(manual.begin(), manual.end(), mesh.axis_names[a]) == manual.end() &&
        mesh.axis_type(static_cast<int>(a)) == AxisType::Explicit)
      return;
  for (const Tensor& t : captured) {
    if (t->trace || !t->sharded) continue;
    const Mesh& m = t->sharded->mesh;
    bool any_explicit = false;
    // JAX's str_short(mesh_axis_types=True): f32[4@x,4]({Explicit: ('x',), Auto: ('y',)}).
    std::vector<std::pair<AxisType, std::vector<std::string>>> groups;
    for (int a = 0; a < m.ndim(); ++a) {
      AxisType ty = m.axis_type(a);
      any_explicit = any_explicit || ty == AxisType::Explicit;
      auto g =
          std::find_if(groups.begin(), groups.end(), [&](const auto& e) { return e.first == ty; });
      if (g == groups.end()) {
        groups.push_back({ty, {}});
        g = groups.end() - 1;
      }
      g->second.push_back(m.axis_names[static_cast<size_t>(a)]);
    }
    if (!any_explicit) continue;
    std::string types;
    for (const auto& [ty, names] : groups) {
      std::string tuple;
      for (const std::string& n : names) tuple += (tuple.empty() ? "'" : ", '") + n + "'";
      if (names.size() == 1) tuple += ",";
      types += std::string(types.empty() ? "" : ", ") + axis_type_name(ty) + ": (" + tuple + ")";
    }
    DimSpec typed = explicit_part(t->sharded->spec, m).entries;
    typed.resize(t->aval.shape.size());
    throw Error(
        ErrCode::Unsupported,
        "Closing over inputs to shard_map where the input is sharded on `Explicit` axes is not "
        "implemented. As a workaround, please pass those inputs as an argument to shard_map. Got "
        "input with shape " +
            sharded_type_str(t->aval, typed, true) + "({" + types + "})",
        where, "pass it to the shard_map'd function as an argument (with its in_specs)");
  }
}

} // namespace pxl
