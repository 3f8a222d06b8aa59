// jax.lax functions that are one primitive with its parameters spelled out
// (pad with interior padding, broadcast_in_dim, dot_general, iota, reduce_*,
// argmax, cumsum, rev, bitcast_convert_type, shifts), plus stop_gradient,
// integer_pow, with_sharding_constraint and Precision. The control-flow and
// slicing helpers written in pxl are in lax_extra.pxl.
#include <cctype>
#include <cstdlib>
#include <tuple>

#include "lang/args.hpp"
#include "lang/tracer.hpp"
#include "stdlib/convert.hpp"
#include "stdlib/jaxpr_record.hpp"
#include "stdlib/jit_devices.hpp"
#include "stdlib/lax_precision.hpp"
#include "stdlib/module_builder.hpp"
#include "stdlib/np.hpp"
#include "stdlib/pytree.hpp"
#include "stdlib/sharding.hpp"
#include "stdlib/sharding_rules.hpp"

namespace pxl {

namespace {

// JAX's dot_general result type for operands of different dtypes (XLA's
// HigherPrecisionType): the greater of (complex, float max exponent, float
// mantissa bits, bit width, signed) of each operand's real type; a tie between
// different dtypes is JAX's TypeError.
DType dot_result_dtype(DType a, DType b) {
  auto props = [](DType d) {
    DType c = d == DType::Complex64 ? DType::Float32 : d;
    int maxexp = -1, nmant = -1;
    if (c == DType::Float16) maxexp = 16, nmant = 10;
    if (c == DType::BFloat16) maxexp = 128, nmant = 7;
    if (c == DType::Float32) maxexp = 128, nmant = 23;
    if (c == DType::Float64) maxexp = 1024, nmant = 52;
    int bits = c == DType::Bool ? 1 : dtype_bits(c);
    return std::make_tuple(d == DType::Complex64, maxexp, nmant, bits, !is_unsigned_int(c));
  };
  if (props(a) > props(b)) return a;
  if (props(b) > props(a)) return b;
  throw Error(ErrCode::Type, std::string("lax.dot_general argument type error: ") + dtype_name(a) +
                                 ", " + dtype_name(b));
}

// An eager with_sharding_constraint to a NamedSharding over an AbstractMesh
// lays the array out over its own mesh, which must have those axes (JAX's errors).
Value over_input_mesh(const Value& leaf, const ShardingObj& target) {
  if (!leaf.is_obj(ObjKind::Array))
    throw Error(ErrCode::Value,
                "Target sharding contains a `jax.sharding.AbstractMesh` which requires the input "
                "passed should be a `jax.Array`. Got " +
                    type_name(leaf));
  const Tensor& t = leaf.as<ArrayObj>()->tensor;
  std::string shape = sharded_type_str(t->aval, {}, false);
  if (!t->sharded)
    throw Error(ErrCode::Type,
                "The sharding on the input must be a `NamedSharding` since the target sharding has "
                "an `AbstractMesh` in it. Got sharding type <class "
                "'jax.sharding.SingleDeviceSharding'> for shape " +
                    shape);
  auto shape_tuple = [](const Mesh& m) {
    std::string out = "(";
    for (int i = 0; i < m.ndim(); ++i)
      out += "('" + m.axis_names[static_cast<size_t>(i)] + "', " +
             std::to_string(m.axis_sizes[static_cast<size_t>(i)]) + "), ";
    if (m.ndim() > 1)
      out.resize(out.size() - 2);
    else if (m.ndim() == 1)
      out.pop_back();
    return out + ")";
  };
  const Mesh& have = t->sharded->mesh;
  if (have.axis_names != target.mesh.axis_names || have.axis_sizes != target.mesh.axis_sizes)
    throw Error(ErrCode::Value, "Mesh shape of the input " + shape_tuple(have) +
                                    " does not match the mesh shape of the target sharding " +
                                    shape_tuple(target.mesh) + " for shape " + shape);
  return Value::object(std::make_shared<ShardingObj>(have, target.spec));
}

// JAX runs an eager with_sharding_constraint as a jit of the identity: an
// array spread over other devices (or in another order) than the target's is
// its device-assignment error.
void check_wsc_devices(InterpreterImpl& in, const Value& leaf, const Mesh& target) {
  if (!leaf.is_obj(ObjKind::Array)) return;
  const Tensor& t = leaf.as<ArrayObj>()->tensor;
  if (!t->sharded || !t->sharded->spans_devices() ||
      t->sharded->mesh.device_ids == target.device_ids)
    return;
  auto ids = [](const std::vector<int>& v) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
    return out + "]";
  };
  std::string platform = in.platform().name();
  for (char& c : platform) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  throw Error(
      ErrCode::Value,
      "Received incompatible devices for jitted computation. Got argument x of _identity_fn "
      "with shape " +
          sharded_type_str(t->aval, {}, false) + " and with device ids " +
          ids(t->sharded->mesh.device_ids) + " on platform " + platform +
          " and explicit output sharding with device ids " + ids(target.device_ids) +
          " on platform " + platform);
}

} // namespace

