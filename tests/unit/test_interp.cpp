// The host interpreter through its library API: Python semantics and errors.
#include <catch2/catch.hpp>
#include <sstream>

#include <pthread.h>

#include "lang/interp.hpp"
#include "lang/interp_impl.hpp"
#include "lang/system_exit.hpp"

using namespace pxl;

namespace {
std::string run(const std::string& code) {
  std::ostringstream out;
  InterpOptions o;
  o.out = &out;
  Interpreter in(o);
  in.run_string(code, "t.pxl");
  return out.str();
}
std::string error_of(const std::string& code) {
  try {
    run(code);
  } catch (const Error& e) {
    return e.render();
  }
  return "";
}
} // namespace

TEST_CASE("Python printing") {
  CHECK(run("print(1/4, 1e-05, 1e16, 0.1+0.2, -0.0)") ==
        "0.25 1e-05 1e+16 0.30000000000000004 -0.0\n");
  CHECK(run("print(repr('a\\'b'), (1,), [1, 'x'], {'k': None})") ==
        "\"a'b\" (1,) [1, 'x'] {'k': None}\n");
  CHECK(run("print(f'{3.14159:.2f}|{42:>5}|{7:03d}')") == "3.14|   42|007\n");
}

TEST_CASE("closures, defaults and varargs") {
  CHECK(run("def mk():\n  n = [0]\n  def inc():\n    n[0] += 1\n    return n[0]\n  return inc\n"
            "f = mk()\nf()\nprint(f())") == "2\n");
  CHECK(run("def g(a, b=2, *r, **k): return (a, b, r, k)\nprint(g(1, 3, 4, x=5))") ==
        "(1, 3, (4,), {'x': 5})\n");
}

TEST_CASE("chained comparisons short-circuit") {
  CHECK(run("def t(v):\n  print('t', v)\n  return v\nprint(t(1) < t(0) < t(5))") ==
        "t 1\nt 0\nFalse\n");
}

TEST_CASE("errors carry the user's line and column") {
  CHECK(error_of("x = 1\nprint(y)").find("t.pxl:2:7: error[E0100]: name 'y' is not defined") !=
        std::string::npos);
  CHECK(error_of("1 + 'a'").find("unsupported operand type(s) for +: 'int' and 'str'") !=
        std::string::npos);
  CHECK(error_of("[1][3]").find("E0103") != std::string::npos);
  CHECK(error_of("{}['k']").find("E0104") != std::string::npos);
  CHECK(error_of("def f(x): pass\nf()").find("f() missing 1 required positional argument: 'x'") !=
        std::string::npos);
  CHECK(error_of("assert 1 == 2, 'nope'").find("E0107]: nope") != std::string::npos);
  CHECK(error_of("1 // 0").find("E0106") != std::string::npos);
  CHECK(error_of("import nosuchmod").find("E0109") != std::string::npos);
  CHECK(error_of("x = 2 ** 70\nfloat(x ** 16)")
            .find("t.pxl:2:1: error[E0105]: int too large to convert to float") !=
        std::string::npos);
}

TEST_CASE("runaway recursion is a clean error") {
  std::string r = error_of("def f(n): return f(n + 1)\nf(0)");
  CHECK(r.find("E0108") != std::string::npos);
  CHECK(r.find("times)") != std::string::npos);
}

namespace {
// Recurses natively on its own (small) thread, checking the interpreter's
// stack guard at every level, as pxl code called back on a device thread does.
struct ForeignThread {
  InterpreterImpl* in;
  int depth = 0;
  bool recursion_error = false;
  void recurse(int d) {
    volatile char frame[2048];
    frame[0] = static_cast<char>(d);
    depth = d;
    in->check_stack(Span{});
    if (d < (1 << 20)) recurse(d + 1); // never that deep: the guard throws first
    (void)frame[0];
  }
  static void* main(void* self) {
    auto* t = static_cast<ForeignThread*>(self);
    try {
      t->recurse(0);
    } catch (const Error& e) {
      t->recursion_error = e.code() == ErrCode::Recursion;
    }
    return nullptr;
  }
};
} // namespace

