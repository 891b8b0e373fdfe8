#!/usr/bin/env python3
"""bench/multi_tables.py DIR: the markdown tables of docs/multi-gpu.md from
what bench/gpu-multi wrote in DIR (its OUTDIR, or results.tar.gz unpacked),
for any number of GPUs.

Reads (each optional; a table whose inputs are missing says so), from DIR,
else from DIR/results.tar.gz:
  dslash*.json       wdirac bench dslash --grid ... --json: every row names
                     its variant, global lattice, grid and ranks, so any
                     file of any run counts (this script's names are
                     dslash-NNgpu-PxPyPzPt.json, earlier runs' were
                     dslash-grid-1gpu.json, dslash-zsplit-2gpu.json, ...)
  solver-Ngpu.json   wdirac bench solver on N GPUs (the d-h BiCGstab)
  mg-Ngpu.json       wdirac solve --mg --json on N GPUs
  machine.txt        nvidia-smi's GPUs: the device kind in the header
  times.txt          the parts' exit codes and seconds
  gauge-generate.log the configuration of the solves
  decomposed-*.log   test_decomposed's last line

Prints: the run (device kind, commit, date); Dslash strong scaling per
global lattice and family (recon, gauge fixing): one row per grid, us per
call of d, s and h with the speedup over the 1-GPU figure of the same run
(where the lattice has no 1-GPU figure, over the fewest GPUs measured,
and says so), then each row's halo, serial and hidden figures and the
exchange policy where bench dslash reports one; weak scaling (a local
block of 32^3x64 on every GPU; efficiency = 1-GPU us / N-GPU us); the
solver and the multigrid on 1, 2, 4 ... GPUs with speedups; the decomposed
tests; the NCCL send/recv sweep.  Each of issue 28's targets is marked met
or missed where its figures are present.  Python 3 standard library only,
so it runs on the GPU machine too.
"""
import json
import os
import re
import sys
import tarfile

ITER_SLACK = 5          # two grids' iterations may differ by this much
# issue 28's targets: (lattice, GPUs, which grids) -> least speedup; "T":
# the T split, "ZT": the Z x T split, "best": the fastest grid of that count
STRONG_TARGETS = {((48, 48, 48, 96), 2, "T"): 1.9, ((48, 48, 48, 96), 4, "best"): 3.6,
                  ((48, 48, 48, 96), 4, "ZT"): 3.4, ((64, 64, 64, 128), 8, "best"): 6.5}
BIG_OVER_TWO = 3.4      # 64^3x128 on 8 GPUs against 2, where one GPU cannot hold it
WEAK_TARGET = (4, 0.95)  # efficiency on 4 GPUs
SOLVER_TARGET = (4, 3.5)  # d-h BiCGstab speedup on 4 GPUs
WEAK_LOCAL = (32, 32, 32, 64)
WHICH = {"T": "T split", "ZT": "Z x T split", "best": "best grid"}


class Dir:
    """DIR's files, else those of DIR/results.tar.gz (the device tool
    returns the JSON and summary.txt beside the archive)"""

    def __init__(self, d):
        self.d, self.tar = d, {}
        try:
            with tarfile.open(os.path.join(d, "results.tar.gz")) as t:
                for m in t.getmembers():
                    f = m.isfile() and t.extractfile(m)
                    if f:
                        self.tar[os.path.normpath(m.name)] = f.read().decode(errors="replace")
        except (OSError, tarfile.TarError):
            pass

    def names(self):
        here = set()
        try:
            here = {n for n in os.listdir(self.d) if os.path.isfile(os.path.join(self.d, n))}
        except OSError:
            pass
        return sorted(here | set(self.tar))

    def text(self, name):
        try:
            with open(os.path.join(self.d, name)) as f:
                return f.read()
        except OSError:
            return self.tar.get(name)

    def load(self, name):
        try:
            return json.loads(self.text(name) or "")
        except ValueError:
            return None


