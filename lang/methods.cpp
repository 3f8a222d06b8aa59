// Methods and attributes of the built-in host types (str, list, tuple, dict, ...).
#include "lang/methods.hpp"

#include "lang/bigint.hpp"
#include "lang/py_complex.hpp"

#include <algorithm>
#include <cmath>

#include "lang/args.hpp"
#include "lang/device_memory.hpp"
#include "lang/docstring.hpp"
#include "lang/str_methods.hpp"

namespace pxl {

namespace {

using Method = Value (*)(InterpreterImpl&, const Value& self, CallArgs&);

Value bind_method(const Value& self, const std::string& name, Method m) {
  return Value::object(std::make_shared<BoundMethodObj>(
      self, make_builtin(name, [m](InterpreterImpl& in, CallArgs& a) {
        Value self = a.pos.front();
        a.pos.erase(a.pos.begin());
        return m(in, self, a);
      })));
}

const std::vector<std::string> kListMethods = {"append", "extend", "pop",     "insert",
                                               "index",  "count",  "reverse", "sort",
                                               "copy",   "clear",  "remove"};
const std::vector<std::string> kTupleMethods = {"index", "count"};
const std::vector<std::string> kDictMethods = {"keys", "values",  "items",      "get",  "update",
                                               "pop",  "popitem", "setdefault", "copy", "clear"};

Value list_method(InterpreterImpl& in, const std::string& name, const Value& self, CallArgs& a) {
  bool is_list = self.is_obj(ObjKind::List);
  const ValueList& items = is_list ? self.as<ListObj>()->items : self.as<TupleObj>()->items;
  if (name == "index" || name == "count") {
    ArgReader r(name, a, {"value"}, 1);
    int64_t n = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!values_equal(items[i], r[0])) continue;
      if (name == "index") return Value::integer(static_cast<int64_t>(i));
      ++n;
    }
    if (name == "index") throw Error(ErrCode::Value, repr(r[0]) + " is not in list");
    return Value::integer(n);
  }
  ValueList& v = self.as<ListObj>()->items;
  if (name == "append") {
    ArgReader r(name, a, {"object"}, 1);
    v.push_back(r[0]);
    return Value();
  }
  if (name == "extend") {
    ArgReader r(name, a, {"iterable"}, 1);
    for (auto& x : in.iterate(r[0], Span{})) v.push_back(x);
    return Value();
  }
  if (name == "pop") {
    ArgReader r(name, a, {"index"});
    if (v.empty()) throw Error(ErrCode::Index, "pop from empty list");
    int64_t i = r.get_int(0, -1), n = static_cast<int64_t>(v.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) throw Error(ErrCode::Index, "pop index out of range");
    Value x = v[i];
    v.erase(v.begin() + i);
    return x;
  }
  if (name == "insert") {
    ArgReader r(name, a, {"index", "object"}, 2);
    int64_t i = r.get_int(0), n = static_cast<int64_t>(v.size());
    if (i < 0) i = std::max<int64_t>(0, i + n);
    v.insert(v.begin() + std::min(i, n), r[1]);
    return Value();
  }
  if (name == "remove") {
    ArgReader r(name, a, {"value"}, 1);
    for (size_t i = 0; i < v.size(); ++i)
      if (values_equal(v[i], r[0])) {
        v.erase(v.begin() + i);
        return Value();
      }
    throw Error(ErrCode::Value, "list.remove(x): x not in list");
  }
  if (name == "reverse") {
    ArgReader r(name, a, {});
    std::reverse(v.begin(), v.end());
    return Value();
  }
  if (name == "clear") {
    ArgReader r(name, a, {});
    v.clear();
    return Value();
  }
  if (name == "copy") {
    ArgReader r(name, a, {});
    return make_list(v);
  }
  if (name == "sort") {
    ArgReader r(name, a, {"*", "key", "reverse"});
    Value sorted_fn = in.builtin("sorted");
    CallArgs sa;
    sa.pos.push_back(self);
    for (auto& kv : a.kw) sa.kw.push_back(kv);
    Value out = in.call(sorted_fn, sa, Span{});
    v = out.as<ListObj>()->items;
    return Value();
  }
  throw Error(ErrCode::Internal, "unhandled list method " + name);
}

