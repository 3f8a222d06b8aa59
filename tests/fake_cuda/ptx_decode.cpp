#include "ptx_decode.hpp"

#include <cstring>

namespace ptxemu {

int ty_bytes(Ty t) {
  switch (t) {
  case Ty::B8:
  case Ty::U8:
  case Ty::S8:
    return 1;
  case Ty::B16:
  case Ty::U16:
  case Ty::S16:
  case Ty::F16:
  case Ty::BF16:
    return 2;
  case Ty::B32:
  case Ty::U32:
  case Ty::S32:
  case Ty::F32:
  case Ty::F16x2:
  case Ty::BF16x2:
    return 4;
  case Ty::B64:
  case Ty::U64:
  case Ty::S64:
  case Ty::F64:
    return 8;
  case Ty::Pred:
    return 1;
  case Ty::None:
    break;
  }
  return 0;
}

bool Opcode::has(const char* m) const {
  for (const auto& s : mods)
    if (s == m) return true;
  return false;
}

int Opcode::rounding(bool integer) const {
  static const char* plain[] = {"rn", "rz", "rm", "rp"};
  static const char* whole[] = {"rni", "rzi", "rmi", "rpi"};
  for (int i = 0; i < 4; ++i)
    if (has(integer ? whole[i] : plain[i])) return i;
  return -1;
}

bool plain_operands(const std::vector<Arg>& args, size_t n, size_t dsts, Instr& in,
                    std::string& err) {
  if (args.size() != n) {
    err = "expected " + std::to_string(n) + " operands";
    return false;
  }
  for (size_t i = 0; i < n; ++i) {
    const Arg& a = args[i];
    if (a.kind != Arg::Value || a.parts.size() != 1 || (i < dsts && !a.reg)) {
      err = "unsupported operand '" + a.text + "'";
      return false;
    }
    in.op[i] = a.parts[0];
  }
  in.n = static_cast<uint8_t>(n);
  return true;
}

bool decode(const Opcode& op, const std::vector<Arg>& args, Instr& in, std::string& err) {
  for (auto family : {decode_mem, decode_int, decode_float, decode_cvt, decode_warp}) {
    Dec d = family(op, args, in, err);
    if (d == Dec::Ok) return true;
    if (d == Dec::Bad) {
      if (err.empty()) err = "unsupported form";
      return false;
    }
  }
  err = "unsupported instruction";
  return false;
}

} // namespace ptxemu
