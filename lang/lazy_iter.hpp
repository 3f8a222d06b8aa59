// Iterators that make their items one at a time: iter(x) over a listed
// container, and itertools' count, cycle and repeat, which never end. Loops,
// zip(), next() and itertools.islice take their items one at a time;
// listing an endless one (list(), sorted(), ...) is an error, not a hang.
#pragma once
#include "lang/value.hpp"

namespace pxl {

struct LazyIterObj : OpaqueObj {
  // The next item; false when none is left.
  virtual bool next(InterpreterImpl& in, Value& out) = 0;
};

// The LazyIterObj in v, or null.
inline LazyIterObj* as_lazy_iter(const Value& v) {
  return v.is_obj(ObjKind::Opaque) ? dynamic_cast<LazyIterObj*>(v.as<OpaqueObj>()) : nullptr;
}

// itertools.count(start, step): start, start + step, ... (by repeated +).
Value make_count_iter(Value start, Value step);
// itertools.cycle(items): the items over and over (none: an empty iterator).
Value make_cycle_iter(ValueList items);
// itertools.repeat(obj) without `times`: obj forever.
Value make_repeat_iter(Value obj);

} // namespace pxl