const std::vector<std::string> kCounterMethods = {"most_common", "elements", "subtract", "total"};

Value counter_method(InterpreterImpl& in, const std::string& name, const Value& self, CallArgs& a) {
  auto* d = self.as<DictObj>();
  if (name == "update" || name == "subtract") {
    auto keywords = std::move(a.kw);
    a.kw.clear();
    ArgReader r(name, a, {"iterable"});
    count_into(in, *d, r.has(0) ? r[0] : Value(), keywords, name == "subtract");
    return Value();
  }
  if (name == "total") {
    ArgReader r(name, a, {});
    Value sum = Value::integer(0);
    d->for_each(
        [&](const Value&, const Value& v) { sum = in.binary_op(BinOpKind::Add, sum, v, Span{}); });
    return sum;
  }
  if (name == "elements") { // each key as many times as its count (positive counts only)
    ArgReader r(name, a, {});
    ValueList out;
    d->for_each([&](const Value& k, const Value& v) {
      for (int64_t i = 0; v.is_intlike() && i < v.as_int(); ++i) out.push_back(k);
    });
    return make_list(std::move(out));
  }
  // most_common(n=None): (key, count) pairs, largest count first, ties in insertion order.
  ArgReader r(name, a, {"n"});
  ValueList pairs;
  d->for_each([&](const Value& k, const Value& v) { pairs.push_back(make_tuple({k, v})); });
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& x, const Value& y) {
    return in.less_than((*sequence_items(y))[1], (*sequence_items(x))[1], Span{});
  });
  if (r.has(0) && !r[0].is_none()) {
    int64_t n = std::max<int64_t>(0, r.get_int(0));
    if (static_cast<size_t>(n) < pairs.size()) pairs.resize(static_cast<size_t>(n));
  }
  return make_list(std::move(pairs));
}

Value dict_method(InterpreterImpl& in, const std::string& name, const Value& self, CallArgs& a) {
  auto* d = self.as<DictObj>();
  if (name == "keys" || name == "values" || name == "items") {
    ArgReader r(name, a, {});
    ValueList out;
    d->for_each([&](const Value& k, const Value& v) {
      if (name == "keys")
        out.push_back(k);
      else if (name == "values")
        out.push_back(v);
      else
        out.push_back(make_tuple({k, v}));
    });
    return make_list(std::move(out));
  }
  if (name == "get") {
    ArgReader r(name, a, {"key", "default"}, 1);
    if (!is_hashable(r[0]))
      throw Error(ErrCode::Type, "unhashable type: '" + type_name(r[0]) + "'");
    const Value* v = d->find(r[0]);
    return v ? *v : r[1];
  }
  if (name == "update") {
    // d.update(other, **kwargs): the keywords are set after `other`.
    auto keywords = std::move(a.kw);
    a.kw.clear();
    ArgReader r(name, a, {"other"});
    if (r.has(0)) {
      if (r[0].is_obj(ObjKind::Dict)) {
        r[0].as<DictObj>()->for_each([&](const Value& k, const Value& v) { d->set(k, v); });
      } else {
        for (const Value& kv : in.iterate(r[0], Span{})) {
          ValueList pair = in.iterate(kv, Span{});
          if (pair.size() != 2)
            throw Error(ErrCode::Value, "dictionary update sequence element has wrong length");
          d->set(pair[0], pair[1]);
        }
      }
    }
    for (auto& [key, v] : keywords) d->set(make_str(key), v);
    return Value();
  }
  if (name == "pop") {
    ArgReader r(name, a, {"key", "default"}, 1);
    const Value* v = d->find(r[0]);
    if (!v) {
      if (r.has(1)) return r[1];
      throw Error(ErrCode::Key, "key " + repr(r[0]) + " not found in dict");
    }
    Value out = *v;
    d->erase(r[0]);
    return out;
  }
  if (name == "popitem") { // the last item inserted, as Python's
    ArgReader r(name, a, {});
    for (size_t i = d->entries.size(); i-- > 0;)
      if (d->live[i]) {
        Value out = make_tuple({d->entries[i].first, d->entries[i].second});
        d->erase(d->entries[i].first);
        return out;
      }
    throw Error(ErrCode::Key, "'popitem(): dictionary is empty'");
  }
  if (name == "setdefault") {
    ArgReader r(name, a, {"key", "default"}, 1);
    if (const Value* v = d->find(r[0])) return *v;
    d->set(r[0], r[1]);
    return r[1];
  }
  if (name == "copy") { // (of the same kind: an OrderedDict, defaultdict or Counter too)
    ArgReader r(name, a, {});
    auto c = std::make_shared<DictObj>();
    d->for_each([&](const Value& k, const Value& v) { c->set(k, v); });
    c->ordered = d->ordered;
    c->defaulted = d->defaulted;
    c->default_factory = d->default_factory;
    c->counter = d->counter;
    return Value::object(c);
  }
  if (name == "clear") {
    ArgReader r(name, a, {});
    d->entries.clear();
    d->live.clear();
    d->index.clear();
    return Value();
  }
  throw Error(ErrCode::Internal, "unhandled dict method " + name);
}

