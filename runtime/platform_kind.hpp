// Which devices a Platform runs on (--platform / PXL_PLATFORM).
#pragma once

namespace pxl {

// Auto: CUDA when a usable GPU is found, else the CPU mesh.
enum class PlatformKind { Cpu, Cuda, Auto };

} // namespace pxl
