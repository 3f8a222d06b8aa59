// Eager ops on sharded arrays (ShardedOpRunner, runtime/eager.hpp). JAX runs
// every eager op as a jit of the primitive, so `x * 2` of an array sharded over
// a mesh is computed where its blocks are and comes back sharded. Here the op
// is traced alone into a one-instruction Function, partitioned over the mesh of
// its sharded operands exactly as jax.jit's program would be
// (stdlib/jit_partition.cpp), and run on the device threads. The partitioned
// program is kept per op, attributes, operand types and operand shardings.
#include <map>

#include "lang/tracer.hpp"
#include "runtime/eager.hpp"
#include "stdlib/jit_devices.hpp"
#include "stdlib/jit_partition.hpp"
#include "stdlib/pytree.hpp"
#include "stdlib/sharding.hpp"
#include "stdlib/sharding_rules.hpp"

namespace pxl {

namespace {

class PartitionedOpRunner : public ShardedOpRunner {
public:
  explicit PartitionedOpRunner(InterpreterImpl& in) : in_(in) {}

  std::optional<Tensor> run(Op op, const OpAttrs& attrs, std::span<const Tensor> inputs,
                            const Span& loc) override {
    OpFamily fam = op_family(op);
    // Collectives and effects are not single-device ops; spmd_call has its own path.
    if (fam == OpFamily::Collective || fam == OpFamily::Effect || fam == OpFamily::Call)
      return std::nullopt;
    bool mixed = false;
    const Mesh* mesh = operands_mesh(inputs, mixed);
    if (!mesh) return std::nullopt; // operands on different meshes are gathered
    std::string key = std::string(op_name(op)) + "[" + attrs_str(op, attrs) + "]";
    for (const Tensor& t : inputs) key += " " + type_str(t->aval) + (t->aval.weak ? "~" : "");
    OperandSpecs specs = operand_specs(*mesh, inputs, key);
    std::shared_ptr<PartitionedJit>& p = programs_[key];
    if (!p) p = std::make_shared<PartitionedJit>(partition(op, attrs, inputs, *mesh, specs, loc));
    std::vector<Tensor> operands(inputs.begin(), inputs.end());
    operands.insert(operands.end(), p->extra.begin(), p->extra.end());
    std::vector<Tensor> results = run_spmd_call(*p->callee, operands, in_.pull_log());
    if (!any_explicit_axis(*mesh)) name_like_first_argument(results, inputs);
    return std::move(results.at(0));
  }

  std::optional<Tensor> place_result(const Tensor& t) override {
    return on_current_mesh(in_, t, true);
  }

private:
  PartitionedJit partition(Op op, const OpAttrs& attrs, std::span<const Tensor> inputs,
                           const Mesh& mesh, const OperandSpecs& specs, const Span& loc) {
    TracedFunction t;
    t.fn = std::make_shared<Function>();
    t.fn->name = op_name(op);
    TraceContext tc(*t.fn, in_.ops(), "jit");
    LocScope scope(tc, loc); // errors of the sharding rules point at the op
    std::vector<Tensor> params;
    for (const Tensor& x : inputs) params.push_back(tc.add_param(x->aval, 0, loc, ""));
    t.fn->results.push_back(tc.value_of(tc.bind(op, attrs, params)));
    return partition_jit(in_, t, mesh, specs, {}, loc, /*eager_op=*/true);
  }

  InterpreterImpl& in_;
  std::map<std::string, std::shared_ptr<PartitionedJit>> programs_;
};

} // namespace

std::optional<Tensor> on_current_mesh(InterpreterImpl& in, const Tensor& t, bool computed) {
  auto* eager = dynamic_cast<EagerContext*>(&in.ops());
  if (!eager || !t->concrete || t->trace || t->concrete->device() != eager->device())
    return std::nullopt;
  const Value* current = in.context_mesh();
  const Mesh* mesh = current ? value_to_mesh(*current) : nullptr;
  if (!mesh || mesh->device_ids.empty()) return std::nullopt;
  PartitionSpec spec;
  if (computed && any_explicit_axis(*mesh)) spec.entries.resize(t->aval.shape.size());
  return make_sharded_tensor(shard_array(*t->concrete, *mesh, spec, in.pull_log()));
}

Value results_on_current_mesh(InterpreterImpl& in, const Value& out, bool computed) {
  const Value* current = in.context_mesh();
  if (!current || !value_to_mesh(*current)) return out;
  auto* eager = dynamic_cast<EagerContext*>(&in.ops());
  if (!eager) return out;
  return map_tree(in, out, [&](const Value& leaf) {
    if (!leaf.is_obj(ObjKind::Array)) return leaf;
    const Tensor& t = leaf.as<ArrayObj>()->tensor;
    if (!t->concrete || t->concrete->device() != eager->device() || leaf.as<ArrayObj>()->committed)
      return leaf;
    std::optional<Tensor> placed = on_current_mesh(in, t, computed);
    return placed ? make_array(*placed) : leaf;
  });
}

void install_sharded_op_runner(InterpreterImpl& in) {
  if (auto* eager = dynamic_cast<EagerContext*>(&in.ops()))
    eager->set_sharded_runner(std::make_unique<PartitionedOpRunner>(in));
}

} // namespace pxl
