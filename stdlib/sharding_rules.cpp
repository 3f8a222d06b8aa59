// JAX's sharding rules for Explicit mesh axes (see sharding_rules.hpp), after
// jax/_src/lax/lax.py: broadcasting_sharding_rule, _reshape_sharding_rule and
// its split/merge helpers, _dot_general_sharding_rule, _cumred_sharding_rule.
#include "stdlib/sharding_rules.hpp"

#include <numeric>
#include <optional>

#include "lang/diag.hpp"

namespace pxl {

namespace {

[[noreturn]] void type_error(const std::string& msg, const Span& loc) {
  throw Error(ErrCode::Spec, "ShardingTypeError: " + msg, loc);
}

// Python's repr of one spec entry: None, 'x', ('x', 'y').
std::string entry_repr(const Axes& e) {
  if (e.empty()) return "None";
  if (e.size() == 1) return "'" + e[0] + "'";
  std::string s = "(";
  for (size_t i = 0; i < e.size(); ++i) s += (i ? ", '" : "'") + e[i] + "'";
  return s + ")";
}

// Python's repr of a tuple of entries: ('x',), (None, 'y').
std::string tuple_repr(const DimSpec& d) {
  std::string s = "(";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + entry_repr(d[i]);
  return s + (d.size() == 1 ? ",)" : ")");
}

std::string sizes_repr(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

// One entry of _split_on_one_axis's result: a size kept, or the sizes one
// operand dimension splits into.
struct Piece {
  int64_t size = 0;
  std::vector<int64_t> split; // non-empty when split
};

struct NotSupported {};

// lax._split_on_one_axis: whether `op` becomes `out` by splitting exactly one
// of its dimensions (and how), throwing NotSupported where JAX raises.
std::optional<std::vector<Piece>> split_on_one_axis(Shape op, Shape out) {
  if (out.size() <= op.size()) return std::nullopt;
  size_t orig = op.size(), ones = 0;
  while (!op.empty() && !out.empty() && op.back() == 1 && out.back() == 1) {
    ++ones;
    op.pop_back();
    out.pop_back();
  }
  std::vector<Piece> pieces;
  size_t i = 0, j = 0;
  int count = 0;
  while (j < out.size()) {
    if (i >= op.size()) return std::nullopt;
    if (op[i] == out[j]) {
      pieces.push_back({op[i], {}});
    } else {
      if (++count > 1) throw NotSupported{};
      std::vector<int64_t> temp = {out[j]};
      size_t next_j = j + 1, next_i = i + 1;
      auto prod = [&] {
        return std::accumulate(temp.begin(), temp.end(), int64_t{1}, std::multiplies<>());
      };
      while (prod() != op[i] || (next_j < out.size() && out[next_j] == 1)) {
        if (prod() > op[i]) return std::nullopt;
        if (prod() == op[i] && next_i < op.size() && next_j < out.size() &&
            out[next_j] == op[next_i])
          break;
        if (++j >= out.size()) return std::nullopt;
        temp.push_back(out[j]);
        ++next_j;
      }
      pieces.push_back({0, temp});
    }
    ++i;
    ++j;
  }
  for (size_t k = 0; k < ones; ++k) pieces.push_back({1, {}});
  if (pieces.size() != orig) return std::nullopt;
  return pieces;
}

// lax.split_partitions: the axes `axes` (major first) spread over the output
// dimensions `sizes`, each taking axes while its size allows.
std::optional<DimSpec> split_partitions(const Mesh& mesh, const Axes& axes,
                                        const std::vector<int64_t>& sizes) {
  size_t next = 0;
  DimSpec parts;
  for (int64_t o : sizes) {
    Axes dim;
    while (o > 1 && next < axes.size()) {
      int64_t n = mesh.axis_size(axes[next]);
      if (o % n != 0) return std::nullopt;
      o /= n;
      dim.push_back(axes[next++]);
    }
    parts.push_back(dim);
  }
  if (next != axes.size()) return std::nullopt;
  return parts;
}

} // namespace

bool explicit_mesh(const Mesh& mesh) {
  if (mesh.axis_names.empty()) return false;
  for (size_t a = 0; a < mesh.axis_names.size(); ++a)
    if (mesh.axis_type(static_cast<int>(a)) != AxisType::Explicit) return false;
  return true;
}

bool any_explicit_axis(const Mesh& mesh) {
  for (size_t a = 0; a < mesh.axis_names.size(); ++a)
    if (mesh.axis_type(static_cast<int>(a)) == AxisType::Explicit) return true;
  return false;
}

PartitionSpec explicit_part(const PartitionSpec& spec, const Mesh& mesh) {
  PartitionSpec out;
  for (const Axes& e : spec.entries) {
    Axes kept;
    for (const std::string& a : e)
      if (mesh.axis_of(a) >= 0 && mesh.axis_type(mesh.axis_of(a)) == AxisType::Explicit)
        kept.push_back(a);
    out.entries.push_back(std::move(kept));
  }
  return out;
}

std::string sharded_type_str(const AVal& aval, const DimSpec& spec, bool short_dtype) {
  std::string s =
      std::string(short_dtype ? dtype_short_name(aval.dtype) : dtype_name(aval.dtype)) + "[";
  for (size_t d = 0; d < aval.shape.size(); ++d) {
    s += (d ? "," : "") + std::to_string(aval.shape[d]);
    if (d < spec.size() && !spec[d].empty()) s += "@" + axes_label(spec[d]);
  }
  return s + "]";
}

std::string axes_label(const Axes& axes) {
  std::string s;
  for (size_t i = 0; i < axes.size(); ++i) s += (i ? "," : "") + axes[i];
  return axes.size() > 1 ? "(" + s + ")" : s;
}

DimSpec explicit_elementwise(const std::string& op, const std::vector<AVal>& avals,
                             const std::vector<DimSpec>& specs, const Span& loc) {
  size_t rank = 0;
  for (const AVal& a : avals) rank = std::max(rank, a.shape.size());
  DimSpec out(rank);
  for (size_t d = 0; d < rank; ++d) {
    // Dimensions of size 1 that are whole broadcast; the others must agree.
    for (size_t k = 0; k < avals.size(); ++k) {
      if (avals[k].shape.size() != rank || specs[k][d].empty()) continue;
      if (out[d].empty())
        out[d] = specs[k][d];
      else if (out[d] != specs[k][d]) {
        std::string all;
        for (size_t m = 0; m < specs.size(); ++m)
          if (avals[m].shape.size() == rank)
            all += (all.empty() ? "" : ", ") + tuple_repr(specs[m]);
        type_error(op + " got incompatible shardings for broadcasting: " + all + ".", loc);
      }
    }
  }
  AVal r = avals[0];
  r.shape.assign(rank, 1);
  for (const AVal& a2 : avals)
    if (a2.shape.size() == rank)
      for (size_t d = 0; d < rank; ++d) r.shape[d] = std::max(r.shape[d], a2.shape[d]);
  explicit_result_check(op, avals, specs, r, out, loc);
  return out;
}

void explicit_result_check(const std::string& op, const std::vector<AVal>& avals,
                           const std::vector<DimSpec>& specs, const AVal& result,
                           const DimSpec& spec, const Span& loc) {
  std::vector<std::string> seen;
  for (const Axes& e : spec)
    for (const std::string& a : e) {
      if (std::find(seen.begin(), seen.end(), a) != seen.end()) {
        std::string ins;
        for (size_t k = 0; k < avals.size(); ++k)
          ins += (k ? ", " : "") + sharded_type_str(avals[k], specs[k], true);
        type_error(
            op + " operation with inputs: " + ins +
                " produces an illegally sharded result: " + sharded_type_str(result, spec, true),
            loc);
      }
      seen.push_back(a);
    }
}

DimSpec explicit_reshape(const AVal& operand, const DimSpec& spec, const Shape& new_sizes,
                         const Mesh& mesh, const Span& loc) {
  auto fail = [&]() -> DimSpec {
    type_error("This reshape is not supported. Please specify the sharding of the output via the "
               "`out_sharding` argument of jax.lax.reshape. Got operand type: " +
                   sharded_type_str(operand, spec) + ", new sizes: " + sizes_repr(new_sizes),
               loc);
  };
  const Shape& shape = operand.shape;
  bool any = false;
  for (const Axes& e : spec) any = any || !e.empty();
  if (!any) return DimSpec(new_sizes.size());
  // Only unit dimensions added or removed: the others keep their splits.
  Shape a, b;
  for (int64_t s : shape)
    if (s != 1) a.push_back(s);
  for (int64_t s : new_sizes)
    if (s != 1) b.push_back(s);
  if (a == b) {
    DimSpec kept, out;
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] != 1) kept.push_back(spec[d]);
    size_t k = 0;
    for (int64_t s : new_sizes) out.push_back(s == 1 ? Axes{} : kept[k++]);
    return out;
  }
  try {
    if (auto split = split_on_one_axis(shape, new_sizes)) {
      DimSpec out;
      for (size_t d = 0; d < split->size(); ++d) {
        const Piece& p = (*split)[d];
        if (p.split.empty()) {
          out.push_back(spec[d]);
        } else if (spec[d].empty()) {
          out.resize(out.size() + p.split.size());
        } else {
          auto parts = split_partitions(mesh, spec[d], p.split);
          if (!parts) return fail();
          out.insert(out.end(), parts->begin(), parts->end());
        }
      }
      return out;
    }
    if (new_sizes.size() < shape.size()) {
      if (auto merge = split_on_one_axis(new_sizes, shape)) {
        DimSpec out;
        size_t d = 0;
        for (size_t o = 0; o < merge->size(); ++o) {
          const Piece& p = (*merge)[o];
          if (p.split.empty()) {
            out.push_back(spec[d++]);
            continue;
          }
          // The merged dimensions' axes, in order; a whole dimension may
          // only follow the split ones.
          DimSpec merged(spec.begin() + static_cast<std::ptrdiff_t>(d),
                         spec.begin() + static_cast<std::ptrdiff_t>(d + p.split.size()));
          d += p.split.size();
          while (!merged.empty() && merged.back().empty()) merged.pop_back();
          if (merged.empty()) {
            out.emplace_back();
            continue;
          }
          Axes axes;
          for (const Axes& e : merged) {
            if (e.empty()) return fail();
            axes.insert(axes.end(), e.begin(), e.end());
          }
          auto parts = split_partitions(mesh, axes, {new_sizes[o]});
          if (!parts) return fail();
          out.push_back((*parts)[0]);
        }
        return out;
      }
    }
  } catch (const NotSupported&) {
  }
  return fail();
}