def lat(dims):
    dims = tuple(dims)
    return "%d^3x%d" % (dims[0], dims[3]) if dims[0] == dims[1] == dims[2] else "x".join(map(str, dims))


def gridname(grid):
    split = [a for a, p in zip("XYZT", grid) if p > 1]
    return " x ".join(split) + " split" if split else "one GPU"


def gridkey(grid):
    split = "".join(a for a, p in zip("XYZT", grid) if p > 1)
    return {"T": "T", "ZT": "ZT", "YZT": "YZT"}.get(split, split)


def family(variant):
    """dslash_d_r12_gf0_dag0_xpay0_n1 -> (precision letter, 'r12_gf0' + the rest)"""
    m = re.match(r"dslash_([dsh])_(.*?)(_dag0_xpay0_n1)?$", variant)
    return (m.group(1), m.group(2)) if m else (None, variant)


def table(head, body):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in body]
    return "\n".join(out)


def kind(machine, ngpu):
    """the device kind's name from nvidia-smi's GPU names (machine.txt)"""
    names = re.findall(r"^\d+, (NVIDIA [^,]+),", machine or "", re.M)
    if not names:
        return None, ngpu
    n = len(names)
    gen = "h200" if "H200" in names[0] else "h100" if "H100" in names[0] else None
    if gen is None:
        return "%d x %s" % (n, names[0]), n
    k = "nvidia-%s" % gen + ("" if n == 1 and gen == "h200" else "-x%d" % n)
    return "%s (%d x %s)" % (k, n, names[0]), n


def dslash_rows(dd):
    """every Dslash row of every file, by (variant, dims, grid); a later
    file's row of the same key replaces an earlier one"""
    rows, runs = {}, []
    for name in dd.names():
        if not (name.startswith("dslash") and name.endswith(".json")):
            continue
        run = dd.load(name)
        if not run or run.get("benchmark") != "dslash-grid":
            continue
        runs.append((name, run))
        for r in run.get("results", []):
            key = (r["variant"], tuple(r["dims"]), tuple(r.get("grid", (1, 1, 1, 1))))
            r = dict(r, file=name, ranks=r.get("ranks", run.get("ranks", 1)))
            rows[key] = r
    return rows, runs


def fmt_us(us):
    return "%.0f" % us if us >= 100 else "%.1f" % us


def strong_tables(rows):
    # a lattice split over several GPUs; a block of 32^3x64 a GPU is weak scaling's
    lattices = sorted({k[1] for k, r in rows.items()
                       if r["ranks"] > 1 and tuple(r.get("local", ())) != WEAK_LOCAL},
                      key=lambda d: (d[0] * d[1] * d[2] * d[3], d))
    verdicts = []
    for dims in lattices:
        fams = sorted({family(k[0])[1] for k in rows if k[1] == dims})
        for fam in fams:
            here = {k: r for k, r in rows.items() if k[1] == dims and family(k[0])[1] == fam}
            if not any(r["ranks"] > 1 for r in here.values()):
                continue
            precs = [p for p in "dsh" if any(family(k[0])[0] == p for k in here)]
            grids = sorted({k[2] for k in here}, key=lambda g: (g[0] * g[1] * g[2] * g[3],
                                                                 gridkey(g) != "T", g))
            base_n = min(here[k]["ranks"] for k in here)
            base = {family(k[0])[0]: r["us_per_call"] for k, r in here.items() if r["ranks"] == base_n}
            over = "1 GPU" if base_n == 1 else "%d GPUs (the fewest measured: %s on one GPU not " \
                "measured)" % (base_n, lat(dims))
            print("\n## Dslash strong scaling, %s, %s\n" % (lat(dims), fam))
            print("us per call, median of the calls (the slowest rank); in brackets the speedup over "
                  "%s in this run\n" % over)
            body, sp = [], {}
            for g in grids:
                n = g[0] * g[1] * g[2] * g[3]
                cells = []
                for p in precs:
                    k = next((k for k in here if k[2] == g and family(k[0])[0] == p), None)
                    if not k:
                        cells.append("-")
                        continue
                    us = here[k]["us_per_call"]
                    if n == base_n or p not in base:
                        cells.append(fmt_us(us))
                    else:
                        s = base[p] / us
                        sp[(g, p)] = s
                        cells.append("%s (%.2fx)" % (fmt_us(us), s))
                label = "1 GPU" if n == 1 else "%d GPUs, %s (%s)" % (n, gridname(g), "x".join(map(str, g)))
                body.append([label] + cells)
            print(table([lat(dims)] + precs, body))
            verdicts += strong_verdicts(dims, fam, here, sp, base_n, precs)
            detail(here, base, base_n)
    return verdicts


