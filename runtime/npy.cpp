// .npy reading and writing. The format: "\x93NUMPY", major, minor, a header length
// (uint16 for 1.0, uint32 for 2.0/3.0), then a Python dict literal such as
// "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }" padded with spaces
// and '\n' so the data starts on a 64-byte boundary, then the raw elements.
// Every field read from the file is untrusted: lengths and sizes are checked
// before anything is allocated, and any inconsistency is a pxl::Error(IO).
#include "runtime/npy.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>

#include "lang/diag.hpp"

namespace pxl {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kAlign = 64;

[[noreturn]] void io_error(const std::string& path, const std::string& what) {
  throw Error(ErrCode::IO, path + ": " + what);
}

// numpy's descr for each pxl dtype. bfloat16 has no numpy type; np.save of a JAX
// bfloat16 array writes raw 2-byte voids ('<V2'), so pxl does the same and reads
// '<V2' back as bfloat16.
const char* descr_of(DType d) {
  switch (d) {
  case DType::Bool:
    return "|b1";
  case DType::Int8:
    return "|i1";
  case DType::UInt8:
    return "|u1";
  case DType::Int16:
    return "<i2";
  case DType::UInt16:
    return "<u2";
  case DType::Int32:
    return "<i4";
  case DType::UInt32:
    return "<u4";
  case DType::Float16:
    return "<f2";
  case DType::BFloat16:
    return "<V2";
  case DType::Float32:
    return "<f4";
  case DType::Float64:
    return "<f8";
  case DType::Complex64:
    return "<c8";
  case DType::Int2: // ml_dtypes' narrow types: one raw byte each, as bfloat16's voids
  case DType::Int4:
  case DType::UInt2:
  case DType::UInt4:
  PXL_SMALL_FLOAT_CASES:
    return "|V1";
  }
  return "?";
}

// How a file's element type maps onto pxl: directly, or (int64/uint64, which x64
// being off rules out, as in JAX) converted to int32/uint32.
struct FileType {
  DType dtype;
  size_t item_size; // bytes per element in the file
  bool is_signed;   // for the converted integer types
  bool direct;      // same layout as the pxl dtype
};

std::optional<FileType> file_type(const std::string& descr) {
  struct Entry {
    const char* descr;
    FileType type;
  };
  static const Entry kTable[] = {
      {"|b1", {DType::Bool, 1, false, true}},     {"<b1", {DType::Bool, 1, false, true}},
      {"<i4", {DType::Int32, 4, true, true}},     {"<u4", {DType::UInt32, 4, false, true}},
      {"<f2", {DType::Float16, 2, true, true}},   {"<f4", {DType::Float32, 4, true, true}},
      {"<f8", {DType::Float64, 8, true, true}},   {"<V2", {DType::BFloat16, 2, false, true}},
      {"|V2", {DType::BFloat16, 2, false, true}}, {"<i8", {DType::Int32, 8, true, false}},
      {"<u8", {DType::UInt32, 8, false, false}},  {"<i2", {DType::Int16, 2, true, true}},
      {"<u2", {DType::UInt16, 2, false, true}},   {"|i1", {DType::Int8, 1, true, true}},
      {"<i1", {DType::Int8, 1, true, true}},      {"|u1", {DType::UInt8, 1, false, true}},
      {"<u1", {DType::UInt8, 1, false, true}},    {"<c8", {DType::Complex64, 8, true, true}},
  };
  for (const Entry& e : kTable)
    if (descr == e.descr) return e.type;
  return std::nullopt;
}

// A parser for the header's dict literal: string keys, and values that are strings,
// True/False, or tuples of non-negative integers.
class HeaderParser {
public:
  HeaderParser(const std::string& text, const std::string& path) : s_(text), path_(path) {}

