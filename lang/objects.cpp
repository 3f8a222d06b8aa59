// The object protocol: calling, attributes, items, truthiness, iteration.
#include <pthread.h>

#include <algorithm>
#include <string_view>
#include <utility>

#include "lang/args.hpp"
#include "lang/bigint.hpp"
#include "lang/interp_impl.hpp"
#include "lang/list_slices.hpp"
#include "lang/methods.hpp"
#include "lang/name_list.hpp"
#include "lang/op_location.hpp"
#include "lang/parser.hpp"
#include "lang/py_set.hpp"
#include "lang/range_make.hpp"
#include "lang/type_object.hpp"

namespace pxl {

// ---- stack and recursion guard --------------------------------------------------

namespace {

// The calling thread's stack: its lowest address (null if unknown) and size.
std::pair<char*, size_t> thread_stack() {
  pthread_attr_t attr;
  void* addr = nullptr;
  size_t size = 0;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
  }
  return {static_cast<char*>(addr), size};
}

// The lowest address the calling thread's pxl frames may reach: its stack's
// end plus a margin for native code (BLAS, printing) below the deepest frame.
// Read once per thread: pthread_getattr_np is slow on the main thread.
const char* thread_stack_floor() {
  thread_local const char* floor = [] {
    auto [addr, size] = thread_stack();
    return addr ? addr + std::min<size_t>(512u << 10, size / 4) : nullptr;
  }();
  return floor;
}

} // namespace

void InterpreterImpl::set_stack_base() {
  char* addr = thread_stack().first;
  char here;
  stack_base_ = &here;
  // Leave a margin for native code (BLAS, printing) below the deepest pxl frame.
  size_t used = addr ? static_cast<size_t>(&here - addr) : (8u << 20);
  stack_limit_ = used > (512u << 10) ? used - (512u << 10) : used / 2;
}

void InterpreterImpl::check_stack(const Span& where) {
  char here;
  // On the stack set_stack_base measured: its frames lie between the base and
  // the limit (plus the margin). Anywhere else another thread runs pxl code (a
  // host callback under pmap/shard_map, called on its device's thread), whose
  // stack has its own bounds.
  auto at = reinterpret_cast<uintptr_t>(&here), base = reinterpret_cast<uintptr_t>(stack_base_);
  bool own_stack = stack_base_ && (at > base ? at - base <= (64u << 10)
                                             : base - at <= stack_limit_ + (512u << 10));
  bool full = false;
  if (own_stack)
    full = at < base && base - at > stack_limit_;
  else if (const char* floor = thread_stack_floor())
    full = &here < floor;
  if (full)
    throw Error(ErrCode::Recursion, "maximum recursion depth exceeded (the native stack is full)",
                where, "run pxl with a larger stack, or make the recursion shallower");
}

// ---- unbound methods ---------------------------------------------------------

// A method of a builtin class taken from the class, as `str.lower` or
// `dict.get`: a function whose first argument is the instance (Python's
// method descriptor), so that `sorted(xs, key=str.lower)` works.
static bool unbound_method(InterpreterImpl& in, const std::string& cls, const std::string& name,
                           Value& out) {
  Value proto;
  if (cls == "str")
    proto = make_str("");
  else if (cls == "list")
    proto = make_list({});
  else if (cls == "tuple")
    proto = make_tuple({});
  else if (cls == "dict")
    proto = Value::object(std::make_shared<DictObj>());
  else if (cls == "int")
    proto = Value::integer(0);
  else if (cls == "float")
    proto = Value::number(0.0);
  else if (cls == "set" || cls == "frozenset")
    proto = make_py_set({}, cls == "frozenset");
  else
    return false;
  Value m;
  if (!lookup_method(in, proto, name, m) ||
      !(m.is_obj(ObjKind::BoundMethod) || m.is_obj(ObjKind::Builtin)))
    return false;
  out = make_builtin(name, [cls, name](InterpreterImpl& in, CallArgs& a) {
    if (a.pos.empty())
      throw Error(ErrCode::Type, "unbound method " + cls + "." + name + "() needs an argument");
    Value self = a.pos[0];
    std::string t = type_name(self);
    bool fits =
        t == cls || (cls == "int" && self.is_intlike()) ||
        (cls == "dict" && self.is_obj(ObjKind::Dict)) ||
        (cls == "tuple" && self.is_obj(ObjKind::Opaque) && self.as<OpaqueObj>()->tuple_items());
    if (!fits)
      throw Error(ErrCode::Type, "descriptor '" + name + "' for '" + cls +
                                     "' objects doesn't apply to a '" + t + "' object");
    a.pos.erase(a.pos.begin());
    return in.call(in.get_attr(self, name, Span{}), a, Span{});
  });
  return true;
}

