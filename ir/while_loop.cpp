// The while instruction's IR rules: its shape rule and its attributes as text.
#include "ir/while_loop.hpp"

#include "lang/diag.hpp"

namespace pxl {

namespace {

[[noreturn]] void fail(const std::string& msg) { throw Error(ErrCode::Shape, "while: " + msg); }

std::vector<AVal> param_types(const Function& f) {
  std::vector<AVal> out;
  for (int p : f.params) out.push_back(f.values[p].aval);
  return out;
}

bool same_type(const AVal& a, const AVal& b) { return a.shape == b.shape && a.dtype == b.dtype; }

} // namespace

std::vector<AVal> infer_while(const OpAttrs& attrs, std::span<const AVal> in) {
  PXL_ASSERT(attrs.loop && attrs.loop->cond && attrs.loop->body, "while without its functions");
  const WhileLoop& w = *attrs.loop;
  const Function& cond = *w.cond;
  const Function& body = *w.body;
  size_t nc = w.ncarry(), ncc = static_cast<size_t>(w.cond_nconsts),
         nbc = static_cast<size_t>(w.body_nconsts);
  if (!cond.consts.empty() || !body.consts.empty())
    fail("its cond and body take their constants as parameters");
  if (in.size() != ncc + nbc + nc)
    fail("takes " + std::to_string(ncc + nbc + nc) + " operands (" + std::to_string(ncc) +
         " cond constants, " + std::to_string(nbc) + " body constants, " + std::to_string(nc) +
         " carry values), got " + std::to_string(in.size()));
  if (cond.params.size() != ncc + nc || body.params.size() != nbc + nc)
    fail("cond and body must take their constants and then the carry");
  std::span<const AVal> carry = in.subspan(ncc + nbc);
  std::vector<AVal> cp = param_types(cond), bp = param_types(body);
  for (size_t i = 0; i < ncc; ++i)
    if (!same_type(cp[i], in[i]))
      fail("cond constant " + std::to_string(i) + " is " + type_str(in[i]) + " but cond takes " +
           type_str(cp[i]));
  for (size_t i = 0; i < nbc; ++i)
    if (!same_type(bp[i], in[ncc + i]))
      fail("body constant " + std::to_string(i) + " is " + type_str(in[ncc + i]) +
           " but body takes " + type_str(bp[i]));
  for (size_t i = 0; i < nc; ++i) {
    const AVal& br = body.values[body.results[i]].aval;
    if (!same_type(carry[i], cp[ncc + i]) || !same_type(carry[i], bp[nbc + i]) ||
        !same_type(carry[i], br))
      fail("carry " + std::to_string(i) + " is " + type_str(carry[i]) + " but cond takes " +
           type_str(cp[ncc + i]) + ", body takes " + type_str(bp[nbc + i]) + " and returns " +
           type_str(br));
  }
  if (cond.results.size() != 1 || cond.values[cond.results[0]].aval.dtype != DType::Bool ||
      !cond.values[cond.results[0]].aval.shape.empty())
    fail("cond must return one bool scalar");
  std::vector<AVal> out(carry.begin(), carry.end());
  for (size_t i = 0; i < nc; ++i)
    out[i].weak = body.values[body.results[i]].aval.weak && carry[i].weak;
  return out;
}

std::string while_attrs_str(const WhileLoop& w) {
  return "cond_nconsts=" + std::to_string(w.cond_nconsts) +
         " body_nconsts=" + std::to_string(w.body_nconsts);
}

bool has_collectives(const Function& f) {
  for (const Instr& in : f.body) {
    if (is_collective(in.op)) return true;
    if (in.op == Op::While &&
        (has_collectives(*in.attrs.loop->cond) || has_collectives(*in.attrs.loop->body)))
      return true;
  }
  return false;
}

} // namespace pxl
