// Reverse mode through a while loop whose trip count N is known while
// tracing (a long lax.scan, ir/while_loop.hpp's trip_count). As JAX's scan
// transpose: a first loop runs the body again and stacks the N carries it
// starts from; a second runs backwards over them, each step the body's VJP
// at the stacked carry, passing the carry's cotangent on and summing the body
// constants' cotangents.
#include "ir/while_loop.hpp"
#include "lang/tracer.hpp"
#include "stdlib/autodiff.hpp"
#include "stdlib/np.hpp"
#include "stdlib/while_loop.hpp"

namespace pxl {

namespace {

Tensor int_scalar(OpContext& cx, int64_t v) {
  return cx.constant(Array::scalar(Scalar::of_int(v), DType::Int32));
}

Tensor bin(OpContext& cx, Op op, const Tensor& a, const Tensor& b) {
  return cx.bind(op, {}, std::vector<Tensor>{a, b});
}

// Whether operand k of `in` is one its transpose never reads (nor the
// transposes of what it feeds, when those are of this kind too).
bool value_free(const Instr& in, size_t k) {
  switch (in.op) {
  case Op::Add:
  case Op::Sub:
  case Op::Neg:
  case Op::Reshape:
  case Op::BroadcastInDim:
  case Op::Transpose:
  case Op::Slice:
    return true;
  case Op::Take:
    return k == 0;
  case Op::Scatter: // the array set or added into, and the updates
    return k != 1 && (in.attrs.mode == ScatterMode::Set || in.attrs.mode == ScatterMode::Add);
  default:
    return false;
  }
}

// Whether the body's VJP reads the value of carry parameter `param`, or of a
// value computed from it: not when they only flow through transposes that
// read no primal (adds, the array a scatter sets into: a scan's stacked
// outputs) and out. Such a carry is not saved each step (saving a scan's
// whole output buffer every step would take N^2 memory).
bool value_needed(const Function& body, int param) {
  std::vector<bool> from(body.values.size(), false);
  from[param] = true;
  for (const Instr& in : body.body) {
    bool touched = false;
    for (size_t k = 0; k < in.operands.size(); ++k) {
      if (!from[in.operands[k]]) continue;
      if (!value_free(in, k)) return true;
      touched = true;
    }
    if (touched)
      for (int r = 0; r < in.nresults; ++r) from[in.result + r] = true;
  }
  return false;
}

} // namespace

std::vector<Tensor> transpose_fixed_loop(OpContext& cx, const Instr& in,
                                         std::span<const Tensor> primals,
                                         std::span<const Tensor> cts,
                                         const std::vector<bool>& need) {
  const WhileLoop& w = *in.attrs.loop;
  const int64_t N = w.trip_count;
  const size_t ncc = static_cast<size_t>(w.cond_nconsts), nbc = static_cast<size_t>(w.body_nconsts),
               nc = w.ncarry();
  std::vector<Tensor> bconsts(primals.begin() + static_cast<long>(ncc),
                              primals.begin() + static_cast<long>(ncc + nbc));
  std::vector<Tensor> carry0(primals.begin() + static_cast<long>(ncc + nbc), primals.end());
  OpAttrs axis0;                     // take / scatter along the stacking axis
  std::vector<int> stack_of(nc, -1); // carry i -> its stack, when saved
  std::vector<size_t> saved_carry;
  for (size_t i = 0; i < nc; ++i)
    if (value_needed(*w.body, w.body->params[nbc + i])) {
      stack_of[i] = static_cast<int>(saved_carry.size());
      saved_carry.push_back(i);
    }
  // 1. The carries each step starts from, stacked: (N, carry...).
  std::vector<AVal> save_types{AVal{DType::Int32, {}, false}};
  std::vector<Tensor> save_init{int_scalar(cx, 0)};
  for (const Tensor& c : carry0) {
    save_types.push_back(c->aval);
    save_init.push_back(c);
  }
  for (size_t i : saved_carry) {
    AVal s = carry0[i]->aval;
    s.shape.insert(s.shape.begin(), N);
    s.weak = false;
    save_types.push_back(s);
    save_init.push_back(np::zeros(cx, s.shape, s.dtype));
  }
  std::vector<Tensor> saved = bind_loop(
      cx, "save_cond", w.body->name + "_save", save_types, save_init,
      [&](TraceContext& tc, std::span<const Tensor> ps) {
        return bin(tc, Op::Lt, ps[0], int_scalar(tc, N));
      },
      [&](TraceContext& tc, std::span<const Tensor> ps) {
        std::vector<Tensor> args = bconsts;
        args.insert(args.end(), ps.begin() + 1, ps.begin() + 1 + static_cast<long>(nc));
        std::vector<Tensor> next = inline_function(tc, *w.body, args, {});
        std::vector<Tensor> out{bin(tc, Op::Add, ps[0], int_scalar(tc, 1))};
        out.insert(out.end(), next.begin(), next.end());
        for (size_t s = 0; s < saved_carry.size(); ++s) {
          Tensor c = ps[1 + saved_carry[s]];
          if (c->aval.weak) c = np::astype(tc, c, c->aval.dtype);
          out.push_back(tc.bind(Op::Scatter, axis0, std::vector<Tensor>{ps[1 + nc + s], ps[0], c}));
        }
        return out;
      },
      w.mode, w.cache, N);
  std::vector<Tensor> stacks(saved.begin() + 1 + static_cast<long>(nc), saved.end());
  // 2. Backwards over them: (j, carry cotangents..., body constant cotangents...).
  std::vector<int> ct_pos(nc, -1), const_pos(nbc, -1);
  std::vector<AVal> back_types{AVal{DType::Int32, {}, false}};
  std::vector<Tensor> back_init{int_scalar(cx, 0)};
  for (size_t i = 0; i < nc; ++i) {
    const AVal& a = carry0[i]->aval;
    if (!is_inexact(a.dtype)) continue;
    ct_pos[i] = static_cast<int>(back_types.size());
    Tensor ct = cts[i] ? cts[i] : np::zeros(cx, a.shape, a.dtype);
    back_types.push_back(ct->aval);
    back_init.push_back(ct);
  }
  for (size_t k = 0; k < nbc; ++k) {
    const AVal& a = bconsts[k]->aval;
    if (!need[ncc + k] || !is_inexact(a.dtype)) continue;
    const_pos[k] = static_cast<int>(back_types.size());
    Tensor z = np::zeros(cx, a.shape, a.dtype);
    back_types.push_back(z->aval);
    back_init.push_back(z);
  }
  std::vector<Tensor> back = bind_loop(
      cx, "transpose_cond", w.body->name + "_transpose", back_types, back_init,
      [&](TraceContext& tc, std::span<const Tensor> ps) {
        return bin(tc, Op::Lt, ps[0], int_scalar(tc, N));
      },
      [&](TraceContext& tc, std::span<const Tensor> ps) {
        Tensor step = bin(tc, Op::Sub, int_scalar(tc, N - 1), ps[0]);
        std::vector<Tensor> args = bconsts;
        for (size_t i = 0; i < nc; ++i) {
          const AVal& a = carry0[i]->aval;
          if (stack_of[i] < 0) { // its value is not read: any value of its type does
            args.push_back(tc.constant(Array(a.dtype, a.shape, a.weak)));
            continue;
          }
          Tensor c = tc.bind(Op::Take, axis0,
                             std::vector<Tensor>{stacks[static_cast<size_t>(stack_of[i])], step});
          if (c->aval.weak != carry0[i]->aval.weak)
            c = tc.bind(
                Op::ConvertElementType,
                [&] {
                  OpAttrs a;
                  a.dtype = c->aval.dtype;
                  a.weak = carry0[i]->aval.weak;
                  return a;
                }(),
                std::vector<Tensor>{c});
          args.push_back(c);
        }
        std::vector<Tensor> env = forward_pass(tc, *w.body, args, {});
        std::vector<Tensor> result_cts(nc);
        for (size_t i = 0; i < nc; ++i)
          if (ct_pos[i] >= 0) result_cts[i] = ps[static_cast<size_t>(ct_pos[i])];
        std::vector<bool> wanted(nbc + nc, false);
        for (size_t k = 0; k < nbc; ++k) wanted[k] = const_pos[k] >= 0;
        for (size_t i = 0; i < nc; ++i) wanted[nbc + i] = ct_pos[i] >= 0;
        std::vector<Tensor> g = backward_pass(tc, *w.body, env, result_cts, &wanted);
        std::vector<Tensor> out{bin(tc, Op::Add, ps[0], int_scalar(tc, 1))};
        for (size_t i = 0; i < nc; ++i) {
          if (ct_pos[i] < 0) continue;
          const AVal& a = back_types[static_cast<size_t>(ct_pos[i])];
          Tensor c = g[nbc + i] ? g[nbc + i] : np::zeros(tc, a.shape, a.dtype);
          if (c->aval.weak != a.weak || c->aval.dtype != a.dtype) c = np::astype(tc, c, a.dtype);
          out.push_back(c);
        }
        for (size_t k = 0; k < nbc; ++k) {
          if (const_pos[k] < 0) continue;
          Tensor acc = ps[static_cast<size_t>(const_pos[k])];
          out.push_back(g[k] ? bin(tc, Op::Add, acc, g[k]) : acc);
        }
        return out;
      },
      w.mode, w.cache, N);
  std::vector<Tensor> out(primals.size());
  for (size_t i = 0; i < nc; ++i)
    if (ct_pos[i] >= 0 && need[ncc + nbc + i])
      out[ncc + nbc + i] = back[static_cast<size_t>(ct_pos[i])];
  for (size_t k = 0; k < nbc; ++k)
    if (const_pos[k] >= 0) out[ncc + k] = back[static_cast<size_t>(const_pos[k])];
  return out;
}

} // namespace pxl