// ---- calls -------------------------------------------------------------------

const Block* function_body(const FunctionObj& f) { return f.lazy ? &f.lazy->parsed() : f.body; }

static Value call_user(InterpreterImpl& in, FunctionObj& f, CallArgs& args, const Span& where) {
  const Block* body = function_body(f); // first: a lazy body's nonlocals come with it
  const auto& params = *f.params;
  auto env = std::make_shared<Env>(f.closure);
  env->nonlocals =
      f.lazy ? (f.lazy->nonlocals.empty() ? nullptr : &f.lazy->nonlocals) : f.nonlocals;
  size_t npos = args.pos.size();
  size_t pi = 0;
  ValueList varargs;
  std::shared_ptr<DictObj> kwargs;
  std::vector<bool> bound(params.size(), false);
  auto fname = f.name + "()";
  for (size_t i = 0; i < params.size(); ++i) {
    const Param& p = params[i];
    if (p.kind == Param::Kind::VarArgs) {
      while (pi < npos) varargs.push_back(args.pos[pi++]);
      env->vars[p.name] = make_tuple(std::move(varargs));
      bound[i] = true;
      continue;
    }
    if (p.kind == Param::Kind::KwArgs) {
      kwargs = std::make_shared<DictObj>();
      env->vars[p.name] = Value::object(kwargs);
      bound[i] = true;
      continue;
    }
    if (p.kind == Param::Kind::KwOnlyMarker || p.keyword_only) continue;
    if (pi < npos) {
      env->vars[p.name] = args.pos[pi++];
      bound[i] = true;
    }
  }
  if (pi < npos) {
    // Python's text: "takes 2", or "takes from 1 to 3" when some have defaults.
    size_t max_pos = 0, min_pos = 0;
    for (const auto& p : params)
      if (p.kind == Param::Kind::Normal && !p.keyword_only) {
        ++max_pos;
        if (!p.default_value) ++min_pos;
      }
    std::string takes = min_pos == max_pos
                            ? std::to_string(max_pos)
                            : "from " + std::to_string(min_pos) + " to " + std::to_string(max_pos);
    throw Error(ErrCode::Arguments,
                fname + " takes " + takes + " positional argument" + (max_pos == 1 ? "" : "s") +
                    " but " + std::to_string(npos) + (npos == 1 ? " was" : " were") + " given",
                where);
  }
  for (auto& [name, v] : args.kw) {
    size_t i = 0;
    for (; i < params.size(); ++i)
      if (params[i].name == name && params[i].kind == Param::Kind::Normal &&
          !params[i].positional_only)
        break;
    if (i == params.size()) {
      if (kwargs) {
        kwargs->set(make_str(name), v);
        continue;
      }
      // Python names every keyword that matches a positional-only parameter.
      auto posonly = [&](const std::string& n) {
        for (const auto& p : params)
          if (p.positional_only && p.name == n) return true;
        return false;
      };
      if (posonly(name)) {
        std::string names;
        for (const auto& kw : args.kw)
          if (posonly(kw.first)) names += (names.empty() ? "" : ", ") + kw.first;
        throw Error(ErrCode::Arguments,
                    fname + " got some positional-only arguments passed as keyword arguments: '" +
                        names + "'",
                    where);
      }
      throw Error(ErrCode::Arguments, fname + " got an unexpected keyword argument '" + name + "'",
                  where);
    }
    if (bound[i])
      throw Error(ErrCode::Arguments, fname + " got multiple values for argument '" + name + "'",
                  where);
    env->vars[name] = v;
    bound[i] = true;
  }
  // Python names all the missing ones: positional first, then keyword-only.
  for (bool kwonly : {false, true}) {
    std::vector<std::string> missing;
    for (size_t i = 0; i < params.size(); ++i)
      if (!bound[i] && params[i].kind == Param::Kind::Normal && params[i].keyword_only == kwonly &&
          !params[i].default_value)
        missing.push_back("'" + params[i].name + "'");
    if (missing.empty()) continue;
    const std::string names = python_and_list(missing);
    throw Error(ErrCode::Arguments,
                fname + " missing " + std::to_string(missing.size()) + " required " +
                    (kwonly ? "keyword-only" : "positional") + " argument" +
                    (missing.size() == 1 ? "" : "s") + ": " + names,
                where);
  }
  for (size_t i = 0; i < params.size(); ++i) {
    if (bound[i] || params[i].kind != Param::Kind::Normal) continue;
    env->vars[params[i].name] = f.defaults[i];
  }
  if (f.lambda_body) return in.eval(*f.lambda_body, env);
  Value ret;
  in.exec_block(*body, env, ret);
  return ret;
}

