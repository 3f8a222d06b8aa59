// jax.lax's complex-number primitives (complex, real, imag, conj) and lax.fft
// with lax.FftType. jnp's complex helpers and jnp.fft are written in pxl on
// top of these (numpy_elementwise.pxl, numpy_fft.pxl).
#include "lang/args.hpp"
#include "stdlib/convert.hpp"
#include "stdlib/np_internal.hpp"

namespace pxl {

namespace {

constexpr const char* kFftNames[] = {"FFT", "IFFT", "RFFT", "IRFFT"};

// A member of lax.FftType (repr "<FftType.RFFT: 2>"); the class itself has
// value -1 and gives the members as attributes.
struct FftTypeObj : OpaqueObj {
  int value;
  explicit FftTypeObj(int v) : value(v) {}
  std::string type_name() const override { return value < 0 ? "EnumType" : "FftType"; }
  std::string repr() const override {
    if (value < 0) return "<enum 'FftType'>";
    return std::string("<FftType.") + kFftNames[value] + ": " + std::to_string(value) + ">";
  }
  std::string str() const override {
    return value < 0 ? repr() : std::to_string(value); // an IntEnum prints its value
  }
  bool equals(const OpaqueObj& o) const override {
    auto* f = dynamic_cast<const FftTypeObj*>(&o);
    return f && f->value == value;
  }
  bool get_attr(InterpreterImpl&, const std::string& attr, Value& out) override {
    if (value >= 0) {
      if (attr == "name") return out = make_str(kFftNames[value]), true;
      if (attr == "value") return out = Value::integer(value), true;
      return false;
    }
    for (int i = 0; i < 4; ++i)
      if (attr == kFftNames[i]) return out = Value::object(std::make_shared<FftTypeObj>(i)), true;
    return false;
  }
  std::vector<std::string> attr_names() const override {
    if (value >= 0) return {"name", "value"};
    return {"FFT", "IFFT", "IRFFT", "RFFT"};
  }
};

int fft_type_of(const Value& v) {
  if (v.is_obj(ObjKind::Opaque))
    if (auto* f = dynamic_cast<const FftTypeObj*>(v.as<OpaqueObj>()); f && f->value >= 0)
      return f->value;
  // JAX's _str_to_fft_type: the lower or upper case name only.
  if (v.is_obj(ObjKind::Str)) {
    const std::string& s = v.as<StrObj>()->value;
    for (int i = 0; i < 4; ++i) {
      std::string lower = kFftNames[i];
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (s == kFftNames[i] || s == lower) return i;
    }
    throw Error(ErrCode::Value, "Unknown FFT type '" + s + "'");
  }
  throw Error(ErrCode::Type, "Unknown FFT type value '" + str(v) + "'");
}

Tensor T(InterpreterImpl& in, const Value& v) { return in.to_tensor(v, Span{}); }

Tensor bind1(InterpreterImpl& in, Op op, const Tensor& x) {
  Tensor xs[] = {x};
  return in.ops().bind(op, {}, xs);
}

} // namespace

Tensor lax_complex(OpContext& cx, const Tensor& re, const Tensor& im) {
  // Both parts become float32 (x64 is off) of one broadcast shape; the result
  // is weak when both parts are.
  PromotedType p = promote_types(re->aval.dtype, re->aval.weak, im->aval.dtype, im->aval.weak);
  if (is_complex(p.dtype))
    throw Error(ErrCode::DType, "complex: the real and imaginary parts must be real, got " +
                                    std::string(dtype_name(re->aval.dtype)) + " and " +
                                    dtype_name(im->aval.dtype));
  Shape s = np::detail::broadcast_shapes("complex", re->aval.shape, im->aval.shape);
  Tensor x =
      np::detail::broadcast(cx, np::detail::convert(cx, re, DType::Float32, p.weak), s, "complex");
  Tensor y =
      np::detail::broadcast(cx, np::detail::convert(cx, im, DType::Float32, p.weak), s, "complex");
  Tensor xs[] = {x, y};
  return cx.bind(Op::Complex, {}, xs);
}

void add_lax_complex(Value& lax) {
  auto& vars = lax.as<ModuleObj>()->env->vars;
  auto def = [&](const std::string& name, NativeFn f) {
    vars[name] = make_builtin(name, std::move(f));
  };
  def("complex", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("complex", a, {"x", "y"}, 2);
    return make_array(lax_complex(in.ops(), T(in, r[0]), T(in, r[1])));
  });
  for (auto [name, op] : {std::pair{"real", Op::Real}, std::pair{"imag", Op::Imag}}) {
    std::string fn = name;
    Op part = op;
    def(fn, [fn, part](InterpreterImpl& in, CallArgs& a) {
      ArgReader r(fn, a, {"x"}, 1);
      Tensor x = T(in, r[0]);
      if (!is_complex(x->aval.dtype))
        throw Error(ErrCode::DType, fn + " does not accept dtype " + dtype_name(x->aval.dtype) +
                                        ". Accepted dtypes are subtypes of complexfloating.");
      return make_array(bind1(in, part, x));
    });
  }
  def("conj", [](InterpreterImpl& in, CallArgs& a) {
    // lax.conj of a real array is that array as complex (JAX).
    ArgReader r("conj", a, {"x"}, 1);
    Tensor x = T(in, r[0]);
    DType d = x->aval.dtype;
    if (!is_complex(d) && d != DType::Float32 && d != DType::Float64)
      throw Error(ErrCode::Type, std::string("conj does not accept dtype ") + dtype_name(d) +
                                     ". Accepted dtypes are subtypes of float32, complexfloating, "
                                     "float64.");
    if (!is_complex(d))
      return make_array(np::detail::convert(in.ops(), x, DType::Complex64, x->aval.weak));
    return make_array(bind1(in, Op::Conj, x));
  });
  vars["FftType"] = Value::object(std::make_shared<FftTypeObj>(-1));
  def("fft", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("fft", a, {"x", "fft_type", "fft_lengths"}, 3);
    Tensor x = T(in, r[0]);
    OpAttrs at;
    at.axis = fft_type_of(r[1]);
    at.shape = value_to_int_list(r[2], "fft() fft_lengths");
    // As JAX: RFFT takes a real operand (made float32), the others a complex one.
    if (at.axis == 2) {
      if (is_complex(x->aval.dtype))
        throw Error(ErrCode::DType, "only real valued inputs supported for rfft");
      // Integers and bools become float32; a 16-bit float stays and is refused.
      if (x->aval.dtype == DType::Float16 || x->aval.dtype == DType::BFloat16)
        throw Error(ErrCode::Value, std::string("RFFT input must be float32 or float64, got ") +
                                        dtype_name(x->aval.dtype));
      if (x->aval.dtype != DType::Float32)
        x = np::detail::convert(in.ops(), x, DType::Float32, false);
    } else if (!is_complex(x->aval.dtype)) {
      x = np::detail::convert(in.ops(), x, DType::Complex64, false);
    }
    // No transformed axes (JAX's fft_lengths=()): the operand as converted.
    if (at.shape.empty()) return make_array(x);
    Tensor xs[] = {x};
    return make_array(in.ops().bind(Op::Fft, at, xs));
  });
}

} // namespace pxl