TEST_CASE("the stack guard measures a foreign thread by that thread's own stack") {
  // The interpreter measured the main thread's stack; pxl code running on
  // another thread (a host callback on a device thread) must be stopped near
  // the end of that thread's stack, neither at once (the main thread's bounds
  // say nothing about it) nor never (a segfault).
  InterpOptions o;
  InterpreterImpl in(o);
  in.set_stack_base();
  ForeignThread t{&in};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, size_t{2} << 20);
  pthread_t thread;
  REQUIRE(pthread_create(&thread, &attr, &ForeignThread::main, &t) == 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  CHECK(t.recursion_error);
  CHECK(t.depth > 300); // 2 KiB frames: ~1 MiB of the 2 MiB used before stopping
}

TEST_CASE("a destroyed interpreter frees what the program made") {
  // Closures capture their scope, modules hold their functions, and a
  // custom_jvp's defjvps rule its function: reference cycles that must not
  // outlive the interpreter (pxl --batch and embedders make many of them).
  std::weak_ptr<Object> fun, custom, inner, stdlib_fn;
  {
    InterpOptions o;
    std::ostringstream out;
    o.out = &out;
    InterpreterImpl in(o);
    auto src = std::make_shared<SourceFile>(
        "t.pxl", "import jax\nimport jax.numpy as jnp\n"
                 "def fun(x):\n  return jnp.sin(x)\n"
                 "f = jax.custom_jvp(fun)\n"
                 "f.defjvps(lambda t, ans, x: jnp.cos(x) * t)\n"
                 "print(jax.grad(f)(1.0))\n"
                 "def outer():\n  def rec(n):\n    return 0 if n == 0 else rec(n - 1)\n"
                 "  return rec\n"
                 "r = outer()\nprint(r(3), jnp.linalg.norm(jnp.ones(4)))\n");
    in.run_source(src, in.globals(), false);
    CHECK(out.str() == "0.5403023\n0 2.0\n");
    auto global = [&](const char* name) { return in.globals()->vars.at(name); };
    fun = global("fun").obj;
    custom = global("f").obj;
    inner = global("r").obj;
    stdlib_fn = in.get_attr(in.get_attr(global("jnp"), "linalg", Span{}), "norm", Span{}).obj;
  }
  CHECK(fun.expired());
  CHECK(custom.expired());
  CHECK(inner.expired());
  CHECK(stdlib_fn.expired());
}

TEST_CASE("REPL helpers") {
  std::ostringstream out;
  InterpOptions o;
  o.out = &out;
  Interpreter in(o);
  CHECK(in.check_complete("def f():\n") == Completeness::Incomplete);
  CHECK(in.check_complete("def f():\n    return 1\n") == Completeness::Incomplete);
  CHECK(in.check_complete("def f():\n    return 1\n\n") == Completeness::Complete);
  CHECK(in.check_complete("x = [1,\n") == Completeness::Incomplete);
  CHECK(in.check_complete("x = 1\n") == Completeness::Complete);
  CHECK(in.check_complete("x = )\n") == Completeness::Invalid);
  in.run_repl_input("x = 3\n");
  in.run_repl_input("x * 2\n");
  in.run_repl_input("None\n");
  CHECK(out.str() == "6\n");
  auto c = in.complete("np.aran");
  REQUIRE(c.size() == 1);
  CHECK(c[0] == "np.arange");
  CHECK(in.type_of("np.ones((3, 4))") == "float32[3,4]");
  in.reset();
  CHECK_THROWS_AS(in.run_repl_input("x\n"), Error);
}

TEST_CASE("embedding call with host arrays") {
  Interpreter in;
  in.run_string("def f(x, y):\n    return x * y + 1, x.sum()\n");
  Array a(DType::Float32, {3});
  for (int i = 0; i < 3; ++i) a.as<float>()[i] = static_cast<float>(i);
  auto r = in.call("f", {a, a});
  REQUIRE(r.size() == 2);
  CHECK(r[0].as<float>()[2] == 5.0f);
  CHECK(r[1].as<float>()[0] == 3.0f);
}

TEST_CASE("jax.debug.print goes to the interpreter that traced it") {
  std::ostringstream out_a, out_b;
  InterpOptions oa, ob;
  oa.out = &out_a;
  ob.out = &out_b;
  Interpreter a(oa);
  a.run_string("import jax\nf = jax.jit(lambda x: jax.debug.print('a {}', x) or x)\n", "a.pxl");
  {
    Interpreter b(ob); // installed after a, and gone before a prints
    b.run_string("import jax\njax.jit(lambda x: jax.debug.print('b {}', x) or x)(2)\n", "b.pxl");
  }
  a.run_string("f(1)\n", "a.pxl");
  CHECK(out_a.str() == "a 1\n");
  CHECK(out_b.str() == "b 2\n");
}

