// jax.dtypes.float0 and float0 values (see float0.hpp).
#include "stdlib/float0.hpp"

#include "lang/args.hpp"
#include "lang/interp_impl.hpp"
#include "stdlib/module_builder.hpp"
#include "stdlib/np.hpp"

namespace pxl {

namespace {

struct Float0DType : OpaqueObj {
  std::string type_name() const override { return "dtype[void]"; }
  std::string repr() const override { return "dtype([('float0', 'V')])"; }
  std::string str() const override { return "[('float0', 'V')]"; }
  bool equals(const OpaqueObj& other) const override {
    return dynamic_cast<const Float0DType*>(&other);
  }
  bool get_attr(InterpreterImpl&, const std::string& attr, Value& out) override {
    if (attr == "name") return out = make_str("void"), true;
    if (attr == "kind") return out = make_str("V"), true;
    if (attr == "itemsize") return out = Value::integer(0), true;
    return false;
  }
  std::vector<std::string> attr_names() const override { return {"itemsize", "kind", "name"}; }
};

// numpy's array2string layout (numpy/_core/arrayprint.py _formatArray, no
// summarization) of an array whose every element prints as `(b'',)`.
struct Layout {
  const std::vector<int64_t>& shape;
  std::string separator;
  size_t line_width;

  static void extend(std::string& s, std::string& line, const std::string& word, size_t width,
                     const std::string& next_prefix) {
    bool wrap = line.size() + word.size() > width && line.size() > next_prefix.size();
    if (wrap) {
      size_t end = line.find_last_not_of(' ');
      s += line.substr(0, end == std::string::npos ? 0 : end + 1) + "\n";
      line = next_prefix;
    }
    line += word;
  }

