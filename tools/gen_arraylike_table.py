#!/usr/bin/env python3
"""Writes stdlib/arraylike_table.inc: which arguments of which JAX functions
go through JAX's check_arraylike ("sum requires ndarray or scalar arguments,
got <class 'list'> at position 0.") or a lax primitive's argument check ("Error
interpreting argument to add as a JAX value. ..."), with the name and position
each error reports.

It asks JAX itself: every public function of the modules below is called with
a list in one parameter at a time (arrays elsewhere) and the error is read
back; a parameter whose list elements are checked one by one (concatenate's
arrays) is a sequence, and *args are checked per element. Run it with JAX
0.10.2 installed (never needed by the build or the tests; the output is
committed):
  XLA_FLAGS=--xla_force_host_platform_device_count=8 python3 tools/gen_arraylike_table.py
"""
import inspect, os, re, warnings
warnings.filterwarnings("ignore")
import jax, jax.numpy as jnp, jax.lax as lax
import jax.scipy.special, jax.scipy.linalg, jax.scipy.signal, jax.scipy.stats, jax.scipy.fft, jax.scipy.ndimage
import jax.scipy.integrate, jax.scipy.interpolate, jax.scipy.cluster.vq, jax.scipy.spatial.transform
import jax.nn, jax.random, jax.numpy.linalg, jax.numpy.fft
mods = {"jax.numpy": jnp, "jax.numpy.linalg": jnp.linalg, "jax.numpy.fft": jnp.fft, "jax.nn": jax.nn,
        "jax.scipy.special": jax.scipy.special, "jax.scipy.linalg": jax.scipy.linalg,
        "jax.scipy.signal": jax.scipy.signal, "jax.scipy.fft": jax.scipy.fft, "jax.scipy.ndimage": jax.scipy.ndimage,
        "jax.scipy.integrate": jax.scipy.integrate, "jax.scipy.cluster.vq": jax.scipy.cluster.vq,
        "jax.random": jax.random, "jax.lax": lax}
for sub in ["norm","beta","cauchy","chi2","dirichlet","expon","gamma","gennorm","geom","laplace","logistic","multinomial",
            "multivariate_normal","nbinom","poisson","t","truncnorm","uniform","vonmises","wrapcauchy","bernoulli","binom","betabinom","pareto","gumbel_l","gumbel_r"]:
    m = getattr(jax.scipy.stats, sub, None)
    if m is not None: mods["jax.scipy.stats." + sub] = m
RE1 = re.compile(r"^(\S+) requires ndarray or scalar arguments, got <class '(\w+)'> at position (\d+)\.")
RE2 = re.compile(r"^Error interpreting argument to (\S+) as a JAX value\. The problematic value is of type <class '(\w+)'> and was passed to (\S+) at position (\d+)\.")
RE3 = re.compile(r"^Cannot determine dtype of \[\[1\.0, 2\.0\], \[3\.0, 4\.0\]\]$")
RE4 = re.compile(r"^Argument '\[\[1\.0, 2\.0\], \[3\.0, 4\.0\]\]' of type '<class 'list'>' is not a valid JAX type$")
def filler(p):
    if "key" in p.name and p.name != "keepdims": return jax.random.key(0)
    return jnp.ones((2, 2))
def call(f, params, i, val, none=False):
    args = []; kw = {}
    for j, p in enumerate(params):
        if p.kind == p.VAR_POSITIONAL:
            if j == i: args.extend(val)
            continue
        if p.kind == p.VAR_KEYWORD: continue
        v = val if j == i else None
        if v is None and not (none and j == i):
            if p.default is not p.empty and j > i: continue
            v = filler(p) if p.default is p.empty else p.default
        if p.kind == p.KEYWORD_ONLY: kw[p.name] = v
        else: args.append(v)
    try:
        f(*args, **kw); return None
    except Exception as e:
        return str(e).split("\n")[0]
