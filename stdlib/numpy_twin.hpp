// `numpy` (and numpy.linalg, numpy.fft): a twin of jax.numpy holding the same
// functions, made before jax.numpy's get JAX's argument checks
// (stdlib/arraylike_checks.hpp), so that numpy code converts lists as numpy
// does. Its `array`/`asarray` make numpy's host copies: an array on another
// device (a shard's data) comes to the default device, uncommitted, and so
// mixes with any device's arrays, as a numpy array does in JAX.
#pragma once
#include "lang/interp_impl.hpp"

namespace pxl {

// Makes the twin of `jnp`, registers it (numpy, numpy.linalg, numpy.fft) and
// returns it.
Value make_numpy_twin(InterpreterImpl& in, const Value& jnp);

} // namespace pxl
