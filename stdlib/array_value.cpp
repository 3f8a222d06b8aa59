// Arrays as interpreter values: conversion from Python data, indexing,
// truthiness, iteration, and the attributes/methods of Array (x.shape, x.sum(), x.at[...]).
#include <cctype>
#include <cmath>

#include "lang/args.hpp"
#include "lang/bigint.hpp"
#include "lang/methods.hpp"
#include "runtime/sharded.hpp"
#include "stdlib/convert.hpp"
#include "stdlib/jit_devices.hpp"
#include "stdlib/np.hpp"
#include "stdlib/prng_key.hpp"
#include "stdlib/sharding_rules.hpp"

namespace pxl {

namespace {

// JAX's TypeError for a string where an array is wanted (numpy reads it as a
// '<U' string of its length in characters).
std::string str_not_array(const Value& v) {
  const std::string& text = v.as<StrObj>()->value;
  size_t chars = 0;
  for (unsigned char c : text) chars += (c & 0xC0) != 0x80;
  return "Value " + repr(v) + " with dtype <U" + std::to_string(chars) +
         " is not a valid JAX array type. Only arrays of numeric types are supported by JAX.";
}

} // namespace

namespace {

// numpy's error for ragged nested sequences: the shape is regular for the
// first `dims` dimensions only.
Error inhomogeneous(const Shape& shape, size_t dims, const Span& where) {
  Shape detected(shape.begin(),
                 shape.begin() + static_cast<std::ptrdiff_t>(std::min(dims, shape.size())));
  return Error(ErrCode::Value,
               "setting an array element with a sequence. The requested array has an inhomogeneous "
               "shape after " +
                   std::to_string(dims) + " dimensions. The detected shape was " +
                   shape_str(detected) + " + inhomogeneous part.",
               where);
}

// Nested Python lists/tuples of numbers -> flat scalars + shape. leaf_depth:
// the depth of the first number seen (every number must be that deep).
void flatten_nested(InterpreterImpl& in, const Value& v, size_t depth, Shape& shape,
                    size_t& leaf_depth, std::vector<Scalar>& flat, bool& has_array, size_t& bigints,
                    const Span& where) {
  if (depth > 64) throw Error(ErrCode::Value, "array data nested too deeply", where);
  // A sequence of n items at `depth`: its length must agree with the others there.
  auto enter = [&](int64_t n) {
    if (depth >= leaf_depth) throw inhomogeneous(shape, leaf_depth, where);
    if (shape.size() == depth)
      shape.push_back(n);
    else if (shape[depth] != n)
      throw inhomogeneous(shape, depth, where);
  };
  if (const ValueList* items = sequence_items(v)) {
    enter(static_cast<int64_t>(items->size()));
    for (const Value& x : *items)
      flatten_nested(in, x, depth + 1, shape, leaf_depth, flat, has_array, bigints, where);
    return;
  }
  if (v.is_obj(ObjKind::Range)) { // a range is a sequence of Python ints (jnp.array(range(4)))
    const auto* r = v.as<RangeObj>();
    enter(r->size());
    for (int64_t i = 0; i < r->size(); ++i)
      flatten_nested(in, Value::integer(r->start + i * r->step), depth + 1, shape, leaf_depth, flat,
                     has_array, bigints, where);
    return;
  }
  if (v.is_obj(ObjKind::Array)) { // arrays inside lists are stacked (their shapes checked then)
    has_array = true;
    return;
  }
  if (v.is_none()) throw Error(ErrCode::Value, "None is not a valid value for jnp.array", where);
  if (shape.size() > depth) throw inhomogeneous(shape, depth, where);
  leaf_depth = std::min(leaf_depth, depth);
  if (v.is_bool())
    flat.push_back(Scalar::of_bool(v.b));
  else if (v.is_int())
    flat.push_back(Scalar::of_int(v.i));
  else if (v.is_float())
    flat.push_back(Scalar::of_float(v.f));
  else if (is_bigint(v)) { // as a float: only a float array can hold it (see to_tensor)
    flat.push_back(Scalar::of_float(bigint_to_double(v.as<BigIntObj>()->value)));
    ++bigints;
  } else if (v.is_obj(ObjKind::Complex))
    flat.push_back(Scalar::of_complex(v.as<ComplexObj>()->re, v.as<ComplexObj>()->im));
  else if (v.is_obj(ObjKind::Array))
    has_array = true;
  else if (v.is_obj(ObjKind::Str))
    throw Error(ErrCode::Type, str_not_array(v), where);
  else
    throw Error(ErrCode::Type, "cannot convert a " + type_name(v) + " to an array element", where);
}

} // namespace

// A Python int beyond 64 bits as an array: only a float or complex dtype can
// hold it; otherwise JAX's (numpy's) OverflowError for that case.
static Tensor bigint_to_tensor(OpContext& cx, const BigInt& v, std::optional<DType> dtype) {
  if (!dtype)
    throw Error(ErrCode::Value, "Python int " + v.to_string() + " too large to convert to int32");
  if (is_inexact(*dtype))
    return np::scalar(cx, Scalar::of_float(bigint_to_double(v)), dtype, false);
  // Below 2**64 numpy reads it as a uint64 and names the bounds it misses.
  if (!v.negative() && v.bit_length() <= 64 && *dtype != DType::Bool)
    throw Error(ErrCode::Value,
                "Python integer " + v.to_string() + " out of bounds for " + dtype_name(*dtype));
  throw Error(ErrCode::Value, "Python int too large to convert to C long");
}

namespace {

// JAX's type of a (nested) list's leaves, arrays or Python scalars.
void join_leaf_types(InterpreterImpl& in, const Value& v, const Span& where,
                     std::optional<PromotedType>& acc) {
  if (const ValueList* items = sequence_items(v)) {
    for (const Value& x : *items) join_leaf_types(in, x, where, acc);
    return;
  }
  const AVal& a = in.to_tensor(v, where)->aval;
  acc = acc ? promote_types(acc->dtype, acc->weak, a.dtype, a.weak) : PromotedType{a.dtype, a.weak};
}

// A list holding arrays, as JAX's jnp.array builds it: each element converted
// to the leaves' (never weak) dtype and given a leading axis, then
// concatenated (sixteen at a time, as JAX's tree of concatenations).
Tensor traced_list(InterpreterImpl& in, const Value& v, const Span& where,
                   std::optional<DType> dtype) {
  std::optional<PromotedType> leaves;
  join_leaf_types(in, v, where, leaves);
  DType d = dtype ? *dtype : leaves->dtype;
  std::vector<Tensor> parts;
  for (const Value& x : *sequence_items(v)) {
    Tensor t = in.to_tensor(x, where, d);
    if (t->aval.weak) t = np::astype(in.ops(), t, d);
    parts.push_back(np::expand_dims(in.ops(), t, {0}));
  }
  constexpr size_t kChunk = 16;
  while (parts.size() > kChunk) {
    std::vector<Tensor> joined;
    for (size_t i = 0; i < parts.size(); i += kChunk) {
      std::vector<Tensor> chunk(
          parts.begin() + static_cast<std::ptrdiff_t>(i),
          parts.begin() + static_cast<std::ptrdiff_t>(std::min(i + kChunk, parts.size())));
      joined.push_back(chunk.size() == 1 ? chunk[0] : np::concatenate(in.ops(), chunk, 0));
    }
    parts = std::move(joined);
  }
  return parts.size() == 1 ? parts[0] : np::concatenate(in.ops(), parts, 0);
}

} // namespace

Tensor InterpreterImpl::to_tensor(const Value& v, const Span& where, std::optional<DType> dtype) {
  try {
    if (v.is_obj(ObjKind::Array)) {
      const Tensor& t = v.as<ArrayObj>()->tensor;
      v.as<ArrayObj>()->check_live();
      return dtype && *dtype != t->aval.dtype ? np::astype(ops(), t, *dtype) : t;
    }
    if (v.is_bool()) return np::scalar(ops(), Scalar::of_bool(v.b), dtype, !dtype);
    if (v.is_int()) {
      if (!dtype && (v.i > INT32_MAX || v.i < INT32_MIN))
        throw Error(ErrCode::Value,
                    "Python int " + std::to_string(v.i) + " too large to convert to int32");
      if (dtype) np::check_python_int(v.i, *dtype);
      return np::scalar(ops(), Scalar::of_int(v.i), dtype, !dtype);
    }
    if (is_bigint(v)) return bigint_to_tensor(ops(), v.as<BigIntObj>()->value, dtype);
    if (v.is_float()) return np::scalar(ops(), Scalar::of_float(v.f), dtype, !dtype);
    if (v.is_obj(ObjKind::Complex))
      return np::scalar(ops(), Scalar::of_complex(v.as<ComplexObj>()->re, v.as<ComplexObj>()->im),
                        dtype, !dtype);
    if (sequence_items(v) || v.is_obj(ObjKind::Range)) {
      Shape shape;
      std::vector<Scalar> flat;
      bool has_array = false;
      size_t leaf_depth = SIZE_MAX, bigints = 0;
      flatten_nested(*this, v, 0, shape, leaf_depth, flat, has_array, bigints, where);
      if (bigints) { // numpy's int64 cannot hold them: only a float or complex array can
        size_t inexact = 0;
        for (const Scalar& s : flat)
          inexact += s.kind == Scalar::Kind::Float || s.kind == Scalar::Kind::Complex;
        if (dtype ? !is_inexact(*dtype) : inexact == bigints)
          throw Error(ErrCode::Value, "Python int too large to convert to C long");
      }
      if (has_array) return traced_list(*this, v, where, dtype);
      return np::from_host(ops(), flat, shape, dtype);
    }
  } catch (Error& e) {
    e.set_span_if_missing(where);
    throw;
  }
  if (as_key_array(v)) // numpy's functions do not take key arrays (JAX's dtype error)
    throw Error(ErrCode::Type, "Cannot interpret 'key<fry>' as a data type", where);
  if (v.is_obj(ObjKind::Str)) throw Error(ErrCode::Type, str_not_array(v), where);
  throw Error(ErrCode::Type, "cannot convert a " + type_name(v) + " value to an array", where);
}

// JAX's text for an index of the wrong type.
[[noreturn]] static void bad_index_type(const std::string& dtype, const Span& where) {
  throw Error(ErrCode::Type,
              "Indexer must have integer or boolean type, got indexer with type " + dtype, where);
}

// A slice entry: None, an int, or a concrete 0-d integer array; a traced one is
// JAX's "Slice entries must be static integers" IndexError.
static std::optional<int64_t> slice_entry(InterpreterImpl& in, const Value& v, const Value& slice,
                                          size_t position, const Span& where) {
  if (v.is_none()) return std::nullopt;
  if (v.is_obj(ObjKind::Array)) {
    const Tensor& t = v.as<ArrayObj>()->tensor;
    if (t->trace) {
      auto entry = [](const Value& e) {
        if (!e.is_obj(ObjKind::Array) || !e.as<ArrayObj>()->tensor->trace) return repr(e);
        const AVal& a = e.as<ArrayObj>()->tensor->aval;
        std::string type = std::string(a.weak ? "~" : "") + dtype_name(a.dtype) + "[";
        for (size_t i = 0; i < a.shape.size(); ++i)
          type += (i ? "," : "") + std::to_string(a.shape[i]);
        return "JitTracer(" + type + "])";
      };
      auto* s = slice.as<SliceObj>();
      throw Error(ErrCode::ArrayIndex,
                  "Slice entries must be static integers. Got slice(" + entry(s->start) + ", " +
                      entry(s->stop) + ", " + entry(s->step) + ") at position " +
                      std::to_string(position),
                  where);
    }
    if (t->aval.shape.empty() && is_integer(t->aval.dtype)) return in.ops().concrete(t).get(0).i;
  }
  return value_to_int(v, "slice index");
}

// JAX's eliminate_deprecated_list_indexing: a list as the whole index is a
// TypeError whose advice depends on whether it looks like a tuple of indices.
[[noreturn]] static void list_index_error(const Value& list, const Span& where) {
  bool tuple_like = false;
  for (const Value& e : list.as<ListObj>()->items)
    tuple_like = tuple_like || sequence_items(e) || e.is_none() || e.is_obj(ObjKind::Slice) ||
                 e.is_obj(ObjKind::Ellipsis) ||
                 (e.is_obj(ObjKind::Array) && !e.as<ArrayObj>()->tensor->aval.shape.empty());
  throw Error(
      ErrCode::Type,
      std::string("Using a non-tuple sequence for multidimensional indexing is not allowed; "
                  "use `arr[") +
          (tuple_like ? "tuple" : "array") +
          "(seq)]` instead of `arr[seq]`. See https://github.com/jax-ml/jax/issues/4564 "
          "for more information.",
      where);
}

// Python index value -> numpy index items.
std::vector<np::IndexItem> to_index_items(InterpreterImpl& in, const Value& index,
                                          const Span& where) {
  std::vector<np::IndexItem> items;
  // A list inside a tuple index is an index array (x[0, [1, 2]]), as in JAX; only a
  // list as the whole index is the non-tuple-sequence error.
  auto one = [&](const Value& v0, bool in_tuple, size_t position) {
    np::IndexItem it;
    Value v = v0;
    if (in_tuple && (v0.is_obj(ObjKind::List) || v0.is_obj(ObjKind::Tuple))) {
      // An empty sequence is an empty integer index (numpy's would be float).
      v = make_array(sequence_items(v0)->empty()
                         ? np::from_host(in.ops(), {}, Shape{0}, DType::Int32)
                         : in.to_tensor(v0, where));
    }
    if (v.is_bool()) { // a scalar boolean: a new axis of size 1 or 0
      it.kind = np::IndexItem::Kind::Array;
      it.array = np::scalar(in.ops(), Scalar::of_bool(v.b), DType::Bool, false);
    } else if (v.is_intlike()) {
      it.kind = np::IndexItem::Kind::Int;
      it.index = v.as_int();
    } else if (v.is_none()) {
      it.kind = np::IndexItem::Kind::NewAxis;
    } else if (v.is_obj(ObjKind::Ellipsis)) {
      it.kind = np::IndexItem::Kind::Ellipsis;
    } else if (v.is_obj(ObjKind::Slice)) {
      auto* s = v.as<SliceObj>();
      it.kind = np::IndexItem::Kind::Slice;
      it.start = slice_entry(in, s->start, v, position, where);
      it.stop = slice_entry(in, s->stop, v, position, where);
      it.step = slice_entry(in, s->step, v, position, where);
      if (it.step && *it.step == 0) throw Error(ErrCode::Value, "slice step cannot be zero", where);
    } else if (v.is_obj(ObjKind::List)) {
      list_index_error(v, where);
    } else if (v.is_obj(ObjKind::Array)) {
      Tensor t = in.to_tensor(v, where);
      if (is_floating(t->aval.dtype) || is_complex(t->aval.dtype))
        bad_index_type(dtype_name(t->aval.dtype), where);
      // A traced 0-d index (under vmap/jit) gathers like a 0-d index array.
      if (t->aval.shape.empty() && t->aval.dtype != DType::Bool && !t->trace) {
        it.kind = np::IndexItem::Kind::Int;
        it.index = in.ops().concrete(t).get(0).i;
      } else {
        it.kind = np::IndexItem::Kind::Array;
        it.array = t;
      }
    } else if (v.is_float()) {
      bad_index_type("float64", where);
    } else if (v.is_obj(ObjKind::Complex)) {
      bad_index_type("complex128", where);
    } else if (v.is_obj(ObjKind::Str)) {
      throw Error(ErrCode::Type, "JAX does not support string indexing; got idx=" + repr(v), where);
    } else {
      throw Error(ErrCode::ArrayIndex,
                  "only integers, slices (`:`), ellipsis (`...`), newaxis (`None`) and integer or "
                  "boolean arrays are valid indices. Got " +
                      str(v),
                  where);
    }
    items.push_back(std::move(it));
  };
  if (index.is_obj(ObjKind::Tuple)) {
    const ValueList& parts = index.as<TupleObj>()->items;
    for (size_t i = 0; i < parts.size(); ++i) one(parts[i], true, i);
  } else {
    one(index, false, 0);
  }
  return items;
}

// The host value of `t`, or the traced-value error located at `where`.
static const Array& concrete_at(InterpreterImpl& in, const Tensor& t, const Span& where) {
  try {
    return in.ops().concrete(t);
  } catch (Error& e) {
    e.set_span_if_missing(where);
    throw;
  }
}

Value array_get_item(InterpreterImpl& in, const Value& arr, const Value& index, const Span& where) {
  try {
    arr.as<ArrayObj>()->check_live();
    return make_array(
        np::index(in.ops(), arr.as<ArrayObj>()->tensor, to_index_items(in, index, where)));
  } catch (Error& e) {
    e.set_span_if_missing(where);
    throw;
  }
}

Value array_to_scalar(InterpreterImpl& in, const Value& arr, const Span& where) {
  const Tensor& t = arr.as<ArrayObj>()->tensor;
  if (t->aval.size() != 1)
    throw Error(ErrCode::Type,
                "only size-1 arrays can be converted to Python scalars (this array has shape " +
                    shape_str(t->aval.shape) + ")",
                where);
  const Array& a = concrete_at(in, t, where);
  Scalar s = a.get(0);
  if (a.dtype() == DType::Bool) return Value::boolean(s.i != 0);
  if (is_complex(a.dtype())) return make_complex(s.f, s.im);
  if (is_floating(a.dtype())) return Value::number(a.get_f64(0));
  return Value::integer(s.i);
}

Value array_to_python_scalar(InterpreterImpl& in, const Value& arr, const Span& where) {
  size_t ndim = arr.as<ArrayObj>()->tensor->aval.shape.size();
  if (ndim != 0)
    throw Error(ErrCode::Type,
                "Only scalar arrays can be converted to Python scalars; got arr.ndim=" +
                    std::to_string(ndim),
                where);
  return array_to_scalar(in, arr, where);
}

bool array_truthy(InterpreterImpl& in, const Value& arr, const Span& where) {
  arr.as<ArrayObj>()->check_live(where);
  const Tensor& t = arr.as<ArrayObj>()->tensor;
  if (t->aval.size() != 1)
    throw Error(ErrCode::Value,
                "The truth value of an array with more than one element is ambiguous. Use a.any() "
                "or a.all()",
                where); // JAX's text
  try {
    return concrete_at(in, t, where).get_f64(0) != 0.0;
  } catch (Error& e) {
    if (e.code() != ErrCode::ConcreteValue) throw;
    // JAX's TracerBoolConversionError, named with its text, then pxl's account.
    std::string type = std::string(dtype_name(t->aval.dtype)) + "[";
    for (size_t i = 0; i < t->aval.shape.size(); ++i)
      type += (i ? "," : "") + std::to_string(t->aval.shape[i]);
    std::string why = e.message();
    if (!why.empty()) why[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(why[0])));
    throw Error(
        ErrCode::ConcreteValue,
        "TracerBoolConversionError: Attempted boolean conversion of traced array with shape " +
            type + "]. " + why +
            "\nSee https://docs.jax.dev/en/latest/errors.html#jax.errors.TracerBoolConversionError",
        e.span(), e.hint());
  }
}