out = []
for mname, m in mods.items():
    for name in sorted(dir(m)):
        if name.startswith("_"): continue
        f = getattr(m, name)
        if not callable(f) or inspect.isclass(f) or inspect.ismodule(f): continue
        try: sig = inspect.signature(f)
        except Exception: continue
        params = list(sig.parameters.values())
        entries = []
        for i, p in enumerate(params):
            if p.kind == p.VAR_KEYWORD: continue
            if p.kind == p.VAR_POSITIONAL:
                msg = call(f, params, i, [jnp.ones((2,2)), [1.0, 2.0]])
                kind = "varargs"
            else:
                msg = call(f, params, i, [[1.0, 2.0], [3.0, 4.0]])
                kind = "param"
            if msg is None: continue
            m1 = RE1.match(msg); m2 = RE2.match(msg)
            if not (m1 or m2):
                if RE3.match(msg) or RE4.match(msg):
                    entries.append(dict(param=p.name, index=i, kind="param", style="dtype" if RE3.match(msg) else "jaxtype", err="", pos=0))
                continue
            if kind == "param":
                # a sequence checked element by element: a list in its second element is
                # reported one position after a list in its first
                msg2 = call(f, params, i, [jnp.ones((2,2)), [[1.0, 2.0], [3.0, 4.0]]])
                n1 = RE1.match(msg2 or "") or RE2.match(msg2 or "")
                if n1 and int(n1.group(n1.re.groups)) == int((m1 or m2).group((m1 or m2).re.groups)) + 1:
                    kind = "seq"
            if m1: entries.append(dict(param=p.name, index=i, kind=kind, style="np", err=m1.group(1), pos=int(m1.group(3))))
            else: entries.append(dict(param=p.name, index=i, kind=kind, style="lax", err=m2.group(1), pos=int(m2.group(4))))
            if kind == "param":  # None refused even where it is the default (where's x and y)?
                entries[-1]["none_refused"] = "'NoneType'" in (call(f, params, i, None, none=True) or "")
        if entries:
            out.append(dict(module=mname, name=name, checks=entries))

