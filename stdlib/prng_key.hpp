// Typed PRNG key arrays (JAX's `key<fry>` arrays, jax.random.key): an array
// whose elements are threefry2x32 keys. A key array of shape S holds its key
// data, a uint32 array of shape S + (2,), which may be traced; every sampler
// draws from that data, so the samplers serve raw and typed keys alike.
//
// For the transformations a key array is a pytree node over its data (the
// pytree code takes it apart and rebuilds it), so jit, vmap, scan, while_loop,
// cond, pmap and shard_map carry keys as they carry arrays.
#pragma once
#include <optional>

#include "lang/interp_impl.hpp"

namespace pxl {

struct KeyArrayObj : OpaqueObj {
  explicit KeyArrayObj(Value d, std::string t = "fry") : data(std::move(d)), tag(std::move(t)) {}
  // An Array, uint32[..., 2] (uint32[..., 4] for rbg keys), or (what
  // eval_shape returns for a key) a ShapeDtypeStruct describing one: an
  // abstract key array without values.
  Value data;
  // The implementation, as JAX's dtype names it (key<fry>): fry
  // (threefry2x32), rbg or urbg (unsafe_rbg), whose keys are uint32[4].
  std::string tag;
  int64_t width() const { return tag == "fry" ? 2 : 4; } // words per key
  const Tensor& tensor() const; // the data; an abstract key array's is an error
  Shape shape() const;          // the key shape: the data's without its last axis
  std::string type_name() const override { return "PRNGKeyArray"; }
  std::string repr() const override;
  bool get_attr(InterpreterImpl& in, const std::string& name, Value& out) override;
  std::vector<std::string> attr_names() const override;
  bool get_item(InterpreterImpl& in, const Value& index, Value& out) override;
  bool items(InterpreterImpl& in, ValueList& out) override;
  bool truth(InterpreterImpl&) override;
  bool apply_operator(InterpreterImpl& in, const std::string& op, const Value& other,
                      bool self_first, Value& out) override;
};

// A key array over `data` (not checked: the caller has checked it).
Value make_key_array(Value data, std::string tag = "fry");
// Whether `v` can be a key array's data: an array or a ShapeDtypeStruct.
bool is_key_data(const Value& v);
// The key array `v` is, or null.
const KeyArrayObj* as_key_array(const Value& v);
// JAX's TypeErrors for a key that is neither an array nor a key array: a
// container or None ("unexpected PRNG key type <class 'list'>"), a scalar or
// string (key data without ndim, shape and dtype).
void check_key_type(const Value& v);
// jnp.issubdtype where either side is a key dtype or jax.dtypes.prng_key /
// extended; nullopt when neither is.
std::optional<bool> key_issubdtype(const Value& a, const Value& b);
// jax.random's key helpers (_wrap_keys, _unwrap_keys), jax.dtypes.prng_key and
// extended, and the jnp functions that take key arrays (stack, concatenate,
// reshape, broadcast_to, expand_dims, squeeze, where, array, asarray), which
// wrap numpy's and run them on the key data.
void install_key_arrays(InterpreterImpl& in, const Value& np, const Value& random);

} // namespace pxl
