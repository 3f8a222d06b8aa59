// PTX text to the emulator's pre-decoded kernels. The text is cut into
// statements (up to ';', braces that open or close a scope, labels); module
// statements give variables and functions; each kernel is then assembled with
// every .func of the module after it, sharing one register file and one
// per-thread local area (no recursion in pxl's PTX, so every function has
// fixed slots, including its return address). Anything not understood is an
// error naming the PTX line.
#include <cctype>
#include <map>
#include <stdexcept>

#include "ptx_decode.hpp"
#include "ptx_emulator.hpp"

namespace ptxemu {
namespace {

struct ParseError {
  int line;
  std::string message;
};
[[noreturn]] void fail(int line, const std::string& m) { throw ParseError{line, m}; }

struct Stmt {
  std::string text;
  int line;
};

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '.' ||
         c == '%';
}

bool is_label(const std::string& t) {
  if (t.empty() || t[0] == '.' || t[0] == '%') return false;
  for (char c : t)
    if (!ident_char(c)) return false;
  return true;
}

bool is_header(const std::string& t) {
  return t.find(".entry") != std::string::npos || t.find(".func") != std::string::npos;
}

// Statements: the text up to ';', a label "name:", "{" and "}" of scopes. A
// brace inside a statement (a vector operand, an initializer) stays in it.
std::vector<Stmt> split(const char* src) {
  std::vector<Stmt> out;
  std::string cur;
  int line = 1, start = 1;
  auto emit = [&] {
    std::string t = trim(cur);
    if (!t.empty()) out.push_back({t, start});
    cur.clear();
  };
  for (const char* p = src; *p; ++p) {
    char c = *p;
    if (c == '/' && p[1] == '/') {
      while (p[1] && p[1] != '\n') ++p;
      continue;
    }
    if (c == '/' && p[1] == '*') {
      for (p += 2; *p && !(p[0] == '*' && p[1] == '/'); ++p) line += *p == '\n';
      if (!*p) break;
      ++p;
      continue;
    }
    if (trim(cur).empty() && !std::isspace(static_cast<unsigned char>(c))) start = line;
    if (c == '"') {
      cur += c;
      for (++p; *p && *p != '"'; ++p) cur += *p;
      if (!*p) break;
      cur += '"';
      continue;
    }
    if (c == '\n') {
      ++line;
      // These directives end at the line's end, without ';'.
      std::string t = trim(cur);
      for (const char* d : {".version", ".target", ".address_size", ".file", ".loc", ".section"})
        if (t.rfind(d, 0) == 0) emit();
      cur += ' ';
      continue;
    }
    if (c == ';') {
      emit();
      continue;
    }
    std::string t = trim(cur);
    if (c == '{' && (t.empty() || (is_header(t) && t.find('=') == std::string::npos))) {
      emit();
      out.push_back({"{", line});
      continue;
    }
    if (c == '}' && t.empty()) {
      out.push_back({"}", line});
      continue;
    }
    if (c == ':' && p[1] != ':' && is_label(t)) {
      cur = t + ":";
      emit();
      continue;
    }
    cur += c;
  }
  emit();
  return out;
}

// Splits at commas outside brackets, braces and parentheses.
std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    if (c == '[' || c == '{' || c == '(') ++depth;
    if (c == ']' || c == '}' || c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!trim(cur).empty() || !out.empty()) out.push_back(trim(cur));
  return out;
}

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!cur.empty()) out.push_back(cur), cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

Ty type_of(const std::string& s) {
  static const std::map<std::string, Ty> types = {
      {"b8", Ty::B8},   {"b16", Ty::B16},     {"b32", Ty::B32},   {"b64", Ty::B64},
      {"u8", Ty::U8},   {"u16", Ty::U16},     {"u32", Ty::U32},   {"u64", Ty::U64},
      {"s8", Ty::S8},   {"s16", Ty::S16},     {"s32", Ty::S32},   {"s64", Ty::S64},
      {"f16", Ty::F16}, {"f16x2", Ty::F16x2}, {"bf16", Ty::BF16}, {"bf16x2", Ty::BF16x2},
      {"f32", Ty::F32}, {"f64", Ty::F64},     {"pred", Ty::Pred}};
  auto it = types.find(s);
  return it == types.end() ? Ty::None : it->second;
}