void explicit_dot_check(const DimSpec& lhs_contracting, const DimSpec& rhs_contracting,
                        const DimSpec& lhs_batch, const DimSpec& rhs_batch, const Span& loc) {
  auto mismatch = [](const DimSpec& l, const DimSpec& r) {
    for (size_t i = 0; i < l.size() && i < r.size(); ++i)
      if (!l[i].empty() && !r[i].empty() && l[i] != r[i]) return true;
    return false;
  };
  if (mismatch(lhs_batch, rhs_batch))
    type_error("dot_general requires lhs batch dimensions and rhs batch dimensions to have the "
               "consistent sharding, got " +
                   tuple_repr(lhs_batch) + " and " + tuple_repr(rhs_batch) + ".",
               loc);
  if (mismatch(lhs_contracting, rhs_contracting))
    type_error("dot_general requires contracting dimensions to have consistent sharding, got " +
                   tuple_repr(lhs_contracting) + " and " + tuple_repr(rhs_contracting) + ".",
               loc);
  for (size_t i = 0; i < lhs_contracting.size() && i < rhs_contracting.size(); ++i)
    if (!lhs_contracting[i].empty() && !rhs_contracting[i].empty())
      type_error("Contracting dimensions are sharded and it is ambiguous how the output should be "
                 "sharded. Please specify the output sharding via the `out_sharding` parameter. "
                 "Got lhs_contracting_spec=" +
                     tuple_repr(lhs_contracting) +
                     " and rhs_contracting_spec=" + tuple_repr(rhs_contracting),
                 loc);
}

