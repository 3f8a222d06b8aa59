#include "ir/cse.hpp"

#include <cstring>
#include <map>

namespace pxl {

namespace {

// Ops that compute a value from their operands alone (no effect, no
// communication, no nested program), so two of them with equal operands and
// attributes are one value.
bool pure(const Instr& in) {
  if (in.nresults != 1 || has_effect(in)) return false;
  switch (op_family(in.op)) {
  case OpFamily::Collective:
  case OpFamily::Effect:
  case OpFamily::Call:
  case OpFamily::Loop:
    return false;
  default:
    return true;
  }
}

bool same_array(const Array& a, const Array& b) {
  return a.defined() && b.defined() && a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

// Binary ops whose operands commute: x * y and y * x are one value (as to
// LLVM's CSE under XLA's fused loops).
bool commutative(Op op) {
  switch (op) {
  case Op::Add:
  case Op::Mul:
  case Op::Max:
  case Op::Min:
  case Op::And:
  case Op::Or:
  case Op::Xor:
  case Op::Eq:
  case Op::Ne:
    return true;
  default:
    return false;
  }
}

} // namespace

std::shared_ptr<const Function> eliminate_common_subexpressions(std::shared_ptr<const Function> f,
                                                                std::span<const Array> consts) {
  std::vector<int> subst(f->values.size(), -1);
  auto resolve = [&](int v) {
    return subst[static_cast<size_t>(v)] >= 0 ? subst[static_cast<size_t>(v)] : v;
  };
  bool changed = false;
  // Equal constants (XLA's literals compare by value).
  for (size_t i = 0; i < f->consts.size() && i < consts.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (subst[static_cast<size_t>(f->consts[j])] < 0 && same_array(consts[i], consts[j]) &&
          f->values[static_cast<size_t>(f->consts[i])].aval.weak ==
              f->values[static_cast<size_t>(f->consts[j])].aval.weak) {
        subst[static_cast<size_t>(f->consts[i])] = f->consts[j];
        changed = true;
        break;
      }
  auto out = std::make_shared<Function>(*f);
  // By op and operands: the earlier instructions with them.
  std::map<std::pair<Op, std::vector<int>>, std::vector<size_t>> seen;
  for (size_t i = 0; i < out->body.size(); ++i) {
    Instr& in = out->body[i];
    for (int& o : in.operands) o = resolve(o);
    if (!pure(in)) continue;
    std::vector<int> key = in.operands;
    if (key.size() == 2 && commutative(in.op) && key[1] < key[0]) std::swap(key[0], key[1]);
    std::vector<size_t>& same = seen[{in.op, key}];
    bool found = false;
    for (size_t k : same) {
      const Instr& earlier = out->body[k];
      if (earlier.attrs == in.attrs && out->values[static_cast<size_t>(earlier.result)].aval.weak ==
                                           out->values[static_cast<size_t>(in.result)].aval.weak) {
        subst[static_cast<size_t>(in.result)] = earlier.result;
        changed = found = true;
        break;
      }
    }
    if (!found) same.push_back(i);
  }
  if (!changed) return f;
  for (int& r : out->results) r = resolve(r);
  remove_dead_code(*out);
  return out;
}

} // namespace pxl
