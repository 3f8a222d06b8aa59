// Integer, bitwise, predicate and data-movement instructions: add/sub/mul/mad
// (with .lo/.hi/.wide and the carry chain), div/rem, min/max, shifts clamped
// as PTX defines them, bit-field and permute operations, selp, setp, mov.
#include <bit>
#include <limits>
#include <type_traits>

#include "ptx_ops_common.hpp"

namespace ptxemu {
namespace {

template <class T> using U = std::make_unsigned_t<T>;
template <class T> constexpr int kBits = 8 * sizeof(T);

// The double-width type of mul.wide / mad.wide.
template <class T>
using Wide = std::conditional_t<
    sizeof(T) == 1, std::conditional_t<std::is_signed_v<T>, int16_t, uint16_t>,
    std::conditional_t<sizeof(T) == 2, std::conditional_t<std::is_signed_v<T>, int32_t, uint32_t>,
                       std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>>;

template <class T> T mul_hi(T a, T b) {
  if constexpr (sizeof(T) == 8) {
    using W = std::conditional_t<std::is_signed_v<T>, __int128, unsigned __int128>;
    return static_cast<T>((static_cast<W>(a) * static_cast<W>(b)) >> 64);
  } else {
    using W = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
    return static_cast<T>((static_cast<W>(a) * static_cast<W>(b)) >> kBits<T>);
  }
}
template <class T> T mul_lo(T a, T b) {
  return static_cast<T>(static_cast<U<T>>(static_cast<U<T>>(a) * static_cast<U<T>>(b)));
}
template <class T> T wrap_add(T a, T b) {
  return static_cast<T>(static_cast<U<T>>(static_cast<U<T>>(a) + static_cast<U<T>>(b)));
}
template <class T> T wrap_sub(T a, T b) {
  return static_cast<T>(static_cast<U<T>>(static_cast<U<T>>(a) - static_cast<U<T>>(b)));
}

#define PXL_BIN(NAME, EXPR)                                                                        \
  template <class T> struct NAME {                                                                 \
    static void run(const Instr& in, Lane& l) {                                                    \
      T a = get<T>(l, in.op[1]), b = get<T>(l, in.op[2]);                                          \
      put<T>(l, in.op[0], EXPR);                                                                   \
    }                                                                                              \
  };
PXL_BIN(Add, wrap_add(a, b))
PXL_BIN(Sub, wrap_sub(a, b))
PXL_BIN(MulLo, mul_lo(a, b))
PXL_BIN(MulHi, mul_hi(a, b))
PXL_BIN(Min, a < b ? a : b)
PXL_BIN(Max, a < b ? b : a)
PXL_BIN(And, static_cast<T>(a& b))
PXL_BIN(Or, static_cast<T>(a | b))
PXL_BIN(Xor, static_cast<T>(a ^ b))
#undef PXL_BIN

template <class T> struct AddSat {
  static void run(const Instr& in, Lane& l) {
    int64_t s = int64_t{get<T>(l, in.op[1])} + int64_t{get<T>(l, in.op[2])};
    if (in.mode) s = int64_t{get<T>(l, in.op[1])} - int64_t{get<T>(l, in.op[2])};
    s = std::min<int64_t>(std::max<int64_t>(s, std::numeric_limits<T>::min()),
                          std::numeric_limits<T>::max());
    put<T>(l, in.op[0], static_cast<T>(s));
  }
};

template <class T> struct MulWide {
  static void run(const Instr& in, Lane& l) {
    using W = Wide<T>;
    W a = get<T>(l, in.op[1]), b = get<T>(l, in.op[2]);
    put<W>(l, in.op[0], mul_lo<W>(a, b));
  }
};

template <class T> struct MadWide {
  static void run(const Instr& in, Lane& l) {
    using W = Wide<T>;
    W a = get<T>(l, in.op[1]), b = get<T>(l, in.op[2]);
    put<W>(l, in.op[0], wrap_add<W>(mul_lo<W>(a, b), get<W>(l, in.op[3])));
  }
};

// add/sub/mad/madc with the carry flag: mode bit 0 takes the carry in, bit 1
// writes it out, bits 2-3 the product part (0 none: add/sub, 1 lo, 2 hi),
// bit 4 subtracts (the flag is then the borrow).
template <class T> struct Carry {
  static void run(const Instr& in, Lane& l) {
    using V = U<T>;
    V a = static_cast<V>(get<T>(l, in.op[1])), b = static_cast<V>(get<T>(l, in.op[2]));
    int part = (in.mode >> 2) & 3;
    V x = a, y = b;
    if (part) {
      x = part == 1 ? mul_lo<T>(static_cast<T>(a), static_cast<T>(b))
                    : static_cast<V>(mul_hi<T>(static_cast<T>(a), static_cast<T>(b)));
      y = static_cast<V>(get<T>(l, in.op[3]));
    }
    V cin = (in.mode & 1) ? static_cast<V>(l.regs[kCarry] & 1) : 0;
    V r;
    uint64_t cout;
    if (in.mode & 16) {
      r = static_cast<V>(x - y - cin);
      cout = x < y || (x == y && cin); // borrow
    } else {
      V s = static_cast<V>(x + y);
      r = static_cast<V>(s + cin);
      cout = s < x || r < s;
    }
    if (in.mode & 2) l.regs[kCarry] = cout;
    put<T>(l, in.op[0], static_cast<T>(r));
  }
};

template <class T> struct MadLo {
  static void run(const Instr& in, Lane& l) {
    T r = wrap_add(mul_lo(get<T>(l, in.op[1]), get<T>(l, in.op[2])), get<T>(l, in.op[3]));
    put<T>(l, in.op[0], r);
  }
};
template <class T> struct MadHi {
  static void run(const Instr& in, Lane& l) {
    T r = wrap_add(mul_hi(get<T>(l, in.op[1]), get<T>(l, in.op[2])), get<T>(l, in.op[3]));
    put<T>(l, in.op[0], r);
  }
};

// Division by zero and the one overflowing quotient are undefined in PTX;
// they give all-ones / the dividend here instead of a host trap.
template <class T> struct Div {
  static void run(const Instr& in, Lane& l) {
    T a = get<T>(l, in.op[1]), b = get<T>(l, in.op[2]);
    T r;
    if (b == 0)
      r = static_cast<T>(~U<T>{0});
    else if (std::is_signed_v<T> && b == static_cast<T>(-1))
      r = wrap_sub(T{0}, a);
    else
      r = static_cast<T>(a / b);
    put<T>(l, in.op[0], r);
  }
};
template <class T> struct Rem {
  static void run(const Instr& in, Lane& l) {
    T a = get<T>(l, in.op[1]), b = get<T>(l, in.op[2]);
    T r;
    if (b == 0)
      r = a;
    else if (std::is_signed_v<T> && b == static_cast<T>(-1))
      r = 0;
    else
      r = static_cast<T>(a % b);
    put<T>(l, in.op[0], r);
  }
};

template <class T> struct Abs {
  static void run(const Instr& in, Lane& l) {
    T a = get<T>(l, in.op[1]);
    put<T>(l, in.op[0], a < 0 ? wrap_sub(T{0}, a) : a);
  }
};
template <class T> struct Neg {
  static void run(const Instr& in, Lane& l) {
    put<T>(l, in.op[0], wrap_sub(T{0}, get<T>(l, in.op[1])));
  }
};
template <class T> struct Not {
  static void run(const Instr& in, Lane& l) {
    put<T>(l, in.op[0], static_cast<T>(~get<T>(l, in.op[1])));
  }
};
template <class T> struct CNot {
  static void run(const Instr& in, Lane& l) {
    put<T>(l, in.op[0], static_cast<T>(get<T>(l, in.op[1]) == 0 ? 1 : 0));
  }
};
void not_pred(const Instr& in, Lane& l) { l.regs[in.op[0].reg] = get<uint8_t>(l, in.op[1]) == 0; }
void and_pred(const Instr& in, Lane& l) {
  l.regs[in.op[0].reg] = (l.regs[in.op[1].reg] != 0) && (l.regs[in.op[2].reg] != 0);
}
void or_pred(const Instr& in, Lane& l) {
  l.regs[in.op[0].reg] = (l.regs[in.op[1].reg] != 0) || (l.regs[in.op[2].reg] != 0);
}
void xor_pred(const Instr& in, Lane& l) {
  l.regs[in.op[0].reg] = (l.regs[in.op[1].reg] != 0) != (l.regs[in.op[2].reg] != 0);
}

// Shift amounts are unsigned 32-bit; past the width shl/shr.u give 0 and
// shr.s the sign.
template <class T> struct Shl {
  static void run(const Instr& in, Lane& l) {
    uint32_t s = get<uint32_t>(l, in.op[2]);
    U<T> a = static_cast<U<T>>(get<T>(l, in.op[1]));
    put<T>(l, in.op[0], s >= kBits<T> ? T{0} : static_cast<T>(static_cast<U<T>>(a << s)));
  }
};
template <class T> struct Shr {
  static void run(const Instr& in, Lane& l) {
    uint32_t s = get<uint32_t>(l, in.op[2]);
    T a = get<T>(l, in.op[1]);
    if (s >= kBits<T>) s = kBits<T> - 1, a = std::is_signed_v<T> ? static_cast<T>(a >> s) : T{0};
    put<T>(l, in.op[0], static_cast<T>(a >> s));
  }
};

template <class T> struct Popc {
  static void run(const Instr& in, Lane& l) {
    put<uint32_t>(l, in.op[0], std::popcount(static_cast<U<T>>(get<T>(l, in.op[1]))));
  }
};
template <class T> struct Clz {
  static void run(const Instr& in, Lane& l) {
    put<uint32_t>(l, in.op[0], std::countl_zero(static_cast<U<T>>(get<T>(l, in.op[1]))));
  }
};
template <class T> struct Brev {
  static void run(const Instr& in, Lane& l) {
    U<T> a = static_cast<U<T>>(get<T>(l, in.op[1])), r = 0;
    for (int i = 0; i < kBits<T>; ++i)
      r = static_cast<U<T>>(r | (((a >> i) & 1) << (kBits<T> - 1 - i)));
    put<T>(l, in.op[0], static_cast<T>(r));
  }
};
// bfind: the bit position of the most significant non-sign bit, all ones when
// there is none; mode 1 (.shiftamt) gives the left shift that normalizes.
template <class T> struct Bfind {
  static void run(const Instr& in, Lane& l) {
    T a = get<T>(l, in.op[1]);
    U<T> v = static_cast<U<T>>(std::is_signed_v<T> && a < 0 ? ~a : a);
    uint32_t r = v == 0 ? 0xffffffffu : static_cast<uint32_t>(kBits<T> - 1 - std::countl_zero(v));
    if (in.mode && r != 0xffffffffu) r = kBits<T> - 1 - r;
    put<uint32_t>(l, in.op[0], r);
  }
};

// bfe: len bits from pos, sign-extended from the last extracted bit for
// signed types (PTX's pseudocode, with pos and len taken modulo 256).
template <class T> struct Bfe {
  static void run(const Instr& in, Lane& l) {
    using V = U<T>;
    V a = static_cast<V>(get<T>(l, in.op[1]));
    uint32_t pos = get<uint32_t>(l, in.op[2]) & 0xff, len = get<uint32_t>(l, in.op[3]) & 0xff;
    constexpr uint32_t msb = kBits<T> - 1;
    V sbit = 0;
    if (std::is_signed_v<T> && len != 0) sbit = (a >> std::min(pos + len - 1, msb)) & 1;
    V r = 0;
    for (uint32_t i = 0; i <= msb; ++i) {
      V bit = (i < len && pos + i <= msb) ? (a >> (pos + i)) & 1 : sbit;
      r = static_cast<V>(r | (bit << i));
    }
    put<T>(l, in.op[0], static_cast<T>(r));
  }
};
template <class T> struct Bfi {
  static void run(const Instr& in, Lane& l) {
    using V = U<T>;
    V a = static_cast<V>(get<T>(l, in.op[1])), r = static_cast<V>(get<T>(l, in.op[2]));
    uint32_t pos = get<uint32_t>(l, in.op[3]) & 0xff, len = get<uint32_t>(l, in.op[4]) & 0xff;
    for (uint32_t i = 0; i < len && pos + i < kBits<T>; ++i) {
      V m = static_cast<V>(V{1} << (pos + i));
      r = static_cast<V>(((a >> i) & 1) ? (r | m) : (r & ~m));
    }
    put<T>(l, in.op[0], static_cast<T>(r));
  }
};

// prmt.b32 d, a, b, c: bytes of {b, a} picked by c's nibbles (bit 3 of a
// nibble replicates the byte's sign); mode 0 is the default, others are named.
void prmt(const Instr& in, Lane& l) {
  uint64_t ab = uint64_t{get<uint32_t>(l, in.op[1])} | uint64_t{get<uint32_t>(l, in.op[2])} << 32;
  uint32_t c = get<uint32_t>(l, in.op[3]), r = 0;
  auto byte = [&](uint32_t i) { return static_cast<uint32_t>((ab >> (8 * (i & 7))) & 0xff); };
  uint32_t sel[4];
  switch (in.mode) {
  case 0:
    for (int i = 0; i < 4; ++i) {
      uint32_t s = (c >> (4 * i)) & 0xf, b = byte(s);
      if (s & 8) b = (b & 0x80) ? 0xff : 0;
      r |= b << (8 * i);
    }
    put<uint32_t>(l, in.op[0], r);
    return;
  case 1: // f4e: forward 4 extract
    for (uint32_t i = 0; i < 4; ++i) sel[i] = (c & 7) + i;
    break;
  case 2: // b4e: backward 4 extract
    for (uint32_t i = 0; i < 4; ++i) sel[i] = (c & 7) + 8 - i - 1;
    break;
  case 3: // rc8: replicate byte
    for (uint32_t i = 0; i < 4; ++i) sel[i] = c & 3;
    break;
  case 4: { // ecl: edge clamp left
    uint32_t s = c & 3;
    for (uint32_t i = 0; i < 4; ++i) sel[i] = i >= s ? s : i;
    break;
  }
  case 5: { // ecr: edge clamp right
    uint32_t s = c & 3;
    for (uint32_t i = 0; i < 4; ++i) sel[i] = i <= s ? s : i;
    break;
  }
  default: { // rc16: replicate half
    uint32_t s = (c & 1) * 2;
    sel[0] = s, sel[1] = s + 1, sel[2] = s, sel[3] = s + 1;
    break;
  }
  }
  for (int i = 0; i < 4; ++i) r |= byte(sel[i]) << (8 * i);
  put<uint32_t>(l, in.op[0], r);
}

// shf.{l,r}.{wrap,clamp}.b32 d, a, b, c: the funnel shift of b:a.
template <bool Left, bool Clamp> void shf(const Instr& in, Lane& l) {
  uint64_t ab = uint64_t{get<uint32_t>(l, in.op[1])} | uint64_t{get<uint32_t>(l, in.op[2])} << 32;
  uint32_t n = get<uint32_t>(l, in.op[3]);
  n = Clamp ? std::min(n, 32u) : n & 31;
  uint32_t r = Left ? static_cast<uint32_t>((ab << n) >> 32) : static_cast<uint32_t>(ab >> n);
  put<uint32_t>(l, in.op[0], r);
}

template <class T> struct Lop3 {
  static void run(const Instr& in, Lane& l) {
    using V = U<T>;
    V a = static_cast<V>(get<T>(l, in.op[1])), b = static_cast<V>(get<T>(l, in.op[2])),
      c = static_cast<V>(get<T>(l, in.op[3]));
    uint32_t lut = get<uint32_t>(l, in.op[4]) & 0xff;
    V r = 0;
    for (int m = 0; m < 8; ++m) {
      if (!((lut >> m) & 1)) continue;
      V t = static_cast<V>(((m & 4) ? a : ~a) & ((m & 2) ? b : ~b) & ((m & 1) ? c : ~c));
      r = static_cast<V>(r | t);
    }
    put<T>(l, in.op[0], static_cast<T>(r));
  }
};

template <class T> struct Selp {
  static void run(const Instr& in, Lane& l) {
    put<T>(l, in.op[0], l.regs[in.op[3].reg] ? get<T>(l, in.op[1]) : get<T>(l, in.op[2]));
  }
};
template <class T> struct Mov {
  static void run(const Instr& in, Lane& l) { put<T>(l, in.op[0], get<T>(l, in.op[1])); }
};
void mov_pred(const Instr& in, Lane& l) {
  l.regs[in.op[0].reg] = (l.regs[in.op[1].reg] + in.op[1].imm) != 0;
}

// mov.bN d, {a, b[, c, d]}: packs the elements, the first lowest; width is the
// element's bytes, vec their count.
void mov_pack(const Instr& in, Lane& l) {
  uint64_t r = 0, mask = in.width == 8 ? ~uint64_t{0} : (uint64_t{1} << (8 * in.width)) - 1;
  for (int i = 0; i < in.vec; ++i)
    r |= (get<uint64_t>(l, in.op[1 + i]) & mask) << (8 * in.width * i);
  l.regs[in.op[0].reg] = r;
}
void mov_unpack(const Instr& in, Lane& l) {
  uint64_t v = get<uint64_t>(l, in.op[in.vec]);
  uint64_t mask = (uint64_t{1} << (8 * in.width)) - 1;
  for (int i = 0; i < in.vec; ++i) l.regs[in.op[i].reg] = (v >> (8 * in.width * i)) & mask;
}

// Compares: mode bits 0-3 pick the comparison (eq ne lt le gt ge; lo ls hi hs
// are the unsigned lt le gt ge, which T's signedness already gives).
template <class T, int C> void setp_int(const Instr& in, Lane& l) {
  T a = get<T>(l, in.op[2]), b = get<T>(l, in.op[3]);
  bool t = C == 0   ? a == b
           : C == 1 ? a != b
           : C == 2 ? a < b
           : C == 3 ? a <= b
           : C == 4 ? a > b
                    : a >= b;
  setp_result(in, l, t);
}
template <int C> Handler setp_for(Ty t, bool unsign) {
  switch (ty_bytes(t)) {
  case 1:
    return unsign ? &setp_int<uint8_t, C> : &setp_int<int8_t, C>;
  case 2:
    return unsign ? &setp_int<uint16_t, C> : &setp_int<int16_t, C>;
  case 4:
    return unsign ? &setp_int<uint32_t, C> : &setp_int<int32_t, C>;
  default:
    return unsign ? &setp_int<uint64_t, C> : &setp_int<int64_t, C>;
  }
}

Handler bits_handler(Ty t, bool sel) {
  // selp/mov of float types copy bits of the same width.
  switch (ty_bytes(t)) {
  case 2:
    return sel ? &Selp<uint16_t>::run : &Mov<uint16_t>::run;
  case 4:
    return sel ? &Selp<uint32_t>::run : &Mov<uint32_t>::run;
  case 8:
    return sel ? &Selp<uint64_t>::run : &Mov<uint64_t>::run;
  default:
    return nullptr;
  }
}

Dec decode_mov(const Opcode& op, const std::vector<Arg>& args, Instr& in, std::string& err) {
  Ty t = op.type();
  if (!only(op, {}, err) || op.types.size() != 1) return Dec::Bad;
  if (args.size() != 2) return err = "expected 2 operands", Dec::Bad;
  if (t == Ty::Pred) {
    if (!plain_operands(args, 2, 1, in, err)) return Dec::Bad;
    in.fn = mov_pred;
    return Dec::Ok;
  }
  const Arg &d = args[0], &a = args[1];
  if (d.kind == Arg::Vector || a.kind == Arg::Vector) {
    const Arg& v = d.kind == Arg::Vector ? d : a;
    size_t n = v.parts.size();
    if ((n != 2 && n != 4) || ty_bytes(t) % n || !d.reg) return err = "bad vector mov", Dec::Bad;
    in.vec = static_cast<uint8_t>(n);
    in.width = static_cast<uint8_t>(ty_bytes(t) / n);
    if (d.kind == Arg::Vector) {
      for (size_t i = 0; i < n; ++i) in.op[i] = d.parts[i];
      if (a.kind != Arg::Value) return err = "bad vector mov", Dec::Bad;
      in.op[n] = a.parts[0];
      in.fn = mov_unpack;
    } else {
      in.op[0] = d.parts[0];
      for (size_t i = 0; i < n; ++i) in.op[1 + i] = a.parts[i];
      in.fn = mov_pack;
    }
    in.n = static_cast<uint8_t>(n + 1);
    return Dec::Ok;
  }
  if (!plain_operands(args, 2, 1, in, err)) return Dec::Bad;
  in.fn = ty_int(t) ? by_int<Mov>(t) : bits_handler(t, false);
  return in.fn ? Dec::Ok : (err = "unsupported type", Dec::Bad);
}

} // namespace

bool setp_operands(const Opcode& op, const std::vector<Arg>& args, Instr& in, std::string& err) {
  if (args.size() != 3 && args.size() != 4) return err = "expected 3 or 4 operands", false;
  const Arg& d = args[0];
  if (d.kind != Arg::Value || !d.reg) return err = "bad setp destination", false;
  in.op[0] = d.parts[0];
  in.op[1] = d.parts.size() > 1 ? d.parts[1] : Operand{kSink, 0};
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i].kind != Arg::Value || args[i].parts.size() != 1)
      return err = "bad operand '" + args[i].text + "'", false;
    in.op[i + 1] = args[i].parts[0];
  }
  in.mode = op.has("and") ? 1 : op.has("or") ? 2 : op.has("xor") ? 3 : 0;
  if ((in.mode != 0) != (args.size() == 4)) return err = "bad boolean combination", false;
  if (args.size() == 3) in.op[4] = Operand{kOne, 0};
  in.n = 5;
  return true;
}

