// Reverse-mode autodiff (stdlib/autodiff*.cpp): every differentiable op's
// gradient against central finite differences in float64, higher order,
// pytrees, argnums, has_aux, vjp, errors, and the collective transposes
// inside pmap/shard_map against hand-computed values.
#include <catch2/catch.hpp>
#include <sstream>

#include "lang/interp.hpp"

using namespace pxl;

namespace {

// fd_check(f, *args): the largest relative difference between jax.grad (all
// arguments) and central differences, computed on the host in float64.
const char* kPrelude = R"(
import jax
import jax.numpy as jnp
from jax import lax
def fd_check(f, *args):
    args = [jnp.asarray(a, dtype=jnp.float64) for a in args]
    g = jax.grad(f, argnums=tuple(range(len(args))))(*args)
    err = 0.0
    for k in range(len(args)):
        a = args[k]
        flat = a.reshape(-1)
        for i in range(flat.shape[0]):
            h = 1e-6
            ap = list(args)
            ap[k] = flat.at[i].add(h).reshape(a.shape)
            am = list(args)
            am[k] = flat.at[i].add(-h).reshape(a.shape)
            fd = (float(f(*ap)) - float(f(*am))) / (2 * h)
            got = float(g[k].reshape(-1)[i])
            err = max(err, abs(fd - got) / max(1.0, abs(fd)))
    return err
)";

std::string run(const std::string& code, int devices = 8) {
  std::ostringstream out;
  InterpOptions o;
  o.out = &out;
  o.num_devices = devices;
  Interpreter in(o);
  in.run_string(std::string(kPrelude) + code, "t.pxl");
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

struct Case {
  const char* f;
  const char* args;
};

// Runs fd_check on each case; a failing case is reported by its text.
void check_cases(std::initializer_list<Case> cases) {
  std::string code;
  for (const Case& c : cases)
    code += std::string("print(") + "fd_check(" + c.f + ", " + c.args + ") < 1e-6)\n";
  std::string out = run(code);
  std::istringstream lines(out);
  std::string line;
  for (const Case& c : cases) {
    std::getline(lines, line);
    INFO(c.f << " at " << c.args);
    CHECK(line == "True");
  }
}

} // namespace

TEST_CASE("grad of unary ops matches finite differences", "[grad]") {
  const char* x = "[0.3, -1.2, 2.0]";
  const char* pos = "[0.3, 1.2, 2.0]";
  check_cases({{"lambda x: jnp.sum(-x * x)", x},
               {"lambda x: jnp.sum(jnp.exp(x))", x},
               {"lambda x: jnp.sum(jnp.log(x))", pos},
               {"lambda x: jnp.sum(jnp.log1p(x))", pos},
               {"lambda x: jnp.sum(jnp.expm1(x))", x},
               {"lambda x: jnp.sum(jnp.sqrt(x))", pos},
               {"lambda x: jnp.sum(lax.rsqrt(x))", pos},
               {"lambda x: jnp.sum(jnp.tanh(x))", x},
               {"lambda x: jnp.sum(jnp.sin(x) * jnp.cos(x))", x},
               {"lambda x: jnp.sum(jnp.tan(x))", "[0.3, -1.2, 1.0]"},
               {"lambda x: jnp.sum(jnp.abs(x) * x)", x},
               {"lambda x: jnp.sum(lax.logistic(x))", x},
               {"lambda x: jnp.sum(lax.erf(x))", x},
               // piecewise constant: away from the jumps, zero
               {"lambda x: jnp.sum(x * jnp.sign(x) + jnp.floor(x) + jnp.ceil(x) + jnp.round(x))",
                "[0.3, -1.2, 2.2]"}});
  // convert_element_type: the cotangent goes back to the input's dtype.
  CHECK(run("g = jax.grad(lambda x: jnp.sum(x.astype(jnp.float32) * 2.0))(jnp.ones(2, "
            "dtype=jnp.float64))\n"
            "print(g.dtype, g)") == "float64 [2. 2.]\n");
}

