"""Tests of bench/paper_report.py on synthetic benchmark results.

    python3 tests/test_paper_report.py [SOURCE_ROOT] [--seed N]

Builds folders of small JSON files with the real schemas of `wdirac bench
dslash`, `bench accuracy` and `bench solver` and random but plausible values
(seeded, the seed printed), runs the script on each and checks:
1. full folder: report.md has the nine sections R1..R9, each with numbers we
   injected (peak Gflops, a max deviation, solver Gflops, iteration counts,
   a speedup), non-converged solves marked *, the six PNGs valid and non-empty,
   report.json with every R# measured;
2. partial folder (the sweep, the double solves and an unreadable
   accuracy.json): R4, R5, R7, R8, R9 say "not measured", the others do not;
3. empty folder: the report is still written, all nine not measured.
Exits 77 (skipped) without numpy or matplotlib.
"""

import json
import os
import random
import re
import subprocess
import sys
import tempfile

try:
    import matplotlib.image
    import numpy
except ImportError:
    print("numpy or matplotlib missing: skipped")
    sys.exit(77)

args = sys.argv[1:]
SEED = random.randrange(1 << 30)
if "--seed" in args:
    SEED = int(args.pop(args.index("--seed") + 1))
    args.remove("--seed")
ROOT = os.path.abspath(args[0] if args else os.path.dirname(os.path.dirname(__file__)))
SCRIPT = os.path.join(ROOT, "bench", "paper_report.py")
print(f"seed {SEED}")
rng = random.Random(SEED)

HEAD = {"backend": "cuda", "device": "Synthetic GPU X1", "threads": 4, "commit": "0123456789ab",
        "date": "2030-01-02T03:04:05Z", "seed": 1}
PNGS = ["r1-dslash-single.png", "r2-dslash-double.png", "r3-dslash-half.png", "r4-accuracy.png",
        "r6-iterations.png", "r9-time.png"]
failures = []


def cell(value):
    """a Markdown table cell, so that a number is not found inside another"""
    return f"| {value} |"


def check(ok, what, detail=""):
    print(f"{what:<70} {'OK' if ok else 'FAIL'}{'  ' + detail if detail else ''}")
    if not ok:
        failures.append(what)


# ---------------------------------------------------------------- synthetic inputs

def dslash_run(lattices, pads):
    """`wdirac bench dslash --json`: every variant on every lattice and pad;
    Gflops are whole numbers so the report's %.0f shows them exactly."""
    copy = 3000.0
    results = []
    for dims in lattices:
        for prec in (8, 4, 2):
            for recon in (18, 12, 8):
                for gf in (0, 1):
                    for dag, xpay in ((0, 0), (1, 1)):
                        for pad in pads:
                            gflops = float(round({8: 2000, 4: 4000, 2: 7000}[prec] * (18 / recon) ** 0.5
                                                 * (1.1 if gf else 1) * rng.uniform(0.9, 1.1)))
                            half_sites = dims[0] * dims[1] * dims[2] * dims[3] / 2
                            links = (6 if gf else 8) * recon * prec
                            bytes_site = links + 2 * (24 * prec + (4 if prec == 2 else 0))
                            gbps = gflops / 1320 * bytes_site
                            results.append({
                                "variant": f"dslash_{'dsh'[(8, 4, 2).index(prec)]}_r{recon}_gf{gf}"
                                           f"_dag{dag}_xpay{xpay}",
                                "precision": prec, "recon": recon, "gauge_fix": gf, "dagger": dag,
                                "xpay": xpay, "dims": list(dims), "pad": pad, "block": 128,
                                "us_per_call": half_sites * 1320 / gflops * 1e-3,
                                "us_per_site": 1320 / gflops * 1e-3, "gflops": gflops,
                                "GBps": gbps, "fraction_of_copy": gbps / copy})
    return {"benchmark": "dslash", **HEAD, "build_id": "feedfacefeedface", "reps": 20,
            "copy_GBps": copy, "flops_per_site": 1320.0, "results": results}