  void parse(std::string& descr, bool& fortran, Shape& shape) {
    bool got_descr = false, got_fortran = false, got_shape = false;
    expect('{');
    while (true) {
      skip_ws();
      if (peek() == '}') break;
      std::string key = string_lit();
      expect(':');
      skip_ws();
      if (key == "descr") {
        if (peek() != '\'' && peek() != '"')
          fail("structured dtypes are not supported (descr is not a string)");
        descr = string_lit();
        got_descr = true;
      } else if (key == "fortran_order") {
        fortran = bool_lit();
        got_fortran = true;
      } else if (key == "shape") {
        shape = tuple_lit();
        got_shape = true;
      } else {
        fail("unexpected header key '" + key + "'");
      }
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      skip_ws();
      if (peek() != '}') fail("expected ',' or '}' in header");
    }
    if (!got_descr || !got_fortran || !got_shape)
      fail("header lacks one of 'descr', 'fortran_order', 'shape'");
  }

private:
  [[noreturn]] void fail(const std::string& what) {
    io_error(path_, "malformed .npy header: " + what);
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n')) ++pos_;
  }
  void expect(char c) {
    skip_ws();
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string string_lit() {
    skip_ws();
    char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string");
    size_t end = s_.find(q, pos_ + 1);
    if (end == std::string::npos) fail("unterminated string");
    std::string out = s_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end + 1;
    return out;
  }
  bool bool_lit() {
    if (s_.compare(pos_, 4, "True") == 0) {
      pos_ += 4;
      return true;
    }
    if (s_.compare(pos_, 5, "False") == 0) {
      pos_ += 5;
      return false;
    }
    fail("expected True or False");
  }
  Shape tuple_lit() {
    Shape shape;
    expect('(');
    while (true) {
      skip_ws();
      if (peek() == ')') break;
      if (peek() < '0' || peek() > '9') fail("expected a dimension in shape");
      int64_t d = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (d > (std::numeric_limits<int64_t>::max() - 9) / 10) fail("dimension too large");
        d = d * 10 + (s_[pos_++] - '0');
      }
      while (peek() == 'L') ++pos_; // Python 2 longs in old files
      shape.push_back(d);
      if (shape.size() > 64) fail("too many dimensions");
      skip_ws();
      if (peek() == ',')
        ++pos_;
      else if (peek() != ')')
        fail("expected ',' or ')' in shape");
    }
    ++pos_;
    return shape;
  }