def strong_verdicts(dims, fam, here, sp, base_n, precs):
    out = []
    if fam != "r12_gf0":
        return out
    for (tdims, n, which), least in STRONG_TARGETS.items():
        if tdims != dims:
            continue
        if base_n != 1:
            if n == 8 and base_n == 2:
                least = BIG_OVER_TWO
            else:
                continue
        gs = sorted({g for (g, p) in sp if g[0] * g[1] * g[2] * g[3] == n
                     and (which == "best" or gridkey(g) == which)})
        if not gs:
            out.append("- %s on %d GPUs, %s, >= %.1fx over %s: not measured" % (
                lat(dims), n, WHICH[which], least,
                "1 GPU" if base_n == 1 else "%d GPUs" % base_n))
            continue
        cells = []
        for p in precs:
            cand = [(sp[(g, p)], g) for g in gs if (g, p) in sp]
            if not cand:
                continue
            s, g = max(cand)
            cells.append("%s %.2fx%s %s" % (p, s, "" if which != "best" else " (%s)" % gridname(g),
                                             "met" if s >= least else "missed"))
        out.append("- %s on %d GPUs, %s, >= %.1fx over %s: %s" % (
            lat(dims), n, WHICH[which], least,
            "1 GPU" if base_n == 1 else "%d GPUs" % base_n, "; ".join(cells)))
    return out


def route(r):
    """each split dimension's route ("T:copy Z:copy") and AUTO's choice
    from its tuning line ("... -> copy-zt", "...: copy-zt (the tune
    cache)"), as bench dslash's JSON gives them"""
    routes, tuning = r.get("halo_route") or "", r.get("halo_route_tuning") or ""
    m = re.search(r"(?: -> |: )([a-z-]+)(?: \(the tune cache\))?$", tuning)
    return (routes or "-") + (" (auto: %s)" % m.group(1) if m else "")


def detail(here, base, base_n):
    body = []
    for k in sorted(here, key=lambda k: (here[k]["ranks"], k[2], "dsh".index(family(k[0])[0] or "d"))):
        r = here[k]
        p = family(k[0])[0]
        s = base.get(p, 0) / r["us_per_call"] if r["ranks"] != base_n and base.get(p) else None
        eff = "%.0f%%" % (100 * s * base_n / r["ranks"]) if s else "-"
        ser, hid = r.get("us_serial_exchange"), r.get("fraction_of_exchange_hidden")
        one = r["ranks"] == 1
        body.append([k[0].replace("_dag0_xpay0_n1", ""), "x".join(map(str, k[2])),
                     "x".join(map(str, r.get("local", []))), "%.2f" % r["us_per_call"],
                     "%.2fx" % s if s else "-", eff, "-" if one else "%.1f" % r.get("halo_us", 0),
                     "-" if one else "%.0f" % (r.get("halo_bytes_sent_per_rank", 0) / 1024),
                     "-" if one else "%.1f" % r.get("halo_GBps", 0), "%.2f" % ser if ser else "-",
                     "%.0f%%" % (100 * hid) if ser and hid is not None else "-",
                     route(r)])
    print("\nEach row: halo us from the call's start to the exchange's end on the slowest rank "
          "(it can also count a wait for the neighbours, whose calls start apart: an upper "
          "bound of the exchange's own time; hidden reads above 100%% where it does); "
          "halo KiB sent a rank; serial us with the overlap off (where bench dslash times it) "
          "and the share of that exchange the overlap hides; route: each dimension's, as bench "
          "dslash reports it, with AUTO's choice; efficiency = speedup x %d / GPUs\n" % base_n)
    print(table(["variant", "grid", "local", "us", "speedup", "efficiency", "halo us", "halo KiB",
                 "halo GB/s", "serial us", "hidden", "route"], body))


