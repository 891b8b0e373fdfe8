#!/usr/bin/env python3
"""bench/multi_tables.py DIR: the markdown tables of docs/multi-gpu.md from
what bench/gpu-multi wrote in DIR (its OUTDIR, or results.tar.gz unpacked).

Reads (each optional; a table whose inputs are missing says so):
  dslash-grid-1gpu.json    wdirac bench dslash --grid 1 1 1 1 (32^3x64, 48^3x96)
  dslash-grid-2gpu.json    --grid 1 1 1 2 (T split) with --nccl-sweep
  dslash-zsplit-2gpu.json  --grid 1 1 2 1 (Z split)
  dslash-weak-2gpu.json    --grid 1 1 1 2 --dims 32 32 32 128 (weak scaling)
  solver-1gpu.json, solver-2gpu.json   wdirac bench solver, grids 1x1x1x1 and 1x1x1x2
  times.txt, gauge-generate.log        the parts' seconds, the configuration
(each from DIR, else from DIR/results.tar.gz)

Prints: the run (device, commit, date), strong scaling split in T and in Z
(1-GPU us, 2-GPU us, speedup = 1-GPU us / 2-GPU us, efficiency = speedup /
2, halo us / KiB / GB/s, and for T the serial call and the hidden share),
the Z split beside the T split, weak scaling (efficiency = 1-GPU us on
32^3x64 / 2-GPU us on 32^3x128, target >= 95%), the solver on 1 and 2 GPUs
(seconds per solve, Krylov seconds, iterations, true residual, speedups,
and whether the two runs agree: both converged, true residuals <= tol,
iterations within 5), and the NCCL send/recv sweep.  Python 3 standard
library only, so it runs on the GPU machine too.
"""
import json
import os
import re
import sys
import tarfile

ITER_SLACK = 5          # the two grids' iterations may differ by this much
STRONG_TARGET = 1.85    # issue 11: 2-GPU Dslash speedup at 48^3x96
WEAK_TARGET = 0.95      # issue 11: weak-scaling efficiency
SOLVER_TARGET = 1.8     # issue 11: 2-GPU solver speedup


def text(d, name):
    """DIR/name, else ./name inside DIR/results.tar.gz (what the device tool
    returns: the JSON and summary.txt beside the archive); None if neither"""
    try:
        with open(os.path.join(d, name)) as f:
            return f.read()
    except OSError:
        pass
    try:
        with tarfile.open(os.path.join(d, "results.tar.gz")) as t:
            return t.extractfile("./" + name).read().decode()
    except (OSError, KeyError, AttributeError, tarfile.TarError):
        return None


def load(d, name):
    try:
        return json.loads(text(d, name) or "")
    except ValueError:
        return None


def lat(dims):
    return "%d^3x%d" % (dims[0], dims[3]) if dims[0] == dims[1] == dims[2] else "x".join(map(str, dims))


def short(v):
    return re.sub(r"_dag0_xpay0_n1$", "", v)


def rows(run):
    return {(r["variant"], tuple(r["dims"])): r for r in (run or {}).get("results", [])}


def table(head, body):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in body]
    return "\n".join(out)


def describe(name, run):
    if not run:
        return "- %s: missing" % name
    return "- %s: %s, %s rank%s, commit %s, %s" % (name, run.get("device"), run.get("ranks"),
                                                   "" if run.get("ranks") == 1 else "s",
                                                   run.get("commit"), run.get("date"))


