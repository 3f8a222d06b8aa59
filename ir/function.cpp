// The IR's text form: printer, parser and verifier.
#include "ir/function.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>

#include "ir/custom_call.hpp"
#include "ir/reduce_tree.hpp"
#include "ir/while_loop.hpp"
#include "lang/diag.hpp"
#include "runtime/spmd_call.hpp"

namespace pxl {

int Function::axis_bit(const std::string& name) const {
  // Innermost first: a vmap axis_name may shadow an enclosing one (JAX).
  for (size_t i = mesh_axes.size(); i-- > 0;)
    if (mesh_axes[i] == name) return static_cast<int>(i);
  return -1;
}

std::string Function::axes_str(AxisSet s) const {
  if (!s) return "";
  std::string out = "{";
  bool first = true;
  for (size_t i = 0; i < mesh_axes.size(); ++i)
    if (s & (AxisSet{1} << i)) {
      out += (first ? "" : ",") + mesh_axes[i];
      first = false;
    }
  return out + "}";
}

std::string mat_suffix(const Function& f, const IRValue& v) {
  auto part = [&](AxisSet s, const char* tag) {
    std::string names;
    int n = 0;
    for (size_t i = 0; i < f.mesh_axes.size(); ++i)
      if (s & (AxisSet{1} << i)) names += (n++ ? "," : "") + f.mesh_axes[i];
    return n == 0 ? std::string() : std::string(tag) + ":" + (n > 1 ? "(" + names + ")" : names);
  };
  std::string out;
  for (const std::string& p : {part(v.vma, "V"), part(v.unreduced, "U"), part(v.reduced, "R")})
    if (!p.empty()) out += (out.empty() ? "" : ", ") + p;
  return out.empty() ? "" : "{" + out + "}";
}

namespace {

std::optional<DType> dtype_from_short(const std::string& s) {
  for (DType d : kAllDTypes)
    if (s == dtype_short_name(d)) return d;
  return dtype_from_name(s);
}

std::string loc_str(const Span& s) {
  if (!s.valid()) return "";
  return s.file->path() + ":" + std::to_string(s.file->line_of(s.begin)) + ":" +
         std::to_string(s.file->column_of(s.begin));
}

} // namespace

std::string type_str(const AVal& a) {
  std::string s = a.weak ? "~" : "";
  s += dtype_short_name(a.dtype);
  s += "[";
  for (size_t i = 0; i < a.shape.size(); ++i) s += (i ? "," : "") + std::to_string(a.shape[i]);
  return s + "]";
}

namespace {

// Names the Functions that while instructions hold, uniquely within one
// printout (the parser links them by name), and lists them in print order.
struct SubFunctions {
  std::map<const Function*, std::string> names;
  std::vector<const Function*> order;
  std::string name_of(const Function* f) {
    auto it = names.find(f);
    if (it != names.end()) return it->second;
    std::string base;
    for (char c : f->name)
      if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') base += c;
    if (base.empty()) base = "f";
    std::string name = base;
    for (int k = 1; taken(name); ++k) name = base + "_" + std::to_string(k);
    names[f] = name;
    order.push_back(f);
    return name;
  }
  bool taken(const std::string& n) const {
    for (const auto& [f, name] : names)
      if (name == n) return true;
    return false;
  }
};

std::string print_one(const Function& f, bool with_locations, SubFunctions& subs);

} // namespace

std::string print_function(const Function& f, bool with_locations) {
  SubFunctions subs;
  subs.name_of(&f);
  std::string out;
  // print_one may name more sub-Functions as it goes: index, not iterate.
  for (size_t i = 0; i < subs.order.size(); ++i)
    out += print_one(*subs.order[i], with_locations, subs);
  return out;
}

namespace {

std::string print_one(const Function& f, bool with_locations, SubFunctions& subs) {
  std::ostringstream os;
  auto val = [&](int id) { return "%" + std::to_string(id); };
  auto typ = [&](int id) { return type_str(f.values[id].aval) + f.axes_str(f.values[id].vma); };
  // "<lambda>" prints as "lambda": the name stays a plain identifier
  os << "func @" << subs.name_of(&f) << "(";
  for (size_t i = 0; i < f.params.size(); ++i)
    os << (i ? ", " : "") << val(f.params[i]) << ": " << typ(f.params[i]);
  os << ")";
  if (!f.consts.empty()) {
    os << " consts(";
    for (size_t i = 0; i < f.consts.size(); ++i)
      os << (i ? ", " : "") << val(f.consts[i]) << ": " << typ(f.consts[i]);
    os << ")";
  }
  os << " -> (";
  for (size_t i = 0; i < f.results.size(); ++i) os << (i ? ", " : "") << typ(f.results[i]);
  os << ")";
  if (!f.mesh_axes.empty()) {
    os << " mesh(";
    for (size_t i = 0; i < f.mesh_axes.size(); ++i)
      os << (i ? ", " : "") << f.mesh_axes[i] << "=" << f.mesh_sizes[i];
    os << ")";
  }
  os << " {\n";
  for (const Instr& in : f.body) {
    std::ostringstream line;
    line << " ";
    for (int r = 0; r < in.nresults; ++r) line << (r ? ", " : " ") << val(in.result + r);
    line << " = " << op_name(in.op);
    std::string attrs = attrs_str(in.op, in.attrs);
    if (in.op == Op::While) { // named in this order: cond prints first
      std::string cond = subs.name_of(in.attrs.loop->cond.get());
      std::string body = subs.name_of(in.attrs.loop->body.get());
      attrs = "cond=@" + cond + " body=@" + body + " " + attrs;
    }
    if (!attrs.empty()) line << "[" << attrs << "]";
    for (size_t i = 0; i < in.operands.size(); ++i) line << (i ? ", " : " ") << val(in.operands[i]);
    line << " : ";
    for (int r = 0; r < in.nresults; ++r) line << (r ? ", " : "") << typ(in.result + r);
    std::string l = line.str();
    std::string loc = with_locations ? loc_str(f.values[in.result].loc) : "";
    if (!loc.empty()) l += std::string(l.size() < 56 ? 56 - l.size() : 1, ' ') + "# " + loc;
    os << l << "\n";
  }
  os << "  return";
  for (size_t i = 0; i < f.results.size(); ++i) os << (i ? ", " : " ") << val(f.results[i]);
  os << "\n}\n";
  // The per-device Functions that spmd_calls run follow, each once.
  std::vector<const SpmdCallee*> printed;
  for (const Instr& in : f.body) {
    const SpmdCallee* c = in.op == Op::SpmdCall ? in.attrs.callee.get() : nullptr;
    if (!c || std::find(printed.begin(), printed.end(), c) != printed.end()) continue;
    printed.push_back(c);
    os << print_function(*c->fn, with_locations);
  }
  // And the primals of custom_calls.
  std::vector<const CustomCallee*> customs;
  for (const Instr& in : f.body) {
    const CustomCallee* c = in.op == Op::CustomCall ? in.attrs.custom.get() : nullptr;
    if (!c || std::find(customs.begin(), customs.end(), c) != customs.end()) continue;
    customs.push_back(c);
    os << print_function(*c->fn, with_locations);
  }
  return os.str();
}

} // namespace

// ---- parser --------------------------------------------------------------------

namespace {

class IRParser {
public:
  explicit IRParser(const std::string& text) : s_(text) {}