TEST_CASE("grad of binary ops matches finite differences", "[grad]") {
  const char* a = "[0.3, -1.2, 2.0]";
  const char* b = "[1.5, 0.7, -0.4]";
  check_cases({{"lambda a, b: jnp.sum(a + b * 2 - a * b)", "[0.3, -1.2], [1.5, 0.7]"},
               {"lambda a, b: jnp.sum(a / b)", "[0.3, -1.2], [1.5, 0.7]"},
               {"lambda a, b: jnp.sum(jnp.remainder(a, b))", "[2.3, -1.2], [1.5, 0.7]"},
               {"lambda a, b: jnp.sum(a ** b)", "[0.3, 1.2], [1.5, 0.7]"},
               {"lambda a, b: jnp.sum(jnp.maximum(a, b) * 3 + jnp.minimum(a, b))",
                "[0.3, -1.2, 2.0], [1.5, 0.7, -0.4]"},
               {"lambda a, b: jnp.sum(jnp.arctan2(a, b))", "[0.3, -1.2], [1.5, 0.7]"},
               {"lambda a, b: jnp.sum(jnp.where(a > b, a * a, b * a))",
                "[0.3, -1.2, 2.0], [1.5, 0.7, -0.4]"},
               {"lambda a: jnp.sum(a ** 3)", a},
               {"lambda a: jnp.sum(2.0 ** a)", b}});
}

TEST_CASE("grad of structural ops and reductions matches finite differences", "[grad]") {
  const char* m = "[[0.3, -1.2, 2.0], [1.5, 0.7, -0.4]]";
  check_cases({{"lambda x: jnp.sum(jnp.broadcast_to(x, (4, 3)) * jnp.arange(12.0).reshape(4, 3))",
                "[0.3, -1.2, 2.0]"},
               {"lambda x: jnp.sum((x + x[:, :1]) ** 2)", m},
               {"lambda x: jnp.sum(x.reshape(3, 2) * jnp.arange(6.0).reshape(3, 2))", m},
               {"lambda x: jnp.sum(x.T * jnp.arange(6.0).reshape(3, 2))", m},
               {"lambda x: jnp.sum(x[:, ::2] ** 2) + jnp.sum(x[1, 1:] ** 3)", m},
               {"lambda x: jnp.sum(x[:, ::-1] * jnp.arange(6.0).reshape(2, 3))", m},
               {"lambda x: jnp.sum(jnp.concatenate([x, x * 2], axis=1) ** 2)", m},
               // pad (no jnp.pad yet): slice's transpose, differentiated again
               {"lambda x: jnp.sum(jax.grad(lambda z: jnp.sum(z[:, 1::2] ** 3))(x) ** 2)", m},
               {"lambda x: jnp.sum(jnp.max(x, axis=1) + jnp.min(x, axis=0).sum())", m},
               {"lambda x: jnp.prod(x) + jnp.sum(jnp.prod(x, axis=0))", m},
               {"lambda x: jnp.prod(x * jnp.array([[1.0, 0.0, 1.0], [1.0, 1.0, 1.0]]))", m},
               {"lambda x: jnp.mean(x ** 2) + jnp.var(x)", m},
               {"lambda x: jnp.sum(jnp.cumsum(x, axis=1) ** 2)", m},
               {"lambda x: jnp.sum(x[jnp.array([1, 0, 1])] * 2.0)", m},
               {"lambda x: jnp.sum(x.at[0, 1].set(5.0) ** 2) + jnp.sum(x.at[1].add(x[0]) ** 2)", m},
               {"lambda x: jnp.sum(x.at[jnp.array([0, 0])].multiply(3.0) ** 2)", m}});
}

TEST_CASE("grad of dot_general matches finite differences", "[grad]") {
  check_cases({{"lambda a, b: jnp.sum((a @ b) ** 2)",
                "[[0.3, -1.2, 2.0], [1.5, 0.7, -0.4]], [[1.0, 2.0], [0.5, -1.0], [0.2, 0.1]]"},
               {"lambda a, b: jnp.sum(jnp.einsum('bij,bjk->bik', a, b) ** 2)",
                "jnp.arange(12.0).reshape(2, 2, 3) / 7, jnp.arange(12.0).reshape(2, 3, 2) / 5"},
               {"lambda a, b: jnp.sum(jnp.einsum('ijb,kbj->bki', a, b) ** 2)",
                "jnp.arange(12.0).reshape(2, 3, 2) / 7, jnp.arange(12.0).reshape(2, 2, 3) / 5"},
               {"lambda a, b: jnp.dot(a, b) ** 2", "[0.3, -1.2, 2.0], [1.5, 0.7, -0.4]"},
               {"lambda a, b: jnp.sum(jnp.outer(a, b) ** 2)", "[0.3, -1.2], [1.5, 0.7, -0.4]"}});
}

