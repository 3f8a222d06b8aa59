#include "lang/device_memory.hpp"

#include <array>

#include "lang/args.hpp"
#include "lang/diag.hpp"

namespace pxl {

namespace {

// The kinds in the order the CPU client numbers them: device d's memory of
// kind k has id 3*d + k (CPU_DEVICE_9, PINNED_HOST_10, ... for device 3).
constexpr std::array<const char*, 3> kKinds = {"device", "pinned_host", "unpinned_host"};
constexpr std::array<const char*, 3> kReprs = {"CPU_DEVICE", "PINNED_HOST", "UNPINNED_HOST"};
constexpr std::array<const char*, 3> kStrs = {"CpuDeviceMemory", "PinnedHostMemory",
                                              "UnpinnedHostMemory"};

struct MemoryObj : OpaqueObj {
  MemoryObj(Value dev, int k) : device(std::move(dev)), kind(k) {}
  Value device; // the device addressing it
  int kind;     // index into kKinds

  int id() const { return 3 * device.as<DeviceObj>()->id + kind; }
  std::string type_name() const override { return "Memory"; }
  std::string repr() const override {
    return std::string(kReprs[kind]) + "_" + std::to_string(id());
  }
  std::string str() const override {
    return std::string(kStrs[kind]) + "(id=" + std::to_string(id()) +
           ", process_index=0, client=" + device.as<DeviceObj>()->platform + ")";
  }
  bool equals(const OpaqueObj& other) const override {
    auto* o = dynamic_cast<const MemoryObj*>(&other);
    return o && o->kind == kind && o->id() == id();
  }
  bool get_attr(InterpreterImpl&, const std::string& name, Value& out) override {
    if (name == "kind") return out = make_str(kKinds[kind]), true;
    if (name == "process_index") return out = Value::integer(0), true;
    if (name == "platform") return out = make_str(jax_platform_name(*device.as<DeviceObj>())), true;
    if (name == "addressable_by_devices") {
      Value dev = device;
      out = make_builtin("addressable_by_devices", [dev](InterpreterImpl&, CallArgs& a) {
        ArgReader r("addressable_by_devices", a, {}, 0);
        return make_list({dev});
      });
      return true;
    }
    return false;
  }
  std::vector<std::string> attr_names() const override {
    return {"kind", "process_index", "platform", "addressable_by_devices"};
  }
};

Value memory(const Value& device, int kind) {
  return Value::object(std::make_shared<MemoryObj>(device, kind));
}

} // namespace

std::string jax_platform_name(const DeviceObj& device) {
  return device.platform == "cuda" ? "gpu" : device.platform;
}

bool device_memory_method(const Value& device, const std::string& name, Value& out) {
  if (name == "default_memory") {
    out = make_builtin("default_memory", [device](InterpreterImpl&, CallArgs& a) {
      ArgReader r("default_memory", a, {}, 0);
      return memory(device, 0);
    });
    return true;
  }
  if (name == "addressable_memories") {
    out = make_builtin("addressable_memories", [device](InterpreterImpl&, CallArgs& a) {
      ArgReader r("addressable_memories", a, {}, 0);
      ValueList all;
      for (int k = 0; k < static_cast<int>(kKinds.size()); ++k) all.push_back(memory(device, k));
      return make_list(std::move(all));
    });
    return true;
  }
  if (name == "memory") {
    out = make_builtin("memory", [device](InterpreterImpl&, CallArgs& a) {
      ArgReader r("memory", a, {"kind"}, 1);
      std::string kind = r.get_str(0);
      for (int k = 0; k < static_cast<int>(kKinds.size()); ++k)
        if (kind == kKinds[k]) return memory(device, k);
      const std::string& platform = device.as<DeviceObj>()->platform;
      throw Error(ErrCode::Value,
                  "INVALID_ARGUMENT: Could not find memory addressable by device " + platform +
                      ". Device " + platform +
                      " can address the following memory kinds: device, pinned_host, "
                      "unpinned_host. Got memory kind: " +
                      kind);
    });
    return true;
  }
  return false;
}

} // namespace pxl
