// Helpers shared by the np layer's files (stdlib/np_*.cpp): thin wrappers that
// bind one primitive each, plus numpy's axis and broadcasting conventions.
// Everything goes through OpContext so the same code runs eagerly and traced.
#pragma once
#include <initializer_list>
#include <string>
#include <vector>

#include "ir/aval_text.hpp"
#include "lang/diag.hpp"
#include "stdlib/np.hpp"

namespace pxl::np::detail {

inline const AVal& av(const Tensor& t) { return t->aval; }

Tensor bind(OpContext& cx, Op op, const OpAttrs& attrs, std::initializer_list<Tensor> in);

// 0-d strong constant of `dtype` holding v.
Tensor constant(OpContext& cx, const Scalar& v, DType dtype, bool weak = false);
// x converted to (dtype, weak); x itself if it already is.
Tensor convert(OpContext& cx, const Tensor& x, DType dtype, bool weak);
// A 0-d x broadcast (or any x broadcast numpy-style) to `shape`.
Tensor broadcast(OpContext& cx, const Tensor& x, const Shape& shape, const char* fn);
Tensor reshape_to(OpContext& cx, const Tensor& x, const Shape& shape);
// x without its size-1 dimensions `dims` (sorted): a reshape that records them
// (attrs.axes), so that make_jaxpr shows JAX's squeeze[dimensions=...].
Tensor squeeze_dims(OpContext& cx, const Tensor& x, const std::vector<int64_t>& dims);
// x with size-1 dimensions inserted at the result's positions `new_dims`
// (sorted; expand_dims, x[None], keepdims): a reshape that records them
// (attrs.perm), so that make_jaxpr shows JAX's broadcast_in_dim.
Tensor expand_dims_at(OpContext& cx, const Tensor& x, const std::vector<int64_t>& new_dims);
Tensor transpose_to(OpContext& cx, const Tensor& x, const std::vector<int64_t>& perm);
Tensor reduce_axes(OpContext& cx, Op op, const Tensor& x, const std::vector<int64_t>& axes);
Tensor iota(OpContext& cx, DType dtype, const Shape& shape, int64_t axis);
Tensor ravel(OpContext& cx, const Tensor& x);
// `full` with an explicit weak flag.
// user_op: the program's jnp.full/zeros/ones, which a jaxpr shows (OpAttrs::filled).
Tensor fill(OpContext& cx, const Shape& shape, const Scalar& v, DType dtype, bool weak,
            bool user_op = false);

// numpy broadcasting of two shapes; the error names `fn` and both shapes.
Shape broadcast_shapes(const char* fn, const Shape& a, const Shape& b);
// numpy broadcasting of several shapes; the error is JAX's, naming them all
// ("Incompatible shapes for broadcasting: shapes=[(2, 3), (4,)]").
Shape broadcast_shapes_all(const std::vector<Shape>& shapes);
// A possibly negative axis made non-negative; out of range raises JAX's
// canonicalize_axis text, which names the axis and ndim but no function.
int64_t norm_axis(int64_t axis, int ndim);
// Axes (all of them when absent) normalised and sorted; a repeat is an error.
std::vector<int64_t> norm_axes(const Axes& axes, int ndim);

// Promotes tensors to their common (dtype, weak) type, as jnp's promote_dtypes.
PromotedType result_type(const std::vector<Tensor>& xs);
// Like JAX's promote_dtypes_inexact: ints/bool become float32 (keeping weak).
PromotedType to_inexact(PromotedType p);

std::string dims_str(const std::vector<int64_t>& v);

// JAX's TypeErrors from the lax primitive a jnp function lowers to, which checks
// its operand dtypes: `lax_fn` names the primitive, `accepted` its dtype classes
// (the second form names the operand's position, as binary primitives do).
[[noreturn]] void lax_dtype_error(const char* lax_fn, DType d, const char* accepted);
[[noreturn]] void lax_dtype_error0(const char* lax_fn, DType d, const char* accepted);

// Word i of a PRNG key's uint32 data as a uint32 array of `shape` (stdlib/np_random.cpp).
Tensor key_word(OpContext& cx, const Tensor& key, int64_t i, const Shape& shape);

} // namespace pxl::np::detail
