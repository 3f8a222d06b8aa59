#include "ir/comm_report.hpp"

#include "ir/custom_call.hpp"

#include <sstream>

namespace pxl {

namespace {

std::string bytes_str(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  std::ostringstream os;
  if (u == 0)
    os << static_cast<int64_t>(b) << " B";
  else {
    os.precision(b < 10 ? 2 : b < 100 ? 1 : 0);
    os << std::fixed << b << " " << units[u];
  }
  return os.str();
}

std::string loc_str(const Span& s) {
  if (!s.valid()) return "?";
  return s.file->path() + ":" + std::to_string(s.file->line_of(s.begin)) + ":" +
         std::to_string(s.file->column_of(s.begin));
}

} // namespace

std::string comm_report(const Function& f, int64_t participants) {
  // The collectives in custom_call primals are the ones that run.
  if (has_custom_calls(f))
    return comm_report(*lower_custom_calls(std::make_shared<Function>(f)), participants);
  std::ostringstream os;
  os << "communication of '" << f.name << "' over mesh (";
  for (size_t i = 0; i < f.mesh_axes.size(); ++i)
    os << (i ? ", " : "") << f.mesh_axes[i] << "=" << f.mesh_sizes[i];
  os << "), " << participants << " device" << (participants == 1 ? "" : "s") << ":\n";
  double total = 0;
  int n = 0;
  for (const Instr& in : f.body) {
    if (!is_collective(in.op) || in.op == Op::AxisIndex) continue;
    const AVal& x = f.values[in.operands[0]].aval;
    double s = static_cast<double>(x.size() * static_cast<int64_t>(dtype_size(x.dtype)));
    double g = static_cast<double>(in.attrs.group_size);
    double per_device = 0;
    switch (in.op) {
    case Op::Psum:
    case Op::Pmax:
    case Op::Pmin:
      per_device = 2 * (g - 1) / g * s;
      break;
    case Op::AllGather:
      per_device = (g - 1) * s;
      break;
    case Op::PsumScatter:
    case Op::AllToAll:
      per_device = (g - 1) / g * s;
      break;
    case Op::Ppermute:
      per_device = g > 0 ? s * static_cast<double>(in.attrs.pairs.size()) / g : 0;
      break;
    default:
      break;
    }
    double all = per_device * static_cast<double>(participants);
    total += all;
    ++n;
    std::string axes;
    for (const auto& a : in.attrs.axis_names) axes += (axes.empty() ? "'" : ", '") + a + "'";
    os << "  " << loc_str(f.values[in.result].loc) << ": " << op_name(in.op) << " over "
       << (in.attrs.axis_names.size() == 1 ? axes : "(" + axes + ")") << " (groups of "
       << in.attrs.group_size << ") of " << type_str(x) << ": " << bytes_str(per_device)
       << " sent per device, " << bytes_str(all) << " in total\n";
  }
  if (n == 0)
    os << "  no collectives\n";
  else
    os << "  total: " << n << " collective" << (n == 1 ? "" : "s") << ", " << bytes_str(total)
       << "\n";
  return os.str();
}

} // namespace pxl