Opcode parse_opcode(const std::string& s, int line) {
  Opcode op;
  op.text = s;
  size_t start = 0;
  bool first = true;
  while (start <= s.size()) {
    size_t dot = s.find('.', start);
    std::string part = s.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    start = dot == std::string::npos ? s.size() + 1 : dot + 1;
    if (first) {
      op.base = part;
      first = false;
      continue;
    }
    Ty t = type_of(part);
    if (t != Ty::None) {
      op.types.push_back(t);
    } else if (part == "v2" || part == "v4") {
      op.vec = part[1] - '0';
    } else if (part == "global") {
      op.space = Space::Global;
    } else if (part == "shared" || part == "shared::cta") {
      op.space = Space::Shared;
    } else if (part == "local") {
      op.space = Space::Local;
    } else if (part == "param") {
      op.space = Space::Param;
    } else if (part == "const") {
      op.space = Space::Const;
    } else if (part.empty()) {
      fail(line, "malformed opcode '" + s + "'");
    } else {
      op.mods.push_back(part);
    }
  }
  return op;
}

bool parse_int(const std::string& t, uint64_t& v) {
  std::string s = t;
  if (!s.empty() && (s.back() == 'U' || s.back() == 'u')) s.pop_back();
  bool neg = !s.empty() && s[0] == '-';
  if (neg) s = s.substr(1);
  if (s.empty()) return false;
  int base = 10;
  size_t at = 0;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) base = 16, at = 2;
  if (s.size() > 1 && s[0] == '0' && base == 10) base = 8, at = 1; // PTX: a leading 0 is octal
  uint64_t r = 0;
  for (size_t i = at; i < s.size(); ++i) {
    int d = std::isdigit(static_cast<unsigned char>(s[i])) ? s[i] - '0'
            : std::isxdigit(static_cast<unsigned char>(s[i]))
                ? std::tolower(static_cast<unsigned char>(s[i])) - 'a' + 10
                : 99;
    if (d >= base) return false;
    r = r * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
  }
  v = neg ? ~r + 1 : r;
  return true;
}

// An immediate: integers, 0fXXXXXXXX (f32 bits), 0dXXXXXXXXXXXXXXXX (f64 bits).
bool parse_imm(const std::string& t, uint64_t& v) {
  if (t.size() == 10 && t[0] == '0' && (t[1] == 'f' || t[1] == 'F'))
    return parse_int("0x" + t.substr(2), v);
  if (t.size() == 18 && t[0] == '0' && (t[1] == 'd' || t[1] == 'D'))
    return parse_int("0x" + t.substr(2), v);
  return parse_int(t, v);
}

struct ParamDecl {
  std::string name;
  uint32_t size = 0, align = 1;
};

struct VarDecl {
  std::string space, name;
  uint64_t size = 0, align = 1, elem = 1;
  bool external = false;
  std::vector<uint8_t> init;
};

// `.global .align 4 .b8 name[24] = {1, 2, ...}` and the like.
VarDecl parse_var(const std::string& text, int line) {
  VarDecl v;
  std::string left = text, init;
  if (size_t eq = text.find('='); eq != std::string::npos)
    left = trim(text.substr(0, eq)), init = trim(text.substr(eq + 1));
  auto w = words(left);
  std::string name;
  for (size_t i = 0; i < w.size(); ++i) {
    const std::string& x = w[i];
    if (x == ".align" && i + 1 < w.size()) {
      uint64_t a;
      if (!parse_int(w[++i], a)) fail(line, "bad alignment");
      v.align = a;
    } else if (x == ".global" || x == ".shared" || x == ".local" || x == ".param" ||
               x == ".const") {
      v.space = x.substr(1);
    } else if (x == ".extern") {
      v.external = true;
    } else if (x == ".visible" || x == ".weak" || x == ".common") {
    } else if (x[0] == '.') {
      Ty t = type_of(x.substr(1));
      if (t == Ty::None || t == Ty::Pred) fail(line, "unsupported declaration '" + text + "'");
      v.elem = static_cast<uint64_t>(ty_bytes(t));
    } else {
      name += x;
    }
  }
  uint64_t count = 1;
  size_t br = name.find('[');
  v.name = name.substr(0, br);
  bool open = false;
  while (br != std::string::npos) {
    size_t close = name.find(']', br);
    if (close == std::string::npos) fail(line, "bad array declaration");
    std::string n = name.substr(br + 1, close - br - 1);
    uint64_t d;
    if (n.empty())
      open = true;
    else if (!parse_int(n, d))
      fail(line, "bad array size");
    else
      count *= d;
    br = name.find('[', close);
  }
  if (v.align < v.elem) v.align = v.elem;
  if (!init.empty()) {
    if (init.front() == '{') init = init.substr(1, init.size() - 2);
    auto items = split_commas(init);
    if (open) count = items.size();
    if (items.size() > count) fail(line, "too many initializers");
    v.init.assign(count * v.elem, 0);
    for (size_t i = 0; i < items.size(); ++i) {
      uint64_t x;
      if (!parse_imm(items[i], x)) fail(line, "unsupported initializer '" + items[i] + "'");
      std::memcpy(&v.init[i * v.elem], &x, v.elem);
    }
  } else if (open && !v.external) {
    fail(line, "array without a size");
  }
  v.size = open && init.empty() ? 0 : count * v.elem;
  return v;
}