bool contains_name(const std::vector<std::string>& v, const std::string& n) {
  return std::find(v.begin(), v.end(), n) != v.end();
}

Value bind_dynamic(const Value& self, const std::string& name,
                   Value (*fn)(InterpreterImpl&, const std::string&, const Value&, CallArgs&)) {
  return Value::object(std::make_shared<BoundMethodObj>(
      self, make_builtin(name, [name, fn](InterpreterImpl& in, CallArgs& a) {
        Value self = a.pos.front();
        a.pos.erase(a.pos.begin());
        return fn(in, name, self, a);
      })));
}

} // namespace

bool lookup_method(InterpreterImpl& in, const Value& obj, const std::string& name, Value& out) {
  if (obj.tag != Value::Tag::Obj) {
    // Python's number attributes: x.real, x.imag, x.conjugate(); ints (and
    // bools, as ints) also numerator, denominator, bit_length().
    if (obj.is_number()) {
      Value self = obj.is_bool() ? Value::integer(obj.as_int()) : obj;
      if (name == "real") return out = self, true;
      if (name == "imag")
        return out = obj.is_float() ? Value::number(0.0) : Value::integer(0), true;
      if (name == "conjugate") {
        out = bind_method(self, name, [](InterpreterImpl&, const Value& s, CallArgs& a) {
          ArgReader r("conjugate", a, {});
          return s;
        });
        return true;
      }
    }
    if (obj.is_intlike()) {
      if (name == "numerator") return out = Value::integer(obj.as_int()), true;
      if (name == "denominator") return out = Value::integer(1), true;
      if (name == "bit_length") {
        out = bind_method(obj, name, [](InterpreterImpl&, const Value& s, CallArgs& a) {
          ArgReader r("bit_length", a, {});
          int64_t v = s.as_int();
          uint64_t m = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
          return Value::integer(m == 0 ? 0 : 64 - __builtin_clzll(m));
        });
        return true;
      }
    }
    if (obj.is_float() && name == "is_integer") {
      out = bind_method(obj, name, [](InterpreterImpl&, const Value& s, CallArgs& a) {
        ArgReader r("is_integer", a, {});
        return Value::boolean(std::floor(s.f) == s.f && std::isfinite(s.f));
      });
      return true;
    }
    return false;
  }
  switch (obj.obj->kind) {
  case ObjKind::BigInt: // as an int's (real, imag, numerator, denominator, bit_length())
    if (name == "real" || name == "numerator") return out = obj, true;
    if (name == "imag") return out = Value::integer(0), true;
    if (name == "denominator") return out = Value::integer(1), true;
    if (name == "conjugate") {
      out = bind_method(obj, name, [](InterpreterImpl&, const Value& s, CallArgs& a) {
        ArgReader r("conjugate", a, {});
        return s;
      });
      return true;
    }
    if (name == "bit_length") {
      out = bind_method(obj, name, [](InterpreterImpl&, const Value& s, CallArgs& a) {
        ArgReader r("bit_length", a, {});
        return Value::integer(static_cast<int64_t>(s.as<BigIntObj>()->value.bit_length()));
      });
      return true;
    }
    return false;
  case ObjKind::Complex:
    return complex_attr(obj, name, out);
  case ObjKind::Str:
    if (!contains_name(str_method_names(), name)) return false;
    out = bind_dynamic(obj, name, str_method);
    return true;
  case ObjKind::List:
    if (!contains_name(kListMethods, name)) return false;
    out = bind_dynamic(obj, name, list_method);
    return true;
  case ObjKind::Tuple:
    if (!contains_name(kTupleMethods, name)) return false;
    out = bind_dynamic(obj, name, list_method);
    return true;
  case ObjKind::Dict:
    if (obj.as<DictObj>()->counter && (name == "update" || contains_name(kCounterMethods, name))) {
      out = bind_dynamic(obj, name, counter_method);
      return true;
    }
    if (!contains_name(kDictMethods, name)) return false;
    out = bind_dynamic(obj, name, dict_method);
    return true;
  case ObjKind::Array:
    return array_attr(in, obj, name, out);
  case ObjKind::Function:
    if (name == "__name__") return out = make_str(obj.as<FunctionObj>()->name), true;
    if (name == "__doc__") return out = docstring(function_body(*obj.as<FunctionObj>())), true;
    return false;
  case ObjKind::Builtin:
    if (name == "__name__") return out = make_str(obj.as<BuiltinObj>()->name), true;
    return false;
  case ObjKind::DType:
    if (name == "name") return out = make_str(obj.as<DTypeObj>()->name()), true;
    if (name == "itemsize")
      return out = Value::integer(static_cast<int64_t>(obj.as<DTypeObj>()->itemsize())), true;
    if (name == "__name__" && obj.as<DTypeObj>()->scalar_type) // jnp.float32.__name__
      return out = make_str(obj.as<DTypeObj>()->name()), true;
    if (name == "dtype") { // jnp.float32.dtype is dtype('float32')
      auto d = std::make_shared<DTypeObj>(*obj.as<DTypeObj>());
      d->scalar_type = false;
      return out = Value::object(d), true;
    }
    if (name == "type") { // dtype('float32').type is the scalar type float32
      auto d = std::make_shared<DTypeObj>(*obj.as<DTypeObj>());
      d->scalar_type = true;
      return out = Value::object(d), true;
    }
    if (name == "char" || name == "str" ||
        name == "byteorder") { // numpy's codes, by the dtype's own name
      static const char* const kCodes[][3] = {{"bool", "?", "|b1"},
                                              {"int8", "b", "|i1"},
                                              {"int16", "h", "<i2"},
                                              {"int32", "i", "<i4"},
                                              {"int64", "l", "<i8"},
                                              {"uint8", "B", "|u1"},
                                              {"uint16", "H", "<u2"},
                                              {"uint32", "I", "<u4"},
                                              {"uint64", "L", "<u8"},
                                              {"bfloat16", "E", "<V2"},
                                              {"float16", "e", "<f2"},
                                              {"float32", "f", "<f4"},
                                              {"float64", "d", "<f8"},
                                              {"complex64", "F", "<c8"},
                                              {"complex128", "D", "<c16"},
                                              {"int2", "c", "<V1"},
                                              {"int4", "a", "<V1"},
                                              {"uint2", "C", "<V1"},
                                              {"uint4", "A", "<V1"},
                                              {"float8_e4m3fn", "4", "<V1"},
                                              {"float8_e5m2", "5", "<f1"},
                                              {"float8_e4m3fnuz", "G", "<V1"},
                                              {"float8_e5m2fnuz", "C", "<V1"},
                                              {"float8_e4m3b11fnuz", "L", "<V1"},
                                              {"float8_e4m3", "7", "<V1"},
                                              {"float8_e3m4", "3", "<V1"},
                                              {"float8_e8m0fnu", "W", "<V1"},
                                              {"float4_e2m1fn", "0", "<V1"}};
      const std::string n = obj.as<DTypeObj>()->name();
      for (const auto& c : kCodes) {
        if (n != c[0]) continue;
        if (name == "byteorder") return out = make_str(c[2][0] == '|' ? "|" : "="), true;
        return out = make_str(name == "char" ? c[1] : c[2]), true;
      }
      return false;
    }
    if (name == "kind") { // numpy's kind code; bfloat16 is an ml_dtypes 'V' type
      DType d = obj.as<DTypeObj>()->dtype;
      const char* k = d == DType::Bool ? "b"
                      : d == DType::BFloat16 || is_narrow_int(d) ||
                              (is_small_float(d) && d != DType::Float8E5M2)
                          ? "V" // (ml_dtypes registers float8_e5m2 as a float kind)
                      : is_signed_int(d)   ? "i"
                      : is_unsigned_int(d) ? "u"
                      : is_complex(d)      ? "c"
                                           : "f";
      return out = make_str(k), true;
    }
    return false;
  case ObjKind::Partial: { // functools.partial's func, args, keywords
    auto* p = obj.as<PartialObj>();
    if (name == "func") return out = p->fn, true;
    if (name == "args") return out = make_tuple(p->bound.pos), true;
    if (name == "keywords") {
      auto d = std::make_shared<DictObj>();
      for (const auto& [k, v] : p->bound.kw) d->set(make_str(k), v);
      return out = Value::object(d), true;
    }
    return false;
  }
  case ObjKind::Device:
    if (name == "id") return out = Value::integer(obj.as<DeviceObj>()->id), true;
    if (name == "platform") return out = make_str(jax_platform_name(*obj.as<DeviceObj>())), true;
    if (name == "device_kind") return out = make_str(obj.as<DeviceObj>()->platform), true;
    // One process, one host: JAX's CPU devices report 0 for these, their id
    // as the local hardware id, and no memory statistics.
    if (name == "process_index" || name == "host_id" || name == "task_id")
      return out = Value::integer(0), true;
    if (name == "local_hardware_id") return out = Value::integer(obj.as<DeviceObj>()->id), true;
    if (name == "memory_stats") {
      out = make_builtin("memory_stats", [](InterpreterImpl&, CallArgs& a) {
        ArgReader r("memory_stats", a, {}, 0);
        return Value();
      });
      return true;
    }
    return device_memory_method(obj, name, out);
  case ObjKind::Slice: {
    auto* s = obj.as<SliceObj>();
    if (name == "start") return out = s->start, true;
    if (name == "stop") return out = s->stop, true;
    if (name == "step") return out = s->step, true;
    return false;
  }
  case ObjKind::Range: {
    auto* r = obj.as<RangeObj>();
    if (name == "start") return out = Value::integer(r->start), true;
    if (name == "stop") return out = Value::integer(r->stop), true;
    if (name == "step") return out = Value::integer(r->step), true;
    return false;
  }
  case ObjKind::AtProxy:
    return array_attr(in, obj, name, out);
  default:
    return false;
  }
}

