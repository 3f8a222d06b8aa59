#include "ir/custom_call.hpp"

#include "ir/vma.hpp"
#include "ir/while_loop.hpp"
#include "lang/diag.hpp"

namespace pxl {

std::vector<AVal> custom_call_avals(const CustomCallee& c, std::span<const AVal> inputs) {
  const Function& f = *c.fn;
  if (inputs.size() != f.params.size())
    throw Error(ErrCode::Arguments, c.kind + " call: " + std::to_string(f.params.size()) +
                                        " operands expected, got " + std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const AVal& want = f.values[f.params[i]].aval;
    if (inputs[i].shape != want.shape || inputs[i].dtype != want.dtype)
      throw Error(ErrCode::Shape, c.kind + " call: operand " + std::to_string(i) + " has type " +
                                      type_str(inputs[i]) + " but the function was traced for " +
                                      type_str(want));
  }
  std::vector<AVal> out;
  for (int r : f.results) out.push_back(f.values[r].aval);
  return out;
}

std::vector<AxisSet> custom_call_vma(const CustomCallee& c, std::span<const AxisSet> operands) {
  const Function& f = *c.fn;
  std::vector<AxisSet> vma(f.values.size(), 0);
  for (size_t i = 0; i < f.params.size() && i < operands.size(); ++i)
    vma[f.params[i]] = operands[i];
  for (const Instr& in : f.body) {
    std::vector<AxisSet> ops;
    for (int o : in.operands) ops.push_back(vma[o]);
    if (in.op == Op::CustomCall) {
      std::vector<AxisSet> rs = custom_call_vma(*in.attrs.custom, ops);
      for (int r = 0; r < in.nresults; ++r) vma[in.result + r] = rs[r];
      continue;
    }
    if (in.op == Op::While) { // as the tracer types a loop's carry
      const Function& body = *in.attrs.loop->body;
      size_t first = ops.size() - static_cast<size_t>(in.nresults);
      for (int r = 0; r < in.nresults; ++r)
        vma[in.result + r] = ops[first + r] | body.values[body.results[r]].vma;
      continue;
    }
    AxisSet named = 0;
    for (const std::string& a : in.attrs.axis_names)
      if (int bit = f.axis_bit(a); bit >= 0) named |= AxisSet{1} << bit;
    AxisSet v = infer_vma(in.op, ops, named, in.attrs.index_groups.size() > 1);
    for (int r = 0; r < in.nresults; ++r) vma[in.result + r] = v;
  }
  std::vector<AxisSet> out;
  for (int r : f.results) out.push_back(vma[r]);
  return out;
}

std::string custom_callee_str(const CustomCallee& c) {
  std::string name;
  for (char ch : c.fn->name)
    if (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_') name += ch;
  return c.kind + " @" + (name.empty() ? "f" : name);
}

std::vector<Tensor> bind_custom_primal(OpContext& cx, const CustomCallee& c,
                                       std::span<const Tensor> operands) {
  const Function& f = *c.fn;
  PXL_ASSERT(operands.size() == f.params.size(), "custom_call: wrong number of operands");
  std::vector<Tensor> env(f.values.size());
  for (size_t i = 0; i < operands.size(); ++i) env[f.params[i]] = operands[i];
  LocScope keep(cx, Span{});
  for (const Instr& in : f.body) {
    std::vector<Tensor> args;
    for (int o : in.operands) args.push_back(env[o]);
    cx.loc = f.values[in.result].loc;
    if (is_multi_result(in.op)) {
      std::vector<Tensor> outs = cx.bind_call(in.attrs, args);
      for (int r = 0; r < in.nresults; ++r) env[in.result + r] = std::move(outs[r]);
    } else {
      env[in.result] = cx.bind(in.op, in.attrs, args);
    }
  }
  std::vector<Tensor> out;
  for (int r : f.results) out.push_back(env[r]);
  return out;
}

bool has_custom_calls(const Function& f) {
  for (const Instr& in : f.body)
    if (in.op == Op::CustomCall) return true;
  return false;
}

namespace {

// Appends f's instructions to g; `map` takes f's value ids to g's (set for
// f's params and consts by the caller, filled in for the rest).
void copy_body(Function& g, const Function& f, std::vector<int>& map) {
  for (const Instr& in : f.body) {
    if (in.op == Op::CustomCall) {
      const Function& sub = *in.attrs.custom->fn;
      std::vector<int> submap(sub.values.size(), -1);
      for (size_t i = 0; i < sub.params.size(); ++i) submap[sub.params[i]] = map[in.operands[i]];
      copy_body(g, sub, submap);
      for (int r = 0; r < in.nresults; ++r) map[in.result + r] = submap[sub.results[r]];
      continue;
    }
    Instr out = in;
    for (int& o : out.operands) o = map[o];
    if (in.op == Op::DebugPrint) {
      out.attrs.axis = static_cast<int64_t>(g.debug_formats.size());
      g.debug_formats.push_back(f.debug_formats[in.attrs.axis]);
    }
    for (int r = 0; r < in.nresults; ++r) {
      IRValue v = f.values[in.result + r];
      v.producer = static_cast<int>(g.body.size());
      int id = g.add_value(std::move(v));
      map[in.result + r] = id;
      if (r == 0) out.result = id;
    }
    g.body.push_back(std::move(out));
  }
}

} // namespace

std::shared_ptr<const Function> lower_custom_calls(std::shared_ptr<const Function> f) {
  if (!f || !has_custom_calls(*f)) return f;
  auto g = std::make_shared<Function>();
  g->name = f->name;
  g->mesh_axes = f->mesh_axes;
  g->mesh_sizes = f->mesh_sizes;
  std::vector<int> map(f->values.size(), -1);
  auto input = [&](int id) {
    IRValue v = f->values[id];
    v.producer = -1;
    return map[id] = g->add_value(std::move(v));
  };
  for (int p : f->params) g->params.push_back(input(p));
  for (int c : f->consts) g->consts.push_back(input(c));
  copy_body(*g, *f, map);
  for (int r : f->results) g->results.push_back(map[r]);
  return g;
}

} // namespace pxl
