// jax.debug.print(fmt, *args, ordered=False, partitioned=False, **kwargs) and
// jax.debug.callback(callback, *args, **kwargs), which calls instead of printing.
//
// Outside any trace the text is printed at once. Traced, the array leaves of
// the arguments become the operands of a debug_print instruction whose
// attrs.debug keeps the format and the rest of the arguments (their pytree
// structure and static leaves such as dtypes), so wherever the instruction
// runs it prints what JAX's callback prints: eagerly and in jitted code when
// it runs (runtime/debug_print.hpp), one line per example under vmap
// (batching_rules.cpp), per iteration in loops, and per device after an SPMD
// run (stdlib/spmd.cpp). As in JAX, the format's fields are checked against
// the arguments when the call is made.
#include "stdlib/debug_print.hpp"

#include <map>

#include "lang/tracer.hpp"
#include "runtime/debug_print.hpp"
#include "stdlib/checkify.hpp"
#include "stdlib/module_builder.hpp"
#include "stdlib/pytree.hpp"

namespace pxl {

namespace {

// The arguments of one print: a tuple (positional..., keyword values...) as a
// pytree, and per leaf its static value (dynamic leaves are the operands).
struct PrintArgs : DebugFormatArgs {
  TreeDef tree;
  ValueList statics; // per leaf; unused for dynamic ones
  std::vector<bool> dynamic;
  size_t npos = 0;
  bool gated = false;   // the last operand says whether the print's branch is taken
  Value callback;       // jax.debug.callback's function (None: print the format)
  bool io = false;      // jax.experimental.io_callback's (without results): JAX refuses
  bool ordered = false; // to vmap an ordered one, or one in a cond whose predicate is batched
  // Traced into code JAX compiles (a jit, a loop or cond, a pmap): XLA hands
  // the callback arrays without weak types. Elsewhere (vmap, grad, an eager
  // shard_map) JAX calls it eagerly, with the arguments as device_put makes them.
  bool compiled = false;
  // Recorded in an eager shard_map's body: per operand, the mesh axes it
  // varies over (JAX's eager rule zips the operands' per-block lists).
  std::optional<std::vector<std::vector<std::string>>> eager_blocks;
  InterpreterImpl* in = nullptr; // whose output the line goes to (the one that traced it)
};

// The fields of a str.format string that name arguments: an automatic or
// explicit index, or a keyword ("{x.real}" and "{x[0]}" name x).
struct Fields {
  std::vector<size_t> indices;
  std::vector<std::string> keywords;
};

Fields format_fields(const std::string& f) {
  Fields out;
  size_t next = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] == '}' && i + 1 < f.size() && f[i + 1] == '}') {
      ++i;
      continue;
    }
    if (f[i] != '{') continue;
    if (i + 1 < f.size() && f[i + 1] == '{') {
      ++i;
      continue;
    }
    size_t j = i + 1;
    while (j < f.size() && f[j] != '}' && f[j] != ':' && f[j] != '!' && f[j] != '.' && f[j] != '[')
      ++j;
    std::string name = f.substr(i + 1, j - i - 1);
    // Skip the rest of the field (a format spec may nest one level of braces).
    int depth = 1;
    for (i = j; i < f.size() && depth > 0; ++i) {
      if (f[i] == '{') ++depth;
      if (f[i] == '}') --depth;
    }
    --i;
    if (name.empty())
      out.indices.push_back(next++);
    else if (name.find_first_not_of("0123456789") == std::string::npos)
      out.indices.push_back(std::stoul(name));
    else
      out.keywords.push_back(name);
  }
  return out;
}

// JAX's checks of the format against the arguments (made when print is called).
void check_fields(const std::string& fmt, const ValueList& pos,
                  const std::vector<std::pair<std::string, Value>>& kw) {
  Fields fl = format_fields(fmt);
  for (const std::string& k : fl.keywords) {
    bool found = false;
    for (const auto& [name, v] : kw) found = found || name == k;
    if (!found) throw Error(ErrCode::Key, "'" + k + "'");
  }
  for (size_t i : fl.indices)
    if (i >= pos.size()) throw Error(ErrCode::Index, "tuple index out of range");
  std::vector<std::string> unused_kw;
  for (const auto& [name, v] : kw)
    if (std::find(fl.keywords.begin(), fl.keywords.end(), name) == fl.keywords.end())
      unused_kw.push_back("'" + name + "'");
  if (!unused_kw.empty()) {
    std::string m = "Unused keyword arguments to `jax.debug.print`: [";
    for (size_t i = 0; i < unused_kw.size(); ++i) m += (i ? ", " : "") + unused_kw[i];
    throw Error(ErrCode::Value,
                m + "]. You may be passing an f-string (i.e, `f\"{x}\"`) into "
                    "`jax.debug.print` and instead should pass in a regular string.");
  }
  std::string unused;
  size_t n = 0;
  for (size_t i = 0; i < pos.size(); ++i)
    if (std::find(fl.indices.begin(), fl.indices.end(), i) == fl.indices.end())
      unused += (n++ ? ", " : "") + repr(pos[i]);
  if (n)
    throw Error(ErrCode::Value,
                "Unused positional arguments to `jax.debug.print`: [" + unused + "]");
}

