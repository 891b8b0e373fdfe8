"""Per-right-hand-side Dslash time against the number of right-hand sides N.

    python3 bench/plot_nrhs.py DSLASH.json... --out nrhs.png

Reads `wdirac bench dslash --json` files holding _n<N> rows (multi-RHS
kernels) and draws, per lattice and precision, microseconds per right-hand
side against N, with the fewest-bytes expectation t(1) x bytes(N) / N /
bytes(1) dotted (what a memory-bound kernel would reach).
"""

import argparse
import json
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    series = {}
    device = ""
    for path in args.files:
        with open(path) as f:
            js = json.load(f)
        device = js.get("device", device)
        for r in js["results"]:
            m = re.match(r"dslash_([dsh])_r(\d+)_gf(\d)_dag(\d)_xpay(\d)_n(\d+)$", r["variant"])
            if not m:
                continue
            key = (tuple(r["dims"]), m[1])
            n = int(m[6])
            series.setdefault(key, []).append((n, r["us_per_call"] / n, r["GBps"] * r["us_per_call"]))
    if not series:
        raise SystemExit("plot_nrhs: no _n<N> rows in the input")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for (dims, prec), pts in sorted(series.items()):
        pts.sort()
        ns = [p[0] for p in pts]
        line, = ax.plot(ns, [p[1] for p in pts], "o-", label=f"{prec} {dims[0]}^3x{dims[3]}")
        n1 = next((p for p in pts if p[0] == 1), None)
        if n1:
            # bytes per call scale: expected per-RHS time = t1 * (bytes(N) / N) / bytes(1)
            ax.plot(ns, [n1[1] * (p[2] / p[0]) / n1[2] for p in pts], ":", color=line.get_color())
    ax.set_xlabel("right-hand sides per call N")
    ax.set_ylabel("us per right-hand side")
    ax.set_xticks(sorted({n for pts in series.values() for n, _, _ in pts}))
    ax.set_title(f"Multi-RHS Dslash, recon 12 (dotted: fewest-bytes expectation)\n{device}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)


if __name__ == "__main__":
    main()