def weak_table(rows):
    base = {family(k[0]): r["us_per_call"] for k, r in rows.items()
            if r["ranks"] == 1 and k[1] == WEAK_LOCAL}
    multi = {k: r for k, r in rows.items()
             if r["ranks"] > 1 and tuple(r.get("local", ())) == WEAK_LOCAL}
    print("\n## Weak scaling, a 32^3x64 block on every GPU\n")
    if not base or not multi:
        print("(missing: %s)" % ("the 1-GPU 32^3x64 row" if not base else "rows of 32^3x64 a GPU on a grid"))
        return []
    verdicts = []
    for i, fam in enumerate(sorted({f for _, f in base})):
        if i:
            print()
        precs = [p for p in "dsh" if (p, fam) in base]
        print("%s: us per call (efficiency = 1-GPU us / N-GPU us)\n" % fam)
        body = [["1 GPU (32^3x64)"] + [fmt_us(base[(p, fam)]) for p in precs]]
        eff = {}
        for g in sorted({k[2] for k in multi if family(k[0])[1] == fam},
                        key=lambda g: (g[0] * g[1] * g[2] * g[3], g)):
            n = g[0] * g[1] * g[2] * g[3]
            cells, dims = [], None
            for p in precs:
                k = next((k for k in multi if k[2] == g and family(k[0]) == (p, fam)), None)
                if not k:
                    cells.append("-")
                    continue
                dims = k[1]
                e = base[(p, fam)] / multi[k]["us_per_call"]
                eff[(n, p)] = e
                cells.append("%s (%.0f%%)" % (fmt_us(multi[k]["us_per_call"]), 100 * e))
            body.append(["%d GPUs (%s, %s)" % (n, lat(dims), "x".join(map(str, g)))] + cells)
        print(table(["32^3x64 a GPU"] + precs, body))
        n, least = WEAK_TARGET
        if fam == "r12_gf0":
            got = ["%s %.1f%% %s" % (p, 100 * eff[(n, p)], "met" if eff[(n, p)] >= least else "missed")
                   for p in precs if (n, p) in eff]
            verdicts.append("- weak scaling on %d GPUs >= %.0f%%: %s" % (
                n, 100 * least, "; ".join(got) if got else "not measured"))
    return verdicts