struct FuncSrc {
  bool entry = false;
  std::string name;
  std::vector<ParamDecl> params, rets;
  std::vector<Stmt> body;
  int line = 0;
};

std::vector<ParamDecl> param_list(const std::string& inside, int line) {
  std::vector<ParamDecl> out;
  for (const auto& p : split_commas(inside)) {
    if (p.empty()) continue;
    VarDecl v = parse_var(p, line);
    if (v.space != "param") fail(line, "unsupported parameter '" + p + "'");
    out.push_back({v.name, static_cast<uint32_t>(v.size), static_cast<uint32_t>(v.align)});
  }
  return out;
}

// ".visible .entry k0(.param .u64 a, ...) .maxntid 128, 1, 1" or
// ".func (.param .b32 r) name(.param .b32 p)".
FuncSrc parse_header(const std::string& h, int line) {
  FuncSrc f;
  f.line = line;
  size_t at = h.find(".entry");
  f.entry = at != std::string::npos;
  at = f.entry ? at + 6 : h.find(".func") + 5;
  auto skip = [&] {
    while (at < h.size() && std::isspace(static_cast<unsigned char>(h[at]))) ++at;
  };
  auto group = [&] { // the text inside the parentheses at `at`
    size_t close = h.find(')', at);
    if (close == std::string::npos) fail(line, "unbalanced parentheses");
    std::string in = h.substr(at + 1, close - at - 1);
    at = close + 1;
    return in;
  };
  skip();
  if (!f.entry && at < h.size() && h[at] == '(') f.rets = param_list(group(), line);
  skip();
  size_t b = at;
  while (at < h.size() && h[at] != '(' && !std::isspace(static_cast<unsigned char>(h[at]))) ++at;
  f.name = h.substr(b, at - b);
  skip();
  if (at < h.size() && h[at] == '(') f.params = param_list(group(), line);
  return f;
}

uint64_t align_up(uint64_t x, uint64_t a) { return a ? (x + a - 1) / a * a : x; }

// What a callee looks like from a call site.
struct FuncInfo {
  uint32_t entry = 0, ret_slot = 0;
  std::vector<Operand> params, rets; // their storage in local memory
  std::vector<uint32_t> param_size, ret_size;
};

struct Sym {
  Operand op;
  bool reg = false;   // a register (writable)
  uint32_t count = 0; // a register range %r<count>: op.reg is %r0
};

// Assembles one kernel: its body, then every .func of the module.
class Builder {
public:
  Builder(Kernel& k, const std::map<std::string, Operand>& module_syms,
          const std::vector<FuncSrc>& funcs)
      : k_(k), module_syms_(module_syms), funcs_(funcs) {}