def accuracy_run():
    eps = [10.0 ** (e / 2) for e in range(-34, -1)]
    ulp = {"d": 2.0 ** -52, "s": 2.0 ** -23, "h": 1 / 32767}
    results = []
    for p in "dsh":
        for recon in (18, 12, 8):
            for gf in (0, 1):
                max_dev = float(f"{ulp[p] * 30 * {18: 1, 12: 1.2, 8: 40}[recon] * rng.uniform(1, 3):.2e}")
                median = max_dev / 8
                delta = [1.0 if e < median / 10 else 0.0 if e >= max_dev else
                         (numpy.log(max_dev) - numpy.log(e)) / (numpy.log(max_dev) - numpy.log(median / 10))
                         for e in eps]
                results.append({"precision": p, "recon": recon, "gauge_fix": gf,
                                "variant": f"dslash_{p}_r{recon}_gf{gf}", "delta": [float(d) for d in delta],
                                "max_dev": max_dev, "median_dev": median, "rel_l2": max_dev / 20,
                                "max_ref": 8.0})
    return {"benchmark": "accuracy", **HEAD, "dims": [8, 8, 8, 8], "kappa": 0.12, "mass": 0.1667,
            "tbc": -1, "n_dof": 12 * 8 ** 4 // 2, "gauge": "Haar-random SU(3)",
            "source": "re, im uniform in [0, 1)", "eps": eps, "results": results, "skipped": []}


def level(name):
    p = {"d": 8, "s": 4, "h": 2}[name[0]]
    recon = int(name[1:].rstrip("g") or 12)
    return {"precision": p, "recon": recon, "gauge_fix": int(name.endswith("g"))}


def solver_row(solver, config, kappa, iterations, status="ok", seconds=1.0, gflops=1000.0):
    outer, _, sloppy = config.partition("-")
    return {"solver": solver, "config": config, "outer": level(outer), "sloppy": level(sloppy or outer),
            "kappa": kappa, "mass": 1 / (2 * kappa) - 4, "status": status, "iterations": iterations,
            "sloppy_iterations": iterations - 10, "updates": 10, "true_residual": 8e-13,
            "seconds": seconds, "solve_seconds": 0.8 * seconds, "gflops": gflops,
            "flops": gflops * 1e9 * seconds, "bytes_allocated": 1 << 30}


def solver_run(results, mixed="reliable", delta=0.1, tol_inner=0.1):
    return {"benchmark": "solver", **HEAD, "dims": [24, 24, 24, 64],
            "gauge": "heatbath beta 6, 40 sweeps from a hot start, seed 1", "plaquette": 0.5937,
            "tbc": -1, "tol": 1e-12, "mixed": mixed, "delta": delta, "tol_inner": tol_inner, "reps": 1,
            "results": results}


KAPPAS = [0.150, 0.153, 0.155, 0.156, 0.1565]
KAPPA_C = 0.1572


def double_iterations():
    """{kappa: (cg, bicgstab)} growing like 1/(m - m_c)"""
    mc = 1 / (2 * KAPPA_C) - 4
    out = {}
    for k in KAPPAS:
        cg = int(30 / (1 / (2 * k) - 4 - mc) * rng.uniform(0.95, 1.05))
        out[k] = (cg, int(cg / rng.uniform(2.8, 3.4)))
    return out


def write(folder, name, obj):
    with open(os.path.join(folder, name), "w") as f:
        json.dump(obj, f, indent=1)