# Functions whose other parameters the generic probe above cannot fill (an
# axis, a subscript string): a call per parameter, with L the list.
L = [[1.0, 2.0], [3.0, 4.0]]
A = jnp.ones((2, 2))
EXPLICIT = [
    ("jax.numpy", "einsum", "operands", "jnp.einsum('ij,ij', A, L)"),
    ("jax.numpy", "where", "x", "jnp.where(A > 0, L, A)"),
    ("jax.numpy", "where", "y", "jnp.where(A > 0, A, L)"),
    ("jax.numpy", "swapaxes", "a", "jnp.swapaxes(L, 0, 1)"),
    ("jax.numpy", "moveaxis", "a", "jnp.moveaxis(L, 0, 1)"),
    ("jax.numpy", "rollaxis", "a", "jnp.rollaxis(L, 1)"),
    ("jax.numpy", "resize", "a", "jnp.resize(L, 3)"),
    ("jax.numpy", "ravel_multi_index", "multi_index", "jnp.ravel_multi_index((A[0].astype(int), L[0]), (2, 2))"),
    ("jax.numpy", "polyfit", "x", "jnp.polyfit(L[0], A[0], 1)"),
    ("jax.numpy", "polyfit", "y", "jnp.polyfit(A[0], L[0], 1)"),
    ("jax.numpy", "take_along_axis", "arr", "jnp.take_along_axis(L, A.astype(int), 0)"),
    ("jax.numpy", "take_along_axis", "indices", "jnp.take_along_axis(A, L, 0)"),
    ("jax.numpy", "expand_dims", "a", "jnp.expand_dims(L, 0)"),
    ("jax.numpy", "squeeze", "a", "jnp.squeeze(L, 0)"),
    ("jax.numpy", "transpose", "a", "jnp.transpose(L, (1, 0))"),
    ("jax.numpy", "reshape", "a", "jnp.reshape(L, (4,))"),
    ("jax.numpy", "broadcast_to", "array", "jnp.broadcast_to(L, (2, 2, 2))"),
    ("jax.numpy", "tile", "A", "jnp.tile(L, 2)"),
    ("jax.numpy", "repeat", "a", "jnp.repeat(L, 2, axis=0)"),
    ("jax.numpy", "split", "ary", "jnp.split(L, 2)"),
    ("jax.numpy", "roll", "a", "jnp.roll(L, 1, 0)"),
    ("jax.numpy", "rot90", "m", "jnp.rot90(L, 1, (0, 1))"),
    ("jax.numpy", "diagonal", "a", "jnp.diagonal(L, 0, 0, 1)"),
    ("jax.numpy", "trace", "a", "jnp.trace(L, 0, 0, 1)"),
    ("jax.numpy", "average", "weights", "jnp.average(A[0], weights=L[0])"),
    ("jax.numpy", "apply_along_axis", "arr", "jnp.apply_along_axis(jnp.sum, 0, L)"),
    ("jax.numpy", "piecewise", "x", "jnp.piecewise(L[0], [A[0] > 0], [1.0])"),
    ("jax.numpy", "put", "a", "jnp.put(L, A[0].astype(int), A[0], inplace=False)"),
    ("jax.numpy", "put", "ind", "jnp.put(A, L, A[0], inplace=False)"),
    ("jax.numpy", "fill_diagonal", "a", "jnp.fill_diagonal(L, 1.0, inplace=False)"),
    ("jax.numpy", "partition", "a", "jnp.partition(L[0], 1)"),
    ("jax.numpy", "argpartition", "a", "jnp.argpartition(L[0], 1)"),
    ("jax.numpy", "bincount", "x", "jnp.bincount(L, length=3)"),
    ("jax.numpy", "histogram", "a", "jnp.histogram(L[0], bins=A[0])"),
    ("jax.numpy", "result_type", "args", "jnp.result_type(L)"),
    ("jax.numpy.linalg", "matrix_power", "a", "jnp.linalg.matrix_power(L, 2)"),
    ("jax.lax", "reshape", "operand", "lax.reshape(L, (4,))"),
    ("jax.lax", "transpose", "operand", "lax.transpose(L, (1, 0))"),
    ("jax.lax", "broadcast", "operand", "lax.broadcast(L, (2,))"),
    ("jax.lax", "broadcast_in_dim", "operand", "lax.broadcast_in_dim(L, (2, 2, 2), (0, 1))"),
    ("jax.lax", "expand_dims", "array", "lax.expand_dims(L, (0,))"),
    ("jax.lax", "convert_element_type", "operand", "lax.convert_element_type(L, jnp.int32)"),
    ("jax.lax", "full_like", "x", "lax.full_like(L, 1.0)"),
    ("jax.lax", "squeeze", "array", "lax.squeeze(L, (0,))"),
    ("jax.lax", "rev", "operand", "lax.rev(L, (0,))"),
    ("jax.lax", "top_k", "operand", "lax.top_k(L, 1)"),
    ("jax.lax", "argmax", "operand", "lax.argmax(L, 0, jnp.int32)"),
    ("jax.lax", "argmin", "operand", "lax.argmin(L, 0, jnp.int32)"),
    ("jax.lax", "cumsum", "operand", "lax.cumsum(L, 0)"),
    ("jax.lax", "dot_general", "lhs", "lax.dot_general(L, A, (((1,), (0,)), ((), ())))"),
    ("jax.lax", "dot_general", "rhs", "lax.dot_general(A, L, (((1,), (0,)), ((), ())))"),
    ("jax.lax", "bitcast_convert_type", "operand", "lax.bitcast_convert_type(L, jnp.int32)"),
    ("jax.lax", "reduce_precision", "operand", "lax.reduce_precision(L, 5, 10)"),
    ("jax.lax", "dynamic_update_slice", "update", "lax.dynamic_update_slice(A, L, (0, 0))"),
    ("jax.lax", "pad", "operand", "lax.pad(L, 0.0, [(0, 0, 0), (0, 0, 0)])"),
    ("jax.lax", "sort", "operand", "lax.sort([A[0], L[0]], num_keys=1)"),
    ("jax.random", "bernoulli", "p", "jax.random.bernoulli(jax.random.key(0), L)"),
    ("jax.random", "beta", "a", "jax.random.beta(jax.random.key(0), L, 1.0)"),
    ("jax.random", "t", "df", "jax.random.t(jax.random.key(0), L)"),
    ("jax.random", "multivariate_normal", "mean", "jax.random.multivariate_normal(jax.random.key(0), L, jnp.eye(2))"),
]
have = {(e["module"], e["name"], c["param"]) for e in out for c in e["checks"]}
by_fn = {(e["module"], e["name"]): e for e in out}
for mname, name, param, expr in EXPLICIT:
    if (mname, name, param) in have:  # the explicit call knows better
        e = by_fn[(mname, name)]
        e["checks"] = [c for c in e["checks"] if c["param"] != param]
    try:
        eval(expr); continue
    except Exception as ex:
        msg = str(ex).split("\n")[0]
    m1 = RE1.match(msg); m2 = RE2.match(msg)
    params = list(inspect.signature(getattr(mods[mname], name)).parameters.values())
    index = [p.name for p in params].index(param)
    varargs = params[index].kind == params[index].VAR_POSITIONAL
    seq = (mname, name, param) in {("jax.numpy", "ravel_multi_index", "multi_index"), ("jax.lax", "sort", "operand")}
    kind = "varargs" if varargs else "seq" if seq else "param"
    if m1: c = dict(param=param, index=index, kind=kind, style="np", err=m1.group(1), pos=int(m1.group(3)))
    elif m2: c = dict(param=param, index=index, kind=kind, style="lax", err=m2.group(1), pos=int(m2.group(4)))
    elif RE3.match(msg) or RE4.match(msg): c = dict(param=param, index=index, kind=kind, style="dtype" if RE3.match(msg) else "jaxtype", err="", pos=1 if varargs else 0)
    else:
        print("no check found:", expr, "::", msg); continue
    if seq: c["pos"] -= 1  # the probe put the list second
    if c["kind"] == "param":
        try:
            eval(expr, dict(globals(), L=None)); msg = ""
        except Exception as ex:
            msg = str(ex).split("\n")[0]
        c["none_refused"] = "'NoneType'" in msg
    if (mname, name) not in by_fn:
        by_fn[(mname, name)] = dict(module=mname, name=name, checks=[]); out.append(by_fn[(mname, name)])
    by_fn[(mname, name)]["checks"].append(c)