  void build(const FuncSrc& entry) {
    uint64_t off = 0;
    for (const auto& p : entry.params) {
      off = align_up(off, p.align);
      k_.param_offset.push_back(static_cast<uint32_t>(off));
      k_.param_size.push_back(p.size);
      off += p.size;
    }
    k_.param_bytes = off;
    for (const auto& f : funcs_) {
      FuncInfo& info = info_[f.name];
      info.ret_slot = k_.nregs++;
      for (const auto& p : f.params) {
        info.params.push_back(local_var(p.size, p.align));
        info.param_size.push_back(p.size);
      }
      for (const auto& r : f.rets) {
        info.rets.push_back(local_var(r.size, r.align));
        info.ret_size.push_back(r.size);
      }
    }
    body(entry, nullptr);
    for (const auto& f : funcs_) {
      info_[f.name].entry = static_cast<uint32_t>(k_.code.size());
      body(f, &info_[f.name]);
    }
    for (const auto& [at, name, line] : calls_) {
      auto it = info_.find(name);
      if (it == info_.end()) fail(line, "call of an undefined function '" + name + "'");
      k_.code[at].target = it->second.entry;
    }
  }

private:
  Operand local_var(uint64_t size, uint64_t align) {
    k_.local_bytes = align_up(k_.local_bytes, std::max<uint64_t>(align, 1));
    Operand o{kLocalBase, k_.local_bytes};
    k_.local_bytes += size;
    return o;
  }

  void body(const FuncSrc& f, const FuncInfo* self) {
    scopes_.assign(1, {});
    labels_.clear();
    branches_.clear();
    // A function's own parameters are names in its outer scope.
    if (self) {
      for (size_t i = 0; i < f.params.size(); ++i)
        scopes_[0][f.params[i].name] = Sym{self->params[i]};
      for (size_t i = 0; i < f.rets.size(); ++i) scopes_[0][f.rets[i].name] = Sym{self->rets[i]};
    } else {
      for (size_t i = 0; i < f.params.size(); ++i)
        scopes_[0][f.params[i].name] = Sym{Operand{kParamBase, k_.param_offset[i]}};
    }
    for (const Stmt& s : f.body) statement(s, self);
    for (const auto& [at, name, line] : branches_) {
      auto it = labels_.find(name);
      if (it == labels_.end()) fail(line, "undefined label '" + name + "'");
      k_.code[at].target = it->second;
    }
  }

  void statement(const Stmt& s, const FuncInfo* self) {
    const std::string& t = s.text;
    if (t == "{") return scopes_.emplace_back(), void();
    if (t == "}") {
      if (scopes_.size() <= 1) fail(s.line, "unbalanced '}'");
      scopes_.pop_back();
      return;
    }
    if (t.back() == ':') {
      labels_[t.substr(0, t.size() - 1)] = static_cast<uint32_t>(k_.code.size());
      return;
    }
    if (t[0] == '.') return directive(s);
    instruction(s, self);
  }

  void directive(const Stmt& s) {
    auto w = words(s.text);
    const std::string& d = w[0];
    if (d == ".pragma" || d == ".loc" || d == ".file") return;
    if (d == ".reg") return registers(s);
    if (d == ".local" || d == ".shared" || d == ".param") {
      VarDecl v = parse_var(s.text, s.line);
      if (v.external) fail(s.line, "dynamic (.extern) shared memory is not emulated");
      if (!v.init.empty()) fail(s.line, "initialized " + d + " variables are not emulated");
      Operand o;
      if (d == ".shared") {
        k_.shared_bytes = align_up(k_.shared_bytes, v.align);
        o = Operand{kSharedBase, k_.shared_bytes};
        k_.shared_bytes += v.size;
      } else {
        o = local_var(v.size, v.align);
      }
      scopes_.back()[v.name] = Sym{o};
      return;
    }
    fail(s.line, "unsupported directive '" + s.text + "'");
  }

  // .reg .b32 %r<5>;  .reg .b64 %SP;  .reg .f32 %a, %b;
  void registers(const Stmt& s) {
    std::string rest = trim(s.text.substr(4));
    size_t sp = rest.find_first_of(" \t");
    if (sp == std::string::npos) fail(s.line, "bad register declaration");
    std::string type = rest.substr(0, sp);
    if (type == ".v2" || type == ".v4") fail(s.line, "vector registers are not emulated");
    for (const auto& name : split_commas(trim(rest.substr(sp)))) {
      size_t lt = name.find('<');
      Sym sym;
      sym.reg = true;
      sym.op.reg = k_.nregs;
      if (lt != std::string::npos) {
        uint64_t n;
        if (!parse_int(name.substr(lt + 1, name.size() - lt - 2), n))
          fail(s.line, "bad register count");
        sym.count = static_cast<uint32_t>(n);
        k_.nregs += sym.count;
        scopes_.back()[name.substr(0, lt)] = sym;
      } else {
        k_.nregs += 1;
        scopes_.back()[name] = sym;
      }
    }
  }