  const std::string& s_;
  const std::string& path_;
  size_t pos_ = 0;
};

// Reads an integer of `size` bytes, little-endian.
uint64_t read_le(const unsigned char* p, size_t size) {
  uint64_t v = 0;
  for (size_t i = 0; i < size; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

int64_t sign_extend(uint64_t v, size_t size) {
  if (size == 8) return static_cast<int64_t>(v);
  uint64_t sign = uint64_t{1} << (8 * size - 1);
  return static_cast<int64_t>((v ^ sign) - sign);
}

} // namespace

void save_npy(const std::string& path, const Array& a) {
  std::string shape = "(";
  for (size_t i = 0; i < a.shape().size(); ++i)
    shape += (i ? ", " : "") + std::to_string(a.shape()[i]);
  shape += a.shape().size() == 1 ? ",)" : ")";
  std::string header = std::string("{'descr': '") + descr_of(a.dtype()) +
                       "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Version 1.0 has a 16-bit header length; numpy falls back to 2.0 past it.
  bool v2 = header.size() + 1 + 10 > 65535;
  size_t prefix = v2 ? 12 : 10;
  size_t total = prefix + header.size() + 1;
  header.append((kAlign - total % kAlign) % kAlign, ' ');
  header += '\n';

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) io_error(path, std::string("cannot open for writing: ") + std::strerror(errno));
  out.write(kMagic, kMagicLen);
  unsigned char ver[2] = {static_cast<unsigned char>(v2 ? 2 : 1), 0};
  out.write(reinterpret_cast<const char*>(ver), 2);
  unsigned char len[4];
  for (int i = 0; i < 4; ++i) len[i] = static_cast<unsigned char>(header.size() >> (8 * i));
  out.write(reinterpret_cast<const char*>(len), v2 ? 4 : 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  if (a.nbytes() > 0)
    out.write(static_cast<const char*>(a.data()),
              static_cast<std::streamsize>(a.size() * dtype_size(a.dtype())));
  out.flush();
  if (!out) io_error(path, "write failed");
}

Array load_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) io_error(path, std::string("cannot open: ") + std::strerror(errno));
  in.seekg(0, std::ios::end);
  const uint64_t file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);

  unsigned char pre[12] = {};
  if (file_size < 10 || !in.read(reinterpret_cast<char*>(pre), 8) ||
      std::memcmp(pre, kMagic, kMagicLen) != 0)
    io_error(path, "not a .npy file (bad magic)");
  int major = pre[6];
  if (major < 1 || major > 3)
    io_error(path, "unsupported .npy format version " + std::to_string(major) + "." +
                       std::to_string(pre[7]));
  size_t len_size = major == 1 ? 2 : 4;
  if (!in.read(reinterpret_cast<char*>(pre + 8), static_cast<std::streamsize>(len_size)))
    io_error(path, "truncated .npy header");
  uint64_t header_len = read_le(pre + 8, len_size);
  uint64_t data_start = 8 + len_size + header_len;
  if (data_start > file_size) io_error(path, "truncated .npy header");
  std::string header(header_len, '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(header_len)))
    io_error(path, "truncated .npy header");

  std::string descr;
  bool fortran = false;
  Shape shape;
  HeaderParser(header, path).parse(descr, fortran, shape);
  if (fortran) io_error(path, "fortran_order arrays are not supported (save in C order)");
  std::optional<FileType> ft = file_type(descr);
  if (!ft) {
    std::string why =
        !descr.empty() && descr[0] == '>' ? " (big-endian data is not supported)" : "";
    throw Error(ErrCode::DType, path + ": unsupported .npy dtype '" + descr + "'" + why);
  }

  // Element count and byte size, guarded against overflow before anything is allocated.
  uint64_t count = 1;
  for (int64_t d : shape) {
    if (d != 0 && count > std::numeric_limits<uint64_t>::max() / 2 / ft->item_size / d)
      io_error(path, "array too large");
    count *= static_cast<uint64_t>(d);
  }
  uint64_t data_bytes = count * ft->item_size;
  if (file_size - data_start < data_bytes)
    io_error(path, "truncated data: expected " + std::to_string(data_bytes) + " bytes, found " +
                       std::to_string(file_size - data_start));

  Array a(ft->dtype, shape);
  if (ft->direct) {
    if (data_bytes > 0 &&
        !in.read(static_cast<char*>(a.data()), static_cast<std::streamsize>(data_bytes)))
      io_error(path, "read failed");
    if (ft->dtype == DType::Bool) { // numpy itself only writes 0/1; keep that invariant
      auto* p = a.as<uint8_t>();
      for (uint64_t i = 0; i < count; ++i) p[i] = p[i] != 0;
    }
    return a;
  }
  std::vector<unsigned char> raw(data_bytes);
  if (data_bytes > 0 &&
      !in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(data_bytes)))
    io_error(path, "read failed");
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t bits = read_le(raw.data() + i * ft->item_size, ft->item_size);
    if (ft->dtype == DType::UInt32) {
      if (bits > std::numeric_limits<uint32_t>::max())
        io_error(path, "value " + std::to_string(bits) + " at index " + std::to_string(i) +
                           " does not fit in uint32");
      a.as<uint32_t>()[i] = static_cast<uint32_t>(bits);
      continue;
    }
    int64_t v = ft->is_signed ? sign_extend(bits, ft->item_size) : static_cast<int64_t>(bits);
    if (ft->is_signed
            ? (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
            : bits > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
      io_error(path, "value " + (ft->is_signed ? std::to_string(v) : std::to_string(bits)) +
                         " at index " + std::to_string(i) + " does not fit in int32");
    a.as<int32_t>()[i] = static_cast<int32_t>(v);
  }
  return a;
}

} // namespace pxl