TEST_CASE("grad of grad, pytrees, argnums, has_aux, vjp", "[grad]") {
  // d2/dx2 sin(x) x^3 = -sin x x^3 + 6 x^2 cos x + 6 x sin x
  CHECK(run("x = jnp.float64(1.5)\n"
            "g2 = jax.grad(jax.grad(lambda x: jnp.sin(x) * x ** 3))(x)\n"
            "want = -jnp.sin(x) * x ** 3 + 6 * x ** 2 * jnp.cos(x) + 6 * x * jnp.sin(x)\n"
            "print(abs(float(g2 - want)) < 1e-12)\n"
            "print(jax.grad(jax.grad(jax.grad(lambda x: x ** 4)))(2.0))") == "True\n48.0\n");
  CHECK(run("p = {'w': jnp.ones((3, 2)), 'b': [jnp.zeros(2), 1.0]}\n"
            "def loss(p, x):\n"
            "    return jnp.sum((x @ p['w'] + p['b'][0]) * p['b'][1])\n"
            "g = jax.grad(loss)(p, jnp.arange(6.0).reshape(2, 3))\n"
            "print(sorted(g.keys()), g['w'].tolist(), g['b'][0].tolist(), g['b'][1])\n"
            "gx = jax.grad(loss, argnums=(1,))(p, jnp.ones((2, 3)))\n"
            "print(type(gx).__name__, gx[0].tolist())") ==
        "['b', 'w'] [[3.0, 3.0], [5.0, 5.0], [7.0, 7.0]] [2.0, 2.0] 30.0\n"
        "tuple [[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]]\n");
  CHECK(run("(v, aux), g = jax.value_and_grad(lambda x: (x * x, {'h': x + 1}), has_aux=True)(3.0)\n"
            "print(v, aux['h'], g)\n"
            "g, aux = jax.grad(lambda x, n: (x ** n, n), argnums=0, has_aux=True)(2.0, 3)\n"
            "print(g, aux)\n"
            "out, f = jax.vjp(lambda a, b: a * b, jnp.array([1.0, 2.0]), jnp.array([3.0, 4.0]))\n"
            "print(out, f(jnp.array([1.0, 10.0])))") ==
        "9.0 4.0 6.0\n12.0 3\n[3. 8.] (Array([ 3., 40.], dtype=float32), Array([ 1., 20.], "
        "dtype=float32))\n");
}

TEST_CASE("grad errors follow JAX", "[grad]") {
  CHECK_THAT(error_of("jax.grad(lambda x: x)(3)"),
             Catch::Contains("grad requires real- or complex-valued inputs") &&
                 Catch::Contains("int32"));
  CHECK_THAT(error_of("jax.grad(lambda x: x * jnp.ones(3))(3.0)"),
             Catch::Contains(
                 "Gradient only defined for scalar-output functions. Output had shape: (3,)."));
  CHECK_THAT(error_of("jax.grad(lambda x: (x > 1).astype(jnp.int32))(3.0)"),
             Catch::Contains("grad requires real-valued outputs"));
  CHECK_THAT(error_of("jax.grad(lambda x: x, has_aux=True)(3.0)"),
             Catch::Contains("expected function with aux output to return a two-element tuple"));
  CHECK_THAT(error_of("jax.grad(lambda x: x, argnums=1)(3.0)"),
             Catch::Contains("requires at least 2 positional arguments"));
}

