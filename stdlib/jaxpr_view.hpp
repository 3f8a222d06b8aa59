// The function make_jaxpr prints: the traced Function as its record says JAX
// shows it (lang/jaxpr_record.hpp) -- a value that prints as another replaced
// by it, and reverse mode's residuals moved up next to the primal equations
// whose rules need them, as in JAX's linearized function.
#pragma once
#include <cstddef>
#include <memory>
#include <vector>

#include "ir/function.hpp"

namespace pxl {

struct JaxprRecord;
struct JaxprReading;

struct JaxprView {
  Function fn;
  const JaxprRecord* rec = nullptr;        // the record, its instruction indices fn's
  std::unique_ptr<JaxprRecord> renumbered; // what rec points to when moves renumbered it
};

JaxprView jaxpr_view(const Function& f, const JaxprRecord* rec);

// Names the view's summed cotangents add_any in `rd` (read from view.fn).
void name_add_any(const JaxprView& view, JaxprReading& rd);

} // namespace pxl