namespace {

Tensor T(InterpreterImpl& in, const Value& v) { return in.to_tensor(v, Span{}); }

Tensor bind(InterpreterImpl& in, Op op, const OpAttrs& a, std::vector<Tensor> xs) {
  return in.ops().bind(op, a, xs);
}

std::vector<int64_t> ints(const Value& v, const std::string& what) {
  return value_to_int_list(v, what);
}

// dot_general's dimension_numbers: ((lhs_contracting, rhs_contracting),
// (lhs_batch, rhs_batch)).
DotDims dot_dims(const Value& v, const std::string& fn) {
  const ValueList* dn = sequence_items(v);
  const ValueList* contract = dn && dn->size() == 2 ? sequence_items((*dn)[0]) : nullptr;
  const ValueList* batch = dn && dn->size() == 2 ? sequence_items((*dn)[1]) : nullptr;
  if (!contract || !batch || contract->size() != 2 || batch->size() != 2)
    throw Error(ErrCode::Value, fn + "(): dimension_numbers must be ((lhs_contracting, "
                                     "rhs_contracting), (lhs_batch, rhs_batch))");
  DotDims d;
  d.lhs_contract = ints((*contract)[0], fn + "() lhs contracting dims");
  d.rhs_contract = ints((*contract)[1], fn + "() rhs contracting dims");
  d.lhs_batch = ints((*batch)[0], fn + "() lhs batch dims");
  d.rhs_batch = ints((*batch)[1], fn + "() rhs batch dims");
  return d;
}

// lax.bitcast_convert_type between widths, as JAX: a wider element becomes a
// trailing axis of narrower ones (least significant first: the CPU's byte
// order) and that axis, of the width ratio, is joined back. Built from
// same-width bitcasts, shifts and masks on the unsigned type of each width.
Tensor bitcast_widths(InterpreterImpl& in, Tensor x, DType to) {
  DType from = x->aval.dtype;
  const int fs = dtype_bits(from), ts = dtype_bits(to); // (int4 and uint2 are sub-byte)
  auto uint_of = [&](int bits) {
    if (from == DType::Bool || to == DType::Bool || bits > 32)
      throw Error(ErrCode::DType, std::string("bitcast_convert_type: cannot bitcast ") +
                                      dtype_name(from) + " to " + dtype_name(to));
    return int_dtype(false, bits);
  };
  DType uf = uint_of(fs), ut = uint_of(ts);
  OpAttrs cast, conv;
  auto shift = [&](Op op, const Tensor& v, int64_t bits) {
    return bind(in, op, {}, {v, np::full_like(in.ops(), v, Scalar::of_int(bits))});
  };
  if (fs > ts) {
    cast.dtype = uf;
    Tensor u = bind(in, Op::BitcastConvertType, cast, {x});
    conv.dtype = ut;
    cast.dtype = to;
    std::vector<Tensor> parts;
    for (int k = 0; k < fs / ts; ++k) {
      Tensor piece = shift(Op::ShiftRightLogical, u, int64_t{ts} * k);
      piece = bind(in, Op::ConvertElementType, conv, {piece}); // keeps the low bits
      parts.push_back(bind(in, Op::BitcastConvertType, cast, {piece}));
    }
    return np::stack(in.ops(), parts, -1);
  }
  int64_t ratio = ts / fs;
  const Shape& s = x->aval.shape;
  if (s.empty() || s.back() != ratio)
    throw Error(ErrCode::Shape, "bitcast_convert_type: converting an array of shape " +
                                    shape_str(s) + " from " + dtype_name(from) + " to " +
                                    dtype_name(to) + " needs a last axis of size " +
                                    std::to_string(ratio));
  cast.dtype = uf;
  conv.dtype = ut;
  Tensor u = bind(in, Op::ConvertElementType, conv, {bind(in, Op::BitcastConvertType, cast, {x})});
  std::vector<Tensor> parts = np::split_sections(in.ops(), u, ratio, -1);
  Tensor acc;
  for (int64_t k = 0; k < ratio; ++k) {
    Tensor piece = shift(Op::ShiftLeft,
                         np::squeeze(in.ops(), parts[static_cast<size_t>(k)], std::vector<int>{-1}),
                         int64_t{fs} * k);
    acc = k == 0 ? piece : bind(in, Op::Or, {}, {acc, piece});
  }
  cast.dtype = to;
  return bind(in, Op::BitcastConvertType, cast, {acc});
}

Value reduce_fn(InterpreterImpl& in, CallArgs& a, const char* name, Op op) {
  ArgReader r(name, a, {"operand", "axes"}, 2);
  OpAttrs at;
  at.axes = ints(r[1], std::string(name) + "() axes");
  return make_array(bind(in, op, at, {T(in, r[0])}));
}

Value arg_reduce_fn(InterpreterImpl& in, CallArgs& a, const char* name, Op op) {
  ArgReader r(name, a, {"operand", "axis", "index_dtype"}, 3);
  OpAttrs at;
  at.axis = r.get_int(1);
  at.dtype = required_dtype(r[2], std::string(name) + "() index_dtype");
  return make_array(bind(in, op, at, {T(in, r[0])}));
}

// lax's binary ops take operands of one rank whose dimensions agree or are 1
// (JAX's broadcasting_shape_rule); a scalar (a Python number, or a rank-0
// array) stands for an array of the other operand's shape and dtype.
Value binary_fn(InterpreterImpl& in, CallArgs& a, const char* name, Op op) {
  ArgReader r(name, a, {"x", "y"}, 2);
  Tensor x = T(in, r[0]), y = T(in, r[1]);
  // A 0-d operand takes the other's shape, and a weak one its dtype.
  auto typed = [&](const Tensor& s, const Tensor& like) {
    bool scalar = s->aval.ndim() == 0 && like->aval.ndim() != 0;
    return scalar && s->aval.weak ? np::astype(in.ops(), s, like->aval.dtype) : s;
  };
  auto fit = [&](const Tensor& s, const Tensor& like) {
    bool scalar = s->aval.ndim() == 0 && like->aval.ndim() != 0;
    return scalar ? np::broadcast_to(in.ops(), s, like->aval.shape) : s;
  };
  x = fit(typed(x, y), y);
  Tensor divisor = typed(y, x); // before the broadcast the op's program makes
  y = fit(divisor, x);
  const Shape &xs = x->aval.shape, &ys = y->aval.shape;
  if (xs != ys) {
    if (xs.size() != ys.size())
      throw Error(ErrCode::Type, std::string(name) +
                                     ": arrays must have the same number of dimensions, got {" +
                                     std::to_string(std::min(xs.size(), ys.size())) + ", " +
                                     std::to_string(std::max(xs.size(), ys.size())) + "}");
    Shape out = xs;
    for (size_t d = 0; d < xs.size(); ++d) {
      if (xs[d] == ys[d] || ys[d] == 1) continue;
      if (xs[d] != 1)
        throw Error(ErrCode::Type, std::string(name) +
                                       " got incompatible shapes for broadcasting: " +
                                       shape_str(xs) + ", " + shape_str(ys) + ".");
      out[d] = ys[d];
    }
    x = np::broadcast_to(in.ops(), x, out);
    y = np::broadcast_to(in.ops(), y, out);
  }
  // XLA multiplies by the reciprocal of a divisor the op's program broadcasts
  // (np::rewrite_division_here says where that program is this op's own; the
  // op is not jitted, so under jvp its tangent's division is another program
  // and the divisor has no other use).
  const AVal& d = divisor->aval;
  if (op == Op::Div && is_floating(d.dtype) && !upcast_around_fusion(d.dtype) &&
      d.size() < x->aval.size() && np::rewrite_division_here(in.ops(), false))
    return make_array(np::times_reciprocal(in.ops(), x, divisor));
  return make_array(bind(in, op, {}, {x, y}));
}

} // namespace