void explicit_scan_check(const AVal& operand, const DimSpec& spec, int64_t axis, const Span& loc) {
  auto a = static_cast<size_t>(axis);
  if (a < spec.size() && !spec[a].empty())
    type_error("Input should be unsharded over the axis being reduced. Got input type=" +
                   sharded_type_str(operand, spec) + " and axis=" + std::to_string(axis),
               loc);
}

void explicit_in_spec_check(const PartitionSpec& want, const DimSpec& have, const AVal& aval,
                            const Span& loc, const std::vector<std::string>& have_unreduced,
                            const std::vector<std::string>& have_reduced) {
  // JAX compares the spec normalized against the value's rank: one entry per
  // dimension, trailing None entries added.
  PartitionSpec full = want;
  if (full.entries.size() < aval.shape.size()) full.entries.resize(aval.shape.size());
  PartitionSpec typed;
  typed.entries = have;
  typed.unreduced = have_unreduced;
  typed.reduced = have_reduced;
  if (full.entries == have && full.same_ur(typed)) return;
  std::string mat = have_unreduced.empty() ? "" : "U:" + axes_label(have_unreduced);
  if (!have_reduced.empty()) mat += (mat.empty() ? "R:" : ", R:") + axes_label(have_reduced);
  if (!mat.empty()) mat = "{" + mat + "}";
  throw Error(
      ErrCode::Spec,
      "in_specs passed to shard_map: " + full.repr() +
          " does not match the specs of the input: " + typed.repr() +
          " for arg: " + (aval.weak ? "~" : "") + sharded_type_str(aval, have) + mat +
          ". `in_specs` is an optional argument so you can omit specifying it and shard_map will "
          "infer the in_specs from the arguments. If you want to reshard your inputs, you can use "
          "`jax.reshard` on the arguments and then pass those args to shard_map.",
      loc);
}