  // The first function of the text, linked to the sub-Functions of its while
  // instructions, which follow it.
  Function run() {
    std::shared_ptr<Function> main = parse_one();
    std::vector<std::shared_ptr<Function>> all{main};
    while (peek_word("func")) all.push_back(parse_one());
    for (auto& [loop, cond, body] : pending_) {
      loop->cond = find(all, cond);
      loop->body = find(all, body);
    }
    for (const auto& f : all) {
      std::string problem = verify_function(*f);
      if (!problem.empty()) fail("in @" + f->name + ": " + problem);
    }
    return *main;
  }

private:
  std::shared_ptr<Function> find(const std::vector<std::shared_ptr<Function>>& all,
                                 const std::string& name) {
    for (size_t i = 1; i < all.size(); ++i)
      if (all[i]->name == name) return all[i];
    fail("while refers to @" + name + ", which is not defined after the function");
  }

  std::shared_ptr<Function> parse_one() {
    auto fp = std::make_shared<Function>();
    Function& f = *fp;
    ids_.clear();
    expect_word("func");
    expect('@');
    f.name = ident();
    expect('(');
    std::vector<std::pair<int, std::string>> pending_params; // (id, type text) resolved after mesh
    if (!peek_is(')')) {
      do {
        int id = value_ref();
        expect(':');
        pending_params.push_back({id, type_text()});
      } while (accept(','));
    }
    expect(')');
    std::vector<std::pair<int, std::string>> pending_consts;
    if (accept_word("consts")) {
      expect('(');
      do {
        int id = value_ref();
        expect(':');
        pending_consts.push_back({id, type_text()});
      } while (accept(','));
      expect(')');
    }
    expect('-');
    expect('>');
    expect('(');
    while (!peek_is(')')) {
      type_text();
      if (!accept(',')) break;
    }
    expect(')');
    if (accept_word("mesh")) {
      expect('(');
      do {
        f.mesh_axes.push_back(ident());
        expect('=');
        f.mesh_sizes.push_back(integer());
      } while (accept(','));
      expect(')');
    }
    expect('{');
    f_ = &f;
    for (auto& [id, t] : pending_params) f.params.push_back(define(id, parse_type(t), -1));
    for (auto& [id, t] : pending_consts) f.consts.push_back(define(id, parse_type(t), -1));
    while (!accept_word("return")) {
      std::vector<int> ids{value_ref()};
      while (accept(',')) ids.push_back(value_ref());
      expect('=');
      std::string name = ident();
      auto op = op_by_name(name);
      // The callee of an SPMD call lives in memory (a Function with its
      // executable); the text form only names it.
      if (op_family(*op) == OpFamily::Call)
        fail(std::string(op_name(*op)) + " cannot be parsed back from text");
      Instr in{*op, {}, {}, -1};
      if (accept('[')) in.attrs = parse_attrs(*op);
      if (*op == Op::While && !in.attrs.loop) fail("while needs cond=@name and body=@name");
      skip_ws();
      while (peek_is('%')) {
        in.operands.push_back(use(value_ref()));
        if (!accept(',')) break;
      }
      expect(':');
      if (ids.size() > 1 && !is_multi_result(*op))
        fail(std::string(op_name(*op)) + " has one result");
      in.nresults = static_cast<int>(ids.size());
      for (size_t r = 0; r < ids.size(); ++r) {
        if (r) expect(',');
        int v = define(ids[r], parse_type(type_text()), static_cast<int>(f.body.size()));
        if (!r) in.result = v;
      }
      f.body.push_back(std::move(in));
      skip_comment();
    }
    skip_ws();
    while (peek_is('%')) {
      f.results.push_back(use(value_ref()));
      if (!accept(',')) break;
    }
    expect('}');
    return fp;
  }

