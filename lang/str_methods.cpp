// Methods of Python's str (called through lang/methods.cpp's attribute lookup).
#include "lang/str_methods.hpp"

#include <algorithm>
#include <string_view>

#include "lang/args.hpp"
#include "lang/str_limits.hpp"

namespace pxl {

namespace {

const std::string& S(const Value& v) { return v.as<StrObj>()->value; }

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string strip_chars(const std::string& s, const Value& chars, bool left, bool right) {
  auto in_set = [&](char c) {
    return chars.is_none() ? is_space(c) : S(chars).find(c) != std::string::npos;
  };
  size_t b = 0, e = s.size();
  if (left)
    while (b < e && in_set(s[b])) ++b;
  if (right)
    while (e > b && in_set(s[e - 1])) --e;
  return s.substr(b, e - b);
}

Value str_split(InterpreterImpl&, const Value& self, CallArgs& a) {
  ArgReader r("split", a, {"sep", "maxsplit"});
  const std::string& s = S(self);
  int64_t maxsplit = r.get_int(1, -1);
  ValueList out;
  if (!r.has(0) || r[0].is_none()) {
    size_t i = 0;
    while (true) {
      while (i < s.size() && is_space(s[i])) ++i;
      if (i >= s.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
        out.push_back(make_str(s.substr(i))); // the rest keeps its trailing whitespace
        break;
      }
      size_t j = i;
      while (j < s.size() && !is_space(s[j])) ++j;
      out.push_back(make_str(s.substr(i, j - i)));
      i = j;
    }
    return make_list(std::move(out));
  }
  std::string sep = r.get_str(0);
  if (sep.empty()) throw Error(ErrCode::Value, "empty separator");
  size_t i = 0;
  while (true) {
    size_t j = s.find(sep, i);
    if (j == std::string::npos || (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit)) {
      out.push_back(make_str(s.substr(i)));
      break;
    }
    out.push_back(make_str(s.substr(i, j - i)));
    i = j + sep.size();
  }
  return make_list(std::move(out));
}

namespace {

// One replacement field's value: an argument by position (auto-numbered when
// the name is empty) or keyword, then Python's accessors `.attr` and `[key]`
// (a key of digits is an int, else a str).
Value format_field(InterpreterImpl& in, const std::string& field, CallArgs& a, size_t& auto_idx) {
  size_t head_end = std::min(field.find('.'), field.find('['));
  std::string head = field.substr(0, head_end);
  auto digits = [](const std::string& t) {
    return !t.empty() && std::all_of(t.begin(), t.end(), ::isdigit);
  };
  Value v;
  if (head.empty()) {
    if (auto_idx >= a.pos.size())
      throw Error(ErrCode::Index, "Replacement index " + std::to_string(auto_idx) +
                                      " out of range for positional args tuple");
    v = a.pos[auto_idx++];
  } else if (digits(head)) {
    size_t k = std::stoul(head.substr(0, 6));
    if (k >= a.pos.size())
      throw Error(ErrCode::Index,
                  "Replacement index " + head + " out of range for positional args tuple");
    v = a.pos[k];
  } else {
    bool found = false;
    for (auto& [name, x] : a.kw)
      if (name == head) v = x, found = true;
    if (!found)
      throw Error(ErrCode::Key, "format string names '" + head + "' but it was not passed");
  }
  size_t i = head_end;
  while (i < field.size()) {
    if (field[i] == '.') {
      size_t e = std::min(field.find('.', i + 1), field.find('[', i + 1));
      std::string attr = field.substr(i + 1, e == std::string::npos ? e : e - i - 1);
      if (attr.empty()) throw Error(ErrCode::Value, "Empty attribute in format string");
      v = in.get_attr(v, attr, Span{});
      i = e == std::string::npos ? field.size() : e;
    } else if (field[i] == '[') {
      size_t e = field.find(']', i);
      if (e == std::string::npos) throw Error(ErrCode::Value, "Missing ']' in format string");
      std::string key = field.substr(i + 1, e - i - 1);
      if (key.empty()) throw Error(ErrCode::Value, "Empty attribute in format string");
      v = in.get_item(
          v, digits(key) ? Value::integer(std::stoll(key.substr(0, 18))) : make_str(key), Span{});
      i = e + 1;
    } else {
      throw Error(ErrCode::Value, "Only '.' or '[' may follow ']' in format field specifier");
    }
  }
  return v;
}

} // namespace

Value str_format(InterpreterImpl& in, const Value& self, CallArgs& a) {
  const std::string& f = S(self);
  std::string out;
  size_t auto_idx = 0;
  for (size_t i = 0; i < f.size(); ++i) {
    char c = f[i];
    if (c == '{' && i + 1 < f.size() && f[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    if (c == '}' && i + 1 < f.size() && f[i + 1] == '}') {
      out += '}';
      ++i;
      continue;
    }
    if (c == '}') throw Error(ErrCode::Value, "Single '}' encountered in format string");
    if (c != '{') {
      out += c;
      continue;
    }
    // The field runs to the matching '}' (its spec may hold nested {fields}).
    size_t j = i + 1;
    for (int depth = 1; j < f.size(); ++j) {
      if (f[j] == '{') ++depth;
      if (f[j] == '}' && --depth == 0) break;
    }
    if (j >= f.size()) throw Error(ErrCode::Value, "Single '{' encountered in format string");
    std::string field = f.substr(i + 1, j - i - 1);
    std::string spec;
    char conv = 0;
    size_t colon = field.find(':'), bracket = field.find('[');
    // A ':' inside [key] belongs to the key.
    if (colon != std::string::npos && bracket != std::string::npos && bracket < colon) {
      size_t close = field.find(']', bracket);
      colon = close == std::string::npos ? close : field.find(':', close);
    }
    if (colon != std::string::npos) spec = field.substr(colon + 1), field = field.substr(0, colon);
    size_t bang = field.find('!');
    if (bang != std::string::npos) {
      conv = bang + 1 < field.size() ? field[bang + 1] : 0;
      field = field.substr(0, bang);
    }
    Value v = format_field(in, field, a, auto_idx);
    if (spec.find('{') != std::string::npos) { // nested fields in the spec: '{:{width}}'
      std::string expanded;
      for (size_t k = 0; k < spec.size(); ++k) {
        size_t e = spec[k] == '{' ? spec.find('}', k) : std::string::npos;
        if (e == std::string::npos) {
          expanded += spec[k];
          continue;
        }
        expanded += str(format_field(in, spec.substr(k + 1, e - k - 1), a, auto_idx));
        k = e;
      }
      spec = expanded;
    }
    if (conv == 'r')
      v = make_str(repr(v));
    else if (conv == 's')
      v = make_str(str(v));
    out += in.format_value(v, spec, Span{});
    i = j;
  }
  return make_str(out);
}

// Python's clamping of str.find's start/end (None: the ends; negative: from the end).
std::pair<size_t, size_t> slice_bounds(const std::string& s, const Value& start, const Value& end) {
  int64_t n = static_cast<int64_t>(s.size());
  auto clamp = [&](const Value& v, int64_t dflt) {
    if (v.is_none()) return dflt;
    if (!v.is_intlike()) throw Error(ErrCode::Type, "slice indices must be integers or None");
    int64_t i = v.as_int();
    if (i < 0) i += n;
    return std::clamp<int64_t>(i, 0, n);
  };
  return {static_cast<size_t>(clamp(start, 0)), static_cast<size_t>(clamp(end, n))};
}

// str.rsplit: split from the right, at most maxsplit times.
Value str_rsplit(const Value& self, CallArgs& a) {
  ArgReader r("rsplit", a, {"sep", "maxsplit"});
  const std::string& s = S(self);
  int64_t maxsplit = r.get_int(1, -1);
  ValueList out;
  if (!r.has(0) || r[0].is_none()) {
    size_t e = s.size();
    while (true) {
      while (e > 0 && is_space(s[e - 1])) --e;
      if (e == 0) break;
      if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
        out.push_back(make_str(s.substr(0, e))); // the rest keeps its leading whitespace
        break;
      }
      size_t b = e;
      while (b > 0 && !is_space(s[b - 1])) --b;
      out.push_back(make_str(s.substr(b, e - b)));
      e = b;
    }
  } else {
    std::string sep = r.get_str(0);
    if (sep.empty()) throw Error(ErrCode::Value, "empty separator");
    size_t e = s.size();
    while (true) {
      size_t j = e >= sep.size() ? s.rfind(sep, e - sep.size()) : std::string::npos;
      if (j == std::string::npos ||
          (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit)) {
        out.push_back(make_str(s.substr(0, e)));
        break;
      }
      out.push_back(make_str(s.substr(j + sep.size(), e - j - sep.size())));
      e = j;
    }
  }
  std::reverse(out.begin(), out.end());
  return make_list(std::move(out));
}

} // namespace

Value str_method(InterpreterImpl& in, const std::string& name, const Value& self, CallArgs& a) {
  const std::string& s = S(self);
  if (name == "join") {
    ArgReader r("join", a, {"iterable"}, 1);
    std::string out;
    bool first = true;
    for (const Value& x : in.iterate(r[0], Span{})) {
      if (!x.is_obj(ObjKind::Str))
        throw Error(ErrCode::Type,
                    "sequence item: expected str instance, " + type_name(x) + " found");
      if (!first) out += s;
      first = false;
      out += S(x);
    }
    return make_str(out);
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    ArgReader r(name, a, {"chars"});
    return make_str(strip_chars(s, r[0], name != "rstrip", name != "lstrip"));
  }
  if (name == "replace") {
    ArgReader r("replace", a, {"old", "new", "count"}, 2);
    std::string from = r.get_str(0), to = r.get_str(1), out;
    int64_t count = r.get_int(2, -1);
    if (from.empty()) {
      return make_str(s); // rarely meaningful; keep the string as is
    }
    size_t i = 0;
    while (count != 0) {
      size_t j = s.find(from, i);
      if (j == std::string::npos) break;
      out += s.substr(i, j - i) + to;
      i = j + from.size();
      --count;
    }
    return make_str(out + s.substr(i));
  }
  if (name == "startswith" || name == "endswith") {
    ArgReader r(name, a, {"prefix"}, 1);
    ValueList options;
    if (const ValueList* seq = sequence_items(r[0]))
      options = *seq;
    else
      options.push_back(r[0]);
    for (const Value& o : options) {
      const std::string& p = value_to_str(o, name + "() argument");
      bool hit = name == "startswith"
                     ? s.compare(0, p.size(), p) == 0
                     : s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
      if (hit) return Value::boolean(true);
    }
    return Value::boolean(false);
  }
  if (name == "split") return str_split(in, self, a);
  if (name == "format") return str_format(in, self, a);
  if (name == "upper" || name == "lower") {
    ArgReader r(name, a, {});
    std::string out = s;
    for (char& c : out)
      c = static_cast<char>(name == "upper" ? std::toupper(static_cast<unsigned char>(c))
                                            : std::tolower(static_cast<unsigned char>(c)));
    return make_str(out);
  }
  if (name == "find" || name == "index" || name == "count" || name == "rfind" || name == "rindex") {
    ArgReader r(name, a, {"sub", "start", "end"}, 1);
    std::string sub = r.get_str(0);
    auto [begin, end] = slice_bounds(s, r[1], r[2]);
    if (begin > end) return Value::integer(name == "count" ? 0 : -1);
    std::string_view window = std::string_view(s).substr(begin, end - begin);
    if (name == "count") {
      if (sub.empty()) return Value::integer(static_cast<int64_t>(window.size()) + 1);
      int64_t n = 0;
      for (size_t i = window.find(sub); i != std::string::npos;
           i = window.find(sub, i + sub.size()))
        ++n;
      return Value::integer(n);
    }
    size_t i = name[0] == 'r' ? window.rfind(sub) : window.find(sub);
    if (i == std::string::npos) {
      if (name == "index" || name == "rindex") throw Error(ErrCode::Value, "substring not found");
      return Value::integer(-1);
    }
    return Value::integer(static_cast<int64_t>(begin + i));
  }
  if (name == "isdigit" || name == "isalpha" || name == "isspace" || name == "isalnum" ||
      name == "isdecimal" || name == "isnumeric") {
    ArgReader r(name, a, {});
    if (s.empty()) return Value::boolean(false);
    for (unsigned char c : s) {
      bool ok = name == "isalpha"   ? std::isalpha(c)
                : name == "isspace" ? is_space(static_cast<char>(c))
                : name == "isalnum" ? std::isalnum(c)
                                    : std::isdigit(c);
      if (!ok) return Value::boolean(false);
    }
    return Value::boolean(true);
  }
  if (name == "isupper" || name == "islower") {
    // Python: at least one cased character, and no cased one of the other case.
    ArgReader r(name, a, {});
    bool cased = false;
    for (unsigned char c : s) {
      if (name == "isupper" ? std::islower(c) : std::isupper(c)) return Value::boolean(false);
      cased = cased || std::isalpha(c);
    }
    return Value::boolean(cased);
  }
  if (name == "istitle") {
    // Python: uppercase letters only after uncased ones, lowercase only after
    // cased ones, and at least one cased letter.
    ArgReader r(name, a, {});
    bool cased = false, prev_cased = false;
    for (unsigned char c : s) {
      if (std::isupper(c)) {
        if (prev_cased) return Value::boolean(false);
        prev_cased = cased = true;
      } else if (std::islower(c)) {
        if (!prev_cased) return Value::boolean(false);
        prev_cased = cased = true;
      } else {
        prev_cased = false;
      }
    }
    return Value::boolean(cased);
  }
  if (name == "isidentifier") {
    ArgReader r(name, a, {});
    bool ok = !s.empty() && !std::isdigit(static_cast<unsigned char>(s[0]));
    for (unsigned char c : s) ok = ok && (std::isalnum(c) || c == '_' || c >= 0x80);
    return Value::boolean(ok);
  }
  if (name == "splitlines") {
    ArgReader r(name, a, {"keepends"});
    bool keep = r.has(0) && in.truthy(r[0], Span{});
    ValueList out;
    size_t i = 0;
    while (i < s.size()) {
      size_t j = s.find_first_of("\n\r", i);
      if (j == std::string::npos) {
        out.push_back(make_str(s.substr(i)));
        break;
      }
      size_t next = j + (s[j] == '\r' && j + 1 < s.size() && s[j + 1] == '\n' ? 2 : 1);
      out.push_back(make_str(s.substr(i, (keep ? next : j) - i)));
      i = next;
    }
    return make_list(std::move(out));
  }
  if (name == "title" || name == "capitalize" || name == "swapcase" || name == "casefold") {
    ArgReader r(name, a, {});
    std::string out = s;
    bool word_start = true;
    for (size_t i = 0; i < out.size(); ++i) {
      unsigned char c = static_cast<unsigned char>(out[i]);
      if (name == "swapcase")
        out[i] = static_cast<char>(std::isupper(c) ? std::tolower(c) : std::toupper(c));
      else if (name == "casefold")
        out[i] = static_cast<char>(std::tolower(c));
      else if (name == "capitalize")
        out[i] = static_cast<char>(i == 0 ? std::toupper(c) : std::tolower(c));
      else
        out[i] = static_cast<char>(word_start ? std::toupper(c) : std::tolower(c));
      word_start = !std::isalpha(c);
    }
    return make_str(out);
  }
  if (name == "zfill") {
    ArgReader r(name, a, {"width"}, 1);
    int64_t width = r.get_int(0);
    if (width <= static_cast<int64_t>(s.size())) return self;
    if (width > kMaxStrWidth) throw Error(ErrCode::Value, "string result is too large");
    size_t sign = !s.empty() && (s[0] == '+' || s[0] == '-') ? 1 : 0;
    return make_str(s.substr(0, sign) + std::string(static_cast<size_t>(width) - s.size(), '0') +
                    s.substr(sign));
  }
  if (name == "partition" || name == "rpartition") {
    ArgReader r(name, a, {"sep"}, 1);
    std::string sep = r.get_str(0);
    if (sep.empty()) throw Error(ErrCode::Value, "empty separator");
    size_t i = name == "partition" ? s.find(sep) : s.rfind(sep);
    if (i == std::string::npos)
      return name == "partition" ? make_tuple({self, make_str(""), make_str("")})
                                 : make_tuple({make_str(""), make_str(""), self});
    return make_tuple(
        {make_str(s.substr(0, i)), make_str(sep), make_str(s.substr(i + sep.size()))});
  }
  if (name == "removeprefix" || name == "removesuffix") {
    ArgReader r(name, a, {"affix"}, 1);
    std::string affix = r.get_str(0);
    if (name == "removeprefix" && s.compare(0, affix.size(), affix) == 0)
      return make_str(s.substr(affix.size()));
    if (name == "removesuffix" && !affix.empty() && s.size() >= affix.size() &&
        s.compare(s.size() - affix.size(), affix.size(), affix) == 0)
      return make_str(s.substr(0, s.size() - affix.size()));
    return self;
  }
  if (name == "expandtabs") { // tabs to spaces up to the next multiple of tabsize
    ArgReader r(name, a, {"tabsize"});
    int64_t tab = r.get_int(0, 8);
    if (tab > kMaxStrWidth) throw Error(ErrCode::Value, "string result is too large");
    std::string out;
    size_t col = 0;
    for (char c : s) {
      if (c == '\t') {
        if (tab > 0) {
          size_t n = static_cast<size_t>(tab) - col % static_cast<size_t>(tab);
          if (out.size() + n > static_cast<size_t>(kMaxStrWidth))
            throw Error(ErrCode::Value, "string result is too large");
          out.append(n, ' ');
          col += n;
        }
      } else {
        out += c;
        col = c == '\n' || c == '\r'                           ? 0
              : (static_cast<unsigned char>(c) & 0xC0) == 0x80 ? col
                                                               : col + 1;
      }
    }
    return make_str(out);
  }
  if (name == "rsplit") return str_rsplit(self, a);
  if (name == "center" || name == "ljust" || name == "rjust") {
    ArgReader r(name, a, {"width", "fillchar"}, 1);
    if (r.get_int(0) > kMaxStrWidth) throw Error(ErrCode::Value, "string result is too large");
    std::string spec = (r.has(1) ? r.get_str(1) : std::string(" ")) +
                       (name == "center"  ? "^"
                        : name == "ljust" ? "<"
                                          : ">") +
                       std::to_string(std::max<int64_t>(r.get_int(0), 0));
    return make_str(in.format_value(self, spec, Span{}));
  }
  throw Error(ErrCode::Internal, "unhandled str method " + name);
}

const std::vector<std::string>& str_method_names() {
  static const std::vector<std::string> names = {
      "join",      "split",      "rsplit",       "strip",        "lstrip",    "rstrip",
      "replace",   "startswith", "endswith",     "format",       "upper",     "lower",
      "title",     "capitalize", "swapcase",     "casefold",     "find",      "rfind",
      "index",     "rindex",     "count",        "isdigit",      "isdecimal", "isnumeric",
      "isalpha",   "isalnum",    "isspace",      "isupper",      "islower",   "isidentifier",
      "istitle",   "splitlines", "center",       "ljust",        "rjust",     "zfill",
      "partition", "rpartition", "removeprefix", "removesuffix", "expandtabs"};
  return names;
}

} // namespace pxl
