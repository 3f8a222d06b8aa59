// einsum: subscripts parsed to integer labels, then operands contracted left to
// right with dot_general (labels shared with later operands or the output stay
// as batch dims), repeated labels within an operand taken as diagonals.
#include <algorithm>
#include <map>

#include "stdlib/np_internal.hpp"

namespace pxl::np {

using namespace detail;

namespace {

using Labels = std::vector<int>;    // letters are their ASCII codes (so sorting is numpy's)
constexpr int kEllipsisBase = 1000; // ellipsis dims are kEllipsisBase + j

std::string label_str(int l) {
  return l >= kEllipsisBase ? "..." + std::to_string(l - kEllipsisBase)
                            : std::string(1, static_cast<char>(l));
}

bool has(const Labels& ls, int l) { return std::find(ls.begin(), ls.end(), l) != ls.end(); }

[[noreturn]] void bad(const std::string& msg) { throw Error(ErrCode::Value, "einsum: " + msg); }

// One term's labels; `ndim` < 0 for the output term (ellipsis = all ellipsis dims).
Labels parse_term(const std::string& term, int ndim, int max_ellipsis, const std::string& what) {
  Labels out;
  bool ellipsis = false;
  int letters = 0;
  for (char c : term)
    if (c != '.') ++letters;
  for (size_t i = 0; i < term.size(); ++i) {
    char c = term[i];
    if (c == '.') {
      if (ellipsis || term.compare(i, 3, "...") != 0) bad("invalid ellipsis in '" + term + "'");
      ellipsis = true;
      i += 2;
      int e = ndim < 0 ? max_ellipsis : ndim - letters;
      if (e < 0) bad(what + " has fewer dimensions than subscripts '" + term + "'");
      for (int j = max_ellipsis - e; j < max_ellipsis; ++j) out.push_back(kEllipsisBase + j);
    } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      out.push_back(c);
    } else {
      bad(std::string("invalid subscript '") + c + "'");
    }
  }
  if (ndim >= 0 && !ellipsis && letters != ndim)
    bad(what + " has " + std::to_string(ndim) + " dimensions but subscripts '" + term + "' name " +
        std::to_string(letters));
  return out;
}

// Sum (or, for bool, logical-or) out the axes of x whose labels fail `keep`.
template <class Keep> Tensor sum_out(OpContext& cx, Tensor x, Labels& ls, Keep keep) {
  std::vector<int64_t> axes;
  Labels rest;
  for (size_t i = 0; i < ls.size(); ++i) {
    if (keep(ls[i]))
      rest.push_back(ls[i]);
    else
      axes.push_back(static_cast<int64_t>(i));
  }
  ls = rest;
  return reduce_axes(cx, av(x).dtype == DType::Bool ? Op::ReduceOr : Op::ReduceSum, x, axes);
}

// Collapses repeated labels of one operand to their diagonal.
Tensor take_diagonals(OpContext& cx, Tensor x, Labels& ls) {
  for (size_t p = 0; p < ls.size(); ++p)
    for (size_t q = p + 1; q < ls.size();) {
      if (ls[q] != ls[p]) {
        ++q;
        continue;
      }
      Shape s = av(x).shape; // a copy: x is rebound below
      if (s[p] != s[q])
        bad("repeated index '" + label_str(ls[p]) + "' has sizes " + std::to_string(s[p]) +
            " and " + std::to_string(s[q]));
      Tensor mask = bind(cx, Op::Eq, {},
                         {iota(cx, DType::Int32, s, static_cast<int64_t>(p)),
                          iota(cx, DType::Int32, s, static_cast<int64_t>(q))});
      Tensor zero = fill(cx, s, Scalar::of_int(0), av(x).dtype, av(x).weak);
      x = bind(cx, Op::Select, {}, {mask, x, zero});
      x = reduce_axes(cx, av(x).dtype == DType::Bool ? Op::ReduceOr : Op::ReduceSum, x,
                      {static_cast<int64_t>(q)});
      ls.erase(ls.begin() + static_cast<std::ptrdiff_t>(q));
    }
  return x;
}

} // namespace

