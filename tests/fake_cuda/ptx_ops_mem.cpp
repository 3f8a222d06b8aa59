// Memory instructions: ld/ldu/st (scalar and vector, every state space, each
// access bounds-checked and alignment-checked), atom/red (threads run one at
// a time, so a plain read-modify-write is atomic), cvta (addresses of every
// space are host addresses, so it is a move), and the fences, which need nothing.
#include <type_traits>

#include "ptx_launch.hpp"
#include "ptx_ops_common.hpp"

namespace ptxemu {
namespace {

inline void* host(uint64_t a) { return reinterpret_cast<void*>(static_cast<uintptr_t>(a)); }

void check_aligned(Lane& l, uint64_t addr, uint64_t bytes) {
  if (addr & (bytes - 1))
    l.launch->fault(l, "misaligned access of " + std::to_string(bytes) + " bytes", addr);
}

// ld: op[0..vec-1] the destinations, op[vec] the address.
template <class T> struct Ld {
  static void run(const Instr& in, Lane& l) {
    uint64_t a = l.regs[in.op[in.vec].reg] + in.op[in.vec].imm, bytes = sizeof(T) * in.vec;
    check_access(l, in.space, a, bytes, false);
    check_aligned(l, a, bytes);
    for (int i = 0; i < in.vec; ++i) {
      T v;
      std::memcpy(&v, host(a + i * sizeof(T)), sizeof(T));
      put<T>(l, in.op[i], v);
    }
  }
};
// st: op[0] the address, op[1..vec] the values.
template <class T> struct St {
  static void run(const Instr& in, Lane& l) {
    uint64_t a = l.regs[in.op[0].reg] + in.op[0].imm, bytes = sizeof(T) * in.vec;
    check_access(l, in.space, a, bytes, true);
    check_aligned(l, a, bytes);
    for (int i = 0; i < in.vec; ++i) {
      T v = get<T>(l, in.op[1 + i]);
      std::memcpy(host(a + i * sizeof(T)), &v, sizeof(T));
    }
  }
};

// Copies in.width bytes from the address op[1] to the address op[0]: passing
// a call's parameters and results (both in local memory).
void copy_param(const Instr& in, Lane& l) {
  uint64_t d = l.regs[in.op[0].reg] + in.op[0].imm, s = l.regs[in.op[1].reg] + in.op[1].imm;
  check_access(l, Space::Param, s, in.width, false);
  check_access(l, Space::Param, d, in.width, true);
  std::memmove(host(d), host(s), in.width);
}

void nothing(const Instr&, Lane&) {}
void move64(const Instr& in, Lane& l) {
  l.regs[in.op[0].reg] = l.regs[in.op[1].reg] + in.op[1].imm;
}

enum AtomOp : uint8_t { AAdd, AMin, AMax, AExch, ACas, AAnd, AOr, AXor, AInc, ADec };

// atom: op[0] = d (the old value; the sink for red), op[1] = address, op[2] = b, op[3] = c (cas).
template <class T> struct Atom {
  static void run(const Instr& in, Lane& l) {
    uint64_t a = l.regs[in.op[1].reg] + in.op[1].imm;
    check_access(l, in.space, a, sizeof(T), true);
    check_aligned(l, a, sizeof(T));
    T old;
    std::memcpy(&old, host(a), sizeof(T));
    T b = get<T>(l, in.op[2]), r = old;
    switch (in.mode) {
    case AAdd:
      if constexpr (std::is_floating_point_v<T>)
        r = old + b;
      else
        r = static_cast<T>(static_cast<std::make_unsigned_t<T>>(old) +
                           static_cast<std::make_unsigned_t<T>>(b));
      break;
    case AMin:
      r = b < old ? b : old;
      break;
    case AMax:
      r = old < b ? b : old;
      break;
    case AExch:
      r = b;
      break;
    case ACas:
      r = old == b ? get<T>(l, in.op[3]) : old;
      break;
    default:
      if constexpr (std::is_integral_v<T>) {
        if (in.mode == AAnd) r = old & b;
        if (in.mode == AOr) r = old | b;
        if (in.mode == AXor) r = old ^ b;
        if (in.mode == AInc) r = old >= b ? T{0} : static_cast<T>(old + 1);
        if (in.mode == ADec) r = (old == 0 || old > b) ? b : static_cast<T>(old - 1);
      }
    }
    std::memcpy(host(a), &r, sizeof(T));
    put<T>(l, in.op[0], old);
  }
};

// The handler of T for a type: floats by their bits, except atomics.
template <template <class> class H> Handler by_bits(Ty t) {
  switch (t) {
  case Ty::F32:
  case Ty::F16x2:
  case Ty::BF16x2:
    return &H<uint32_t>::run;
  case Ty::F64:
    return &H<uint64_t>::run;
  case Ty::F16:
  case Ty::BF16:
    return &H<uint16_t>::run;
  default:
    return by_int<H>(t);
  }
}

bool address(const Arg& a, Operand& o, std::string& err) {
  if (a.kind != Arg::Address) return err = "expected an address, got '" + a.text + "'", false;
  o = a.parts[0];
  return true;
}

} // namespace

Dec decode_mem(const Opcode& op, const std::vector<Arg>& args, Instr& in, std::string& err) {
  const std::string& b = op.base;
  Ty t = op.type();
  in.space = op.space;
  if (b == "ld" || b == "ldu" || b == "st") {
    if (!only(op,
              {"nc", "ca", "cg", "cs", "lu", "cv", "wb", "wt", "volatile", "relaxed", "weak", "gpu",
               "cta", "sys", "L1::no_allocate", "L2::64B", "L2::128B", "L2::256B"},
              err))
      return Dec::Bad;
    if (op.types.size() != 1 || ty_bytes(t) == 0 || t == Ty::Pred)
      return err = "bad type", Dec::Bad;
    if (args.size() != 2) return err = "expected 2 operands", Dec::Bad;
    bool load = b != "st";
    const Arg& v = load ? args[0] : args[1];
    size_t n = v.kind == Arg::Vector ? v.parts.size() : 1;
    if (static_cast<int>(n) != op.vec || (v.kind != Arg::Vector && v.kind != Arg::Value) ||
        (v.kind == Arg::Value && v.parts.size() != 1) || (load && !v.reg))
      return err = "bad operand '" + v.text + "'", Dec::Bad;
    in.vec = static_cast<uint8_t>(n);
    Operand addr;
    if (!address(load ? args[1] : args[0], addr, err)) return Dec::Bad;
    for (size_t i = 0; i < n; ++i) in.op[load ? i : 1 + i] = v.parts[i];
    in.op[load ? n : 0] = addr;
    in.n = static_cast<uint8_t>(n + 1);
    if (b == "ldu") in.space = Space::Global;
    in.fn = load ? by_bits<Ld>(t) : by_bits<St>(t);
    return in.fn ? Dec::Ok : (err = "unsupported type", Dec::Bad);
  }
  if (b == "cvta") {
    if (!only(op, {"to"}, err) || !plain_operands(args, 2, 1, in, err)) return Dec::Bad;
    if (ty_bytes(t) != 8) return err = "only 64-bit addresses are emulated", Dec::Bad;
    in.fn = move64;
    return Dec::Ok;
  }
  if (b == "atom" || b == "red") {
    static const char* ops[] = {"add", "min", "max", "exch", "cas",
                                "and", "or",  "xor", "inc",  "dec"};
    int k = -1;
    for (int i = 0; i < 10; ++i)
      if (op.has(ops[i])) k = i;
    if (k < 0 ||
        !only(op, {ops[k], "relaxed", "acquire", "release", "acq_rel", "gpu", "cta", "sys"}, err))
      return err.empty() ? (err = "unknown atomic operation", Dec::Bad) : Dec::Bad;
    bool red = b == "red";
    size_t need = (red ? 2 : 3) + (k == ACas ? 1 : 0);
    if (args.size() != need)
      return err = "expected " + std::to_string(need) + " operands", Dec::Bad;
    size_t at = red ? 0 : 1;
    if (!red) {
      if (args[0].kind != Arg::Value || !args[0].reg) return err = "bad destination", Dec::Bad;
      in.op[0] = args[0].parts[0];
    } else {
      in.op[0] = Operand{kSink, 0};
    }
    if (!address(args[at], in.op[1], err)) return Dec::Bad;
    for (size_t i = at + 1; i < args.size(); ++i) {
      if (args[i].kind != Arg::Value || args[i].parts.size() != 1)
        return err = "bad operand", Dec::Bad;
      in.op[2 + i - at - 1] = args[i].parts[0];
    }
    in.n = 4;
    in.mode = static_cast<uint8_t>(k);
    if (in.space == Space::Generic || in.space == Space::Global || in.space == Space::Shared) {
      if (t == Ty::F32)
        in.fn = &Atom<float>::run;
      else if (t == Ty::F64)
        in.fn = &Atom<double>::run;
      else
        in.fn = by_int<Atom>(t);
    }
    if ((t == Ty::F32 || t == Ty::F64) && k != AAdd && k != AExch && k != AMin && k != AMax)
      in.fn = nullptr;
    return in.fn ? Dec::Ok : (err = "unsupported atomic type or space", Dec::Bad);
  }
  if (b == "membar" || b == "fence" || b == "prefetch" || b == "prefetchu") {
    in.fn = nothing;
    in.n = 0;
    return Dec::Ok;
  }
  return Dec::No;
}

Handler copy_param_handler() { return copy_param; }

} // namespace ptxemu
