// JAX's account of a traced value that Python code needed (a
// DynamicJaxprTracer's _origin_msg): "The error occurred while tracing the
// function f at file.pxl:3 for jit. This concrete value was not available in
// Python because it depends on the value of the argument x."
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lang/diag.hpp"
#include "lang/value.hpp"

namespace pxl {

class TraceContext;

// The parameters (leaf positions) the last value found unknown depends on.
struct UnknownValueLog {
  std::vector<size_t> params;
};

// `prepare` (may be empty), then a hook on the trace that records in `log`
// which parameters a value Python needed but could not have depends on.
std::function<void(TraceContext&)> log_unknown_values(std::function<void(TraceContext&)> prepare,
                                                      std::shared_ptr<UnknownValueLog> log);

// The function a transformation's result wraps (its __wrapped__, as
// functools.wraps sets it), followed through; `fn` itself otherwise.
Value unwrapped_function(const Value& fn);

// "f at file.pxl:3" (JAX's func_src_info: the name and the first line of its
// definition, decorators included), or the callable's type name.
std::string function_source_info(const Value& fn);

// A concretisation error, or a TypeError quoting one (JAX's invalid-shape
// error for a traced dimension): an error with_trace_origin rewrites.
bool quotes_unknown_value(const Error& e);

// JAX's ConcretizationTypeError for code that needed the value of a traced
// array of type `aval` (`e`, a concretisation error, says why it is unknown):
// its head, `context` (JAX's line naming the use), then `e`'s account of the
// trace, which with_trace_origin rewrites.
Error concretization_error(const Error& e, const AVal& aval, const std::string& context);

// `e` with TraceContext's account of an unknown value ("this array is traced
// inside WHAT (its type is T): ...") replaced by JAX's origin text; names[i] is
// the i-th parameter's argument name. Other errors come back unchanged.
// `traced_for` is the transformation the text names ("" for `what`: make_jaxpr
// traces for jit in JAX).
Error with_trace_origin(const Error& e, const std::string& what, const std::string& fn_info,
                        const std::vector<std::string>& names, const UnknownValueLog& log,
                        const std::string& traced_for = "");

} // namespace pxl
