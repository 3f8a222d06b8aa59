#include "runtime/mesh.hpp"

#include <algorithm>

namespace pxl {

int Mesh::axis_of(const std::string& name) const {
  for (int i = 0; i < ndim(); ++i)
    if (axis_names[i] == name) return i;
  return -1;
}

int64_t Mesh::axis_size(const std::string& name) const {
  int a = axis_of(name);
  return a < 0 ? 1 : axis_sizes[a];
}

std::vector<int64_t> Mesh::coords(int64_t pos) const {
  std::vector<int64_t> c(axis_sizes.size());
  for (int i = ndim() - 1; i >= 0; --i) {
    c[i] = pos % axis_sizes[i];
    pos /= axis_sizes[i];
  }
  return c;
}

int64_t Mesh::position(const std::vector<int64_t>& c) const {
  int64_t pos = 0;
  for (int i = 0; i < ndim(); ++i) pos = pos * axis_sizes[i] + c[i];
  return pos;
}

int64_t Mesh::rank_in(const std::vector<std::string>& axes, int64_t pos) const {
  std::vector<int64_t> c = coords(pos);
  int64_t rank = 0;
  for (const auto& a : axes) {
    int i = axis_of(a);
    rank = rank * axis_sizes[i] + c[i];
  }
  return rank;
}

GroupLayout Mesh::groups(const std::vector<std::string>& axes) const {
  GroupLayout g;
  g.num_participants = static_cast<int>(size());
  int64_t group_size = 1;
  for (const auto& a : axes) group_size *= axis_size(a);
  // Group key: the coordinates of the axes not in `axes`.
  std::vector<std::pair<std::vector<int64_t>, std::vector<int>>> keyed;
  for (int64_t pos = 0; pos < size(); ++pos) {
    std::vector<int64_t> c = coords(pos), key;
    for (int i = 0; i < ndim(); ++i)
      if (std::find(axes.begin(), axes.end(), axis_names[i]) == axes.end()) key.push_back(c[i]);
    auto it = std::find_if(keyed.begin(), keyed.end(), [&](auto& kv) { return kv.first == key; });
    if (it == keyed.end()) {
      keyed.push_back({key, std::vector<int>(group_size, -1)});
      it = keyed.end() - 1;
    }
    it->second[rank_in(axes, pos)] = static_cast<int>(pos);
  }
  for (auto& kv : keyed) g.groups.push_back(std::move(kv.second));
  return g;
}

GroupLayout Mesh::groups(const std::vector<std::string>& axes,
                         const std::vector<std::vector<int64_t>>& index_groups) const {
  GroupLayout whole = groups(axes);
  if (index_groups.empty()) return whole;
  GroupLayout g;
  g.num_participants = whole.num_participants;
  for (const auto& members : whole.groups)
    for (const auto& ranks : index_groups) {
      std::vector<int> sub;
      for (int64_t r : ranks) sub.push_back(members.at(size_t(r)));
      g.groups.push_back(std::move(sub));
    }
  return g;
}

const char* axis_type_name(AxisType t) {
  switch (t) {
  case AxisType::Auto:
    return "Auto";
  case AxisType::Explicit:
    return "Explicit";
  case AxisType::Manual:
    return "Manual";
  }
  return "Auto";
}

AxisType Mesh::axis_type(int axis) const {
  return axis < static_cast<int>(axis_types.size()) ? axis_types[axis] : AxisType::Auto;
}

bool Mesh::same_mesh(const Mesh& o) const {
  if (!(*this == o)) return false;
  for (int i = 0; i < ndim(); ++i)
    if (axis_type(i) != o.axis_type(i)) return false;
  return true;
}

namespace {
// "(a, b)" with Python's 1-tuple comma.
std::string py_tuple(const std::vector<std::string>& items) {
  std::string s = "(";
  for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + items[i];
  return s + (items.size() == 1 ? ",)" : ")");
}

std::string axis_types_tuple(const Mesh& m) {
  std::vector<std::string> t;
  for (int i = 0; i < m.ndim(); ++i) t.push_back(axis_type_name(m.axis_type(i)));
  return py_tuple(t);
}
} // namespace

std::string Mesh::repr() const {
  std::string s = "Mesh(";
  for (int i = 0; i < ndim(); ++i)
    s += (i ? ", '" : "'") + axis_names[i] + "': " + std::to_string(axis_sizes[i]);
  return s + ")";
}

std::string Mesh::jax_str() const {
  if (ndim() == 0) return "Mesh()"; // jax.sharding.get_mesh() with none set
  std::string s = "Mesh(";
  for (int i = 0; i < ndim(); ++i)
    s += "'" + axis_names[i] + "': " + std::to_string(axis_sizes[i]) + ", ";
  return s + "axis_types=" + axis_types_tuple(*this) + ")";
}

std::string Mesh::jax_repr() const {
  if (ndim() == 0) return "Mesh(axis_sizes=(), axis_names=())";
  std::vector<std::string> sizes, names;
  for (int i = 0; i < ndim(); ++i) {
    sizes.push_back(std::to_string(axis_sizes[i]));
    names.push_back("'" + axis_names[i] + "'");
  }
  return "Mesh(axis_sizes=" + py_tuple(sizes) + ", axis_names=" + py_tuple(names) +
         ", axis_types=" + axis_types_tuple(*this) + ")";
}

namespace {
bool same_set(std::vector<std::string> a, std::vector<std::string> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

// Python's repr of a set of axis names: {'x', 'y'}.
std::string set_repr(const std::vector<std::string>& names) {
  std::string s = "{";
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", '" : "'") + names[i] + "'";
  return s + "}";
}
} // namespace

bool PartitionSpec::same_ur(const PartitionSpec& o) const {
  return same_set(unreduced, o.unreduced) && same_set(reduced, o.reduced);
}

bool PartitionSpec::operator==(const PartitionSpec& o) const {
  if (unconstrained != o.unconstrained || !same_ur(o)) return false;
  size_t n = std::max(entries.size(), o.entries.size());
  for (size_t i = 0; i < n; ++i) {
    bool mine = i < entries.size(), theirs = i < o.entries.size();
    if (mine && theirs ? entries[i] != o.entries[i] : !(mine ? entries[i] : o.entries[i]).empty())
      return false;
  }
  return true;
}

std::string PartitionSpec::repr() const {
  std::string s = "P(";
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i) s += ", ";
    const auto& e = entries[i];
    // JAX normalises ('x',) to 'x' and () to None.
    if (std::find(unconstrained.begin(), unconstrained.end(), i) != unconstrained.end()) {
      s += "UNCONSTRAINED";
    } else if (e.empty()) {
      s += "None";
    } else if (e.size() == 1) {
      s += "'" + e[0] + "'";
    } else {
      s += "(";
      for (size_t j = 0; j < e.size(); ++j) s += (j ? ", '" : "'") + e[j] + "'";
      s += ")";
    }
  }
  // A one-entry spec prints as the 1-tuple it is in JAX: P('x',); JAX's
  // unreduced/reduced sets follow the entries: P('x', unreduced={'y'}).
  if (unreduced.empty() && reduced.empty()) return s + (entries.size() == 1 ? ",)" : ")");
  if (!entries.empty()) s += ", ";
  if (!unreduced.empty()) s += "unreduced=" + set_repr(unreduced);
  if (!reduced.empty()) s += (unreduced.empty() ? "reduced=" : ", reduced=") + set_repr(reduced);
  return s + ")";
}

