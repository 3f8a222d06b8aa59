#include "stdlib/sparse_class.hpp"

#include "lang/args.hpp"
#include "lang/interp_impl.hpp"
#include "stdlib/module_builder.hpp"
#include "stdlib/namedtuple.hpp"

namespace pxl {

namespace {

const Shape* array_shape(const Value& v) {
  return v.is_obj(ObjKind::Array) ? &v.as<ArrayObj>()->tensor->aval.shape : nullptr;
}

// JAX's JAXSparse repr: Name(dtype[shape], nse=N[, n_batch=B][, n_dense=D]),
// read off the data and indices arrays (BCSR's indices hold no sparse axis)
// and the aux dict's shape; Name(<invalid>) when they are not arrays.
std::string sparse_repr(const std::string& name, const ValueList& values) {
  const std::string invalid = name + "(<invalid>)";
  if (values.size() < 3 || !values[0].is_obj(ObjKind::Array) ||
      !values.back().is_obj(ObjKind::Dict))
    return invalid;
  const Shape* ind = array_shape(values[1]);
  const Value* shape = values.back().as<DictObj>()->find(make_str("shape"));
  const ValueList* dims = shape ? sequence_items(*shape) : nullptr;
  bool csr = name == "BCSR";
  if (!ind || !dims || ind->size() < (csr ? 1u : 2u)) return invalid;
  int64_t n_batch = static_cast<int64_t>(ind->size()) - (csr ? 1 : 2);
  int64_t nse = csr ? ind->back() : (*ind)[ind->size() - 2];
  int64_t n_sparse = csr ? 2 : ind->back();
  int64_t n_dense = static_cast<int64_t>(dims->size()) - n_batch - n_sparse;
  std::string s = name + "(" + dtype_name(values[0].as<ArrayObj>()->tensor->aval.dtype) + "[";
  for (size_t i = 0; i < dims->size(); ++i) s += (i ? ", " : "") + repr((*dims)[i]);
  s += "], nse=" + std::to_string(nse);
  if (n_batch) s += ", n_batch=" + std::to_string(n_batch);
  if (n_dense) s += ", n_dense=" + std::to_string(n_dense);
  s += ")";
  // Traced data (inside jit) shows as JAX shows it there; pxl does not tell
  // jit's traces from vmap's (JAX's BatchTracer[...]), as for arrays.
  const Tensor& t = values[0].as<ArrayObj>()->tensor;
  if (!t->concrete && !t->sharded) s = "DynamicJaxprTracer[" + s + "]";
  return s;
}

// vmap maps a sparse array over its leading batch axis: inside, the leaves
// have lost that axis, and the results gain one. The aux shape follows the
// leaves: leading entries are dropped, or taken from data's leading axes.
void follow_leaves(bool csr, ValueList& values) {
  if (values.size() < 3 || !values[0].is_obj(ObjKind::Array) ||
      !values.back().is_obj(ObjKind::Dict))
    return;
  const Shape* data = array_shape(values[0]);
  const Shape* ind = array_shape(values[1]);
  auto* info = values.back().as<DictObj>();
  const Value* shape = info->find(make_str("shape"));
  const ValueList* dims = shape ? sequence_items(*shape) : nullptr;
  if (!ind || !dims || ind->size() < (csr ? 1u : 2u)) return;
  int64_t n_batch = static_cast<int64_t>(ind->size()) - (csr ? 1 : 2);
  int64_t n_sparse = csr ? 2 : ind->back();
  int64_t n_dense = static_cast<int64_t>(data->size()) - 1 - n_batch;
  int64_t want = n_batch + n_sparse + n_dense, have = static_cast<int64_t>(dims->size());
  if (want == have || n_dense < 0) return;
  ValueList out;
  if (want < have) {
    out.assign(dims->begin() + (have - want), dims->end());
  } else {
    if (static_cast<int64_t>(data->size()) < want - have) return;
    for (int64_t i = 0; i < want - have; ++i)
      out.push_back(Value::integer((*data)[static_cast<size_t>(i)]));
    out.insert(out.end(), dims->begin(), dims->end());
  }
  auto copy = std::make_shared<DictObj>(*info);
  copy->set(make_str("shape"), make_tuple(std::move(out)));
  values.back() = Value::object(copy);
}

} // namespace

void add_sparse_class_builtin(ModuleBuilder& types) {
  types.fn("_sparse_class", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("_sparse_class", a, {"name", "field_names", "attrs", "ops", "class_attrs", "init"},
                6);
    auto type = std::make_shared<NamedTupleType>();
    type->name = r.get_str(0);
    const ValueList* fields = sequence_items(r[1]);
    if (!fields || fields->empty())
      throw Error(ErrCode::Value, "_sparse_class() needs field names");
    for (const Value& f : *fields)
      type->fields.push_back(value_to_str(f, "_sparse_class() field name"));
    type->num_aux = 1;
    type->tuple_like = false;
    type->attrs = r[2];
    type->ops = r[3];
    std::string name = type->name;
    type->repr = [name](const ValueList& values) { return sparse_repr(name, values); };
    type->str = type->repr;
    bool csr = name == "BCSR";
    type->normalize = [csr](ValueList& values) { follow_leaves(csr, values); };
    // Calling the class runs init (BCOO((data, indices), shape=...)); the
    // class's _new(*fields) makes an instance from its fields.
    Value init = r[5];
    Value cls = make_builtin(
        name, [init](InterpreterImpl& in, CallArgs& args) { return in.call(init, args, Span{}); });
    cls.as<BuiltinObj>()->attrs.emplace_back("_new", namedtuple_class(std::move(type)));
    if (r[4].is_obj(ObjKind::Dict))
      r[4].as<DictObj>()->for_each([&](const Value& k, const Value& v) {
        cls.as<BuiltinObj>()->attrs.emplace_back(value_to_str(k, "_sparse_class() attribute"), v);
      });
    return cls;
  });
}

} // namespace pxl
