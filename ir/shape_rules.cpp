// Shape rules: one case per op in `infer`, helpers per family above it.
#include <algorithm>
#include <optional>
#include <string>

#include "ir/op.hpp"
#include "ir/while_loop.hpp"
#include "lang/diag.hpp"

namespace pxl {

namespace {

[[noreturn]] void fail(ErrCode code, Op op, const std::string& msg) {
  throw Error(code, std::string(op_name(op)) + ": " + msg);
}

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// Which dtypes an op accepts.
// kAny is the ordered dtypes; complex64 (kComplex) has no order.
enum Accept : unsigned {
  kBool = 1,
  kInt = 2,
  kFloat = 4,
  kNum = kInt | kFloat,
  kAny = 7,
  kComplex = 8
};

void check_dtype(Op op, DType d, unsigned accept) {
  bool ok = (d == DType::Bool && (accept & kBool)) || (is_integer(d) && (accept & kInt)) ||
            (is_floating(d) && (accept & kFloat)) || (is_complex(d) && (accept & kComplex));
  if (ok) return;
  std::string want;
  if (accept & kBool) want += "bool";
  if (accept & kInt) want += std::string(want.empty() ? "" : " or ") + "integer";
  if (accept & kFloat) want += std::string(want.empty() ? "" : " or ") + "floating";
  if (accept & kComplex) want += std::string(want.empty() ? "" : " or ") + "complex";
  fail(ErrCode::DType, op,
       std::string("operand dtype ") + dtype_name(d) + " is not supported (" + want + " required)");
}

void check_axis(Op op, int64_t axis, int ndim) {
  if (axis < 0 || axis >= ndim)
    fail(ErrCode::Axis, op,
         "axis " + std::to_string(axis) + " is out of range for an operand of rank " +
             std::to_string(ndim));
}

// Unique in-range axes.
void check_axes(Op op, const std::vector<int64_t>& axes, int ndim) {
  std::vector<bool> seen(static_cast<size_t>(ndim), false);
  for (int64_t a : axes) {
    check_axis(op, a, ndim);
    if (seen[static_cast<size_t>(a)])
      fail(ErrCode::Axis, op, "repeated axis " + std::to_string(a) + " in " + ints_str(axes));
    seen[static_cast<size_t>(a)] = true;
  }
}

AVal unary(Op op, const AVal& x, unsigned accept) {
  check_dtype(op, x.dtype, accept);
  return x;
}

AVal binary(Op op, const AVal& a, const AVal& b, unsigned accept, bool compare = false) {
  if (a.shape != b.shape)
    fail(ErrCode::Shape, op,
         "operands must have equal shapes, got " + shape_str(a.shape) + " and " +
             shape_str(b.shape));
  if (a.dtype != b.dtype)
    fail(ErrCode::DType, op,
         std::string("operands must have equal dtypes, got ") + dtype_name(a.dtype) + " and " +
             dtype_name(b.dtype));
  check_dtype(op, a.dtype, accept);
  // As lax's comparisons: the bool result is weak when both operands are.
  if (compare) return {DType::Bool, a.shape, a.weak && b.weak};
  return {a.dtype, a.shape, a.weak && b.weak};
}

AVal select(Op op, const AVal& p, const AVal& t, const AVal& f) {
  if (p.dtype != DType::Bool)
    fail(ErrCode::DType, op, std::string("predicate must be bool, got ") + dtype_name(p.dtype));
  if (t.shape != f.shape || t.dtype != f.dtype)
    fail(ErrCode::Shape, op,
         "branches must have equal shapes and dtypes, got " + std::string(dtype_name(t.dtype)) +
             shape_str(t.shape) + " and " + dtype_name(f.dtype) + shape_str(f.shape));
  if (!p.shape.empty() && p.shape != t.shape)
    fail(ErrCode::Shape, op,
         "predicate shape " + shape_str(p.shape) + " must be () or the branches' shape " +
             shape_str(t.shape));
  return {t.dtype, t.shape, t.weak && f.weak};
}

// fma, threefry2x32: operands of one shape and one dtype (`accept`, or exactly
// `exact` when set); the result is the operands' type.
AVal nary(Op op, std::span<const AVal> in, unsigned accept, std::optional<DType> exact = {}) {
  for (const AVal& x : in) {
    if (x.shape != in[0].shape)
      fail(ErrCode::Shape, op,
           "operands must have equal shapes, got " + shape_str(in[0].shape) + " and " +
               shape_str(x.shape));
    if (exact && x.dtype != *exact)
      fail(ErrCode::DType, op,
           std::string("operands must be ") + dtype_name(*exact) + ", got " + dtype_name(x.dtype));
    if (x.dtype != in[0].dtype)
      fail(ErrCode::DType, op,
           std::string("operands must have equal dtypes, got ") + dtype_name(in[0].dtype) +
               " and " + dtype_name(x.dtype));
  }
  check_dtype(op, in[0].dtype, accept);
  bool weak = true;
  for (const AVal& x : in) weak = weak && x.weak;
  return {in[0].dtype, in[0].shape, weak};
}

AVal broadcast_in_dim(Op op, const OpAttrs& a, const AVal& x) {
  const Shape& out = a.shape;
  if (a.axes.size() != x.shape.size())
    fail(ErrCode::Shape, op,
         "dims " + ints_str(a.axes) + " must name one output dim per operand dim of " +
             shape_str(x.shape));
  for (size_t i = 0; i < a.axes.size(); ++i) {
    int64_t d = a.axes[i];
    check_axis(op, d, static_cast<int>(out.size()));
    if (i > 0 && d <= a.axes[i - 1])
      fail(ErrCode::Shape, op, "dims " + ints_str(a.axes) + " must be increasing");
    if (x.shape[i] != 1 && x.shape[i] != out[static_cast<size_t>(d)])
      fail(ErrCode::Shape, op,
           "cannot broadcast " + shape_str(x.shape) + " to " + shape_str(out) + " with dims " +
               ints_str(a.axes));
  }
  for (int64_t d : out)
    if (d < 0) fail(ErrCode::Shape, op, "negative dimension in shape " + shape_str(out));
  return {x.dtype, out, x.weak};
}

AVal reshape(Op op, const OpAttrs& a, const AVal& x) {
  for (int64_t d : a.shape)
    if (d < 0) fail(ErrCode::Reshape, op, "negative dimension in shape " + shape_str(a.shape));
  if (shape_size(a.shape) != x.size())
    fail(ErrCode::Reshape, op,
         "cannot reshape array of shape " + shape_str(x.shape) + " (size " +
             std::to_string(x.size()) + ") into shape " + shape_str(a.shape) + " (size " +
             std::to_string(shape_size(a.shape)) + ")");
  return {x.dtype, a.shape, x.weak};
}

AVal transpose(Op op, const OpAttrs& a, const AVal& x) {
  std::vector<int64_t> sorted = a.perm;
  std::sort(sorted.begin(), sorted.end());
  bool ok = static_cast<int>(a.perm.size()) == x.ndim();
  for (size_t i = 0; ok && i < sorted.size(); ++i) ok = sorted[i] == static_cast<int64_t>(i);
  if (!ok)
    fail(ErrCode::Axis, op,
         "perm " + ints_str(a.perm) + " is not a permutation of the axes of " + shape_str(x.shape));
  Shape out;
  for (int64_t p : a.perm) out.push_back(x.shape[static_cast<size_t>(p)]);
  return {x.dtype, out, x.weak};
}

AVal slice(Op op, const OpAttrs& a, const AVal& x) {
  size_t n = x.shape.size();
  if (a.starts.size() != n || a.limits.size() != n || a.strides.size() != n)
    fail(ErrCode::Shape, op,
         "starts/limits/strides need one entry per axis of " + shape_str(x.shape));
  Shape out;
  for (size_t i = 0; i < n; ++i) {
    int64_t s = a.starts[i], l = a.limits[i], st = a.strides[i];
    if (s < 0 || l < s || l > x.shape[i] || st < 1)
      fail(ErrCode::Shape, op,
           "invalid slice " + std::to_string(s) + ":" + std::to_string(l) + ":" +
               std::to_string(st) + " of axis " + std::to_string(i) + " in " + shape_str(x.shape));
    // ceil((l - s) / st) without wrapping (signed overflow) at st = 2**63 - 1
    out.push_back(l == s ? 0 : (l - s - 1) / st + 1);
  }
  return {x.dtype, out, x.weak};
}

AVal concatenate(Op op, const OpAttrs& a, std::span<const AVal> xs) {
  if (xs.empty()) fail(ErrCode::Arguments, op, "needs at least one operand");
  const AVal& first = xs[0];
  check_axis(op, a.axis, first.ndim());
  AVal out = first;
  for (size_t k = 1; k < xs.size(); ++k) {
    const AVal& x = xs[k];
    bool ok = x.ndim() == first.ndim();
    for (int i = 0; ok && i < x.ndim(); ++i)
      ok = i == a.axis || x.shape[static_cast<size_t>(i)] == first.shape[static_cast<size_t>(i)];
    if (!ok)
      fail(ErrCode::Shape, op,
           "operands must match except along axis " + std::to_string(a.axis) + ", got " +
               shape_str(first.shape) + " and " + shape_str(x.shape));
    if (x.dtype != first.dtype)
      fail(ErrCode::DType, op,
           std::string("operands must have equal dtypes, got ") + dtype_name(first.dtype) +
               " and " + dtype_name(x.dtype));
    out.shape[static_cast<size_t>(a.axis)] += x.shape[static_cast<size_t>(a.axis)];
    out.weak = out.weak && x.weak;
  }
  return out;
}

AVal pad(Op op, const OpAttrs& a, const AVal& x, const AVal& v) {
  if (!v.shape.empty() || v.dtype != x.dtype)
    fail(ErrCode::Shape, op,
         std::string("padding value must be a 0-d ") + dtype_name(x.dtype) + ", got " +
             dtype_name(v.dtype) + shape_str(v.shape));
  size_t n = x.shape.size();
  if (a.lo.size() != n || a.hi.size() != n || a.interior.size() != n)
    fail(ErrCode::Shape, op, "lo/hi/interior need one entry per axis of " + shape_str(x.shape));
  Shape out;
  for (size_t i = 0; i < n; ++i) {
    int64_t d = x.shape[i];
    if (a.interior[i] < 0) fail(ErrCode::Shape, op, "negative interior padding");
    // lo, hi and interior come from the user unchecked: 2**62 each must not wrap
    // (signed overflow) into a small or negative size.
    int64_t inner = 0, o = 0;
    if ((d > 0 && __builtin_mul_overflow(d - 1, a.interior[i], &inner)) ||
        __builtin_add_overflow(d, inner, &o) || __builtin_add_overflow(o, a.lo[i], &o) ||
        __builtin_add_overflow(o, a.hi[i], &o))
      fail(ErrCode::Shape, op,
           "padding gives a size too large on axis " + std::to_string(i) + " of " +
               shape_str(x.shape));
    if (o < 0)
      fail(ErrCode::Shape, op,
           "padding gives a negative size on axis " + std::to_string(i) + " of " +
               shape_str(x.shape));
    out.push_back(o);
  }
  return {x.dtype, out, x.weak};
}

AVal reduce(Op op, const OpAttrs& a, const AVal& x, unsigned accept) {
  check_dtype(op, x.dtype, accept);
  check_axes(op, a.axes, x.ndim());
  Shape out;
  for (int i = 0; i < x.ndim(); ++i)
    if (std::find(a.axes.begin(), a.axes.end(), i) == a.axes.end())
      out.push_back(x.shape[static_cast<size_t>(i)]);
  return {x.dtype, out, x.weak};
}

AVal arg_reduce(Op op, const OpAttrs& a, const AVal& x) {
  check_dtype(op, x.dtype, kAny); // as JAX's: no argmax/argmin of complex values
  check_axis(op, a.axis, x.ndim());
  if (!is_integer(a.dtype)) fail(ErrCode::DType, op, "index dtype must be an integer type");
  if (x.shape[static_cast<size_t>(a.axis)] == 0)
    fail(ErrCode::Value, op,
         "attempt to get " + std::string(op_name(op)) + " of an empty sequence (shape " +
             shape_str(x.shape) + ")");
  Shape out = x.shape;
  out.erase(out.begin() + a.axis);
  return {a.dtype, out, false};
}

// Checks a list of dims of a dot_general operand.
void check_dot_dims(Op op, const char* what, const std::vector<int64_t>& dims, const AVal& x) {
  std::vector<bool> seen(x.shape.size(), false);
  for (int64_t d : dims) {
    if (d < 0 || d >= x.ndim() || seen[static_cast<size_t>(d)])
      fail(ErrCode::Axis, op,
           std::string(what) + " dims " + ints_str(dims) + " are invalid for an operand of shape " +
               shape_str(x.shape));
    seen[static_cast<size_t>(d)] = true;
  }
}

Shape dims_of(const AVal& x, const std::vector<int64_t>& dims) {
  Shape s;
  for (int64_t d : dims) s.push_back(x.shape[static_cast<size_t>(d)]);
  return s;
}

AVal dot_general(Op op, const OpAttrs& a, const AVal& l, const AVal& r) {
  const DotDims& dd = a.dot;
  if (l.dtype != r.dtype)
    fail(ErrCode::DType, op,
         std::string("operands must have equal dtypes, got ") + dtype_name(l.dtype) + " and " +
             dtype_name(r.dtype));
  check_dot_dims(op, "lhs batch", dd.lhs_batch, l);
  check_dot_dims(op, "rhs batch", dd.rhs_batch, r);
  check_dot_dims(op, "lhs contracting", dd.lhs_contract, l);
  check_dot_dims(op, "rhs contracting", dd.rhs_contract, r);
  for (int64_t d : dd.lhs_batch)
    if (std::find(dd.lhs_contract.begin(), dd.lhs_contract.end(), d) != dd.lhs_contract.end())
      fail(ErrCode::Axis, op, "lhs dim " + std::to_string(d) + " is both batch and contracting");
  for (int64_t d : dd.rhs_batch)
    if (std::find(dd.rhs_contract.begin(), dd.rhs_contract.end(), d) != dd.rhs_contract.end())
      fail(ErrCode::Axis, op, "rhs dim " + std::to_string(d) + " is both batch and contracting");
  if (dims_of(l, dd.lhs_batch) != dims_of(r, dd.rhs_batch))
    fail(ErrCode::Contraction, op,
         "batch dimensions must have the same shape, got " + shape_str(dims_of(l, dd.lhs_batch)) +
             " and " + shape_str(dims_of(r, dd.rhs_batch)) + " (operands " + shape_str(l.shape) +
             " and " + shape_str(r.shape) + ")");
  if (dims_of(l, dd.lhs_contract) != dims_of(r, dd.rhs_contract))
    fail(ErrCode::Contraction, op,
         "contracting dimensions must have the same shape, got " +
             shape_str(dims_of(l, dd.lhs_contract)) + " and " +
             shape_str(dims_of(r, dd.rhs_contract)) + " (operands " + shape_str(l.shape) + " and " +
             shape_str(r.shape) + ")");
  Shape out = dims_of(l, dd.lhs_batch);
  auto free = [&](const AVal& x, const std::vector<int64_t>& b, const std::vector<int64_t>& c) {
    for (int i = 0; i < x.ndim(); ++i)
      if (std::find(b.begin(), b.end(), i) == b.end() &&
          std::find(c.begin(), c.end(), i) == c.end())
        out.push_back(x.shape[static_cast<size_t>(i)]);
  };
  free(l, dd.lhs_batch, dd.lhs_contract);
  free(r, dd.rhs_batch, dd.rhs_contract);
  return {l.dtype, out, l.weak && r.weak};
}

Shape take_shape(const AVal& x, const AVal& idx, int64_t axis) {
  Shape out(x.shape.begin(), x.shape.begin() + axis);
  out.insert(out.end(), idx.shape.begin(), idx.shape.end());
  out.insert(out.end(), x.shape.begin() + axis + 1, x.shape.end());
  return out;
}

AVal take(Op op, const OpAttrs& a, const AVal& x, const AVal& idx) {
  check_axis(op, a.axis, x.ndim());
  if (!is_integer(idx.dtype))
    fail(ErrCode::DType, op, std::string("indices must be integers, got ") + dtype_name(idx.dtype));
  return {x.dtype, take_shape(x, idx, a.axis), x.weak};
}

AVal scatter(Op op, const OpAttrs& a, const AVal& x, const AVal& idx, const AVal& upd) {
  take(op, a, x, idx);
  Shape want = take_shape(x, idx, a.axis);
  if (upd.shape != want || upd.dtype != x.dtype)
    fail(ErrCode::Shape, op,
         std::string("updates must be ") + dtype_name(x.dtype) + shape_str(want) + ", got " +
             dtype_name(upd.dtype) + shape_str(upd.shape));
  if (a.mode == ScatterMode::Add || a.mode == ScatterMode::Mul)
    check_dtype(op, x.dtype, kNum | kComplex);
  if (a.mode == ScatterMode::Min || a.mode == ScatterMode::Max)
    check_dtype(op, x.dtype, kAny | kComplex);
  return x;
}

// lax.fft: attrs.axis is the FftType, attrs.shape the fft_lengths.
AVal fft(Op op, const OpAttrs& a, const AVal& x) {
  const char* names[] = {"FFT", "IFFT", "RFFT", "IRFFT"};
  if (a.axis < 0 || a.axis > 3)
    fail(ErrCode::Value, op, "unknown fft_type " + std::to_string(a.axis));
  const char* type = names[a.axis];
  size_t k = a.shape.size();
  if (k < 1 || k > 3)
    fail(ErrCode::Value, op, "fft_lengths must have 1 to 3 entries, got " + ints_str(a.shape));
  if (static_cast<size_t>(x.ndim()) < k) // JAX's text, without the op name
    throw Error(ErrCode::Shape, "FFT input shape " + shape_str(x.shape) +
                                    " must have at least as many input dimensions as fft_lengths " +
                                    shape_str(a.shape) + ".");
  bool real_in = a.axis == 2;
  if (real_in ? x.dtype != DType::Float32 : !is_complex(x.dtype))
    fail(ErrCode::DType, op,
         std::string(type) + " needs a " + (real_in ? "float32" : "complex64") + " operand, got " +
             dtype_name(x.dtype));
  // JAX's texts: IRFFT's minor dimensions but the last must equal fft_lengths;
  // its last must be fft_lengths[-1] // 2 + 1 (XLA's check, pxl's text).
  Shape trailing(x.shape.end() - static_cast<int64_t>(k), x.shape.end());
  if (a.axis == 3) {
    if (!std::equal(trailing.begin(), trailing.end() - 1, a.shape.begin()))
      throw Error(ErrCode::Shape, "IRFFT input shape " + shape_str(x.shape) +
                                      " minor dimensions must be equal to all except the last "
                                      "fft_length, got fft_lengths=" +
                                      shape_str(a.shape));
    if (trailing.back() != a.shape.back() / 2 + 1)
      fail(ErrCode::Shape, op,
           "IRFFT requires innermost dimension to be compatible with fft_length[-1]/2+1. Got: " +
               std::to_string(trailing.back()) + " but fft_lengths is " + shape_str(a.shape));
  } else if (trailing != a.shape) {
    throw Error(ErrCode::Shape, std::string(type) + " input shape " + shape_str(x.shape) +
                                    " minor dimensions must be equal to fft_lengths " +
                                    shape_str(a.shape));
  }
  for (int64_t d : a.shape)
    if (d < 1 && !(d == 0 && a.axis != 2)) // an empty FFT/IFFT/IRFFT is empty
      fail(ErrCode::Value, op, "fft_lengths must be positive, got " + ints_str(a.shape));
  AVal out = x;
  if (a.axis == 2) {
    out.dtype = DType::Complex64;
    out.shape.back() = a.shape.back() / 2 + 1;
  } else if (a.axis == 3) {
    out.dtype = DType::Float32;
    out.shape.back() = a.shape.back();
  }
  return out;
}

// Collectives. Messages name the collective and the sizes involved (DESIGN §3:
// all_to_all/psum_scatter sizes, ppermute pairs).
AVal collective(Op op, const OpAttrs& a, std::span<const AVal> in) {
  if (a.group_size < 1) fail(ErrCode::Internal, op, "group size not set");
  if (!a.index_groups.empty()) {
    // A partition of the ranks 0..N-1 into groups of group_size (checked
    // against the axis size N when traced: stdlib/collectives.cpp).
    if (op == Op::AxisIndex || op == Op::Ppermute)
      fail(ErrCode::Internal, op, "takes no axis_index_groups");
    size_t n = a.index_groups.size() * size_t(a.group_size);
    std::vector<bool> seen(n, false);
    for (const auto& grp : a.index_groups) {
      if (int64_t(grp.size()) != a.group_size)
        fail(ErrCode::CollectiveArgs, op, "axis_index_groups must all have the same size");
      for (int64_t r : grp) {
        if (r < 0 || size_t(r) >= n || seen[size_t(r)])
          fail(ErrCode::CollectiveArgs, op,
               "axis_index_groups must cover all indices exactly once");
        seen[size_t(r)] = true;
      }
    }
  }
  if (op == Op::AxisIndex) return {DType::Int32, {}, false};
  const AVal& x = in[0];
  int64_t g = a.group_size;
  switch (op) {
  case Op::Psum:
    return x;
  case Op::Pmax:
  case Op::Pmin:
    check_dtype(op, x.dtype, kAny); // complex has no order
    return x;                       // bool: pmax is a logical or, pmin a logical and (JAX)
  case Op::AllGather: {
    AVal out = x;
    if (a.tiled) {
      check_axis(op, a.axis, x.ndim());
      out.shape[a.axis] *= g;
    } else {
      if (a.axis < 0 || a.axis > x.ndim())
        fail(ErrCode::Axis, op,
             "axis " + std::to_string(a.axis) + " is out of range for an operand of rank " +
                 std::to_string(x.ndim()));
      out.shape.insert(out.shape.begin() + a.axis, g);
    }
    return out;
  }
  case Op::PsumScatter: {
    check_axis(op, a.axis, x.ndim());
    AVal out = x;
    int64_t n = x.shape[a.axis];
    if (a.tiled) {
      if (n % g != 0) // JAX's ValueError
        throw Error(ErrCode::CollectiveArgs,
                    "tiled reduce_scatter operand scatter dimension size " + std::to_string(n) +
                        " must be divisible by shard_count " + std::to_string(g));
      out.shape[a.axis] = n / g;
    } else {
      if (n != g) // JAX's ValueError
        throw Error(ErrCode::CollectiveArgs, "reduce_scatter operand scatter dimension size " +
                                                 std::to_string(n) + " must match shard count " +
                                                 std::to_string(g));
      out.shape.erase(out.shape.begin() + a.axis);
    }
    return out;
  }
  case Op::AllToAll: {
    check_axis(op, a.axis, x.ndim());
    check_axis(op, a.concat_axis, x.ndim());
    int64_t n = x.shape[a.axis];
    if (n % g != 0)
      fail(ErrCode::CollectiveArgs, op,
           "split axis " + std::to_string(a.axis) + " of shape " + shape_str(x.shape) +
               " has size " + std::to_string(n) + ", which is not divisible by the axis size " +
               std::to_string(g));
    AVal out = x;
    out.shape[a.axis] = n / g;
    out.shape[a.concat_axis] *= g;
    return out;
  }
  case Op::Ppermute: {
    std::vector<bool> src(g, false), dst(g, false);
    std::string pairs = "(";
    for (auto [s, d] : a.pairs) pairs += "(" + std::to_string(s) + ", " + std::to_string(d) + "), ";
    pairs = a.pairs.size() == 1 ? pairs.substr(0, pairs.size() - 1) + ")"
                                : pairs.substr(0, pairs.size() - 2) + ")";
    for (auto [s, d] : a.pairs) {
      if (s < 0 || s >= g || d < 0 || d >= g)
        fail(ErrCode::CollectiveArgs, op,
             "pair (" + std::to_string(s) + ", " + std::to_string(d) +
                 ") is out of range for an axis of size " + std::to_string(g));
      if (src[s] || dst[d]) // JAX's ValueError
        throw Error(ErrCode::CollectiveArgs,
                    "ppermute sources and destinations must be unique, got " + pairs + ".");
      src[s] = dst[d] = true;
    }
    return x;
  }
  default:
    break;
  }
  fail(ErrCode::Internal, op, "not a collective");
}

// JAX's linalg_shape_rule: each operand is a batch of matrices (the trailing
// two dims), every operand with the same number of batch dims.
AVal linalg(Op op, const OpAttrs& a, std::span<const AVal> in) {
  for (size_t i = 0; i < in.size(); ++i) {
    // householder_product's and ormqr's taus are vectors.
    int rank = (op == Op::HouseholderProduct || op == Op::Ormqr) && i == 1 ? 1 : 2;
    if (in[i].ndim() < rank)
      fail(ErrCode::Shape, op,
           "Input " + std::to_string(i) + " to " + op_name(op) + " must have rank at least " +
               std::to_string(rank) + ", but got shape=" + shape_str(in[i].shape));
    std::string at = " at position " + std::to_string(i);
    if (!is_inexact(in[i].dtype)) // JAX's naryop_dtype_rule
      fail(ErrCode::DType, op,
           std::string(op_name(op)) + " does not accept dtype " + dtype_name(in[i].dtype) + at +
               ". Accepted dtypes" + at + " are subtypes of floating, complexfloating.");
    bool lapack_type = in[i].dtype == DType::Float32 || in[i].dtype == DType::Float64 ||
                       in[i].dtype == DType::Complex64;
    if (!lapack_type) // LAPACK's types; JAX's text
      fail(ErrCode::DType, op, std::string("Unsupported dtype ") + dtype_name(in[i].dtype) + ".");
  }
  const AVal& x = in[0];
  const Shape& s = x.shape;
  size_t nb = s.size() - 2;
  Shape batch(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(nb));
  int64_t m = s[nb], n = s[nb + 1];
  // Every output is weak-typed when the operands all are (JAX's standard
  // weak type rule, which its linalg primitives use), lu's int32 pivots too.
  auto out = [&](std::initializer_list<int64_t> dims, DType d) {
    Shape r = batch;
    r.insert(r.end(), dims);
    return AVal{d, r, x.weak};
  };
  auto square = [&](const std::string& what) {
    if (m != n) fail(ErrCode::Shape, op, what + shape_str({m, n}) + ".");
  };
  const LinalgAttrs& l = a.linalg;
  auto check_output = [&](int count) {
    if (l.output < 0 || l.output >= count)
      fail(ErrCode::Internal, op, "output " + std::to_string(l.output) + " does not exist");
  };
  int64_t k = std::min(m, n);
  switch (op) {
  case Op::Cholesky:
    square("The input to cholesky must be a square matrix. Got shape ");
    return out({m, n}, x.dtype);
  case Op::TriangularSolve: {
    const AVal& b = in[1];
    if (b.dtype != x.dtype)
      fail(ErrCode::DType, op,
           std::string("operands must have the same dtype, got ") + dtype_name(x.dtype) + " and " +
               dtype_name(b.dtype));
    if (b.ndim() != x.ndim())
      fail(ErrCode::Shape, op,
           "All inputs to triangular_solve must have the same number of batch dimensions, but got "
           "[" +
               std::to_string(nb) + ", " + std::to_string(b.ndim() - 2) +
               "] batch dimensions for the inputs.");
    square("The first input to triangular_solve must be a square matrix. Got shape ");
    int64_t common = b.shape[b.shape.size() - (l.left_side ? 2 : 1)];
    Shape bb(b.shape.begin(), b.shape.end() - 2);
    if (n != common || bb != batch)
      fail(ErrCode::Shape, op,
           "Incompatible shapes for arguments to triangular_solve: " + shape_str(s) + " and " +
               shape_str(b.shape) + ".");
    return AVal{b.dtype, b.shape, b.weak && x.weak};
  }
  case Op::Lu:
    check_output(3);
    if (l.output == 0) return out({m, n}, x.dtype);
    return l.output == 1 ? out({k}, DType::Int32) : out({m}, DType::Int32);
  case Op::Qr: {
    check_output(2);
    int64_t kq = l.full_matrices ? m : k;
    return l.output == 0 ? out({m, kq}, x.dtype) : out({kq, n}, x.dtype);
  }
  case Op::Eigh:
    check_output(2);
    if (m != n)
      fail(ErrCode::Shape, op,
           "Argument to symmetric eigendecomposition must have shape [..., n, n], got shape " +
               shape_str(s));
    return l.output == 0 ? out({n, n}, x.dtype) : out({n}, real_dtype(x.dtype));
  case Op::Svd:
    check_output(3);
    if (l.output == 0) return out({k}, real_dtype(x.dtype));
    if (l.output == 1) return out({m, l.full_matrices ? m : k}, x.dtype);
    return out({l.full_matrices ? n : k, n}, x.dtype);
  case Op::Hessenberg:
    check_output(2);
    if (m != n)
      fail(ErrCode::Shape, op,
           "Argument to Hessenberg reduction must have shape [..., n, n], got shape " +
               shape_str(s));
    return l.output == 0 ? out({n, n}, x.dtype) : out({std::max<int64_t>(n - 1, 0)}, x.dtype);
  case Op::Tridiagonal:
    check_output(4);
    if (m != n || n == 0)
      fail(ErrCode::Shape, op,
           "The input to tridiagonal must be a square matrix. Got shape " + shape_str({m, n}) +
               ".");
    if (l.output == 0) return out({n, n}, x.dtype);
    if (l.output == 1) return out({n}, real_dtype(x.dtype));
    return out({n - 1}, l.output == 2 ? real_dtype(x.dtype) : x.dtype);
  case Op::HouseholderProduct: {
    const AVal& t = in[1];
    if (t.dtype != x.dtype)
      fail(ErrCode::DType, op,
           std::string("operands must have the same dtype, got ") + dtype_name(x.dtype) + " and " +
               dtype_name(t.dtype));
    if (t.ndim() != x.ndim() - 1)
      fail(ErrCode::Shape, op,
           "All inputs to householder_product must have the same number of batch dimensions, but "
           "got [" +
               std::to_string(nb) + ", " + std::to_string(t.ndim() - 1) +
               "] batch dimensions for the inputs.");
    if (Shape(t.shape.begin(), t.shape.end() - 1) != batch)
      fail(ErrCode::Shape, op,
           "Incompatible batch shapes for arguments to householder_product: " + shape_str(s) +
               " and " + shape_str(t.shape) + ".");
    if (m < n)
      fail(ErrCode::Shape, op,
           "The first argument to householder_product must have at least as many rows as "
           "columns, got shape " +
               shape_str({m, n}));
    if (t.shape.back() > k)
      fail(ErrCode::Shape, op,
           "The second argument to householder_product must not have more rows than the minimum "
           "of the first argument's rows and columns.");
    return out({m, n}, x.dtype);
  }
  case Op::Geqrf:
    check_output(2);
    return l.output == 0 ? out({m, n}, x.dtype) : out({k}, x.dtype);
  case Op::Ormqr: {
    const AVal& t = in[1];
    const AVal& c = in[2];
    if (t.dtype != x.dtype || c.dtype != x.dtype)
      fail(ErrCode::DType, op,
           std::string("operands must have the same dtype, got ") + dtype_name(x.dtype) + ", " +
               dtype_name(t.dtype) + " and " + dtype_name(c.dtype));
    if (t.ndim() != x.ndim() - 1 || c.ndim() != x.ndim())
      fail(ErrCode::Shape, op,
           "All inputs to ormqr must have the same number of batch dimensions, but got [" +
               std::to_string(nb) + ", " + std::to_string(t.ndim() - 1) + ", " +
               std::to_string(c.ndim() - 2) + "] batch dimensions for the inputs.");
    if (Shape(t.shape.begin(), t.shape.end() - 1) != batch ||
        Shape(c.shape.begin(), c.shape.end() - 2) != batch)
      fail(ErrCode::Shape, op,
           "Incompatible batch shapes for arguments to ormqr: " + shape_str(s) + ", " +
               shape_str(t.shape) + " and " + shape_str(c.shape) + ".");
    Shape cm(c.shape.end() - 2, c.shape.end()), am{m, n};
    if (l.left_side && cm[0] != m)
      fail(ErrCode::Value, op,
           "ormqr with left=True expects c to have the same number of rows as the Householder "
           "matrix a. Got a shape " +
               shape_str(am) + " and c shape " + shape_str(cm) + ".");
    if (!l.left_side && cm[1] != m)
      fail(ErrCode::Value, op,
           "ormqr with left=False expects c to have the same number of columns as the "
           "Householder matrix a has rows. Got a shape " +
               shape_str(am) + " and c shape " + shape_str(cm) + ".");
    if (t.shape.back() > std::min(m, n))
      fail(ErrCode::Value, op,
           "ormqr expects at most min(m, n) = " + std::to_string(std::min(m, n)) +
               " Householder scalars, got " + std::to_string(t.shape.back()) + ".");
    return AVal{c.dtype, c.shape, c.weak && x.weak};
  }
  case Op::Eig: {
    check_output(3);
    square("The input to eig must be a square matrix. Got shape ");
    if (x.dtype == DType::Float64) // its results would be complex128, which pxl lacks
      fail(ErrCode::DType, op, "Unsupported dtype float64 (eig's complex128 results).");
    return l.output == 0 ? out({n}, DType::Complex64) : out({n, n}, DType::Complex64);
  }
  case Op::Schur:
    check_output(2);
    square("The input to schur must be a square matrix. Got shape ");
    return AVal{x.dtype, out({n, n}, x.dtype).shape, x.weak};
  default:
    break;
  }
  fail(ErrCode::Internal, op, "not a linalg op");
}

// The rules of infer() below, before its check of the result's size.
AVal infer_unchecked(Op op, const OpAttrs& a, std::span<const AVal> in) {
  int arity = op_arity(op);
  if (arity >= 0 && static_cast<int>(in.size()) != arity)
    fail(ErrCode::Arguments, op,
         "expects " + std::to_string(arity) + " operands, got " + std::to_string(in.size()));
  switch (op) {
  case Op::Neg:
  case Op::Sign:
  case Op::Square:
    return unary(op, in[0], kNum | kComplex);
  case Op::Abs:
    if (is_narrow_int(in[0].dtype)) // JAX's abs_p alone refuses them
      throw Error(ErrCode::Type, std::string("abs does not accept dtype ") +
                                     dtype_name(in[0].dtype) +
                                     ". Support for narrow-width integers is platform-dependent "
                                     "and limited to a few specific operations, e.g. basic "
                                     "arithmetic and type casting.");
    // |z| of a complex is real.
    return {real_dtype(in[0].dtype), unary(op, in[0], kNum | kComplex).shape, in[0].weak};
  case Op::Real:
  case Op::Imag:
    return {DType::Float32, unary(op, in[0], kComplex).shape, in[0].weak};
  case Op::Conj:
    return unary(op, in[0], kComplex);
  case Op::ShardingConstraint: {
    AVal r = unary(op, in[0], kAny | kComplex);
    if (a.dim_axes.size() != r.shape.size())
      fail(ErrCode::Shape, op,
           "the sharding names " + std::to_string(a.dim_axes.size()) + " dimensions of a rank-" +
               std::to_string(r.shape.size()) + " operand");
    return r;
  }
  case Op::Not:
    return unary(op, in[0], kBool | kInt);
  case Op::IntegerPow:
    if (a.exponent < 0 && is_integer(in[0].dtype)) {
      std::string dims; // JAX's text
      for (int64_t d : in[0].shape) dims += (dims.empty() ? "" : ",") + std::to_string(d);
      throw Error(ErrCode::Type,
                  std::string("Integers cannot be raised to negative powers, got integer_pow(") +
                      dtype_name(in[0].dtype) + "[" + dims + "], " + std::to_string(a.exponent) +
                      ")");
    }
    return unary(op, in[0], kNum | kComplex);
  case Op::Exp:
  case Op::Log:
  case Op::Log1p:
  case Op::Expm1:
  case Op::Sqrt:
  case Op::Rsqrt:
  case Op::Tanh:
  case Op::Sin:
  case Op::Cos:
  case Op::Tan:
    return unary(op, in[0], kFloat | kComplex);
  case Op::Cbrt:
    return unary(op, in[0], kFloat);
  case Op::Floor:
  case Op::Ceil:
  case Op::Round:
  case Op::Logistic:
  case Op::Erf:
  case Op::ErfInv:
    return unary(op, in[0], kFloat);
  case Op::IsFinite:
    return {DType::Bool, unary(op, in[0], kFloat | kComplex).shape, false};
  case Op::Add:
  case Op::Sub:
  case Op::Mul:
  case Op::Div:
  case Op::Pow:
    return binary(op, in[0], in[1], kNum | kComplex);
  case Op::Rem:
    return binary(op, in[0], in[1], kNum);
  case Op::Complex: {
    AVal r = binary(op, in[0], in[1], kFloat);
    if (r.dtype != DType::Float32)
      fail(ErrCode::DType, op, std::string("operands must be float32, got ") + dtype_name(r.dtype));
    return {DType::Complex64, r.shape, r.weak};
  }
  case Op::Max:
  case Op::Min:
    return binary(op, in[0], in[1], kAny | kComplex); // complex: lexicographic
  case Op::And:
  case Op::Or:
  case Op::Xor:
    return binary(op, in[0], in[1], kBool | kInt);
  case Op::Atan2:
    return binary(op, in[0], in[1], kFloat);
  case Op::ShiftLeft:
  case Op::ShiftRightLogical:
  case Op::ShiftRightArithmetic:
    return binary(op, in[0], in[1], kInt);
  case Op::Eq:
  case Op::Ne:
  case Op::Lt:
  case Op::Le:
  case Op::Gt:
  case Op::Ge:
    return binary(op, in[0], in[1], kAny | kComplex, true);
  case Op::Select:
    return select(op, in[0], in[1], in[2]);
  case Op::Fma:
    return nary(op, in, kFloat);
  case Op::Threefry2x32:
    if (a.axis != 0 && a.axis != 1)
      fail(ErrCode::Value, op, "word must be 0 or 1, got " + std::to_string(a.axis));
    return {DType::UInt32, nary(op, in, kInt, DType::UInt32).shape, false};
  case Op::ConvertElementType:
    return {a.dtype, in[0].shape, a.weak};
  case Op::BitcastConvertType:
    if (dtype_bits(a.dtype) != dtype_bits(in[0].dtype))
      fail(ErrCode::DType, op,
           std::string("cannot bitcast ") + dtype_name(in[0].dtype) + " to " + dtype_name(a.dtype) +
               " (different widths)");
    return {a.dtype, in[0].shape, false};
  case Op::Iota:
    check_dtype(op, a.dtype, kNum);
    check_axis(op, a.axis, static_cast<int>(a.shape.size()));
    for (int64_t d : a.shape)
      if (d < 0) fail(ErrCode::Shape, op, "negative dimension in shape " + shape_str(a.shape));
    return {a.dtype, a.shape, false};
  case Op::BroadcastInDim:
    return broadcast_in_dim(op, a, in[0]);
  case Op::Reshape:
    return reshape(op, a, in[0]);
  case Op::Transpose:
    return transpose(op, a, in[0]);
  case Op::Slice:
    return slice(op, a, in[0]);
  case Op::Rev:
    check_axes(op, a.axes, in[0].ndim());
    return in[0];
  case Op::Concatenate:
    return concatenate(op, a, in);
  case Op::Pad:
    return pad(op, a, in[0], in[1]);
  case Op::ReduceSum:
  case Op::ReduceProd:
    return reduce(op, a, in[0], kNum | kComplex);
  case Op::ReduceMax:
  case Op::ReduceMin:
    return reduce(op, a, in[0], kAny | kComplex);
  case Op::ReduceAnd:
  case Op::ReduceOr:
    return reduce(op, a, in[0], kBool | kInt);
  case Op::Argmax:
  case Op::Argmin:
    return arg_reduce(op, a, in[0]);
  case Op::Cumsum:
    check_dtype(op, in[0].dtype, kNum | kComplex);
    check_axis(op, a.axis, in[0].ndim());
    return in[0];
  case Op::Fft:
    return fft(op, a, in[0]);
  case Op::Argsort:
    check_axis(op, a.axis, in[0].ndim());
    return AVal{DType::Int32, in[0].shape, false};
  case Op::DotGeneral:
    return dot_general(op, a, in[0], in[1]);
  case Op::MulReduceSum:
    if (in[0].dtype != DType::Float32 && in[0].dtype != DType::Float64)
      fail(ErrCode::DType, op,
           std::string("operand dtype ") + dtype_name(in[0].dtype) +
               " is not supported (float32 or float64 required)");
    return reduce(op, a, nary(op, in, kFloat), kFloat);
  case Op::Take:
    return take(op, a, in[0], in[1]);
  case Op::Cholesky:
  case Op::TriangularSolve:
  case Op::Lu:
  case Op::Qr:
  case Op::Eigh:
  case Op::Svd:
  case Op::Eig:
  case Op::Schur:
  case Op::Hessenberg:
  case Op::Tridiagonal:
  case Op::HouseholderProduct:
  case Op::Geqrf:
  case Op::Ormqr:
    return linalg(op, a, in);
  case Op::Scatter:
    return scatter(op, a, in[0], in[1], in[2]);
  case Op::Psum:
  case Op::Pmax:
  case Op::Pmin:
  case Op::AllGather:
  case Op::PsumScatter:
  case Op::Ppermute:
  case Op::AllToAll:
  case Op::AxisIndex:
    return collective(op, a, in);
  case Op::DebugPrint:
    return {DType::Bool, {}, false};
  case Op::HostCallback: {
    std::vector<AVal> outs = infer_results(op, a, in);
    if (outs.size() != 1)
      fail(ErrCode::Internal, op, "has several results (bind it with bind_call)");
    return outs[0];
  }
  case Op::SpmdCall:
  case Op::CustomCall: {
    // Bound through OpContext::bind_call; a one-result call also checks here.
    std::vector<AVal> outs = infer_call(a, in);
    if (outs.size() != 1)
      fail(ErrCode::Internal, op, "has several results (bind it with bind_call)");
    return outs[0];
  }
  case Op::While: {
    std::vector<AVal> outs = infer_while(a, in);
    if (outs.size() != 1)
      fail(ErrCode::Internal, op, "has several results (bind it with bind_call)");
    return outs[0];
  }
  }
  fail(ErrCode::Internal, op, "no shape rule");
}

} // namespace

// A result whose element count (its nonzero extents', when it is empty) does
// not fit in int64 is refused, as XLA refuses it ("overflow in static extent
// product"): every later size computation (shape_size, buffer plans) can then
// multiply extents without overflowing.
AVal infer(Op op, const OpAttrs& a, std::span<const AVal> in) {
  AVal r = infer_unchecked(op, a, in);
  int64_t n = 1;
  for (int64_t d : r.shape)
    if (d > 0 && __builtin_mul_overflow(n, d, &n))
      throw Error(ErrCode::Value, "array of shape " + shape_str(r.shape) + " and dtype " +
                                      dtype_name(r.dtype) + " is too large");
  return r;
}

std::vector<AVal> infer_results(Op op, const OpAttrs& attrs, std::span<const AVal> inputs) {
  if (op == Op::SpmdCall || op == Op::CustomCall) return infer_call(attrs, inputs);
  if (op == Op::While) return infer_while(attrs, inputs);
  if (op == Op::HostCallback) {
    if (!attrs.host) fail(ErrCode::Internal, op, "needs its callee");
    return attrs.host->results;
  }
  return {infer(op, attrs, inputs)};
}

} // namespace pxl