TEST_CASE("exit() and sys.exit() unwind to the caller with a status, not an error") {
  std::ostringstream out;
  InterpOptions o;
  o.out = &out;
  Interpreter in(o);
  auto status_of = [&](const std::string& code) {
    try {
      in.run_string(code, "t.pxl");
    } catch (const SystemExit& e) {
      return std::to_string(e.status) + "|" + e.message;
    }
    return std::string("no exit");
  };
  CHECK(status_of("import sys\nsys.exit()") == "0|");
  CHECK(status_of("import sys\nsys.exit(3)") == "3|");
  CHECK(status_of("exit(-1)") == "255|");
  CHECK(status_of("quit('bye')") == "1|bye");
  // From inside a jit trace and a pmap'd function: the traces unwind cleanly
  // and the interpreter stays usable.
  CHECK(status_of("import jax\ndef f(x):\n  exit(7)\njax.jit(f)(1.0)") == "7|");
  CHECK(status_of("import jax\nimport jax.numpy as jnp\ndef f(x):\n  exit(8)\n"
                  "jax.pmap(f)(jnp.ones(8))") == "8|");
  in.run_string("print(jax.jit(lambda x: x + 1)(1.0))", "t.pxl");
  CHECK(out.str() == "2.0\n");
}

TEST_CASE("jax_num_cpu_devices sizes the CPU mesh until the devices are first used") {
  InterpOptions o;
  std::ostringstream out;
  o.out = &out;
  Interpreter in(o);
  CHECK(in.planned_num_devices() == 8);
  in.run_string("import jax\njax.config.update('jax_num_cpu_devices', 3)", "t.pxl");
  CHECK(in.planned_num_devices() == 3);
  in.run_string("print(len(jax.devices()))", "t.pxl");
  CHECK(out.str() == "3\n");
  CHECK(in.num_devices() == 3);
  CHECK_THROWS_AS(in.run_string("jax.config.update('jax_num_cpu_devices', 2)", "t.pxl"), Error);
  // A script's XLA_FLAGS, set before the devices are used, counts as well.
  Interpreter second(o);
  second.run_string("import os\nos.environ['XLA_FLAGS'] = "
                    "'--xla_force_host_platform_device_count=2 --xla_other=1'",
                    "t.pxl");
  CHECK(second.num_devices() == 2);
}

TEST_CASE("a trace that fails leaves mutable array references as they were") {
  // Writes inside a jit trace, a loop body and a cond branch are logged in
  // frames that restore the references when the trace unwinds: no traced
  // value escapes into a reference, and no frame stays open.
  std::ostringstream out;
  InterpOptions o;
  o.out = &out;
  InterpreterImpl in(o);
  auto run = [&](const std::string& code) {
    try {
      in.run_source(std::make_shared<SourceFile>("t.pxl", code), in.globals(), false);
    } catch (const Error&) {
      return false;
    }
    return true;
  };
  REQUIRE(run("import jax\nimport jax.numpy as jnp\nr = jax.new_ref(jnp.zeros(2))\n"));
  CHECK_FALSE(run("def f(x):\n  r[0] = x\n  return jnp.ones(2) + jnp.ones(3)\njax.jit(f)(1.0)\n"));
  CHECK_FALSE(run("def b(c):\n  r[1] = c\n  return c + jnp.ones(3)\n"
                  "jax.jit(lambda: jax.lax.while_loop(lambda c: c < 3.0, b, 0.0))()\n"));
  CHECK_FALSE(run("def t():\n  r[0] = 4.0\n  return jnp.ones(3)\n"
                  "jax.jit(lambda p: jax.lax.cond(p, t, lambda: jnp.ones(2)))(True)\n"));
  CHECK(in.ref_frames.empty());
  REQUIRE(run("print(r)\njax.jit(lambda: r.__setitem__(1, 5.0))()\nprint(r[...])\n"));
  CHECK(out.str() == "Ref([0., 0.], dtype=float32)\n[0. 5.]\n");
}
