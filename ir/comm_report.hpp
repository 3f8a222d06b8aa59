// The static communication report of an SPMD Function (`pxl --comm`, `:comm`):
// every collective with its source line, mesh axes, and the bytes each device
// sends (ring-equivalent counts, so numbers compare with NCCL/MPI figures).
#pragma once
#include <string>

#include "ir/function.hpp"

namespace pxl {

std::string comm_report(const Function& f, int64_t participants);

} // namespace pxl
