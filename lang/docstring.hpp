// Python's docstrings: a string literal as the first statement of a def's
// body or of a module is its __doc__.
#pragma once
#include "lang/value.hpp"

namespace pxl {

// The block's docstring as a str value, or None when it has none.
inline Value docstring(const Block* body) {
  if (body && !body->empty() && (*body)[0]->kind == StmtKind::Expr &&
      (*body)[0]->value->kind == ExprKind::StrLit)
    return make_str((*body)[0]->value->name);
  return Value();
}

} // namespace pxl
