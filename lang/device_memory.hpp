// A device's memories (jax.Device.default_memory(), addressable_memories(),
// memory(kind)): the CPU client's three spaces per device -- its own memory
// ("device") and the host's pinned and unpinned memory. pxl keeps every
// array in device memory; these objects only name the spaces, as shardings'
// memory kinds do.
#pragma once
#include <string>

#include "lang/value.hpp"

namespace pxl {

// The device method `name` (`default_memory`, `addressable_memories`,
// `memory`) of `device` as a bound callable; false for other names.
bool device_memory_method(const Value& device, const std::string& name, Value& out);

// A device's `platform` as JAX names it: "cpu", or "gpu" for a CUDA device.
std::string jax_platform_name(const DeviceObj& device);

} // namespace pxl
