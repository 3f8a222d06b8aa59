// The pxl command line (repl/cli.cpp): modes, --devices vs PXL_DEVICES, errors.
#include <catch2/catch.hpp>

#include "repl/cli.hpp"

using pxl::cli::Mode;
using pxl::cli::parse;

TEST_CASE("cli: no arguments start the REPL with 8 devices", "[cli]") {
  auto r = parse({}, nullptr);
  REQUIRE(r.options);
  CHECK(r.options->mode == Mode::Repl);
  CHECK(r.options->devices == 8);
}

TEST_CASE("cli: a script and its arguments", "[cli]") {
  auto r = parse({"--devices", "4", "train.pxl", "--devices", "x"}, nullptr);
  REQUIRE(r.options);
  CHECK(r.options->mode == Mode::File);
  CHECK(r.options->file == "train.pxl");
  CHECK(r.options->devices == 4);
  CHECK(r.options->script_args == std::vector<std::string>{"--devices", "x"});
}

TEST_CASE("cli: -c code", "[cli]") {
  auto r = parse({"-c", "print(1)", "a"}, nullptr);
  REQUIRE(r.options);
  CHECK(r.options->mode == Mode::Code);
  CHECK(r.options->code == "print(1)");
  CHECK(r.options->script_args == std::vector<std::string>{"a"});
  CHECK_FALSE(parse({"-c"}, nullptr).options);
}

TEST_CASE("cli: - reads the script from stdin", "[cli]") {
  auto r = parse({"--devices", "2", "-", "a"}, nullptr);
  REQUIRE(r.options);
  CHECK(r.options->mode == Mode::Stdin);
  CHECK(r.options->devices == 2);
  CHECK(r.options->script_args == std::vector<std::string>{"a"});
}

TEST_CASE("cli: --devices wins over PXL_DEVICES", "[cli]") {
  CHECK(parse({}, "3").options->devices == 3);
  CHECK(parse({"--devices=5"}, "3").options->devices == 5);
  CHECK(parse({"--devices", "2"}, "junk").options->devices == 2);
}

TEST_CASE("cli: bad device counts are clear errors", "[cli]") {
  auto flag = parse({"--devices", "0"}, nullptr);
  CHECK_FALSE(flag.options);
  CHECK(flag.error.find("--devices") != std::string::npos);
  auto env = parse({}, "eight");
  CHECK_FALSE(env.options);
  CHECK(env.error.find("PXL_DEVICES") != std::string::npos);
  CHECK_FALSE(parse({"--devices"}, nullptr).options);
  CHECK_FALSE(parse({"--devices", "4x"}, nullptr).options);
}

TEST_CASE("cli: help, version, unknown options, --", "[cli]") {
  CHECK(parse({"--help"}, nullptr).options->mode == Mode::Help);
  CHECK(parse({"--version"}, nullptr).options->mode == Mode::Version);
  auto bad = parse({"--frobnicate"}, nullptr);
  CHECK_FALSE(bad.options);
  CHECK(bad.error.find("--frobnicate") != std::string::npos);
  auto dash = parse({"--", "-weird.pxl"}, nullptr);
  REQUIRE(dash.options);
  CHECK(dash.options->file == "-weird.pxl");
}

TEST_CASE("cli: version text names pxl and LLVM", "[cli]") {
  std::string v = pxl::cli::version_text();
  CHECK(v.rfind("pxl ", 0) == 0);
  CHECK(v.find("LLVM 19.") != std::string::npos);
}

TEST_CASE("cli: --platform wins over PXL_PLATFORM; cuda:K implies cuda", "[cli]") {
  using pxl::PlatformKind;
  CHECK(parse({}, nullptr).options->platform == PlatformKind::Cpu);
  CHECK(parse({}, nullptr, "cuda").options->platform == PlatformKind::Cuda);
  CHECK(parse({"--platform", "cpu"}, nullptr, "cuda").options->platform == PlatformKind::Cpu);
  CHECK(parse({"--platform=auto"}, nullptr).options->platform == PlatformKind::Auto);
  auto r = parse({}, "cuda:4");
  REQUIRE(r.options);
  CHECK(r.options->platform == PlatformKind::Cuda);
  CHECK(r.options->cuda_logical);
  CHECK(r.options->devices == 4);
  CHECK_FALSE(parse({"--platform", "cpu"}, "cuda:4").options);
  CHECK_FALSE(parse({"--platform", "gpu"}, nullptr).options);
  CHECK_FALSE(parse({"--platform"}, nullptr).options);
  CHECK_FALSE(parse({"--devices", "cuda:x"}, nullptr).options);
  CHECK_FALSE(parse({"--devices", "cuda:65"}, nullptr).options);
}