struct StackGuard {
  InterpreterImpl& in;
  StackGuard(InterpreterImpl& i, const Span& where) : in(i) {
    if (++in.call_depth > in.options().recursion_limit) {
      --in.call_depth;
      throw Error(ErrCode::Recursion,
                  "maximum recursion depth exceeded (limit " +
                      std::to_string(in.options().recursion_limit) + " calls)",
                  where, "is a recursive function missing its base case?");
    }
    in.check_stack(where);
    in.poll_interrupt(where);
  }
  ~StackGuard() { --in.call_depth; }
};

namespace {

bool in_stdlib_file(const Span& s) {
  return s.valid() && s.file->path().rfind("<stdlib>/", 0) == 0;
}

// An error raised in the standard library's .pxl code while a builtin runs
// (a custom_jvp rule that grad calls, say) names no user frame when the
// builtin called that code itself: the user's call of the builtin is then the
// frame an error points at (Error::render skips the library's frames).
void blame_caller(Error& e, const Span& where, const std::string& name) {
  if (!in_stdlib_file(e.span()) || !where.valid() || in_stdlib_file(where)) return;
  for (const TraceEntry& t : e.trace())
    if (t.span.valid() && !in_stdlib_file(t.span)) return;
  e.add_trace({where, name});
}

} // namespace

Value InterpreterImpl::call(const Value& fn, ValueList pos, const Span& where) {
  CallArgs a;
  a.pos = std::move(pos);
  return call(fn, a, where);
}

Value InterpreterImpl::call(const Value& fn, CallArgs& args, const Span& where) {
  if (fn.tag != Value::Tag::Obj)
    throw Error(ErrCode::Type, "'" + type_name(fn) + "' object is not callable", where);
  StackGuard guard(*this, where);
  switch (fn.obj->kind) {
  case ObjKind::Function: {
    auto* f = fn.as<FunctionObj>();
    try {
      LocScope loc(ops(), op_location(ops(), where));
      struct EagerFrame { // restores the caller's on any exit
        bool& flag;
        bool saved;
        ~EagerFrame() { flag = saved; }
      } frame{in_eager_ops_function, in_eager_ops_function};
      in_eager_ops_function = f->eager_ops;
      return call_user(*this, *f, args, where);
    } catch (Error& e) {
      if (e.trace().size() < 5000) e.add_trace({where, f->name});
      throw;
    }
  }
  case ObjKind::Builtin: {
    try {
      LocScope loc(ops(), op_location(ops(), where));
      // (A builtin called by another with no location inherits its caller's.)
      LibraryCallScope library(ops(), where.valid()
                                          ? in_library_composite(where) && !in_eager_ops_function
                                          : ops().library_call);
      return fn.as<BuiltinObj>()->fn(*this, args);
    } catch (Error& e) {
      e.set_span_if_missing(where);
      blame_caller(e, where, fn.as<BuiltinObj>()->name);
      throw;
    }
  }
  case ObjKind::BoundMethod: {
    auto* m = fn.as<BoundMethodObj>();
    args.pos.insert(args.pos.begin(), m->self);
    return call(m->fn, args, where);
  }
  case ObjKind::Partial: {
    auto* p = fn.as<PartialObj>();
    CallArgs merged;
    merged.pos = p->bound.pos;
    merged.pos.insert(merged.pos.end(), args.pos.begin(), args.pos.end());
    merged.kw = p->bound.kw;
    for (auto& kv : args.kw) {
      bool replaced = false;
      for (auto& old : merged.kw)
        if (old.first == kv.first) old.second = kv.second, replaced = true;
      if (!replaced) merged.kw.push_back(kv);
    }
    return call(p->fn, merged, where);
  }
  case ObjKind::DType: {
    // jnp.float32(3) / jnp.int32(x): a conversion to an array of that dtype.
    ArgReader r(dtype_name(fn.as<DTypeObj>()->dtype), args, {"x"}, 1);
    return make_array(np_astype_value(*this, r[0], fn.as<DTypeObj>()->dtype, where));
  }
  case ObjKind::Opaque: {
    Value out;
    try {
      LocScope loc(ops(), op_location(ops(), where));
      if (fn.as<OpaqueObj>()->call(*this, args, where, out)) return out;
    } catch (Error& e) {
      e.set_span_if_missing(where);
      blame_caller(e, where, type_name(fn));
      throw;
    }
    break;
  }
  default:
    break;
  }
  throw Error(ErrCode::Type, "'" + type_name(fn) + "' object is not callable", where);
}

