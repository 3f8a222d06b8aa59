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
  // JAX transposes partial-sum arguments into reduced cotangents, a type pxl
  // does not have: refused rather than summed wrongly.
  for (const SpmdMapping& m : c.ins)
    if (!m.spec.unreduced.empty() || !m.spec.reduced.empty())
      throw Error(ErrCode::Unsupported,
                  "differentiating a shard_map whose in_specs have unreduced or reduced axes (" +
                      m.spec.repr() + ") is not implemented",
                  Span{}, "reshard the argument to a spec without them before the shard_map");
  std::vector<SpmdMapping> ins = c.ins, outs;
  std::vector<Tensor> operands(primals.begin(), primals.end());
  std::vector<size_t> with_ct, wanted;
  for (size_t r = 0; r < cts.size(); ++r)
    if (cts[r]) {
      with_ct.push_back(r);
      ins.push_back(c.outs[r]);
      operands.push_back(cts[r]);
    }
  for (size_t k = 0; k < primals.size(); ++k)
    if (need[k]) {
      wanted.push_back(k);
      outs.push_back(c.ins[k]);
    }
  std::vector<Tensor> out(primals.size());
  if (with_ct.empty() || wanted.empty()) return out;
  auto body = [&](TraceContext& tc, std::span<const Tensor> params) {
    size_t n = f.params.size();
    std::vector<Tensor> env = forward_pass(tc, f, params.subspan(0, n), {});
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
      AxisSet extra = vma_of(tc, g) & ~vma_of(tc, params[k]);
      if (extra) g = psum_over(tc, g, extra);
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
