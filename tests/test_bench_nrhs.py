"""`wdirac bench dslash --nrhs` and `wdirac bench solver --nrhs` end to end on
the CPU backend (4^3x8 lattice).

    test_bench_nrhs.py WDIRAC [PLOT_NRHS_PY]
    test_bench_nrhs.py WDIRAC --mpiexec MPIEXEC [ARGS...]   (the grid checks alone)

Dslash: every built one-RHS Wilson variant the glob selects gets one row per
N of the list (1 added, duplicates dropped), with positive finite times,
Gflops, GB/s and speedup; the kernel calls the group made are the largest
built multi-RHS kernels first, as many groups of one as fit in one launch
(from `wdirac list`: 12 = 4*3, 7 = 4+2+1 with _n4 and _n2, 1x7 where no
multi-RHS kernel is built, 12 = t12 with the thread form _t12); where
kernels of several forms (_n<N>, _t<N>, _sh<N>) are built for a variant,
one more row for each form's plan alone that runs a kernel of the form and
differs (JSON "forms": any, registers, threads, shared); the bytes per
site and
right-hand side follow the multi-RHS model (spinors in + out once per
right-hand side, links once per kernel call, over N).  Solver: 13 sources
(one lock-step group of 12 and one of 1) as a batch and one by one: every
source converges to tol in both, the iterations agree within 2.  Bad
--nrhs values exit 2 naming the option; without --nrhs the dslash JSON is
the plain one.  The mg configuration (the multigrid, tiny settings) beside
BiCGstab rows of the same run, one table: every row converges to tol, an mg
row gives its setup apart from its solve (and their sum), the outer and
per-level iterations and the setup's record; an --mg-* option without the
mg configuration exits 2 naming it.  With PLOT_NRHS_PY, bench/plot_nrhs.py draws the --nrhs JSON
(skipped without matplotlib).  With --mpiexec, --nrhs on a process grid
of 2 ranks (grid_checks).  One line per check; exit 1 on any failure.
"""

import fnmatch
import json
import math
import os
import subprocess
import sys
import tempfile

failed = []
DIMS = ["--dims", "4", "4", "4", "8"]
GLOB = "dslash_[ds]_r1[28]_gf0_dag0_xpay[01]_n1"
NLIST = [1, 2, 4, 7, 12]
TOL = 1e-9


def check(name, ok, detail=""):
    print(f"{name}  {'OK' if ok else 'FAIL'}{'  ' + detail if detail and not ok else ''}")
    if not ok:
        failed.append(name)


def run(wdirac, *args):
    return subprocess.run([wdirac, *args], capture_output=True, text=True)


def positive(x):
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


FORM_TOKENS = {"any": ("n", "t", "sh"), "registers": ("n",), "threads": ("t",),
               "shared": ("sh",)}


def kernel_of(built, one_rhs, k, forms):
    """The form token of the kernel of k right-hand sides wd_dslash_group
    takes (the register form first: manifest order), None if none is built."""
    base = one_rhs[: -len("_n1")]
    return next((f for f in forms if f"{base}_{f}{k}" in built), None)


def expected_plan(built, one_rhs, n, forms="any"):
    """The calls wd_dslash_group makes, as (kernel count, right-hand sides
    covered, form token): the largest built count k that fits first, as
    many groups of k as fit in one launch, one-RHS calls one at a time."""
    calls, q = [], 0
    while q < n:
        k = n - q
        while k > 1 and kernel_of(built, one_rhs, k, FORM_TOKENS[forms]) is None:
            k -= 1
        m = (n - q) // k * k if k > 1 else 1
        calls.append((k, m, kernel_of(built, one_rhs, k, FORM_TOKENS[forms]) if k > 1 else "n"))
        q += m
    return calls


def expected_rows(built, one_rhs, n):
    """{forms: calls} of the rows for (one_rhs, n): the plan a solver gets,
    and where several forms are built for the variant each form's plan that
    runs a kernel of the form and differs from those before it."""
    several = sum(any(kernel_of(built, one_rhs, k, (f,)) for k in range(2, 65))
                  for f in ("n", "t", "sh")) > 1
    rows = {"any": expected_plan(built, one_rhs, n)}
    for forms in (("registers", "threads", "shared") if several else ()):
        calls = expected_plan(built, one_rhs, n, forms)
        if (any(k > 1 and f == FORM_TOKENS[forms][0] for k, _, f in calls)
                and calls not in rows.values()):
            rows[forms] = calls
    return rows