// ---- attributes -------------------------------------------------------------------

bool InterpreterImpl::has_attr(const Value& obj, const std::string& name) {
  try {
    get_attr(obj, name, Span{});
    return true;
  } catch (const Error&) {
    return false;
  }
}

namespace {

// Names JAX's modules keep only to say they were removed (its deprecation_getattr):
// reading one is an AttributeError with JAX's message.
const char* removed_attr_message(const std::string& module, const std::string& name) {
  if (module == "jax.numpy" && name == "fix")
    return "jax.numpy.fix was deprecated in JAX v0.9.0, and will be removed in JAX v0.10.0. Use "
           "jax.numpy.trunc instead.";
  return nullptr;
}

} // namespace

Value InterpreterImpl::get_attr(const Value& obj, const std::string& name, const Span& where) {
  if (obj.is_obj(ObjKind::Module)) {
    auto* m = obj.as<ModuleObj>();
    auto it = m->env->vars.find(name);
    if (it != m->env->vars.end()) return it->second;
    if (const char* msg = removed_attr_message(m->name, name))
      throw Error(ErrCode::Attribute, msg, where);
    throw Error(ErrCode::Attribute, "module '" + m->name + "' has no attribute '" + name + "'",
                where);
  }
  if (obj.is_obj(ObjKind::Opaque)) {
    Value v;
    if (obj.as<OpaqueObj>()->get_attr(*this, name, v)) return v;
  }
  if (obj.is_obj(ObjKind::Builtin)) {
    for (const auto& [attr, v] : obj.as<BuiltinObj>()->attrs)
      if (attr == name) return v;
    Value m;
    if (unbound_method(*this, obj.as<BuiltinObj>()->name, name, m)) return m;
  }
  Value v;
  LocScope loc(ops(), op_location(ops(), where)); // array properties such as x.T bind ops
  try {
    if (lookup_method(*this, obj, name, v)) return v;
  } catch (Error& e) { // (a deleted array's attributes, an op's shape rule): at the access
    e.set_span_if_missing(where);
    throw;
  }
  if (name == "__class__") return type_of(obj);
  throw Error(ErrCode::Attribute, "'" + type_name(obj) + "' object has no attribute '" + name + "'",
              where);
}

std::vector<std::string> InterpreterImpl::attr_names(const Value& obj) {
  std::vector<std::string> names;
  if (obj.is_obj(ObjKind::Module)) {
    for (const auto& [k, _] : obj.as<ModuleObj>()->env->vars) names.push_back(k);
  } else if (obj.is_obj(ObjKind::Opaque)) {
    names = obj.as<OpaqueObj>()->attr_names();
  }
  for (auto& n : method_names(obj)) names.push_back(std::move(n));
  return names;
}

// ---- items ----------------------------------------------------------------------------