  [[noreturn]] void fail(const std::string& msg) {
    int line = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) line += s_[i] == '\n';
    throw Error(ErrCode::Syntax, "IR text, line " + std::to_string(line) + ": " + msg);
  }
  void skip_ws() {
    while (pos_ < s_.size()) {
      if (std::isspace(static_cast<unsigned char>(s_[pos_])))
        ++pos_;
      else if (s_[pos_] == '#')
        skip_comment();
      else
        break;
    }
  }
  void skip_comment() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t')) ++pos_;
    if (pos_ < s_.size() && s_[pos_] == '#')
      while (pos_ < s_.size() && s_[pos_] != '\n') ++pos_;
  }
  bool peek_is(char c) {
    skip_ws();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  bool accept(char c) {
    if (!peek_is(c)) return false;
    ++pos_;
    return true;
  }
  void expect(char c) {
    if (!accept(c)) fail(std::string("expected '") + c + "'");
  }
  std::string ident() {
    skip_ws();
    size_t b = pos_;
    while (pos_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
      ++pos_;
    if (b == pos_) fail("expected a name");
    return s_.substr(b, pos_ - b);
  }
  bool accept_word(const char* w) {
    skip_ws();
    size_t n = std::char_traits<char>::length(w);
    if (s_.compare(pos_, n, w) == 0 &&
        (pos_ + n >= s_.size() || !std::isalnum(static_cast<unsigned char>(s_[pos_ + n])))) {
      pos_ += n;
      return true;
    }
    return false;
  }
  bool peek_word(const char* w) {
    size_t saved = pos_;
    bool found = accept_word(w);
    pos_ = saved;
    return found;
  }
  void expect_word(const char* w) {
    if (!accept_word(w)) fail(std::string("expected '") + w + "'");
  }
  int64_t integer() {
    skip_ws();
    size_t b = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    if (b == pos_ || (pos_ == b + 1 && s_[b] == '-')) fail("expected an integer");
    return std::stoll(s_.substr(b, std::min<size_t>(pos_ - b, 18)));
  }
  int value_ref() {
    expect('%');
    int64_t v = integer();
    if (v < 0 || v > 10000000) fail("bad value number");
    return static_cast<int>(v);
  }
  std::string type_text() {
    skip_ws();
    size_t b = pos_;
    while (pos_ < s_.size() && s_[pos_] != ']') ++pos_;
    if (pos_ < s_.size()) ++pos_;
    if (pos_ < s_.size() && s_[pos_] == '{')
      while (pos_ < s_.size() && s_[pos_] != '}') ++pos_, (void)0;
    if (pos_ < s_.size() && s_[pos_] == '}') ++pos_;
    return s_.substr(b, pos_ - b);
  }
  IRValue parse_type(const std::string& t) {
    IRValue v;
    size_t i = 0;
    if (i < t.size() && t[i] == '~') v.aval.weak = true, ++i;
    size_t br = t.find('[', i);
    size_t close = t.find(']', i);
    if (br == std::string::npos || close == std::string::npos) fail("bad type '" + t + "'");
    auto dt = dtype_from_short(t.substr(i, br - i));
    if (!dt) fail("unknown dtype in '" + t + "'");
    v.aval.dtype = *dt;
    std::string dims = t.substr(br + 1, close - br - 1);
    std::stringstream ds(dims);
    std::string d;
    while (std::getline(ds, d, ','))
      if (!d.empty()) v.aval.shape.push_back(std::stoll(d.substr(0, 18)));
    size_t lb = t.find('{', close);
    if (lb != std::string::npos) {
      std::stringstream as(t.substr(lb + 1, t.find('}', lb) - lb - 1));
      std::string a;
      while (std::getline(as, a, ',')) {
        int bit = f_ ? f_->axis_bit(a) : -1;
        if (bit < 0) fail("unknown mesh axis '" + a + "' in type '" + t + "'");
        v.vma |= AxisSet{1} << bit;
      }
    }
    return v;
  }
  std::optional<Op> op_by_name(const std::string& name) {
    for (int i = 0;; ++i) {
      Op op = static_cast<Op>(i);
      if (i >= kNumOps) break;
      if (name == op_name(op)) return op;
    }
    fail("unknown op '" + name + "'");
  }
  std::vector<int64_t> int_list(char open, char close) {
    expect(open);
    std::vector<int64_t> out;
    while (!peek_is(close)) {
      out.push_back(integer());
      if (!accept(',')) break;
    }
    expect(close);
    return out;
  }
  OpAttrs parse_attrs(Op op) {
    OpAttrs a;
    PendingLoop loop;
    int64_t cond_nconsts = 0, body_nconsts = 0;
    while (!accept(']')) {
      std::string key = ident();
      expect('=');
      if (op == Op::While && (key == "cond" || key == "body")) {
        expect('@');
        (key == "cond" ? loop.cond : loop.body) = ident();
      } else if (op == Op::While && (key == "cond_nconsts" || key == "body_nconsts")) {
        int64_t n = integer();
        if (n < 0 || n > 1000000) fail("bad " + key);
        (key == "cond_nconsts" ? cond_nconsts : body_nconsts) = n;
      } else if (!parse_attr(a, key)) {
        fail("unknown attribute '" + key + "' for " + op_name(op));
      }
    }
    if (op == Op::While) {
      if (loop.cond.empty() || loop.body.empty()) fail("while needs cond=@name and body=@name");
      // Linked to its Functions by run(), once they are read.
      loop.loop = make_while_loop(nullptr, nullptr, static_cast<int>(cond_nconsts),
                                  static_cast<int>(body_nconsts));
      a.loop = loop.loop;
      pending_.push_back(std::move(loop));
    }
    return a;
  }
  bool parse_attr(OpAttrs& a, const std::string& key);

  int define(int id, IRValue v, int producer) {
    if (ids_.count(id)) fail("value %" + std::to_string(id) + " defined twice");
    v.producer = producer;
    int real = f_->add_value(std::move(v));
    ids_[id] = real;
    return real;
  }
  int use(int id) {
    auto it = ids_.find(id);
    if (it == ids_.end()) fail("value %" + std::to_string(id) + " used before its definition");
    return it->second;
  }

  const std::string& s_;
  size_t pos_ = 0;
  Function* f_ = nullptr;
  std::map<int, int> ids_;
  struct PendingLoop {
    std::shared_ptr<WhileLoop> loop;
    std::string cond, body;
  };
  std::vector<PendingLoop> pending_; // while instructions, linked once every function is read

public:
  static const int kNumOps;
};

const int IRParser::kNumOps = [] {
  int n = 0;
#define OP(name, text, arity, family) ++n;
#include "ir/ops.def"
#undef OP
  return n;
}();

} // namespace
} // namespace pxl