ValueList array_iterate(InterpreterImpl& in, const Value& arr, const Span& where) {
  arr.as<ArrayObj>()->check_live(where);
  const Tensor& t = arr.as<ArrayObj>()->tensor;
  if (t->aval.shape.empty()) throw Error(ErrCode::Type, "iteration over a 0-d array", where);
  // A sharded array is iterated on the host, each row put on the default
  // device, as JAX's Array.__iter__ does (device_put(self._value[i])); a fully
  // replicated one is sliced where it is (its rows stay replicated, as JAX's
  // _chunk_iter path leaves them).
  bool split = false;
  if (t->sharded && t->sharded->spans_devices())
    for (const auto& axis : t->sharded->spec.axes())
      split = split || t->sharded->mesh.axis_size(axis) > 1;
  Tensor rows = split ? make_tensor(in.ops().concrete(t)) : t;
  ValueList out;
  for (int64_t i = 0; i < t->aval.shape[0]; ++i) {
    np::IndexItem it;
    it.index = i;
    out.push_back(make_array(np::index(in.ops(), rows, {it})));
  }
  return out;
}

Tensor np_astype_value(InterpreterImpl& in, const Value& v, DType dtype, const Span& where) {
  // Python values convert straight to the dtype (jnp.int8(300) is numpy's
  // overflow error, jnp.float32(2**40) is fine), arrays through astype.
  if (!v.is_obj(ObjKind::Array)) {
    // Under jax.set_mesh JAX commits the new array to the mesh.
    Tensor t = in.to_tensor(v, where, dtype);
    return on_current_mesh(in, t, true).value_or(t);
  }
  Tensor t = in.to_tensor(v, where);
  return np::astype(in.ops(), t, dtype);
}

} // namespace pxl
