// sys.stdout and sys.stderr: the interpreter's output streams as objects with
// write() and flush(), which print(..., file=...) also accepts.
#pragma once
#include "lang/value.hpp"

namespace pxl {

struct StdStreamObj : OpaqueObj {
  explicit StdStreamObj(bool is_err) : is_err(is_err) {}
  bool is_err; // stderr (else stdout)
  std::string type_name() const override { return "TextIOWrapper"; }
  std::string repr() const override {
    return is_err ? "<_io.TextIOWrapper name='<stderr>' mode='w' encoding='utf-8'>"
                  : "<_io.TextIOWrapper name='<stdout>' mode='w' encoding='utf-8'>";
  }
  bool get_attr(InterpreterImpl& in, const std::string& name, Value& out) override;
  std::vector<std::string> attr_names() const override { return {"flush", "name", "write"}; }
};

} // namespace pxl
