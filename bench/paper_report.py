"""The paper-reproduction report: our results beside Clark et al. 2009.

    python3 bench/paper_report.py DIR

Reads from DIR (each file optional; a section whose input is missing says
"not measured in this run"):
  dslash-sweep.json        `wdirac bench dslash --paper-sweep --json`: R1-R3 (Figs. 2-5)
  dslash-fixed.json        `wdirac bench dslash --json` (and the sweep): Table 2's kernel column
  accuracy.json            `wdirac bench accuracy --json`: R4 (Fig. 6)
  solver-table2.json       `wdirac bench solver`, configs h12g, s8g, s12g, d12g: R5 (Table 2)
  solver-double.json       configs d, solvers cg and bicgstab, tol 1e-12: R6 (Table 3),
                           and the double baseline of R7-R9
  solver-defect-*.json     one per eps_in ("mixed": "defect", "tol_inner"), configs
                           d-h12, d-s8, d-s12 (with or without g): R7 (Table 4)
  solver-reliable-*.json   one per delta ("mixed": "reliable", "delta"), the same
                           configs: R8 (Table 5); the one with delta 0.1: R9 (Fig. 7)
Writes into DIR:
  report.md                header (device, commit, date, lattices of every input),
                           then one section per result R1..R9: ours, the paper's,
                           the ratios that carry across, and why they differ
  report.json              the derived key figures, per R#
  r1-dslash-single.png r2-dslash-double.png r3-dslash-half.png
  r4-accuracy.png r6-iterations.png r9-time.png

The paper's numbers are typed in below as data, each with the table or figure
it comes from; they were measured on a GeForce GTX 280.  Solver rows are
matched to the paper's kernel types by their outer/sloppy precision,
reconstruction and gauge fixing (not by config name), and to each other by
kappa.
"""

import glob
import json
import math
import os
import sys

import numpy as np

from benchplot import PREC_NAME, plot_sweep, pyplot, sweep_rows

# ---------------------------------------------------------------- the paper

PAPER_DEVICE = "GeForce GTX 280"
PAPER_BANDWIDTH_GBPS = 142.0                   # Table 1
PAPER_DOUBLE_PEAK_GFLOPS = 78.0                # Table 1, 64-bit
PAPER_SOLVER_VOLUME = "24^3x64"                # Sec. 5.4: Tables 3-5, Fig. 7
PAPER_CONFIGS = ("five anisotropic 24^3x64 configurations of the Hadron Spectrum "
                 "Collaboration (beta = 5.5, sea mass m = -0.4125, aspect ratio 3; Sec. 5.4)")

# Figs. 2-5 are curves without tabulated points; the text beside them gives
# each precision's peak (Secs. 4.5-4.7) and which reconstruction is faster.
PAPER_DSLASH = {
    4: {"figures": "Figs. 2-3, unpadded and padded", "peak": 135.0, "peak_kernel": (8, 1),
        "faster_recon": 8, "source": "Sec. 4.5: 'the peak performance of the 8 parameter kernel is 135 Gflops'"},
    8: {"figures": "Fig. 4", "peak": 40.0, "peak_kernel": (12, 1), "faster_recon": 12,
        "source": "Sec. 4.6: 'the peak performance of the 12 parameter kernel with gauge fixing is 40 Gflops'"},
    2: {"figures": "Fig. 5", "peak": 212.0, "peak_kernel": (12, 1), "faster_recon": 12,
        "source": "Sec. 4.7: 'the peak performance of the 12 parameter kernel is 212 Gflops'"},
}
PAPER_CAMPING = ("unpadded single precision drops markedly at T = 64 and T = 128 "
                 "(partition camping, Fig. 2); padding flattens the curve (Fig. 3)")

# Fig. 6 (volume 24^3x32): statements of Sec. 4.8; the curves are not tabulated.
PAPER_FIG6 = {
    "volume": "24^3x32",
    "recon8_worse_orders": (1, 2),   # '12 ... at least one to two orders of magnitude' more accurate
    "recon12_over_ulp": 10.0,        # 'deviations at eps around an order of magnitude greater than the ulp'
}
# unit of least precision of each format: doubles and floats at 1.0; half is
# 16-bit fixed point of [-1, 1] scaled by the site's largest component
ULP = {8: 2.0 ** -52, 4: 2.0 ** -23, 2: 1.0 / 32767}

# Table 2 (volume 24^3x48): kernel type, (precision, recon, gauge fix), Gflops of kernel, CG, BiCGstab
PAPER_TABLE2 = [
    ("12 Half GF", (2, 12, 1), 207.5, 179.8, 171.1),
    ("8 Single GF", (4, 8, 1), 134.1, 116.1, 109.9),
    ("12 Single GF", (4, 12, 1), 122.1, 107.7, 102.6),
    ("12 Double GF", (8, 12, 1), 40.3, 38.3, 37.9),
]
PAPER_TABLE2_VOLUME = (24, 24, 24, 48)

# Table 3: double precision iterations, eps = 1e-12, 24^3x64
PAPER_TABLE3 = {
    "mass": [-0.3980, -0.4005, -0.4030, -0.4055, -0.4080, -0.4105, -0.4130, -0.4155, -0.4180],
    "cg": [1392, 1570, 1794, 2079, 2698, 3226, 4055, 5046, 6734],
    "bicgstab": [460, 509, 570, 666, 785, 939, 1193, 1545, 2078],
}

# Table 4: defect-correction BiCGstab iterations; column (sloppy precision,
# recon, eps_in); None = '*', did not converge.  Rows: PAPER_TABLE3["mass"].
PAPER_TABLE4 = {
    (2, 12, 1e-1): [489, 543, 621, 783, 938, 1152, 1638, 2161, None],
    (2, 12, 1e-2): [572, 632, 684, 871, 1055, 1314, 1870, 2581, None],
    (4, 8, 1e-3): [446, 477, 537, 637, 738, 902, 1174, 1678, 2526],
    (4, 8, 1e-4): [470, 541, 642, 702, 816, 1042, 1262, 1699, 2523],
    (4, 8, 1e-5): [486, 563, 631, 753, 861, 1066, 1454, 1795, 2723],
    (4, 12, 1e-5): [479, 535, 625, 753, 878, 1013, 1341, 1830, 2738],
    (4, 12, 1e-6): [498, 561, 639, 722, 914, 1092, 1412, 1966, 2986],
}
PAPER_TABLE4_TEXT = "the penalty for using defect-correction at light quark masses ranges between 10 and 30%"