TEST_CASE("collective transposes inside shard_map and pmap", "[grad]") {
  const char* setup = R"(
from jax.sharding import Mesh, PartitionSpec as P
from jax.experimental.shard_map import shard_map
mesh = Mesh(jax.devices()[:4], ('i',))
x = jnp.arange(4.0) + 1
def sm(f, o=P('i')):
    return shard_map(f, mesh=mesh, in_specs=P('i'), out_specs=o)(x).tolist()
def pm(f):
    return jax.pmap(f, axis_name='i')(x).tolist()
)";
  // psum <-> broadcast (shard_map) / psum (pmap, as JAX's pmap).
  CHECK(run(std::string(setup) + "print(sm(jax.grad(lambda v: lax.psum(jnp.sum(v * v), 'i'))))\n"
                                 "print(pm(jax.grad(lambda v: lax.psum(v * v, 'i'))))\n") ==
        "[2.0, 4.0, 6.0, 8.0]\n[8.0, 16.0, 24.0, 32.0]\n");
  // all_gather <-> own slice (shard_map: the gathered value is invariant);
  // psum_scatter (pmap).
  CHECK(run(std::string(setup) +
            "w = jnp.arange(4.0)\n"
            "print(sm(jax.grad(lambda v: jnp.sum(lax.all_gather(v, 'i', tiled=True) * w))))\n"
            "print(sm(jax.grad(lambda v: jnp.sum(lax.all_gather(v[0], 'i') * w))))\n"
            "print(pm(jax.grad(lambda v: jnp.sum(lax.all_gather(v, 'i') * w))))\n") ==
        "[0.0, 1.0, 2.0, 3.0]\n[0.0, 1.0, 2.0, 3.0]\n[0.0, 4.0, 8.0, 12.0]\n");
  // ppermute <-> inverse permutation; psum_scatter <-> all_gather; all_to_all.
  CHECK(run(std::string(setup) + "perm = [(0, 1), (1, 2), (2, 3), (3, 0)]\n"
                                 "print(sm(jax.grad(lambda v: jnp.sum(lax.ppermute(v, 'i', perm) * "
                                 "(lax.axis_index('i') + 1)))))\n"
                                 "print(sm(jax.grad(lambda v: jnp.sum(lax.psum_scatter(jnp.ones(4) "
                                 "* v, 'i', tiled=True) * (lax.axis_index('i') + 1)))))\n"
                                 "print(sm(jax.grad(lambda v: jnp.sum(lax.all_to_all(jnp.ones(4) * "
                                 "v, 'i', 0, 0, tiled=True) * jnp.arange(4.0)))))\n") ==
        "[2.0, 3.0, 4.0, 1.0]\n[10.0, 10.0, 10.0, 10.0]\n[0.0, 4.0, 8.0, 12.0]\n");
  // the implicit invariant->varying broadcast <-> psum.
  CHECK(run(std::string(setup) +
            "g = lambda w, v: jax.grad(lambda w: jnp.sum(v * w))(w)\n"
            "print(shard_map(g, mesh=mesh, in_specs=(P(), P('i')), out_specs=P())(2.0, x))\n"
            "print(jax.pmap(g, axis_name='i', in_axes=(None, 0))(2.0, x))\n") ==
        "10.0\n[1. 2. 3. 4.]\n");
  // As in JAX, pmax has no derivative.
  CHECK(error_of(std::string(setup) + "print(sm(jax.grad(lambda v: lax.pmax(jnp.sum(v), 'i'))))\n")
            .find("Differentiation rule for 'pmax' not implemented") != std::string::npos);
}

