// Python's slice assignment and deletion on lists: `a[i:j] = it`,
// `a[::2] = it` (same length), `del a[i:j:k]`.
#pragma once
#include "lang/value.hpp"

namespace pxl {

class InterpreterImpl;

// a[slice] = items: a plain slice (step 1) takes any number of items, an
// extended one exactly as many as it selects (Python's ValueError otherwise).
void assign_list_slice(InterpreterImpl& in, ListObj& list, const SliceObj& s, ValueList items,
                       const Span& where);
// del a[slice].
void delete_list_slice(InterpreterImpl& in, ListObj& list, const SliceObj& s, const Span& where);

} // namespace pxl