# Table 5: reliable-update BiCGstab iterations (k + l); column (sloppy precision, recon, delta)
PAPER_TABLE5 = {
    (2, 12, 1e-1): [490, 531, 634, 700, 856, 1060, 1354, 1860, 2793],
    (2, 12, 1e-2): [509, 563, 706, 735, 856, 1101, 1484, 2249, 3483],
    (2, 12, 1e-3): [556, 609, 737, 772, 973, 1273, 1570, 2146, 3319],
    (4, 8, 1e-1): [461, 535, 610, 688, 795, 950, 1176, 1636, 2147],
    (4, 8, 1e-2): [467, 533, 605, 676, 809, 958, 1207, 1595, 2369],
    (4, 8, 1e-3): [470, 537, 616, 686, 821, 1008, 1268, 1668, 2191],
    (4, 12, 1e-2): [465, 538, 580, 682, 796, 951, 1197, 1584, 2256],
    (4, 12, 1e-3): [469, 533, 583, 694, 807, 990, 1225, 1595, 2159],
}
PAPER_TABLE5_TEXT = ("the increase in iterations at light quark masses is never more than 15% "
                     "[single], and now half precision converges at the lightest mass, with an "
                     "increase of 34% for delta = 1e-1")

# Fig. 7 (BiCGstab, delta 0.1, 24^3x64): speedup over double, heaviest -> lightest mass (Sec. 5.4 text)
PAPER_FIG7 = {
    (4, 8): (3.0, 3.0),   # 'the Single 8 solver has an almost constant factor 3 speedup'
    (2, 12): (4.0, 3.5),  # 'the Half 12 solver varies from a factor of 4 to 3.5'
}
PAPER_FIG7_DOUBLE_GFLOPS = 39.0  # 'the performance of the double precision solver (~39 Gflops)'

# the paper's column order of Tables 4 and 5
KERNEL_ORDER = [(2, 12), (4, 8), (4, 12)]
PREC_BYTES = {"d": 8, "s": 4, "h": 2, 8: 8, 4: 4, 2: 2}
INPUTS = {
    "sweep": "dslash-sweep.json",
    "fixed": "dslash-fixed.json",
    "accuracy": "accuracy.json",
    "table2": "solver-table2.json",
    "double": "solver-double.json",
    "defect": "solver-defect-*.json",
    "reliable": "solver-reliable-*.json",
}

# ---------------------------------------------------------------- helpers


def load_inputs(folder):
    """{key: [(file name, object), ...]} for every key of INPUTS; unreadable
    files are reported and left out."""
    inputs = {}
    for key, pattern in INPUTS.items():
        inputs[key] = []
        for path in sorted(glob.glob(os.path.join(folder, pattern))):
            try:
                with open(path) as f:
                    inputs[key].append((os.path.basename(path), json.load(f)))
            except (OSError, ValueError) as e:
                print(f"paper_report: skipping {path}: {e}", file=sys.stderr)
    return inputs


def first(inputs, key):
    return inputs[key][0][1] if inputs[key] else None