Dec decode_int(const Opcode& op, const std::vector<Arg>& args, Instr& in, std::string& err) {
  const std::string& b = op.base;
  Ty t = op.type();
  if (b == "mov") return decode_mov(op, args, in, err);
  if (b == "selp") {
    if (!only(op, {}, err) || !plain_operands(args, 4, 1, in, err)) return Dec::Bad;
    in.fn = ty_int(t) ? by_int<Selp>(t) : bits_handler(t, true);
    return in.fn ? Dec::Ok : Dec::Bad;
  }
  if (t == Ty::Pred) {
    if (!only(op, {}, err)) return Dec::Bad;
    if (b == "not" || b == "mov") {
      if (!plain_operands(args, 2, 1, in, err)) return Dec::Bad;
      in.fn = b == "not" ? not_pred : mov_pred;
      return Dec::Ok;
    }
    if (!plain_operands(args, 3, 1, in, err)) return Dec::Bad;
    in.fn = b == "and" ? and_pred : b == "or" ? or_pred : b == "xor" ? xor_pred : nullptr;
    return in.fn ? Dec::Ok : Dec::No;
  }
  if (!ty_int(t)) return Dec::No;
  if (b == "setp") {
    static const char* cmps[] = {"eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"};
    int c = -1;
    for (int i = 0; i < 10; ++i)
      if (op.has(cmps[i])) c = i;
    if (c < 0 || !setp_operands(op, args, in, err)) return Dec::Bad;
    bool unsign = !ty_signed(t) || c >= 6;
    if (c >= 6) c -= 4;
    Handler hs[] = {setp_for<0>(t, unsign), setp_for<1>(t, unsign), setp_for<2>(t, unsign),
                    setp_for<3>(t, unsign), setp_for<4>(t, unsign), setp_for<5>(t, unsign)};
    in.fn = hs[c];
    return Dec::Ok;
  }
  bool cc = op.has("cc");
  if (b == "add" || b == "sub" || b == "addc" || b == "subc") {
    bool carry_in = b == "addc" || b == "subc";
    if (cc || carry_in) {
      if (!only(op, {"cc"}, err) || !plain_operands(args, 3, 1, in, err)) return Dec::Bad;
      in.mode = static_cast<uint8_t>((carry_in ? 1 : 0) | (cc ? 2 : 0) | (b[0] == 's' ? 16 : 0));
      in.fn = by_int<Carry>(t);
      return Dec::Ok;
    }
    if (op.has("sat")) {
      if (t != Ty::S32 || !only(op, {"sat"}, err) || !plain_operands(args, 3, 1, in, err))
        return Dec::Bad;
      in.mode = b == "sub";
      in.fn = &AddSat<int32_t>::run;
      return Dec::Ok;
    }
    if (!only(op, {}, err) || !plain_operands(args, 3, 1, in, err)) return Dec::Bad;
    in.fn = b == "add" ? by_int<Add>(t) : by_int<Sub>(t);
    return Dec::Ok;
  }
  if (b == "mul" || b == "mad" || b == "madc") {
    size_t n = b == "mul" ? 3 : 4;
    if (!plain_operands(args, n, 1, in, err)) return Dec::Bad;
    int part = op.has("lo") ? 1 : op.has("hi") ? 2 : op.has("wide") ? 3 : 0;
    if (part == 0) return err = "needs .lo, .hi or .wide", Dec::Bad;
    if (part == 3) {
      if (!only(op, {"wide"}, err) || ty_bytes(t) > 4) return Dec::Bad;
      in.fn = b == "mul" ? by_int<MulWide>(t) : by_int<MadWide>(t);
      return Dec::Ok;
    }
    if (b == "madc" || cc) {
      if (!only(op, {"lo", "hi", "cc"}, err)) return Dec::Bad;
      in.mode = static_cast<uint8_t>((b == "madc" ? 1 : 0) | (cc ? 2 : 0) | (part << 2));
      in.fn = by_int<Carry>(t);
      return Dec::Ok;
    }
    if (!only(op, {"lo", "hi"}, err)) return Dec::Bad;
    if (b == "mul")
      in.fn = part == 1 ? by_int<MulLo>(t) : by_int<MulHi>(t);
    else
      in.fn = part == 1 ? by_int<MadLo>(t) : by_int<MadHi>(t);
    return Dec::Ok;
  }
  struct Simple {
    const char* name;
    size_t n;
    Handler (*pick)(Ty);
  };
  static const Simple simple[] = {
      {"div", 3, by_int<Div>},   {"rem", 3, by_int<Rem>},     {"min", 3, by_int<Min>},
      {"max", 3, by_int<Max>},   {"and", 3, by_int<And>},     {"or", 3, by_int<Or>},
      {"xor", 3, by_int<Xor>},   {"shl", 3, by_int<Shl>},     {"shr", 3, by_int<Shr>},
      {"abs", 2, by_int<Abs>},   {"neg", 2, by_int<Neg>},     {"not", 2, by_int<Not>},
      {"cnot", 2, by_int<CNot>}, {"popc", 2, by_int<Popc>},   {"clz", 2, by_int<Clz>},
      {"brev", 2, by_int<Brev>}, {"bfe", 4, by_int<Bfe>},     {"bfi", 5, by_int<Bfi>},
      {"lop3", 5, by_int<Lop3>}, {"bfind", 2, by_int<Bfind>},
  };
  for (const Simple& s : simple) {
    if (b != s.name) continue;
    bool shiftamt = b == "bfind" && op.has("shiftamt");
    if (!only(op, {}, err) && !shiftamt) return Dec::Bad;
    if (!plain_operands(args, s.n, 1, in, err)) return Dec::Bad;
    in.mode = shiftamt;
    in.fn = s.pick(t);
    return in.fn ? Dec::Ok : Dec::Bad;
  }
  if (b == "prmt") {
    static const char* modes[] = {"f4e", "b4e", "rc8", "ecl", "ecr", "rc16"};
    for (int i = 0; i < 6; ++i)
      if (op.has(modes[i])) in.mode = static_cast<uint8_t>(i + 1);
    if (op.mods.size() > (in.mode ? 1u : 0u)) return err = "unsupported prmt mode", Dec::Bad;
    if (ty_bytes(t) != 4 || !plain_operands(args, 4, 1, in, err)) return Dec::Bad;
    in.fn = prmt;
    return Dec::Ok;
  }
  if (b == "shf") {
    bool left = op.has("l"), clamp = op.has("clamp");
    if (!only(op, {"l", "r", "wrap", "clamp"}, err) || ty_bytes(t) != 4 ||
        !plain_operands(args, 4, 1, in, err))
      return Dec::Bad;
    in.fn = left ? (clamp ? shf<true, true> : shf<true, false>)
                 : (clamp ? shf<false, true> : shf<false, false>);
    return Dec::Ok;
  }
  return Dec::No;
}

} // namespace ptxemu