def solver_table(dd):
    runs = []
    for name in dd.names():
        m = re.match(r"solver-(\d+)gpu\.json$", name)
        s = m and dd.load(name)
        if s and s.get("results"):
            runs.append((int(m.group(1)), s))
    runs.sort(key=lambda x: x[0])
    print("\n## The d-h BiCGstab solve on 1, 2, 4 ... GPUs\n")
    gl = dd.text("gauge-generate.log")
    if gl:
        lines = gl.splitlines()
        hdr = [l for l in lines if l.startswith("# wdirac gauge generate")]
        tail = [l for l in lines if l.startswith("# ") and not l.startswith("#  ")][-3:]
        for l in hdr[:1] + tail:
            print("    " + l)
        print()
    if not runs:
        print("(missing: solver-*gpu.json)")
        return []
    s0 = runs[0][1]
    r0 = s0["results"][0]
    print("%s, plaquette %.7f (%s); %s %s, kappa %s, tol %g, %s updates (delta %g); seconds: host "
          "source to host solution, median of %d after one untimed solve; krylov s: the iteration "
          "alone; speedups over %s\n" % (
              lat(s0["dims"]), s0["plaquette"], s0["gauge"], r0["config"], r0["solver"], r0["kappa"],
              s0["tol"], s0["mixed"], s0["delta"], s0["reps"],
              "1 GPU" if runs[0][0] == 1 else "%d GPUs" % runs[0][0]))
    body = []
    a = r0
    for n, s in runs:
        r = s["results"][0]
        body.append([str(n), "x".join(map(str, s["grid"])), r["status"], r["iterations"],
                     "%d + %d" % (r["sloppy_iterations"], r["updates"]), "%.2e" % r["true_residual"],
                     "%.3f" % r["seconds"], "%.3f" % r["solve_seconds"],
                     "%.2fx" % (a["seconds"] / r["seconds"]) if n != runs[0][0] else "-",
                     "%.2fx" % (a["solve_seconds"] / r["solve_seconds"]) if n != runs[0][0] else "-",
                     "%.1f" % (r["gflops"] * s.get("ranks", 1)), "%.2f" % r["setup_seconds"]])
    print(table(["GPUs", "grid", "status", "iter", "k + l", "true residual", "seconds", "krylov s",
                 "speedup", "krylov speedup", "Gflops (all GPUs)", "setup s"], body))
    rs = [s["results"][0] for _, s in runs]
    agree = (all(r["status"] == "ok" and r["true_residual"] <= s0["tol"] for r in rs) and
             max(r["iterations"] for r in rs) - min(r["iterations"] for r in rs) <= ITER_SLACK)
    print("\nthe solves %s" % ("agree (all converged, true residuals <= tol, iterations within %d)"
                               % ITER_SLACK if agree else
                               "DISAGREE (not converged, or iterations more than %d apart)" % ITER_SLACK))
    n, least = SOLVER_TARGET
    got = [(a["seconds"] / s["results"][0]["seconds"]) for m, s in runs if m == n]
    if runs[0][0] != 1:
        return ["- d-h BiCGstab on %d GPUs >= %.1fx: no 1-GPU solve" % (n, least)]
    return ["- d-h BiCGstab on %d GPUs >= %.1fx: %s" % (
        n, least, "%.2fx %s" % (got[0], "met" if got[0] >= least else "missed") if got else "not measured")]


def mg_table(dd):
    runs = []
    for name in dd.names():
        m = re.match(r"mg-(\d+)gpu\.json$", name)
        s = m and dd.load(name)
        if s and s.get("result"):
            runs.append((int(m.group(1)), s))
    runs.sort(key=lambda x: x[0])
    print("\n## Multigrid on 1 and 2 GPUs (wdirac solve --mg)\n")
    if not runs:
        print("(missing: mg-*gpu.json)")
        return
    m0 = runs[0][1]
    mg = m0.get("mg", {})
    print("%s, %s, kappa %.4f, tol %g, outer %s sloppy %s; %d levels, blocks %s, Nvec %s, post-smoothing "
          "%s, %s-cycle, coarse tol %s / %s iterations, GCR(%s); setup s without diagnostics "
          "(--mg-verbose 0); solve s: the solve after it\n" % (
              lat(m0["dims"]), m0.get("gauge"), m0["kappa"], m0["tol"], "dsh"[[8, 4, 2].index(
                  m0["outer"]["precision"])] if m0["outer"]["precision"] in (8, 4, 2) else "?",
              "dsh"[[8, 4, 2].index(m0["sloppy"]["precision"])] if m0["sloppy"]["precision"] in (8, 4, 2)
              else "?", mg.get("levels"), mg.get("block"), mg.get("nvec"), mg.get("post_smooth"),
              mg.get("cycle"), mg.get("coarse_tol"), mg.get("coarse_max_iter"), mg.get("gcr_nkrylov")))
    body = []
    for n, s in runs:
        r = s["result"]
        body.append([str(n), "x".join(map(str, s.get("grid", []))), r["status"],
                     "%s (%s)" % (r.get("outer_iterations"), ", ".join(map(str, r.get("mg_iterations", [])))),
                     "%.2e" % r["true_residual"], "%.2f" % r.get("mg_setup_seconds", 0),
                     "%.3f" % r["seconds"], "%.2f" % r.get("seconds_with_setup", 0),
                     "%.1f" % (r.get("bytes_allocated", 0) / 1e9)])
    print(table(["GPUs", "grid", "status", "outer its (levels)", "true residual", "setup s", "solve s",
                 "with setup s", "GB a GPU"], body))
    by = dict(runs)
    if 1 in by and 2 in by:
        a, b = by[1]["result"], by[2]["result"]
        print("\n2 GPUs against 1: solve %.2fx, setup %.2fx, with setup %.2fx" % (
            a["seconds"] / b["seconds"], a["mg_setup_seconds"] / b["mg_setup_seconds"],
            a["seconds_with_setup"] / b["seconds_with_setup"]))


