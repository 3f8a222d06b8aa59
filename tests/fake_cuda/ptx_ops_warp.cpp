// Synchronizing instructions: they only mark the instruction's Kind and lay
// out its operands; the scheduler (ptx_exec.cpp) performs them once every
// participating thread has arrived.
#include "ptx_ops_common.hpp"

namespace ptxemu {

Dec decode_warp(const Opcode& op, const std::vector<Arg>& args, Instr& in, std::string& err) {
  const std::string& b = op.base;
  if ((b == "bar" || b == "barrier") && (op.has("sync") || op.mods.empty())) {
    if (op.has("warp")) { // bar.warp.sync mask
      if (!only(op, {"warp", "sync"}, err) || !plain_operands(args, 1, 0, in, err)) return Dec::Bad;
      in.kind = Kind::WarpSync;
      return Dec::Ok;
    }
    // bar.sync id[, count]: the whole block (a thread count is not emulated:
    // pxl's kernels never pass one).
    if (!only(op, {"sync", "aligned"}, err)) return Dec::Bad;
    if (args.size() != 1) return err = "bar.sync with a thread count is not emulated", Dec::Bad;
    if (!plain_operands(args, 1, 0, in, err)) return Dec::Bad;
    in.kind = Kind::Barrier;
    return Dec::Ok;
  }
  if (b == "shfl") {
    static const char* modes[] = {"up", "down", "bfly", "idx"};
    int m = -1;
    for (int i = 0; i < 4; ++i)
      if (op.has(modes[i])) m = i;
    if (m < 0 || !op.has("sync") || !only(op, {"sync", modes[m]}, err) || ty_bytes(op.type()) != 4)
      return err.empty() ? (err = "unsupported shfl form", Dec::Bad) : Dec::Bad;
    if (args.size() != 5 || args[0].kind != Arg::Value || !args[0].reg)
      return err = "expected d[|p], a, b, c, membermask", Dec::Bad;
    in.op[0] = args[0].parts[0];
    in.op[1] = args[0].parts.size() > 1 ? args[0].parts[1] : Operand{kSink, 0};
    for (size_t i = 1; i < 5; ++i) {
      if (args[i].kind != Arg::Value || args[i].parts.size() != 1)
        return err = "bad operand", Dec::Bad;
      in.op[1 + i] = args[i].parts[0];
    }
    in.n = 6;
    in.mode = static_cast<uint8_t>(m);
    in.kind = Kind::Shfl;
    return Dec::Ok;
  }
  if (b == "vote") {
    static const char* modes[] = {"all", "any", "uni", "ballot"};
    int m = -1;
    for (int i = 0; i < 4; ++i)
      if (op.has(modes[i])) m = i;
    if (m < 0 || !op.has("sync") || !only(op, {"sync", modes[m]}, err))
      return err.empty() ? (err = "unsupported vote form", Dec::Bad) : Dec::Bad;
    if (!plain_operands(args, 3, 1, in, err)) return Dec::Bad;
    in.mode = static_cast<uint8_t>(m);
    in.kind = Kind::Vote;
    return Dec::Ok;
  }
  if (b == "trap") {
    in.kind = Kind::Trap;
    return Dec::Ok;
  }
  if (b == "exit") {
    in.kind = Kind::Exit;
    return Dec::Ok;
  }
  return Dec::No;
}

} // namespace ptxemu