Value call_format(InterpreterImpl& in, const std::string& fmt, CallArgs& args) {
  return in.call(in.get_attr(make_str(fmt), "format", Span{}), args, Span{});
}

// Whether code traced in `tc` runs as a compiled XLA program in JAX.
bool runs_compiled(TraceContext& tc) {
  for (OpContext* c = &tc; auto* t = dynamic_cast<TraceContext*>(c); c = &t->outer())
    if (t->what() == "jit" || t->what() == "while_loop" || t->what() == "cond" ||
        t->what() == "pmap")
      return true;
  return false;
}

// An eager call's arguments as JAX's callback sees them (device_put): each
// Python number leaf an array (weak-typed), other leaves as they are.
void device_put_leaves(InterpreterImpl& in, ValueList& pos,
                       std::vector<std::pair<std::string, Value>>& kw) {
  ValueList all = pos;
  for (auto& [k, v] : kw) all.push_back(v);
  ValueList leaves;
  TreeDef tree = tree_flatten(in, make_tuple(all), leaves);
  for (Value& l : leaves)
    if (l.is_number() || l.is_obj(ObjKind::Complex))
      l = make_array(in.to_tensor(l, Span{})); // (an int beyond int32: JAX's OverflowError)
  Value tuple = tree_unflatten(tree, leaves);
  const ValueList& items = *sequence_items(tuple);
  for (size_t i = 0; i < items.size(); ++i)
    (i < pos.size() ? pos[i] : kw[i - pos.size()].second) = items[i];
}

// Traced: binds a debug_print whose operands are the arguments' array leaves;
// the rest (the tree, static leaves, the callback) stays in its format.
void record(InterpreterImpl& in, TraceContext& tc, const std::string& fmt, const Value& callback,
            const ValueList& pos, const std::vector<std::pair<std::string, Value>>& kw,
            bool io = false, bool ordered = false) {
  auto args = std::make_shared<PrintArgs>();
  args->callback = callback;
  args->io = io;
  args->ordered = ordered;
  ValueList all = pos;
  auto df = std::make_shared<DebugFormat>();
  df->format = fmt;
  for (auto& [k, v] : kw) {
    all.push_back(v);
    df->keywords.push_back(k);
  }
  args->npos = pos.size();
  args->in = &in;
  args->compiled = runs_compiled(tc);
  ValueList leaves;
  args->tree = tree_flatten(in, make_tuple(all), leaves);
  std::vector<Tensor> values;
  for (const Value& l : leaves) {
    Tensor t;
    try {
      t = in.to_tensor(l, Span{});
    } catch (Error&) {          // a static value (a dtype, a string): formatted as it is
      if (l.is_number()) throw; // (an int beyond int32: JAX's OverflowError)
    }
    args->dynamic.push_back(t != nullptr);
    args->statics.push_back(t ? Value() : l);
    if (t) values.push_back(t);
  }
  if (tc.what() == "shard_map" && !dynamic_cast<TraceContext*>(&tc.outer())) {
    const Function& f = tc.function();
    args->eager_blocks.emplace();
    for (const Tensor& t : values) {
      // Unchecked (check_vma=False), every value counts as varying over every axis.
      AxisSet vma = tc.check_vma ? f.values[static_cast<size_t>(tc.value_of(t))].vma : ~AxisSet{0};
      std::vector<std::string> axes;
      for (size_t b = 0; b < f.mesh_axes.size(); ++b)
        if (vma & (AxisSet{1} << b)) axes.push_back(f.mesh_axes[b]);
      args->eager_blocks->push_back(std::move(axes));
    }
  }
  // In a branch of a traced cond/switch it prints only where the branch is taken.
  std::vector<Tensor> preds = tc.branch_predicates();
  if (!preds.empty()) {
    Tensor taken = preds[0];
    for (size_t i = 1; i < preds.size(); ++i) {
      std::vector<Tensor> both{taken, preds[i]};
      taken = in.ops().bind(Op::And, {}, both);
    }
    values.push_back(taken);
    args->gated = true;
  }
  df->args = args;
  Function& f = tc.function();
  OpAttrs attrs;
  attrs.axis = static_cast<int64_t>(f.debug_formats.size());
  attrs.debug = df;
  f.debug_formats.push_back(*df);
  in.ops().bind(Op::DebugPrint, attrs, values);
}

