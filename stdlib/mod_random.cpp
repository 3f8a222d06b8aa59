// jax.random: explicit-key random numbers (threefry-2x32, bit-exact with JAX).
#include <cmath>

#include "lang/args.hpp"
#include "stdlib/convert.hpp"
#include "stdlib/module_builder.hpp"
#include "stdlib/np_philox.hpp"
#include "stdlib/prng_key.hpp"

namespace pxl {

namespace {
// The np:: samplers check raw key data (JAX's messages for bad and batched
// keys); a typed key array must be a single key, and they draw from its data.
Tensor key_arg(InterpreterImpl& in, const Value& v, const char* fn) {
  if (const KeyArrayObj* k = as_key_array(v)) {
    if (!k->shape().empty())
      throw Error(ErrCode::Value, std::string(fn) +
                                      " accepts a single key, but was given a key array of shape " +
                                      shape_str(k->shape()) + " != (). Use jax.vmap for batching.");
    return k->tensor();
  }
  check_key_type(v);
  return in.to_tensor(v, Span{});
}
// A uniform bound: a Python number (converted as JAX does, via float32) or an
// array, which may be traced.
Tensor bound_arg(InterpreterImpl& in, const ArgReader& r, size_t i, double dflt) {
  if (!r.has(i) || r[i].is_none() || r[i].is_number()) {
    double v = r.has(i) && !r[i].is_none() ? r.get_float(i) : dflt;
    return np::scalar(in.ops(), Scalar::of_float(static_cast<float>(v)), DType::Float32, false);
  }
  return in.to_tensor(r[i], Span{});
}
Shape shape_arg(const ArgReader& r, size_t i, const char* fn) {
  if (!r.has(i) || r[i].is_none()) return Shape{};
  // JAX's canonicalize_shape: a sequence of integers (or an integer).
  const Value& v = r[i];
  if (const ValueList* items = sequence_items(v)) {
    for (const Value& d : *items)
      if (!d.is_intlike())
        throw Error(ErrCode::Type,
                    "Shapes must be 1D sequences of concrete values of integer type, got " +
                        repr(v) + ".");
  }
  return value_to_shape(v, std::string(fn) + "() shape");
}
} // namespace

Value make_random_module(InterpreterImpl& in) {
  (void)in;
  ModuleBuilder b("jax.random");
  auto key_fn = [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("PRNGKey", a, {"seed"}, 1);
    return make_array(np::prng_key(in.ops(), r.get_int(0)));
  };
  b.fn("PRNGKey", key_fn);
  b.fn("key", key_fn);
  b.fn("split", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("split", a, {"key", "num"}, 1);
    return make_array(np::random_split(in.ops(), key_arg(in, r[0], "split"), r.get_int(1, 2)));
  });
  b.fn("fold_in", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("fold_in", a, {"key", "data"}, 2);
    Tensor key = key_arg(in, r[0], "fold_in");
    Tensor out = r[1].is_intlike() ? np::random_fold_in(in.ops(), key, r.get_int(1))
                                   : np::random_fold_in(in.ops(), key, in.to_tensor(r[1], Span{}));
    const KeyArrayObj* k = as_key_array(r[0]);
    return k ? make_key_array(make_array(out), k->tag) : make_array(out); // typed in, typed out
  });
  b.fn("normal", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("normal", a, {"key", "shape", "dtype"}, 1);
    return make_array(np::random_normal(in.ops(), key_arg(in, r[0], "normal"),
                                        shape_arg(r, 1, "normal"),
                                        value_to_dtype(r[2]).value_or(DType::Float32)));
  });
  b.fn("uniform", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("uniform", a, {"key", "shape", "dtype", "minval", "maxval"}, 1);
    return make_array(np::random_uniform(in.ops(), key_arg(in, r[0], "uniform"),
                                         shape_arg(r, 1, "uniform"),
                                         value_to_dtype(r[2]).value_or(DType::Float32),
                                         bound_arg(in, r, 3, 0.0), bound_arg(in, r, 4, 1.0)));
  });
  b.fn("randint", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("randint", a, {"key", "shape", "minval", "maxval", "dtype"}, 4);
    return make_array(np::random_randint(in.ops(), key_arg(in, r[0], "randint"),
                                         shape_arg(r, 1, "randint"), r.get_int(2), r.get_int(3),
                                         value_to_dtype(r[4]).value_or(DType::Int32)));
  });
  b.fn("permutation", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("permutation", a, {"key", "x"}, 2);
    if (r[1].is_intlike())
      return make_array(
          np::random_permutation(in.ops(), key_arg(in, r[0], "permutation"), r.get_int(1)));
    Tensor x = in.to_tensor(r[1], Span{});
    if (x->aval.shape.empty()) throw Error(ErrCode::Value, "permutation() of a 0-d array");
    Tensor perm =
        np::random_permutation(in.ops(), key_arg(in, r[0], "permutation"), x->aval.shape[0]);
    np::IndexItem it;
    it.kind = np::IndexItem::Kind::Array;
    it.array = perm;
    return make_array(np::index(in.ops(), x, {it}));
  });
  b.fn("bits", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("bits", a, {"key", "shape", "dtype"}, 1);
    DType dt = value_to_dtype(r[2]).value_or(DType::UInt32);
    if (dt != DType::UInt32 && dt != DType::UInt16 && dt != DType::UInt8)
      throw Error(ErrCode::Value,
                  std::string("dtype argument to `bits` must be an unsigned int dtype, got ") +
                      dtype_name(dt));
    Tensor bits = np::random_bits(in.ops(), key_arg(in, r[0], "bits"), shape_arg(r, 1, "bits"));
    // Narrower draws keep the low bits of the 32-bit hash, as JAX's partitionable bits.
    return make_array(np::astype(in.ops(), bits, dt));
  });
  // The host part of truncated_normal (stdlib/random_extra.pxl computes the
  // erf bounds with lax.erf and clamps the result).
  b.fn("_sqrt2_erfinv_uniform", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("truncated_normal", a, {"key", "shape", "dtype", "minval", "maxval"}, 5);
    return make_array(np::random_sqrt2_erfinv_uniform(
        in.ops(), key_arg(in, r[0], "truncated_normal"), shape_arg(r, 1, "truncated_normal"),
        *value_to_dtype(r[2]), bound_arg(in, r, 3, 0.0), bound_arg(in, r, 4, 1.0)));
  });
  // truncated_normal's clamp into the open interval (lower, upper): the
  // neighbours of the bounds in the dtype, as Python floats (the bounds are static).
  b.fn("_open_bounds", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("truncated_normal", a, {"lower", "upper", "dtype"}, 3);
    DType dt = *value_to_dtype(r[2]);
    return make_tuple({Value::number(np::next_toward(r.get_float(0), INFINITY, dt)),
                       Value::number(np::next_toward(r.get_float(1), -INFINITY, dt))});
  });
  // threefry2x32_p for jax.extend.random.threefry_2x32 (stdlib/jax_extend_random.pxl
  // checks the dtypes, pads and splits the counts).
  b.fn("_threefry2x32_p", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("threefry2x32", a, {"k1", "k2", "x1", "x2"}, 4);
    auto out = np::threefry2x32(in.ops(), in.to_tensor(r[0], Span{}), in.to_tensor(r[1], Span{}),
                                in.to_tensor(r[2], Span{}), in.to_tensor(r[3], Span{}));
    return make_tuple({make_array(out[0]), make_array(out[1])});
  });
  // XLA's Philox words for lax.rng_bit_generator (stdlib/lax_rng.pxl checks
  // the arguments and shapes the words): (new_key, uint32[n]).
  b.fn("_philox_words", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("rng_bit_generator", a, {"key", "n"}, 2);
    auto [key, words] = np::philox_words(in.ops(), in.to_tensor(r[0], Span{}), r.get_int(1));
    return make_tuple({make_array(key), make_array(words)});
  });
  return b.value();
}

} // namespace pxl