void add_while_loop(Value& lax);   // stdlib/while_loop.cpp
void add_jaxpr_record(Value& lax); // stdlib/jaxpr_record.cpp

void add_lax_functions(InterpreterImpl& in, Value& lax) {
  (void)in;
  add_while_loop(lax);
  add_jaxpr_record(lax);
  auto& vars = lax.as<ModuleObj>()->env->vars;
  auto def = [&](const std::string& name, NativeFn f) {
    vars[name] = make_builtin(name, std::move(f));
  };

  // a * b + c rounded once, for the stdlib's formulas that XLA's CPU backend
  // contracts into an fma (jnp.quantile's interpolation): float32, one shape.
  def("_fma", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("_fma", a, {"a", "b", "c"}, 3);
    return make_array(bind(in, Op::Fma, {}, {T(in, r[0]), T(in, r[1]), T(in, r[2])}));
  });
  def("pad", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("pad", a, {"operand", "padding_value", "padding_config"}, 3);
    Tensor x = T(in, r[0]);
    const ValueList* cfg = sequence_items(r[2]);
    if (!cfg || cfg->size() != x->aval.shape.size())
      throw Error(ErrCode::Value, "pad(): padding_config must have one (low, high, interior) "
                                  "triple per dimension of the operand (rank " +
                                      std::to_string(x->aval.ndim()) + ")");
    OpAttrs at;
    for (const Value& c : *cfg) {
      std::vector<int64_t> t = ints(c, "pad() padding_config entry");
      if (t.size() != 3)
        throw Error(ErrCode::Value, "pad(): each padding_config entry is (low, high, interior)");
      at.lo.push_back(t[0]);
      at.hi.push_back(t[1]);
      at.interior.push_back(t[2]);
    }
    Tensor v = T(in, r[1]);
    if (v->aval.dtype != x->aval.dtype) v = np::astype(in.ops(), v, x->aval.dtype);
    return make_array(bind(in, Op::Pad, at, {x, v}));
  });
  // a * b + c rounded once, for the stdlib's composites of XLA expansions
  // (lax_special.pxl): XLA's CPU backend contracts a multiply whose only use
  // is an add into an fma, so these write the fma where XLA's code has one.
  // Operands of one float dtype and shape (the callers broadcast).
  def("_fma", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("_fma", a, {"a", "b", "c"}, 3);
    Tensor x = T(in, r[0]), y = T(in, r[1]), z = T(in, r[2]);
    DType dt = x->aval.dtype;
    if (dt != DType::Float32 && dt != DType::Float64)
      return make_array(
          np::binary(in.ops(), np::BinOp::Add, np::binary(in.ops(), np::BinOp::Mul, x, y), z));
    return make_array(bind(in, Op::Fma, {}, {x, y, z}));
  });
  def("broadcast_in_dim", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("broadcast_in_dim", a, {"operand", "shape", "broadcast_dimensions", "out_sharding"},
                3);
    OpAttrs at;
    at.shape = value_to_shape(r[1], "broadcast_in_dim() shape");
    at.axes = ints(r[2], "broadcast_in_dim() broadcast_dimensions");
    at.filled = true; // (a jaxpr shows it, as JAX's)
    return make_array(bind(in, Op::BroadcastInDim, at, {T(in, r[0])}));
  });
  def("broadcast", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("broadcast", a, {"operand", "sizes"}, 2);
    Tensor x = T(in, r[0]);
    OpAttrs at;
    at.shape = value_to_shape(r[1], "broadcast() sizes");
    int64_t lead = static_cast<int64_t>(at.shape.size());
    for (int64_t d : x->aval.shape) at.shape.push_back(d);
    for (int64_t i = 0; i < x->aval.ndim(); ++i) at.axes.push_back(lead + i);
    at.filled = true;
    return make_array(bind(in, Op::BroadcastInDim, at, {x}));
  });
  def("dot_general", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r(
        "dot_general", a,
        {"lhs", "rhs", "dimension_numbers", "precision", "preferred_element_type", "out_sharding"},
        3);
    OpAttrs at;
    at.dot = dot_dims(r[2], "dot_general");
    at.dot.preferred_none = !r.has(4) || r[4].is_none();
    at.dot.precision = dot_precision(in, r.has(3) ? r[3] : Value());
    Tensor l0 = T(in, r[0]), r0 = T(in, r[1]);
    Tensor l = l0, rt = r0;
    size_t begin = jaxpr_body_size(in.ops());
    if (l->aval.dtype != rt->aval.dtype) { // both become JAX's result type
      DType d = dot_result_dtype(l->aval.dtype, rt->aval.dtype);
      l = np::astype(in.ops(), l, d);
      rt = np::astype(in.ops(), rt, d);
    }
    // preferred_element_type: the products accumulate in that type (an int8
    // dot to int32 does not wrap), as XLA computes it on CPU.
    std::optional<DType> pref;
    if (r.has(4) && !r[4].is_none())
      pref = required_dtype(r[4], "dot_general() preferred_element_type");
    if (pref && *pref != l->aval.dtype) {
      l = np::astype(in.ops(), l, *pref);
      rt = np::astype(in.ops(), rt, *pref);
    }
    jaxpr_hide_operand_converts(in.ops(), begin, {{l0, l}, {r0, rt}}); // JAX's mixed operands
    return make_array(bind(in, Op::DotGeneral, at, {l, rt}));
  });
  // lax_conv.pxl's contraction of patches with a kernel, summed in the order
  // of the library XLA's CPU backend uses for the convolution ("chain": Eigen,
  // "ynn": YNNPACK; ir/op.hpp DotOrder). Same-dtype operands.
  def("_conv_dot", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("_conv_dot", a, {"lhs", "rhs", "dimension_numbers", "order"}, 4);
    OpAttrs at;
    at.dot = dot_dims(r[2], "_conv_dot");
    std::string order = r.get_str(3);
    if (order != "ynn" && order != "chain")
      throw Error(ErrCode::Internal, "_conv_dot(): order must be 'chain' or 'ynn'");
    at.dot.order = order == "ynn" ? DotOrder::Ynn : DotOrder::Chain;
    return make_array(bind(in, Op::DotGeneral, at, {T(in, r[0]), T(in, r[1])}));
  });
  // lax_checked.pxl's select_n of a bool `which` and two cases (checked
  // there): one select_n primitive, as JAX binds it.
  def("_select", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("_select", a, {"pred", "on_true", "on_false"}, 3);
    return make_array(bind(in, Op::Select, {}, {T(in, r[0]), T(in, r[1]), T(in, r[2])}));
  });
  def("iota", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("iota", a, {"dtype", "size"}, 2);
    OpAttrs at;
    at.dtype = required_dtype(r[0], "iota() dtype");
    at.shape = {r.get_int(1)};
    return make_array(bind(in, Op::Iota, at, {}));
  });
  def("broadcasted_iota", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("broadcasted_iota", a, {"dtype", "shape", "dimension"}, 3);
    OpAttrs at;
    at.dtype = required_dtype(r[0], "broadcasted_iota() dtype");
    at.shape = value_to_shape(r[1], "broadcasted_iota() shape");
    at.axis = r.get_int(2);
    return make_array(bind(in, Op::Iota, at, {}));
  });
  static const std::pair<const char*, Op> reductions[] = {
      {"reduce_sum", Op::ReduceSum},   {"reduce_max", Op::ReduceMax}, {"reduce_min", Op::ReduceMin},
      {"reduce_prod", Op::ReduceProd}, {"reduce_and", Op::ReduceAnd}, {"reduce_or", Op::ReduceOr}};
  for (auto [name, op] : reductions)
    def(name, [name, op](InterpreterImpl& in, CallArgs& a) { return reduce_fn(in, a, name, op); });
  def("argmax",
      [](InterpreterImpl& in, CallArgs& a) { return arg_reduce_fn(in, a, "argmax", Op::Argmax); });
  def("argmin",
      [](InterpreterImpl& in, CallArgs& a) { return arg_reduce_fn(in, a, "argmin", Op::Argmin); });
  def("cumsum", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("cumsum", a, {"operand", "axis", "reverse"}, 1);
    OpAttrs at;
    Tensor x = T(in, r[0]);
    int64_t axis = r.get_int(1, 0);
    at.axis = axis < 0 ? axis + x->aval.ndim() : axis;
    at.reverse = r.get_bool(2, false);
    return make_array(bind(in, Op::Cumsum, at, {x}));
  });
  // lax._argsort(operand, axis): the stable ascending sort permutation along
  // axis in lax.sort's order (stdlib/numpy_sort.pxl builds the sorts on it).
  def("_argsort", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("_argsort", a, {"operand", "axis"}, 2);
    OpAttrs at;
    Tensor x = T(in, r[0]);
    int64_t axis = r.get_int(1, 0);
    at.axis = axis < 0 ? axis + x->aval.ndim() : axis;
    return make_array(bind(in, Op::Argsort, at, {x}));
  });
  def("rev", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("rev", a, {"operand", "dimensions"}, 2);
    OpAttrs at;
    at.axes = ints(r[1], "rev() dimensions");
    return make_array(bind(in, Op::Rev, at, {T(in, r[0])}));
  });
  def("squeeze", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("squeeze", a, {"array", "dimensions"}, 2);
    std::vector<int> dims;
    for (int64_t d : ints(r[1], "squeeze() dimensions")) dims.push_back(static_cast<int>(d));
    return make_array(np::squeeze(in.ops(), T(in, r[0]), dims));
  });
  def("expand_dims", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("expand_dims", a, {"array", "dimensions"}, 2);
    std::vector<int> dims;
    for (int64_t d : ints(r[1], "expand_dims() dimensions")) dims.push_back(static_cast<int>(d));
    return make_array(np::expand_dims(in.ops(), T(in, r[0]), dims));
  });
  def("bitcast_convert_type", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("bitcast_convert_type", a, {"operand", "new_dtype"}, 2);
    OpAttrs at;
    at.dtype = required_dtype(r[1], "bitcast_convert_type() new_dtype");
    Tensor x = T(in, r[0]);
    if (dtype_bits(x->aval.dtype) != dtype_bits(at.dtype))
      return make_array(bitcast_widths(in, x, at.dtype));
    return make_array(bind(in, Op::BitcastConvertType, at, {x}));
  });
  // The primitives themselves: lax.div rounds integers toward zero and lax.rem
  // takes the dividend's sign (jnp.floor_divide/remainder follow Python instead).
  static const std::pair<const char*, Op> prims[] = {
      {"div", Op::Div},
      {"rem", Op::Rem},
      {"shift_left", Op::ShiftLeft},
      {"shift_right_logical", Op::ShiftRightLogical},
      {"shift_right_arithmetic", Op::ShiftRightArithmetic}};
  for (auto [name, op] : prims)
    def(name, [name, op](InterpreterImpl& in, CallArgs& a) { return binary_fn(in, a, name, op); });
  // lax.pow's primitive (lax_checked.pxl checks the operands first).
  def("_pow", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("pow", a, {"x", "y"}, 2);
    return make_array(np::lax_pow(in.ops(), T(in, r[0]), T(in, r[1])));
  });
  def("integer_pow", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("integer_pow", a, {"x", "y"}, 2);
    return make_array(np::integer_pow(in.ops(), T(in, r[0]), r.get_int(1)));
  });
  // stop_gradient: the value, through a same-type bitcast, which has no
  // derivative (so grad, vjp and the transposes see a constant).
  def("stop_gradient", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("stop_gradient", a, {"x"}, 1);
    return map_tree(in, r[0], [&](const Value& leaf) {
      Tensor x = T(in, leaf);
      if (!is_inexact(x->aval.dtype)) return make_array(x);
      OpAttrs at;
      at.dtype = x->aval.dtype;
      Tensor y = bind(in, Op::BitcastConvertType, at, {x});
      if (x->aval.weak) { // JAX's stop_gradient keeps weak_type; the bitcast does not
        at.weak = true;
        y = bind(in, Op::ConvertElementType, at, {y});
      }
      return make_array(y);
    });
  });
  // JAX's internal _convert_element_type(operand, new_dtype=None, weak_type=False):
  // the conversion with the weak flag chosen (the Jacobians type their
  // entries as the outputs or inputs they derive from, weak ones included; the
  // loops give a carry its initial value's types).
  def("_convert_element_type", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("_convert_element_type", a, {"operand", "new_dtype", "weak_type"}, 1);
    Tensor x = T(in, r[0]);
    DType dt = r.has(1) && !r[1].is_none()
                   ? required_dtype(r[1], "_convert_element_type() new_dtype")
                   : x->aval.dtype;
    bool weak = r.get_bool(2, false);
    if (x->aval.dtype == dt && x->aval.weak == weak) // the same object: loops see forwarding
      return r[0].is_obj(ObjKind::Array) ? r[0] : make_array(x);
    OpAttrs at;
    at.dtype = dt;
    at.weak = weak;
    return make_array(bind(in, Op::ConvertElementType, at, {x}));
  });
  // with_sharding_constraint: lays eager arrays out as asked (device_put);
  // inside traced code it is a sharding_constraint jit's partitioner honours.
  def("with_sharding_constraint", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("with_sharding_constraint", a, {"x", "shardings"}, 2);
    auto no_none = [](const Value& target) {
      if (target.is_none())
        throw Error(ErrCode::Value,
                    "One of with_sharding_constraint arguments got sharding None which is "
                    "not allowed. Please only pass `jax.sharding.Sharding` instances.");
    };
    if (dynamic_cast<TraceContext*>(&in.ops()))
      return map_tree_with_prefix(
          in, r[0], r[1], [](const Value& v) { return v.is_none() || v.is_obj(ObjKind::Opaque); },
          "with_sharding_constraint() shardings",
          [&](const Value& leaf, const Value& target) {
            no_none(target);
            return constrain_traced(in, leaf, target, "with_sharding_constraint");
          });
    return map_tree_with_prefix(
        in, r[0], r[1], [](const Value& v) { return v.is_none() || v.is_obj(ObjKind::Opaque); },
        "with_sharding_constraint() shardings",
        [&](const Value& leaf, Value target) {
          no_none(target);
          // A bare PartitionSpec is over the mesh in context: jax.set_mesh's,
          // else the deprecated `with mesh:`'s, as JAX reads them.
          auto* spec = dynamic_cast<SpecObj*>(target.as<OpaqueObj>());
          const Value* current = in.context_mesh();
          const Mesh* ctx = current ? value_to_mesh(*current) : nullptr;
          if (!ctx) ctx = legacy_context_mesh(in);
          if (spec && !ctx) throw Error(ErrCode::Value, wsc_needs_mesh_message());
          if (spec) target = Value::object(std::make_shared<ShardingObj>(*ctx, spec->spec));
          if (auto* named = dynamic_cast<ShardingObj*>(target.as<OpaqueObj>());
              named && named->is_abstract())
            target = over_input_mesh(leaf, *named);
          if (auto* named = dynamic_cast<ShardingObj*>(target.as<OpaqueObj>());
              named && !named->single_device) {
            check_spec_names(named->mesh, named->spec, "shardings");
            check_wsc_auto_axes(in, named->mesh, named->spec);
            check_wsc_devices(in, leaf, named->mesh);
          }
          return device_put_leaf(in, leaf, target);
        });
  });
  // The linalg primitives, which stdlib/linalg_lax.pxl wraps (giving them
  // their derivatives): _linalg(name, a[, b], output=, flags...).
  def("_linalg", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("_linalg", a,
                {"name", "a", "b", "output", "left_side", "lower", "transpose_a", "unit_diagonal",
                 "full_matrices", "compute_uv", "compute_left", "compute_right", "c"},
                2);
    static const std::pair<const char*, Op> ops[] = {
        {"cholesky", Op::Cholesky},
        {"triangular_solve", Op::TriangularSolve},
        {"lu", Op::Lu},
        {"qr", Op::Qr},
        {"eigh", Op::Eigh},
        {"svd", Op::Svd},
        {"eig", Op::Eig},
        {"schur", Op::Schur},
        {"hessenberg", Op::Hessenberg},
        {"tridiagonal", Op::Tridiagonal},
        {"householder_product", Op::HouseholderProduct},
        {"geqrf", Op::Geqrf},
        {"ormqr", Op::Ormqr}};
    std::string name = r.get_str(0);
    const Op* op = nullptr;
    for (const auto& [n, o] : ops)
      if (name == n) op = &o;
    if (!op) throw Error(ErrCode::Value, "_linalg(): unknown primitive '" + name + "'");
    OpAttrs at;
    LinalgAttrs& l = at.linalg;
    l.output = static_cast<int>(r.get_int(3, 0));
    l.left_side = r.get_bool(4, false);
    l.lower = r.get_bool(5, false);
    l.transpose_a = r.get_bool(6, false);
    l.unit_diagonal = r.get_bool(7, false);
    l.full_matrices = r.get_bool(8, false);
    l.compute_uv = r.get_bool(9, false);
    l.compute_left = r.get_bool(10, false);
    l.compute_right = r.get_bool(11, false);
    Tensor x = T(in, r[1]);
    if (op_arity(*op) == 2) return make_array(bind(in, *op, at, {x, T(in, r[2])}));
    if (op_arity(*op) == 3) // ormqr's c comes as the keyword c=
      return make_array(bind(in, *op, at, {x, T(in, r[2]), T(in, r[12])}));
    return make_array(bind(in, *op, at, {x}));
  });
  vars["Precision"] = Value::object(std::make_shared<PrecisionObj>("Precision"));
}

} // namespace pxl
