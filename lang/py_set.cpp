#include "lang/py_set.hpp"

#include <algorithm>

#include "lang/args.hpp"
#include "lang/diag.hpp"
#include "lang/interp_impl.hpp"

namespace pxl {
namespace {

// Canonical order: numbers (by value) before strings before everything else
// (by repr), so that equal sets print and hash alike.
bool canonical_less(const Value& a, const Value& b) {
  int ra = a.is_number() ? 0 : a.is_obj(ObjKind::Str) ? 1 : 2;
  int rb = b.is_number() ? 0 : b.is_obj(ObjKind::Str) ? 1 : 2;
  if (ra != rb) return ra < rb;
  if (ra == 0) return a.as_float() < b.as_float();
  return repr(a) < repr(b);
}

bool contains(const ValueList& items, const Value& v) {
  return std::any_of(items.begin(), items.end(),
                     [&](const Value& x) { return values_equal(x, v); });
}

struct SetObj : OpaqueObj {
  ValueList elems; // distinct, in canonical order
  bool frozen = false;

  SetObj(ValueList in, bool f) : frozen(f) {
    for (Value& v : in) {
      if (!is_hashable(v))
        throw Error(ErrCode::Type, "unhashable type: '" + pxl::type_name(v) + "'");
      if (!contains(elems, v)) elems.push_back(std::move(v));
    }
    std::stable_sort(elems.begin(), elems.end(), canonical_less);
  }

  std::string type_name() const override { return frozen ? "frozenset" : "set"; }
  std::string repr() const override {
    if (elems.empty()) return frozen ? "frozenset()" : "set()";
    std::string s = "{";
    for (size_t i = 0; i < elems.size(); ++i) s += (i ? ", " : "") + pxl::repr(elems[i]);
    s += "}";
    return frozen ? "frozenset(" + s + ")" : s;
  }
  bool items(ValueList& out) const override {
    out.insert(out.end(), elems.begin(), elems.end());
    return true;
  }
  bool truth(InterpreterImpl&) override { return !elems.empty(); }
  bool subset_of(const ValueList& other) const {
    return std::all_of(elems.begin(), elems.end(),
                       [&](const Value& v) { return contains(other, v); });
  }
  bool equals(const OpaqueObj& o) const override {
    auto* s = dynamic_cast<const SetObj*>(&o);
    return s && s->elems.size() == elems.size() && subset_of(s->elems);
  }

  // The result of a binary set operation keeps the left operand's kind.
  Value combine(const std::string& op, const ValueList& a, const ValueList& b,
                bool frozen_result) const {
    ValueList out;
    if (op == "or") {
      out = a;
      out.insert(out.end(), b.begin(), b.end());
    } else if (op == "and") {
      for (const Value& v : a)
        if (contains(b, v)) out.push_back(v);
    } else if (op == "sub") {
      for (const Value& v : a)
        if (!contains(b, v)) out.push_back(v);
    } else { // xor
      for (const Value& v : a)
        if (!contains(b, v)) out.push_back(v);
      for (const Value& v : b)
        if (!contains(a, v)) out.push_back(v);
    }
    return make_py_set(std::move(out), frozen_result);
  }

  bool apply_operator(InterpreterImpl&, const std::string& op, const Value& other, bool self_first,
                      Value& out) override {
    const ValueList* o = py_set_items(other);
    // Another set-like object (an array's x.devices()) compares by its items.
    ValueList other_items;
    if (!o && (op == "eq" || op == "ne") && other.is_obj(ObjKind::Opaque) &&
        other.as<OpaqueObj>()->type_name() == "set" && other.as<OpaqueObj>()->items(other_items))
      o = &other_items;
    if (!o) {
      if (op == "eq") return out = Value::boolean(false), true;
      if (op == "ne") return out = Value::boolean(true), true;
      return false;
    }
    const ValueList& a = self_first ? elems : *o;
    const ValueList& b = self_first ? *o : elems;
    if (op == "or" || op == "and" || op == "sub" || op == "xor") {
      bool left_frozen =
          self_first ? frozen : dynamic_cast<const SetObj*>(other.as<OpaqueObj>())->frozen;
      out = combine(op, a, b, left_frozen);
      return true;
    }
    auto sub = [](const ValueList& x, const ValueList& y) {
      return std::all_of(x.begin(), x.end(), [&](const Value& v) { return contains(y, v); });
    };
    bool r;
    if (op == "eq")
      r = a.size() == b.size() && sub(a, b);
    else if (op == "ne")
      r = !(a.size() == b.size() && sub(a, b));
    else if (op == "le")
      r = sub(a, b);
    else if (op == "lt")
      r = a.size() < b.size() && sub(a, b);
    else if (op == "ge")
      r = sub(b, a);
    else if (op == "gt")
      r = b.size() < a.size() && sub(b, a);
    else
      return false;
    out = Value::boolean(r);
    return true;
  }

