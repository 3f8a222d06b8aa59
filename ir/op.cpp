// Op names, arities, families, and attribute printing.
#include "ir/op.hpp"
#include "ir/while_loop.hpp"

#include "ir/custom_call.hpp"

namespace pxl {

namespace {

struct OpInfo {
  const char* name;
  int arity;
  OpFamily family;
};

constexpr OpInfo kOps[] = {
#define OP(name, text, arity, family) {text, arity, OpFamily::family},
#include "ir/ops.def"
#undef OP
};

std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i]);
  }
  return s + "]";
}

std::string names_str(const std::vector<std::string>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s + ")";
}

// Each dimension's mesh axes: "sharding=[(x), (), (y, z)]".
std::string sharding_str(const std::vector<std::vector<std::string>>& dims) {
  std::string s = "sharding=[";
  for (size_t d = 0; d < dims.size(); ++d) s += (d ? ", " : "") + names_str(dims[d]);
  return s + "]";
}

// The flags each linalg op reads: "output=1 full_matrices=true".
std::string linalg_attrs_str(Op op, const LinalgAttrs& l) {
  auto flag = [](const char* k, bool v) { return std::string(" ") + k + (v ? "=true" : "=false"); };
  std::string s;
  if (op == Op::Lu || op == Op::Qr || op == Op::Eigh || op == Op::Svd || op == Op::Eig ||
      op == Op::Schur || op == Op::Hessenberg || op == Op::Tridiagonal || op == Op::Geqrf)
    s += " output=" + std::to_string(l.output);
  if (op == Op::Ormqr) s += flag("left_side", l.left_side) + flag("transpose_a", l.transpose_a);
  if (op == Op::TriangularSolve)
    s += flag("left_side", l.left_side) + flag("lower", l.lower) +
         flag("transpose_a", l.transpose_a) + flag("unit_diagonal", l.unit_diagonal);
  if (op == Op::Eigh || op == Op::Tridiagonal) s += flag("lower", l.lower);
  if (op == Op::Qr || op == Op::Svd) s += flag("full_matrices", l.full_matrices);
  if (op == Op::Svd) s += flag("compute_uv", l.compute_uv);
  if (op == Op::Eig)
    s += flag("compute_left", l.compute_left) + flag("compute_right", l.compute_right);
  return s.empty() ? s : s.substr(1);
}

// "axis_names=(i) group_size=4", plus " axis_index_groups=[[0, 1], [2, 3]]" when set.
std::string group_str(const OpAttrs& a) {
  std::string s =
      "axis_names=" + names_str(a.axis_names) + " group_size=" + std::to_string(a.group_size);
  if (a.index_groups.empty()) return s;
  s += " axis_index_groups=[";
  for (size_t i = 0; i < a.index_groups.size(); ++i)
    s += (i ? ", " : "") + ints_str(a.index_groups[i]);
  return s + "]";
}

} // namespace

const char* op_name(Op op) { return kOps[static_cast<size_t>(op)].name; }
int op_arity(Op op) { return kOps[static_cast<size_t>(op)].arity; }
OpFamily op_family(Op op) { return kOps[static_cast<size_t>(op)].family; }

const char* precision_name(uint8_t p) {
  switch (p) {
  case kPrecisionDefault:
    return "DEFAULT";
  case kPrecisionHigh:
    return "HIGH";
  case kPrecisionHighest:
    return "HIGHEST";
  default:
    return "";
  }
}

const char* scatter_mode_name(ScatterMode m) {
  switch (m) {
  case ScatterMode::Set:
    return "set";
  case ScatterMode::Add:
    return "add";
  case ScatterMode::Mul:
    return "mul";
  case ScatterMode::Min:
    return "min";
  case ScatterMode::Max:
    return "max";
  }
  return "?";
}

