"""Formats bench/jit/run.sh's "tool case value" lines as one table with ratios."""
import sys

times = {}
for line in sys.stdin:
    parts = line.split()
    if len(parts) == 3:
        times.setdefault(parts[1], {})[parts[0]] = float(parts[2])

triad = times.get("stream_triad_GBps", {}).get("c")
print(f"{'case':28} {'pxl ms':>10} {'numpy ms':>10} {'jax ms':>10} {'numpy/pxl':>10} {'jax/pxl':>9}")
for case, t in times.items():
    if case.startswith("stream"):
        continue
    def cell(tool):
        return f"{t[tool]:10.3f}" if tool in t else f"{'-':>10}"
    def ratio(tool, width):
        if tool in t and "pxl" in t and t["pxl"] > 0:
            return f"{t[tool] / t['pxl']:{width}.2f}"
        return f"{'-':>{width}}"
    print(f"{case:28} {cell('pxl')} {cell('numpy')} {cell('jax')} {ratio('numpy', 10)} {ratio('jax', 9)}")
if triad:
    print(f"\nSTREAM triad (C, OpenMP, all cores): {triad:.2f} GB/s")
    t = times.get("elementwise_16M", {})
    for tool in ("pxl", "numpy", "jax"):
        if tool in t:
            gbps = 4 * 16 * 1024 * 1024 * 4 / (t[tool] / 1000) / 1e9
            print(f"  elementwise_16M {tool:6} {gbps:6.2f} GB/s ({100 * gbps / triad:.0f}% of triad; "
                  "3 arrays read, 1 written)")
print("\nratios above 1 mean pxl is faster")