namespace pxl {
namespace {

// The boolean attribute named `key`, or null.
bool* bool_attr(OpAttrs& a, const std::string& key) {
  LinalgAttrs& l = a.linalg;
  const std::pair<const char*, bool*> flags[] = {{"weak", &a.weak},
                                                 {"reverse", &a.reverse},
                                                 {"tiled", &a.tiled},
                                                 {"left_side", &l.left_side},
                                                 {"lower", &l.lower},
                                                 {"transpose_a", &l.transpose_a},
                                                 {"unit_diagonal", &l.unit_diagonal},
                                                 {"full_matrices", &l.full_matrices},
                                                 {"compute_uv", &l.compute_uv},
                                                 {"compute_left", &l.compute_left},
                                                 {"compute_right", &l.compute_right}};
  for (auto [name, field] : flags)
    if (key == name) return field;
  return nullptr;
}

bool IRParser::parse_attr(OpAttrs& a, const std::string& key) {
  if (key == "dtype") {
    auto d = dtype_from_name(ident());
    if (!d) fail("unknown dtype");
    a.dtype = *d;
  } else if (bool* flag = bool_attr(a, key)) {
    bool v = accept_word("true");
    if (!v) expect_word("false");
    *flag = v;
  } else if (key == "y") { // integer_pow
    a.exponent = integer();
  } else if (key == "squares") { // mul_reduce_sum: both factors are one value
    bool v = accept_word("true");
    if (!v) expect_word("false");
    a.exponent = v ? 2 : 0;
  } else if (key == "computed") { // mul_reduce_sum: its factors are computed in its loop
    bool v = accept_word("true");
    if (!v) expect_word("false");
    a.axis = v ? 1 : 0;
  } else if (key == "scaled") { // mul_reduce_sum: one factor is a broadcast scalar
    bool v = accept_word("true");
    if (!v) expect_word("false");
    a.axis = v ? 2 : 0;
  } else if (key == "body") { // reduce_sum, mul_reduce_sum: the LoopBody (ir/reduce_tree.hpp)
    a.loop_body = integer();
    if (loop_body_from(a.loop_body) != static_cast<LoopBody>(a.loop_body))
      fail("unknown loop body");
  } else if (key == "output") {
    a.linalg.output = static_cast<int>(integer());
  } else if (key == "shape") {
    a.shape = int_list('(', ')');
  } else if (key == "axis") {
    a.axis = integer();
  } else if (key == "concat_axis") {
    a.concat_axis = integer();
  } else if (key == "format" || key == "word") { // debug_print, threefry2x32
    a.axis = integer();
  } else if (key == "fft_type") {
    std::string t = ident();
    const char* names[] = {"FFT", "IFFT", "RFFT", "IRFFT"};
    a.axis = -1;
    for (int i = 0; i < 4; ++i)
      if (t == names[i]) a.axis = i;
    if (a.axis < 0) fail("unknown fft_type '" + t + "'");
  } else if (key == "fft_lengths") {
    a.shape = int_list('[', ']');
  } else if (key == "group_size") {
    a.group_size = integer();
  } else if (key == "axis_index_groups") {
    expect('[');
    while (!peek_is(']')) {
      a.index_groups.push_back(int_list('[', ']'));
      if (!accept(',')) break;
    }
    expect(']');
  } else if (key == "dims" || key == "axes") {
    a.axes = int_list('[', ']');
  } else if (key == "perm") {
    a.perm = int_list('[', ']');
  } else if (key == "starts" || key == "limits" || key == "strides" || key == "lo" || key == "hi" ||
             key == "interior") {
    auto v = int_list('[', ']');
    (key == "starts"    ? a.starts
     : key == "limits"  ? a.limits
     : key == "strides" ? a.strides
     : key == "lo"      ? a.lo
     : key == "hi"      ? a.hi
                        : a.interior) = v;
  } else if (key == "lhs_batch" || key == "rhs_batch" || key == "lhs_contract" ||
             key == "rhs_contract") {
    auto v = int_list('[', ']');
    (key == "lhs_batch"      ? a.dot.lhs_batch
     : key == "rhs_batch"    ? a.dot.rhs_batch
     : key == "lhs_contract" ? a.dot.lhs_contract
                             : a.dot.rhs_contract) = v;
  } else if (key == "order") { // dot_general: a convolution's summation order
    std::string o = ident();
    if (o != "chain" && o != "ynn" && o != "elemental") fail("unknown dot order '" + o + "'");
    a.dot.order = o == "chain" ? DotOrder::Chain : o == "ynn" ? DotOrder::Ynn : DotOrder::Elemental;
  } else if (key == "preferred") { // dot_general: preferred_element_type=None (jaxpr text)
    if (ident() != "none") fail("dot_general's preferred= can only be none");
    a.dot.preferred_none = true;
  } else if (key == "precision") { // dot_general: precision=HIGHEST,DEFAULT
    for (size_t i = 0; i < 2; ++i) {
      if (i == 1) expect(',');
      std::string name = ident();
      uint8_t code = kPrecisionNone;
      for (uint8_t c : {kPrecisionDefault, kPrecisionHigh, kPrecisionHighest})
        if (name == precision_name(c)) code = c;
      if (code == kPrecisionNone) fail("unknown dot precision '" + name + "'");
      a.dot.precision[i] = code;
    }
  } else if (key == "mode") {
    std::string m = ident();
    bool found = false;
    for (ScatterMode mode :
         {ScatterMode::Set, ScatterMode::Add, ScatterMode::Mul, ScatterMode::Min, ScatterMode::Max})
      if (m == scatter_mode_name(mode)) a.mode = mode, found = true;
    if (!found) fail("unknown scatter mode '" + m + "'");
  } else if (key == "sharding") {
    expect('[');
    while (!peek_is(']')) {
      a.dim_axes.emplace_back();
      expect('(');
      while (!peek_is(')')) {
        a.dim_axes.back().push_back(ident());
        if (!accept(',')) break;
      }
      expect(')');
      if (!accept(',')) break;
    }
    expect(']');
  } else if (key == "axis_names" || key == "unreduced" || key == "reduced") {
    // (sharding_constraint's reduced= axes are its `unreduced` with concat_axis 1)
    if (key == "reduced") a.concat_axis = 1;
    std::vector<std::string>& names = key == "axis_names" ? a.axis_names : a.unreduced;
    expect('(');
    while (!peek_is(')')) {
      names.push_back(ident());
      if (!accept(',')) break;
    }
    expect(')');
  } else if (key == "pairs") {
    expect('[');
    while (!peek_is(']')) {
      expect('(');
      int64_t s = integer();
      expect(',');
      int64_t d = integer();
      expect(')');
      a.pairs.push_back({s, d});
      if (!accept(',')) break;
    }
    expect(']');
  } else {
    return false;
  }
  return true;
}

} // namespace

Function parse_function(const std::string& text) { return IRParser(text).run(); }

namespace {
bool any_effect(const Function& f) {
  if (!f.debug_formats.empty()) return true;
  return std::any_of(f.body.begin(), f.body.end(), [](const Instr& in) { return has_effect(in); });
}
} // namespace

bool has_effect(const Instr& in) {
  switch (in.op) {
  case Op::HostCallback:
    return !in.attrs.host || !in.attrs.host->pure;
  case Op::While:
    return any_effect(*in.attrs.loop->cond) || any_effect(*in.attrs.loop->body);
  case Op::CustomCall:
    return in.attrs.custom && any_effect(*in.attrs.custom->fn);
  default:
    return op_family(in.op) == OpFamily::Effect;
  }
}

void remove_dead_code(Function& f) {
  std::vector<bool> live(f.values.size(), false);
  for (int r : f.results) live[r] = true;
  std::vector<bool> keep(f.body.size(), false);
  for (size_t i = f.body.size(); i-- > 0;) {
    const Instr& in = f.body[i];
    bool needed = has_effect(in);
    for (int r = 0; r < in.nresults; ++r) needed = needed || live[in.result + r];
    if (!needed) continue;
    keep[i] = true;
    for (int o : in.operands) live[o] = true;
  }
  std::vector<Instr> body;
  for (size_t i = 0; i < f.body.size(); ++i) {
    Instr& in = f.body[i];
    for (int r = 0; r < in.nresults; ++r)
      f.values[in.result + r].producer = keep[i] ? static_cast<int>(body.size()) : -1;
    if (keep[i]) body.push_back(std::move(in));
  }
  f.body = std::move(body);
}

std::string verify_function(const Function& f) {
  std::vector<bool> defined(f.values.size(), false);
  for (int p : f.params) defined.at(p) = true;
  for (int c : f.consts) defined.at(c) = true;
  for (size_t i = 0; i < f.body.size(); ++i) {
    const Instr& in = f.body[i];
    std::vector<AVal> avals;
    for (int o : in.operands) {
      if (o < 0 || o >= static_cast<int>(f.values.size()) || !defined[o])
        return "instruction " + std::to_string(i) + " (" + op_name(in.op) + ") uses %" +
               std::to_string(o) + " before it is defined";
      avals.push_back(f.values[o].aval);
    }
    std::vector<AVal> want;
    try {
      want = infer_results(in.op, in.attrs, avals);
    } catch (const Error& e) {
      return std::string(op_name(in.op)) + " %" + std::to_string(in.result) + ": " + e.message();
    }
    if (static_cast<int>(want.size()) != in.nresults ||
        in.result + in.nresults > static_cast<int>(f.values.size()))
      return std::string(op_name(in.op)) + " %" + std::to_string(in.result) + " declares " +
             std::to_string(in.nresults) + " results but its shape rule gives " +
             std::to_string(want.size());
    for (int r = 0; r < in.nresults; ++r) {
      const AVal& got = f.values.at(in.result + r).aval;
      if (want[r].shape != got.shape || want[r].dtype != got.dtype)
        return std::string(op_name(in.op)) + " %" + std::to_string(in.result + r) +
               " is declared " + type_str(got) + " but its shape rule gives " + type_str(want[r]);
      defined[in.result + r] = true;
    }
  }
  for (int r : f.results)
    if (r < 0 || r >= static_cast<int>(f.values.size()) || !defined[r])
      return "result %" + std::to_string(r) + " is not defined";
  return {};
}

} // namespace pxl