def plan_name(calls):
    """The benchmark's spelling: 4*3 (one _n4 launch over 3 groups), 4+2+1,
    1x12 (a run of one-RHS calls), t12 (one _t12 launch), t12*2."""
    out, c = [], 0
    while c < len(calls):
        k, m, f = calls[c]
        t = f if k > 1 and f != "n" else ""
        run = 1
        while k == 1 and c + run < len(calls) and calls[c + run][0] == 1:
            run += 1
        if run > 1:
            out.append(f"1x{run}")
        elif m > k:
            out.append(f"{t}{k}*{m // k}")
        else:
            out.append(f"{t}{k}")
        c += run
    return "+".join(out)


def bytes_per_site_rhs(row, calls, n):
    p = row["precision"]
    spinor = 24 * p + (4 if p == 2 else 0)
    links = (6 if row["gauge_fix"] else 8) * row["recon"] * p
    return (spinor * (2 + row["xpay"]) * n + links * len(calls)) / n


def dslash_checks(wdirac, tmp, plot):
    built = set(run(wdirac, "list").stdout.split())
    selected = sorted(v for v in built if fnmatch.fnmatchcase(v, GLOB))
    check(f"built variants matching {GLOB}", len(selected) > 0, "none built")
    path = os.path.join(tmp, "dslash-nrhs.json")
    p = run(wdirac, "bench", "dslash", "--backend", "cpu", *DIMS, "--kernels", GLOB,
            "--nrhs", "12,2,7,4,2", "--reps", "3", "--seed", "5", "--json", path)
    check("bench dslash --nrhs 12,2,7,4,2 exits 0", p.returncode == 0,
          f"exit {p.returncode}: {p.stderr}")
    if p.returncode != 0:
        return
    js = json.load(open(path))
    check("... JSON: benchmark dslash-nrhs, the list sorted with 1, copy bandwidth",
          js["benchmark"] == "dslash-nrhs" and js["nrhs_list"] == NLIST
          and positive(js["copy_GBps"]), str({k: js.get(k) for k in ("benchmark", "nrhs_list")}))
    rows = js["results"]
    keys = sorted((r["variant"], r["nrhs"], r["forms"]) for r in rows)
    check("... one row per (variant, N) and form plan",
          keys == sorted((v, n, f) for v in selected for n in NLIST
                         for f in expected_rows(built, v, n)), f"{keys}")
    for r in rows:
        name = f"... {r['variant']} N={r['nrhs']} ({r['forms']})"
        n = r["nrhs"]
        calls = expected_plan(built, r["variant"], n, r["forms"])
        ok = all(positive(r[k]) for k in ("us_per_call", "us_per_rhs", "us_wall_per_call",
                                           "gflops", "GBps", "fraction_of_copy",
                                           "speedup_per_rhs", "bytes_per_site_per_rhs",
                                           "bytes_per_rhs"))
        ok = ok and abs(r["us_per_rhs"] * n - r["us_per_call"]) <= 1e-9 * r["us_per_call"]
        check(f"{name}: finite positive times, Gflops, GB/s, speedup", ok, json.dumps(r))
        check(f"{name}: kernels {r['kernels']}, {r['kernel_calls']} calls",
              r["kernels"] == plan_name(calls) and r["kernel_calls"] == len(calls),
              f"expected {plan_name(calls)}")
        want = bytes_per_site_rhs(r, calls, n)
        check(f"{name}: {r['bytes_per_site_per_rhs']:.1f} bytes per site and RHS",
              abs(r["bytes_per_site_per_rhs"] - want) <= 1e-9 * want, f"expected {want}")
        if n == 1:
            check(f"{name}: speedup 1 (the baseline)", r["speedup_per_rhs"] == 1.0,
                  str(r["speedup_per_rhs"]))
    if plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print("plot_nrhs.py  SKIP (no matplotlib)")
            return
        png = os.path.join(tmp, "nrhs.png")
        q = subprocess.run([sys.executable, plot, path, "--out", png], capture_output=True,
                           text=True)
        check("bench/plot_nrhs.py draws the --nrhs JSON",
              q.returncode == 0 and os.path.getsize(png) > 0, q.stderr)