def full_folder(folder):
    """Every input; returns what the checks look for."""
    want = {}
    sweep = dslash_run([(24, 24, 24, t) for t in range(8, 129, 8)], (0, 32))
    write(folder, "dslash-sweep.json", sweep)
    plain = [r for r in sweep["results"] if not r["dagger"]]
    for sec, prec in (("R1", 4), ("R2", 8), ("R3", 2)):
        want.setdefault(sec, []).append(cell(f"{max(r['gflops'] for r in plain if r['precision'] == prec):.0f}"))
    fixed = dslash_run([(24, 24, 24, 64), (32, 32, 32, 64)], (0, 32))
    write(folder, "dslash-fixed.json", fixed)
    acc = accuracy_run()
    write(folder, "accuracy.json", acc)
    want["R4"] = [cell(f"{r['max_dev']:.2e}") for r in acc["results"] if r["variant"] == "dslash_s_r8_gf1"]

    t2 = []
    want["R5"] = []
    for cfg in ("h12g", "s8g", "s12g", "d12g"):
        for solver in ("cg", "bicgstab"):
            g = [float(rng.randrange(500, 9000)) for _ in KAPPAS[:3]]
            t2 += [solver_row(solver, cfg, k, 100, "solver reached its iteration limit" if cfg[0] == "h"
                              else "ok", gflops=x) for k, x in zip(KAPPAS[:3], g)]
            want["R5"].append(cell(f"{sorted(g)[1]:.0f}"))
        lv = level(cfg)
        kernel = [r["gflops"] for r in fixed["results"] if r["dims"] == [24, 24, 24, 64] and r["pad"] == 0
                  and not r["dagger"] and [r[k] for k in ("precision", "recon", "gauge_fix")] == list(lv.values())]
        want["R5"].append(cell(f"{max(kernel):.0f}"))
    write(folder, "solver-table2.json", solver_run(t2))

    base = double_iterations()
    dsec = {k: base[k][1] * 0.01 for k in KAPPAS}
    write(folder, "solver-double.json", solver_run(
        [solver_row(s, "d", k, base[k][i], seconds=dsec[k] if s == "bicgstab" else 0.03 * base[k][0],
                    gflops=1900.0) for k in KAPPAS for i, s in enumerate(("cg", "bicgstab"))], mixed="none"))
    want["R6"] = [cell(base[KAPPAS[-1]][1]), cell(base[KAPPAS[0]][0])]

    lightest = KAPPAS[-1]
    defect = {0.1: ["d-h12g"], 0.01: ["d-h12g"], 1e-3: ["d-s8g"], 1e-4: ["d-s8g"],
              1e-5: ["d-s8g", "d-s12g"], 1e-6: ["d-s12g"]}
    want["R7"] = []
    for eps, cfgs in defect.items():
        rows = []
        for cfg in cfgs:
            for k in KAPPAS:
                it = int(base[k][1] * rng.uniform(1.0, 1.4))
                failed = cfg == "d-h12g" and k == lightest
                rows.append(solver_row("bicgstab", cfg, k, 10000 if failed else it,
                                       "solver reached its iteration limit" if failed else "ok"))
        write(folder, f"solver-defect-{eps:g}.json", solver_run(rows, mixed="defect", tol_inner=eps))
        if cfgs == ["d-s8g"] and eps == 1e-4:
            want["R7"].append(cell(rows[0]["iterations"]))
    reliable = {0.1: ["d-h12g", "d-s8g"], 0.01: ["d-h12g", "d-s8g", "d-s12g"],
                1e-3: ["d-h12g", "d-s8g", "d-s12g"]}
    want["R8"], want["R9"] = [], []
    for delta, cfgs in reliable.items():
        rows = []
        for cfg in cfgs:
            for k in KAPPAS:
                it = int(base[k][1] * rng.uniform(1.0, 1.2))
                failed = delta == 1e-3 and cfg == "d-h12g" and k == lightest
                sec = round(dsec[k] / rng.uniform(1.5, 3.5), 4)
                rows.append(solver_row("bicgstab", cfg, k, it, "solver stagnated" if failed else "ok",
                                       seconds=sec))
                if delta == 0.1 and cfg == "d-s8g" and k == KAPPAS[1]:
                    want["R9"].append(cell(f"{dsec[k] / sec:.2f}"))
        write(folder, f"solver-reliable-{delta:g}.json", solver_run(rows, delta=delta))
        if delta == 0.01:
            want["R8"].append(cell(rows[-1]["iterations"]))
    return want


# ---------------------------------------------------------------- checks