Value debug_print(InterpreterImpl& in, CallArgs& a) {
  if (a.pos.empty())
    throw Error(ErrCode::Arguments,
                "jax.debug.print() missing 1 required positional argument: 'fmt'");
  std::string fmt = value_to_str(a.pos[0], "jax.debug.print() fmt");
  ValueList pos(a.pos.begin() + 1, a.pos.end());
  std::vector<std::pair<std::string, Value>> kw;
  for (auto& [k, v] : a.kw)
    if (k != "ordered" && k != "partitioned") kw.emplace_back(k, v);
  check_fields(fmt, pos, kw);
  auto* tc = dynamic_cast<TraceContext*>(&in.ops());
  if (!tc) { // eager: print now
    device_put_leaves(in, pos, kw);
    CallArgs fa;
    fa.pos = pos;
    fa.kw = kw;
    in.out() << str(call_format(in, fmt, fa)) << "\n";
    return Value();
  }
  record(in, *tc, fmt, Value(), pos, kw);
  return Value();
}

// jax.debug.callback(callback, *args, ordered=False, partitioned=False, **kwargs):
// calls callback(*args, **kwargs) with the arrays where the code runs.
// jax.debug._io_callback(callback, ordered, *args, **kwargs) is the same call
// for jax.experimental.io_callback without results (stdlib/callbacks.pxl),
// which JAX's vmap treats differently (check_debug_batching).
Value call_back(InterpreterImpl& in, CallArgs& a, bool io) {
  Value cb = a.pos.empty() ? Value() : a.pos[0];
  bool callable = cb.is_obj(ObjKind::Function) || cb.is_obj(ObjKind::Builtin) ||
                  cb.is_obj(ObjKind::BoundMethod) || cb.is_obj(ObjKind::Partial) ||
                  cb.is_obj(ObjKind::Opaque);
  if (!callable)
    throw Error(ErrCode::Type, "first argument to jax.debug.callback must be callable, but got an "
                               "object of type <class '" +
                                   type_name(cb) + "'>");
  size_t first = io ? 2 : 1;
  bool ordered = io && a.pos.size() > 1 && in.truthy(a.pos[1], Span{});
  ValueList pos(a.pos.begin() + static_cast<std::ptrdiff_t>(std::min(first, a.pos.size())),
                a.pos.end());
  std::vector<std::pair<std::string, Value>> kw;
  for (auto& [k, v] : a.kw)
    if (io || (k != "ordered" && k != "partitioned")) kw.emplace_back(k, v);
  auto* tc = dynamic_cast<TraceContext*>(&in.ops());
  if (!tc) {
    if (!io) device_put_leaves(in, pos, kw);
    CallArgs ca;
    ca.pos = pos;
    ca.kw = kw;
    in.call(cb, ca, in.ops().loc);
    return Value();
  }
  record(in, *tc, "", cb, pos, kw, io, ordered);
  return Value();
}

Value debug_callback(InterpreterImpl& in, CallArgs& a) { return call_back(in, a, false); }

Value io_callback(InterpreterImpl& in, CallArgs& a) { return call_back(in, a, true); }

} // namespace

std::optional<std::string> format_debug(InterpreterImpl& in, const DebugFormat& f,
                                        std::span<const Array> values) {
  CallArgs args;
  auto* pa = dynamic_cast<const PrintArgs*>(f.args.get());
  if (pa && pa->gated) {
    if (values.back().as<uint8_t>()[0] == 0) return std::nullopt;
    values = values.first(values.size() - 1);
  }
  if (!pa) { // positional operands, then the keywords'
    size_t npos = values.size() - f.keywords.size();
    for (size_t i = 0; i < values.size(); ++i) {
      Value v = make_array(make_tensor(values[i]));
      if (i < npos)
        args.pos.push_back(v);
      else
        args.kw.emplace_back(f.keywords[i - npos], v);
    }
    return str(call_format(in, f.format, args));
  }
  ValueList leaves;
  size_t k = 0;
  for (size_t i = 0; i < pa->dynamic.size(); ++i) {
    if (!pa->dynamic[i]) {
      leaves.push_back(pa->statics[i]);
      continue;
    }
    const Array& v = values[k++];
    leaves.push_back(make_array(make_tensor(pa->compiled ? v.with_weak(false) : v)));
  }
  Value tuple = tree_unflatten(pa->tree, leaves); // keeps the items alive
  const ValueList& all = *sequence_items(tuple);
  for (size_t i = 0; i < all.size(); ++i) {
    if (i < pa->npos)
      args.pos.push_back(all[i]);
    else
      args.kw.emplace_back(f.keywords[i - pa->npos], all[i]);
  }
  if (!pa->callback.is_none()) {
    in.call(pa->callback, args, Span{});
    return std::nullopt;
  }
  return str(call_format(in, f.format, args));
}

