// The os module: environ (the interpreter's copy of the process environment),
// getenv, cpu_count, getcwd and os.path's pure path functions. Writing to
// os.environ changes the copy, not the process (interpreters embedded side by
// side stay independent). One write has an effect, as in JAX: XLA_FLAGS with
// --xla_force_host_platform_device_count=N before the devices are first used
// sizes the CPU mesh (Platform::set_device_count_source).
#include <sys/stat.h>
#include <unistd.h>

#include <optional>
#include <thread>

#include "lang/args.hpp"
#include "runtime/platform.hpp"
#include "stdlib/module_builder.hpp"

extern char** environ; // POSIX

namespace pxl {

namespace {

const char kDeviceCountFlag[] = "--xla_force_host_platform_device_count=";

// The last --xla_force_host_platform_device_count=N in an XLA_FLAGS value
// (XLA's flag parser: later flags win); nullopt when absent or not a count.
std::optional<int> xla_flags_device_count(const std::string& flags) {
  std::optional<int> n;
  size_t at = 0;
  while ((at = flags.find(kDeviceCountFlag, at)) != std::string::npos) {
    at += sizeof(kDeviceCountFlag) - 1;
    size_t end = flags.find_first_of(" \t\n", at);
    try { // (PXL_DEVICES' parser and bounds; a malformed count is ignored)
      n = parse_device_count(flags.substr(at, end == std::string::npos ? end : end - at));
    } catch (const Error&) {
    }
  }
  return n;
}

bool stat_is(const std::string& path, mode_t kind) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && (kind == 0 || (st.st_mode & S_IFMT) == kind);
}

Value make_path_module() {
  ModuleBuilder b("posixpath");
  b.val("sep", make_str("/"));
  b.fn("join", [](InterpreterImpl&, CallArgs& a) {
    if (a.pos.empty())
      throw Error(ErrCode::Arguments, "join() missing 1 required positional argument: 'a'");
    std::string out;
    for (const Value& v : a.pos) {
      const std::string& part = value_to_str(v, "join() argument");
      if (!part.empty() && part[0] == '/')
        out = part; // an absolute part restarts the path
      else if (out.empty() || out.back() == '/')
        out += part;
      else
        out += "/" + part;
    }
    return make_str(out);
  });
  auto split_at_slash = [](const std::string& p) {
    size_t i = p.rfind('/');
    std::string head = i == std::string::npos ? "" : p.substr(0, i + 1);
    std::string tail = i == std::string::npos ? p : p.substr(i + 1);
    // The head loses its trailing slashes unless it is all slashes (Python's posixpath).
    if (head.find_first_not_of('/') != std::string::npos)
      while (!head.empty() && head.back() == '/') head.pop_back();
    return std::make_pair(head, tail);
  };
  b.fn("split", [split_at_slash](InterpreterImpl&, CallArgs& a) {
    ArgReader r("split", a, {"p"}, 1);
    auto [head, tail] = split_at_slash(r.get_str(0));
    return make_tuple({make_str(head), make_str(tail)});
  });
  b.fn("basename", [split_at_slash](InterpreterImpl&, CallArgs& a) {
    ArgReader r("basename", a, {"p"}, 1);
    return make_str(split_at_slash(r.get_str(0)).second);
  });
  b.fn("dirname", [split_at_slash](InterpreterImpl&, CallArgs& a) {
    ArgReader r("dirname", a, {"p"}, 1);
    return make_str(split_at_slash(r.get_str(0)).first);
  });
  b.fn("splitext", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("splitext", a, {"p"}, 1);
    std::string p = r.get_str(0);
    size_t slash = p.rfind('/');
    size_t name = slash == std::string::npos ? 0 : slash + 1;
    size_t dot = p.rfind('.');
    // A dot that only leads the file name (".bashrc") starts no extension.
    size_t first_real = p.find_first_not_of('.', name);
    if (dot == std::string::npos || dot < name || first_real == std::string::npos ||
        dot < first_real)
      return make_tuple({make_str(p), make_str("")});
    return make_tuple({make_str(p.substr(0, dot)), make_str(p.substr(dot))});
  });
  b.fn("isabs", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("isabs", a, {"s"}, 1);
    std::string p = r.get_str(0);
    return Value::boolean(!p.empty() && p[0] == '/');
  });
  b.fn("exists", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("exists", a, {"path"}, 1);
    return Value::boolean(stat_is(r.get_str(0), 0));
  });
  b.fn("isfile", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("isfile", a, {"path"}, 1);
    return Value::boolean(stat_is(r.get_str(0), S_IFREG));
  });
  b.fn("isdir", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("isdir", a, {"s"}, 1);
    return Value::boolean(stat_is(r.get_str(0), S_IFDIR));
  });
  return b.value();
}

} // namespace

Value make_os_module(InterpreterImpl& in) {
  ModuleBuilder b("os");
  auto env = std::make_shared<DictObj>();
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    env->set(make_str(kv.substr(0, eq)), make_str(kv.substr(eq + 1)));
  }
  b.val("environ", Value::object(env));
  // The device count a script asks for through XLA_FLAGS. The process's own
  // XLA_FLAGS (set for JAX beside pxl) does not size pxl's mesh: --devices and
  // PXL_DEVICES do that; only a value the script wrote counts.
  std::optional<std::string> started;
  if (const Value* v = env->find(make_str("XLA_FLAGS")); v && v->is_obj(ObjKind::Str))
    started = v->as<StrObj>()->value;
  in.platform().set_device_count_source([env, started]() -> std::optional<int> {
    const Value* v = env->find(make_str("XLA_FLAGS"));
    if (!v || !v->is_obj(ObjKind::Str)) return std::nullopt;
    const std::string& flags = v->as<StrObj>()->value;
    if (started && *started == flags) return std::nullopt;
    return xla_flags_device_count(flags);
  });
  b.fn("getenv", [env](InterpreterImpl&, CallArgs& a) {
    ArgReader r("getenv", a, {"key", "default"}, 1);
    r.get_str(0);
    const Value* v = env->find(r[0]);
    return v ? *v : r.has(1) ? r[1] : Value();
  });
  b.fn("cpu_count", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("cpu_count", a, {});
    unsigned n = std::thread::hardware_concurrency();
    return n ? Value::integer(n) : Value();
  });
  b.fn("getcwd", [](InterpreterImpl&, CallArgs& a) {
    ArgReader r("getcwd", a, {});
    std::string buf(4096, '\0');
    if (!::getcwd(buf.data(), buf.size()))
      throw Error(ErrCode::Value, "getcwd: the working directory cannot be read");
    return make_str(buf.c_str());
  });
  b.val("path", make_path_module());
  b.val("sep", make_str("/"));
  b.val("pathsep", make_str(":"));
  b.val("linesep", make_str("\n"));
  b.val("curdir", make_str("."));
  b.val("devnull", make_str("/dev/null"));
  b.val("name", make_str("posix"));
  return b.value();
}

} // namespace pxl
