// einsum as JAX's: the subscripts are parsed as opt_einsum parses them (an
// ellipsis becomes unused letters, the same errors), the operands are
// contracted pairwise along opt_einsum's path (JAX's default optimize='auto'
// is the optimal path for up to four operands), each pair with one
// dot_general, and repeated labels within an operand are taken as diagonals.
#include "stdlib/np_einsum.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "stdlib/np_internal.hpp"

namespace pxl::np {

using namespace detail;

namespace {

[[noreturn]] void bad(const std::string& msg) { throw Error(ErrCode::Value, msg); }

// opt_einsum's get_symbol: the letters first.
char symbol(size_t i) {
  static const char* kSymbols = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  if (i >= 52) bad("einsum: more than 52 distinct subscripts are not supported");
  return kSymbols[i];
}

size_t count(const std::string& s, const std::string& sub) {
  size_t n = 0;
  for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++n;
  return n;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  for (size_t start = 0;;) {
    size_t p = s.find(sep, start);
    out.push_back(s.substr(start, p - start));
    if (p == std::string::npos) return out;
    start = p + 1;
  }
}

// Labels appearing exactly once, sorted (opt_einsum's find_output_str).
std::string find_output_str(const std::string& subscripts) {
  std::string tmp;
  for (char c : subscripts)
    if (c != ',') tmp += c;
  std::string out;
  for (char c : std::set<char>(tmp.begin(), tmp.end()))
    if (std::count(tmp.begin(), tmp.end(), c) == 1) out += c;
  return out;
}

struct Parsed {
  std::vector<std::string> in; // one label per dimension of each operand
  std::string out;
  std::map<char, int64_t> size;
};

// opt_einsum's parse_einsum_input and contract_path's checks, with their messages.
Parsed parse(const std::string& spec0, const std::vector<Shape>& shapes) {
  std::string subscripts;
  for (char c : spec0)
    if (c != ' ') subscripts += c;
  if (subscripts.find_first_of("->") != std::string::npos &&
      (count(subscripts, "-") > 1 || count(subscripts, ">") > 1 || count(subscripts, "->") != 1))
    bad("Subscripts can only contain one '->'.");

  if (subscripts.find('.') != std::string::npos) {
    std::string used;
    for (char c : subscripts)
      if (c != '.' && c != ',' && c != '-' && c != '>') used += c;
    size_t longest_ndim = 0;
    for (const Shape& s : shapes) longest_ndim = std::max(longest_ndim, s.size());
    std::string ellipse_inds;
    for (size_t i = 0; ellipse_inds.size() < longest_ndim; ++i)
      if (used.find(symbol(i)) == std::string::npos) ellipse_inds += symbol(i);
    size_t arrow = subscripts.find("->");
    std::vector<std::string> terms = split(subscripts.substr(0, arrow), ',');
    int64_t longest = 0;
    for (size_t num = 0; num < terms.size(); ++num) {
      std::string& sub = terms[num];
      if (sub.find('.') == std::string::npos) continue;
      if (count(sub, ".") != 3 || count(sub, "...") != 1) bad("Invalid Ellipses.");
      // A missing operand is caught below, by the operand count.
      int64_t nd = num < shapes.size() ? static_cast<int64_t>(shapes[num].size()) : 0;
      int64_t ellipse_count =
          nd == 0 ? 0 : std::max<int64_t>(nd, 1) - (static_cast<int64_t>(sub.size()) - 3);
      longest = std::max(longest, ellipse_count);
      if (ellipse_count < 0) bad("Ellipses lengths do not match.");
      size_t p = sub.find("...");
      sub.replace(p, 3,
                  ellipse_count == 0 ? std::string()
                                     : ellipse_inds.substr(ellipse_inds.size() - ellipse_count));
    }
    std::string joined;
    for (size_t i = 0; i < terms.size(); ++i) joined += (i ? "," : "") + terms[i];
    std::string out_ellipse =
        longest == 0 ? "" : ellipse_inds.substr(ellipse_inds.size() - longest);
    if (arrow != std::string::npos) {
      std::string out = subscripts.substr(arrow + 2);
      if (size_t p = out.find("..."); p != std::string::npos) out.replace(p, 3, out_ellipse);
      subscripts = joined + "->" + out;
    } else {
      std::string normal;
      for (char c : find_output_str(joined))
        if (out_ellipse.find(c) == std::string::npos) normal += c;
      subscripts = joined + "->" + out_ellipse + normal;
    }
  }

  Parsed p;
  std::string inputs;
  if (size_t arrow = subscripts.find("->"); arrow != std::string::npos) {
    inputs = subscripts.substr(0, arrow);
    p.out = subscripts.substr(arrow + 2);
  } else {
    inputs = subscripts;
    p.out = find_output_str(subscripts);
  }
  for (char c : p.out) {
    if (std::count(p.out.begin(), p.out.end(), c) != 1)
      bad(std::string("Output character '") + c + "' appeared more than once in the output.");
    if (inputs.find(c) == std::string::npos)
      bad(std::string("Output character '") + c + "' did not appear in the input");
  }
  p.in = split(inputs, ',');
  if (p.in.size() != shapes.size())
    bad("Number of einsum subscripts, " + std::to_string(p.in.size()) +
        ", must be equal to the number of operands, " + std::to_string(shapes.size()) + ".");

  for (size_t t = 0; t < p.in.size(); ++t) {
    const std::string& term = p.in[t];
    if (term.size() != shapes[t].size())
      bad("Einstein sum subscript '" + term +
          "' does not contain the correct number of indices for operand " + std::to_string(t) +
          ".");
    for (size_t k = 0; k < term.size(); ++k) {
      int64_t dim = shapes[t][k];
      auto it = p.size.find(term[k]);
      if (it == p.size.end()) {
        p.size[term[k]] = dim;
      } else if (it->second == 1) { // broadcasting: the largest size wins
        it->second = dim;
      } else if (dim != 1 && dim != it->second) {
        bad(std::string("Size of label '") + term[k] + "' for operand " + std::to_string(t) + " (" +
            std::to_string(it->second) + ") does not match previous terms (" + std::to_string(dim) +
            ").");
      }
    }
  }
  return p;
}

using Set = std::set<char>;

Set set_of(const std::string& s) { return Set(s.begin(), s.end()); }

int64_t size_of(const Set& idx, const std::map<char, int64_t>& size) {
  int64_t n = 1;
  for (char c : idx) n *= size.at(c);
  return n;
}

// opt_einsum's flop_count.
int64_t flop_count(const Set& idx, bool inner, size_t num_terms,
                   const std::map<char, int64_t>& size) {
  int64_t factor = std::max<int64_t>(1, static_cast<int64_t>(num_terms) - 1) + (inner ? 1 : 0);
  return size_of(idx, size) * factor;
}

// opt_einsum's `optimal` path (no memory limit): a depth-first search over
// pairwise contractions, sieved by the best flop count so far, visiting pairs
// in the order itertools.combinations visits them.
EinsumPath optimal_path(const Parsed& p) {
  Set output = set_of(p.out);
  std::vector<Set> inputs;
  for (const std::string& s : p.in) inputs.push_back(set_of(s));
  double best = std::numeric_limits<double>::infinity();
  std::vector<std::vector<int64_t>> best_ssa;
  {
    std::vector<int64_t> all;
    for (size_t i = 0; i < inputs.size(); ++i) all.push_back(static_cast<int64_t>(i));
    best_ssa.push_back(all);
  }
  std::function<void(std::vector<std::vector<int64_t>>&, const std::vector<int64_t>&,
                     std::vector<Set>&, double)>
      iterate = [&](std::vector<std::vector<int64_t>>& path, const std::vector<int64_t>& remaining,
                    std::vector<Set>& ins, double flops) {
        if (remaining.size() == 1) {
          best = flops;
          best_ssa = path;
          return;
        }
        for (size_t a = 0; a < remaining.size(); ++a)
          for (size_t b = a + 1; b < remaining.size(); ++b) {
            int64_t i = remaining[a], j = remaining[b];
            const Set &k1 = ins[i], &k2 = ins[j];
            Set either = k1, keep = output;
            either.insert(k2.begin(), k2.end());
            for (int64_t r : remaining)
              if (r != i && r != j) keep.insert(ins[r].begin(), ins[r].end());
            Set k12;
            bool inner = false;
            for (char c : either) {
              if (keep.count(c))
                k12.insert(c);
              else if (k1.count(c) && k2.count(c))
                inner = true;
            }
            double new_flops = flops + static_cast<double>(flop_count(either, inner, 2, p.size));
            if (new_flops >= best) continue;
            std::vector<int64_t> rest;
            for (int64_t r : remaining)
              if (r != i && r != j) rest.push_back(r);
            rest.push_back(static_cast<int64_t>(ins.size())); // ascending, as a small int set
            path.push_back({i, j});
            ins.push_back(k12);
            iterate(path, rest, ins, new_flops);
            ins.pop_back();
            path.pop_back();
          }
      };
  std::vector<std::vector<int64_t>> path;
  std::vector<int64_t> remaining;
  for (size_t i = 0; i < inputs.size(); ++i) remaining.push_back(static_cast<int64_t>(i));
  iterate(path, remaining, inputs, 0);
  // ssa_to_linear: ids of the operands still present, results appended last.
  EinsumPath linear;
  std::vector<int64_t> ids;
  for (size_t i = 0; i < inputs.size() + best_ssa.size(); ++i)
    ids.push_back(static_cast<int64_t>(i));
  for (const auto& scon : best_ssa) {
    std::vector<int64_t> con;
    for (int64_t s : scon) con.push_back(std::lower_bound(ids.begin(), ids.end(), s) - ids.begin());
    std::sort(con.begin(), con.end());
    for (auto it = con.rbegin(); it != con.rend(); ++it) ids.erase(ids.begin() + *it);
    linear.push_back(con);
  }
  return linear;
}

EinsumPath choose_path(const Parsed& p, const EinsumOptimize& optimize) {
  size_t n = p.in.size();
  if (optimize.path) return *optimize.path;
  std::vector<int64_t> all;
  for (size_t i = 0; i < n; ++i) all.push_back(static_cast<int64_t>(i));
  if (n <= 2) return {all};
  // The exhaustive search is for few operands (opt_einsum's 'auto' takes it up
  // to four, and branch searches, which mostly agree, up to eight).
  if (optimize.left_to_right || n > 8) return EinsumPath(n - 1, std::vector<int64_t>{0, 1});
  return optimal_path(p);
}

// One step of the path: which operands, and the labels of its result.
struct Step {
  std::vector<int64_t> positions; // sorted descending: the order operands are popped
  std::vector<std::string> inputs;
  std::vector<Shape> shapes;
  std::string result;
  Set removed, contract;
};

// Walks `path` over the parsed subscripts as contract_path does.
std::vector<Step> plan(const Parsed& p, const EinsumPath& path) {
  std::vector<std::string> terms = p.in;
  std::vector<Shape> shapes;
  for (const std::string& t : p.in) {
    Shape s;
    for (char c : t) s.push_back(p.size.at(c));
    shapes.push_back(s);
  }
  Set output = set_of(p.out);
  std::vector<Step> steps;
  for (size_t cnum = 0; cnum < path.size(); ++cnum) {
    Step st;
    st.positions = path[cnum];
    std::sort(st.positions.rbegin(), st.positions.rend());
    for (int64_t pos : st.positions) {
      if (pos < 0 || pos >= static_cast<int64_t>(terms.size()))
        throw Error(ErrCode::Index, "pop index out of range");
      st.inputs.push_back(terms[pos]);
      st.shapes.push_back(shapes[pos]);
      terms.erase(terms.begin() + pos);
      shapes.erase(shapes.begin() + pos);
    }
    Set remain = output;
    for (const std::string& t : terms) remain.insert(t.begin(), t.end());
    std::string all_inputs;
    for (const std::string& t : st.inputs) all_inputs += t;
    st.contract = set_of(all_inputs);
    std::string kept;
    for (char c : st.contract) {
      if (remain.count(c))
        kept += c;
      else
        st.removed.insert(c);
    }
    if (cnum + 1 == path.size()) {
      st.result = p.out;
    } else { // tensordot's order, to spare transposes
      st.result = kept;
      std::sort(st.result.begin(), st.result.end(),
                [&](char a, char b) { return all_inputs.find(a) < all_inputs.find(b); });
    }
    Shape rs;
    for (char c : st.result) rs.push_back(p.size.at(c));
    terms.push_back(st.result);
    shapes.push_back(rs);
    steps.push_back(std::move(st));
  }
  return steps;
}

// Sum (or, for bool, logical-or) out the axes of x whose labels fail `keep`.
template <class Keep> Tensor sum_out(OpContext& cx, Tensor x, std::string& ls, Keep keep) {
  std::vector<int64_t> axes;
  std::string rest;
  for (size_t i = 0; i < ls.size(); ++i) {
    if (keep(ls[i]))
      rest += ls[i];
    else
      axes.push_back(static_cast<int64_t>(i));
  }
  ls = rest;
  if (axes.empty()) return x;
  return reduce_axes(cx, av(x).dtype == DType::Bool ? Op::ReduceOr : Op::ReduceSum, x, axes);
}

// Collapses repeated labels of one operand to their diagonal.
Tensor take_diagonals(OpContext& cx, Tensor x, std::string& ls) {
  for (size_t p = 0; p < ls.size(); ++p)
    for (size_t q = p + 1; q < ls.size();) {
      if (ls[q] != ls[p]) {
        ++q;
        continue;
      }
      Shape s = av(x).shape; // a copy: x is rebound below
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

Tensor to_labels(OpContext& cx, const Tensor& x, const std::string& have, const std::string& want) {
  std::vector<int64_t> perm;
  for (char c : want) perm.push_back(static_cast<int64_t>(have.find(c)));
  return transpose_to(cx, x, perm);
}

} // namespace

Tensor einsum(OpContext& cx, const std::string& spec, const std::vector<Tensor>& operands,
              const EinsumOptimize& optimize, std::array<uint8_t, 2> precision) {
  std::vector<Shape> shapes;
  for (const Tensor& t : operands) shapes.push_back(av(t).shape);
  Parsed p = parse(spec, shapes);
  std::vector<Step> steps = plan(p, choose_path(p, optimize));

  PromotedType pt = result_type(operands);
  std::vector<Tensor> ops;
  std::vector<std::string> labels = p.in;
  for (size_t i = 0; i < operands.size(); ++i) {
    Shape full; // size-1 dims broadcast against the others
    for (char c : p.in[i]) full.push_back(p.size.at(c));
    ops.push_back(broadcast(cx, convert(cx, operands[i], pt.dtype, pt.weak), full, "einsum"));
  }
  for (const Step& st : steps) {
    if (st.positions.size() > 2)
      throw Error(ErrCode::Unsupported,
                  "jax.numpy.einsum does not support simultaneous contraction of 3 or more "
                  "operands. Typically this means you've passed an unsupported path to the einsum "
                  "optimize parameter.");
    std::vector<Tensor> xs;
    std::vector<std::string> ls;
    for (int64_t pos : st.positions) {
      xs.push_back(ops[pos]);
      ls.push_back(labels[pos]);
      ops.erase(ops.begin() + pos);
      labels.erase(labels.begin() + pos);
    }
    const std::string& want = st.result;
    auto in_want = [&](char c) { return want.find(c) != std::string::npos; };
    Tensor r;
    if (xs.size() == 1) {
      std::string l = ls[0];
      Tensor x = sum_out(cx, take_diagonals(cx, xs[0], l), l, in_want);
      r = to_labels(cx, x, l, want);
    } else {
      std::string cl = ls[0], rl = ls[1];
      Tensor lhs = take_diagonals(cx, xs[0], cl), rhs = take_diagonals(cx, xs[1], rl);
      auto has = [](const std::string& s, char c) { return s.find(c) != std::string::npos; };
      lhs = sum_out(cx, lhs, cl, [&](char c) { return in_want(c) || has(rl, c); });
      rhs = sum_out(cx, rhs, rl, [&](char c) { return in_want(c) || has(cl, c); });
      // Batch labels in the result's order; the pair goes in as (rhs, lhs)
      // when that order needs no transpose after (opt_einsum contracts from
      // the right), as JAX's _einsum.
      std::string batch, lfree, rfree;
      for (char c : want)
        if (has(cl, c) && has(rl, c)) batch += c;
      std::vector<int64_t> lc, rc, lb, rb;
      for (char c : cl)
        if (!has(rl, c)) lfree += c;
      // Contracting dims in the labels' sorted order (JAX sorts the contracted
      // names), which fixes the order XLA's dot sums them in.
      for (char c : set_of(cl))
        if (has(rl, c) && !in_want(c))
          lc.push_back(static_cast<int64_t>(cl.find(c))),
              rc.push_back(static_cast<int64_t>(rl.find(c)));
      for (char c : batch) {
        lb.push_back(static_cast<int64_t>(cl.find(c)));
        rb.push_back(static_cast<int64_t>(rl.find(c)));
      }
      for (char c : rl)
        if (!has(cl, c)) rfree += c;
      OpAttrs a;
      if (batch + rfree + lfree == want) {
        a.dot = DotDims{rb, lb, rc, lc};
        a.dot.precision = precision;
        r = bind(cx, Op::DotGeneral, a, {rhs, lhs});
      } else {
        a.dot = DotDims{lb, rb, lc, rc};
        a.dot.precision = precision;
        r = to_labels(cx, bind(cx, Op::DotGeneral, a, {lhs, rhs}), batch + lfree + rfree, want);
      }
    }
    ops.push_back(r);
    labels.push_back(want);
  }
  // No step (optimize=False with one operand): the operand itself goes to the output.
  std::string l = labels[0];
  Tensor x = sum_out(cx, take_diagonals(cx, ops[0], l), l,
                     [&](char c) { return p.out.find(c) != std::string::npos; });
  return to_labels(cx, x, l, p.out);
}

Tensor einsum(OpContext& cx, const std::string& spec, const std::vector<Tensor>& operands) {
  return einsum(cx, spec, operands, EinsumOptimize{});
}

namespace {

// opt_einsum's blas.can_blas: the BLAS kernel a pairwise step could use.
std::string can_blas(const Step& st) {
  if (st.inputs.size() != 2) return "0"; // False, formatted as an int
  const std::string &l = st.inputs[0], &r = st.inputs[1];
  for (char c : set_of(l + r)) {
    auto nl = std::count(l.begin(), l.end(), c), nr = std::count(r.begin(), r.end(), c);
    if (nl > 1 || nr > 1 || nl + nr > 2) return "0";
    bool in_result = st.contract.count(c) && !st.removed.count(c);
    if (nl + nr - 1 == (in_result ? 1 : 0)) return "0";
  }
  for (char c : st.removed)
    if (st.shapes[0][l.find(c)] != st.shapes[1][r.find(c)]) return "0";
  if (st.removed.empty()) return "OUTER/EINSUM";
  size_t rs = st.removed.size();
  Set sl = set_of(l), sr = set_of(r), keep_l, keep_r;
  for (char c : sl)
    if (!st.removed.count(c)) keep_l.insert(c);
  for (char c : sr)
    if (!st.removed.count(c)) keep_r.insert(c);
  auto head = [&](const std::string& s) { return s.substr(0, std::min(rs, s.size())); };
  auto tail = [&](const std::string& s) { return s.substr(s.size() - std::min(rs, s.size())); };
  if (l == r) return "DOT";
  if (sl == sr) return "DOT/EINSUM";
  if (tail(l) == head(r) || head(l) == tail(r) || tail(l) == tail(r) || head(l) == head(r))
    return "GEMM";
  if (keep_l.empty() || keep_r.empty()) return "GEMV/EINSUM";
  return "TDOT";
}

// Python's format(Decimal(n), '.3e'): 4 significant digits, exponent unpadded.
std::string sci(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3e", v);
  std::string s = buf;
  size_t e = s.find('e');
  std::string mant = s.substr(0, e), sign = s.substr(e + 1, 1), digits = s.substr(e + 2);
  while (digits.size() > 1 && digits[0] == '0') digits.erase(0, 1);
  return mant + "e" + sign + digits;
}

std::string pad_left(const std::string& s, size_t w) {
  return s.size() >= w ? s : std::string(w - s.size(), ' ') + s;
}

} // namespace

EinsumPathInfo einsum_path(const std::string& spec, const std::vector<Shape>& shapes,
                           const EinsumOptimize& optimize) {
  Parsed p = parse(spec, shapes);
  EinsumPath path = choose_path(p, optimize);
  std::vector<Step> steps = plan(p, path);
  std::string inputs;
  Set indices;
  size_t set_sizes = 0;
  for (size_t i = 0; i < p.in.size(); ++i) {
    inputs += (i ? "," : "") + p.in[i];
    Set s = set_of(p.in[i]);
    set_sizes += s.size();
    indices.insert(s.begin(), s.end());
  }
  int64_t naive = flop_count(indices, set_sizes > indices.size(), p.in.size(), p.size);
  int64_t opt = 0, largest = 1;
  size_t max_scale = 0;
  std::vector<std::string> remaining(p.in);
  std::string table;
  for (size_t n = 0; n < steps.size(); ++n) {
    const Step& st = steps[n];
    opt += flop_count(st.contract, !st.removed.empty(), st.positions.size(), p.size);
    max_scale = std::max(max_scale, st.contract.size());
    largest = n == 0 ? size_of(set_of(st.result), p.size)
                     : std::max(largest, size_of(set_of(st.result), p.size));
    for (int64_t pos : st.positions) remaining.erase(remaining.begin() + pos);
    remaining.push_back(st.result);
    std::string einsum_str;
    for (size_t i = 0; i < st.inputs.size(); ++i) einsum_str += (i ? "," : "") + st.inputs[i];
    einsum_str += "->" + st.result;
    std::string rem;
    if (remaining.size() <= 20) {
      for (size_t i = 0; i < remaining.size(); ++i) rem += (i ? "," : "") + remaining[i];
      rem += "->" + p.out;
    } else {
      rem = "...";
    }
    size_t width = static_cast<size_t>(
        std::max<int64_t>(0, 56 - std::max<int64_t>(22, static_cast<int64_t>(einsum_str.size()))));
    table += "\n" + pad_left(std::to_string(st.contract.size()), 4) + " " +
             pad_left(can_blas(st), 14) + " " + pad_left(einsum_str, 22) + "    " +
             (width == 0 ? rem : pad_left(rem, width));
  }
  double speedup = static_cast<double>(naive) / static_cast<double>(std::max<int64_t>(opt, 1));
  std::string info = "  Complete contraction:  " + inputs + "->" + p.out + "\n" +
                     "         Naive scaling:  " + std::to_string(indices.size()) + "\n" +
                     "     Optimized scaling:  " + std::to_string(max_scale) + "\n" +
                     "      Naive FLOP count:  " + sci(static_cast<double>(naive)) + "\n" +
                     "  Optimized FLOP count:  " + sci(static_cast<double>(opt)) + "\n" +
                     "   Theoretical speedup:  " + sci(speedup) + "\n" +
                     "  Largest intermediate:  " + sci(static_cast<double>(largest)) +
                     " elements\n" + std::string(80, '-') + "\n" + pad_left("scaling", 6) + " " +
                     pad_left("BLAS", 11) + " " + pad_left("current", 22) + " " +
                     pad_left("remaining", 37) + "\n" + std::string(80, '-') + table;
  return {path, info};
}

} // namespace pxl::np
