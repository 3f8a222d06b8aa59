// JAX's "pytree structure error" messages (jax._src.tree_util._prefix_error),
// which tree_map and tree_map_with_path raise when a later tree does not have
// the first tree's structure as a prefix. The metadata case shows the two
// dicts' key tuples through Python's difflib.ndiff, reproduced here for the
// one-line strings it compares.
#include <algorithm>
#include <array>
#include <map>
#include <optional>

#include "stdlib/pytree.hpp"

namespace pxl {

namespace {

// ---- difflib ------------------------------------------------------------------

bool is_char_junk(char c) { return c == ' ' || c == '\t'; } // difflib.IS_CHARACTER_JUNK

struct Match {
  size_t a, b, size;
};

// difflib.SequenceMatcher(IS_CHARACTER_JUNK, a, b) on short strings (no
// autojunk): matching blocks, opcodes and ratio.
class CharMatcher {
public:
  CharMatcher(std::string a, std::string b) : a_(std::move(a)), b_(std::move(b)) {
    for (size_t j = 0; j < b_.size(); ++j)
      if (!is_char_junk(b_[j])) b2j_[b_[j]].push_back(j);
  }

  std::vector<Match> matching_blocks() const {
    std::vector<std::array<size_t, 4>> queue{{0, a_.size(), 0, b_.size()}};
    std::vector<Match> blocks;
    while (!queue.empty()) {
      auto [alo, ahi, blo, bhi] = queue.back();
      queue.pop_back();
      Match m = longest_match(alo, ahi, blo, bhi);
      if (m.size) {
        blocks.push_back(m);
        if (alo < m.a && blo < m.b) queue.push_back({alo, m.a, blo, m.b});
        if (m.a + m.size < ahi && m.b + m.size < bhi)
          queue.push_back({m.a + m.size, ahi, m.b + m.size, bhi});
      }
    }
    std::sort(blocks.begin(), blocks.end(), [](const Match& x, const Match& y) {
      return x.a != y.a ? x.a < y.a : x.b != y.b ? x.b < y.b : x.size < y.size;
    });
    std::vector<Match> merged; // adjacent blocks join
    for (const Match& m : blocks) {
      if (!merged.empty() && merged.back().a + merged.back().size == m.a &&
          merged.back().b + merged.back().size == m.b)
        merged.back().size += m.size;
      else
        merged.push_back(m);
    }
    merged.push_back({a_.size(), b_.size(), 0});
    return merged;
  }

  double ratio() const {
    size_t matches = 0;
    for (const Match& m : matching_blocks()) matches += m.size;
    size_t total = a_.size() + b_.size();
    return total ? 2.0 * static_cast<double>(matches) / static_cast<double>(total) : 1.0;
  }

  // difflib's per-character tags of a replaced line pair ('^' '-' '+' ' ').
  void tags(std::string& atags, std::string& btags) const {
    size_t i = 0, j = 0;
    for (const Match& m : matching_blocks()) {
      size_t la = m.a - i, lb = m.b - j;
      if (la && lb)
        atags += std::string(la, '^'), btags += std::string(lb, '^');
      else if (la)
        atags += std::string(la, '-');
      else if (lb)
        btags += std::string(lb, '+');
      atags += std::string(m.size, ' ');
      btags += std::string(m.size, ' ');
      i = m.a + m.size;
      j = m.b + m.size;
    }
  }

private:
  bool bjunk(size_t j) const { return is_char_junk(b_[j]); }

  Match longest_match(size_t alo, size_t ahi, size_t blo, size_t bhi) const {
    size_t besti = alo, bestj = blo, bestsize = 0;
    std::map<size_t, size_t> j2len;
    for (size_t i = alo; i < ahi; ++i) {
      std::map<size_t, size_t> next;
      auto it = b2j_.find(a_[i]);
      if (it != b2j_.end()) {
        for (size_t j : it->second) {
          if (j < blo) continue;
          if (j >= bhi) break;
          auto prev = j ? j2len.find(j - 1) : j2len.end();
          size_t k = next[j] = (prev == j2len.end() ? 0 : prev->second) + 1;
          if (k > bestsize) besti = i - k + 1, bestj = j - k + 1, bestsize = k;
        }
      }
      j2len = std::move(next);
    }
    // Extend over equal non-junk, then junk, elements on both sides.
    for (bool junk : {false, true}) {
      while (besti > alo && bestj > blo && bjunk(bestj - 1) == junk &&
             a_[besti - 1] == b_[bestj - 1])
        --besti, --bestj, ++bestsize;
      while (besti + bestsize < ahi && bestj + bestsize < bhi && bjunk(bestj + bestsize) == junk &&
             a_[besti + bestsize] == b_[bestj + bestsize])
        ++bestsize;
    }
    return {besti, bestj, bestsize};
  }