static int64_t normalize_index(int64_t i, int64_t n, const char* what, const Span& where) {
  if (i < 0) i += n;
  if (i < 0 || i >= n)
    throw Error(ErrCode::Index, std::string(what) + " index out of range", where);
  return i;
}

// Python slice semantics (slice.indices).
static void slice_indices(InterpreterImpl& in, const SliceObj& s, int64_t n, int64_t& start,
                          int64_t& stop, int64_t& step, const Span& where) {
  (void)in;
  step = s.step.is_none() ? 1 : value_to_int(s.step, "slice step");
  if (step == 0) throw Error(ErrCode::Value, "slice step cannot be zero", where);
  auto clamp = [&](const Value& v, int64_t dflt) {
    if (v.is_none()) return dflt;
    int64_t x = value_to_int(v, "slice index");
    if (x < 0)
      x = std::max<int64_t>(x + n, step < 0 ? -1 : 0);
    else
      x = std::min<int64_t>(x, step < 0 ? n - 1 : n);
    return x;
  };
  start = clamp(s.start, step < 0 ? n - 1 : 0);
  stop = clamp(s.stop, step < 0 ? -1 : n);
}

template <class Seq>
static Seq slice_seq(InterpreterImpl& in, const Seq& items, const SliceObj& s, const Span& where) {
  int64_t start, stop, step;
  slice_indices(in, s, static_cast<int64_t>(items.size()), start, stop, step, where);
  Seq out;
  if (step > 0)
    for (int64_t i = start; i < stop; i += step) out.push_back(items[i]);
  else
    for (int64_t i = start; i > stop; i += step) out.push_back(items[i]);
  return out;
}

// The indices a slice selects in a sequence of n items, in order.
static std::vector<int64_t> slice_positions(InterpreterImpl& in, const SliceObj& s, int64_t n,
                                            const Span& where) {
  int64_t start, stop, step;
  slice_indices(in, s, n, start, stop, step, where);
  std::vector<int64_t> out;
  if (step > 0)
    for (int64_t i = start; i < stop; i += step) out.push_back(i);
  else
    for (int64_t i = start; i > stop; i += step) out.push_back(i);
  return out;
}

void assign_list_slice(InterpreterImpl& in, ListObj& list, const SliceObj& s, ValueList items,
                       const Span& where) {
  auto& xs = list.items;
  int64_t n = static_cast<int64_t>(xs.size());
  int64_t start, stop, step;
  slice_indices(in, s, n, start, stop, step, where);
  if (step == 1) { // any length: the items replace xs[start:stop]
    stop = std::max(stop, start);
    xs.erase(xs.begin() + start, xs.begin() + stop);
    xs.insert(xs.begin() + start, items.begin(), items.end());
    return;
  }
  std::vector<int64_t> at = slice_positions(in, s, n, where);
  if (at.size() != items.size())
    throw Error(ErrCode::Value,
                "attempt to assign sequence of size " + std::to_string(items.size()) +
                    " to extended slice of size " + std::to_string(at.size()),
                where);
  for (size_t k = 0; k < at.size(); ++k) xs[at[k]] = items[k];
}

void delete_list_slice(InterpreterImpl& in, ListObj& list, const SliceObj& s, const Span& where) {
  auto& xs = list.items;
  std::vector<int64_t> at = slice_positions(in, s, static_cast<int64_t>(xs.size()), where);
  std::vector<bool> drop(xs.size(), false);
  for (int64_t i : at) drop[i] = true;
  ValueList keep;
  for (size_t i = 0; i < xs.size(); ++i)
    if (!drop[i]) keep.push_back(std::move(xs[i]));
  xs = std::move(keep);
}

// Python strings index by code point. The byte length of the UTF-8 character
// whose first byte is c (a stray continuation byte counts as one character).
static size_t utf8_char_len(unsigned char c) {
  return c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
}

// Splits UTF-8 text into its code points, as views into `s` (no copy per
// character: a string of millions of characters took gigabytes).
static std::vector<std::string_view> code_points(const std::string& s) {
  std::vector<std::string_view> out;
  std::string_view all(s);
  for (size_t i = 0; i < s.size(); i += utf8_char_len(s[i]))
    out.push_back(all.substr(i, utf8_char_len(s[i])));
  return out;
}