std::string attrs_str(Op op, const OpAttrs& a) {
  switch (op) {
  case Op::Neg:
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
  case Op::Cbrt:
  case Op::Abs:
  case Op::Sign:
  case Op::Floor:
  case Op::Ceil:
  case Op::Round:
  case Op::IsFinite:
  case Op::Logistic:
  case Op::Square:
  case Op::Erf:
  case Op::ErfInv:
  case Op::Not:
  case Op::Add:
  case Op::Sub:
  case Op::Mul:
  case Op::Div:
  case Op::Rem:
  case Op::Max:
  case Op::Min:
  case Op::And:
  case Op::Or:
  case Op::Xor:
  case Op::Atan2:
  case Op::ShiftLeft:
  case Op::ShiftRightLogical:
  case Op::ShiftRightArithmetic:
  case Op::Eq:
  case Op::Ne:
  case Op::Lt:
  case Op::Le:
  case Op::Gt:
  case Op::Ge:
  case Op::Select:
  case Op::Fma:
  case Op::Real:
  case Op::Imag:
  case Op::Conj:
  case Op::Complex:
    return "";
  case Op::ShardingConstraint:
    // (concat_axis 1: the axes are those its result is reduced over)
    return sharding_str(a.dim_axes) +
           (a.unreduced.empty()
                ? ""
                : (a.concat_axis == 1 ? " reduced=" : " unreduced=") + names_str(a.unreduced));
  case Op::IntegerPow:
    return "y=" + std::to_string(a.exponent);
  case Op::Pow:
    return a.int_exponent ? "int_exponent=true" : "";
  case Op::Threefry2x32:
    return "word=" + std::to_string(a.axis);
  case Op::ConvertElementType:
    return std::string("dtype=") + dtype_name(a.dtype) + (a.weak ? " weak=true" : "");
  case Op::BitcastConvertType:
    return std::string("dtype=") + dtype_name(a.dtype);
  case Op::Iota:
    return std::string("dtype=") + dtype_name(a.dtype) + " shape=" + shape_str(a.shape) +
           " axis=" + std::to_string(a.axis);
  case Op::BroadcastInDim:
    return "shape=" + shape_str(a.shape) + " dims=" + ints_str(a.axes);
  case Op::Reshape:
    return "shape=" + shape_str(a.shape);
  case Op::Transpose:
    return "perm=" + ints_str(a.perm);
  case Op::Slice:
    return "starts=" + ints_str(a.starts) + " limits=" + ints_str(a.limits) +
           " strides=" + ints_str(a.strides);
  case Op::Rev:
    return "axes=" + ints_str(a.axes);
  case Op::Concatenate:
    return "axis=" + std::to_string(a.axis);
  case Op::Pad:
    return "lo=" + ints_str(a.lo) + " hi=" + ints_str(a.hi) + " interior=" + ints_str(a.interior);
  case Op::ReduceSum:
    // The loop's work per element changes the summation order: part of the
    // IR text, which keys caches.
    return "axes=" + ints_str(a.axes) +
           (a.loop_body ? " body=" + std::to_string(a.loop_body) : std::string());
  case Op::ReduceMax:
  case Op::ReduceMin:
  case Op::ReduceProd:
  case Op::ReduceAnd:
  case Op::ReduceOr:
    return "axes=" + ints_str(a.axes);
  case Op::MulReduceSum:
    return "axes=" + ints_str(a.axes) + (a.exponent == 2 ? " squares=true" : "") +
           (a.axis == 1   ? " computed=true"
            : a.axis == 2 ? " scaled=true"
                          : "") +
           (a.loop_body ? " body=" + std::to_string(a.loop_body) : std::string());
  case Op::Argmax:
  case Op::Argmin:
    return "axis=" + std::to_string(a.axis) + " dtype=" + dtype_name(a.dtype);
  case Op::Cumsum:
    return "axis=" + std::to_string(a.axis) + (a.reverse ? " reverse=true" : "");
  case Op::Argsort:
    return "axis=" + std::to_string(a.axis);
  case Op::Fft: {
    const char* types[] = {"FFT", "IFFT", "RFFT", "IRFFT"};
    return std::string("fft_type=") + (a.axis >= 0 && a.axis < 4 ? types[a.axis] : "?") +
           " fft_lengths=" + ints_str(a.shape);
  }
  case Op::DotGeneral:
    return "lhs_batch=" + ints_str(a.dot.lhs_batch) + " rhs_batch=" + ints_str(a.dot.rhs_batch) +
           " lhs_contract=" + ints_str(a.dot.lhs_contract) +
           " rhs_contract=" + ints_str(a.dot.rhs_contract) +
           // A convolution's summation order: part of the IR text, which keys caches.
           (a.dot.order == DotOrder::Chain       ? " order=chain"
            : a.dot.order == DotOrder::Ynn       ? " order=ynn"
            : a.dot.order == DotOrder::Elemental ? " order=elemental"
                                                 : "") +
           (a.dot.preferred_none ? " preferred=none" : "") +
           (a.dot.precision[0] ? std::string(" precision=") + precision_name(a.dot.precision[0]) +
                                     "," + precision_name(a.dot.precision[1])
                               : "") +
           (a.dim_axes.empty() ? "" : " " + sharding_str(a.dim_axes));
  case Op::Take:
    return "axis=" + std::to_string(a.axis);
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
    return linalg_attrs_str(op, a.linalg);
  case Op::Scatter:
    return "axis=" + std::to_string(a.axis) + " mode=" + scatter_mode_name(a.mode);
  case Op::Psum:
  case Op::Pmax:
  case Op::Pmin:
  case Op::AxisIndex:
    return group_str(a);
  case Op::AllGather:
  case Op::PsumScatter:
    return group_str(a) + " axis=" + std::to_string(a.axis) + (a.tiled ? " tiled=true" : "");
  case Op::AllToAll:
    return group_str(a) + " axis=" + std::to_string(a.axis) +
           " concat_axis=" + std::to_string(a.concat_axis);
  case Op::DebugPrint:
    return "format=" + std::to_string(a.axis);
  case Op::HostCallback:
    return a.host ? (a.host->pure ? "pure" : "io") : "";
  case Op::SpmdCall:
    return a.callee ? callee_str(*a.callee) : "";
  case Op::While:
    return a.loop ? while_attrs_str(*a.loop) : "";
  case Op::CustomCall:
    return a.custom ? custom_callee_str(*a.custom) : "";
  case Op::Ppermute: {
    std::string s = group_str(a) + " pairs=[";
    for (size_t i = 0; i < a.pairs.size(); ++i)
      s += (i ? ", (" : "(") + std::to_string(a.pairs[i].first) + ", " +
           std::to_string(a.pairs[i].second) + ")";
    return s + "]";
  }
  }
  return "";
}

} // namespace pxl
