#include "lang/std_streams.hpp"

#include "lang/args.hpp"
#include "lang/interp_impl.hpp"

namespace pxl {

bool StdStreamObj::get_attr(InterpreterImpl& in, const std::string& name, Value& out) {
  (void)in;
  bool err = is_err;
  if (name == "write") {
    out = make_builtin("write", [err](InterpreterImpl& in, CallArgs& a) {
      ArgReader r("write", a, {"s"}, 1);
      if (!r[0].is_obj(ObjKind::Str))
        throw Error(ErrCode::Type, "write() argument must be str, not " + pxl::type_name(r[0]));
      const std::string& s = r[0].as<StrObj>()->value;
      (err ? in.err() : in.out()) << s;
      return Value::integer(in.length(r[0], Span{}));
    });
    return true;
  }
  if (name == "flush") {
    out = make_builtin("flush", [err](InterpreterImpl& in, CallArgs& a) {
      ArgReader r("flush", a, {});
      (err ? in.err() : in.out()).flush();
      return Value();
    });
    return true;
  }
  if (name == "name") return out = make_str(err ? "<stderr>" : "<stdout>"), true;
  return false;
}

} // namespace pxl
