#include "lang/tracer.hpp"

#include "ir/vma.hpp"
#include "lang/diag.hpp"

namespace pxl {

TraceContext::TraceContext(Function& fn, OpContext& outer, std::string what)
    : fn_(fn), outer_(outer), what_(std::move(what)) {}

Tensor TraceContext::make(int id) {
  auto t = std::make_shared<TensorImpl>();
  t->aval = fn_.values[id].aval;
  t->trace = this;
  t->trace_id = id;
  return t;
}

Tensor TraceContext::add_param(const AVal& aval, AxisSet vma, const Span& at, std::string origin) {
  IRValue v;
  v.aval = aval;
  v.vma = vma;
  v.loc = at;
  v.origin = std::move(origin);
  int id = fn_.add_value(std::move(v));
  fn_.params.push_back(id);
  return make(id);
}

int TraceContext::value_of(const Tensor& t) {
  if (owns(t)) return static_cast<int>(t->trace_id);
  if (t->trace)
    throw Error(ErrCode::Unsupported,
                "a value traced by an enclosing transformation is used inside " + what_ +
                    "; nesting pmap/shard_map is not supported yet",
                loc);
  for (auto& [held, id] : captured_ids_)
    if (held == t) return id;
  // An eager array (a global or closure variable): a replicated constant input.
  Array a = outer_.concrete(t);
  IRValue v;
  v.aval = a.aval();
  v.loc = loc;
  v.origin = "a constant captured from the host";
  int id = fn_.add_value(std::move(v));
  fn_.consts.push_back(id);
  captured_.push_back(std::move(a));
  captured_ids_.push_back({t, id});
  return id;
}

Tensor TraceContext::bind(Op op, const OpAttrs& attrs, std::span<const Tensor> inputs) {
  std::vector<int> ids;
  std::vector<AVal> avals;
  std::vector<AxisSet> vmas;
  for (const Tensor& t : inputs) {
    int id = value_of(t);
    ids.push_back(id);
    avals.push_back(fn_.values[id].aval);
    vmas.push_back(fn_.values[id].vma);
  }
  AVal out = infer(op, attrs, avals); // throws a span-less Error; the caller adds the span
  AxisSet named = 0;
  for (const auto& name : attrs.axis_names) {
    int bit = fn_.axis_bit(name);
    PXL_ASSERT(bit >= 0, "collective over an axis the function does not know");
    named |= AxisSet{1} << bit;
  }
  IRValue v;
  v.aval = out;
  v.vma = infer_vma(op, vmas, named);
  v.loc = loc;
  v.producer = static_cast<int>(fn_.body.size());
  int id = fn_.add_value(std::move(v));
  fn_.body.push_back(Instr{op, attrs, std::move(ids), id});
  return make(id);
}

const Array& TraceContext::concrete(const Tensor& t) {
  if (!t->trace) return outer_.concrete(t);
  throw Error(ErrCode::ConcreteValue,
              "this array is traced inside " + what_ + " (its type is " + type_str(t->aval) +
                  "): its value is not known while the function is being traced",
              Span{},
              "use jnp.where instead of if/while on array values, and do host-side work "
              "(float(), .tolist(), printing) outside the mapped function");
}

Tensor TraceContext::constant(Array a) { return make(value_of(outer_.constant(std::move(a)))); }

} // namespace pxl
