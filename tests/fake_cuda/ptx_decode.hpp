// Binding a parsed PTX instruction (opcode with its modifiers, operands as
// written) to a handler: the families are split by purpose (integer, float,
// conversions, memory, warp operations), each saying whether it knows the
// opcode. Anything no family accepts is an error naming it.
#pragma once
#include <string>
#include <vector>

#include "ptx_program.hpp"

namespace ptxemu {

enum class Ty : uint8_t {
  None,
  B8,
  B16,
  B32,
  B64,
  U8,
  U16,
  U32,
  U64,
  S8,
  S16,
  S32,
  S64,
  F16,
  F16x2,
  BF16,
  BF16x2,
  F32,
  F64,
  Pred
};

int ty_bytes(Ty t);
inline bool ty_signed(Ty t) { return t >= Ty::S8 && t <= Ty::S64; }
inline bool ty_int(Ty t) { return t >= Ty::B8 && t <= Ty::S64; }
inline bool ty_float(Ty t) { return t >= Ty::F16 && t <= Ty::F64; }

// Rounding of .rn/.rz/.rm/.rp (and the integer-result .rni/.rzi/.rmi/.rpi).
enum Rnd : uint8_t { RN, RZ, RM, RP };

struct Opcode {
  std::string base;              // "add"
  std::vector<std::string> mods; // everything between the base and the types
  std::vector<Ty> types;         // in order: cvt.f32.s32 gives {F32, S32}
  int vec = 1;                   // .v2 / .v4
  Space space = Space::Generic;
  std::string text; // as written

  bool has(const char* m) const;
  // The rounding modifier, or -1; `integer` selects .rni-style names.
  int rounding(bool integer) const;
  Ty type(size_t i = 0) const { return i < types.size() ? types[i] : Ty::None; }
};

// One operand as written: a value (register or immediate; a|p gives two
// parts), an address [base+offset], a vector {a, b, ...} or a label.
struct Arg {
  enum Kind { Value, Address, Vector, Label } kind = Value;
  std::vector<Operand> parts;
  bool reg = false; // every part is a register (may be written)
  std::string text;
};

enum class Dec { No, Ok, Bad }; // not this family's / decoded / rejected (err says why)

Dec decode_int(const Opcode&, const std::vector<Arg>&, Instr&, std::string& err);
Dec decode_float(const Opcode&, const std::vector<Arg>&, Instr&, std::string& err);
Dec decode_cvt(const Opcode&, const std::vector<Arg>&, Instr&, std::string& err);
Dec decode_mem(const Opcode&, const std::vector<Arg>&, Instr&, std::string& err);
Dec decode_warp(const Opcode&, const std::vector<Arg>&, Instr&, std::string& err);

// The handler copying a call's argument or result (in.width bytes, op[1] to op[0]).
Handler copy_param_handler();

// All families in turn; false (with err) when none accepts the instruction.
bool decode(const Opcode&, const std::vector<Arg>&, Instr&, std::string& err);

// Checks shared by the families: `args` has n operands, each one value
// (writable where dst), and copies them into in.op[]; false with err otherwise.
bool plain_operands(const std::vector<Arg>& args, size_t n, size_t dsts, Instr& in,
                    std::string& err);

} // namespace ptxemu
