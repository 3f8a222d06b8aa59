// Tree-walking evaluation of expressions and statements.
#include <algorithm>
#include <filesystem>

#include "lang/args.hpp"
#include "lang/bigint.hpp"
#include "lang/interp_impl.hpp"
#include "lang/lazy_iter.hpp"
#include "lang/list_slices.hpp"
#include "lang/op_location.hpp"
#include "lang/py_set.hpp"
#include "lang/tracer.hpp"

namespace pxl {

namespace {

[[noreturn]] void name_error(const std::string& name, const Span& span) {
  throw Error(ErrCode::Name, "name '" + name + "' is not defined", span);
}

} // namespace

// ---- assignment targets ------------------------------------------------------

static void assign(InterpreterImpl& in, const Expr& target, const Value& v, const EnvPtr& env);

static void assign_sequence(InterpreterImpl& in, const Expr& target, const Value& v,
                            const EnvPtr& env) {
  ValueList items = in.iterate(v, target.span);
  size_t n = target.elts.size();
  size_t star = n;
  for (size_t i = 0; i < n; ++i)
    if (target.elts[i]->kind == ExprKind::Starred) star = i;
  if (star == n) {
    if (items.size() != n)
      throw Error(ErrCode::Value,
                  items.size() > n
                      ? "too many values to unpack (expected " + std::to_string(n) + ")"
                      : "not enough values to unpack (expected " + std::to_string(n) + ", got " +
                            std::to_string(items.size()) + ")",
                  target.span);
    for (size_t i = 0; i < n; ++i) assign(in, *target.elts[i], items[i], env);
    return;
  }
  if (items.size() < n - 1)
    throw Error(ErrCode::Value,
                "not enough values to unpack (expected at least " + std::to_string(n - 1) +
                    ", got " + std::to_string(items.size()) + ")",
                target.span);
  size_t after = n - 1 - star;
  for (size_t i = 0; i < star; ++i) assign(in, *target.elts[i], items[i], env);
  ValueList middle(items.begin() + star, items.end() - after);
  assign(in, *target.elts[star]->elts[0], make_list(std::move(middle)), env);
  for (size_t i = 0; i < after; ++i)
    assign(in, *target.elts[star + 1 + i], items[items.size() - after + i], env);
}

// Binds `name` in `env`; a name its function declares nonlocal in the nearest
// enclosing scope that binds it.
static void assign_name(Env& env, const std::string& name, const Value& v) {
  if (env.nonlocals &&
      std::find(env.nonlocals->begin(), env.nonlocals->end(), name) != env.nonlocals->end()) {
    for (Env* e = env.parent.get(); e; e = e->parent.get()) {
      auto it = e->vars.find(name);
      if (it != e->vars.end()) {
        it->second = v;
        return;
      }
    }
  }
  env.vars[name] = v;
}

static void assign(InterpreterImpl& in, const Expr& target, const Value& v, const EnvPtr& env) {
  switch (target.kind) {
  case ExprKind::Name:
    assign_name(*env, target.name, v);
    return;
  case ExprKind::Tuple:
  case ExprKind::List:
    assign_sequence(in, target, v, env);
    return;
  case ExprKind::Subscript: {
    Value obj = in.eval(*target.func, env);
    Value idx = in.eval(*target.elts[0], env);
    in.set_item(obj, idx, v, target.span);
    return;
  }
  case ExprKind::Attribute: {
    Value obj = in.eval(*target.func, env);
    if (obj.is_obj(ObjKind::Module)) {
      obj.as<ModuleObj>()->env->vars[target.name] = v;
      return;
    }
    // f.__name__ = "name", as Python allows (a library names its wrappers so).
    if (obj.is_obj(ObjKind::Function) && target.name == "__name__" && v.is_obj(ObjKind::Str)) {
      obj.as<FunctionObj>()->name = v.as<StrObj>()->value;
      return;
    }
    if (obj.is_obj(ObjKind::Array) && target.name == "at")
      throw Error(ErrCode::Type, "JAX arrays are immutable; use x = x.at[idx].set(value) instead",
                  target.span);
    throw Error(ErrCode::Attribute,
                "cannot set attribute '" + target.name + "' of a " + type_name(obj) + " value",
                target.span);
  }
  default:
    throw Error(ErrCode::Syntax, "cannot assign to this expression", target.span);
  }
}

// ---- expressions -------------------------------------------------------------

// The walrus `(name := value)`: binds outside the comprehensions around it.
static Value eval_walrus(InterpreterImpl& in, const Expr& e, const EnvPtr& env) {
  Value v = in.eval(*e.elts[0], env);
  Env* scope = env.get();
  for (int64_t k = 0; k < e.int_value && scope->parent; ++k) scope = scope->parent.get();
  assign_name(*scope, e.name, v);
  return v;
}

static Value eval_call(InterpreterImpl& in, const Expr& e, const EnvPtr& env) {
  Value fn;
  // Method call fast path: obj.name(...) avoids allocating a bound method when possible.
  fn = in.eval(*e.func, env);
  CallArgs args;
  args.pos.reserve(e.elts.size());
  for (const auto& a : e.elts) {
    if (a->kind == ExprKind::Starred) {
      Value seq = in.eval(*a->elts[0], env);
      for (auto& x : in.iterate(seq, a->span)) args.pos.push_back(std::move(x));
    } else {
      args.pos.push_back(in.eval(*a, env));
    }
  }
  for (const auto& kw : e.keywords) {
    Value v = in.eval(*kw.value, env);
    if (!kw.name.empty()) {
      args.kw.emplace_back(kw.name, std::move(v));
      continue;
    }
    if (!v.is_obj(ObjKind::Dict))
      throw Error(ErrCode::Type, "argument after ** must be a dict, not " + type_name(v), kw.span);
    v.as<DictObj>()->for_each([&](const Value& k, const Value& x) {
      if (!k.is_obj(ObjKind::Str)) throw Error(ErrCode::Type, "keywords must be strings", kw.span);
      for (const auto& [name, _] : args.kw)
        if (name == k.as<StrObj>()->value)
          throw Error(ErrCode::Type, "got multiple values for keyword argument '" + name + "'",
                      kw.span);
      args.kw.emplace_back(k.as<StrObj>()->value, x);
    });
  }
  return in.call(fn, args, e.span);
}

static Value make_function(InterpreterImpl& in, const std::string& name,
                           const std::vector<Param>& params, const EnvPtr& env, const Span& span) {
  auto f = std::make_shared<FunctionObj>();
  f->name = name;
  f->params = &params;
  f->closure = env;
  f->span = span;
  in.note_closure_scope(env);
  for (const auto& p : params)
    f->defaults.push_back(p.default_value ? in.eval(*p.default_value, env) : Value());
  return Value::object(f);
}

// Runs the `for` clauses of a comprehension, calling `body` for each binding.
template <class F>
static void run_comprehension(InterpreterImpl& in, const Expr& e, size_t level, const EnvPtr& env,
                              F&& body) {
  if (level == e.comps.size()) {
    body(env);
    return;
  }
  const Comprehension& c = e.comps[level];
  // The first iterable is evaluated in the enclosing scope (as Python does).
  Value iterable = in.eval(*c.iter, env);
  for (const Value& item : in.iterate(iterable, c.iter->span)) {
    assign(in, *c.target, item, env);
    bool ok = true;
    for (const auto& cond : c.conds)
      if (!in.truthy(in.eval(*cond, env), cond->span)) {
        ok = false;
        break;
      }
    if (ok) run_comprehension(in, e, level + 1, env, body);
  }
}

static std::string eval_fstring(InterpreterImpl& in, const std::vector<FStringPart>& parts,
                                const EnvPtr& env, const Span& span) {
  std::string out;
  for (const auto& p : parts) {
    if (!p.expr) {
      out += p.literal;
      continue;
    }
    Value v = in.eval(*p.expr, env);
    std::string spec = p.spec.empty() ? std::string() : eval_fstring(in, p.spec, env, span);
    out += p.expr_text;
    if (p.conversion == 'r')
      v = make_str(repr(v, in.print_options()));
    else if (p.conversion == 's')
      v = make_str(str(v, in.print_options()));
    out += in.format_value(v, spec, p.expr->span);
  }
  return out;
}

void InterpreterImpl::keep_for_jaxpr(const Value& v, const Span& where) {
  auto keep_one = [&](const Value& x, TraceContext& tc) {
    if (!x.is_obj(ObjKind::Array)) return;
    const Tensor& t = x.as<ArrayObj>()->tensor;
    // Only the innermost trace's own values: its record maps them, and a
    // tracer of a finished trace is never dereferenced.
    if (!t || t->trace != &tc) return;
    if (int id = tc.find_value(t); id >= 0) tc.jaxpr_record->kept.push_back(id);
  };
  const bool tuple = v.is_obj(ObjKind::Tuple), list = v.is_obj(ObjKind::List);
  if (!v.is_obj(ObjKind::Array) && !tuple && !list) return;
  if (ops_stack_.size() < 2) return; // (eager: no trace, so no record)
  auto* tc = dynamic_cast<TraceContext*>(&ops());
  if (!tc || !tc->jaxpr_record || in_library_source(where)) return;
  if (tuple || list) { // (jnp.split's list, eigh's pair: one level is enough)
    for (const Value& x : tuple ? v.as<TupleObj>()->items : v.as<ListObj>()->items)
      keep_one(x, *tc);
    return;
  }
  keep_one(v, *tc);
}

Value InterpreterImpl::eval(const Expr& e, const EnvPtr& env) {
  switch (e.kind) {
  case ExprKind::Name: {
    if (const Value* v = env->lookup(e.name)) return *v;
    name_error(e.name, e.span);
  }
  case ExprKind::NoneLit:
    return Value();
  case ExprKind::BoolLit:
    return Value::boolean(e.bool_value);
  case ExprKind::IntLit:
    return e.name.empty() ? Value::integer(e.int_value)
                          : make_int(*BigInt::parse(e.name, 10)); // beyond 64 bits
  case ExprKind::NamedExpr:
    return eval_walrus(*this, e, env);
  case ExprKind::FloatLit:
    return Value::number(e.float_value);
  case ExprKind::ImagLit:
    return make_complex(0.0, e.float_value);
  case ExprKind::StrLit:
    return make_str(e.name);
  case ExprKind::EllipsisLit:
    return ellipsis_;
  case ExprKind::FString:
    return make_str(eval_fstring(*this, e.fparts, env, e.span));
  case ExprKind::Tuple:
  case ExprKind::List:
  case ExprKind::Set: {
    ValueList items;
    items.reserve(e.elts.size());
    for (const auto& x : e.elts) {
      if (x->kind == ExprKind::Starred) {
        for (auto& y : iterate(eval(*x->elts[0], env), x->span)) items.push_back(std::move(y));
      } else {
        items.push_back(eval(*x, env));
      }
    }
    if (e.kind == ExprKind::Set) {
      try {
        return make_py_set(std::move(items), false);
      } catch (Error& err) {
        err.set_span_if_missing(e.span);
        throw;
      }
    }
    return e.kind == ExprKind::Tuple ? make_tuple(std::move(items)) : make_list(std::move(items));
  }
  case ExprKind::Dict: {
    auto d = std::make_shared<DictObj>();
    for (size_t i = 0; i < e.elts.size(); ++i) {
      if (!e.elts[i]) {
        Value other = eval(*e.values[i], env);
        if (!other.is_obj(ObjKind::Dict))
          throw Error(ErrCode::Type, "'" + type_name(other) + "' object is not a mapping",
                      e.values[i]->span);
        other.as<DictObj>()->for_each([&](const Value& k, const Value& v) { d->set(k, v); });
        continue;
      }
      Value k = eval(*e.elts[i], env);
      if (!is_hashable(k))
        throw Error(ErrCode::Type, "unhashable type: '" + type_name(k) + "'", e.elts[i]->span);
      d->set(k, eval(*e.values[i], env));
    }
    return Value::object(d);
  }
  case ExprKind::BinOp: {
    Value a = eval(*e.elts[0], env);
    Value b = eval(*e.elts[1], env);
    Value r = binary_op(e.binop, a, b, e.span);
    keep_for_jaxpr(r, e.span);
    return r;
  }
  case ExprKind::UnaryOp: {
    Value a = eval(*e.elts[0], env);
    if (e.unop == UnaryOpKind::Not) return Value::boolean(!truthy(a, e.elts[0]->span));
    Value r = unary_op(e.unop, a, e.span);
    keep_for_jaxpr(r, e.span);
    return r;
  }
  case ExprKind::BoolOp: {
    Value v;
    for (size_t i = 0; i < e.elts.size(); ++i) {
      v = eval(*e.elts[i], env);
      if (i + 1 == e.elts.size()) break; // Python returns the last operand untested
      bool t = truthy(v, e.elts[i]->span);
      if (e.is_and ? !t : t) return v;
    }
    return v;
  }
  case ExprKind::Compare: {
    Value lhs = eval(*e.elts[0], env);
    Value result;
    for (size_t i = 0; i < e.cmp_ops.size(); ++i) {
      Value rhs = eval(*e.elts[i + 1], env);
      Span where = e.elts[i]->span.to(e.elts[i + 1]->span);
      result = compare(e.cmp_ops[i], lhs, rhs, where);
      if (i + 1 < e.cmp_ops.size() && !truthy(result, where)) return result;
      lhs = std::move(rhs);
    }
    return result;
  }
  case ExprKind::Call: {
    Value r = eval_call(*this, e, env);
    keep_for_jaxpr(r, e.span);
    return r;
  }
  case ExprKind::Attribute: {
    Value r = get_attr(eval(*e.func, env), e.name, e.span);
    keep_for_jaxpr(r, e.span);
    return r;
  }
  case ExprKind::Subscript: {
    Value obj = eval(*e.func, env);
    Value idx = eval(*e.elts[0], env);
    Value r = get_item(obj, idx, e.span);
    keep_for_jaxpr(r, e.span);
    return r;
  }
  case ExprKind::Slice: {
    auto part = [&](size_t i) { return e.elts[i] ? eval(*e.elts[i], env) : Value(); };
    return Value::object(std::make_shared<SliceObj>(part(0), part(1), part(2)));
  }
  case ExprKind::Lambda: {
    Value f = make_function(*this, "<lambda>", e.params, env, e.span);
    f.as<FunctionObj>()->lambda_body = e.elts[0].get();
    return f;
  }
  case ExprKind::IfExp:
    return truthy(eval(*e.elts[0], env), e.elts[0]->span) ? eval(*e.elts[1], env)
                                                          : eval(*e.elts[2], env);
  case ExprKind::ListComp: {
    auto scope = std::make_shared<Env>(env);
    ValueList items;
    run_comprehension(*this, e, 0, scope,
                      [&](const EnvPtr& s) { items.push_back(eval(*e.func, s)); });
    return make_list(std::move(items));
  }
  case ExprKind::SetComp: {
    auto scope = std::make_shared<Env>(env);
    ValueList items;
    run_comprehension(*this, e, 0, scope,
                      [&](const EnvPtr& s) { items.push_back(eval(*e.func, s)); });
    try {
      return make_py_set(std::move(items), false);
    } catch (Error& err) {
      err.set_span_if_missing(e.span);
      throw;
    }
  }
  case ExprKind::DictComp: {
    auto scope = std::make_shared<Env>(env);
    auto d = std::make_shared<DictObj>();
    run_comprehension(*this, e, 0, scope, [&](const EnvPtr& s) {
      Value k = eval(*e.func, s);
      if (!is_hashable(k))
        throw Error(ErrCode::Type, "unhashable type: '" + type_name(k) + "'", e.func->span);
      d->set(k, eval(*e.elts[0], s));
    });
    return Value::object(d);
  }
  case ExprKind::Starred:
    throw Error(ErrCode::Syntax, "can't use starred expression here", e.span);
  }
  throw Error(ErrCode::Internal, "unknown expression kind", e.span);
}

// ---- statements ----------------------------------------------------------------

Flow InterpreterImpl::exec_block(const Block& b, const EnvPtr& env, Value& ret) {
  for (const auto& s : b) {
    Flow f = exec(*s, env, ret);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

Flow InterpreterImpl::exec(const Stmt& s, const EnvPtr& env, Value& ret) {
  switch (s.kind) {
  case StmtKind::Expr:
    eval(*s.value, env);
    return Flow::Normal;
  case StmtKind::Assign: {
    Value v = eval(*s.value, env);
    for (const auto& t : s.targets) assign(*this, *t, v, env);
    return Flow::Normal;
  }
  case StmtKind::AugAssign: {
    const Expr& t = *s.targets[0];
    if (t.kind == ExprKind::Subscript) {
      Value obj = eval(*t.func, env);
      Value idx = eval(*t.elts[0], env);
      Value cur = get_item(obj, idx, t.span);
      Value rhs = eval(*s.value, env);
      Value nv;
      // Lists extend in place under +=, as in Python.
      nv = binary_op(s.op, cur, rhs, s.span);
      set_item(obj, idx, nv, t.span);
      return Flow::Normal;
    }
    Value cur = eval(t, env);
    Value rhs = eval(*s.value, env);
    if (s.op == BinOpKind::Add && cur.is_obj(ObjKind::List)) {
      for (auto& x : iterate(rhs, s.value->span)) cur.as<ListObj>()->items.push_back(x);
      return Flow::Normal;
    }
    assign(*this, t, binary_op(s.op, cur, rhs, s.span), env);
    return Flow::Normal;
  }
  case StmtKind::If: {
    if (truthy(eval(*s.test, env), s.test->span)) return exec_block(s.body, env, ret);
    return exec_block(s.orelse, env, ret);
  }
  case StmtKind::With: {
    Value cm = eval(*s.value, env);
    auto* obj = cm.is_obj(ObjKind::Opaque) ? cm.as<OpaqueObj>() : nullptr;
    Value bound;
    bool entered = false;
    try {
      entered = obj && obj->enter(*this, bound);
    } catch (Error& e) {
      e.set_span_if_missing(s.value->span);
      throw;
    }
    if (!entered)
      throw Error(ErrCode::Type,
                  "'" + type_name(cm) + "' object does not support the context manager protocol",
                  s.value->span,
                  "pxl's context managers are meshes (with mesh:, with jax.set_mesh(mesh):)");
    struct Exit {
      InterpreterImpl& in;
      OpaqueObj* obj;
      Value keep; // the manager stays alive while its block runs
      ~Exit() { obj->exit(in); }
    } leave{*this, obj, cm};
    if (!s.targets.empty()) assign(*this, *s.targets[0], bound, env);
    return exec_block(s.body, env, ret);
  }
  case StmtKind::While: {
    while (truthy(eval(*s.test, env), s.test->span)) {
      poll_interrupt(s.span);
      Flow f = exec_block(s.body, env, ret);
      if (f == Flow::Break) return Flow::Normal;
      if (f == Flow::Return) return f;
    }
    return exec_block(s.orelse, env, ret);
  }
  case StmtKind::For: {
    Value iterable = eval(*s.value, env);
    // Ranges are iterated lazily so that "for i in range(10**9): break" is cheap.
    if (iterable.is_obj(ObjKind::Range)) {
      auto r = iterable.as<RangeObj>();
      int64_t n = r->size();
      for (int64_t k = 0; k < n; ++k) {
        assign(*this, *s.targets[0], Value::integer(r->start + k * r->step), env);
        poll_interrupt(s.span);
        Flow f = exec_block(s.body, env, ret);
        if (f == Flow::Break) return Flow::Normal;
        if (f == Flow::Return) return f;
      }
      return exec_block(s.orelse, env, ret);
    }
    // One pass of the body: whether the loop goes on (and `f`, how it stopped).
    Flow f = Flow::Normal;
    auto step = [&](const Value& item) {
      assign(*this, *s.targets[0], item, env);
      poll_interrupt(s.span);
      f = exec_block(s.body, env, ret);
      return f != Flow::Break && f != Flow::Return;
    };
    bool done = false;
    if (LazyIterObj* it = as_lazy_iter(iterable)) { // one item at a time (maybe endless)
      Value item;
      while (!done && it->next(*this, item)) done = !step(item);
    } else {
      for (const Value& item : iterate(iterable, s.value->span))
        if ((done = !step(item))) break;
    }
    if (f == Flow::Break) return Flow::Normal;
    if (f == Flow::Return) return f;
    return exec_block(s.orelse, env, ret);
  }
  case StmtKind::Break:
    return Flow::Break;
  case StmtKind::Continue:
    return Flow::Continue;
  case StmtKind::Pass:
  case StmtKind::Nonlocal: // (declares names for the whole def: FunctionDef's nonlocals)
    return Flow::Normal;
  case StmtKind::Return:
    ret = s.value ? eval(*s.value, env) : Value();
    return Flow::Return;
  case StmtKind::FunctionDef: {
    Value f = make_function(*this, s.name, s.params, env, s.name_span);
    f.as<FunctionObj>()->body = &s.body;
    f.as<FunctionObj>()->lazy = s.lazy_body.get();
    if (!s.nonlocals.empty()) f.as<FunctionObj>()->nonlocals = &s.nonlocals;
    for (auto it = s.decorators.rbegin(); it != s.decorators.rend(); ++it) {
      Value deco = eval(**it, env);
      f = call(deco, ValueList{f}, (*it)->span);
    }
    env->vars[s.name] = f;
    return Flow::Normal;
  }
  case StmtKind::Assert: {
    Value t = eval(*s.test, env);
    if (!truthy(t, s.test->span)) {
      // Python's AssertionError: its message is str() of the assert's second
      // operand; a bare assert has none (shown as the class name).
      std::string msg = s.value ? str(eval(*s.value, env)) : "AssertionError";
      throw Error(ErrCode::Assertion, msg, s.test->span);
    }
    return Flow::Normal;
  }
  case StmtKind::Import: {
    std::string dir = std::filesystem::path(s.span.file->path()).parent_path().string();
    for (const auto& in : s.imports) {
      Value m = import_module(in.module, in.span, dir);
      if (!in.alias.empty()) {
        env->vars[in.alias] = m;
      } else {
        // "import a.b.c" binds "a".
        std::string top = in.module.substr(0, in.module.find('.'));
        env->vars[top] = import_module(top, in.span, dir);
      }
    }
    return Flow::Normal;
  }
  case StmtKind::ImportFrom: {
    std::string dir = std::filesystem::path(s.span.file->path()).parent_path().string();
    if (s.from_level > 0 && s.from_module.empty())
      throw Error(ErrCode::Import, "relative imports need a module name: from .name import x",
                  s.span);
    Value m = import_module(s.from_module, s.span, dir);
    for (const auto& in : s.imports) {
      Value v;
      if (has_attr(m, in.name)) {
        v = get_attr(m, in.name, in.span);
      } else {
        // "from jax.experimental import shard_map" may name a submodule.
        try {
          v = import_module(s.from_module + "." + in.name, in.span, dir);
        } catch (const Error&) {
          throw Error(ErrCode::Import,
                      "cannot import name '" + in.name + "' from '" + s.from_module + "'", in.span);
        }
      }
      env->vars[in.alias.empty() ? in.name : in.alias] = v;
    }
    return Flow::Normal;
  }
  case StmtKind::Del: {
    const Expr& t = *s.targets[0];
    std::vector<const Expr*> targets;
    if (t.kind == ExprKind::Tuple)
      for (const auto& x : t.elts) targets.push_back(x.get());
    else
      targets.push_back(&t);
    for (const Expr* x : targets) {
      if (x->kind == ExprKind::Name) {
        if (!env->vars.erase(x->name)) name_error(x->name, x->span);
      } else if (x->kind == ExprKind::Subscript) {
        Value obj = eval(*x->func, env);
        Value idx = eval(*x->elts[0], env);
        if (obj.is_obj(ObjKind::Dict)) {
          if (!obj.as<DictObj>()->erase(idx))
            throw Error(ErrCode::Key, "key " + repr(idx) + " not found", x->span);
        } else if (obj.is_obj(ObjKind::List) && idx.is_intlike()) {
          auto& items = obj.as<ListObj>()->items;
          int64_t i = idx.as_int(), n = static_cast<int64_t>(items.size());
          if (i < 0) i += n;
          if (i < 0 || i >= n) throw Error(ErrCode::Index, "list index out of range", x->span);
          items.erase(items.begin() + i);
        } else if (obj.is_obj(ObjKind::List) && idx.is_obj(ObjKind::Slice)) {
          delete_list_slice(*this, *obj.as<ListObj>(), *idx.as<SliceObj>(), x->span);
        } else {
          throw Error(ErrCode::Type, "cannot delete items of a " + type_name(obj) + " value",
                      x->span);
        }
      } else {
        throw Error(ErrCode::Syntax, "cannot delete this expression", x->span);
      }
    }
    return Flow::Normal;
  }
  }
  return Flow::Normal;
}

} // namespace pxl
