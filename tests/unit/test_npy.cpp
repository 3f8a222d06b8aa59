// .npy reading/writing: round trips, files laid out exactly as numpy 2.4 writes
// them, and malformed files (which must be clean IO errors, never crashes).
#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "lang/diag.hpp"
#include "runtime/npy.hpp"

using namespace pxl;
namespace fs = std::filesystem;

namespace {

// A scratch file removed when the test ends.
struct TempFile {
  fs::path path;
  explicit TempFile(const std::string& name)
      : path(fs::temp_directory_path() /
             ("pxl_test_npy_" + std::to_string(::getpid()) + "_" + name)) {}
  ~TempFile() {
    std::error_code ec;
    fs::remove(path, ec);
  }
  std::string str() const { return path.string(); }
  void write(const std::string& bytes) const {
    std::ofstream(path, std::ios::binary)
        .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  std::string read() const {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
};

// A .npy file as numpy lays it out: magic, version, header length, the dict padded
// with spaces and '\n' to a multiple of 64 bytes, then the data.
std::string npy_file(const std::string& dict, const std::string& data, int major = 1) {
  size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  header.append(63 - (prefix + header.size()) % 64, ' ');
  header += '\n';
  std::string out = std::string("\x93NUMPY", 6) + char(major) + '\0';
  for (size_t i = 0; i < prefix - 8; ++i) out += char((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

template <class T> std::string raw(std::initializer_list<T> vals) {
  std::string s;
  for (T v : vals) s.append(reinterpret_cast<const char*>(&v), sizeof(T));
  return s;
}

ErrCode load_error(const std::string& path) {
  try {
    load_npy(path);
  } catch (const Error& e) {
    INFO(e.message());
    CHECK(e.message().find(path) != std::string::npos);
    return e.code();
  }
  FAIL("load_npy accepted a bad file");
  return ErrCode::Internal;
}

} // namespace

TEST_CASE("npy round trip for every dtype", "[npy]") {
  TempFile f("rt.npy");
  for (DType dt : kAllDTypes) {
    // int2/int4/uint2/uint4 and the float8/float4 types are written as raw bytes ('|V1', as numpy
    // writes ml_dtypes' types), which read back as no one dtype.
    if (is_narrow_int(dt) || is_small_float(dt)) continue;
    for (const Shape& shape : {Shape{}, Shape{5}, Shape{2, 3}, Shape{2, 0, 4}}) {
      INFO(dtype_name(dt) << " " << shape.size());
      Array a(dt, shape);
      for (int64_t i = 0; i < a.size(); ++i)
        a.set(i, dt == DType::Bool ? Scalar::of_bool(i % 2) : Scalar::of_int(i * 3 + 1));
      save_npy(f.str(), a);
      CHECK(f.read().size() % 64 == a.nbytes() % 64); // header is 64-byte aligned
      Array b = load_npy(f.str());
      CHECK(b.dtype() == dt);
      CHECK(b.shape() == shape);
      REQUIRE(b.nbytes() == a.nbytes());
      CHECK(std::memcmp(a.data(), b.data(), a.nbytes()) == 0);
    }
  }
}

TEST_CASE("npy output is byte-identical to numpy's", "[npy]") {
  TempFile f("np.npy");
  Array a(DType::Float32, {2});
  a.set(0, Scalar::of_float(1.5));
  a.set(1, Scalar::of_float(2.0));
  save_npy(f.str(), a);
  std::string want = npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                              raw<float>({1.5f, 2.0f}));
  CHECK(want.size() == 136); // np.save of the same array
  CHECK(f.read() == want);

  Array s(DType::Int32, {});
  save_npy(f.str(), s);
  CHECK(f.read().substr(10, 56) == "{'descr': '<i4', 'fortran_order': False, 'shape': (), } ");
}

TEST_CASE("npy reads numpy's other layouts", "[npy]") {
  TempFile f("in.npy");
  SECTION("int64 converts to int32") {
    f.write(npy_file("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }",
                     raw<int64_t>({1, -2, 2147483647})));
    Array a = load_npy(f.str());
    REQUIRE(a.dtype() == DType::Int32);
    CHECK(a.as<int32_t>()[1] == -2);
    CHECK(a.as<int32_t>()[2] == 2147483647);
  }
  SECTION("int64 out of int32 range is an error") {
    f.write(npy_file("{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }",
                     raw<int64_t>({int64_t{1} << 40})));
    CHECK(load_error(f.str()) == ErrCode::IO);
  }
  SECTION("uint8 stays uint8, int16 stays int16") {
    f.write(npy_file("{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }",
                     raw<uint8_t>({0, 255})));
    Array a = load_npy(f.str());
    REQUIRE(a.dtype() == DType::UInt8);
    CHECK(a.as<uint8_t>()[1] == 255);
    f.write(npy_file("{'descr': '<i2', 'fortran_order': False, 'shape': (2,), }",
                     raw<int16_t>({-32768, 7})));
    Array b = load_npy(f.str());
    REQUIRE(b.dtype() == DType::Int16);
    CHECK(b.as<int16_t>()[0] == -32768);
  }
  SECTION("version 2.0 header") {
    f.write(npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }",
                     raw<double>({1.0, 2.0}), 2));
    Array a = load_npy(f.str());
    REQUIRE(a.dtype() == DType::Float64);
    CHECK(a.as<double>()[1] == 2.0);
  }
  SECTION("JAX bfloat16 saved as <V2") {
    f.write(npy_file("{'descr': '<V2', 'fortran_order': False, 'shape': (2,), }",
                     raw<uint16_t>({0x3fc0, 0xc000})));
    Array a = load_npy(f.str());
    REQUIRE(a.dtype() == DType::BFloat16);
    CHECK(a.get_f64(0) == 1.5);
    CHECK(a.get_f64(1) == -2.0);
  }
  SECTION("key order and spacing do not matter") {
    f.write(npy_file("{\"shape\": (1, 2),'fortran_order':False,  'descr':'<f2'}",
                     raw<uint16_t>({0x3800, 0x3c00})));
    Array a = load_npy(f.str());
    CHECK(a.dtype() == DType::Float16);
    CHECK(a.shape() == Shape{1, 2});
    CHECK(a.get_f64(0) == 0.5);
  }
}

TEST_CASE("malformed npy files are clean errors", "[npy]") {
  TempFile f("bad.npy");
  const std::string good = npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }",
                                    raw<float>({1, 2, 3, 4}));
  SECTION("missing file") { CHECK(load_error(f.str() + ".missing") == ErrCode::IO); }
  SECTION("empty file") {
    f.write("");
    CHECK(load_error(f.str()) == ErrCode::IO);
  }
  SECTION("bad magic") {
    f.write("PK\x03\x04 not an npy file at all");
    CHECK(load_error(f.str()) == ErrCode::IO);
  }
  SECTION("truncated data") {
    f.write(good.substr(0, good.size() - 3));
    CHECK(load_error(f.str()) == ErrCode::IO);
  }
  SECTION("truncated header") {
    f.write(good.substr(0, 40));
    CHECK(load_error(f.str()) == ErrCode::IO);
  }
  SECTION("garbage header") {
    f.write(npy_file("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (4,), }",
                     raw<float>({1, 2, 3, 4})));
    CHECK(load_error(f.str()) == ErrCode::IO);
    f.write(npy_file("{'descr': '<f4', 'shape': (4,), }", raw<float>({1, 2, 3, 4})));
    CHECK(load_error(f.str()) == ErrCode::IO);
    f.write(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (-4,), }", ""));
    CHECK(load_error(f.str()) == ErrCode::IO);
    f.write(npy_file("{'descr': '<f4", ""));
    CHECK(load_error(f.str()) == ErrCode::IO);
  }
  SECTION("huge shape does not allocate") {
    f.write(npy_file(
        "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }", ""));
    CHECK(load_error(f.str()) == ErrCode::IO);
    f.write(npy_file("{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999,), }",
                     ""));
    CHECK(load_error(f.str()) == ErrCode::IO);
  }
  SECTION("fortran order") {
    f.write(npy_file("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }",
                     raw<float>({1, 2, 3, 4})));
    CHECK(load_error(f.str()) == ErrCode::IO);
  }
  SECTION("unsupported dtype") {
    f.write(npy_file("{'descr': '<c16', 'fortran_order': False, 'shape': (1,), }",
                     raw<double>({1, 2})));
    CHECK(load_error(f.str()) == ErrCode::DType); // complex128: x64 is off
    f.write(npy_file("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", raw<float>({1})));
    CHECK(load_error(f.str()) == ErrCode::DType);
  }
  SECTION("unwritable path") {
    CHECK_THROWS_AS(save_npy("/nonexistent-dir/x.npy", Array(DType::Float32, {1})), Error);
  }
}

TEST_CASE("every truncation and single-byte corruption of a file is handled", "[npy]") {
  TempFile f("fuzz.npy");
  const std::string good = npy_file("{'descr': '<i8', 'fortran_order': False, 'shape': (2, 2), }",
                                    raw<int64_t>({1, 2, 3, 4}));
  for (size_t n = 0; n < good.size(); ++n) {
    f.write(good.substr(0, n));
    CHECK_THROWS_AS(load_npy(f.str()), Error);
  }
  // Corrupting any header byte either still parses or fails cleanly, never crashes.
  for (size_t i = 0; i < 80; ++i) {
    for (char c : {'\0', '(', '\'', '9', '\xff'}) {
      std::string bad = good;
      bad[i] = c;
      f.write(bad);
      try {
        load_npy(f.str());
      } catch (const Error&) {
      }
    }
  }
}