std::vector<std::string> method_names(const Value& obj) {
  if (obj.is_obj(ObjKind::Str)) return str_method_names();
  if (obj.is_obj(ObjKind::List)) return kListMethods;
  if (obj.is_obj(ObjKind::Tuple)) return kTupleMethods;
  if (obj.is_obj(ObjKind::Dict)) {
    std::vector<std::string> names = kDictMethods;
    if (obj.as<DictObj>()->counter)
      names.insert(names.end(), kCounterMethods.begin(), kCounterMethods.end());
    return names;
  }
  if (obj.is_obj(ObjKind::Array)) return array_attr_names();
  return {};
}

void count_into(InterpreterImpl& in, DictObj& d, const Value& source,
                const std::vector<std::pair<std::string, Value>>& keywords, bool subtract) {
  const BinOpKind op = subtract ? BinOpKind::Sub : BinOpKind::Add;
  auto add = [&](const Value& k, const Value& n) {
    if (!is_hashable(k)) throw Error(ErrCode::Type, "unhashable type: '" + type_name(k) + "'");
    const Value* have = d.find(k);
    d.set(k, in.binary_op(op, have ? *have : Value::integer(0), n, Span{}));
  };
  if (source.is_obj(ObjKind::Dict)) {
    ValueList keys, counts;
    source.as<DictObj>()->for_each([&](const Value& k, const Value& n) {
      keys.push_back(k);
      counts.push_back(n);
    });
    for (size_t i = 0; i < keys.size(); ++i) add(keys[i], counts[i]);
  } else if (!source.is_none()) {
    for (const Value& x : in.iterate(source, Span{})) add(x, Value::integer(1));
  }
  for (const auto& [k, n] : keywords) add(make_str(k), n);
}

} // namespace pxl
