"""Per-right-hand-side Dslash time against the number of right-hand sides N.

    python3 bench/plot_nrhs.py DSLASH.json... --out nrhs.png

Reads `wdirac bench dslash --json` files of two kinds:
  - `--nrhs N,N,...` runs (benchmark "dslash-nrhs"): one row per one-RHS
    variant and N, timed as one wd_dslash_group (its `kernels`, e.g. 4+4+4);
    one curve per variant and lattice, and where both multi-RHS forms are
    built one more per form timed alone (`forms`: registers, threads, shared);
  - plain runs holding _n<N>, _t<N> or _sh<N> rows (the multi-RHS kernels alone);
    one curve per lattice, precision and form.
Each curve is microseconds per right-hand side against N, with the
fewest-bytes expectation t(1) x bytes(N) / N / bytes(1) dotted (what a
memory-bound kernel would reach; for --nrhs rows bytes(N) counts the links
once per kernel call the group made).
"""

import argparse
import json
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

KERNEL = re.compile(r"dslash_([dsh])_r(\d+)_gf(\d)_dag(\d)_xpay(\d)_(n|t|sh)(\d+)$")
FORMS = {"registers": " (_n<N> alone)", "threads": " (_t<N> alone)",
         "shared": " (_sh<N> alone)"}


def read_series(paths):
    """{(label, dims): [(N, us per RHS, bytes per call, kernels)]} and the device."""
    series, device = {}, ""
    for path in paths:
        with open(path) as f:
            js = json.load(f)
        device = js.get("device", device)
        for r in js["results"]:
            m = KERNEL.match(r["variant"])
            if not m:
                continue
            dims = tuple(r["dims"])
            if "kernels" in r:      # a --nrhs row: N right-hand sides as one group
                n = r["nrhs"]
                label = (r["variant"][: -len("_n1")] + (f" pad {r['pad']}" if r.get("pad") else "")
                         + FORMS.get(r.get("forms"), ""))
                point = (n, r["us_per_rhs"], r["bytes_per_rhs"] * n, r["kernels"])
            else:                   # a _n<N> or _t<N> kernel row
                n = int(m[7])
                label = m[1] + (f" _{m[6]}<N>" if m[6] != "n" else "")
                point = (n, r["us_per_call"] / n, r["GBps"] * r["us_per_call"], "")
            series.setdefault((label, dims), []).append(point)
    return series, device


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    series, device = read_series(args.files)
    if not series:
        raise SystemExit("plot_nrhs: no --nrhs rows and no _n<N> rows in the input")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for (label, dims), pts in sorted(series.items()):
        pts.sort()
        ns = [p[0] for p in pts]
        line, = ax.plot(ns, [p[1] for p in pts], "o-",
                        label=f"{label} {dims[0]}^3x{dims[3]}")
        for n, us, _, kernels in pts:
            if kernels and kernels != str(n):
                ax.annotate(kernels, (n, us), fontsize=6, xytext=(3, 3),
                            textcoords="offset points", color=line.get_color())
        n1 = next((p for p in pts if p[0] == 1), None)
        if n1:
            # expected per-RHS time = t1 * (bytes(N) / N) / bytes(1)
            ax.plot(ns, [n1[1] * (p[2] / p[0]) / n1[2] for p in pts], ":",
                    color=line.get_color())
    ax.set_xlabel("right-hand sides per call N")
    ax.set_ylabel("us per right-hand side")
    ax.set_xticks(sorted({p[0] for pts in series.values() for p in pts}))
    ax.set_title(f"Multi-RHS Dslash (dotted: fewest-bytes expectation)\n{device}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)


if __name__ == "__main__":
    main()