  const Sym* lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
      if (auto f = it->find(name); f != it->end() && f->second.count == 0) return &f->second;
    return nullptr;
  }

  // A register %name: declared alone, or %prefixN of a %prefix<count> range.
  bool reg(const std::string& name, Operand& o) const {
    if (const Sym* s = lookup(name); s && s->reg) return o = s->op, true;
    size_t d = name.size();
    while (d > 0 && std::isdigit(static_cast<unsigned char>(name[d - 1]))) --d;
    if (d == name.size()) return false;
    std::string prefix = name.substr(0, d);
    uint64_t i;
    if (!parse_int(name.substr(d), i) && name.substr(d) != "0") return false;
    if (name.substr(d) == "0") i = 0;
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
      if (auto f = it->find(prefix); f != it->end() && f->second.count > i)
        return o = Operand{f->second.op.reg + static_cast<uint32_t>(i), 0}, true;
    return false;
  }

  // One operand value; `writable` tells whether it is a register.
  Operand value(const std::string& t, bool& writable, int line) const {
    writable = false;
    Operand o;
    if (t == "_") return writable = true, Operand{kSink, 0};
    if (t[0] == '%') {
      if (reg(t, o)) return writable = true, o;
      static const std::map<std::string, uint32_t> special = {{"%tid.x", kTidX},
                                                              {"%tid.y", kTidY},
                                                              {"%tid.z", kTidZ},
                                                              {"%ntid.x", kNtidX},
                                                              {"%ntid.y", kNtidY},
                                                              {"%ntid.z", kNtidZ},
                                                              {"%ctaid.x", kCtaidX},
                                                              {"%ctaid.y", kCtaidY},
                                                              {"%ctaid.z", kCtaidZ},
                                                              {"%nctaid.x", kNctaidX},
                                                              {"%nctaid.y", kNctaidY},
                                                              {"%nctaid.z", kNctaidZ},
                                                              {"%laneid", kLaneId},
                                                              {"%warpid", kWarpId},
                                                              {"%nwarpid", kNWarpId},
                                                              {"%lanemask_eq", kLanemaskEq},
                                                              {"%lanemask_lt", kLanemaskLt},
                                                              {"%lanemask_le", kLanemaskLe},
                                                              {"%lanemask_gt", kLanemaskGt},
                                                              {"%lanemask_ge", kLanemaskGe}};
      if (auto it = special.find(t); it != special.end()) return Operand{it->second, 0};
      if (t == "%WARP_SZ") return Operand{kZero, 32};
      fail(line, "unknown register '" + t + "'");
    }
    uint64_t v;
    if (parse_imm(t, v)) return Operand{kZero, v};
    if (const Sym* s = lookup(t); s && !s->reg) return s->op;
    if (auto it = module_syms_.find(t); it != module_syms_.end()) return it->second;
    fail(line, "unsupported operand '" + t + "'");
  }

  Arg arg(const std::string& t, int line) const {
    Arg a;
    a.text = t;
    if (t.empty()) fail(line, "empty operand");
    if (t[0] == '[') {
      a.kind = Arg::Address;
      std::string in = trim(t.substr(1, t.size() - 2));
      // base, base+off, base+-off, base-off, or a bare offset
      size_t pm = in.find_first_of("+-", 1);
      std::string base = trim(in.substr(0, pm)), off;
      if (pm != std::string::npos) {
        off = trim(in.substr(pm + 1));
        if (in[pm] == '-') off = "-" + off;
      }
      bool w;
      Operand o = value(base, w, line);
      if (!off.empty()) {
        uint64_t v;
        if (!parse_int(off, v)) fail(line, "bad address offset in '" + t + "'");
        o.imm += v;
      }
      a.parts.push_back(o);
      return a;
    }
    if (t[0] == '{') {
      a.kind = Arg::Vector;
      a.reg = true;
      for (const auto& e : split_commas(t.substr(1, t.size() - 2))) {
        bool w;
        a.parts.push_back(value(e, w, line));
        a.reg &= w;
      }
      return a;
    }
    if (t[0] == '!') fail(line, "negated predicate operands are not emulated");
    a.reg = true;
    size_t bar = t.find('|');
    for (const auto& e :
         bar == std::string::npos
             ? std::vector<std::string>{t}
             : std::vector<std::string>{trim(t.substr(0, bar)), trim(t.substr(bar + 1))}) {
      bool w;
      a.parts.push_back(value(e, w, line));
      a.reg &= w;
    }
    return a;
  }

  void instruction(const Stmt& s, const FuncInfo* self) {
    std::string t = s.text;
    Instr in;
    if (t[0] == '@') {
      size_t sp = t.find_first_of(" \t");
      std::string g = t.substr(1, sp - 1);
      in.guard_neg = g[0] == '!';
      if (in.guard_neg) g = g.substr(1);
      Operand o;
      if (!reg(g, o)) fail(s.line, "unknown guard predicate '" + g + "'");
      in.guard = o.reg;
      t = trim(t.substr(sp));
    }
    size_t sp = t.find_first_of(" \t");
    std::string opcode = t.substr(0, sp), rest = sp == std::string::npos ? "" : trim(t.substr(sp));
    in.index = static_cast<uint32_t>(k_.text.size());
    k_.text.push_back("line " + std::to_string(s.line) + ": " + s.text);
    Opcode op = parse_opcode(opcode, s.line);
    auto operands = split_commas(rest);
    if (op.base == "bra") {
      if (operands.size() != 1 || !only_mods(op, {"uni"})) fail(s.line, "unsupported branch");
      in.kind = Kind::Branch;
      branches_.push_back({k_.code.size(), operands[0], s.line});
      k_.code.push_back(in);
      return;
    }
    if (op.base == "ret") {
      in.kind = self ? Kind::Return : Kind::Exit;
      if (self) in.aux32 = self->ret_slot;
      k_.code.push_back(in);
      return;
    }
    if (op.base == "call") return call(in, operands, s.line);
    std::vector<Arg> args;
    for (const auto& o : operands) args.push_back(arg(o, s.line));
    std::string err;
    if (!decode(op, args, in, err)) fail(s.line, err + ": '" + s.text + "'");
    k_.code.push_back(in);
  }

  static bool only_mods(const Opcode& op, std::initializer_list<const char*> ok) {
    for (const auto& m : op.mods) {
      bool found = false;
      for (const char* o : ok) found |= m == o;
      if (!found) return false;
    }
    return op.types.empty();
  }

  // call[.uni] (r0, ...), name, (p0, ...): copies of the arguments into the
  // callee's parameters, the jump, then copies of its results back.
  void call(Instr in, std::vector<std::string> ops, int line) {
    std::vector<std::string> rets, params;
    auto list = [&](const std::string& g) { return split_commas(trim(g.substr(1, g.size() - 2))); };
    size_t i = 0;
    if (i < ops.size() && !ops[i].empty() && ops[i][0] == '(') rets = list(ops[i++]);
    if (i >= ops.size()) fail(line, "call without a target");
    std::string name = ops[i++];
    if (i < ops.size() && !ops[i].empty() && ops[i][0] == '(') params = list(ops[i++]);
    if (i != ops.size())
      fail(line, "unsupported call form (prototypes and indirect calls are not emulated)");
    auto it = info_.find(name);
    if (it == info_.end()) fail(line, "call of an undefined function '" + name + "'");
    const FuncInfo& f = it->second;
    if (params.size() != f.params.size() || rets.size() != f.rets.size())
      fail(line, "call of '" + name + "' with the wrong number of arguments");
    auto sym = [&](const std::string& n) {
      const Sym* s = lookup(n);
      if (!s || s->reg) fail(line, "call argument '" + n + "' is not a .param variable");
      return s->op;
    };
    auto copy = [&](Operand to, Operand from, uint32_t size) {
      Instr c = in;
      c.fn = copy_param_handler();
      c.op[0] = to, c.op[1] = from, c.n = 2;
      c.width = static_cast<uint8_t>(size);
      if (size > 255) fail(line, "call parameters over 255 bytes are not emulated");
      k_.code.push_back(c);
    };
    for (size_t p = 0; p < params.size(); ++p) copy(f.params[p], sym(params[p]), f.param_size[p]);
    Instr c = in;
    c.kind = Kind::Call;
    c.aux32 = f.ret_slot;
    calls_.push_back({k_.code.size(), name, line});
    k_.code.push_back(c);
    for (size_t r = 0; r < rets.size(); ++r) copy(sym(rets[r]), f.rets[r], f.ret_size[r]);
  }

  struct Fixup {
    size_t at;
    std::string name;
    int line;
  };
  Kernel& k_;
  const std::map<std::string, Operand>& module_syms_;
  const std::vector<FuncSrc>& funcs_;
  std::map<std::string, FuncInfo> info_;
  std::vector<std::map<std::string, Sym>> scopes_;
  std::map<std::string, uint32_t> labels_;
  std::vector<Fixup> branches_, calls_;
};

} // namespace