def strong(one, two, split):
    """speedup rows of a 2-GPU strong-scaling run against the 1-GPU run"""
    r1, body = rows(one), []
    for key, r in rows(two).items():
        if key not in r1:
            continue
        t1, t2 = r1[key]["us_per_call"], r["us_per_call"]
        sp = t1 / t2
        row = [short(key[0]), lat(key[1]), "%.2f" % t1, "%.2f" % t2, "%.2fx" % sp,
               "%.0f%%" % (50 * sp), "%.1f" % r.get("halo_us", 0),
               "%.0f" % (r.get("halo_bytes_sent_per_rank", 0) / 1024), "%.1f" % r.get("halo_GBps", 0)]
        if split == "T":
            ser = r.get("us_serial_exchange")
            hid = r.get("fraction_of_exchange_hidden")
            row += ["%.2f" % ser if ser else "-", "%.0f%%" % (100 * hid) if hid is not None else "-"]
        row.append(("met" if sp >= STRONG_TARGET else "missed") if key[1][0] == 48 else "-")
        body.append((key[1][0], row))
    body.sort(key=lambda x: x[0])
    return [b for _, b in body]


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "."
    one = load(d, "dslash-grid-1gpu.json")
    tsp = load(d, "dslash-grid-2gpu.json")
    zsp = load(d, "dslash-zsplit-2gpu.json")
    weak = load(d, "dslash-weak-2gpu.json")
    s1, s2 = load(d, "solver-1gpu.json"), load(d, "solver-2gpu.json")

    print("## Run\n")
    for name, run in (("1 GPU Dslash", one), ("T split", tsp), ("Z split", zsp),
                      ("weak", weak), ("solver 1 GPU", s1), ("solver 2 GPUs", s2)):
        print(describe(name, run))
    times = text(d, "times.txt")
    if times:
        print("\nParts (exit code, wall seconds):\n")
        for line in times.splitlines():
            print("    " + line.rstrip())

    head = ["variant", "global lattice", "1 GPU us", "2 GPUs us", "speedup", "efficiency",
            "halo us", "halo KiB", "halo GB/s"]
    tgt = "target (>= %.2fx at 48^3x96)" % STRONG_TARGET
    print("\n## Dslash strong scaling, T split in two (grid 1x1x1x2)\n")
    if one and tsp:
        print(table(head + ["serial us", "hidden", tgt], strong(one, tsp, "T")))
    else:
        print("(missing: %s)" % ("dslash-grid-1gpu.json" if not one else "dslash-grid-2gpu.json"))

    print("\n## Dslash strong scaling, Z split in two (grid 1x1x2x1, exchange serial)\n")
    if one and zsp:
        print(table(head + [tgt], strong(one, zsp, "Z")))
        if tsp:
            print("\nZ split against T split (speedups; T serial: the T split with the overlap off):\n")
            rt, rz, r1, body = rows(tsp), rows(zsp), rows(one), []
            for key in sorted(rz, key=lambda k: k[1][0]):
                if key in rt and key in r1:
                    t1 = r1[key]["us_per_call"]
                    ser = rt[key].get("us_serial_exchange")
                    body.append([short(key[0]), lat(key[1]), "%.2fx" % (t1 / rz[key]["us_per_call"]),
                                 "%.2fx" % (t1 / rt[key]["us_per_call"]),
                                 "%.2fx" % (t1 / ser) if ser else "-",
                                 "%.0f / %.0f" % (rz[key].get("halo_bytes_sent_per_rank", 0) / 1024,
                                                  rt[key].get("halo_bytes_sent_per_rank", 0) / 1024)])
            print(table(["variant", "global lattice", "Z split", "T split", "T serial",
                         "halo KiB Z / T"], body))
    else:
        print("(missing: %s)" % ("dslash-grid-1gpu.json" if not one else "dslash-zsplit-2gpu.json"))

    print("\n## Weak scaling, 32^3x64 per GPU (1 GPU 32^3x64, 2 GPUs 32^3x128, grid 1x1x1x2)\n")
    if one and weak:
        r1, body = rows(one), []
        for (v, dims), r in rows(weak).items():
            base = r1.get((v, (dims[0], dims[1], dims[2], dims[3] // 2)))
            if not base:
                continue
            eff = base["us_per_call"] / r["us_per_call"]
            body.append([short(v), lat(dims), "%.2f" % base["us_per_call"], "%.2f" % r["us_per_call"],
                         "%.1f%%" % (100 * eff), "%.1f" % r.get("halo_us", 0),
                         "%.2f" % r["us_serial_exchange"] if r.get("us_serial_exchange") else "-",
                         "met" if eff >= WEAK_TARGET else "missed"])
        print(table(["variant", "2-GPU lattice", "1 GPU us (32^3x64)", "2 GPUs us", "efficiency",
                     "halo us", "serial us", "target (>= %.0f%%)" % (100 * WEAK_TARGET)], body))
    else:
        print("(missing: %s)" % ("dslash-grid-1gpu.json" if not one else "dslash-weak-2gpu.json"))

    print("\n## Solver on 1 and 2 GPUs\n")
    gl = text(d, "gauge-generate.log")
    if gl:
        lines = gl.splitlines()
        hdr = [l for l in lines if l.startswith("# wdirac gauge generate")]
        tail = [l for l in lines if l.startswith("# ") and not l.startswith("#  ")][-3:]
        for l in hdr[:1] + tail:
            print("    " + l)
        print()
    runs = [(n, s) for n, s in ((1, s1), (2, s2)) if s and s.get("results")]
    if runs:
        s0 = runs[0][1]
        print("%s, plaquette %.7f (%s); %s %s, kappa %s, tol %g, %s updates (delta %g); "
              "seconds: host source to host solution, median of %d after one untimed solve; "
              "krylov s: the iteration alone\n" % (
                  lat(s0["dims"]), s0["plaquette"], s0["gauge"], s0["results"][0]["config"],
                  s0["results"][0]["solver"], s0["results"][0]["kappa"], s0["tol"], s0["mixed"],
                  s0["delta"], s0["reps"]))
        body = []
        for n, s in runs:
            r = s["results"][0]
            body.append([str(n), "x".join(map(str, s["grid"])), r["status"], r["iterations"],
                         "%d + %d" % (r["sloppy_iterations"], r["updates"]),
                         "%.2e" % r["true_residual"], "%.3f" % r["seconds"], "%.3f" % r["solve_seconds"],
                         "%.1f" % (r["gflops"] * s.get("ranks", 1)), "%.2f" % r["setup_seconds"]])
        print(table(["GPUs", "grid", "status", "iter", "k + l", "true residual", "seconds",
                     "krylov s", "Gflops (all GPUs)", "setup s"], body))
        if len(runs) == 2:
            a, b = s1["results"][0], s2["results"][0]
            sp, spk = a["seconds"] / b["seconds"], a["solve_seconds"] / b["solve_seconds"]
            agree = (a["status"] == b["status"] == "ok" and abs(a["iterations"] - b["iterations"]) <= ITER_SLACK
                     and max(a["true_residual"], b["true_residual"]) <= s1["tol"])
            print("\nspeedup 1 -> 2 GPUs: %.2fx per solve, %.2fx Krylov (target >= %.1fx: %s); "
                  "iterations %d vs %d, true residuals %.2e vs %.2e: %s" % (
                      sp, spk, SOLVER_TARGET, "met" if sp >= SOLVER_TARGET else "missed",
                      a["iterations"], b["iterations"], a["true_residual"], b["true_residual"],
                      "the two solves agree" if agree else "DISAGREE (iterations > %d apart, "
                      "or not converged)" % ITER_SLACK))
    else:
        print("(missing: solver-1gpu.json)")

    print("\n## NCCL send/recv exchange alone (2 GPUs, mu = 3)\n")
    sw = (tsp or {}).get("nccl_exchange")
    if sw:
        print(table(["bytes per face", "us", "GB/s out"],
                    [["%d%s" % (e["bytes_per_face"], " (halo face)" if e.get("halo_face") else ""),
                      "%.2f" % e["us"], "%.2f" % e["GBps_out"]]
                     for e in sorted(sw, key=lambda e: e["bytes_per_face"])]))
    else:
        print("(missing: dslash-grid-2gpu.json's nccl_exchange)")


if __name__ == "__main__":
    main()
