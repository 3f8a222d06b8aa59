#include "repl/cli.hpp"

#include "codegen/llvm_info.hpp"
#include "lang/diag.hpp"
#include "runtime/platform.hpp"

#ifndef PXL_VERSION
#define PXL_VERSION "unknown"
#endif

namespace pxl::cli {

namespace {

// Splits "--name=value" so both "--devices 4" and "--devices=4" work.
bool split_long(const std::string& arg, const std::string& name,
                std::optional<std::string>& value) {
  if (arg == name) return true;
  if (arg.size() > name.size() && arg.compare(0, name.size(), name) == 0 &&
      arg[name.size()] == '=') {
    value = arg.substr(name.size() + 1);
    return true;
  }
  return false;
}

} // namespace

ParseResult parse(const std::vector<std::string>& args, const char* env_devices,
                  const char* env_platform) {
  Options opts;
  std::optional<std::string> devices_text;  // --devices wins over the environment
  std::optional<std::string> platform_text; // so does --platform
  size_t i = 0;
  auto fail = [](std::string msg) { return ParseResult{std::nullopt, std::move(msg)}; };
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::optional<std::string> value;
    if (a == "--") {
      ++i;
      break;
    } else if (a == "-h" || a == "--help") {
      opts.mode = Mode::Help;
      return {opts, {}};
    } else if (a == "--version" || a == "-V") {
      opts.mode = Mode::Version;
      return {opts, {}};
    } else if (split_long(a, "--devices", value)) {
      if (!value) {
        if (i + 1 >= args.size()) return fail("option '--devices' needs a value");
        value = args[++i];
      }
      devices_text = *value;
    } else if (split_long(a, "--platform", value)) {
      if (!value) {
        if (i + 1 >= args.size())
          return fail("option '--platform' needs a value (cpu, cuda, auto)");
        value = args[++i];
      }
      platform_text = *value;
    } else if (split_long(a, "--dump", value)) {
      if (!value) {
        if (i + 1 >= args.size()) return fail("option '--dump' needs a value (ir, llvm, ptx)");
        value = args[++i];
      }
      if (*value == "ir")
        opts.dump_ir = true;
      else if (*value == "llvm")
        opts.dump_llvm = true;
      else if (*value == "ptx")
        opts.dump_ptx = true;
      else
        return fail("--dump: unknown stage '" + *value + "' (known: ir, llvm, ptx)");
    } else if (split_long(a, "--exec", value)) {
      if (!value) {
        if (i + 1 >= args.size()) return fail("option '--exec' needs a value (jit, interp)");
        value = args[++i];
      }
      if (*value == "jit")
        opts.exec = ExecMode::Jit;
      else if (*value == "interp")
        opts.exec = ExecMode::Interp;
      else
        return fail("--exec: unknown mode '" + *value + "' (known: jit, interp)");
    } else if (a == "--comm") {
      opts.comm_report = true;
    } else if (a == "--profile") {
      opts.profile = true;
    } else if (a == "--time-passes") {
      opts.time_passes = true;
    } else if (a == "--explain-cache") {
      opts.explain_cache = true;
    } else if (a == "--batch") {
      if (args.size() != 1)
        return fail("--batch takes no other arguments (each request has its own)");
      opts.mode = Mode::Batch;
      return {opts, {}};
    } else if (a == "-c") {
      if (i + 1 >= args.size()) return fail("option '-c' needs a code argument");
      opts.mode = Mode::Code;
      opts.code = args[++i];
      ++i;
      break; // like python -c: the rest are the script's arguments
    } else if (a.size() > 1 && a[0] == '-') {
      return fail("unknown option '" + a + "'");
    } else {
      break; // the script
    }
  }
  if (opts.mode != Mode::Code && i < args.size()) {
    // `-` as the script: the whole of stdin is the script (as python -).
    opts.mode = args[i] == "-" ? Mode::Stdin : Mode::File;
    opts.file = args[i++];
  }
  opts.script_args.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());

  const bool from_flag = devices_text.has_value();
  if (!devices_text && env_devices) devices_text = std::string(env_devices);
  if (devices_text) {
    try {
      DeviceRequest r = parse_device_request(*devices_text);
      opts.devices = r.count;
      opts.cuda_devices_given = true;
      opts.cuda_logical = r.cuda_logical;
    } catch (const Error& e) {
      return fail(std::string(from_flag ? "--devices: " : "PXL_DEVICES: ") + e.message());
    }
  }
  const bool platform_flag = platform_text.has_value();
  if (!platform_text && env_platform && *env_platform) platform_text = std::string(env_platform);
  if (platform_text) {
    try {
      opts.platform = parse_platform(*platform_text);
    } catch (const Error& e) {
      return fail(std::string(platform_flag ? "--platform: " : "PXL_PLATFORM: ") + e.message());
    }
  } else if (opts.cuda_logical) {
    opts.platform = PlatformKind::Cuda; // cuda:K names the platform itself
  }
  if (opts.cuda_logical && opts.platform == PlatformKind::Cpu)
    return fail("devices 'cuda:" + std::to_string(opts.devices) +
                "' are CUDA devices, but the platform is cpu");
  return {opts, {}};
}

std::string usage() {
  return "usage: pxl [options] [file.pxl [args...]]\n"
         "       pxl [options] -c 'code' [args...]\n"
         "       pxl [options] - [args...]   (the script read from stdin)\n"
         "\n"
         "With no file, pxl starts the REPL (or, when stdin is not a terminal, runs\n"
         "stdin line by line through the REPL without prompts).\n"
         "\n"
         "options:\n"
         "  -c CODE        run CODE as a script\n"
         "  --devices N    number of devices (CPU default 8, CUDA default every GPU;\n"
         "                 also PXL_DEVICES=N); cuda:K is K logical devices on one GPU\n"
         "  --platform P   cpu (the default), cuda (NVIDIA GPUs, an error without one)\n"
         "                 or auto (cuda when usable, else cpu); also PXL_PLATFORM=P\n"
         "  --dump=ir      print the IR of every traced (pmap/shard_map) function\n"
         "  --dump=llvm    print the optimized LLVM IR of their fused kernels\n"
         "  --dump=ptx     print their fused kernels as sm_90 PTX\n"
         "  --exec MODE    run traced functions compiled by the LLVM JIT (jit, the\n"
         "                 default) or interpreted by the reference kernels (interp)\n"
         "  --comm         print the communication report of every pmap/shard_map function\n"
         "  --profile      at exit, list every pull of a sharded array to the host, with its line\n"
         "  --time-passes  at exit, print the time spent in each phase (parse, trace, check,\n"
         "                 fusion, LLVM optimisation, codegen, run)\n"
         "  --explain-cache  say why a function is traced again and whether its kernels\n"
         "                 were compiled or loaded from the disk cache (PXL_CACHE_DIR)\n"
         "  --batch        run many programs in one process (a test runner's mode): read\n"
         "                 requests DIR<TAB>PXL_DEVICES<TAB>ARGS... from stdin, one a line;\n"
         "                 write 'pxl-batch STATUS OUT-BYTES ERR-BYTES', then each\n"
         "                 program's stdout and stderr; the programs share the CUDA driver\n"
         "  --version, -V  print the version of pxl and of its LLVM, then exit\n"
         "  --help, -h     print this help, then exit\n"
         "  --             end of options\n";
}

std::string version_text() {
  LlvmInfo info = llvm_info();
  return "pxl " PXL_VERSION "\nLLVM " + info.version + " (host " + info.triple + ", cpu " +
         info.host_cpu + ")\n";
}

} // namespace pxl::cli