Tensor einsum(OpContext& cx, const std::string& spec0, const std::vector<Tensor>& operands) {
  std::string spec;
  for (char c : spec0)
    if (c != ' ') spec += c;
  if (operands.empty()) bad("at least one operand is required");
  size_t arrow = spec.find("->");
  std::string lhs = spec.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != operands.size())
    bad("subscripts '" + spec0 + "' name " + std::to_string(terms.size()) + " operands but " +
        std::to_string(operands.size()) + " were given");

  int max_e = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    int letters = 0;
    for (char c : terms[i]) letters += c != '.';
    if (terms[i].find("...") != std::string::npos)
      max_e = std::max(max_e, av(operands[i]).ndim() - letters);
  }
  std::vector<Labels> in;
  for (size_t i = 0; i < terms.size(); ++i)
    in.push_back(
        parse_term(terms[i], av(operands[i]).ndim(), max_e, "operand " + std::to_string(i)));

  // Each label's size; size-1 dims broadcast against the others.
  std::map<int, int64_t> size;
  std::map<int, size_t> first_op;
  for (size_t i = 0; i < in.size(); ++i)
    for (size_t k = 0; k < in[i].size(); ++k) {
      int l = in[i][k];
      int64_t d = av(operands[i]).shape[k];
      auto it = size.find(l);
      if (it == size.end() || it->second == 1) {
        if (it == size.end()) first_op[l] = i;
        size[l] = d;
      } else if (d != 1 && d != it->second) {
        throw Error(ErrCode::Contraction,
                    "einsum: index '" + label_str(l) + "' has size " + std::to_string(it->second) +
                        " in operand " + std::to_string(first_op[l]) + " but " + std::to_string(d) +
                        " in operand " + std::to_string(i));
      }
    }

  Labels out;
  if (arrow != std::string::npos) {
    out = parse_term(spec.substr(arrow + 2), -1, max_e, "output");
    for (size_t i = 0; i < out.size(); ++i) {
      if (!size.count(out[i]))
        bad("output index '" + label_str(out[i]) + "' appears in no operand");
      if (std::count(out.begin(), out.end(), out[i]) > 1)
        bad("output index '" + label_str(out[i]) + "' is repeated");
    }
  } else {
    for (int j = 0; j < max_e; ++j) out.push_back(kEllipsisBase + j);
    std::map<int, int> uses;
    for (const Labels& ls : in)
      for (int l : ls) ++uses[l];
    for (auto [l, n] : uses)
      if (n == 1 && l < kEllipsisBase) out.push_back(l);
  }

  PromotedType p = result_type(operands);
  std::vector<Tensor> ops;
  for (size_t i = 0; i < operands.size(); ++i) {
    Tensor x = take_diagonals(cx, convert(cx, operands[i], p.dtype, p.weak), in[i]);
    Shape full;
    for (int l : in[i]) full.push_back(size[l]);
    ops.push_back(broadcast(cx, x, full, "einsum"));
  }

  Tensor cur = ops[0];
  Labels cl = in[0];
  for (size_t i = 1; i < ops.size(); ++i) {
    Labels keep = out; // labels still needed after this step
    for (size_t j = i + 1; j < ops.size(); ++j) keep.insert(keep.end(), in[j].begin(), in[j].end());
    Labels rl = in[i];
    cur = sum_out(cx, cur, cl, [&](int l) { return has(keep, l) || has(rl, l); });
    Tensor rhs = sum_out(cx, ops[i], rl, [&](int l) { return has(keep, l) || has(cl, l); });
    DotDims dims;
    Labels batch, lfree, rfree;
    for (size_t k = 0; k < cl.size(); ++k) {
      if (!has(rl, cl[k])) {
        lfree.push_back(cl[k]);
        continue;
      }
      int64_t rk = std::find(rl.begin(), rl.end(), cl[k]) - rl.begin();
      if (has(keep, cl[k])) {
        batch.push_back(cl[k]);
        dims.lhs_batch.push_back(static_cast<int64_t>(k));
        dims.rhs_batch.push_back(rk);
      } else {
        dims.lhs_contract.push_back(static_cast<int64_t>(k));
        dims.rhs_contract.push_back(rk);
      }
    }
    for (int l : rl)
      if (!has(cl, l)) rfree.push_back(l);
    OpAttrs a;
    a.dot = dims;
    cur = bind(cx, Op::DotGeneral, a, {cur, rhs});
    cl = batch;
    cl.insert(cl.end(), lfree.begin(), lfree.end());
    cl.insert(cl.end(), rfree.begin(), rfree.end());
  }
  cur = sum_out(cx, cur, cl, [&](int l) { return has(out, l); });
  std::vector<int64_t> perm;
  for (int l : out) perm.push_back(std::find(cl.begin(), cl.end(), l) - cl.begin());
  return transpose_to(cx, cur, perm);
}

} // namespace pxl::np