# Checks the table leaves to the function: histogramdd checks each of its
# per-dimension bins inside histogram_bin_edges (a tuple of ints is valid).
EXCLUDE = {("jax.numpy", "histogramdd", "bins")}
for e in out:
    e["checks"] = [c for c in e["checks"] if (e["module"], e["name"], c["param"]) not in EXCLUDE]
out = [e for e in out if e["checks"]]
# einsum checks its operands in the subscripts form only: the interleaved
# form (einsum(op0, sublist0, op1, ...)) turns its lists into subscripts first.
STR_FIRST = {("jax.numpy", "einsum", "operands")}
out.sort(key=lambda e: (e["module"], e["name"]))
STYLE = {"np": "Numpy", "lax": "Lax", "dtype": "Dtype", "jaxtype": "JaxType"}
KIND = {"param": "Param", "seq": "Seq", "varargs": "VarArgs"}
rows = []
for e in out:
    seen_seq = False
    f = getattr(mods[e["module"]], e["name"])
    params = inspect.signature(f).parameters
    for c in sorted(e["checks"], key=lambda c: c["index"]):
        p = params[c["param"]]
        index = -1 if p.kind == p.KEYWORD_ONLY else c["index"]
        base = c["pos"] - 1 if c["kind"] == "varargs" else c["pos"]
        chained = c["kind"] == "seq" and seen_seq  # select's choicelist follows condlist's length
        seen_seq = seen_seq or c["kind"] == "seq"
        none_ok = p.default is None and not c.get("none_refused", False)
        str_first = (e["module"], e["name"], c["param"]) in STR_FIRST
        rows.append('{"%s", "%s", "%s", %d, ArgKind::%s, %s, "%s", %d, %s, %s, %s},' % (
            e["module"], e["name"], c["param"], index, KIND[c["kind"]],
            "ErrStyle::" + STYLE[c["style"]], c["err"], base,
            "true" if none_ok else "false", "true" if chained else "false",
            "true" if str_first else "false"))
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "stdlib", "arraylike_table.inc")
with open(path, "w") as fh:
    fh.write("// Generated by tools/gen_arraylike_table.py from JAX %s; do not edit.\n" % jax.__version__)
    fh.write("// module, function, parameter, positional index (-1: keyword-only), kind, error style,\n")
    fh.write("// name in the error, position in the error, None allowed, position after the previous sequence,\n")
    fh.write("// checked only when the first argument is a string\n")
    fh.write("// clang-format off\n")
    fh.write("\n".join(rows) + "\n")
    fh.write("// clang-format on\n")
print(len(rows), "checks in", len(out), "functions")
