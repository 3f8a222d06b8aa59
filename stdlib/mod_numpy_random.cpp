// numpy.random (`import numpy as np; np.random...`): numpy's legacy
// RandomState, the Generator of default_rng, and the module-level functions
// (np.random.seed, np.random.randn, ...) drawing from a RandomState of the
// interpreter's own. Every draw is numpy's, bit for bit
// (stdlib/np_random_bitgen.hpp): the same seed gives the same numbers in the
// same order. As elsewhere in pxl's numpy twin, float results are float32
// arrays (each value numpy's float64 draw, rounded) and integer results int32;
// a draw without `size` is a Python float or int, exactly numpy's.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <unordered_set>

#include "lang/args.hpp"
#include "stdlib/convert.hpp"
#include "stdlib/module_builder.hpp"
#include "stdlib/np_random_bitgen.hpp"

namespace pxl {

namespace {
using namespace nprandom;

Error value_error(const std::string& msg) { return Error(ErrCode::Value, msg); }

// A generator and how numpy's two APIs draw from it: RandomState's legacy
// algorithms (polar gauss, masked integers) or Generator's (ziggurat, Lemire).
struct Source {
  bool legacy = true;
  std::unique_ptr<BitGen> gen;
  MT19937& mt() { return static_cast<MT19937&>(*gen); }
  double uniform() { return gen->next_double(); }
  double normal() { return legacy ? mt().legacy_gauss() : standard_normal_ziggurat(*gen); }
  uint64_t bounded(uint64_t range) {
    return legacy ? bounded_masked(*gen, range) : bounded_lemire(*gen, range);
  }
  // Fisher-Yates from the end: both APIs draw each swap partner masked
  // (numpy's random_interval).
  void shuffle(std::vector<int64_t>& xs) {
    for (size_t i = xs.size(); i-- > 1;) std::swap(xs[i], xs[bounded_masked(*gen, i)]);
  }
};

uint32_t os_entropy() { return std::random_device{}(); }

// RandomState(seed): None, an int in [0, 2**32), or a 1-d sequence of them.
void seed_legacy(Source& s, const Value& seed) {
  auto word = [](const Value& v) {
    int64_t x = value_to_int(v, "seed");
    if (x < 0 || x > 0xffffffffLL) throw value_error("Seed must be between 0 and 2**32 - 1");
    return static_cast<uint32_t>(x);
  };
  std::unique_ptr<MT19937> mt;
  if (seed.is_none()) {
    mt = std::make_unique<MT19937>(os_entropy());
  } else if (const ValueList* items = sequence_items(seed)) {
    if (items->empty()) throw value_error("Seed must be non-empty");
    std::vector<uint32_t> key;
    for (const Value& v : *items) key.push_back(word(v));
    mt = std::make_unique<MT19937>(0);
    mt->seed_array(key);
  } else {
    mt = std::make_unique<MT19937>(word(seed));
  }
  s.gen = std::move(mt);
}

// SeedSequence's entropy: each int as its little-endian 32-bit words.
std::vector<uint32_t> entropy_words(const Value& seed) {
  std::vector<uint32_t> words;
  auto add = [&](const Value& v) {
    int64_t x = value_to_int(v, "seed");
    if (x < 0) throw value_error("expected non-negative integer");
    auto u = static_cast<uint64_t>(x);
    do {
      words.push_back(static_cast<uint32_t>(u));
      u >>= 32;
    } while (u);
  };
  if (seed.is_none()) {
    for (int i = 0; i < 4; i++) words.push_back(os_entropy());
  } else if (const ValueList* items = sequence_items(seed)) {
    for (const Value& v : *items) add(v);
  } else {
    add(seed);
  }
  return words;
}

// numpy's `size`: None (one draw, returned as a Python number), an int or a
// sequence of ints.
std::optional<Shape> size_arg(const Value& v) {
  if (v.is_none()) return std::nullopt;
  Shape s = value_to_int_list(v, "size");
  for (int64_t d : s)
    if (d < 0) throw value_error("negative dimensions are not allowed");
  return s;
}
int64_t count(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Value float_result(const std::optional<Shape>& shape, const std::vector<double>& v,
                   bool single = false) {
  if (!shape) return Value::number(single ? static_cast<double>(static_cast<float>(v[0])) : v[0]);
  Array out(DType::Float32, *shape);
  for (size_t i = 0; i < v.size(); i++) out.as<float>()[i] = static_cast<float>(v[i]);
  return make_array(make_tensor(std::move(out)));
}
Value int_result(InterpreterImpl& in, const std::optional<Shape>& shape,
                 const std::vector<int64_t>& v, DType dt = DType::Int32) {
  if (!shape) return Value::integer(v[0]);
  Array out(DType::Int32, *shape);
  for (size_t i = 0; i < v.size(); i++) out.as<int32_t>()[i] = static_cast<int32_t>(v[i]);
  Tensor t = in.ops().constant(std::move(out));
  return make_array(dt == DType::Int32 ? t : np::astype(in.ops(), t, dt));
}
// [lo, hi] of an integer dtype pxl's arrays hold (int64 and uint64 are 32-bit).
std::pair<int64_t, int64_t> int_bounds(DType d) {
  switch (d) {
  case DType::Bool:
    return {0, 1};
  case DType::Int8:
    return {INT8_MIN, INT8_MAX};
  case DType::UInt8:
    return {0, UINT8_MAX};
  case DType::Int16:
    return {INT16_MIN, INT16_MAX};
  case DType::UInt16:
    return {0, UINT16_MAX};
  case DType::UInt32:
    return {0, UINT32_MAX};
  case DType::Int32:
    return {INT32_MIN, INT32_MAX};
  default:
    throw Error(ErrCode::Type, std::string("Unsupported dtype ") + dtype_name(d) + " for randint");
  }
}

// An array-like's values on the host.
Array host_array(InterpreterImpl& in, const Value& v) {
  return in.ops().concrete(in.to_tensor(v, Span{}));
}

// A distribution parameter (a number or an array-like), broadcast against
// the others: the value for each element of the result.
struct Param {
  Shape shape;
  std::vector<double> v;
  double at(const Shape& out, int64_t flat) const {
    if (v.size() == 1) return v[0];
    // The element of `shape` (right-aligned, size-1 dims broadcast) at out's `flat`.
    int64_t idx = 0, stride = 1;
    for (size_t k = 0; k < shape.size(); k++) {
      size_t od = out.size() - 1 - k, pd = shape.size() - 1 - k;
      int64_t coord = flat;
      for (size_t j = out.size() - 1; j > od; j--) coord /= out[j];
      coord %= out[od];
      if (shape[pd] != 1) idx += coord * stride;
      stride *= shape[pd];
    }
    return v[static_cast<size_t>(idx)];
  }
};
Param param(InterpreterImpl& in, const ArgReader& r, size_t i, double dflt) {
  if (!r.has(i) || r[i].is_none()) return {{}, {dflt}};
  if (r[i].is_number()) return {{}, {r.get_float(i)}};
  // Python numbers in a list stay doubles (numpy reads them as float64).
  if (const ValueList* items = sequence_items(r[i])) {
    bool flat =
        std::all_of(items->begin(), items->end(), [](const Value& x) { return x.is_number(); });
    if (flat) {
      Param p{{static_cast<int64_t>(items->size())}, {}};
      for (const Value& x : *items) p.v.push_back(value_to_float(x, r.param(i)));
      return p;
    }
  }
  Array a = host_array(in, r[i]);
  Param p{a.shape(), {}};
  for (int64_t k = 0; k < a.size(); k++) p.v.push_back(a.get_f64(k));
  return p;
}
// The result's shape: `size`, or the parameters' broadcast shape; nullopt for
// one draw (no size and all parameters scalars).
std::optional<Shape> out_shape(const std::optional<Shape>& size, std::vector<const Param*> ps) {
  Shape b;
  bool any_array = false;
  for (const Param* p : ps) {
    if (p->shape.empty()) continue;
    any_array = true;
    Shape s = p->shape;
    if (s.size() > b.size()) b.insert(b.begin(), s.size() - b.size(), 1);
    for (size_t k = 0; k < s.size(); k++) {
      int64_t& d = b[b.size() - s.size() + k];
      if (d == 1)
        d = s[k];
      else if (s[k] != 1 && s[k] != d)
        throw value_error("shape mismatch: objects cannot be broadcast to a single shape");
    }
  }
  if (!size) return any_array ? std::optional<Shape>(b) : std::nullopt;
  for (const Param* p : ps) {
    const Shape& s = p->shape;
    bool ok = s.size() <= size->size();
    for (size_t k = 0; ok && k < s.size(); k++) {
      int64_t d = (*size)[size->size() - s.size() + k];
      ok = s[k] == 1 || s[k] == d;
    }
    if (!ok)
      throw value_error("shape mismatch: objects cannot be broadcast to a single shape.  "
                        "Mismatch is between arg 0 with shape " +
                        shape_str(s) + " and arg 1 with shape " + shape_str(*size) + ".");
  }
  return size;
}

// A continuous distribution's draws: its parameters (numbers or array-likes)
// broadcast against each other and `size`; `check` sees every element's
// parameter values before anything is drawn (numpy checks first), then `draw`
// makes one value per element, in row-major order.
using ParamValues = std::span<const double>;
Value broadcast_draws(const std::optional<Shape>& size, const std::vector<const Param*>& ps,
                      const std::function<void(ParamValues)>& check,
                      const std::function<double(ParamValues)>& draw) {
  std::optional<Shape> shape = out_shape(size, ps);
  Shape full = shape.value_or(Shape{});
  auto n = static_cast<size_t>(shape ? count(*shape) : 1);
  std::vector<double> values(ps.size());
  auto at = [&](size_t k) {
    for (size_t i = 0; i < ps.size(); i++) values[i] = ps[i]->at(full, static_cast<int64_t>(k));
    return ParamValues(values);
  };
  for (size_t k = 0; k < n; k++) check(at(k));
  std::vector<double> out(n);
  for (size_t k = 0; k < n; k++) out[k] = draw(at(k));
  return float_result(shape, out);
}
void check_scale(double scale) {
  if (scale < 0 || std::isnan(scale)) throw value_error("scale < 0");
}

Value uniform(InterpreterImpl& in, Source& s, CallArgs& args) {
  ArgReader r("uniform", args, {"low", "high", "size"});
  Param lo = param(in, r, 0, 0.0), hi = param(in, r, 1, 1.0);
  return broadcast_draws(
      size_arg(r.has(2) ? r[2] : Value()), {&lo, &hi},
      [](ParamValues v) {
        if (!std::isfinite(v[1] - v[0])) throw value_error("Range exceeds valid bounds");
      },
      [&s](ParamValues v) { return v[0] + (v[1] - v[0]) * s.uniform(); });
}

Value normal(InterpreterImpl& in, Source& s, CallArgs& args) {
  ArgReader r("normal", args, {"loc", "scale", "size"});
  Param loc = param(in, r, 0, 0.0), scale = param(in, r, 1, 1.0);
  return broadcast_draws(
      size_arg(r.has(2) ? r[2] : Value()), {&loc, &scale}, [](ParamValues v) { check_scale(v[1]); },
      [&s](ParamValues v) { return v[0] + v[1] * s.normal(); });
}

// n draws of `one` into a float result (RandomState's rand/randn style).
Value draws(const std::optional<Shape>& shape, const std::function<double()>& one) {
  std::vector<double> out(static_cast<size_t>(shape ? count(*shape) : 1));
  for (double& x : out) x = one();
  return float_result(shape, out);
}
// rand(d0, d1, ...) / randn(...): dimensions as positional arguments.
std::optional<Shape> dims_args(CallArgs& a, const char* name) {
  if (!a.kw.empty())
    throw Error(ErrCode::Arguments, std::string(name) + "() takes no keyword arguments");
  if (a.pos.empty()) return std::nullopt;
  Shape s;
  for (const Value& v : a.pos) s.push_back(value_to_int(v, name));
  for (int64_t d : s)
    if (d < 0) throw value_error("negative dimensions are not allowed");
  return s;
}

// Integers in [low, high): RandomState.randint and Generator.integers.
Value integers(InterpreterImpl& in, Source& s, CallArgs& a, const char* name) {
  bool generator = std::string(name) == "integers";
  ArgReader r(name, a,
              generator
                  ? std::initializer_list<const char*>{"low", "high", "size", "dtype", "endpoint"}
                  : std::initializer_list<const char*>{"low", "high", "size", "dtype"},
              1);
  int64_t low = r.get_int(0), high;
  if (!r.has(1) || r[1].is_none())
    high = low, low = 0;
  else
    high = r.get_int(1);
  bool closed = generator && r.get_bool(4, false);
  if (!closed) {
    if (low >= high) throw value_error("low >= high");
    high -= 1;
  } else if (low > high) {
    throw value_error("low > high");
  }
  DType dt = r.has(3) && !r[3].is_none() ? required_dtype(r[3], "dtype") : DType::Int32;
  std::optional<Shape> shape = size_arg(r.has(2) ? r[2] : Value());
  auto [lo_ok, hi_ok] = int_bounds(dt);
  if (shape && low < lo_ok)
    throw value_error("low is out of bounds for " + std::string(dtype_name(dt)));
  if (shape && high > hi_ok)
    throw value_error("high is out of bounds for " + std::string(dtype_name(dt)));
  auto range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  std::vector<int64_t> out(static_cast<size_t>(shape ? count(*shape) : 1));
  for (int64_t& x : out) x = low + static_cast<int64_t>(s.bounded(range));
  return int_result(in, shape, out, dt);
}

// 0, 1, ..., n - 1.
std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (size_t k = 0; k < v.size(); k++) v[k] = static_cast<int64_t>(k);
  return v;
}
// x's rows at `idx`, laid out in `shape` (choice's size, permutation's n).
Value take_rows(InterpreterImpl& in, const Tensor& x, const std::vector<int64_t>& idx,
                const Shape& shape) {
  Array ia(DType::Int32, shape);
  for (size_t k = 0; k < idx.size(); k++) ia.as<int32_t>()[k] = static_cast<int32_t>(idx[k]);
  np::IndexItem it;
  it.kind = np::IndexItem::Kind::Array;
  it.array = in.ops().constant(std::move(ia));
  return make_array(np::index(in.ops(), x, {it}));
}

// The probabilities of choice's `p`, checked as numpy checks them.
std::vector<double> choice_p(InterpreterImpl& in, const Value& pv, int64_t pop) {
  std::vector<double> p;
  if (const ValueList* items = sequence_items(pv)) {
    for (const Value& x : *items) p.push_back(value_to_float(x, "p"));
  } else {
    Array a = host_array(in, pv);
    if (a.shape().size() != 1) throw value_error("p must be 1-dimensional");
    for (int64_t k = 0; k < a.size(); k++) p.push_back(a.get_f64(k));
  }
  if (static_cast<int64_t>(p.size()) != pop) throw value_error("a and p must have same size");
  double sum = 0;
  for (double x : p) {
    if (std::isnan(x)) throw value_error("probabilities contain NaN");
    if (x < 0) throw value_error("probabilities are not non-negative");
    sum += x;
  }
  if (std::abs(sum - 1.0) > std::sqrt(2.220446049250313e-16))
    throw value_error("probabilities do not sum to 1");
  return p;
}
// Indices drawn by inverting p's cumulative sum at each uniform draw.
std::vector<int64_t> from_cdf(const std::vector<double>& p, const std::vector<double>& u) {
  std::vector<double> cdf(p.size());
  double acc = 0;
  for (size_t k = 0; k < p.size(); k++) cdf[k] = acc += p[k];
  for (double& c : cdf) c /= cdf.back();
  std::vector<int64_t> idx;
  for (double x : u) idx.push_back(std::upper_bound(cdf.begin(), cdf.end(), x) - cdf.begin());
  return idx;
}

// choice(a, size=None, replace=True, p=None): numpy's algorithms for each case.
Value choice(InterpreterImpl& in, Source& s, CallArgs& a) {
  ArgReader r("choice", a, {"a", "size", "replace", "p", "axis", "shuffle"}, 1);
  bool from_int = r[0].is_intlike();
  int64_t pop;
  Tensor items;
  if (from_int) {
    pop = r.get_int(0);
    if (pop <= 0) throw value_error("a must be greater than 0 unless no samples are taken");
  } else {
    items = in.to_tensor(r[0], Span{});
    // RandomState takes a 1-d `a`; Generator also picks rows of an n-d one.
    if (items->aval.shape.empty() || (s.legacy && items->aval.shape.size() != 1))
      throw value_error(s.legacy ? "a must be 1-dimensional"
                                 : "a must be a sequence or an integer, not a 0-d array");
    pop = items->aval.shape[0];
  }
  std::optional<Shape> shape = size_arg(r.has(1) ? r[1] : Value());
  int64_t n = shape ? count(*shape) : 1;
  bool replace = r.get_bool(2, true);
  std::optional<std::vector<double>> p;
  if (r.has(3) && !r[3].is_none()) p = choice_p(in, r[3], pop);
  if (pop == 0 && n != 0) throw value_error("a cannot be empty unless no samples are taken");
  auto uniforms = [&](int64_t k) {
    std::vector<double> u(static_cast<size_t>(k));
    for (double& x : u) x = s.uniform();
    return u;
  };

  std::vector<int64_t> idx;
  if (replace) {
    if (p) {
      idx = from_cdf(*p, uniforms(n));
    } else {
      for (int64_t k = 0; k < n; k++) idx.push_back(static_cast<int64_t>(s.bounded(pop - 1)));
    }
  } else {
    if (n > pop)
      throw value_error("Cannot take a larger sample than population when 'replace=False'");
    if (p) {
      int64_t nonzero = std::count_if(p->begin(), p->end(), [](double x) { return x > 0; });
      if (nonzero < n) throw value_error("Fewer non-zero entries in p than size");
      // Draw the missing ones from p without those found, until all are distinct.
      std::vector<double> left = *p;
      while (static_cast<int64_t>(idx.size()) < n) {
        std::vector<double> u = uniforms(n - static_cast<int64_t>(idx.size()));
        for (int64_t f : idx) left[static_cast<size_t>(f)] = 0;
        std::vector<int64_t> fresh = from_cdf(left, u);
        std::vector<int64_t> seen;
        for (int64_t f : fresh)
          if (std::find(seen.begin(), seen.end(), f) == seen.end()) seen.push_back(f);
        // numpy keeps the first occurrence of each, in order of appearance.
        idx.insert(idx.end(), seen.begin(), seen.end());
      }
    } else if (s.legacy) {
      std::vector<int64_t> perm = iota(pop);
      s.shuffle(perm);
      idx.assign(perm.begin(), perm.begin() + n);
    } else {
      // Generator: for samples over 1/50 of a population above 10000 (1/20
      // when not shuffled), the last n of a partial Fisher-Yates; else
      // Floyd's algorithm, then shuffled. Lemire draws throughout.
      bool shuffled = r.get_bool(5, true);
      if (pop > 10000 && n > pop / (shuffled ? 50 : 20)) {
        std::vector<int64_t> perm = iota(pop);
        for (int64_t i = pop - 1; i >= std::max<int64_t>(pop - n, 1); i--)
          std::swap(perm[static_cast<size_t>(i)],
                    perm[static_cast<size_t>(s.bounded(static_cast<uint64_t>(i)))]);
        idx.assign(perm.end() - n, perm.end());
      } else {
        std::unordered_set<int64_t> chosen;
        for (int64_t j = pop - n; j < pop; j++) {
          auto v = static_cast<int64_t>(s.bounded(static_cast<uint64_t>(j)));
          int64_t pick = chosen.count(v) ? j : v;
          chosen.insert(pick);
          idx.push_back(pick);
        }
        if (shuffled)
          for (size_t i = idx.size(); i-- > 1;)
            std::swap(idx[i], idx[s.bounded(static_cast<uint64_t>(i))]);
      }
    }
  }
  if (from_int && shape && pop - 1 > INT32_MAX)
    throw value_error("a is out of bounds for int32 (pxl's integer arrays are 32-bit)");
  if (from_int) return int_result(in, shape, idx, DType::Int32);
  return take_rows(in, items, idx, shape.value_or(Shape{}));
}

// permutation(x): a shuffled arange(x), or x's rows in shuffled order.
Value permutation(InterpreterImpl& in, Source& s, CallArgs& a) {
  ArgReader r("permutation", a, {"x", "axis"}, 1);
  bool from_int = r[0].is_intlike();
  Tensor x;
  int64_t n;
  if (from_int) {
    n = r.get_int(0);
    if (n < 0) throw value_error("negative dimensions are not allowed");
  } else {
    x = in.to_tensor(r[0], Span{});
    if (x->aval.shape.empty())
      throw Error(ErrCode::Index, "x must be an integer or at least 1-dimensional");
    n = x->aval.shape[0];
  }
  std::vector<int64_t> perm = iota(n);
  s.shuffle(perm);
  if (from_int) return int_result(in, Shape{n}, perm, DType::Int32);
  return take_rows(in, x, perm, Shape{n});
}

// shuffle(x): in place, as numpy's; pxl arrays are immutable, lists are not.
Value shuffle(InterpreterImpl&, Source& s, CallArgs& a) {
  ArgReader r("shuffle", a, {"x", "axis"}, 1);
  if (!r[0].is_obj(ObjKind::List))
    throw Error(ErrCode::Type, "shuffle() shuffles a list in place; pxl arrays are immutable",
                Span{}, "use permutation(x), which returns a shuffled copy");
  ValueList& items = r[0].as<ListObj>()->items;
  std::vector<int64_t> perm = iota(static_cast<int64_t>(items.size()));
  // numpy swaps the items themselves; swapping indices the same way is equivalent.
  s.shuffle(perm);
  ValueList old = items;
  for (size_t k = 0; k < perm.size(); k++) items[k] = old[static_cast<size_t>(perm[k])];
  return Value();
}

using Method = std::function<Value(InterpreterImpl&, Source&, CallArgs&)>;

// The methods RandomState and Generator share (each drawing its own way).
void add_common_methods(std::map<std::string, Method>& t) {
  t["uniform"] = uniform;
  t["normal"] = normal;
  t["choice"] = choice;
  t["permutation"] = permutation;
  t["shuffle"] = shuffle;
}

// RandomState's methods (also numpy.random's module-level functions).
const std::map<std::string, Method>& legacy_methods() {
  static const std::map<std::string, Method> m = [] {
    std::map<std::string, Method> t;
    t["seed"] = [](InterpreterImpl&, Source& s, CallArgs& a) {
      ArgReader r("seed", a, {"seed"});
      seed_legacy(s, r.has(0) ? r[0] : Value());
      return Value();
    };
    Method sample = [](InterpreterImpl&, Source& s, CallArgs& a) {
      ArgReader r("random_sample", a, {"size"});
      return draws(size_arg(r.has(0) ? r[0] : Value()), [&s] { return s.uniform(); });
    };
    for (const char* n : {"random_sample", "random", "sample", "ranf"}) t[n] = sample;
    t["rand"] = [](InterpreterImpl&, Source& s, CallArgs& a) {
      return draws(dims_args(a, "rand"), [&s] { return s.uniform(); });
    };
    t["randn"] = [](InterpreterImpl&, Source& s, CallArgs& a) {
      return draws(dims_args(a, "randn"), [&s] { return s.normal(); });
    };
    t["standard_normal"] = [](InterpreterImpl&, Source& s, CallArgs& a) {
      ArgReader r("standard_normal", a, {"size"});
      return draws(size_arg(r.has(0) ? r[0] : Value()), [&s] { return s.normal(); });
    };
    t["standard_exponential"] = [](InterpreterImpl&, Source& s, CallArgs& a) {
      ArgReader r("standard_exponential", a, {"size"});
      return draws(size_arg(r.has(0) ? r[0] : Value()),
                   [&s] { return -std::log(1.0 - s.uniform()); });
    };
    t["exponential"] = [](InterpreterImpl& in, Source& s, CallArgs& a) {
      ArgReader r("exponential", a, {"scale", "size"});
      Param scale = param(in, r, 0, 1.0);
      return broadcast_draws(
          size_arg(r.has(1) ? r[1] : Value()), {&scale}, [](ParamValues v) { check_scale(v[0]); },
          [&s](ParamValues v) { return v[0] * -std::log(1.0 - s.uniform()); });
    };
    add_common_methods(t);
    t["randint"] = [](InterpreterImpl& in, Source& s, CallArgs& a) {
      return integers(in, s, a, "randint");
    };
    return t;
  }();
  return m;
}

// Generator.random / standard_normal(size=None, dtype=float64): float32
// draws with numpy's float32 algorithm.
Method generator_floats(const char* name, double (*wide)(Source&), float (*narrow)(BitGen&)) {
  return [name, wide, narrow](InterpreterImpl&, Source& s, CallArgs& a) {
    ArgReader r(name, a, {"size", "dtype"});
    bool f32 = false;
    if (r.has(1) && !r[1].is_none()) {
      DType d = required_dtype(r[1], "dtype");
      if (d != DType::Float32 && d != DType::Float64)
        throw Error(ErrCode::Type,
                    std::string("Unsupported dtype dtype('") + dtype_name(d) + "') for " + name);
      f32 = d == DType::Float32;
    }
    std::optional<Shape> shape = size_arg(r.has(0) ? r[0] : Value());
    std::vector<double> out(static_cast<size_t>(shape ? count(*shape) : 1));
    for (double& x : out) x = f32 ? narrow(*s.gen) : wide(s);
    return float_result(shape, out, f32);
  };
}

// Generator's methods.
const std::map<std::string, Method>& generator_methods() {
  static const std::map<std::string, Method> m = [] {
    std::map<std::string, Method> t;
    t["random"] = generator_floats(
        "random", [](Source& s) { return s.uniform(); }, [](BitGen& g) { return g.next_float(); });
    t["standard_normal"] = generator_floats(
        "standard_normal", [](Source& s) { return s.normal(); }, standard_normal_ziggurat_f);
    add_common_methods(t);
    t["integers"] = [](InterpreterImpl& in, Source& s, CallArgs& a) {
      return integers(in, s, a, "integers");
    };
    return t;
  }();
  return m;
}

// A RandomState or a Generator: its source and its methods.
struct RandomObj : OpaqueObj {
  std::shared_ptr<Source> source;
  explicit RandomObj(std::shared_ptr<Source> s) : source(std::move(s)) {}
  const std::map<std::string, Method>& methods() const {
    return source->legacy ? legacy_methods() : generator_methods();
  }
  std::string type_name() const override { return source->legacy ? "RandomState" : "Generator"; }
  std::string repr() const override {
    return source->legacy ? "RandomState(MT19937)" : "Generator(PCG64)";
  }
  bool get_attr(InterpreterImpl&, const std::string& name, Value& out) override {
    auto it = methods().find(name);
    if (it == methods().end()) return false;
    Method m = it->second;
    std::shared_ptr<Source> s = source;
    out = make_builtin(name, [m, s](InterpreterImpl& in, CallArgs& a) { return m(in, *s, a); });
    return true;
  }
  std::vector<std::string> attr_names() const override {
    std::vector<std::string> names;
    for (const auto& [n, m] : methods()) names.push_back(n);
    return names;
  }
};

} // namespace

Value make_numpy_random_module(InterpreterImpl&) {
  ModuleBuilder b("numpy.random");
  b.fn("RandomState", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("RandomState", a, {"seed"});
    auto s = std::make_shared<Source>();
    seed_legacy(*s, r.has(0) ? r[0] : Value());
    return Value::object(std::make_shared<RandomObj>(s));
  });
  b.fn("default_rng", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("default_rng", a, {"seed"});
    auto s = std::make_shared<Source>();
    s->legacy = false;
    s->gen = std::make_unique<PCG64>(entropy_words(r.has(0) ? r[0] : Value()));
    return Value::object(std::make_shared<RandomObj>(s));
  });
  // The module-level functions draw from this module's own RandomState (one
  // per interpreter: each builds its modules), seeded from the OS until
  // np.random.seed is called, as numpy's.
  auto global = std::make_shared<Source>();
  seed_legacy(*global, Value());
  for (const auto& [name, m] : legacy_methods()) {
    Method method = m;
    b.fn(name,
         [method, global](InterpreterImpl& in, CallArgs& a) { return method(in, *global, a); });
  }
  return b.value();
}

} // namespace pxl