void zip_eager_blocks(const Mesh& mesh, std::vector<DebugRecord>& recs) {
  std::vector<DebugRecord> out;
  std::map<int, std::vector<const DebugRecord*>> by_format; // participant order
  for (const DebugRecord& r : recs) {
    auto* pa = r.fmt ? dynamic_cast<const PrintArgs*>(r.fmt->args.get()) : nullptr;
    if (pa && pa->eager_blocks)
      by_format[r.format].push_back(&r);
    else
      out.push_back(r);
  }
  for (auto& [format, group] : by_format) {
    std::sort(group.begin(), group.end(), [](const DebugRecord* a, const DebugRecord* b) {
      return a->participant < b->participant;
    });
    const auto& blocks = *dynamic_cast<const PrintArgs*>(group[0]->fmt->args.get())->eager_blocks;
    // Block k of an operand varying over `axes` is the one at coordinates k
    // (row-major over those axes, in mesh order) and 0 along the others.
    auto holder = [&](const std::vector<std::string>& axes, int64_t k) {
      std::vector<int64_t> at(mesh.axis_names.size(), 0);
      for (size_t i = axes.size(); i-- > 0;) {
        int a = mesh.axis_of(axes[i]);
        int64_t n = mesh.axis_sizes[static_cast<size_t>(a)];
        at[static_cast<size_t>(a)] = k % n;
        k /= n;
      }
      return mesh.position(at);
    };
    int64_t n = blocks.empty() ? 0 : mesh.size();
    for (const std::vector<std::string>& axes : blocks) {
      int64_t b = 1;
      for (const std::string& a : axes) b *= mesh.axis_sizes[static_cast<size_t>(mesh.axis_of(a))];
      n = std::min(n, b);
    }
    for (int64_t k = 0; k < n; ++k) {
      DebugRecord r = *group[0];
      r.participant = static_cast<int>(k);
      for (size_t i = 0; i < blocks.size() && i < r.values.size(); ++i) {
        int64_t p = holder(blocks[i], k);
        if (p >= 0 && static_cast<size_t>(p) < group.size())
          r.values[i] = group[static_cast<size_t>(p)]->values[i];
      }
      out.push_back(std::move(r));
    }
  }
  recs = std::move(out);
}

bool is_ungated_print(const DebugFormat& f) {
  auto* pa = dynamic_cast<const PrintArgs*>(f.args.get());
  return pa && !pa->gated;
}

bool is_io_callback(const DebugFormat& f, bool& ordered) {
  auto* pa = dynamic_cast<const PrintArgs*>(f.args.get());
  if (!pa || !pa->io) return false;
  ordered = pa->ordered;
  return true;
}

void check_debug_batching(const DebugFormat& f, bool gate_batched) {
  auto* pa = dynamic_cast<const PrintArgs*>(f.args.get());
  if (!pa || !pa->io) return; // prints and debug callbacks run once per example
  if (pa->ordered) throw Error(ErrCode::Value, "Cannot `vmap` ordered IO callback.");
  if (pa->gated && gate_batched)
    throw Error(ErrCode::Unsupported, "IO effect not supported in vmap-of-cond.");
}

std::shared_ptr<const DebugFormat> without_gate(const DebugFormat& f) {
  auto* pa = dynamic_cast<const PrintArgs*>(f.args.get());
  if (!pa || !pa->gated) return nullptr;
  auto args = std::make_shared<PrintArgs>(*pa);
  args->gated = false;
  auto out = std::make_shared<DebugFormat>(f);
  out->args = std::move(args);
  return out;
}

void add_debug_print(InterpreterImpl&, ModuleBuilder& debug) {
  debug.fn("print", debug_print);
  debug.fn("callback", debug_callback);
  debug.fn("_io_callback", io_callback);
  // The printer is the same for every interpreter (it keeps no state): each
  // print goes to the interpreter that traced it, which its format records,
  // so several embedded interpreters never print into each other's output.
  set_debug_printer([](const DebugFormat& f, std::span<const Array> values) {
    if (auto* check = dynamic_cast<const CheckSite*>(f.args.get())) return check->run(values);
    auto* pa = dynamic_cast<const PrintArgs*>(f.args.get());
    if (!pa || !pa->in) return;
    if (std::optional<std::string> line = format_debug(*pa->in, f, values))
      pa->in->out() << *line << "\n";
  });
}

} // namespace pxl
