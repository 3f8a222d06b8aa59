// The sys module: argv (the script and its arguments), exit, stdout/stderr,
// and the constants of the platform pxl runs on.
#include <cstdint>

#include "lang/args.hpp"
#include "lang/std_streams.hpp"
#include "stdlib/module_builder.hpp"

namespace pxl {

Value make_sys_module(InterpreterImpl& in) {
  ModuleBuilder b("sys");
  ValueList argv;
  for (const std::string& a : in.options().argv) argv.push_back(make_str(a));
  if (argv.empty()) argv.push_back(make_str("")); // (an embedded interpreter: Python's default)
  b.val("argv", make_list(argv));
  b.val("exit", in.builtin("exit"));
  b.val("stdout", Value::object(std::make_shared<StdStreamObj>(false)));
  b.val("stderr", Value::object(std::make_shared<StdStreamObj>(true)));
  b.val("platform", make_str("linux"));
  b.val("byteorder", make_str("little"));
  b.val("maxsize", Value::integer(INT64_MAX));
  b.fn("getrecursionlimit", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("getrecursionlimit", a, {});
    return Value::integer(in.options().recursion_limit);
  });
  return b.value();
}

} // namespace pxl