  std::string a_, b_;
  std::map<char, std::vector<size_t>> b2j_;
};

std::string rstrip(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.pop_back();
  return s;
}

// "\n".join(difflib.ndiff([a], [b])) for two different one-line strings,
// indented by four spaces as textwrap.indent does (blank lines stay blank).
std::string ndiff_lines(const std::string& a, const std::string& b) {
  CharMatcher m(a, b);
  std::vector<std::string> lines;
  if (m.ratio() < 0.75) {
    lines = {"- " + a, "+ " + b};
  } else {
    std::string at, bt;
    m.tags(at, bt);
    at = rstrip(at);
    bt = rstrip(bt);
    lines.push_back("- " + a);
    if (!at.empty()) lines.push_back("? " + at + "\n");
    lines.push_back("+ " + b);
    if (!bt.empty()) lines.push_back("? " + bt + "\n");
  }
  std::string joined;
  for (size_t i = 0; i < lines.size(); ++i) joined += (i ? "\n" : "") + lines[i];
  std::string out, line;
  for (size_t i = 0; i <= joined.size(); ++i) {
    if (i == joined.size() || joined[i] == '\n') {
      bool blank = line.find_first_not_of(" \t") == std::string::npos;
      out += (blank ? "" : "    ") + line;
      if (i < joined.size()) out += "\n";
      line.clear();
    } else {
      line += joined[i];
    }
  }
  return out;
}

// ---- prefix errors ------------------------------------------------------------

// Python's type(x), as JAX's messages print it.
std::string py_type(const Value& v) {
  if (namedtuple_parts(v)) return "<class '__main__." + namedtuple_parts(v)->name + "'>";
  if (v.is_obj(ObjKind::Array)) return "<class 'jaxlib._jax.ArrayImpl'>";
  if (v.is_obj(ObjKind::Dict) && v.as<DictObj>()->ordered)
    return "<class 'collections.OrderedDict'>";
  return "<class '" + type_name(v) + "'>";
}

std::string def_type(const TreeDef& d) {
  switch (d.kind) {
  case TreeDef::Kind::None:
    return "<class 'NoneType'>";
  case TreeDef::Kind::Tuple:
    return "<class 'tuple'>";
  case TreeDef::Kind::List:
    return "<class 'list'>";
  case TreeDef::Kind::Dict:
    return "<class 'dict'>";
  case TreeDef::Kind::NamedTuple:
    return "<class '__main__." + d.nt_type->name + "'>";
  case TreeDef::Kind::Key:
    return "<class 'jax._src.prng.PRNGKeyArray'>";
  case TreeDef::Kind::Partial:
    return "<class 'jax._src.tree_util.Partial'>";
  case TreeDef::Kind::Leaf:
    break;
  }
  return "";
}

std::string join_keys(const ValueList& keys) {
  std::string s;
  for (size_t i = 0; i < keys.size(); ++i) s += (i ? " " : "") + str(keys[i]);
  return s;
}

bool contains(const ValueList& keys, const Value& k) {
  return std::any_of(keys.begin(), keys.end(), [&](const Value& x) { return values_equal(x, k); });
}

// The places where `full` does not have the structure `d` as a prefix, as
// JAX's messages for the tree named `name` (tree_util._prefix_error: one per
// disagreeing subtree, not looking inside it), appended to `out`; `path` is the
// key path so far. With `first_only` it stops at the first.
void find_prefix_errors(InterpreterImpl& in, const TreeDef& d, const Value& full,
                        const std::string& path, const std::string& name,
                        std::vector<std::string>& out, bool first_only) {
  auto found = [&](std::string e) { out.push_back(std::move(e)); };
  if (d.kind == TreeDef::Kind::Leaf) return;
  const std::string at = "    " + name + path + "\n";
  std::string ptype = def_type(d), ftype = py_type(full);
  if (ptype != ftype)
    return found(
        "pytree structure error: different types at key path\n" + at +
        "At that key path, the prefix pytree " + name + " has a subtree of type\n    " + ptype +
        "\nbut at the same key path the full pytree has a subtree of different type\n    " + ftype +
        ".");
  ValueList fkeys;
  const ValueList* items = nullptr;
  if (d.kind == TreeDef::Kind::Dict) {
    full.as<DictObj>()->for_each([&](const Value& k, const Value&) { fkeys.push_back(k); });
    std::stable_sort(fkeys.begin(), fkeys.end(),
                     [&](const Value& a, const Value& b) { return in.less_than(a, b, Span{}); });
    if (fkeys.size() != d.keys.size()) {
      ValueList diff;
      for (const Value& k : d.keys)
        if (!contains(fkeys, k)) diff.push_back(k);
      for (const Value& k : fkeys)
        if (!contains(d.keys, k)) diff.push_back(k);
      return found(
          "pytree structure error: different numbers of pytree children at key path\n" + at +
          "At that key path, the prefix pytree " + name + " has a subtree of type\n    " + ptype +
          "\nwith " + std::to_string(d.keys.size()) + " child keys\n    " + join_keys(d.keys) +
          "\nbut at the same key path the full pytree has a subtree of the same type but with " +
          std::to_string(fkeys.size()) + " child keys\n    " + join_keys(fkeys) +
          "\nso the symmetric difference on key sets is\n    " + join_keys(diff));
    }
    for (size_t i = 0; i < fkeys.size(); ++i) {
      if (values_equal(fkeys[i], d.keys[i])) continue;
      std::string pm = repr(make_tuple(d.keys)), fm = repr(make_tuple(fkeys));
      return found("pytree structure error: different pytree metadata at key path\n" + at +
                   "At that key path, the prefix pytree " + name + " has a subtree of type\n    " +
                   ptype + "\nwith metadata\n    " + pm +
                   "\nbut at the same key path the full pytree has a subtree of the same type but "
                   "with metadata\n    " +
                   fm + "\nso the diff in the metadata at these pytree nodes is\n" +
                   ndiff_lines(pm, fm));
    }
    for (size_t i = 0; i < fkeys.size() && !(first_only && !out.empty()); ++i)
      find_prefix_errors(in, d.children[i], *full.as<DictObj>()->find(fkeys[i]),
                         path + "[" + repr(fkeys[i]) + "]", name, out, first_only);
    return;
  }
  if (d.kind == TreeDef::Kind::None) return;
  if (d.kind == TreeDef::Kind::NamedTuple)
    namedtuple_parts(full, &items);
  else
    items = sequence_items(full);
  if (items->size() != d.children.size()) {
    std::string ty = d.kind == TreeDef::Kind::Tuple  ? "tuple"
                     : d.kind == TreeDef::Kind::List ? "list"
                                                     : d.nt_type->name;
    return found("pytree structure error: different lengths of " + ty + " at key path\n" + at +
                 "At that key path, the prefix pytree " + name + " has a subtree of type " + ty +
                 " of length " + std::to_string(d.children.size()) +
                 ", but the full pytree has a subtree of the same type but of length " +
                 std::to_string(items->size()) + ".");
  }
  for (size_t i = 0; i < items->size() && !(first_only && !out.empty()); ++i) {
    std::string key = d.kind == TreeDef::Kind::NamedTuple ? "." + d.nt_type->fields[i]
                                                          : "[" + std::to_string(i) + "]";
    find_prefix_errors(in, d.children[i], (*items)[i], path + key, name, out, first_only);
  }
}

} // namespace

std::optional<std::string> pytree_prefix_error(InterpreterImpl& in, const TreeDef& prefix,
                                               const Value& full, const std::string& name) {
  std::vector<std::string> errors;
  find_prefix_errors(in, prefix, full, "", name, errors, true);
  if (errors.empty()) return std::nullopt;
  return errors[0];
}

std::vector<std::string> pytree_prefix_errors(InterpreterImpl& in, const TreeDef& prefix,
                                              const Value& full, const std::string& name) {
  std::vector<std::string> errors;
  find_prefix_errors(in, prefix, full, "", name, errors, false);
  return errors;
}

} // namespace pxl