def tests_lines(dd):
    print("\n## test_decomposed on every rank count\n")
    logs = [n for n in dd.names() if re.match(r"decomposed-n\d+.*\.log$", n)]
    if not logs:
        print("(missing: decomposed-*.log)")
    for n in sorted(logs, key=lambda n: (int(re.match(r"decomposed-n(\d+)", n).group(1)), n)):
        t = (dd.text(n) or "").strip().splitlines()
        print("- %s: %s" % (n, t[-1] if t else "(empty)"))


def run_tables(runs, key, title, headers, row, order, missing):
    """One table per run of the JSON list run[key], a row a sorted entry."""
    print("\n## %s\n" % title)
    done = 0
    for name, run in runs:
        entries = run.get(key)
        if not entries:
            continue
        done = 1
        print("%s (%d GPUs):\n" % (name, run.get("ranks", 0)))
        print(table(headers, [row(e) for e in sorted(entries, key=order)]))
    if not done:
        print(missing)


def nccl_table(runs):
    run_tables(runs, "nccl_exchange", "NCCL send/recv exchange alone",
               ["bytes per face", "us", "GB/s out"],
               lambda e: ["%d%s" % (e["bytes_per_face"], " (halo face)" if e.get("halo_face") else ""),
                          "%.2f" % e["us"], "%.2f" % e["GBps_out"]],
               lambda e: e["bytes_per_face"], "(missing: no bench dslash run with --nccl-sweep)")
    run_tables(runs, "global_sums",
               "Global sums: MPI on the host against NCCL on the device (issue 28 item 4)",
               ["doubles", "MPI us", "NCCL us", "same bits"],
               lambda e: ["%d" % e["n"], "%.2f" % e["us_mpi"], "%.2f" % e["us_nccl"],
                          "yes" if e.get("same_bits") else "NO"],
               lambda e: e["n"], "(missing: no bench dslash run with --nccl-sweep on several ranks)")


def main():
    dd = Dir(sys.argv[1] if len(sys.argv) > 1 else ".")
    rows, runs = dslash_rows(dd)
    k, _ = kind(dd.text("machine.txt"), 0)
    print("## Run\n")
    print("- device kind: %s" % (k or "(no machine.txt with nvidia-smi's GPUs)"))
    for name, run in runs:
        print("- %s: %s, %s rank%s, commit %s, %s" % (name, run.get("device"), run.get("ranks"),
                                                      "" if run.get("ranks") == 1 else "s",
                                                      run.get("commit"), run.get("date")))
    times = dd.text("times.txt")
    if times:
        print("\nParts (exit code, wall seconds):\n")
        for line in times.splitlines():
            print("    " + line.rstrip())
    verdicts = strong_tables(rows) if rows else []
    if not rows:
        print("\n## Dslash strong scaling\n\n(missing: dslash*.json)")
    verdicts += weak_table(rows)
    verdicts += solver_table(dd)
    mg_table(dd)
    tests_lines(dd)
    nccl_table(runs)
    print("\n## Issue 28's targets\n")
    print("\n".join(verdicts) if verdicts else "(none measured)")


if __name__ == "__main__":
    main()
