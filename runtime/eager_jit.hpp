// Eager ops through the platform's executables: outside any traced function,
// an elementwise op or reduction over enough elements runs as a compiled
// kernel (vectorised on the CPU, PTX on CUDA) instead of the reference kernel.
// Compiling costs milliseconds, so an op signature (op, attributes, operand
// types) is compiled only once it is hot (run kHotCalls times) or huge
// (kHugeElements); small ops stay on the reference kernels, where a one-op
// program would cost more than it saves. On CUDA, matmuls (dot_general) go to
// the device too, and an op with an operand already on the device (a device-
// backed result) runs there at once, whatever its size, so its operand is not
// copied to the host.
#pragma once
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>

#include "ir/op.hpp"
#include "lang/source.hpp"
#include "runtime/array.hpp"

namespace pxl {

class CommWorld;
class Executable;
class Platform;

class EagerJit {
public:
  // Ops whose largest operand or result has fewer elements run on the reference kernels.
  static constexpr int64_t kMinElements = int64_t{1} << 15;
  static constexpr int64_t kHugeElements = int64_t{1} << 22;
  static constexpr int kHotCalls = 3;

  explicit EagerJit(Platform& platform);
  ~EagerJit();
  // The op's result computed by a compiled kernel on `device`, or nothing when
  // the op is not one the JIT fuses or too small to be worth compiling.
  // `loc` is the op's .pxl line (for --profile's copy lines).
  std::optional<Array> run(Op op, const OpAttrs& attrs, std::span<const Array> inputs, int device,
                           const Span& loc = {});

private:
  Platform& platform_;
  bool device_;                      // CUDA: results stay on the GPU (see above)
  std::unique_ptr<CommWorld> world_; // executables need one; one op never communicates
  struct Signature {
    int calls = 0;                   // runs on the reference kernels so far
    std::unique_ptr<Executable> exe; // once hot: the compiled one-op program
  };
  std::unordered_map<std::string, Signature> signatures_; // by IR text and device
};

} // namespace pxl