def table(head, rows):
    return (["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def not_measured(what):
    return [f"**Not measured in this run** (no {what} in the folder).", ""]


def kernel_label(prec, recon, gf):
    return f"{PREC_NAME[prec].capitalize()} {recon}{' GF' if gf else ''}"


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def ratio(a, b):
    return a / b if a is not None and b else None


def percent(x):
    return "none converged" if x is None else f"{100 * x:.0f}%"


def eps_label(x):
    return f"1e{round(math.log10(x)):d}"


def level(row, which):
    lv = row[which]
    return lv["precision"], lv["recon"], lv["gauge_fix"]


def converged(row):
    return row["status"] == "ok"


def conv_iters(row):
    """iterations of a converged solve, None for a missing or failed one"""
    return row["iterations"] if row and converged(row) else None


def iters_cell(row):
    return str(row["iterations"]) if converged(row) else "*"


def kappa_key(row):
    return round(row["kappa"], 7)


def double_bicgstab(inputs):
    """{kappa: row} of the pure double BiCGstab solves (the baseline of R7-R9)."""
    run = first(inputs, "double")
    if not run:
        return {}
    return {kappa_key(r): r for r in run["results"]
            if r["solver"] == "bicgstab" and level(r, "outer") == level(r, "sloppy")
            and r["outer"]["precision"] == 8}


def paper_bytes_per_site(prec, recon, gf):
    """The paper's own count (Sec. 4.3): 7 x 24 spinor reals (the gamma_4 basis
    halves the temporal neighbours), 8 links (6 with gauge fixing) of `recon`
    reals, 24 reals stored; half adds the float norms of the 8 spinors read
    and the one written."""
    reals = 7 * 24 + (6 if gf else 8) * recon + 24
    return reals * prec + (9 * 4 if prec == 2 else 0)


# ---------------------------------------------------------------- header


def lattice_list(run):
    """The lattices of a Dslash benchmark: 24^3 x T, T = 8..128 (16) for a sweep."""
    ts = {}
    for r in run["results"]:
        ts.setdefault(tuple(r["dims"][:3]), set()).add(r["dims"][3])
    return ", ".join(f"{'x'.join(map(str, s))}x{min(t)}" if len(t) == 1 else
                     f"{'x'.join(map(str, s))}xT, T = {', '.join(map(str, sorted(t)))}" if len(t) <= 3 else
                     f"{'x'.join(map(str, s))}xT, T = {min(t)}..{max(t)} ({len(t)} values)"
                     for s, t in sorted(ts.items()))


def header(inputs):
    lines = ["# wdirac: reproduction of Clark et al. 2009 (arXiv:0911.3191)", "",
             "Every section sets our measurement beside the paper's published number "
             f"(measured on a {PAPER_DEVICE}, {PAPER_BANDWIDTH_GBPS:.0f} GB/s, "
             f"{PAPER_DOUBLE_PEAK_GFLOPS:.0f} Gflops double peak; Table 1). "
             "Absolute Gflops differ by the generation of GPU between them; solver "
             "iteration counts differ because our gauge fields are not the paper's "
             f"({PAPER_CONFIGS}), so the comparisons that carry across are shapes and "
             "ratios: iterations against the distance from the critical mass, mixed "
             "precision over double, kernel over solver.", "", "## Inputs", ""]
    rows = []
    for key in INPUTS:
        for name, run in inputs[key]:
            lattices = "x".join(map(str, run["dims"])) if "dims" in run else lattice_list(run)
            gauge = run.get("gauge", "-")
            if "plaquette" in run:
                gauge += f", plaquette {run['plaquette']:.5f}"
            rows.append([name, run.get("device", "?"), run.get("backend", "?"),
                         run.get("commit", "?"), run.get("date", "?"), lattices, gauge])
    if not rows:
        return lines + ["No input JSON found: every section below is not measured.", ""]
    copy = first(inputs, "sweep") or first(inputs, "fixed")
    lines += table(["file", "device", "backend", "commit", "date", "lattice(s)", "gauge field"], rows)
    if copy:
        lines += ["", f"Measured device-to-device copy bandwidth: {copy['copy_GBps']:.0f} GB/s "
                      f"({copy['copy_GBps'] / PAPER_BANDWIDTH_GBPS:.0f}x the GTX 280's nominal "
                      f"{PAPER_BANDWIDTH_GBPS:.0f} GB/s)."]
    return lines + [""]


# ---------------------------------------------------------------- R1-R3


def dslash_section(num, prec, inputs, folder, plt):
    """R1 (single), R2 (double), R3 (half): Gflops vs T at 24^3 x T."""
    paper = PAPER_DSLASH[prec]
    name = PREC_NAME[prec]
    lines = [f"## R{num}. Dslash in {name} precision vs T at 24^3 x T ({paper['figures']})", ""]
    key = {"paper_peak_gflops": paper["peak"], "paper_peak_kernel": kernel_label(prec, *paper["peak_kernel"])}
    run = first(inputs, "sweep")
    all_rows = sweep_rows(run["results"]) if run else []
    rows = [r for r in all_rows if r["precision"] == prec]
    paper_line = (f"Paper ({PAPER_DEVICE}): peak {paper['peak']:.0f} Gflops, "
                  f"{key['paper_peak_kernel']} ({paper['source']}).")
    if not rows:
        return lines + not_measured("dslash-sweep.json") + [paper_line, ""], dict(key, measured=False)
    fig = f"r{num}-dslash-{name}.png"
    if plt and plot_sweep(plt, rows, prec, f"Dslash, {name} precision, {run['device']}",
                          os.path.join(folder, fig)):
        lines += [f"![{name} Dslash vs T]({fig})", ""]
        key["figure"] = fig

    def best(recon, gf):
        pick = [r for r in rows if r["recon"] == recon and r["gauge_fix"] == gf]
        return max(pick, key=lambda r: r["gflops"]) if pick else None

    def at(recon, gf, t, padded):
        pick = [r for r in rows if r["recon"] == recon and r["gauge_fix"] == gf
                and r["dims"][3] == t and (r["pad"] != 0) == padded]
        return max(pick, key=lambda r: r["gflops"]) if pick else None

    table2 = {(p, rc, gf): k for _, (p, rc, gf), k, _, _ in PAPER_TABLE2}
    out = []
    camping = None
    for recon in (18, 12, 8):
        for gf in (0, 1):
            b = best(recon, gf)
            if not b:
                continue
            worst = None
            for t in sorted({r["dims"][3] for r in rows}):
                u, p = at(recon, gf, t, False), at(recon, gf, t, True)
                if u and p and (worst is None or u["gflops"] / p["gflops"] < worst[0]):
                    worst = (u["gflops"] / p["gflops"], t)
            if worst and (camping is None or worst[0] < camping[0]):
                camping = (worst[0], worst[1], kernel_label(prec, recon, gf))
            t48 = at(recon, gf, 48, False)
            paper_cells = []
            if (prec, recon, gf) in table2:
                paper_cells.append(f"{table2[(prec, recon, gf)]} at T=48 (Table 2)")
            if (recon, gf) == paper["peak_kernel"]:
                paper_cells.append(f"peak {paper['peak']:.0f}")
            out.append([kernel_label(prec, recon, gf), f"{b['gflops']:.0f}", b["dims"][3], b["pad"],
                        f"{100 * b['fraction_of_copy']:.0f}%", fmt(t48 and t48["gflops"], ".0f"),
                        fmt(worst and worst[0], ".2f") + (f" (T={worst[1]})" if worst else ""),
                        "; ".join(paper_cells) or "-"])
    lines += table(["kernel", "peak Gflops", "T", "pad", "copy bw at peak", "Gflops T=48 pad 0",
                    "unpadded/padded, worst T", f"paper Gflops ({PAPER_DEVICE})"], out)
    peak = max(rows, key=lambda r: r["gflops"])
    r12, r8, r12_nogf = best(12, 1), best(8, 1), best(12, 0)
    our_bytes = peak["GBps"] * 1320 / peak["gflops"]
    pb = paper_bytes_per_site(prec, *paper["peak_kernel"])
    paper_gbps = paper["peak"] / 1320 * pb
    key.update(measured=True, device=run["device"], copy_GBps=run["copy_GBps"],
               peak_gflops=peak["gflops"], peak_variant=peak["variant"], peak_T=peak["dims"][3],
               peak_pad=peak["pad"], peak_fraction_of_copy=peak["fraction_of_copy"],
               peak_over_paper=peak["gflops"] / paper["peak"],
               recon8_over_recon12_gf=ratio(r8 and r8["gflops"], r12 and r12["gflops"]),
               gf_gain_recon12=ratio(r12 and r12["gflops"], r12_nogf and r12_nogf["gflops"]),
               worst_unpadded_over_padded=camping and camping[0],
               worst_unpadded_T=camping and camping[1],
               bytes_per_site_ours=our_bytes, paper_bytes_per_site=pb,
               paper_fraction_of_bandwidth=paper_gbps / PAPER_BANDWIDTH_GBPS)
    faster = 8 if key["recon8_over_recon12_gf"] and key["recon8_over_recon12_gf"] > 1 else 12
    lines += ["", f"- Peak: ours {peak['gflops']:.0f} Gflops ({peak['variant']}, T={peak['dims'][3]}, "
                  f"pad {peak['pad']}) on the {run['device']}, the paper's {paper['peak']:.0f} Gflops "
                  f"({key['paper_peak_kernel']}) on the {PAPER_DEVICE}: {key['peak_over_paper']:.0f}x, "
                  f"against {run['copy_GBps'] / PAPER_BANDWIDTH_GBPS:.0f}x the memory bandwidth."]
    if key["recon8_over_recon12_gf"]:
        lines.append(f"- Recon 8 over recon 12 (gauge fixed, best T): {key['recon8_over_recon12_gf']:.2f}; "
                     f"the faster one is {faster} here, {paper['faster_recon']} in the paper "
                     f"({'same' if faster == paper['faster_recon'] else 'different'} ordering).")
    if key["gf_gain_recon12"]:
        lines.append(f"- Temporal gauge fixing gains {100 * (key['gf_gain_recon12'] - 1):.0f}% at recon 12 "
                     "(the paper: 'additional performance to both' reconstructions, Sec. 4.5).")
    pk = paper["peak_kernel"]
    at_camp = {t: ratio(at(*pk, t, False) and at(*pk, t, False)["gflops"],
                        at(*pk, t, True) and at(*pk, t, True)["gflops"]) for t in (64, 128)}
    key["unpadded_over_padded_T64_T128"] = at_camp
    if camping:
        lines.append(f"- Partition camping: unpadded over padded {kernel_label(prec, *pk)} is "
                     f"{fmt(at_camp[64], '.2f')} at T=64 and {fmt(at_camp[128], '.2f')} at T=128; the "
                     f"worst over all kernels and T is {camping[0]:.2f} ({camping[2]}, T={camping[1]}). "
                     f"The paper: {PAPER_CAMPING}.")
    if prec != 4:
        single = [r for r in all_rows if r["precision"] == 4]
        if single:
            ps = max(r["gflops"] for r in single)
            key["peak_over_single_peak"] = peak["gflops"] / ps
            key["paper_peak_over_single_peak"] = paper["peak"] / PAPER_DSLASH[4]["peak"]
            lines.append(f"- Peak over the single precision peak: ours {key['peak_over_single_peak']:.2f}, "
                         f"the paper's {key['paper_peak_over_single_peak']:.2f}.")
    lines += [f"- Bytes: the paper's kernel moved {pb} bytes per site by its own count (Sec. 4.3), "
              f"{paper_gbps:.0f} GB/s = {100 * key['paper_fraction_of_bandwidth']:.0f}% of "
              f"{PAPER_BANDWIDTH_GBPS:.0f} GB/s at its peak; ours is timed against the fewest-bytes "
              f"model ({our_bytes:.0f} bytes per site, each spinor once) at "
              f"{100 * peak['fraction_of_copy']:.0f}% of the measured copy bandwidth.",
              f"- Gflops per GB/s of memory bandwidth at the peak: ours "
              f"{peak['gflops'] / run['copy_GBps']:.2f} (of the measured copy bandwidth), the paper's "
              f"{paper['peak'] / PAPER_BANDWIDTH_GBPS:.2f} (of the nominal {PAPER_BANDWIDTH_GBPS:.0f} GB/s).", "",
              "Why they differ: the GTX 280 re-read each neighbour spinor from memory through a small "
              "texture cache, so its kernels moved the bytes counted above; a GPU whose L2 cache holds "
              "the neighbours moves close to the fewest bytes, so its Gflops per GB/s is higher. "
              + {4: "Single precision was and is bandwidth bound, so the fewer bytes of recon 8 and "
                    "gauge fixing pay in both.",
                 8: "The GTX 280 had 78 Gflops of double precision arithmetic, so its double kernel "
                    "was flop limited and the extra arithmetic of recon 8 lost; a GPU with far more "
                    "double throughput per byte stays bandwidth bound, which decides the ordering of "
                    "8 and 12 here.",
                 2: "The paper's half kernel was floating point limited (packing, unpacking and "
                    "reconstruction doubled its cost, Sec. 4.7), which made recon 12 faster than 8; "
                    "on a GPU with more arithmetic per byte the ordering follows the bytes moved and "
                    "the latency of the conversions."}[prec], ""]
    return lines, key


# ---------------------------------------------------------------- R4


def accuracy_plot(plt, run, path):
    eps = run["eps"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
    colours = {8: "tab:green", 4: "tab:blue", 2: "tab:red"}
    styles = {18: ":", 12: "-", 8: "--"}
    for gf, ax in enumerate(axes):
        for r in run["results"]:
            if r["gauge_fix"] != gf:
                continue
            p = PREC_BYTES[r["precision"]]
            ax.semilogx(eps, r["delta"], styles.get(r["recon"], "-."), color=colours[p],
                        marker=".", label=f"{PREC_NAME[p]} {r['recon']}")
        ax.set_xlabel("tolerance epsilon")
        ax.set_title(f"gauge fixing {'on' if gf else 'off'} ({'x'.join(map(str, run['dims']))})")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("Delta(epsilon): fraction of components off by >= epsilon")
    fig.suptitle(f"Accuracy against the float64 reference, {run['device']} (paper Fig. 6)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def accuracy_section(inputs, folder, plt):
    """R4: Delta(eps) of every precision x reconstruction (Fig. 6)."""
    lines = ["## R4. Accuracy Delta(epsilon) of every kernel (Fig. 6)", ""]
    paper_lines = [f"Paper (Fig. 6, {PAPER_FIG6['volume']}, Sec. 4.8): for every precision recon 12 is "
                   "the most accurate, 'at least one to two orders of magnitude' better than recon 8; "
                   "in single and double recon 12 deviates at epsilon 'around an order of magnitude "
                   "greater than' the ulp.", ""]
    key = {"paper_recon8_worse_orders": list(PAPER_FIG6["recon8_worse_orders"]),
           "paper_recon12_over_ulp": PAPER_FIG6["recon12_over_ulp"]}
    run = first(inputs, "accuracy")
    if not run or not run.get("results"):
        return lines + not_measured("accuracy.json") + paper_lines, dict(key, measured=False)
    if plt:
        accuracy_plot(plt, run, os.path.join(folder, "r4-accuracy.png"))
        lines += ["![Delta vs epsilon](r4-accuracy.png)", ""]
        key["figure"] = "r4-accuracy.png"
    by = {(PREC_BYTES[r["precision"]], r["recon"], r["gauge_fix"]): r for r in run["results"]}
    rows, variants = [], {}
    for (p, recon, gf), r in sorted(by.items(), key=lambda kv: (-kv[0][0], kv[0][2], -kv[0][1])):
        scale = ULP[p] * r.get("max_ref", 1.0)
        r12 = by.get((p, 12, gf))
        vs12 = ratio(r["max_dev"], r12 and r12["max_dev"])
        variants[r["variant"]] = {"max_dev": r["max_dev"], "median_dev": r["median_dev"],
                                  "max_dev_over_ulp": r["max_dev"] / scale, "max_dev_over_recon12": vs12}
        rows.append([r["variant"], f"{r['max_dev']:.2e}", f"{r['median_dev']:.2e}",
                     fmt(r.get("rel_l2"), ".1e"), f"{r['max_dev'] / scale:.1f}", fmt(vs12, ".1f")])
    lines += table(["variant", "max deviation", "median deviation", "rel. L2",
                    "max / ulp", "max / recon 12's"], rows)
    lines += ["", f"ulp: 2^-52 (double), 2^-23 (single), 1/32767 (half, the 16-bit fixed point step), "
                  f"each times the largest reference component (max_ref); the max deviation is the "
                  f"epsilon where Delta reaches 0, the paper's 'accuracy of the kernel'. "
                  f"Lattice {'x'.join(map(str, run['dims']))}, kappa {run.get('kappa', float('nan')):.4f}, "
                  f"seed {run.get('seed', '?')}.", ""]
    summary = []
    for p in (8, 4, 2):
        for gf in (0, 1):
            r12, r8 = by.get((p, 12, gf)), by.get((p, 8, gf))
            if r12 and r8:
                orders = math.log10(r8["max_dev"] / r12["max_dev"]) if r12["max_dev"] > 0 else None
                summary.append({"precision": PREC_NAME[p], "gauge_fix": gf, "recon8_worse_orders": orders,
                                "recon12_over_ulp": r12["max_dev"] / (ULP[p] * r12.get("max_ref", 1.0))})
    key.update(measured=True, device=run["device"], variants=variants, summary=summary)
    for s in summary:
        lines.append(f"- {s['precision']}, gf{s['gauge_fix']}: recon 8 is "
                     f"{fmt(s['recon8_worse_orders'], '.1f')} orders of magnitude less accurate than "
                     f"recon 12 (paper: 1 to 2); recon 12 deviates at {s['recon12_over_ulp']:.0f} ulp "
                     f"(paper: about 10 in single and double).")
    return lines + ["", *paper_lines,
                    "Why they differ: both measurements take the whole round trip (transfer, the "
                    "operator, transfer back) against a double CPU kernel on random fields, but the "
                    "paper's lattice was 24^3x32 and its kernels ordered their arithmetic differently "
                    "from our generated ones (the compiler may also fuse multiply-adds), so the ulp "
                    "multiples need not match; the ordering of the reconstructions, and recon 12 "
                    "within a few ulp of its format, are what carry across.", ""], key


# ---------------------------------------------------------------- R5


def table2_section(inputs):
    """R5: kernel, CG and BiCGstab Gflops per kernel type (Table 2)."""
    lines = ["## R5. Kernel vs CG vs BiCGstab Gflops (Table 2)", ""]
    paper_rows = [[name, k, cg, bi, f"{cg / k:.2f}", f"{bi / k:.2f}"] for name, _, k, cg, bi in PAPER_TABLE2]
    head = ["kernel type", "Kernel (Gflops)", "CG (Gflops)", "BiCGstab (Gflops)", "CG / kernel",
            "BiCGstab / kernel"]
    paper_lines = [f"Paper ({PAPER_DEVICE}, 24^3x48):", "", *table(head, paper_rows), "",
                   "The paper: 'in both half and single precision, CG and BiCGstab run at around "
                   "85% of the associated matrix-vector kernel'; less so in double, flop limited "
                   "on the GTX 280.", ""]
    key = {"paper": {name: {"kernel": k, "cg": cg, "bicgstab": bi} for name, _, k, cg, bi in PAPER_TABLE2}}
    run = first(inputs, "table2")
    if not run:
        return lines + not_measured("solver-table2.json") + paper_lines, dict(key, measured=False)
    kernels, want, source = kernel_rows(inputs, tuple(run["dims"]))
    rows, ours = [], {}
    for name, lv, *_ in PAPER_TABLE2:
        kr = [r for r in kernels if (r["precision"], r["recon"], r["gauge_fix"]) == lv]
        kern = max(r["gflops"] for r in kr) if kr else None
        sol = {}
        for solver in ("cg", "bicgstab"):
            g = [r["gflops"] for r in run["results"] if r["solver"] == solver
                 and level(r, "outer") == lv and level(r, "sloppy") == lv]
            sol[solver] = float(np.median(g)) if g else None
        ours[name] = {"kernel": kern, **sol, "cg_over_kernel": ratio(sol["cg"], kern),
                      "bicgstab_over_kernel": ratio(sol["bicgstab"], kern)}
        rows.append([name, fmt(kern, ".0f"), fmt(sol["cg"], ".0f"), fmt(sol["bicgstab"], ".0f"),
                     fmt(ours[name]["cg_over_kernel"], ".2f"), fmt(ours[name]["bicgstab_over_kernel"], ".2f")])
    statuses = sorted({r["status"] for r in run["results"]})
    key.update(measured=True, device=run["device"], ours=ours,
               kernel_lattice="x".join(map(str, want)) if want else None, kernel_file=source)
    lines += [f"Ours ({run['device']}; solvers on {'x'.join(map(str, run['dims']))}, median over "
              f"{len({kappa_key(r) for r in run['results']})} kappa values; kernels "
              f"{'from ' + source + ' at ' + 'x'.join(map(str, want)) + ', pad 0' if want else 'not measured'}):",
              "",
              *table(head, rows), "",
              f"Solver statuses seen: {', '.join(statuses)} (Gflops are effective rates over the "
              "Krylov iteration, operator and BLAS flops, whether or not the pure low-precision "
              "solve reached 1e-12).", "", *paper_lines,
              "Why they differ: besides the GPU, our solver Gflops count the even-odd operator "
              "(two Dslash and an xpay) and the BLAS of each iteration over the solve time on "
              "our lattice; the fraction of the kernel rate that a solver keeps is what carries "
              "across, and it falls with how much the BLAS traffic weighs against the Dslash "
              "on each GPU.", ""]
    return lines, key


def kernel_rows(inputs, solver_dims):
    """The plain unpadded Dslash rows of one lattice, with the lattice and the
    file: the solver's lattice, else the paper's 24^3x48, else 24^3x64;
    dslash-fixed.json before the sweep; ([], None, None) without any."""
    for dims in (solver_dims, PAPER_TABLE2_VOLUME, (24, 24, 24, 64)):
        for name in ("fixed", "sweep"):
            for fname, run in inputs[name]:
                rows = [r for r in run["results"] if tuple(r["dims"]) == dims
                        and not r["dagger"] and not r["xpay"] and r["pad"] == 0]
                if rows:
                    return rows, dims, fname
    return [], None, None


# ---------------------------------------------------------------- R6


def critical_mass(masses, iters):
    """m_c from a straight line through 1/N against m (N grows like the
    condition number, ~ 1/(m - m_c)); None without three points or with a
    slope that does not fall towards light masses."""
    if len(masses) < 3:
        return None
    slope, icpt = np.polyfit(np.asarray(masses, float), 1.0 / np.asarray(iters, float), 1)
    return float(-icpt / slope) if slope > 0 else None


def iterations_plot(plt, ours, mc, path, device):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    pm = np.asarray(PAPER_TABLE3["mass"])
    pmc = critical_mass(PAPER_TABLE3["mass"], PAPER_TABLE3["cg"])
    for solver, colour in (("cg", "tab:blue"), ("bicgstab", "tab:red")):
        ax.loglog(pm - pmc, PAPER_TABLE3[solver], "--", color=colour, marker="s", markersize=3,
                  label=f"paper {solver} (m_c {pmc:.4f})")
        pts = sorted((r["mass"] - mc, r["iterations"]) for r in ours if r["solver"] == solver
                     and converged(r) and r["mass"] > mc)
        if pts:
            ax.loglog(*zip(*pts), "-", color=colour, marker="o", markersize=3,
                      label=f"ours {solver} (m_c {mc:.4f})")
    ax.set_xlabel("m - m_c (m_c from a straight line through 1/N)")
    ax.set_ylabel("iterations to 1e-12")
    ax.set_title(f"Double precision solvers (paper Table 3), {device}")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def double_section(inputs, folder, plt):
    """R6: double CG and BiCGstab iterations vs mass (Table 3)."""
    lines = ["## R6. Double precision CG and BiCGstab iterations vs mass (Table 3)", ""]
    p = PAPER_TABLE3
    pmc = critical_mass(p["mass"], p["cg"])
    paper_ratio = [c / b for c, b in zip(p["cg"], p["bicgstab"])]
    paper_lines = [f"Paper ({PAPER_SOLVER_VOLUME}, eps = 1e-12):", "",
                   *table(["m", "CG", "BiCGstab", "CG / BiCGstab"],
                          [[f"{m:.4f}", c, b, f"{c / b:.2f}"] for m, c, b in zip(p["mass"], p["cg"], p["bicgstab"])]),
                   ""]
    key = {"paper_critical_mass_fit": pmc, "paper_cg_over_bicgstab_mean": float(np.mean(paper_ratio)),
           "paper_growth_cg": p["cg"][-1] / p["cg"][0], "paper_growth_bicgstab": p["bicgstab"][-1] / p["bicgstab"][0]}
    run = first(inputs, "double")
    res = [r for r in run["results"] if level(r, "outer") == level(r, "sloppy")
           and r["outer"]["precision"] == 8] if run else []
    if not res:
        return lines + not_measured("solver-double.json") + paper_lines, dict(key, measured=False)
    by = {}
    for r in res:
        by.setdefault(kappa_key(r), {})[r["solver"]] = r
    rows, ratios = [], []
    for k in sorted(by, key=lambda k: -by[k][next(iter(by[k]))]["mass"]):
        cg, bi = by[k].get("cg"), by[k].get("bicgstab")
        rr = ratio(conv_iters(cg), conv_iters(bi))
        if rr:
            ratios.append(rr)
        any_row = cg or bi
        rows.append([f"{any_row['mass']:.4f}", f"{any_row['kappa']:.5f}", cg and iters_cell(cg) or "-",
                     bi and iters_cell(bi) or "-", fmt(rr, ".2f")])
    fit = [r for r in res if r["solver"] == "cg" and converged(r)] or \
          [r for r in res if r["solver"] == "bicgstab" and converged(r)]
    mc = critical_mass([r["mass"] for r in fit], [r["iterations"] for r in fit])
    growth = {}
    for solver in ("cg", "bicgstab"):
        ok = sorted((r for r in res if r["solver"] == solver and converged(r)), key=lambda r: -r["mass"])
        if len(ok) >= 2:
            growth[solver] = ok[-1]["iterations"] / ok[0]["iterations"]
    key.update(measured=True, device=run["device"], critical_mass_fit=mc,
               cg_over_bicgstab_mean=float(np.mean(ratios)) if ratios else None,
               growth_cg=growth.get("cg"), growth_bicgstab=growth.get("bicgstab"),
               rows=[{"mass": r["mass"], "kappa": r["kappa"], "solver": r["solver"],
                      "iterations": r["iterations"], "status": r["status"]} for r in res])
    lines += [f"Ours ({run['device']}, {'x'.join(map(str, run['dims']))}, {run.get('gauge', '?')}, "
              f"tol {run['tol']:.0e}; * = did not converge):", "",
              *table(["m", "kappa", "CG", "BiCGstab", "CG / BiCGstab"], rows), "", *paper_lines]
    if plt and mc is not None:
        iterations_plot(plt, res, mc, os.path.join(folder, "r6-iterations.png"), run["device"])
        lines += ["![iterations vs m - m_c](r6-iterations.png)", ""]
        key["figure"] = "r6-iterations.png"
    lines += [f"- CG over BiCGstab iterations: ours {fmt(key['cg_over_bicgstab_mean'], '.2f')} on average, "
              f"the paper's {key['paper_cg_over_bicgstab_mean']:.2f} ('an approximate threefold decrease').",
              f"- Heaviest to lightest mass, iterations grow by: ours CG {fmt(growth.get('cg'), '.1f')}x, "
              f"BiCGstab {fmt(growth.get('bicgstab'), '.1f')}x; the paper's {key['paper_growth_cg']:.1f}x "
              f"and {key['paper_growth_bicgstab']:.1f}x.",
              f"- Critical mass from a straight line through 1/N: ours {fmt(mc, '.4f')}, the paper's "
              f"{pmc:.4f} (its lightest mass, -0.4180, is called 'the critical mass').", "",
              "Why they differ: the paper's masses sit close to the critical mass of its anisotropic "
              "ensemble with sea quarks; ours scan a quenched isotropic field whose critical mass lies "
              "elsewhere, so the counts match only as functions of m - m_c, not mass by mass.", ""]
    return lines, key


# ---------------------------------------------------------------- R7, R8


def mixed_columns(runs, param):
    """{(sloppy precision, recon, gauge fix, param value): {kappa: row}} of the
    double-outer mixed BiCGstab solves in `runs`, param "tol_inner" or "delta"."""
    cols = {}
    for _, run in runs:
        for r in run["results"]:
            if r["solver"] != "bicgstab" or r["outer"]["precision"] != 8 or \
                    level(r, "outer") == level(r, "sloppy"):
                continue
            cols.setdefault((*level(r, "sloppy"), run[param]), {})[kappa_key(r)] = r
    return dict(sorted(cols.items(), key=lambda kv: (
        KERNEL_ORDER.index(kv[0][:2]) if kv[0][:2] in KERNEL_ORDER else len(KERNEL_ORDER),
        -kv[0][0], kv[0][1], kv[0][2], -kv[0][3])))


def paper_mixed_table(paper, pname):
    head = ["m"] + [f"{kernel_label(p, rc, 0)}, {pname} {eps_label(v)}" for p, rc, v in paper]
    rows = [[f"{m:.4f}"] + ["*" if paper[c][i] is None else paper[c][i] for c in paper]
            for i, m in enumerate(PAPER_TABLE3["mass"])]
    light = ["over double, m = -0.4180"] + [
        "*" if paper[c][-1] is None else f"{paper[c][-1] / PAPER_TABLE3['bicgstab'][-1]:.2f}" for c in paper]
    return table(head, rows + [light])


def paper_lightest(paper):
    """{column label: iterations over double BiCGstab at the lightest mass (None = '*')}"""
    base = PAPER_TABLE3["bicgstab"][-1]
    return {f"{kernel_label(p, rc, 0)}, {eps_label(v)}": (None if paper[(p, rc, v)][-1] is None
                                                          else paper[(p, rc, v)][-1] / base)
            for p, rc, v in paper}


def mixed_section(inputs, kind, param, pname, paper, paper_text):
    """R7 (defect correction) and R8 (reliable updates): iterations vs mass per
    sloppy kernel and parameter, and their ratio to double BiCGstab."""
    num, title, src = {"defect": (7, "Defect-correction", "Table 4"),
                       "reliable": (8, "Reliable-update", "Table 5")}[kind]
    lines = [f"## R{num}. {title} BiCGstab iterations vs mass ({src})", ""]
    paper_lines = [f"Paper ({src}, {PAPER_SOLVER_VOLUME}, eps = 1e-12, * = did not converge; the "
                   "last row is ours to read it by: iterations over double BiCGstab at the lightest "
                   "mass):", "", *paper_mixed_table(paper, pname), "",
                   f"The paper's text: '{paper_text}'.", ""]
    key = {"paper_lightest_over_double": paper_lightest(paper)}
    cols = mixed_columns(inputs[kind], param)
    if not cols:
        return (lines + not_measured(f"solver-{kind}-*.json") + paper_lines,
                dict(key, measured=False))
    double = double_bicgstab(inputs)
    kappas = sorted({k for c in cols.values() for k in c} | set(double),
                    key=lambda k: -next(c[k] for c in [*cols.values(), double] if k in c)["mass"])
    labels = [f"{kernel_label(p, rc, gf)}, {pname} {eps_label(v)}" for p, rc, gf, v in cols]
    rows, ratio_rows = [], []
    for k in kappas:
        any_row = next(c[k] for c in [*cols.values(), double] if k in c)
        d = double.get(k)
        dn = conv_iters(d)
        rows.append([f"{any_row['mass']:.4f}", f"{any_row['kappa']:.5f}", d and iters_cell(d) or "-"]
                    + [iters_cell(c[k]) if k in c else "-" for c in cols.values()])
        ratio_rows.append([f"{any_row['mass']:.4f}"]
                          + [("*" if not converged(c[k]) else fmt(ratio(c[k]["iterations"], dn), ".2f"))
                             if k in c else "-" for c in cols.values()])
    lightest = {}
    for label, c in zip(labels, cols.values()):
        k = max((k for k in c if k in double), key=lambda k: c[k]["kappa"], default=None)
        if k is not None:
            r, d = c[k], double[k]
            lightest[label] = {"mass": r["mass"], "converged": converged(r),
                               "over_double": ratio(conv_iters(r), conv_iters(d))}
    gfs = sorted({gf for _, _, gf, _ in cols})
    statuses = sorted({r["status"] for c in cols.values() for r in c.values() if not converged(r)})
    key.update(measured=True, files=[n for n, _ in inputs[kind]], gauge_fix_found=gfs,
               lightest_over_double=lightest,
               columns={label: {f"{r['kappa']:.7f}": {"mass": r["mass"], "iterations": r["iterations"],
                                                      "status": r["status"]} for r in c.values()}
                        for label, c in zip(labels, cols.values())})
    for prec in (4, 2):
        vals = [v["over_double"] for label, v in lightest.items() if label.startswith(PREC_NAME[prec].capitalize())
                and v["over_double"] is not None]
        key[f"max_extra_at_lightest_{PREC_NAME[prec]}"] = max(vals) - 1 if vals else None
    run0 = inputs[kind][0][1]
    lines += [f"Ours ({run0['device']}, {'x'.join(map(str, run0['dims']))}, tol {run0['tol']:.0e}, "
              f"files {', '.join(key['files'])}; double = pure double BiCGstab from solver-double.json; "
              "* = did not converge):", "",
              *table(["m", "kappa", "double"] + labels, rows), "",
              "Iterations over double BiCGstab at the same mass:", "",
              *table(["m"] + labels, ratio_rows), ""]
    if statuses:
        lines += [f"Statuses behind *: {', '.join(statuses)}.", ""]
    lines += [f"Gauge fixing of our sloppy kernels: {', '.join('GF' if g else 'none' for g in gfs)}. "
              "The paper labels Tables 4-5 only by precision and reconstruction; its solver Gflops "
              "(Table 2) are for gauge-fixed kernels.", "", *paper_lines]
    light_rows = []
    for (p, rc, gf, v), label in zip(cols, labels):
        ours = lightest.get(label)
        theirs = paper.get((p, rc, v), "-")
        light_rows.append([label, fmt(ours and ours["mass"], ".4f"),
                           "-" if not ours else "*" if not ours["converged"]
                           else fmt(ours["over_double"], ".2f"),
                           "-" if theirs == "-" else "*" if theirs[-1] is None
                           else f"{theirs[-1] / PAPER_TABLE3['bicgstab'][-1]:.2f}"])
    lines += ["Iterations over double at the lightest mass, ours beside the paper's same kernel and "
              f"{pname} (at m = -0.4180):", "",
              *table(["column", "our lightest m", "ours", "paper"], light_rows), ""]
    for prec, word in ((4, "single"), (2, "half")):
        ours = key[f"max_extra_at_lightest_{word}"]
        pv = [v for label, v in key["paper_lightest_over_double"].items()
              if label.startswith(word.capitalize()) and v is not None]
        lines.append(f"- {word.capitalize()}, most extra iterations at the lightest mass over every "
                     f"column: ours {percent(ours)}, the paper's "
                     f"{percent(max(pv) - 1 if pv else None)}.")
    lines += ["", "Why they differ: iteration counts depend on the gauge field (ours quenched, "
                  "isotropic) and on how near the lightest mass is to the critical one; the "
                  "extra iterations over double at the lightest mass, and whether half precision "
                  "converges there, are what carry across.", ""]
    return lines, key


# ---------------------------------------------------------------- R9


def time_plot(plt, rows, labels, path, device):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax2 = ax.twinx()
    for label, colour in zip(["double", *labels], ("k", "tab:red", "tab:blue")):
        pts = [(r["mass"], r["seconds"].get(label), r["speedup"].get(label)) for r in rows]
        tp = [(m, t) for m, t, _ in pts if t is not None]
        if tp:
            ax.plot(*zip(*tp), "-", color=colour, marker="o", markersize=3, label=f"{label} time")
        sp = [(m, s) for m, _, s in pts if s is not None]
        if sp:
            ax2.plot(*zip(*sp), "--", color=colour, marker="s", markersize=3, label=f"{label} speedup")
    ax.set_yscale("log")
    ax.set_xlabel("mass m")
    ax.set_ylabel("time to solution, host to host (s)")
    ax2.set_ylabel("speedup over double (dashed)")
    ax2.set_ylim(bottom=0)
    ax.set_title(f"BiCGstab, reliable updates delta 0.1 (paper Fig. 7), {device}")
    ax.grid(alpha=0.3)
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = ax2.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def time_section(inputs, folder, plt):
    """R9: time to solution of double vs reliable-update Half 12 and Single 8
    (delta 0.1), and the speedup (Fig. 7)."""
    lines = ["## R9. Time to solution and speedup over double (Fig. 7)", ""]
    paper_lines = [f"Paper (Fig. 7, BiCGstab, delta 0.1, {PAPER_SOLVER_VOLUME}): 'the Single 8 solver has "
                   "an almost constant factor 3 speedup, while the Half 12 solver varies from a factor "
                   "of 4 to 3.5 as the quark mass is reduced'; with the double solver at about "
                   f"{PAPER_FIG7_DOUBLE_GFLOPS:.0f} Gflops that is 'an effective solver performance well "
                   "in excess of 100 Gflops'.", ""]
    key = {"paper_speedup_heavy_to_light": {kernel_label(*k, 0): list(v) for k, v in PAPER_FIG7.items()},
           "paper_double_gflops": PAPER_FIG7_DOUBLE_GFLOPS}
    runs = [(n, r) for n, r in inputs["reliable"] if abs(r.get("delta", 0) - 0.1) < 1e-9]
    double = double_bicgstab(inputs)
    cols = mixed_columns(runs, "delta")
    picked, paper_of = {}, {}
    for pr in KERNEL_ORDER[:2]:
        match = [c for c in cols if c[:2] == pr]
        if match:
            c = max(match, key=lambda c: c[2])  # the gauge-fixed one if both ran
            picked[kernel_label(*c[:3])] = cols[c]
            paper_of[kernel_label(*c[:3])] = PAPER_FIG7[pr]
    if not double or not picked:
        need = "solver-double.json" if not double else "solver-reliable-*.json with delta 0.1"
        return lines + not_measured(need) + paper_lines, dict(key, measured=False)
    rows = []
    for k in sorted(double, key=lambda k: -double[k]["mass"]):
        d = double[k]
        row = {"mass": d["mass"], "kappa": d["kappa"], "seconds": {"double": d["seconds"]},
               "speedup": {}, "solve_speedup": {}}
        for label, c in picked.items():
            if k in c and converged(c[k]):
                row["seconds"][label] = c[k]["seconds"]
                row["speedup"][label] = d["seconds"] / c[k]["seconds"]
                row["solve_speedup"][label] = d["solve_seconds"] / c[k]["solve_seconds"]
        rows.append(row)
    head = ["m", "double (s)"] + [f"{l} (s)" for l in picked] + [f"{l} speedup" for l in picked] \
        + [f"{l} speedup, solver only" for l in picked]
    table_rows = [[f"{r['mass']:.4f}", f"{r['seconds']['double']:.3f}"]
                  + [fmt(r["seconds"].get(l), ".3f") for l in picked]
                  + [fmt(r["speedup"].get(l), ".2f") for l in picked]
                  + [fmt(r["solve_speedup"].get(l), ".2f") for l in picked] for r in rows]
    dg = float(np.median([d["gflops"] for d in double.values()]))
    ends = {}
    for label in picked:
        sp = [r["speedup"][label] for r in rows if label in r["speedup"]]
        if sp:
            ends[label] = [sp[0], sp[-1]]
    key.update(measured=True, device=runs[0][1]["device"], rows=rows, double_gflops=dg,
               speedup_heavy_to_light=ends,
               effective_gflops={l: dg * max(v) for l, v in ends.items()})
    lines += [f"Ours ({key['device']}, {'x'.join(map(str, runs[0][1]['dims']))}; time = the 'seconds' "
              "field, host source to host solution: gauge fixing, transfers and source preparation "
              "included; 'solver only' uses solve_seconds, the Krylov iteration alone):", "",
              *table(head, table_rows), ""]
    if plt:
        time_plot(plt, rows, list(picked), os.path.join(folder, "r9-time.png"), key["device"])
        lines += ["![time to solution](r9-time.png)", ""]
        key["figure"] = "r9-time.png"
    lines += paper_lines
    for label, (heavy, light) in ends.items():
        p = paper_of[label]
        lines.append(f"- {label}: speedup {heavy:.2f}x at the heaviest mass, {light:.2f}x at the lightest "
                     f"(paper: {p[0]:.1f}x to {p[1]:.1f}x); effective {dg * max(heavy, light):.0f} Gflops "
                     f"(our double solver: {dg:.0f} Gflops).")
    kern = kernel_ratios(inputs)
    if kern:
        lines.append(f"- Dslash kernel rate over double 12 GF (24^3, best T): "
                     + ", ".join(f"{l} {v:.2f}" for l, v in kern.items())
                     + f"; the paper's (Table 2): Half 12 {207.5 / 40.3:.2f}, Single 8 {134.1 / 40.3:.2f}.")
        key["kernel_over_double"] = kern
    lines += ["", "Why they differ: the GTX 280 was flop bound in double (78 Gflops peak), which "
                  "made its double baseline slow and the mixed solvers' speedup large; a GPU that is "
                  "bandwidth bound in every precision can gain at most the ratio of bytes moved "
                  "(the kernel ratios above). Our time also includes the host side of each solve, "
                  "which does not shrink with the sloppy precision.", ""]
    return lines, key


def kernel_ratios(inputs):
    """Best Gflops of the Half 12 GF and Single 8 GF Dslash over Double 12 GF
    at 24^3 x T, from the sweep; {} without it."""
    run = first(inputs, "sweep")
    rows = sweep_rows(run["results"]) if run else []

    def best(p, rc):
        g = [r["gflops"] for r in rows if (r["precision"], r["recon"], r["gauge_fix"]) == (p, rc, 1)]
        return max(g) if g else None

    d = best(8, 12)
    out = {l: ratio(best(p, rc), d) for l, (p, rc) in (("Half 12", (2, 12)), ("Single 8", (4, 8)))}
    return {l: v for l, v in out.items() if v}


# ---------------------------------------------------------------- main


def main(argv):
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    folder = argv[1]
    inputs = load_inputs(folder)
    plt = pyplot()
    sections = [
        ("R1", dslash_section(1, 4, inputs, folder, plt)),
        ("R2", dslash_section(2, 8, inputs, folder, plt)),
        ("R3", dslash_section(3, 2, inputs, folder, plt)),
        ("R4", accuracy_section(inputs, folder, plt)),
        ("R5", table2_section(inputs)),
        ("R6", double_section(inputs, folder, plt)),
        ("R7", mixed_section(inputs, "defect", "tol_inner", "eps_in", PAPER_TABLE4, PAPER_TABLE4_TEXT)),
        ("R8", mixed_section(inputs, "reliable", "delta", "delta", PAPER_TABLE5, PAPER_TABLE5_TEXT)),
        ("R9", time_section(inputs, folder, plt)),
    ]
    lines = header(inputs)
    if plt is None:
        lines += ["(matplotlib is missing: no figures.)", ""]
    for _, (text, _) in sections:
        lines += text
    with open(os.path.join(folder, "report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(folder, "report.json"), "w") as f:
        json.dump({"inputs": {n: {k: run.get(k) for k in ("device", "commit", "date", "dims")}
                              for key in INPUTS for n, run in inputs[key]},
                   **{name: key for name, (_, key) in sections}}, f, indent=1, default=float)
    measured = [name for name, (_, key) in sections if key["measured"]]
    print(f"{os.path.join(folder, 'report.md')}: measured {', '.join(measured) or 'nothing'}; "
          f"not measured {', '.join(n for n, _ in sections if n not in measured) or 'nothing'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