std::unique_ptr<Module> parse_module(const char* text, std::string& error) {
  auto m = std::make_unique<Module>();
  try {
    auto stmts = split(text);
    std::vector<FuncSrc> entries, funcs;
    std::vector<std::pair<VarDecl, int>> vars;
    for (size_t i = 0; i < stmts.size(); ++i) {
      const Stmt& s = stmts[i];
      auto w = words(s.text);
      const std::string& d = w[0];
      if (d == ".version" || d == ".target" || d == ".file") continue;
      if (d == ".address_size") {
        if (w.size() < 2 || w[1] != "64") fail(s.line, "only .address_size 64 is emulated");
        continue;
      }
      if (is_header(s.text)) {
        FuncSrc f = parse_header(s.text, s.line);
        if (i + 1 >= stmts.size() || stmts[i + 1].text != "{") continue; // a prototype
        int depth = 0;
        for (++i; i < stmts.size(); ++i) {
          if (stmts[i].text == "{") ++depth;
          if (stmts[i].text == "}") --depth;
          if (depth == 0) break;
          if (!(depth == 1 && stmts[i].text == "{")) f.body.push_back(stmts[i]);
        }
        if (depth != 0) fail(f.line, "unterminated function body");
        (f.entry ? entries : funcs).push_back(std::move(f));
        continue;
      }
      if (d == ".global" || d == ".const" || d == ".shared" || d == ".visible" || d == ".extern" ||
          d == ".weak") {
        vars.push_back({parse_var(s.text, s.line), s.line});
        continue;
      }
      fail(s.line, "unsupported module statement '" + s.text + "'");
    }
    // Module variables: .global/.const in one host buffer, .shared per kernel.
    std::map<std::string, Operand> syms;
    std::vector<std::pair<VarDecl, int>> shared;
    uint64_t gbytes = 0;
    std::vector<std::pair<uint64_t, const VarDecl*>> placed;
    for (auto& [v, line] : vars) {
      if (v.space == "shared") {
        if (v.external) fail(line, "dynamic (.extern) shared memory is not emulated");
        shared.push_back({v, line});
        continue;
      }
      if (v.space != "global" && v.space != "const")
        fail(line, "unsupported module variable '" + v.name + "'");
      if (v.external) fail(line, "external variable '" + v.name + "' is not emulated");
      gbytes = align_up(gbytes, std::max<uint64_t>(v.align, 8));
      placed.push_back({gbytes, &v});
      gbytes += v.size;
    }
    m->globals.assign((gbytes + 7) / 8 + 1, 0);
    m->globals_bytes = gbytes;
    auto* base = reinterpret_cast<uint8_t*>(m->globals.data());
    for (auto& [off, v] : placed) {
      if (!v->init.empty()) std::memcpy(base + off, v->init.data(), v->init.size());
      syms[v->name] = Operand{kZero, m->globals_begin() + off};
    }
    for (auto& f : entries) {
      auto k = std::make_unique<Kernel>();
      k->name = f.name;
      k->module = m.get();
      auto ksyms = syms;
      for (auto& [v, line] : shared) {
        k->shared_bytes = align_up(k->shared_bytes, v.align);
        ksyms[v.name] = Operand{kSharedBase, k->shared_bytes};
        k->shared_bytes += v.size;
      }
      Builder(*k, ksyms, funcs).build(f);
      k->local_bytes = align_up(k->local_bytes, 16);
      std::string name = k->name;
      m->kernels[name] = std::move(k);
    }
  } catch (const ParseError& e) {
    error = "PTX line " + std::to_string(e.line) + ": " + e.message;
    return nullptr;
  }
  return m;
}

} // namespace ptxemu
