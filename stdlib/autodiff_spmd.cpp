// Reverse mode through an SPMD call (DESIGN §3): the transpose of
// spmd_call(f) is spmd_call(f's VJP), so the gradient of a shard_map'd
// function is computed on the mesh, shard by shard, like the function itself.
// The VJP recomputes f's forward pass on each participant (rematerialization):
// the primal call keeps no residuals.
#include <algorithm>

#include "lang/tracer.hpp"
#include "runtime/spmd_call.hpp"
#include "stdlib/autodiff.hpp"
#include "stdlib/np.hpp"
#include "stdlib/trace_util.hpp"

namespace pxl {

std::vector<Tensor> transpose_spmd_call(OpContext& cx, const Instr& in,
                                        std::span<const Tensor> primals,
                                        std::span<const Tensor> cts,
                                        const std::vector<bool>& need) {
  const SpmdCallee& c = *in.attrs.callee;
  const Function& f = *c.fn;
  std::vector<SpmdMapping> ins = c.ins, outs;
  std::vector<Tensor> operands(primals.begin(), primals.end());
  std::vector<size_t> with_ct, wanted;
  // Unreduced and reduced axes (JAX 0.10): pxl keeps a cotangent whole (the
  // sum JAX's partial sums stand for) inside the transpose, so a reduced
  // output's cotangent enters replicated (partial sums are summed first) and
  // each rule sees the value it knows; at the boundary the in_specs' types
  // swap as JAX's to_ct_spec swaps them: a reduced argument's cotangent leaves
  // as partial sums (unreduced), an unreduced one's as a reduced value.
  for (size_t r = 0; r < cts.size(); ++r)
    if (cts[r]) {
      with_ct.push_back(r);
      SpmdMapping m = c.outs[r];
      m.spec.reduced.clear();
      ins.push_back(std::move(m));
      operands.push_back(cts[r]);
    }
  for (size_t k = 0; k < primals.size(); ++k)
    if (need[k]) {
      wanted.push_back(k);
      SpmdMapping m = c.ins[k];
      std::swap(m.spec.unreduced, m.spec.reduced);
      // (JAX's cotangent spec names every dimension: P(None, reduced={'x'}))
      if ((!m.spec.unreduced.empty() || !m.spec.reduced.empty()) &&
          m.spec.entries.size() < primals[k]->aval.shape.size())
        m.spec.entries.resize(primals[k]->aval.shape.size());
      outs.push_back(std::move(m));
    }
  auto bits = [&](const std::vector<std::string>& names) {
    AxisSet b = 0;
    for (const std::string& n : names)
      if (int i = f.axis_bit(n); i >= 0) b |= AxisSet{1} << i;
    return b;
  };
  std::vector<Tensor> out(primals.size());
  if (with_ct.empty() || wanted.empty()) return out;
  auto body = [&](TraceContext& tc, std::span<const Tensor> params) {
    size_t n = f.params.size();
    // Partial sums (unreduced arguments) are typed varying over their axes in
    // the recomputed forward pass: a psum of them is then a sum of distinct
    // values, whose transpose hands each participant the cotangent, not a sum
    // over copies. (Reduced arguments stay plain replicated values there: the
    // types were checked when the call was traced, and the rules here keep
    // cotangents whole.)
    if (c.check_vma)
      for (size_t k = 0; k < n && k < c.ins.size(); ++k)
        tc.function().values[static_cast<size_t>(tc.value_of(params[k]))].vma |=
            bits(c.ins[k].spec.unreduced);
    // (The primal call printed; recomputing the forward pass prints nothing.)
    Function quiet = f;
    std::erase_if(quiet.body, [](const Instr& i) { return i.op == Op::DebugPrint; });
    std::vector<Tensor> env = forward_pass(tc, quiet, params.subspan(0, n), {});
    std::vector<Tensor> seeds(f.results.size());
    for (size_t i = 0; i < with_ct.size(); ++i) {
      size_t r = with_ct[i];
      seeds[r] = params[n + i];
      // Unchecked (check_vma=False), an output left replicated over mesh axes
      // may vary over them; JAX then splits its cotangent evenly between the
      // participants that hold it.
      // (Only the call's mesh axes: an enclosing vmap's, which a pmap inside
      // vmap carries after its own, are batch dimensions.)
      int64_t unnamed = 1;
      std::vector<std::string> named = c.outs[r].spec.axes();
      auto on_mesh = [&](size_t a) { return c.layout.mesh.axis_of(f.mesh_axes[a]) >= 0; };
      for (size_t a = 0; a < f.mesh_axes.size(); ++a)
        if (on_mesh(a) && std::find(named.begin(), named.end(), f.mesh_axes[a]) == named.end())
          unnamed *= f.mesh_sizes[a];
      if (!c.check_vma && unnamed > 1) {
        Tensor d = np::full_like(tc, seeds[r], Scalar::of_float(static_cast<double>(unnamed)));
        std::vector<Tensor> xs{seeds[r], d};
        seeds[r] = tc.bind(Op::Div, {}, xs);
        // Each participant's share is its own: typed as varying over those
        // axes, the operands replicated over them get the psum of the shares
        // (JAX sums the cotangent of an unchecked replicated input over them).
        AxisSet own = vma_of(tc, seeds[r]);
        OpAttrs a;
        for (size_t b = 0; b < f.mesh_axes.size(); ++b)
          if (on_mesh(b) && !(own & (AxisSet{1} << b))) {
            a.axis_names.push_back(f.mesh_axes[b]);
            a.group_size *= f.mesh_sizes[b];
          }
        // The identity ppermute is lax.pcast(to='varying') (collectives.cpp).
        for (int64_t i = 0; i < a.group_size; ++i) a.pairs.push_back({i, i});
        if (!a.axis_names.empty())
          seeds[r] = tc.bind(Op::Ppermute, a, std::span<const Tensor>(&seeds[r], 1));
      }
    }
    std::vector<bool> wanted_params(n, false);
    for (size_t k : wanted) wanted_params[k] = true;
    std::vector<Tensor> grads = backward_pass(tc, f, env, seeds, &wanted_params);
    std::vector<Tensor> results;
    for (size_t k : wanted) {
      Tensor g = grads[k];
      if (!g) {
        results.push_back(np::full_like(tc, params[k], Scalar::of_float(0.0)));
        continue;
      }
      // A cotangent that varies where its operand is the same on every
      // participant is summed over those axes: the operand was broadcast to
      // them (a replicated in_spec, pmap's in_axes=None).
      // A reduced argument's cotangent is left as partial sums over its
      // reduced axes: each participant's own where it varies there, else the
      // whole on the first participant along them and zeros on the others.
      AxisSet reduced = bits(c.ins[k].spec.reduced);
      AxisSet extra = vma_of(tc, g) & ~bits(c.ins[k].spec.axes()) & ~reduced;
      // Unchecked, JAX sums an unreduced argument's cotangent over its axes
      // (as it sums an invariant one's), so that the numbers are right.
      if (!c.check_vma) extra |= bits(c.ins[k].spec.unreduced);
      if (extra) g = psum_over(tc, g, extra);
      if (AxisSet first = reduced & ~vma_of(tc, g)) {
        OpAttrs ia;
        for (size_t b = 0; b < f.mesh_axes.size(); ++b)
          if (first & (AxisSet{1} << b)) {
            ia.axis_names.push_back(f.mesh_axes[b]);
            ia.group_size *= f.mesh_sizes[b];
          }
        Tensor rank = tc.bind(Op::AxisIndex, ia, {});
        Tensor lead = np::binary(tc, np::BinOp::Eq, rank, np::scalar(tc, Scalar::of_int(0)));
        lead = np::broadcast_to(tc, lead, g->aval.shape);
        std::vector<Tensor> xs{lead, g, np::full_like(tc, g, Scalar::of_float(0.0))};
        g = tc.bind(Op::Select, {}, xs);
      }
      // JAX 0.10's pmap transpose adds its input cotangents to zeros, so a
      // -0.0 there comes back +0.0 (shard_map's keeps it): the same here.
      if (c.kind == "pmap" && is_inexact(g->aval.dtype))
        g = np::binary(tc, np::BinOp::Add, g, np::scalar(tc, Scalar::of_float(0.0)));
      results.push_back(g);
    }
    return results;
  };
  std::vector<Tensor> grads = bind_derived_spmd_call(cx, c, f.name + "_transpose", std::move(ins),
                                                     std::move(operands), std::move(outs), body);
  for (size_t i = 0; i < wanted.size(); ++i) out[wanted[i]] = grads[i];
  return out;
}

} // namespace pxl
