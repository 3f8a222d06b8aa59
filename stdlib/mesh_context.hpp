// jax.sharding.use_abstract_mesh and AbstractMesh.update_axis_types
// (stdlib/mesh_context.cpp).
#pragma once

#include <string>

#include "lang/value.hpp"
#include "runtime/mesh.hpp"

namespace pxl {

// AbstractMesh.update_axis_types bound to `mesh` (on `device_kind`).
Value update_axis_types_method(const Mesh& mesh, const std::string& device_kind);
// A jax.sharding.AxisType value (JAX's TypeError naming `fn` otherwise).
AxisType axis_type_arg(const Value& v, const char* fn);
// jax.sharding.use_abstract_mesh(abstract_mesh): a context manager.
Value make_use_abstract_mesh(InterpreterImpl& in, CallArgs& a);

} // namespace pxl