// len(s): the number of code points, counted without splitting.
static int64_t code_point_count(const std::string& s) {
  int64_t n = 0;
  for (size_t i = 0; i < s.size(); i += utf8_char_len(s[i])) ++n;
  return n;
}

// s[k] for 0 <= k < code_point_count(s).
static std::string code_point_at(const std::string& s, int64_t k) {
  size_t i = 0;
  for (; k > 0; --k) i += utf8_char_len(s[i]);
  return s.substr(i, utf8_char_len(s[i]));
}

Value InterpreterImpl::get_item(const Value& obj, const Value& index, const Span& where) {
  if (obj.tag == Value::Tag::Obj) {
    switch (obj.obj->kind) {
    case ObjKind::List:
    case ObjKind::Tuple: {
      const ValueList& items =
          obj.obj->kind == ObjKind::List ? obj.as<ListObj>()->items : obj.as<TupleObj>()->items;
      const char* what = obj.obj->kind == ObjKind::List ? "list" : "tuple";
      if (index.is_obj(ObjKind::Slice)) {
        ValueList out = slice_seq(*this, items, *index.as<SliceObj>(), where);
        return obj.obj->kind == ObjKind::List ? make_list(std::move(out))
                                              : make_tuple(std::move(out));
      }
      if (is_bigint(index)) // (Python's IndexError for an index beyond ssize_t)
        throw Error(ErrCode::Index, "cannot fit 'int' into an index-sized integer", where);
      if (!index.is_intlike())
        throw Error(ErrCode::Type,
                    std::string(what) + " indices must be integers or slices, not " +
                        type_name(index),
                    where);
      return items[normalize_index(index.as_int(), static_cast<int64_t>(items.size()), what,
                                   where)];
    }
    case ObjKind::Str: {
      const std::string& str = obj.as<StrObj>()->value;
      if (index.is_obj(ObjKind::Slice)) {
        std::string out;
        for (auto& c : slice_seq(*this, code_points(str), *index.as<SliceObj>(), where)) out += c;
        return make_str(out);
      }
      if (!index.is_intlike())
        throw Error(ErrCode::Type, "string indices must be integers, not " + type_name(index),
                    where);
      return make_str(code_point_at(
          str, normalize_index(index.as_int(), code_point_count(str), "string", where)));
    }
    case ObjKind::Dict: {
      if (!is_hashable(index))
        throw Error(ErrCode::Type, "unhashable type: '" + type_name(index) + "'", where);
      auto* d = obj.as<DictObj>();
      if (const Value* v = d->find(index)) return *v;
      if (d->defaulted && !d->default_factory.is_none()) { // defaultdict: the factory's value, kept
        CallArgs none;
        Value made = call(d->default_factory, none, where);
        d->set(index, made);
        return made;
      }
      if (d->counter) return Value::integer(0); // (not inserted)
      throw Error(ErrCode::Key, "key " + repr(index) + " not found in dict", where);
    }
    case ObjKind::Range: {
      auto* r = obj.as<RangeObj>();
      if (index.is_obj(ObjKind::Slice)) { // a range again: range(10)[2:8:3] is range(2, 8, 3)
        int64_t start, stop, step;
        slice_indices(*this, *index.as<SliceObj>(), r->size(), start, stop, step, where);
        // In 128 bits: the slice's end may lie a step beyond int64 (range(0, 2**63 - 1, 2**62)[:]).
        __int128 first = r->start, by = r->step;
        return make_range(first + start * by, first + stop * by, by * step, where);
      }
      if (!index.is_intlike())
        throw Error(ErrCode::Type,
                    "range indices must be integers or slices, not " + type_name(index), where);
      int64_t i = normalize_index(index.as_int(), r->size(), "range object", where);
      return Value::integer(r->start + i * r->step);
    }
    case ObjKind::Array: {
      LocScope loc(ops(), op_location(ops(), where));
      return array_get_item(*this, obj, index, where);
    }
    case ObjKind::AtProxy: {
      auto* p = obj.as<AtProxyObj>();
      if (!p->has_index) return Value::object(std::make_shared<AtProxyObj>(p->array, index, true));
      break;
    }
    case ObjKind::Opaque: {
      Value out;
      try {
        if (obj.as<OpaqueObj>()->get_item(*this, index, out)) return out;
      } catch (Error& e) {
        e.set_span_if_missing(where);
        blame_caller(e, where, "__getitem__"); // a stdlib class's own __getitem__ failed
        throw;
      }
      break;
    }
    default:
      break;
    }
  }
  throw Error(ErrCode::Type, "'" + type_name(obj) + "' object is not subscriptable", where);
}

