"""`wdirac bench accuracy` end to end on the CPU backend (4^4 lattice).

    test_bench_accuracy.py WDIRAC

Runs the benchmark with --json and checks what a reader of Figure 6 relies
on: every built operator (Wilson, and the symmetric clover operator of the
dslashcl_* kernels) x precision x reconstruction x gauge fixing appears (and only
unbuilt ones are reported as skipped), each Delta(eps) curve is a
complementary distribution (non-increasing, 1 below double rounding for
single and half, 0 exactly above the largest deviation), and the largest
deviations are ordered double << single << half within checkdslash's
per-precision tolerances (tests/checkdslash.c, relative to max |reference|).
Also: --kernels selects by name, bad usage exits 2.  One line per check;
exit 1 on any failure.
"""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np

PREC = {"d": 8, "s": 4, "h": 2}
RECONS = (18, 12, 8)
# checkdslash.c's tolerance() (relative to max |reference|), recon 8 x50,
# and the absolute ceilings the benchmark's reader expects of Mhat.
CHECKDSLASH_TOL = {"d": 2e-14, "s": 1e-6, "h": 3e-4}
CEILING = {"d": 1e-12, "s": 1e-4, "h": 5e-2}

failed = []


def check(name, ok, detail=""):
    print(f"{name}  {'OK' if ok else 'FAIL'}{'  ' + detail if detail and not ok else ''}")
    if not ok:
        failed.append(name)


def run(wdirac, *args):
    return subprocess.run([wdirac, "bench", "accuracy", *args], capture_output=True, text=True)


def built_operators(wdirac):
    """Operator names (dslash_s_r12_gf0) whose one-RHS dag0 xpay0 and xpay1 variants
    are built."""
    names = subprocess.run([wdirac, "list"], capture_output=True, text=True).stdout.split()
    return {n[: -len("_dag0_xpay0_n1")] for n in names
            if n.endswith("_dag0_xpay0_n1") and n.replace("_xpay0_n1", "_xpay1_n1") in names}


def main():
    wdirac = sys.argv[1]
    built = built_operators(wdirac)
    every = {f"{o}_{p}_r{r}_gf{g}" for o in ("dslash", "dslashcl") for p in PREC
             for r in RECONS for g in (0, 1)}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "acc.json")
        p = run(wdirac, "--dims", "4", "4", "4", "4", "--seed", "7", "--json", path)
        print(p.stdout, end="")
        check("exit 0", p.returncode == 0, p.stderr)
        if p.returncode != 0 or not os.path.exists(path):
            return 1
        with open(path) as f:
            js = json.load(f)

        keys = ("benchmark", "backend", "device", "commit", "date", "seed", "dims", "kappa",
                "eps", "results")
        check("top-level keys", all(k in js for k in keys), str(sorted(js)))
        check("header values", js["benchmark"] == "accuracy" and js["backend"] == "cpu"
              and js["seed"] == 7 and js["dims"] == [4, 4, 4, 4] and 0.1 < js["kappa"] < 0.2)
        eps = np.array(js["eps"])
        check("eps: increasing log grid 1e-17 .. 1", len(eps) > 20 and np.all(np.diff(eps) > 0)
              and np.isclose(eps[0], 1e-17) and np.isclose(eps[-1], 1.0)
              and np.allclose(np.diff(np.log10(eps)), 0.25))

        res = {r["variant"]: r for r in js["results"]}
        check("every built operator appears", set(res) == built,
              f"missing {sorted(built - set(res))}, extra {sorted(set(res) - built)}")
        check("unbuilt operators skipped", set(js.get("skipped", [])) == every - built)
        check("at least one operator", len(res) > 0)

        for name, r in sorted(res.items()):
            p_, rc, gf = r["precision"], r["recon"], r["gauge_fix"]
            op = "dslashcl" if r["operator"] == "clover" else "dslash"
            check(f"{name}: axes", name == f"{op}_{p_}_r{rc}_gf{gf}")
            d = np.array(r["delta"])
            check(f"{name}: one Delta per eps", d.shape == eps.shape)
            if d.shape != eps.shape:
                continue
            check(f"{name}: Delta non-increasing in [0, 1]",
                  np.all(np.diff(d) <= 0) and d.min() >= 0 and d.max() <= 1)
            if p_ in ("s", "h"):
                check(f"{name}: Delta(1e-17) = 1", d[0] == 1.0, f"{d[0]}")
            above = eps > r["max_dev"]
            check(f"{name}: Delta = 0 exactly above max_dev, > 0 up to it",
                  np.all(d[above] == 0) and np.all(d[~above] > 0) and above.any(),
                  f"max_dev {r['max_dev']:.3g}")
            check(f"{name}: 0 < median <= max, 0 < rel_l2",
                  0 < r["median_dev"] <= r["max_dev"] and r["rel_l2"] > 0)
            tol = CHECKDSLASH_TOL[p_] * (50 if rc == 8 else 1) * r["max_ref"]
            bound = min(tol, CEILING[p_])
            check(f"{name}: max_dev {r['max_dev']:.2e} <= {bound:.1e}", r["max_dev"] <= bound)

        for op in ("dslash", "dslashcl"):
            for rc in RECONS:
                for gf in (0, 1):
                    m = {p_: res.get(f"{op}_{p_}_r{rc}_gf{gf}", {}).get("max_dev") for p_ in PREC}
                    if m["d"] is not None and m["s"] is not None:
                        check(f"{op} r{rc} gf{gf}: double << single", 1e3 * m["d"] < m["s"])
                    if m["s"] is not None and m["h"] is not None:
                        check(f"{op} r{rc} gf{gf}: single << half", 10 * m["s"] < m["h"])

        sel = os.path.join(tmp, "sel.json")
        p = run(wdirac, "--dims", "4", "4", "4", "4", "--kernels", "dslash_s_*", "--json", sel)
        want = {n for n in built if n.startswith("dslash_s_")}
        got = set()
        if p.returncode == 0:
            with open(sel) as f:
                got = {r["variant"] for r in json.load(f)["results"]}
        check("--kernels selects by name", p.returncode == 0 and got == want)
        check("no operator matches: exit 1",
              run(wdirac, "--dims", "4", "4", "4", "4", "--kernels", "nothing*").returncode == 1)
        check("odd extent: exit 2", run(wdirac, "--dims", "4", "4", "4", "5").returncode == 2)
        check("unknown option: exit 2", run(wdirac, "--bogus").returncode == 2)

    print(f"{len(failed)} checks failed" if failed else "all checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
