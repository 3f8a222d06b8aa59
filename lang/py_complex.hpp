// Python's complex numbers on the host: arithmetic, the complex() builtin and
// the attributes real/imag/conjugate, with CPython's algorithms (its division,
// integer powers by repeated squaring) so results print like Python's.
#pragma once
#include <complex>
#include <optional>

#include "lang/ast.hpp"
#include "lang/value.hpp"

namespace pxl {

class InterpreterImpl;

inline bool is_py_complex(const Value& v) { return v.is_obj(ObjKind::Complex); }
// A number or a Python complex as a complex.
std::optional<std::complex<double>> as_py_complex(const Value& v);
// `a op b` where one side is a Python complex and the other a number or a
// complex; throws Python's TypeError/ZeroDivisionError.
Value complex_binary(BinOpKind op, const Value& a, const Value& b, const Span& where);
// complex(), complex(x), complex(real, imag).
Value complex_builtin(InterpreterImpl& in, CallArgs& a);
// z.real, z.imag, z.conjugate; false when `name` is not one.
bool complex_attr(const Value& z, const std::string& name, Value& out);

} // namespace pxl