void InterpreterImpl::set_item(const Value& obj, const Value& index, const Value& v,
                               const Span& where) {
  if (obj.is_obj(ObjKind::List)) {
    auto& items = obj.as<ListObj>()->items;
    if (index.is_obj(ObjKind::Slice)) {
      assign_list_slice(*this, *obj.as<ListObj>(), *index.as<SliceObj>(), iterate(v, where), where);
      return;
    }
    if (!index.is_intlike())
      throw Error(ErrCode::Type, "list indices must be integers, not " + type_name(index), where);
    items[normalize_index(index.as_int(), static_cast<int64_t>(items.size()), "list assignment",
                          where)] = v;
    return;
  }
  if (obj.is_obj(ObjKind::Dict)) {
    if (!is_hashable(index))
      throw Error(ErrCode::Type, "unhashable type: '" + type_name(index) + "'", where);
    obj.as<DictObj>()->set(index, v);
    return;
  }
  if (obj.is_obj(ObjKind::Array))
    throw Error(ErrCode::Type,
                "JAX arrays are immutable and do not support in-place item assignment. Instead of "
                "x[idx] = y, use x = x.at[idx].set(y) or another .at[] method: "
                "https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html",
                where);
  if (obj.is_obj(ObjKind::Opaque)) {
    try {
      if (obj.as<OpaqueObj>()->set_item(*this, index, v)) return;
    } catch (Error& e) {
      e.set_span_if_missing(where);
      throw;
    }
  }
  throw Error(ErrCode::Type, "'" + type_name(obj) + "' object does not support item assignment",
              where);
}

// ---- truthiness, iteration ---------------------------------------------------------------

bool InterpreterImpl::truthy(const Value& v, const Span& where) {
  switch (v.tag) {
  case Value::Tag::None:
    return false;
  case Value::Tag::Bool:
    return v.b;
  case Value::Tag::Int:
    return v.i != 0;
  case Value::Tag::Float:
    return v.f != 0.0;
  case Value::Tag::Obj:
    break;
  }
  switch (v.obj->kind) {
  case ObjKind::Str:
    return !v.as<StrObj>()->value.empty();
  case ObjKind::Tuple:
    return !v.as<TupleObj>()->items.empty();
  case ObjKind::List:
    return !v.as<ListObj>()->items.empty();
  case ObjKind::Dict:
    return v.as<DictObj>()->size() != 0;
  case ObjKind::Range:
    return v.as<RangeObj>()->size() != 0;
  case ObjKind::Complex:
    return v.as<ComplexObj>()->re != 0 || v.as<ComplexObj>()->im != 0;
  case ObjKind::Array:
    return array_truthy(*this, v, where);
  case ObjKind::Opaque:
    try {
      return v.as<OpaqueObj>()->truth(*this);
    } catch (Error& e) {
      e.set_span_if_missing(where);
      throw;
    }
  default:
    return true;
  }
}

