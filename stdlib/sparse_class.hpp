// The classes of jax.experimental.sparse (BCOO, BCSR), made for
// stdlib/sparse.pxl: named tuples whose last field is the pytree aux data (a
// dict holding 'shape', as JAX's tree_flatten returns), with attributes and
// operators written in pxl and JAX's repr (BCOO(float32[2, 3], nse=3)).
#pragma once

namespace pxl {

struct ModuleBuilder;

// types._sparse_class(name, field_names, attrs, ops, class_attrs, init): see
// NamedTupleType (stdlib/namedtuple.hpp) for attrs and ops; class_attrs are
// the class's own attributes (BCOO.fromdense); calling the class calls init,
// and its attribute _new(*fields) makes an instance.
void add_sparse_class_builtin(ModuleBuilder& types);

} // namespace pxl