std::string abstract_sharding_str(const Mesh& mesh, const DimSpec& spec,
                                  const std::string& platform) {
  std::string m = "Abstract" + mesh.jax_str();
  m.pop_back();
  m += ", device_kind=" + platform + ", num_cores=None, platform=" + platform + ")";
  PartitionSpec p;
  p.entries = spec;
  return "NamedSharding(mesh=" + m + ", spec=" + p.repr() + ")";
}

namespace {

int64_t split_parts(const Mesh& mesh, const Axes& axes) {
  int64_t n = 1;
  for (const std::string& a : axes) n *= mesh.axis_size(a);
  return n;
}

// JAX's str of a spec entry inside its messages: x, or ('x', 'y').
std::string entry_str(const Axes& e) { return e.size() == 1 ? e[0] : entry_repr(e); }

std::string shaped_array_str(const AVal& aval, const DimSpec& spec) {
  return "ShapedArray(" + sharded_type_str(aval, spec) + (aval.weak ? ", weak_type=True" : "") +
         ")";
}

std::string int_indices_str(const Shape& indices) {
  AVal a;
  a.dtype = DType::Int32;
  a.shape = indices;
  return shaped_array_str(a, {});
}

} // namespace

void explicit_varying_shape_check(const std::string& what, const AVal& operand, const DimSpec& spec,
                                  const Shape& out_shape, const Mesh& mesh, const Span& loc) {
  for (size_t d = 0; d < spec.size() && d < out_shape.size(); ++d) {
    if (spec[d].empty() || operand.shape[d] == out_shape[d]) continue;
    int64_t n = split_parts(mesh, spec[d]);
    if (out_shape[d] % n != 0)
      type_error(what + " on sharded dims where out dim (" + std::to_string(out_shape[d]) +
                     ") is not divisible by mesh axes (" + std::to_string(n) + ") with spec (" +
                     entry_str(spec[d]) + ") is not implemented. Got input type=" +
                     sharded_type_str(operand, spec, true) +
                     " and output shape=" + sizes_repr(out_shape),
                 loc);
  }
}

void explicit_gather_error(const AVal& operand, const DimSpec& spec, const Shape& indices,
                           const Span& loc) {
  type_error("Use `.at[...].get(out_sharding=)` to provide output PartitionSpec for the gather "
             "indexing as out sharding could not be resolved unambiguously (or would require "
             "collectives on inputs). Got operand=" +
                 shaped_array_str(operand, spec) + ", indices=" + int_indices_str(indices),
             loc);
}

void explicit_scatter_error(const AVal& operand, const DimSpec& spec, const Shape& indices,
                            const AVal& updates, const DimSpec& updates_spec, const Span& loc) {
  type_error("Use `.at[...].set/add/mul/...(out_sharding=)` to provide output PartitionSpec for "
             "the scatter update as out sharding could not be resolved unambiguously (or would "
             "require collectives on inputs). Got operand=" +
                 shaped_array_str(operand, spec) + ", indices=" + int_indices_str(indices) +
                 ", updates=" + shaped_array_str(updates, updates_spec),
             loc);
}

void explicit_same_sharding(const std::string& op, const std::vector<DimSpec>& specs,
                            const Mesh& mesh, const std::string& platform, const Span& loc) {
  // (An operand split over no axis may be a constant of no mesh, which JAX
  // leaves out of the comparison.)
  const DimSpec* first = nullptr;
  bool differ = false;
  for (const DimSpec& s : specs) {
    bool split = false;
    for (const Axes& e : s) split = split || !e.empty();
    if (!split) continue;
    if (!first)
      first = &s;
    else
      differ = differ || s != *first;
  }
  if (!differ) return;
  std::string all;
  for (const DimSpec& s : specs)
    all += (all.empty() ? "" : ", ") + abstract_sharding_str(mesh, s, platform);
  if (op == "select")
    type_error("select cases must have the same shardings, got [" + all + "].", loc);
  type_error("All operands should have the same sharding. Got shardings " + all, loc);
}

} // namespace pxl