ValueList InterpreterImpl::iterate(const Value& v, const Span& where) {
  if (v.tag == Value::Tag::Obj) {
    switch (v.obj->kind) {
    case ObjKind::List:
      return v.as<ListObj>()->items;
    case ObjKind::Tuple:
      return v.as<TupleObj>()->items;
    case ObjKind::Str: {
      ValueList out;
      for (auto& c : code_points(v.as<StrObj>()->value)) out.push_back(make_str(std::string(c)));
      return out;
    }
    case ObjKind::Dict: {
      ValueList out;
      v.as<DictObj>()->for_each([&](const Value& k, const Value&) { out.push_back(k); });
      return out;
    }
    case ObjKind::Range: {
      auto* r = v.as<RangeObj>();
      int64_t n = r->size();
      if (n > (int64_t{1} << 26))
        throw Error(ErrCode::Value,
                    "range of " + std::to_string(n) + " elements is too large to materialise",
                    where);
      ValueList out;
      out.reserve(n);
      for (int64_t k = 0; k < n; ++k) out.push_back(Value::integer(r->start + k * r->step));
      return out;
    }
    case ObjKind::Array:
      return array_iterate(*this, v, where);
    case ObjKind::Opaque: {
      ValueList out;
      try {
        if (v.as<OpaqueObj>()->items(*this, out)) return out;
      } catch (Error& e) {
        e.set_span_if_missing(where);
        throw;
      }
      break;
    }
    default:
      break;
    }
  }
  throw Error(ErrCode::Type, "'" + type_name(v) + "' object is not iterable", where);
}

int64_t InterpreterImpl::length(const Value& v, const Span& where) {
  if (v.tag == Value::Tag::Obj) {
    switch (v.obj->kind) {
    case ObjKind::List:
      return static_cast<int64_t>(v.as<ListObj>()->items.size());
    case ObjKind::Tuple:
      return static_cast<int64_t>(v.as<TupleObj>()->items.size());
    case ObjKind::Str:
      return code_point_count(v.as<StrObj>()->value);
    case ObjKind::Dict:
      return static_cast<int64_t>(v.as<DictObj>()->size());
    case ObjKind::Range:
      return v.as<RangeObj>()->size();
    case ObjKind::Array: {
      const AVal& a = v.as<ArrayObj>()->tensor->aval;
      if (a.shape.empty())
        throw Error(ErrCode::Type, "len() of unsized object (a 0-d array)", where);
      return a.shape[0];
    }
    case ObjKind::Opaque: {
      ValueList out;
      try {
        // A tuple subclass may define __len__ (a stdlib class built on a
        // named tuple: len(Rotation) counts rotations, not fields), and so
        // may a PartitionSpec (whose iteration may be an error).
        Value len_fn;
        if ((v.as<OpaqueObj>()->tuple_items() ||
             v.as<OpaqueObj>()->type_name() == "PartitionSpec") &&
            v.as<OpaqueObj>()->get_attr(*this, "__len__", len_fn)) {
          Value n = call(len_fn, ValueList{}, where);
          if (!n.is_int())
            throw Error(ErrCode::Type,
                        "'" + type_name(n) + "' object cannot be interpreted as an integer");
          return n.as_int();
        }
        if (v.as<OpaqueObj>()->items(*this, out)) return static_cast<int64_t>(out.size());
      } catch (Error& e) {
        e.set_span_if_missing(where);
        throw;
      }
      break;
    }
    default:
      break;
    }
  }
  throw Error(ErrCode::Type, "object of type '" + type_name(v) + "' has no len()", where);
}

bool InterpreterImpl::contains(const Value& c, const Value& item, const Span& where) {
  if (c.is_obj(ObjKind::Str)) {
    if (!item.is_obj(ObjKind::Str))
      throw Error(ErrCode::Type,
                  "'in <string>' requires string as left operand, not " + type_name(item), where);
    return c.as<StrObj>()->value.find(item.as<StrObj>()->value) != std::string::npos;
  }
  if (c.is_obj(ObjKind::Dict)) {
    if (!is_hashable(item))
      throw Error(ErrCode::Type, "unhashable type: '" + type_name(item) + "'", where);
    return c.as<DictObj>()->find(item) != nullptr;
  }
  if (c.is_obj(ObjKind::Range) && item.is_intlike()) {
    auto* r = c.as<RangeObj>();
    int64_t x = item.as_int();
    if (r->step > 0 ? (x < r->start || x >= r->stop) : (x > r->start || x <= r->stop)) return false;
    return (x - r->start) % r->step == 0;
  }
  for (const Value& x : iterate(c, where))
    if (values_equal(x, item)) return true;
  return false;
}

Value InterpreterImpl::builtin(const std::string& name) const {
  auto it = builtins_->vars.find(name);
  return it == builtins_->vars.end() ? Value() : it->second;
}

} // namespace pxl
