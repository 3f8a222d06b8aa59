// Helpers shared by the instruction families: picking a handler template's
// instance from a PTX type, modifier checks, and the rounding-mode scope.
#pragma once
#include <cfenv>
#include <initializer_list>
#include <string>

#include "ptx_decode.hpp"

namespace ptxemu {

// Instantiates H<T> for an integer PTX type (bit types read as unsigned).
template <template <class> class H> Handler by_int(Ty t) {
  switch (t) {
  case Ty::B8:
  case Ty::U8:
    return &H<uint8_t>::run;
  case Ty::S8:
    return &H<int8_t>::run;
  case Ty::B16:
  case Ty::U16:
    return &H<uint16_t>::run;
  case Ty::S16:
    return &H<int16_t>::run;
  case Ty::B32:
  case Ty::U32:
    return &H<uint32_t>::run;
  case Ty::S32:
    return &H<int32_t>::run;
  case Ty::B64:
  case Ty::U64:
    return &H<uint64_t>::run;
  case Ty::S64:
    return &H<int64_t>::run;
  default:
    return nullptr;
  }
}

// The modifiers of `op` are all in `allowed` (else err names the first other).
inline bool only(const Opcode& op, std::initializer_list<const char*> allowed, std::string& err) {
  for (const auto& m : op.mods) {
    bool ok = false;
    for (const char* a : allowed) ok |= m == a;
    if (!ok) {
      err = "unsupported modifier ." + m;
      return false;
    }
  }
  return true;
}

// The FPU rounding mode for one operation (.rz/.rm/.rp; .rn is the default
// and costs nothing). The emulator's sources are built with -frounding-math so
// the compiler neither folds nor moves the arithmetic across the switch.
template <int R> struct RoundScope {
  RoundScope() {
    if constexpr (R == RZ) std::fesetround(FE_TOWARDZERO);
    if constexpr (R == RM) std::fesetround(FE_DOWNWARD);
    if constexpr (R == RP) std::fesetround(FE_UPWARD);
  }
  ~RoundScope() {
    if constexpr (R != RN) std::fesetround(FE_TONEAREST);
  }
  RoundScope(const RoundScope&) = delete;
  RoundScope& operator=(const RoundScope&) = delete;
};

// The compare of setp: op[0] = p, op[1] = q (the complement, or the sink),
// op[2], op[3] = a, b, op[4] = c of the boolean combination (mode 0 none,
// 1 and, 2 or, 3 xor).
inline void setp_result(const Instr& in, Lane& l, bool t) {
  bool c = l.regs[in.op[4].reg] != 0;
  bool p = t, q = !t;
  switch (in.mode) {
  case 1:
    p = p && c, q = q && c;
    break;
  case 2:
    p = p || c, q = q || c;
    break;
  case 3:
    p = p != c, q = q != c;
    break;
  default:
    break;
  }
  l.regs[in.op[0].reg] = p;
  l.regs[in.op[1].reg] = q;
}

// setp's operands and boolean mode into `in`; false with err when malformed.
bool setp_operands(const Opcode& op, const std::vector<Arg>& args, Instr& in, std::string& err);

} // namespace ptxemu