def run_script(folder):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", MPLBACKEND="Agg")
    p = subprocess.run([sys.executable, SCRIPT, folder], capture_output=True, text=True, env=env)
    check(p.returncode == 0, f"paper_report.py exits 0 on {os.path.basename(folder)}",
          (p.stdout + p.stderr).strip()[-400:])
    path = os.path.join(folder, "report.md")
    if not os.path.exists(path):
        check(False, "report.md written")
        return {}
    with open(path) as f:
        text = f.read()
    parts = re.split(r"^## (R\d)\. ", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def ours_part(section):
    """the section up to the paper's numbers (both tables have * marks)"""
    return section.split("Paper (")[0]


def valid_png(path):
    if not os.path.exists(path) or os.path.getsize(path) < 1000:
        return False
    with open(path, "rb") as f:
        if f.read(8) != b"\x89PNG\r\n\x1a\n":
            return False
    img = matplotlib.image.imread(path)
    return img.ndim == 3 and img.shape[0] > 100 and img.shape[1] > 100 and float(img.std()) > 0


def test_full(tmp):
    folder = os.path.join(tmp, "full")
    os.mkdir(folder)
    want = full_folder(folder)
    sections = run_script(folder)
    check(sorted(sections) == [f"R{i}" for i in range(1, 10)], "full: nine sections R1..R9",
          str(sorted(sections)))
    for sec, values in sorted(want.items()):
        body = ours_part(sections.get(sec, ""))
        missing = [v for v in values if v not in body]
        check(not missing and "not measured" not in body.lower(),
              f"full: {sec} measured, shows {len(values)} injected values", f"missing {missing}" if missing else "")
    check("*" in ours_part(sections.get("R7", "")), "full: R7 marks the failed half defect solve *")
    check("*" in ours_part(sections.get("R8", "")), "full: R8 marks the stagnated reliable solve *")
    check("GF" in sections.get("R7", ""), "full: R7 reports the gauge fixing it found")
    for png in PNGS:
        check(valid_png(os.path.join(folder, png)), f"full: {png} is a valid non-empty PNG")
    with open(os.path.join(folder, "report.json")) as f:
        rj = json.load(f)
    check(all(rj.get(f"R{i}", {}).get("measured") for i in range(1, 10)), "full: report.json, all R# measured")
    mc = rj.get("R6", {}).get("critical_mass_fit")
    check(mc is not None and abs(mc - (1 / (2 * KAPPA_C) - 4)) < 0.05,
          "full: R6 critical mass fit near the injected one", f"{mc}")
    s8 = rj.get("R9", {}).get("speedup_heavy_to_light", {}).get("Single 8 GF")
    check(s8 is not None and all(1.4 < x < 3.6 for x in s8), "full: R9 Single 8 GF speedups in range",
          f"{s8}")


def test_partial(tmp):
    folder = os.path.join(tmp, "partial")
    os.mkdir(folder)
    write(folder, "dslash-sweep.json", dslash_run([(24, 24, 24, t) for t in (16, 32, 48, 64)], (0,)))
    base = double_iterations()
    write(folder, "solver-double.json", solver_run(
        [solver_row(s, "d", k, base[k][i]) for k in KAPPAS for i, s in enumerate(("cg", "bicgstab"))],
        mixed="none"))
    with open(os.path.join(folder, "accuracy.json"), "w") as f:
        f.write('{"benchmark": "accuracy", "results": [')
    sections = run_script(folder)
    check(len(sections) == 9, "partial: nine sections", str(sorted(sections)))
    for sec in ("R1", "R2", "R3", "R6"):
        check("not measured" not in sections.get(sec, "").lower(), f"partial: {sec} measured")
    for sec in ("R4", "R5", "R7", "R8", "R9"):
        check("not measured in this run" in sections.get(sec, "").lower(), f"partial: {sec} not measured")
    check(os.path.exists(os.path.join(folder, "r1-dslash-single.png"))
          and not os.path.exists(os.path.join(folder, "r4-accuracy.png")), "partial: only measured figures")


def test_empty(tmp):
    folder = os.path.join(tmp, "empty")
    os.mkdir(folder)
    sections = run_script(folder)
    check(len(sections) == 9 and all("not measured in this run" in s.lower() for s in sections.values()),
          "empty: nine sections, all not measured")


with tempfile.TemporaryDirectory() as tmp:
    test_full(tmp)
    test_partial(tmp)
    test_empty(tmp)
print(f"{len(failures)} failed (seed {SEED})" if failures else f"all passed (seed {SEED})")
sys.exit(1 if failures else 0)
