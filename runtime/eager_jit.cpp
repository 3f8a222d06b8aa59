#include "runtime/eager_jit.hpp"

#include <algorithm>

#include "codegen/jit.hpp"
#include "codegen/plan.hpp"
#include "ir/function.hpp"
#include "runtime/collectives.hpp"
#include "runtime/executable.hpp"
#include "runtime/platform.hpp"

namespace pxl {

EagerJit::EagerJit(Platform& platform)
    : platform_(platform), device_(platform.cuda() != nullptr),
      world_(std::make_unique<CommWorld>(1, 1)) {}
EagerJit::~EagerJit() = default;

std::optional<Array> EagerJit::run(Op op, const OpAttrs& attrs, std::span<const Array> inputs,
                                   int device, const Span& loc) {
  // Structural ops (broadcast, transpose, slice) are copies either way; the
  // host's BLAS is what the reference kernel calls for a matmul on the CPU.
  // complex64 and the float8/float4 types run on the reference kernels (no
  // fused or device kernels have them).
  for (const Array& a : inputs)
    if (host_steps_only(a.dtype())) return std::nullopt;
  bool dot = device_ && op == Op::DotGeneral;
  if (!dot && !is_elementwise(op) && op_family(op) != OpFamily::Reduce) return std::nullopt;
  // These ops never produce more elements than their largest operand, so
  // small ops leave before paying for a shape rule (eval_ref runs its own).
  int64_t biggest = 0;
  bool resident = false; // an operand is on the device already
  for (const Array& a : inputs) {
    biggest = std::max(biggest, a.size());
    resident |= device_ && a.device_storage() != nullptr;
  }
  if (biggest < kMinElements && !resident) return std::nullopt;
  std::vector<AVal> avals;
  for (const Array& a : inputs) avals.push_back(a.aval());
  AVal out = infer(op, attrs, avals); // throws the user's error for bad input

  // The one-op program: params -> op -> result.
  auto f = std::make_shared<Function>();
  f->name = op_name(op);
  Instr in{op, attrs, {}, -1};
  for (const AVal& a : avals) {
    IRValue pv;
    pv.aval = a;
    int v = f->add_value(std::move(pv));
    f->params.push_back(v);
    in.operands.push_back(v);
  }
  IRValue rv;
  rv.aval = out;
  rv.producer = 0;
  in.result = f->add_value(std::move(rv));
  f->body.push_back(std::move(in));
  f->results.push_back(f->body[0].result);
  if (!dot && !fusible_instr(*f, f->body[0], device_ ? PlanTarget::Cuda : PlanTarget::Host))
    return std::nullopt;
  Signature& sig = signatures_[print_function(*f, false) + "@" + std::to_string(device)];
  if (!sig.exe) {
    if (!resident && ++sig.calls < kHotCalls && biggest < kHugeElements) return std::nullopt;
    SpmdLayout layout;
    layout.mesh.device_ids = {device};
    sig.exe = platform_.make_executable(ExecMode::Jit, f, std::move(layout), {});
  }
  std::vector<std::vector<Array>> args(1, std::vector<Array>(inputs.begin(), inputs.end()));
  std::vector<DebugRecord> debug;
  sig.exe->call_site = loc;
  Array result = std::move(sig.exe->run(0, args, *world_, debug)[0][0]);
  return result.device() == device ? result : result.on_device(device);
}

} // namespace pxl
