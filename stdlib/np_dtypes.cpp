// jax.numpy's dtype queries: finfo, iinfo, result_type, promote_types,
// issubdtype and numpy's abstract scalar classes (floating, integer, ...).
// finfo's float fields are 0-d arrays of the dtype, as numpy scalars of that
// type behave in JAX (strong, so `x * finfo(x.dtype).eps` keeps x's dtype).
#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstdint>

#include "lang/args.hpp"
#include "stdlib/convert.hpp"
#include "stdlib/module_builder.hpp"
#include "stdlib/np.hpp"
#include "stdlib/np_internal.hpp"
#include "stdlib/prng_key.hpp"
#include "stdlib/strict_promotion.hpp"

namespace pxl {

namespace {

struct FloatInfo {
  int bits, nmant, nexp, precision, machep, maxexp, minexp;
  double eps, max, tiny, resolution, epsneg, subnormal;
  const char* repr; // numpy's repr, whose number formatting is per type
  // str()'s numbers as numpy prints them for the type: resolution, eps,
  // epsneg, tiny, max, smallest_subnormal.
  const char* text[6];
  // float8_e8m0fnu's least value is positive; the others' min is -max.
  double min = NAN;
  const char* min_text = "-max";
  int negep = 0; // numpy's negep when not machep - 1 (float4_e2m1fn's)
};

const FloatInfo& float_info(DType d) {
  static const FloatInfo f16{
      16,
      10,
      5,
      3,
      -10,
      16,
      -14,
      std::ldexp(1.0, -10),
      65504.0,
      std::ldexp(1.0, -14),
      0.0010004043579101562,
      std::ldexp(1.0, -11),
      std::ldexp(1.0, -24),
      "finfo(resolution=0.001, min=-6.55040e+04, max=6.55040e+04, dtype=float16)",
      {"0.001", "0.000977", "0.0004883", "6.104e-05", "6.55e+04", "6e-08"}};
  static const FloatInfo bf16{
      16,
      7,
      8,
      2,
      -7,
      128,
      -126,
      std::ldexp(1.0, -7),
      3.3895313892515355e+38,
      std::ldexp(1.0, -126),
      0.010009765625,
      std::ldexp(1.0, -8),
      std::ldexp(1.0, -133),
      "finfo(resolution=0.0100098, min=-3.38953e+38, max=3.38953e+38, dtype=bfloat16)",
      {"0.0100098", "0.0078125", "0.00390625", "1.17549e-38", "3.38953e+38", "9.18355e-41"}};
  static const FloatInfo f32{
      32,
      23,
      8,
      6,
      -23,
      128,
      -126,
      std::ldexp(1.0, -23),
      FLT_MAX,
      std::ldexp(1.0, -126),
      static_cast<double>(1e-6f),
      std::ldexp(1.0, -24),
      std::ldexp(1.0, -149),
      "finfo(resolution=1e-06, min=-3.4028235e+38, max=3.4028235e+38, dtype=float32)",
      {"1e-06", "1.1920929e-07", "5.9604645e-08", "1.1754944e-38", "3.4028235e+38", "1e-45"}};
  static const FloatInfo f64{64,
                             52,
                             11,
                             15,
                             -52,
                             1024,
                             -1022,
                             DBL_EPSILON,
                             DBL_MAX,
                             DBL_MIN,
                             1e-15,
                             std::ldexp(1.0, -53),
                             std::ldexp(1.0, -1074),
                             "finfo(resolution=1e-15, min=-1.7976931348623157e+308, "
                             "max=1.7976931348623157e+308, dtype=float64)",
                             {"1e-15", "2.220446049250313e-16", "1.1102230246251565e-16",
                              "2.2250738585072014e-308", "1.7976931348623157e+308", "5e-324"}};
  switch (d) {
  // The small floats, as JAX 0.10.2 (ml_dtypes) describes them.
  case DType::Float8E4M3FN: {
    static const FloatInfo f{8,
                             3,
                             4,
                             1,
                             -3,
                             9,
                             -6,
                             0.125,
                             448.0,
                             0.015625,
                             0.1015625,
                             0.0625,
                             0.001953125,
                             "finfo(resolution=0.101562, min=-448, max=448, dtype=float8_e4m3fn)",
                             {"0.101562", "0.125", "0.0625", "0.015625", "448", "0.00195312"}};
    return f;
  }
  case DType::Float8E5M2: {
    static const FloatInfo f{8,
                             2,
                             5,
                             1,
                             -2,
                             16,
                             -14,
                             0.25,
                             57344.0,
                             6.103515625e-05,
                             0.09375,
                             0.125,
                             1.52587890625e-05,
                             "finfo(resolution=0.09375, min=-57344, max=57344, dtype=float8_e5m2)",
                             {"0.09375", "0.25", "0.125", "6.10352e-05", "57344", "1.52588e-05"}};
    return f;
  }
  case DType::Float8E4M3FNUZ: {
    static const FloatInfo f{8,
                             3,
                             4,
                             1,
                             -3,
                             8,
                             -7,
                             0.125,
                             240.0,
                             0.0078125,
                             0.1015625,
                             0.0625,
                             0.0009765625,
                             "finfo(resolution=0.101562, min=-240, max=240, dtype=float8_e4m3fnuz)",
                             {"0.101562", "0.125", "0.0625", "0.0078125", "240", "0.000976562"}};
    return f;
  }
  case DType::Float8E5M2FNUZ: {
    static const FloatInfo f{
        8,
        2,
        5,
        1,
        -2,
        16,
        -15,
        0.25,
        57344.0,
        3.0517578125e-05,
        0.09375,
        0.125,
        7.62939453125e-06,
        "finfo(resolution=0.09375, min=-57344, max=57344, dtype=float8_e5m2fnuz)",
        {"0.09375", "0.25", "0.125", "3.05176e-05", "57344", "7.62939e-06"}};
    return f;
  }
  case DType::Float8E4M3B11FNUZ: {
    static const FloatInfo f{
        8,
        3,
        4,
        1,
        -3,
        5,
        -10,
        0.125,
        30.0,
        0.0009765625,
        0.1015625,
        0.0625,
        0.0001220703125,
        "finfo(resolution=0.101562, min=-30, max=30, dtype=float8_e4m3b11fnuz)",
        {"0.101562", "0.125", "0.0625", "0.000976562", "30", "0.00012207"}};
    return f;
  }
  case DType::Float8E4M3: {
    static const FloatInfo f{8,
                             3,
                             4,
                             1,
                             -3,
                             8,
                             -6,
                             0.125,
                             240.0,
                             0.015625,
                             0.1015625,
                             0.0625,
                             0.001953125,
                             "finfo(resolution=0.101562, min=-240, max=240, dtype=float8_e4m3)",
                             {"0.101562", "0.125", "0.0625", "0.015625", "240", "0.00195312"}};
    return f;
  }
  case DType::Float8E3M4: {
    static const FloatInfo f{8,
                             4,
                             3,
                             1,
                             -4,
                             4,
                             -2,
                             0.0625,
                             15.5,
                             0.25,
                             0.09375,
                             0.03125,
                             0.015625,
                             "finfo(resolution=0.09375, min=-15.5, max=15.5, dtype=float8_e3m4)",
                             {"0.09375", "0.0625", "0.03125", "0.25", "15.5", "0.015625"}};
    return f;
  }
  case DType::Float8E8M0FNU: {
    static const FloatInfo f{
        8,
        0,
        8,
        1,
        0,
        128,
        -127,
        1.0,
        1.7014118346046923e+38,
        5.877471754111438e-39,
        0.125,
        0.5,
        5.877471754111438e-39,
        "finfo(resolution=0.125, min=5.87747e-39, max=1.70141e+38, dtype=float8_e8m0fnu)",
        {"0.125", "1", "0.5", "5.87747e-39", "1.70141e+38", "5.87747e-39"},
        5.877471754111438e-39,
        "5.87747e-39"};
    return f;
  }
  case DType::Float4E2M1FN: {
    static const FloatInfo f{4,
                             1,
                             2,
                             0,
                             -1,
                             3,
                             0,
                             0.5,
                             6.0,
                             1.0,
                             1.0,
                             0.5,
                             0.5,
                             "finfo(resolution=1, min=-6, max=6, dtype=float4_e2m1fn)",
                             {"1", "0.5", "0.5", "1", "6", "0.5"},
                             NAN,
                             "-max",
                             -1};
    return f;
  }
  case DType::Float16:
    return f16;
  case DType::BFloat16:
    return bf16;
  case DType::Float64:
    return f64;
  default:
    return f32;
  }
}

// The dtype of a finfo/iinfo/issubdtype argument: a dtype, a dtype name, an
// array (its dtype) or a Python scalar type.
DType dtype_of(InterpreterImpl& in, const Value& v) {
  if (v.is_obj(ObjKind::Array)) return v.as<ArrayObj>()->tensor->aval.dtype;
  if (v.is_obj(ObjKind::DType) || v.is_obj(ObjKind::Str) || v.is_obj(ObjKind::Builtin))
    return *value_to_dtype(v);
  return in.to_tensor(v, Span{})->aval.dtype;
}

struct FInfoObj : OpaqueObj {
  DType dtype;
  explicit FInfoObj(DType d) : dtype(d) {}
  std::string type_name() const override { return "finfo"; }
  // numpy caches finfo objects per dtype, so two of one dtype compare equal
  // (iinfo objects are not cached: identity).
  bool equals(const OpaqueObj& other) const override {
    auto* o = dynamic_cast<const FInfoObj*>(&other);
    return o && o->dtype == dtype;
  }
  std::string repr() const override { return float_info(dtype).repr; }
  std::string str() const override { // numpy's "Machine parameters" table
    const FloatInfo& f = float_info(dtype);
    auto n = [](int v) { return std::to_string(v); };
    const std::string rule = "---------------------------------------------------------------\n";
    return "Machine parameters for " + std::string(dtype_name(dtype)) + "\n" + rule +
           "precision = " + n(f.precision) + "   resolution = " + f.text[0] + "\n" +
           "machep = " + n(f.machep) + "   eps =        " + f.text[1] + "\n" +
           "negep =  " + n(f.negep ? f.negep : f.machep - 1) + "   epsneg =     " + f.text[2] +
           "\n" + "minexp = " + n(f.minexp) + "   tiny =       " + f.text[3] + "\n" +
           "maxexp = " + n(f.maxexp) + "   max =        " + f.text[4] + "\n" +
           "nexp =   " + n(f.nexp) + "   min =        " + f.min_text + "\n" +
           "smallest_normal = " + f.text[3] + "   smallest_subnormal = " + f.text[5] + "\n" + rule;
  }
  bool get_attr(InterpreterImpl& in, const std::string& name, Value& out) override {
    const FloatInfo& f = float_info(dtype);
    // numpy scalars, concrete even inside a trace (float(finfo(dt).eps) under jit, as JAX's).
    auto num = [&](double v) {
      return make_array(np::scalar(in.root_ops(), Scalar::of_float(v), dtype, false));
    };
    if (name == "eps") return out = num(f.eps), true;
    if (name == "max") return out = num(f.max), true;
    if (name == "min") return out = num(std::isnan(f.min) ? -f.max : f.min), true;
    if (name == "tiny" || name == "smallest_normal") return out = num(f.tiny), true;
    if (name == "resolution") return out = num(f.resolution), true;
    if (name == "epsneg") return out = num(f.epsneg), true;
    if (name == "smallest_subnormal") return out = num(f.subnormal), true;
    if (name == "dtype") return out = Value::object(std::make_shared<DTypeObj>(dtype)), true;
    const std::pair<const char*, int> ints[] = {
        {"bits", f.bits},     {"nmant", f.nmant},
        {"nexp", f.nexp},     {"precision", f.precision},
        {"machep", f.machep}, {"maxexp", f.maxexp},
        {"minexp", f.minexp}, {"negep", f.negep ? f.negep : f.machep - 1},
        {"iexp", f.nexp}};
    for (auto [n, v] : ints)
      if (name == n) return out = Value::integer(v), true;
    return false;
  }
  std::vector<std::string> attr_names() const override {
    return {"bits",
            "dtype",
            "eps",
            "epsneg",
            "iexp",
            "machep",
            "max",
            "maxexp",
            "min",
            "minexp",
            "negep",
            "nexp",
            "nmant",
            "precision",
            "resolution",
            "smallest_normal",
            "smallest_subnormal",
            "tiny"};
  }
};

// int64 describes the 64-bit type, as numpy's iinfo (JAX's) does even with x64
// off; uint64's maximum does not fit pxl's 64-bit ints, so it stays uint32's.
struct IInfoObj : OpaqueObj {
  DType dtype;
  bool int64;
  IInfoObj(DType d, bool i64) : dtype(d), int64(i64) {}
  int64_t lo() const { return int64 ? INT64_MIN : int_min(dtype); }
  int64_t hi() const { return int64 ? INT64_MAX : int_max(dtype); }
  const char* name() const { return int64 ? "int64" : dtype_name(dtype); }
  std::string type_name() const override { return "iinfo"; }
  std::string repr() const override {
    return "iinfo(min=" + std::to_string(lo()) + ", max=" + std::to_string(hi()) +
           ", dtype=" + name() + ")";
  }
  bool get_attr(InterpreterImpl&, const std::string& name, Value& out) override {
    if (name == "min") return out = Value::integer(lo()), true;
    if (name == "max") return out = Value::integer(hi()), true;
    if (name == "bits") return out = Value::integer(int64 ? 64 : dtype_bits(dtype)), true;
    if (name == "kind") return out = make_str(is_signed_int(dtype) ? "i" : "u"), true;
    if (name == "dtype") return out = Value::object(std::make_shared<DTypeObj>(dtype, int64)), true;
    return false;
  }
  std::vector<std::string> attr_names() const override {
    return {"bits", "dtype", "kind", "max", "min"};
  }
};

// numpy's abstract scalar classes, for issubdtype.
enum class Category {
  Generic,
  Number,
  Integer,
  SignedInteger,
  UnsignedInteger,
  Inexact,
  Floating,
  ComplexFloating
};

struct CategoryObj : OpaqueObj {
  Category cat;
  std::string name;
  CategoryObj(Category c, std::string n) : cat(c), name(std::move(n)) {}
  std::string type_name() const override { return "type"; }
  std::string repr() const override { return "<class 'numpy." + name + "'>"; }
  bool equals(const OpaqueObj& o) const override {
    auto* c = dynamic_cast<const CategoryObj*>(&o);
    return c && c->cat == cat;
  }
};

bool in_category(DType d, Category c) {
  switch (c) {
  case Category::Generic:
    return true;
  case Category::Number:
    return d != DType::Bool;
  case Category::Integer:
    return is_integer(d);
  case Category::SignedInteger:
    return is_signed_int(d);
  case Category::UnsignedInteger:
    return is_unsigned_int(d);
  case Category::Inexact:
    return is_inexact(d);
  case Category::Floating:
    return is_floating(d);
  case Category::ComplexFloating:
    return is_complex(d);
  }
  return false;
}

// JAX's type promotion lattice ('standard' mode of jax._src.dtypes) over every
// dtype JAX names, the 64-bit ones included, and the weak types of Python's
// int, float and complex (IW FW CW). promote_types and result_type work on it
// before x64-off canonicalization, as JAX's do (promote_types(int8, uint64) is
// float64; result_type then makes that float32).
// NU2..NI4 are the narrow integers (uint2, uint4, int2, int4): above Python's
// int only, below nothing.
enum JT : int {
  B1,
  IW,
  NU2,
  NU4,
  NI2,
  NI4,
  U1,
  U2,
  U4,
  U8,
  I1,
  I2,
  I4,
  I8,
  FW,
  S8E4M3FN, // the small floats, in DType's order: above Python's float only
  S8E5M2,
  S8E4M3FNUZ,
  S8E5M2FNUZ,
  S8E4M3B11FNUZ,
  S8E4M3,
  S8E3M4,
  S8E8M0FNU,
  S4E2M1FN,
  BF,
  F2,
  F4,
  F8,
  CW,
  C4,
  C8,
  kNumJT
};
bool is_narrow_jt(JT t) { return t >= NU2 && t <= NI4; }
bool is_small_float_jt(JT t) { return t >= S8E4M3FN && t <= S4E2M1FN; }
JT small_float_jt(DType d) {
  return static_cast<JT>(S8E4M3FN + (static_cast<int>(d) - static_cast<int>(DType::Float8E4M3FN)));
}
DType small_float_of(JT t) {
  return static_cast<DType>(static_cast<int>(DType::Float8E4M3FN) + (t - S8E4M3FN));
}

// Each node's set of upper bounds (itself included), as bit masks.
const std::array<uint32_t, kNumJT>& upper_bounds() {
  static const std::array<uint32_t, kNumJT> ups = [] {
    std::vector<std::vector<int>> edges(kNumJT);
    edges[B1] = {IW};
    edges[IW] = {U1, I1, NU2, NU4, NI2, NI4};
    edges[U1] = {I2, U2};
    edges[U2] = {I4, U4};
    edges[U4] = {I4, U8}; // x64 off: uint32 with int32 stays int32 (JAX's lattice)
    edges[U8] = {FW};
    edges[I1] = {I2};
    edges[I2] = {I4};
    edges[I4] = {I8};
    edges[I8] = {FW};
    edges[FW] = {BF, F2, CW};
    for (int s = S8E4M3FN; s <= S4E2M1FN; ++s) edges[FW].push_back(s);
    edges[BF] = {F4};
    edges[F2] = {F4};
    edges[F4] = {F8, C4};
    edges[F8] = {C8};
    edges[CW] = {C4};
    edges[C4] = {C8};
    std::array<uint32_t, kNumJT> u{};
    for (int n = kNumJT - 1; n >= 0; --n) { // edges only go to later nodes
      u[n] = 1u << n;
      for (int m : edges[n]) u[n] |= u[m];
    }
    return u;
  }();
  return ups;
}

// The 'strict' lattice (jax_numpy_dtype_promotion='strict'): strong types join
// only with themselves; a weak type joins with the strong types of its kind and
// above (a Python int with any number type, a float with floats and complexes).
const std::array<uint32_t, kNumJT>& strict_upper_bounds() {
  static const std::array<uint32_t, kNumJT> ups = [] {
    std::vector<std::vector<int>> edges(kNumJT);
    edges[IW] = {NU2, NU4, NI2, NI4, U1, U2, U4, U8, I1, I2, I4, I8, FW};
    edges[FW] = {BF, F2, F4, F8, CW};
    for (int s = S8E4M3FN; s <= S4E2M1FN; ++s) edges[FW].push_back(s);
    edges[CW] = {C4, C8};
    std::array<uint32_t, kNumJT> u{};
    for (int n = kNumJT - 1; n >= 0; --n) {
      u[n] = 1u << n;
      for (int m : edges[n]) u[n] |= u[m];
    }
    return u;
  }();
  return ups;
}

const char* jt_name(JT t) {
  static const char* const kNames[] = {"bool",
                                       "<class 'int'>",
                                       "uint2",
                                       "uint4",
                                       "int2",
                                       "int4",
                                       "uint8",
                                       "uint16",
                                       "uint32",
                                       "uint64",
                                       "int8",
                                       "int16",
                                       "int32",
                                       "int64",
                                       "<class 'float'>",
                                       "float8_e4m3fn",
                                       "float8_e5m2",
                                       "float8_e4m3fnuz",
                                       "float8_e5m2fnuz",
                                       "float8_e4m3b11fnuz",
                                       "float8_e4m3",
                                       "float8_e3m4",
                                       "float8_e8m0fnu",
                                       "float4_e2m1fn",
                                       "bfloat16",
                                       "float16",
                                       "float32",
                                       "float64",
                                       "<class 'complex'>",
                                       "complex64",
                                       "complex128"};
  return kNames[t];
}

// The least upper bound: the one common upper bound below all the others.
// With no such bound (strict promotion only) JAX's TypePromotionError.
std::optional<JT> try_lattice_join(const std::vector<JT>& ts, bool strict) {
  const auto& ups = strict ? strict_upper_bounds() : upper_bounds();
  uint32_t common = (1u << kNumJT) - 1;
  for (JT t : ts) common &= ups[t];
  for (int n = 0; n < kNumJT; ++n)
    if ((common >> n & 1) && (ups[n] & common) == common) return static_cast<JT>(n);
  return std::nullopt;
}

JT lattice_join(const std::vector<JT>& ts, bool strict = false) {
  if (auto j = try_lattice_join(ts, strict)) return *j;
  std::string names;
  for (JT t : ts) { // Python's repr of a tuple of str(dtype)s
    std::string n = jt_name(t);
    names += (names.empty() ? "" : ", ") +
             (n.find('\'') != std::string::npos ? '"' + n + '"' : "'" + n + "'");
  }
  if (ts.size() == 1) names += ",";
  if (!strict && std::any_of(ts.begin(), ts.end(), is_small_float_jt)) {
    const bool eight = std::any_of(ts.begin(), ts.end(),
                                   [](JT t) { return is_small_float_jt(t) && t != S4E2M1FN; });
    throw Error(ErrCode::Value, small_float_promotion_message(names, !eight));
  }
  if (!strict && std::any_of(ts.begin(), ts.end(), is_narrow_jt))
    throw Error(ErrCode::Value, narrow_promotion_message(names));
  throw Error(ErrCode::Value,
              "Input dtypes (" + names +
                  ") have no available implicit dtype promotion path when "
                  "jax_numpy_dtype_promotion=strict. Try explicitly casting inputs to the "
                  "desired output type, or set jax_numpy_dtype_promotion=standard.");
}

// jax.config's jax_numpy_dtype_promotion is 'strict' (jax.numpy_dtype_promotion('strict')).
bool strict_promotion(InterpreterImpl& in) {
  Value config = in.get_attr(in.import_module("jax", Span{}, ""), "config", Span{});
  Value mode = in.get_attr(config, "jax_numpy_dtype_promotion", Span{});
  return mode.is_obj(ObjKind::Str) && mode.as<StrObj>()->value == "strict";
}

JT jt_of(DType d, bool wide) {
  switch (d) {
  case DType::Bool:
    return B1;
  case DType::Int8:
    return I1;
  case DType::Int16:
    return I2;
  case DType::Int32:
    return wide ? I8 : I4;
  case DType::UInt8:
    return U1;
  case DType::UInt16:
    return U2;
  case DType::UInt32:
    return wide ? U8 : U4;
  case DType::BFloat16:
    return BF;
  case DType::Float16:
    return F2;
  case DType::Float32:
    return F4;
  case DType::Float64:
    return F8;
  case DType::Complex64:
    return wide ? C8 : C4;
  case DType::Int2:
    return NI2;
  case DType::Int4:
    return NI4;
  case DType::UInt2:
    return NU2;
  case DType::UInt4:
    return NU4;
  PXL_SMALL_FLOAT_CASES:
    return small_float_jt(d);
  }
  return F4;
}

// A weak type stands for the 64-bit type of its kind (np.dtype(int) is int64).
JT strong_of(JT t) { return t == IW ? I8 : t == FW ? F8 : t == CW ? C8 : t; }
bool is_weak_jt(JT t) { return t == IW || t == FW || t == CW; }
// The weak type of a weakly typed value of dtype t (JAX's _jax_type).
JT weak_of(JT t) {
  if (t == B1) return B1;
  if (t >= CW) return CW;
  if (t >= FW) return FW;
  return IW;
}

std::shared_ptr<DTypeObj> dtype_obj_of(JT t) {
  if (is_small_float_jt(t)) return std::make_shared<DTypeObj>(small_float_of(t));
  switch (strong_of(t)) {
  case I8:
    return std::make_shared<DTypeObj>(DType::Int32, true);
  case U8:
    return std::make_shared<DTypeObj>(DType::UInt32, true);
  case C8:
    return std::make_shared<DTypeObj>(DType::Complex64, true);
  case B1:
    return std::make_shared<DTypeObj>(DType::Bool);
  case U1:
    return std::make_shared<DTypeObj>(DType::UInt8);
  case U2:
    return std::make_shared<DTypeObj>(DType::UInt16);
  case U4:
    return std::make_shared<DTypeObj>(DType::UInt32);
  case I1:
    return std::make_shared<DTypeObj>(DType::Int8);
  case I2:
    return std::make_shared<DTypeObj>(DType::Int16);
  case I4:
    return std::make_shared<DTypeObj>(DType::Int32);
  case BF:
    return std::make_shared<DTypeObj>(DType::BFloat16);
  case F2:
    return std::make_shared<DTypeObj>(DType::Float16);
  case F8:
    return std::make_shared<DTypeObj>(DType::Float64);
  case C4:
    return std::make_shared<DTypeObj>(DType::Complex64);
  case NU2:
    return std::make_shared<DTypeObj>(DType::UInt2);
  case NU4:
    return std::make_shared<DTypeObj>(DType::UInt4);
  case NI2:
    return std::make_shared<DTypeObj>(DType::Int2);
  case NI4:
    return std::make_shared<DTypeObj>(DType::Int4);
  default:
    return std::make_shared<DTypeObj>(DType::Float32);
  }
}

// A dtype argument (a dtype, a scalar type, a name, or Python's bool, int,
// float, complex: the last three weak, as JAX's promote_types takes them).
std::optional<JT> jt_of_dtype_arg(const Value& v) {
  if (v.is_obj(ObjKind::DType)) return jt_of(v.as<DTypeObj>()->dtype, v.as<DTypeObj>()->wide);
  if (v.is_obj(ObjKind::Str)) {
    const std::string& s = v.as<StrObj>()->value;
    return jt_of(*value_to_dtype(v), is_x64_name(s));
  }
  if (v.is_obj(ObjKind::Builtin)) {
    const std::string& n = v.as<BuiltinObj>()->name;
    if (n == "int") return IW;
    if (n == "float") return FW;
    if (n == "complex") return CW;
    if (n == "bool") return B1;
  }
  return std::nullopt;
}

// One jnp.result_type argument as JAX's _dtype_and_weaktype sees it: its dtype
// (a Python int's is int64) and whether it is weak.
struct Operand {
  JT dtype;
  bool weak;
  bool f64_array; // a float64 array: pxl keeps float64 for those
};

// With x64 off JAX canonicalizes each argument's dtype before the join.
JT canonical(JT t) { return t == I8 ? I4 : t == U8 ? U4 : t == F8 ? F4 : t == C8 ? C4 : t; }

Operand operand_of(InterpreterImpl& in, const Value& v) {
  if (v.is_none()) return {F4, false, false}; // numpy's result_type(None) is float64
  if (auto t = jt_of_dtype_arg(v)) return {canonical(strong_of(*t)), is_weak_jt(*t), false};
  if (v.is_bool()) return {B1, false, false};
  if (v.is_int()) return {I4, true, false};
  if (v.is_float()) return {F4, true, false};
  if (v.is_obj(ObjKind::Complex)) return {C4, true, false};
  AVal av = in.to_tensor(v, Span{})->aval; // a copy: the tensor may be a temporary
  return {jt_of(av.dtype, false), av.weak && av.dtype != DType::Bool, av.dtype == DType::Float64};
}

// JAX's dtypes.result_type: the lattice join, then x64-off canonicalization;
// a weak result is its kind's default type.
std::pair<std::shared_ptr<DTypeObj>, bool> lattice_result_type(InterpreterImpl& in,
                                                               const ValueList& args) {
  std::vector<Operand> ops;
  bool f64 = false;
  for (const Value& v : args) {
    ops.push_back(operand_of(in, v));
    f64 = f64 || ops.back().f64_array;
  }
  JT out = ops[0].dtype;
  bool weak = ops[0].weak;
  bool same = true, all_weak = true;
  for (const Operand& o : ops) {
    same = same && o.dtype == ops[0].dtype;
    all_weak = all_weak && o.weak;
  }
  const bool strict = ops.size() > 1 && strict_promotion(in);
  if (ops.size() > 1) {
    std::vector<JT> ts;
    if (same && !all_weak) {
      weak = false;
    } else if (all_weak) { // the strong types' join, made weak
      // (strict promotion joins their weak types: strong ones join only with themselves)
      for (const Operand& o : ops) ts.push_back(strict ? weak_of(o.dtype) : o.dtype);
      out = strong_of(lattice_join(ts, strict));
      weak = true;
    } else {
      for (const Operand& o : ops) ts.push_back(o.weak ? weak_of(o.dtype) : o.dtype);
      out = lattice_join(ts, strict);
      weak = is_weak_jt(out);
      out = strong_of(out);
    }
  }
  weak = weak && out != B1;
  DType d;
  if (weak) { // the kind's default type, canonical
    const bool is_int = out >= U1 && out <= I8;
    d = is_int      ? (out <= U8 ? DType::UInt32 : DType::Int32)
        : out >= CW ? DType::Complex64
                    : DType::Float32;
    if (out == B1) d = DType::Bool;
  } else {
    d = dtype_obj_of(out)->dtype; // 64-bit integer and complex types become 32-bit ones
    if (out == F8 && !f64) d = DType::Float32;
  }
  return {std::make_shared<DTypeObj>(d), weak};
}

} // namespace

// nextafter of one value of a float type, via its bits (16-bit types too).
double np::next_toward(double x, double to, DType dt) {
  if (std::isnan(x) || std::isnan(to)) return NAN;
  if (x == to) return to;
  if (dt == DType::Float64) return std::nextafter(x, to);
  if (dt == DType::Float32) return std::nextafter(static_cast<float>(x), static_cast<float>(to));
  bool half = dt == DType::Float16;
  uint16_t bits =
      half ? float_to_half(static_cast<float>(x)) : float_to_bfloat16(static_cast<float>(x));
  if (x == 0)
    bits = static_cast<uint16_t>((to > 0 ? 0 : 0x8000) | 1);
  else if ((x < to) == (x > 0))
    ++bits; // away from zero
  else
    --bits;
  return half ? half_to_float(bits) : bfloat16_to_float(bits);
}

std::optional<PromotedType> strict_binary_type(InterpreterImpl& in, const AVal& x, const AVal& y) {
  const bool xw = x.weak && x.dtype != DType::Bool, yw = y.weak && y.dtype != DType::Bool;
  if (x.dtype == y.dtype && !xw && !yw) return std::nullopt;
  const JT xt = jt_of(x.dtype, false), yt = jt_of(y.dtype, false);
  const std::vector<JT> ts = {xw ? weak_of(xt) : xt, yw ? weak_of(yt) : yt};
  const auto joined = try_lattice_join(ts, true);
  // Where the strict lattice agrees with the standard one (a strong operand with
  // itself or with a weak type of its kind or below), the flag need not be read.
  if (joined && !(xw && yw)) return std::nullopt;
  if (!strict_promotion(in)) return std::nullopt;
  const JT out = strong_of(lattice_join(ts, true)); // JAX's TypePromotionError when none
  if (!(xw && yw)) return std::nullopt;
  // Weak operands only: the default type of the joined kind (x64 off), weak.
  const DType d = out >= CW ? DType::Complex64 : out >= FW ? DType::Float32 : DType::Int32;
  return PromotedType{d, true};
}

void strict_check_join(InterpreterImpl& in, const std::vector<Tensor>& xs) {
  if (xs.size() < 2) return;
  std::vector<JT> ts; // distinct, in argument order (JAX names a set's members)
  for (const Tensor& x : xs) {
    const bool w = x->aval.weak && x->aval.dtype != DType::Bool;
    const JT t = jt_of(x->aval.dtype, false);
    const JT j = w ? weak_of(t) : t;
    if (std::find(ts.begin(), ts.end(), j) == ts.end()) ts.push_back(j);
  }
  if (ts.size() < 2 || try_lattice_join(ts, true)) return; // strict agrees: no flag read
  if (strict_promotion(in)) lattice_join(ts, true);        // JAX's TypePromotionError
}

void strict_promote_pair(InterpreterImpl& in, Tensor& x, Tensor& y) {
  auto t = strict_binary_type(in, x->aval, y->aval);
  if (!t) return;
  OpAttrs at;
  at.dtype = t->dtype;
  at.weak = t->weak;
  Tensor xs[] = {x}, ys[] = {y};
  x = in.ops().bind(Op::ConvertElementType, at, xs);
  y = in.ops().bind(Op::ConvertElementType, at, ys);
}

void def_dtype_queries(ModuleBuilder& b) {
  b.fn("broadcast_shapes", [](InterpreterImpl&, CallArgs& a) {
    if (!a.kw.empty()) throw Error(ErrCode::Arguments, "broadcast_shapes() takes shapes only");
    std::vector<Shape> shapes;
    for (const Value& v : a.pos) shapes.push_back(value_to_shape(v, "broadcast_shapes()"));
    Shape out = np::detail::broadcast_shapes_all(shapes);
    ValueList d;
    for (int64_t x : out) d.push_back(Value::integer(x));
    return make_tuple(std::move(d));
  });
  // Eager only: computed on the host from concrete values (like JAX's result).
  b.fn("nextafter", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("nextafter", a, {"x1", "x2"}, 2);
    Tensor x = in.to_tensor(r[0], Span{});
    Tensor y = in.to_tensor(r[1], Span{});
    PromotedType t = promote_types(x->aval.dtype, x->aval.weak, y->aval.dtype, y->aval.weak);
    if (!is_floating(t.dtype)) t = {DType::Float32, t.weak};
    Shape shape = np::detail::broadcast_shapes("nextafter", x->aval.shape, y->aval.shape);
    Array xs = in.ops().concrete(
        np::astype(in.ops(), np::broadcast_to(in.ops(), x, shape), DType::Float64));
    Array ys = in.ops().concrete(
        np::astype(in.ops(), np::broadcast_to(in.ops(), y, shape), DType::Float64));
    // Written in the result type directly: a conversion could flush subnormals.
    Array out(t.dtype, shape);
    for (int64_t i = 0; i < out.size(); ++i) {
      double v = np::next_toward(xs.as<double>()[i], ys.as<double>()[i], t.dtype);
      if (t.dtype == DType::Float64)
        out.as<double>()[i] = v;
      else if (t.dtype == DType::Float32)
        out.as<float>()[i] = static_cast<float>(v);
      else if (t.dtype == DType::Float16)
        out.as<uint16_t>()[i] = float_to_half(static_cast<float>(v));
      else
        out.as<uint16_t>()[i] = float_to_bfloat16(static_cast<float>(v));
    }
    return make_array(in.ops().constant(out));
  });
  b.fn("finfo", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("finfo", a, {"dtype"}, 1);
    DType d = dtype_of(in, r[0]);
    if (!is_inexact(d))
      throw Error(ErrCode::DType, std::string("data type <class 'numpy.") + dtype_name(d) +
                                      "'> not inexact"); // numpy's text, as JAX raises it
    auto t = jt_of_dtype_arg(r[0]);
    if (t && strong_of(*t) == C8) d = DType::Float64; // complex128: its float64 parts'
    return Value::object(
        std::make_shared<FInfoObj>(real_dtype(d))); // complex64: its float32 parts'
  });
  b.fn("iinfo", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("iinfo", a, {"int_type"}, 1);
    DType d = dtype_of(in, r[0]);
    if (!is_integer(d)) { // numpy's text, naming the dtype's kind (bfloat16's is 'V')
      const char* kind = d == DType::Bool       ? "b"
                         : is_complex(d)        ? "c"
                         : d == DType::BFloat16 ? "V"
                                                : "f";
      throw Error(ErrCode::DType, std::string("Invalid integer data type '") + kind + "'.");
    }
    auto t = jt_of_dtype_arg(r[0]);
    return Value::object(std::make_shared<IInfoObj>(d, t && strong_of(*t) == I8));
  });
  // jax.dtypes.result_type also takes return_weak_type_flag= (jnp's does not).
  b.fn("result_type", [](InterpreterImpl& in, CallArgs& a) {
    bool flag = false;
    for (const auto& [k, v] : a.kw) {
      if (k != "return_weak_type_flag")
        throw Error(ErrCode::Arguments,
                    "result_type() got an unexpected keyword argument '" + k + "'");
      flag = in.truthy(v, Span{});
    }
    if (a.pos.empty()) throw Error(ErrCode::Value, "at least one array or dtype is required");
    auto [dt, weak] = lattice_result_type(in, a.pos);
    if (!flag) return Value::object(dt);
    return make_tuple({Value::object(dt), Value::boolean(weak)});
  });
  b.fn("promote_types", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("promote_types", a, {"a", "b"}, 2);
    std::vector<JT> ts;
    for (int i = 0; i < 2; ++i) {
      // numpy's dtype of an array (which JAX warns is deprecated)
      auto t =
          r[i].is_obj(ObjKind::Array) ? jt_of(dtype_of(in, r[i]), false) : jt_of_dtype_arg(r[i]);
      if (!t) throw Error(ErrCode::Type, "data type " + repr(r[i]) + " not understood");
      ts.push_back(*t);
    }
    return Value::object(dtype_obj_of(lattice_join(ts, strict_promotion(in))));
  });
  static const std::pair<Category, const char*> cats[] = {
      {Category::Generic, "generic"},
      {Category::Number, "number"},
      {Category::Integer, "integer"},
      {Category::SignedInteger, "signedinteger"},
      {Category::UnsignedInteger, "unsignedinteger"},
      {Category::Inexact, "inexact"},
      {Category::Floating, "floating"},
      {Category::ComplexFloating, "complexfloating"}};
  for (auto [c, n] : cats) b.val(n, Value::object(std::make_shared<CategoryObj>(c, n)));
  b.fn("issubdtype", [](InterpreterImpl& in, CallArgs& a) {
    ArgReader r("issubdtype", a, {"arg1", "arg2"}, 2);
    auto category = [](const Value& v) -> const CategoryObj* {
      if (!v.is_obj(ObjKind::Opaque)) return nullptr;
      return dynamic_cast<const CategoryObj*>(v.as<OpaqueObj>());
    };
    const CategoryObj* c1 = category(r[0]);
    const CategoryObj* c2 = category(r[1]);
    // Key dtypes and their classes (extended, prng_key) are np.generic's too, as in JAX.
    if (c2 && c2->cat == Category::Generic && key_issubdtype(r[0], r[0]))
      return Value::boolean(true);
    if (auto keys = key_issubdtype(r[0], r[1])) return Value::boolean(*keys);
    if (c1) { // a class is a subclass of a class that contains it
      if (!c2) return Value::boolean(false);
      bool sub = c1->cat == c2->cat || c2->cat == Category::Generic ||
                 (c2->cat == Category::Number && c1->cat != Category::Generic) ||
                 (c2->cat == Category::Integer &&
                  (c1->cat == Category::SignedInteger || c1->cat == Category::UnsignedInteger)) ||
                 (c2->cat == Category::Inexact &&
                  (c1->cat == Category::Floating || c1->cat == Category::ComplexFloating));
      return Value::boolean(sub);
    }
    DType d1 = dtype_of(in, r[0]);
    if (c2) return Value::boolean(in_category(d1, c2->cat));
    auto t1 = jt_of_dtype_arg(r[0]), t2 = jt_of_dtype_arg(r[1]);
    if (t1 && t2) return Value::boolean(strong_of(*t1) == strong_of(*t2)); // int32 is not an int64
    return Value::boolean(d1 == dtype_of(in, r[1]));
  });
}

} // namespace pxl