  bool get_attr(InterpreterImpl&, const std::string& name, Value& out) override {
    // Methods hold the set itself: mutators change this object in place.
    auto self = std::static_pointer_cast<SetObj>(self_handle.lock());
    auto others = [](InterpreterImpl& in, CallArgs& a) {
      ValueList all;
      for (const Value& v : a.pos) {
        ValueList it = in.iterate(v, Span{});
        all.insert(all.end(), it.begin(), it.end());
      }
      return all;
    };
    auto each_other = [](InterpreterImpl& in, CallArgs& a) {
      std::vector<ValueList> out;
      for (const Value& v : a.pos) out.push_back(in.iterate(v, Span{}));
      return out;
    };
    auto mutating = [&](const std::string& n) {
      if (frozen) return false;
      return n == "add" || n == "discard" || n == "remove" || n == "update" || n == "clear" ||
             n == "pop";
    };
    if (mutating(name)) {
      out = make_builtin(name, [self, name, others](InterpreterImpl& in, CallArgs& a) {
        if (name == "clear") {
          self->elems.clear();
          return Value();
        }
        if (name == "pop") {
          if (self->elems.empty()) throw Error(ErrCode::Key, "'pop from an empty set'");
          Value v = self->elems.front();
          self->elems.erase(self->elems.begin());
          return v;
        }
        if (name == "update") { // s.update(*others)
          ValueList all = self->elems, more = others(in, a);
          all.insert(all.end(), more.begin(), more.end());
          self->elems = SetObj(std::move(all), false).elems;
          return Value();
        }
        ArgReader r(name, a, {"elem"}, 1);
        ValueList add{r[0]};
        if (name == "add") {
          ValueList all = self->elems;
          all.insert(all.end(), add.begin(), add.end());
          self->elems = SetObj(std::move(all), false).elems;
          return Value();
        }
        bool found = contains(self->elems, add[0]);
        if (!found && name == "remove") throw Error(ErrCode::Key, pxl::repr(add[0]));
        ValueList keep;
        for (const Value& v : self->elems)
          if (!values_equal(v, add[0])) keep.push_back(v);
        self->elems = std::move(keep);
        return Value();
      });
      return true;
    }
    if (name == "union" || name == "intersection" || name == "difference" ||
        name == "symmetric_difference") {
      std::string op = name == "union"          ? "or"
                       : name == "intersection" ? "and"
                       : name == "difference"   ? "sub"
                                                : "xor";
      out = make_builtin(name, [self, op, each_other](InterpreterImpl& in, CallArgs& a) {
        ValueList acc = self->elems;
        for (const ValueList& o : each_other(in, a))
          acc = *py_set_items(self->combine(op, acc, o, true));
        return make_py_set(std::move(acc), self->frozen);
      });
      return true;
    }
    if (name == "issubset" || name == "issuperset" || name == "isdisjoint") {
      out = make_builtin(name, [self, name](InterpreterImpl& in, CallArgs& a) {
        ArgReader r(name, a, {"other"}, 1);
        ValueList o = in.iterate(r[0], Span{});
        bool res;
        if (name == "issubset")
          res = self->subset_of(o);
        else if (name == "issuperset")
          res = std::all_of(o.begin(), o.end(),
                            [&](const Value& v) { return contains(self->elems, v); });
        else
          res = std::none_of(o.begin(), o.end(),
                             [&](const Value& v) { return contains(self->elems, v); });
        return Value::boolean(res);
      });
      return true;
    }
    if (name == "copy") {
      out = make_builtin(name, [self](InterpreterImpl&, CallArgs&) {
        return make_py_set(self->elems, self->frozen);
      });
      return true;
    }
    return false;
  }
  std::vector<std::string> attr_names() const override {
    std::vector<std::string> n = {"copy",     "difference", "intersection",         "isdisjoint",
                                  "issubset", "issuperset", "symmetric_difference", "union"};
    if (!frozen) n.insert(n.end(), {"add", "clear", "discard", "pop", "remove", "update"});
    return n;
  }

  // Set by make_py_set: the object's own handle, for methods that outlive
  // the attribute lookup.
  std::weak_ptr<Object> self_handle;
};

} // namespace

Value make_py_set(ValueList items, bool frozen) {
  auto s = std::make_shared<SetObj>(std::move(items), frozen);
  s->self_handle = s;
  return Value::object(s);
}

const ValueList* py_set_items(const Value& v) {
  if (!v.is_obj(ObjKind::Opaque)) return nullptr;
  auto* s = dynamic_cast<const SetObj*>(v.as<OpaqueObj>());
  return s ? &s->elems : nullptr;
}

Value set_builtin(InterpreterImpl& in, CallArgs& a, bool frozen) {
  const char* name = frozen ? "frozenset" : "set";
  ArgReader r(name, a, {"iterable"});
  return make_py_set(r.has(0) ? in.iterate(r[0], Span{}) : ValueList{}, frozen);
}

} // namespace pxl