  std::string rec(size_t axis, const std::string& hanging, size_t width) const {
    static const std::string elem = "(b'',)";
    size_t left = shape.size() - axis;
    if (left == 0) return elem;
    std::string next_hanging = hanging + " ";
    size_t next_width = width - 1;
    int64_t n = shape[axis];
    std::string sep_r = separator.substr(0, separator.find_last_not_of(' ') + 1);
    std::string s;
    if (left == 1) {
      size_t elem_width = width - std::max<size_t>(sep_r.size(), 1);
      std::string line = hanging;
      for (int64_t i = 0; i < n; ++i) {
        extend(s, line, rec(axis + 1, next_hanging, next_width), elem_width, hanging);
        if (i + 1 < n) line += separator;
      }
      s += line;
    } else {
      std::string line_sep = sep_r + std::string(left - 1, '\n');
      for (int64_t i = 0; i < n; ++i) {
        s += hanging + rec(axis + 1, next_hanging, next_width);
        if (i + 1 < n) s += line_sep;
      }
    }
    return "[" + s.substr(hanging.size()) + "]";
  }
};

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

struct Float0Array : OpaqueObj {
  std::vector<int64_t> shape;
  int64_t size() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  std::string type_name() const override { return "TypedNdArray"; }
  std::string str() const override {
    if (size() == 0) return "[]";
    return Layout{shape, " ", 75}.rec(0, " ", 75);
  }
  // JAX's TypedNdArray.__repr__ (jax/_src/literals.py).
  std::string repr() const override {
    const std::string prefix = "TypedNdArray(", dtype_str = "dtype=void)";
    std::string s = size() == 0
                        ? "[], shape=" + shape_text(shape)
                        : Layout{shape, ", ", 74}.rec(0, std::string(prefix.size() + 1, ' '), 74);
    size_t nl = s.rfind('\n');
    size_t last = nl == std::string::npos ? s.size() + 2 : s.size() - nl + 1;
    std::string sep = last + dtype_str.size() + 1 > 75 ? std::string(prefix.size(), ' ') : " ";
    return prefix + s + "," + sep + dtype_str;
  }
  bool get_attr(InterpreterImpl&, const std::string& attr, Value& out) override {
    if (attr == "shape") {
      ValueList dims;
      for (int64_t d : shape) dims.push_back(Value::integer(d));
      return out = make_tuple(dims), true;
    }
    if (attr == "dtype") return out = float0_dtype(), true;
    if (attr == "ndim") return out = Value::integer(static_cast<int64_t>(shape.size())), true;
    if (attr == "size") return out = Value::integer(size()), true;
    // Shape-only methods work, as on JAX's float0 arrays.
    if (attr == "reshape") {
      int64_t n = size();
      return out = make_builtin("reshape",
                                [n](InterpreterImpl&, CallArgs& a) {
                                  std::vector<int64_t> s;
                                  for (const Value& v : a.pos) {
                                    std::vector<int64_t> part = value_to_int_list(v, "reshape");
                                    s.insert(s.end(), part.begin(), part.end());
                                  }
                                  int64_t known = 1, unknown = -1;
                                  for (size_t i = 0; i < s.size(); ++i)
                                    if (s[i] < 0)
                                      unknown = static_cast<int64_t>(i);
                                    else
                                      known *= s[i];
                                  if (unknown >= 0 && known > 0)
                                    s[static_cast<size_t>(unknown)] = n / known;
                                  return float0_zeros(s);
                                }),
             true;
    }
    if (attr == "transpose" || attr == "T") {
      std::vector<int64_t> t(shape.rbegin(), shape.rend());
      if (attr == "T") return out = float0_zeros(t), true;
      return out = make_builtin("transpose",
                                [t](InterpreterImpl&, CallArgs&) { return float0_zeros(t); }),
             true;
    }
    return false;
  }
  std::vector<std::string> attr_names() const override {
    return {"dtype", "ndim", "reshape", "shape", "size", "transpose"};
  }
  // float0 == float0 (numpy's elementwise comparison: all equal); any
  // arithmetic is JAX's TypeError.
  bool apply_operator(InterpreterImpl& in, const std::string& op, const Value& other, bool,
                      Value& out) override {
    if (op == "eq" || op == "ne") {
      bool same = is_float0(other) && other.as<Float0Array>()->shape == shape;
      bool v = (op == "eq") == same;
      out = shape.empty() ? Value::boolean(v)
                          : make_array(np::full(in.ops(), shape, Scalar::of_bool(v), DType::Bool));
      return true;
    }
    static const std::pair<const char*, const char*> names[] = {
        {"add", "add"},   {"sub", "subtract"}, {"mul", "multiply"}, {"truediv", "true_divide"},
        {"pow", "power"}, {"neg", "negative"}, {"matmul", "matmul"}};
    for (auto [dunder, ufunc] : names)
      if (op == dunder)
        throw Error(ErrCode::Type,
                    std::string("Called ") + ufunc +
                        " with a float0 array. float0s do not support any operations by design "
                        "because they are not compatible with non-trivial vector spaces. No "
                        "implicit dtype conversion is done. You can use np.zeros_like(arr, "
                        "dtype=np.float) to cast a float0 array to a regular zeros array. \n"
                        "If you didn't expect to get a float0 you might have accidentally taken a "
                        "gradient with respect to an integer argument.");
    return false;
  }
};

} // namespace

Value float0_dtype() { return Value::object(std::make_shared<Float0DType>()); }

Value float0_zeros(std::vector<int64_t> shape) {
  auto a = std::make_shared<Float0Array>();
  a->shape = std::move(shape);
  return Value::object(a);
}

bool is_float0(const Value& v) {
  return v.is_obj(ObjKind::Opaque) && dynamic_cast<const Float0Array*>(v.as<OpaqueObj>());
}

std::vector<int64_t> float0_shape(const Value& v) {
  return dynamic_cast<const Float0Array*>(v.as<OpaqueObj>())->shape;
}

bool is_float0_dtype(const Value& v) {
  return v.is_obj(ObjKind::Opaque) && dynamic_cast<const Float0DType*>(v.as<OpaqueObj>());
}

void add_float0_builtins(ModuleBuilder& types) {
  types.fn("_float0_zeros", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("_float0_zeros", a, {"shape"}, 1);
    return float0_zeros(value_to_int_list(r[0], "shape"));
  });
  types.fn("_is_float0", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("_is_float0", a, {"x"}, 1);
    return Value::boolean(is_float0(r[0]));
  });
  types.fn("_is_float0_dtype", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("_is_float0_dtype", a, {"d"}, 1);
    return Value::boolean(is_float0_dtype(r[0]));
  });
}

} // namespace pxl
