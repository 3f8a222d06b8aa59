#include "stdlib/rbg_batching.hpp"

#include "lang/tracer.hpp"
#include "stdlib/autodiff.hpp"
#include "stdlib/custom_derivatives.hpp"
#include "stdlib/np_internal.hpp"
#include "stdlib/np_philox.hpp"

namespace pxl {

namespace {

constexpr const char* kKind = "rng_bit_generator";

// The draw's custom_call rule: its operand is an integer key, so reverse mode
// asks no cotangent of it.
struct RngBitsRule : CustomRule {
  std::vector<Tensor> vjp(OpContext&, std::span<const Tensor>, std::span<const Tensor>,
                          const std::vector<bool>&) const override {
    return std::vector<Tensor>(num_args);
  }
};

Tensor slice0(OpContext& cx, const Tensor& t, int64_t begin, int64_t end) {
  OpAttrs a;
  a.starts.assign(t->aval.shape.size(), 0);
  a.limits = t->aval.shape;
  a.strides.assign(t->aval.shape.size(), 1);
  a.starts[0] = begin;
  a.limits[0] = end;
  return cx.bind(Op::Slice, a, std::span<const Tensor>(&t, 1));
}

} // namespace

bool is_rng_bit_generator_call(const OpAttrs& attrs) {
  return attrs.custom && attrs.custom->kind == kKind;
}

std::vector<BVal> batch_rng_bit_generator(OpContext& cx, const OpAttrs& attrs,
                                          std::span<const BVal> args, const BatchAxis& axis) {
  const Function& f = *attrs.custom->fn;
  if (!args[0].batched) {
    std::vector<Tensor> ts;
    for (const BVal& a : args) ts.push_back(a.t);
    std::vector<BVal> out;
    for (Tensor& t : cx.bind_call(attrs, ts)) out.push_back({std::move(t), false});
    return out;
  }
  // The per-example words: uint32[n].
  const int64_t n = f.values[f.results[1]].aval.shape[0];
  const int64_t B = axis.size;
  const Tensor& keys = args[0].t; // uint32[B, 4]
  Tensor key0 = np::detail::reshape_to(cx, slice0(cx, keys, 0, 1), {4});
  auto [new_key, words] = np::philox_words(cx, key0, B * n);
  Tensor bits = np::detail::reshape_to(cx, words, {B, n});
  Tensor first = np::detail::reshape_to(cx, new_key, {1, 4});
  Tensor new_keys = B == 1 ? first : np::concatenate(cx, {first, slice0(cx, keys, 1, B)}, 0);
  return {{new_keys, true}, {bits, true}};
}

namespace np {

std::pair<Tensor, Tensor> philox_words(OpContext& cx, const Tensor& key, int64_t n) {
  auto* outer = dynamic_cast<TraceContext*>(&cx);
  if (!outer) return philox_words_ops(cx, key, n);
  auto f = std::make_shared<Function>();
  f->name = kKind;
  f->mesh_axes = outer->function().mesh_axes;
  f->mesh_sizes = outer->function().mesh_sizes;
  std::vector<Tensor> operands{key};
  {
    TraceContext tc(*f, cx, kKind);
    LocScope loc(tc, cx.loc);
    Tensor p = tc.add_param(key->aval, vma_of(cx, key), cx.loc, "key");
    auto [nk, words] = philox_words_ops(tc, p, n);
    f->results = {tc.value_of(nk), tc.value_of(words)};
    std::vector<Tensor> consts = tc.captured_tensors();
    operands.insert(operands.end(), consts.begin(), consts.end());
  }
  f->params.insert(f->params.end(), f->consts.begin(), f->consts.end());
  f->consts.clear();
  auto rule = std::make_shared<RngBitsRule>();
  rule->kind = kKind;
  rule->fn = f;
  rule->num_args = 1;
  OpAttrs attrs;
  attrs.custom = rule;
  std::vector<Tensor> outs = cx.bind_call(attrs, operands);
  return {outs[0], outs[1]};
}

} // namespace np

} // namespace pxl