def solver_checks(wdirac, tmp):
    path = os.path.join(tmp, "solver-nrhs.json")
    n = 13
    p = run(wdirac, "bench", "solver", "--backend", "cpu", *DIMS, "--sweeps", "5",
            "--kappas", "0.12", "--configs", "d,d-s", "--solvers", "cg,bicgstab", "--tol",
            str(TOL), "--nrhs", str(n), "--seed", "3", "--json", path)
    check(f"bench solver --nrhs {n} exits 0", p.returncode == 0,
          f"exit {p.returncode}: {p.stdout[-2000:]} {p.stderr}")
    if p.returncode != 0:
        return
    js = json.load(open(path))
    rows = js["results"]
    check("... JSON: nrhs, one row per (config, solver)",
          js.get("nrhs") == n and sorted((r["config"], r["solver"]) for r in rows)
          == sorted((c, s) for c in ("d", "d-s") for s in ("cg", "bicgstab")), str(len(rows)))
    for r in rows:
        name = f"... {r['solver']} {r['config']}"
        check(f"{name}: N fields and finite positive seconds",
              r["nrhs"] == n and len(r["per_rhs"]) == n
              and all(positive(r[k]) for k in ("batch_seconds", "seconds_per_rhs",
                                                 "single_seconds", "single_seconds_per_rhs",
                                                 "speedup")), json.dumps(r)[:400])
        per = r["per_rhs"]
        check(f"{name}: every source converged, batch and single (max {r['true_residual_max']:.2e})",
              r["status"] == "ok" and r["single_status"] == "ok"
              and all(q["status"] == "ok" and q["single_status"] == "ok" for q in per)
              and all(0 < q["true_residual"] <= TOL and 0 < q["single_true_residual"] <= TOL
                      for q in per), json.dumps(per)[:400])
        diff = max(abs(q["iterations"] - q["single_iterations"]) for q in per)
        check(f"{name}: batch iterations equal the singles' within 2 (max difference {diff})",
              diff <= 2 and r["iterations_max_difference"] == diff
              and all(q["iterations"] > 0 for q in per), json.dumps(per)[:400])


def mg_checks(wdirac, tmp):
    path = os.path.join(tmp, "solver-mg.json")
    mg = ["--mg-block", "2", "--mg-nvec", "8", "--mg-setup-iter", "30"]
    p = run(wdirac, "bench", "solver", "--backend", "cpu", *DIMS, "--sweeps", "5",
            "--kappas", "0.12,0.13", "--configs", "d-s,mg,mg-h", "--solvers", "bicgstab", "--tol",
            str(TOL), "--seed", "4", *mg, "--json", path)
    check("bench solver --configs d-s,mg,mg-h exits 0", p.returncode == 0,
          f"exit {p.returncode}: {p.stdout[-2000:]} {p.stderr}")
    if p.returncode != 0:
        return
    lines = p.stdout.splitlines()
    head = [k for k, line in enumerate(lines) if line.startswith("solver ")]
    body = [line.split()[:2] for line in lines[head[0] + 1:] if line.strip()] if head else []
    check("... one table: bicgstab d-s, mg and mg-h rows under one header",
          len(head) == 1 and lines[head[0]].split()[-1] == "mg_setup"
          and body.count(["bicgstab", "d-s"]) == 2 and body.count(["mg", "mg"]) == 2
          and body.count(["mg", "mg-h"]) == 2,
          "\n".join(lines[head[0]:head[0] + 12]) if head else p.stdout[-800:])
    rows = json.load(open(path))["results"]
    check("... JSON: 2 bicgstab and 4 mg rows, each converged; mg's preconditioner in single, "
          "mg-h's in half, the outer GCR in double",
          sorted(r["solver"] for r in rows) == ["bicgstab"] * 2 + ["mg"] * 4
          and all(r["status"] == "ok" and 0 < r["true_residual"] <= TOL for r in rows)
          and all(r["outer"]["precision"] == 8
                  and r["sloppy"]["precision"] == (2 if r["config"] == "mg-h" else 4)
                  for r in rows if r["solver"] == "mg"),
          json.dumps(rows)[:400])
    for r in (r for r in rows if r["solver"] == "mg"):
        su = r.get("mg_setup", {})
        check(f"... mg kappa {r['kappa']}: setup apart from solve, outer and per-level iterations",
              positive(r["mg_setup_seconds"]) and positive(r["seconds"])
              and abs(r["seconds_with_setup"] - r["seconds"] - r["mg_setup_seconds"]) < 1e-9
              and r["outer_iterations"] == r["iterations"] > 0 and r["mg_levels"] == 2
              and len(r["mg_iterations"]) == 2 and min(r["mg_iterations"]) > 0
              and su.get("dims") == [[4, 4, 4, 8], [2, 2, 2, 4]]
              and su.get("seconds") == r["mg_setup_seconds"] and positive(r["mg_fine_applies"]),
              json.dumps(r)[:600])
    p = run(wdirac, "bench", "solver", "--backend", "cpu", *DIMS, "--configs", "d",
            "--mg-nvec", "4")
    check("bench solver --mg-nvec without the mg configuration: exit 2 naming it",
          p.returncode == 2 and "--mg-nvec" in p.stderr, f"exit {p.returncode}: {p.stderr}")


