"""Plots and a summary of `wdirac bench dslash --json` results.

    python3 bench/plot_dslash.py FOLDER

Reads every bench-*.json in FOLDER (one object per run, DESIGN.md) and writes
  dslash-sweep-<prec>.png   Gflops vs T at 24^3 x T, the paper's Figures 2-5
                            (recon 18/12/8, with and without gauge fixing,
                            solid unpadded, dashed padded)
  dslash-fixed.png          fraction of the copy bandwidth per variant
  dslash-summary.md         the table below, as Markdown
and prints, for the fixed volumes, every plain variant (dag0, xpay0) with its
time per call, its fraction of the copy bandwidth and its ratio to QUDA's
time on the same GPU model (the anchors of issue 3; gauge-fixed variants
against 0.8 x QUDA, since QUDA has no gauge-fixed kernels).
"""

import glob
import json
import os
import sys

from benchplot import PREC_NAME, PREC_TOKEN, plot_sweep, pyplot, sweep_rows

# QUDA's Wilson Dslash, one parity, tuned, us per call (issue 3).
QUDA = {
    "H100": {
        (32, 64): {"d18": 633.5, "d12": 483.3, "d8": 428.8, "s18": 301.7, "s12": 231.0,
                   "s8": 196.5, "h18": 163.4, "h12": 130.0, "h8": 136.9},
        (24, 64): {"d18": 280.8, "d12": 221.1, "d8": 188.4, "s18": 135.5, "s12": 106.9,
                   "s8": 90.0, "h18": 73.9, "h12": 61.2, "h8": 63.7},
    },
    "H200": {
        (32, 64): {"d18": 509.0, "d12": 412.7, "d8": 393.9, "s18": 235.5, "s12": 185.9,
                   "s8": 162.8, "h18": 138.7, "h12": 126.1, "h8": 134.8},
        (24, 64): {"d18": 219.7, "d12": 177.7, "d8": 166.7, "s18": 107.0, "s12": 86.3,
                   "s8": 75.7, "h18": 62.8, "h12": 56.5, "h8": 62.2},
    },
}
GF_FACTOR = 0.8
TARGET_FRACTION = 0.85


def load(folder):
    runs = []
    for path in sorted(glob.glob(os.path.join(folder, "bench-*.json"))):
        with open(path) as f:
            run = json.load(f)
        run["sweep"] = "sweep" in os.path.basename(path)
        runs.append(run)
    return runs


def quda_for(device):
    for key, table in QUDA.items():
        if key in device:
            return key, table
    return None, {}


def summary(runs):
    lines = []
    for run in runs:
        if run["sweep"]:
            continue
        gpu, anchors = quda_for(run["device"])
        lines.append(f"## {run['device']} ({run['backend']}), commit {run['commit']}, "
                     f"{run['date']}, copy {run['copy_GBps']:.0f} GB/s")
        lines.append("")
        lines.append("| variant | lattice | pad | block | us/call | Gflops | GB/s | copy | QUDA us | target us | vs target |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in run["results"]:
            d = r["dims"]
            if r["dagger"] or r["xpay"] or d[3] not in (64, 96) or d[0] != d[1]:
                continue
            key = f"{PREC_TOKEN[r['precision']]}{r['recon']}"
            q = anchors.get((d[0], d[3]), {}).get(key)
            target = q * (GF_FACTOR if r["gauge_fix"] else 1) if q else None
            verdict = ""
            if target:
                ok_t = r["us_per_call"] <= target
                ok_f = r["fraction_of_copy"] >= TARGET_FRACTION
                verdict = f"{r['us_per_call'] / target:.2f}x {'ok' if ok_t and ok_f else 'MISS'}"
            lines.append(
                f"| {r['variant']} | {d[0]}^3x{d[3]} | {r['pad']} | {r['block']} | "
                f"{r['us_per_call']:.1f} | {r['gflops']:.0f} | {r['GBps']:.0f} | "
                f"{100 * r['fraction_of_copy']:.0f}% | {q if q else '-'} | "
                f"{f'{target:.1f}' if target else '-'} | {verdict} |")
        lines.append("")
    return "\n".join(lines)


def plots(runs, folder):
    plt = pyplot()
    if plt is None:
        print("matplotlib missing: no plots")
        return
    sweep = [r for run in runs for r in sweep_rows(run["results"])]
    device = runs[0]["device"] if runs else ""
    for prec in (8, 4, 2):
        plot_sweep(plt, sweep, prec, f"Dslash, {PREC_NAME[prec]} precision, {device}",
                   os.path.join(folder, f"dslash-sweep-{PREC_NAME[prec]}.png"))
    fixed = [r for run in runs for r in run["results"]
             if r["dims"] in ([24, 24, 24, 64], [32, 32, 32, 64]) and r["pad"] == 0
             and not r["dagger"] and not r["xpay"]]
    if fixed:
        fig, ax = plt.subplots(figsize=(9, 4.5))
        for dims, off, colour in (([24, 24, 24, 64], -0.2, "tab:blue"),
                                  ([32, 32, 32, 64], 0.2, "tab:orange")):
            rows = [r for r in fixed if r["dims"] == dims]
            ax.bar([i + off for i in range(len(rows))],
                   [100 * r["fraction_of_copy"] for r in rows], width=0.4, color=colour,
                   label=f"{dims[0]}^3x{dims[3]}")
            ax.set_xticks(range(len(rows)))
            ax.set_xticklabels([r["variant"].replace("dslash_", "").replace("_dag0_xpay0", "").replace("_n1", "")
                                for r in rows], rotation=60, fontsize=7)
        ax.axhline(100 * TARGET_FRACTION, color="k", linestyle=":", label="85% target")
        ax.set_ylabel("% of device copy bandwidth")
        ax.set_title(f"Dslash effective bandwidth (fewest-bytes model), {device}")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(folder, "dslash-fixed.png"), dpi=120)
        plt.close(fig)


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else "."
    runs = load(folder)
    if not runs:
        print(f"no bench-*.json in {folder}")
        return 1
    text = summary(runs)
    with open(os.path.join(folder, "dslash-summary.md"), "w") as f:
        f.write(text + "\n")
    plots(runs, folder)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