TEST_CASE("sharded gradient equals the unsharded gradient", "[grad]") {
  CHECK(run(R"(
from jax.sharding import Mesh, PartitionSpec as P
from jax.experimental.shard_map import shard_map
mesh = Mesh(jax.devices()[:4], ('m',))
x = jnp.arange(12.0).reshape(3, 4) / 10
w1 = jnp.arange(32.0).reshape(4, 8) / 50
w2 = jnp.arange(16.0).reshape(8, 2) / 30
def dense(w1, w2):
    return jnp.sum(jnp.tanh(x @ w1) @ w2)
def megatron(w1, w2):
    return lax.psum(jnp.sum(jnp.tanh(x @ w1) @ w2), 'm')
gs = shard_map(jax.grad(megatron, argnums=(0, 1)), mesh=mesh, in_specs=(P(None, 'm'), P('m', None)),
               out_specs=(P(None, 'm'), P('m', None)))(w1, w2)
gd = jax.grad(dense, argnums=(0, 1))(w1, w2)
print(float(jnp.max(jnp.abs(gs[0] - gd[0]))) < 1e-6, float(jnp.max(jnp.abs(gs[1] - gd[1]))) < 1e-6)
)") == "True True\n");
}

TEST_CASE("grad through shard_map and pmap calls matches finite differences", "[grad]") {
  CHECK(run(R"(
from jax.sharding import Mesh, PartitionSpec as P
from jax.experimental.shard_map import shard_map
devs = jax.devices()
mesh = Mesh(devs[:4], ('i',))
sm = shard_map(lambda w, a: lax.psum(jnp.sum(jnp.tanh(a * w) * a), 'i'), mesh=mesh,
               in_specs=(P(), P('i')), out_specs=P())
print(fd_check(sm, 0.7, jnp.arange(8.0) / 5) < 1e-6)
print(fd_check(jax.jit(sm), 0.7, jnp.arange(8.0) / 5) < 1e-6)
pm = jax.pmap(lambda w, a: jnp.sin(w * a) * lax.psum(a, 'i'), axis_name='i', in_axes=(None, 0))
print(fd_check(lambda w, a: jnp.sum(pm(w, a) ** 2), 0.5, jnp.arange(4.0) / 3) < 1e-6)
mesh2 = Mesh([devs[:4], devs[4:]], ('d', 'm'))
def tp(w1, w2, x):
    h = jnp.tanh(x @ w1)
    return lax.pmean(jnp.sum(lax.psum(h @ w2, 'm') ** 2), 'd')
tps = shard_map(tp, mesh=mesh2, in_specs=(P(None, 'm'), P('m', None), P('d')), out_specs=P())
x = jnp.arange(12.0).reshape(2, 6) / 10
print(fd_check(lambda w1, w2: tps(w1, w2, x), jnp.arange(24.0).reshape(6, 4) / 30 - 0.4,
               jnp.arange(8.0).reshape(4, 2) / 10 - 0.3) < 1e-6)
)") == "True\nTrue\nTrue\nTrue\n");
}

TEST_CASE("SPMD calls under transformations: located errors, prints", "[grad]") {
  const char* setup = R"(
from jax.sharding import Mesh, PartitionSpec as P
from jax.experimental.shard_map import shard_map
mesh = Mesh(jax.devices()[:4], ('i',))
def noisy(a):
    jax.debug.print("{}", a)
    return lax.psum(jnp.sum(a), 'i')
)";
  std::string nested =
      error_of(std::string(setup) +
               "inner = shard_map(lambda a: a, mesh=mesh, in_specs=P('i'), out_specs=P('i'))\n"
               "shard_map(inner, mesh=mesh, in_specs=P('i'), out_specs=P('i'))(jnp.arange(8.0))\n");
  CHECK(nested.find("E0111") != std::string::npos);
  CHECK(nested.find("should match the mesh passed to shard_map") != std::string::npos);
  CHECK(nested.find("t.pxl:") != std::string::npos);
  // A print in the mapped function prints each device's block once: the
  // backward pass's recomputation of the forward pass prints nothing.
  std::string printed =
      run(std::string(setup) + "print(jax.grad(shard_map(noisy, mesh=mesh, in_specs=P('i'), "
                               "out_specs=P()))(jnp.arange(8.0)))\n");
  CHECK(printed == "[0. 1.]\n[2. 3.]\n[4. 5.]\n[6. 7.]\n[1. 1. 1. 1. 1. 1. 1. 1.]\n");
}

TEST_CASE("--dump=ir shows an SPMD call and its transpose without dead code", "[grad]") {
  std::ostringstream out;
  InterpOptions o;
  o.out = &out;
  o.num_devices = 4;
  o.dump_ir = true;
  Interpreter in(o);
  in.run_string(R"(
import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh, PartitionSpec as P
from jax.experimental.shard_map import shard_map
mesh = Mesh(jax.devices(), ('x',))
def f(w, a):
    return lax.psum(jnp.sum(jnp.sin(a * w)), 'x')
g = shard_map(f, mesh=mesh, in_specs=(P(), P('x')), out_specs=P())
print(jax.jit(jax.grad(g))(jnp.float32(0.5), jnp.arange(8.0)))
)",
                "t.pxl");
  std::string s = out.str();
  CHECK(s.find("= spmd_call[shard_map @f mesh=Mesh('x': 4) in=(P(), "
               "P('x',)) out=(P())] %0, %1 : f32[]") != std::string::npos);
  size_t t = s.find("func @f_transpose(");
  REQUIRE(t != std::string::npos);
  std::string body = s.substr(t, s.find("func @", t + 1) - t); // up to the next function
  // The recomputed forward pass keeps the mul its backward reads, not the loss
  // or its psum; the one psum left sums the replicated w's cotangent.
  CHECK(body.find(" = cos ") != std::string::npos);
  CHECK(body.find(" = sin ") == std::string::npos);
  size_t first = body.find(" = psum");
  CHECK(first != std::string::npos);
  CHECK(body.find(" = psum", first + 1) == std::string::npos);
  CHECK(s.find("-15.995058") != std::string::npos);
}