def usage_checks(wdirac):
    for args in (["dslash", "--nrhs", "0"], ["dslash", "--nrhs", "abc"],
                 ["dslash", "--nrhs", "65"], ["dslash", "--nrhs", "2,,4"],
                 ["dslash", "--nrhs"], ["dslash", "--nrhs", "2", "--paper-sweep"],
                 ["solver", "--nrhs", "0"], ["solver", "--nrhs", "abc"],
                 ["solver", "--nrhs", "257"], ["solver", "--nrhs", "4x"]):
        p = run(wdirac, "bench", *args, "--backend", "cpu", *DIMS)
        check(f"bench {' '.join(args)}: exit 2 naming --nrhs",
              p.returncode == 2 and "--nrhs" in p.stderr, f"exit {p.returncode}: {p.stderr}")


def plain_check(wdirac, tmp):
    path = os.path.join(tmp, "dslash.json")
    p = run(wdirac, "bench", "dslash", "--backend", "cpu", *DIMS, "--kernels",
            "dslash_s_r12_gf0_dag0_xpay0_n*", "--reps", "2", "--json", path)
    ok = p.returncode == 0
    if ok:
        js = json.load(open(path))
        ok = js["benchmark"] == "dslash" and all("kernels" not in r for r in js["results"])
    check("bench dslash without --nrhs: the plain rows", ok, p.stderr)


def grid_checks(wdirac, tmp, mpiexec):
    """--nrhs on 2 ranks, grid 1x1x1x2 of a 4^3x16 lattice (blocks 4^3x8),
    CPU backend, and again with X exchanged by each rank with itself
    (--wrap-halo X): one row per (variant, N) with the grid, blocks,
    ranks, the plan of one process and the halo bytes of N right-hand
    sides' faces."""
    built = set(run(wdirac, "list").stdout.split())
    selected = sorted(v for v in built if fnmatch.fnmatchcase(v, GLOB))
    # face sites of one parity: T 4^3 / 2, X (wrapped) 4^2 x 8 / 2
    for wrap, face_cb in (([], 32), (["--wrap-halo", "X"], 32 + 64)):
        path = os.path.join(tmp, "dslash-nrhs-grid.json")
        p = subprocess.run([*mpiexec, "-n", "2", wdirac, "bench", "dslash", "--backend", "cpu",
                            "--grid", "1", "1", "1", "2", "--dims", "4", "4", "4", "16", *wrap,
                            "--kernels", GLOB, "--nrhs", "12,4", "--reps", "2", "--json", path],
                           capture_output=True, text=True)
        what = f"mpiexec -n 2 bench dslash --grid 1 1 1 2 {' '.join(wrap)} --nrhs 12,4"
        check(f"{what} exits 0", p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
        if p.returncode != 0:
            continue
        js = json.load(open(path))
        rows = js["results"]
        keys = sorted((r["variant"], r["nrhs"], r["forms"]) for r in rows)
        check("... ranks 2, one row per (variant, N) and form plan", js["ranks"] == 2 and
              keys == sorted((v, n, f) for v in selected for n in (1, 4, 12)
                             for f in expected_rows(built, v, n)), f"{keys}")
        for r in rows:
            n = r["nrhs"]
            name = f"... {r['variant']} N={n} ({r['forms']})"
            calls = expected_plan(built, r["variant"], n, r["forms"])
            spinor = 24 * r["precision"] + (4 if r["precision"] == 2 else 0)
            # two faces per exchanged dimension, every right-hand side's
            halo = n * 2 * face_cb * spinor
            ok = (r["grid"] == [1, 1, 1, 2] and r["local"] == [4, 4, 4, 8] and r["ranks"] == 2
                  and r["dims"] == [4, 4, 4, 16] and r["kernels"] == plan_name(calls)
                  and r["halo_bytes_sent_per_rank"] == halo
                  and all(positive(r[k]) for k in ("us_per_call", "gflops", "GBps")))
            check(f"{name}: grid, blocks, kernels {r['kernels']}, {halo} halo bytes", ok,
                  json.dumps(r))


def main():
    wdirac = sys.argv[1]
    if len(sys.argv) > 2 and sys.argv[2] == "--mpiexec":
        with tempfile.TemporaryDirectory() as tmp:
            grid_checks(wdirac, tmp, sys.argv[3:])
        print(f"{len(failed)} check{'s' if len(failed) != 1 else ''} failed")
        sys.exit(1 if failed else 0)
    plot = sys.argv[2] if len(sys.argv) > 2 else None
    with tempfile.TemporaryDirectory() as tmp:
        dslash_checks(wdirac, tmp, plot)
        solver_checks(wdirac, tmp)
        mg_checks(wdirac, tmp)
        usage_checks(wdirac)
        plain_check(wdirac, tmp)
    print(f"{len(failed)} check{'s' if len(failed) != 1 else ''} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