std::vector<std::string> PartitionSpec::axes() const {
  std::vector<std::string> out;
  for (const auto& e : entries)
    for (const auto& a : e) out.push_back(a);
  return out;
}

ShardBlock block_of(const Mesh& mesh, const PartitionSpec& spec, const Shape& global, int64_t pos) {
  ShardBlock b{std::vector<int64_t>(global.size(), 0), global};
  for (size_t d = 0; d < spec.entries.size() && d < global.size(); ++d) {
    const auto& axes = spec.entries[d];
    if (axes.empty()) continue;
    int64_t parts = 1;
    for (const auto& a : axes) parts *= mesh.axis_size(a);
    int64_t idx = mesh.rank_in(axes, pos);
    b.shape[d] = global[d] / parts;
    b.start[d] = idx * b.shape[d];
  }
  return b;
}

Shape block_shape(const Mesh& mesh, const PartitionSpec& spec, const Shape& global) {
  return block_of(mesh, spec, global, 0).shape;
}

std::string check_spec_axes(const Mesh& mesh, const PartitionSpec& spec, const Shape& global) {
  if (spec.entries.size() > global.size())
    return "the spec " + spec.repr() + " has " + std::to_string(spec.entries.size()) +
           " entries but the array has rank " + std::to_string(global.size()) + " (shape " +
           shape_str(global) + ")";
  std::vector<std::string> seen;
  for (const auto& entry : spec.entries)
    for (const auto& a : entry) {
      if (mesh.axis_of(a) < 0) {
        std::string names;
        for (const auto& n : mesh.axis_names) names += (names.empty() ? "'" : ", '") + n + "'";
        return "unknown mesh axis '" + a + "' in " + spec.repr() + " (the mesh has axes " + names +
               ")";
      }
      if (std::find(seen.begin(), seen.end(), a) != seen.end())
        return "mesh axis '" + a + "' is used twice in " + spec.repr();
      seen.push_back(a);
    }
  return {};
}

std::vector<int64_t> tiling_factors(const Mesh& mesh, const PartitionSpec& spec, size_t rank) {
  std::vector<int64_t> parts(rank, 1);
  for (size_t d = 0; d < spec.entries.size() && d < rank; ++d)
    for (const auto& a : spec.entries[d])
      if (mesh.axis_of(a) >= 0) parts[d] *= mesh.axis_size(a);
  return parts;
}

std::string check_divisible(const Mesh& mesh, const PartitionSpec& spec, const Shape& global) {
  std::vector<int64_t> parts = tiling_factors(mesh, spec, global.size());
  for (size_t d = 0; d < global.size(); ++d) {
    if (global[d] % parts[d] == 0) continue;
    std::string factors;
    for (int64_t p : parts) factors += (factors.empty() ? "" : ", ") + std::to_string(p);
    // JAX's IndivisibleError, word for word.
    return "Sharding NamedSharding(mesh=" + mesh.jax_str() + ", spec=" + spec.repr() +
           ", memory_kind=device) implies that array axis " + std::to_string(d) +
           " is partitioned " + std::to_string(parts[d]) + " times, but the dimension size is " +
           std::to_string(global[d]) + " (full shape: " + shape_str(global) +
           ", per-dimension tiling factors: [" + factors + "] should evenly divide the shape)";
  }
  return {};
}

std::string check_spec(const Mesh& mesh, const PartitionSpec& spec, const Shape& global,
                       const std::string& axes_prefix) {
  std::string problem = check_spec_axes(mesh, spec, global);
  return problem.empty() ? check_divisible(mesh, spec, global) : axes_prefix + problem;
}

} // namespace pxl
