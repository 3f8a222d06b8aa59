// jnp.set_printoptions / jnp.get_printoptions: numpy's print options, which JAX's
// array printing follows, kept on the interpreter (InterpreterImpl::print_options)
// and read by print/str/repr/f-strings. jnp.printoptions, the context manager, is
// written in pxl over these two (stdlib/numpy_rest.pxl).
#include <cmath>

#include "lang/args.hpp"
#include "lang/interp_impl.hpp"
#include "stdlib/module_builder.hpp"

namespace pxl {

namespace {

Value options_dict(const PrintOptions& o) {
  auto d = std::make_shared<DictObj>();
  auto set = [&](const char* k, Value v) { d->set(make_str(k), std::move(v)); };
  set("edgeitems", Value::integer(o.edgeitems));
  set("threshold", Value::integer(o.threshold));
  set("floatmode", make_str(o.floatmode));
  set("precision", Value::integer(o.precision));
  set("suppress", Value::boolean(o.suppress));
  set("linewidth", Value::integer(o.linewidth));
  set("nanstr", make_str(o.nanstr));
  set("infstr", make_str(o.infstr));
  set("sign", make_str(std::string(1, o.sign)));
  set("formatter", Value());
  set("legacy", Value::boolean(false));
  set("override_repr", Value());
  return Value::object(d);
}

// numpy's _none_or_positive_arg: a non-negative integer.
int64_t non_negative(const ArgReader& r, size_t i) {
  if (!r[i].is_intlike()) throw Error(ErrCode::Type, r.param(i) + " must be an integer");
  int64_t v = r.get_int(i);
  if (v < 0) throw Error(ErrCode::Value, r.param(i) + " must be >= 0");
  return v;
}

Value set_printoptions(InterpreterImpl& in, CallArgs& a) {
  ArgReader r("set_printoptions", a,
              {"precision", "threshold", "edgeitems", "linewidth", "suppress", "nanstr", "infstr",
               "formatter", "sign", "floatmode", "legacy", "override_repr"});
  auto given = [&](size_t i) { return r.has(i) && !r[i].is_none(); };
  // Checked in full before any option changes, as numpy's _make_options_dict.
  PrintOptions o = in.print_options();
  if (given(9)) {
    std::string m = r.get_str(9);
    if (m != "fixed" && m != "unique" && m != "maxprec" && m != "maxprec_equal")
      throw Error(
          ErrCode::Value,
          "floatmode option must be one of \"fixed\", \"unique\", \"maxprec\", \"maxprec_equal\"");
    o.floatmode = m;
  }
  if (given(8)) {
    std::string s = r[8].is_obj(ObjKind::Str) ? r.get_str(8) : "";
    if (s != "-" && s != "+" && s != " ")
      throw Error(ErrCode::Value, "sign option must be one of ' ', '+', or '-'");
    o.sign = s[0];
  }
  if (given(1)) {
    if (!r[1].is_number()) throw Error(ErrCode::Type, "threshold must be numeric");
    double t = r.get_float(1);
    if (std::isnan(t))
      throw Error(ErrCode::Value,
                  "threshold must be non-NAN, try sys.maxsize for untruncated representation");
    o.threshold = t >= 9.2e18 ? INT64_MAX : static_cast<int64_t>(t);
  }
  if (given(0)) o.precision = static_cast<int>(std::min<int64_t>(non_negative(r, 0), 1000));
  if (given(2)) o.edgeitems = non_negative(r, 2);
  if (given(3)) o.linewidth = static_cast<int>(std::min<int64_t>(non_negative(r, 3), 1 << 20));
  if (given(4)) o.suppress = r.get_bool(4, false);
  if (given(5)) o.nanstr = r.get_str(5);
  if (given(6)) o.infstr = r.get_str(6);
  if (given(7))
    throw Error(ErrCode::Unsupported, "set_printoptions: formatter= is not supported by pxl");
  if (given(10) && !(r[10].is_bool() && !r[10].b))
    throw Error(ErrCode::Unsupported,
                "set_printoptions: legacy printing modes are not supported by pxl");
  if (given(11))
    throw Error(ErrCode::Unsupported, "set_printoptions: override_repr= is not supported by pxl");
  in.print_options() = o;
  return Value();
}

// numpy's array_str/array_repr options over the interpreter's print options.
PrintOptions with_overrides(const ArgReader& r, PrintOptions o) {
  if (r.has(1) && !r[1].is_none()) o.linewidth = static_cast<int>(r.get_int(1));
  if (r.has(2) && !r[2].is_none()) o.precision = static_cast<int>(non_negative(r, 2));
  if (r.has(3) && !r[3].is_none()) o.suppress = r.get_bool(3, false);
  return o;
}

// np.array_str / np.array_repr, which jnp's are: numpy's layout for the array's
// values, with the array's class name in the repr.
Value array_text(InterpreterImpl& in, CallArgs& a, bool repr) {
  const char* name = repr ? "array_repr" : "array_str";
  ArgReader r(name, a, {"a", "max_line_width", "precision", "suppress_small"}, 1);
  Array x = in.ops().concrete(in.to_tensor(r[0], Span{}));
  PrintOptions o = with_overrides(r, in.print_options());
  if (repr) return make_str(numpy_array_repr(x, "ArrayImpl", o));
  if (x.ndim() == 0) // numpy indexes a 0-d array as an ndarray, which a jax.Array is not
    throw Error(ErrCode::Type, "descriptor '__getitem__' requires a 'numpy.ndarray' object but "
                               "received a 'jaxlib._jax.ArrayImpl'");
  return make_str(array_str(x, o));
}

} // namespace

void add_print_options(ModuleBuilder& np) {
  np.fn("set_printoptions", set_printoptions);
  np.fn("get_printoptions", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("get_printoptions", a, {});
    return options_dict(in.print_options());
  });
  np.fn("_array_str", [](InterpreterImpl& in, CallArgs& a) { return array_text(in, a, false); });
  np.fn("_array_repr", [](InterpreterImpl& in, CallArgs& a) { return array_text(in, a, true); });
}

} // namespace pxl
