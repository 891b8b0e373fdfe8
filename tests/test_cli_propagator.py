"""test_cli_propagator.py WDIRAC [MPIEXEC ARGS...]: `wdirac propagator`.

Without MPIEXEC (one process):
  - free quarks (--unit-gauge, 4x4x4x8, antiperiodic time): the
    pseudoscalar C(t) against the one from the analytic free propagator,
    S(x; 0) = (1/V) sum_p e^{ipx} M(p)^-1 with
    M(p) = (4+m) - sum_mu cos p_mu + i sum_mu g_mu sin p_mu (DeGrand-Rossi,
    p_t = 2 pi (k + 1/2) / T), summed by numpy's FFT: 1e-8 relative;
  - a moved source (--site 1,2,3,5) gives the same C(t) (translation
    invariance of the free field), the JSON, CSV and PNG are written, the
    CSV holds the JSON's numbers, --out's propagator has the documented
    shape and order and sums to the pseudoscalar C(t);
  - --mg (2 levels, 2^4 blocks, 8 null vectors, one setup for the 12
    columns): the same FFT pseudoscalar to 1e-8, every column to tol, the
    JSON's setup record and per-column per-level iterations; the columns
    one at a time (--mg-lock-step 1) against the default lock step: the
    same iterations and C(t) to 1e-12;
  - bad input: a site outside the lattice, an existing output without
    --overwrite, --mg-nvec above an aggregate's dimension: exit 2, nothing
    written.
With MPIEXEC (e.g. `mpiexec --oversubscribe`): a heatbath configuration,
one rank against 2 ranks (--grid 1 1 1 2): the same correlators (1e-10
relative), iterations and propagator file bytes; --mg on 2 ranks: every
meson's C(t) within 1e-8 of one rank's Krylov one, every column to tol.
One line per check; "N of M failed" last; exit 1 on any failure.
"""
import csv
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

RUN = FAILED = 0


def check(what, ok, detail=""):
    global RUN, FAILED
    RUN += 1
    FAILED += not ok
    print(f"{what:<66} {'OK  ' if ok else 'FAIL'} {detail}")


I = 1j
GAMMA = [np.array([[0, 0, 0, I], [0, 0, I, 0], [0, -I, 0, 0], [-I, 0, 0, 0]]),
         np.array([[0, 0, 0, -1], [0, 0, 1, 0], [0, 1, 0, 0], [-1, 0, 0, 0]]),
         np.array([[0, 0, I, 0], [0, 0, 0, -I], [-I, 0, 0, 0], [0, I, 0, 0]]),
         np.array([[0, 0, 1, 0], [0, 0, 0, 1], [1, 0, 0, 0], [0, 1, 0, 0]])]


def free_pseudoscalar(dims, mass):
    """sum_x tr[S S^dag](t) of free Wilson quarks, source at the origin."""
    X, Y, Z, T = dims
    k = [2 * np.pi * np.fft.fftfreq(n) * n / n for n in (T, Z, Y, X)]
    pt = 2 * np.pi * (np.arange(T) + 0.5) / T
    P = np.meshgrid(pt, k[1], k[2], k[3], indexing="ij")     # (t, z, y, x) momenta
    mom = [P[3], P[2], P[1], P[0]]                            # mu = x, y, z, t
    m = (4 + mass - sum(np.cos(p) for p in mom))[..., None, None] * np.eye(4)
    for mu in range(4):
        m = m + 1j * np.sin(mom[mu])[..., None, None] * GAMMA[mu]
    minv = np.linalg.inv(m)
    # S(t, z, y, x) = (1/V) sum_p e^{i p x} minv(p): the antiperiodic half
    # step in p_t only multiplies by a phase e^{i pi t / T}
    s = np.fft.ifftn(minv, axes=(0, 1, 2, 3))
    return 3 * np.einsum("tzyxab->t", np.abs(s) ** 2)


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def main():
    wdirac, mpi = sys.argv[1], sys.argv[2:]
    tmp = tempfile.mkdtemp()
    kappa = 0.12
    mass = 1 / (2 * kappa) - 4
    dims = (4, 4, 4, 8)
    base = [wdirac, "propagator", "--unit-gauge", "--dims", *map(str, dims), "--kappa",
            str(kappa), "--tol", "1e-12", "--backend", "cpu", "--quiet"]
    if not mpi:
        j1, c1, p1, o1 = (os.path.join(tmp, n) for n in ("a.json", "a.csv", "a.png", "a.npy"))
        r = run(base + ["--json", j1, "--csv", c1, "--png", p1, "--out", o1])
        check("free field: runs", r.returncode == 0, r.stderr.strip()[-200:])
        rec = json.load(open(j1))
        got = np.array(rec["mesons"]["pseudoscalar"]["C"])
        want = free_pseudoscalar(dims, mass)
        err = np.max(np.abs(got - want) / want)
        check("free field: pseudoscalar C(t) = the FFT free propagator's", err <= 1e-8,
              f"max rel {err:.1e}")
        check("free field: every column converged to 1e-12",
              all(c["true_residual"] <= 1e-12 for c in rec["columns"]))
        rows = list(csv.DictReader(open(c1)))
        csv_c = np.array([float(row["C_pseudoscalar"]) for row in rows])
        check("CSV holds the JSON's C(t)", np.array_equal(csv_c, got))
        check("PNG written", os.path.getsize(p1) > 1000, f"{os.path.getsize(p1)} bytes")
        prop = np.load(o1)
        ps = np.einsum("tzyxabcd->t", np.abs(prop) ** 2)
        check("--out: (T, Z, Y, X, 4, 3, 4, 3) complex128 whose sum |S|^2 is C_ps(t)",
              prop.shape == (8, 4, 4, 4, 4, 3, 4, 3) and prop.dtype == np.complex128
              and np.max(np.abs(ps - got) / got) <= 1e-12, str(prop.shape))
        # sink before source: column (spin 1, colour 2) solves M x = e_(1,2) at the origin,
        # so its sink (1, 2) entry at the source site is the largest of that column
        col = prop[..., 1, 2]
        peak = np.unravel_index(np.argmax(np.abs(col)), col.shape)
        check("--out: the column of source (1, 2) peaks at the source, sink (1, 2)",
              tuple(peak) == (0, 0, 0, 0, 1, 2), str(peak))
        jc = os.path.join(tmp, "clover.json")
        r = run(base + ["--csw", "1.7", "--json", jc])
        cl = np.array(json.load(open(jc))["mesons"]["pseudoscalar"]["C"]) if r.returncode == 0 \
            else np.zeros_like(got)
        check("free field --csw 1.7: the Wilson C(t) (Fhat = 0 on unit links)",
              r.returncode == 0 and np.max(np.abs(cl - got) / got) <= 1e-10,
              f"max rel {np.max(np.abs(cl - got) / got):.1e} {r.stderr.strip()[-120:]}")
        # the multigrid, tiny: one thread, as a 4x4x4x8 lattice gains nothing from two
        mg = ["--mg", "--mg-block", "2", "--mg-nvec", "8", "--mg-setup-iter", "30"]
        env1 = dict(os.environ, OMP_NUM_THREADS="1")
        jm = os.path.join(tmp, "mg.json")
        r = subprocess.run(base + mg + ["--json", jm], capture_output=True, text=True, env=env1)
        check("free field --mg: runs", r.returncode == 0, r.stderr.strip()[-200:])
        if r.returncode == 0:
            rec = json.load(open(jm))
            cm = np.array(rec["mesons"]["pseudoscalar"]["C"])
            err = np.max(np.abs(cm - want) / want)
            check("free field --mg: pseudoscalar C(t) = the FFT free propagator's", err <= 1e-8,
                  f"max rel {err:.1e}")
            cols = rec["columns"]
            check("free field --mg: every column to 1e-12, per-level iterations",
                  all(c["true_residual"] <= 1e-12 and len(c["mg_iterations"]) == 2
                      and min(c["mg_iterations"]) > 0 for c in cols),
                  f"outer {[c['iterations'] for c in cols]}")
            su = rec["mg"]["setup"]
            check("free field --mg: one setup recorded (seconds, cost, 2x2x2x4 coarse)",
                  rec["solver"] == "mg" and rec["mg"]["nvec"] == [8] and su["seconds"] > 0
                  and su["fine_applies"] > 0 and su["dims"] == [[4, 4, 4, 8], [2, 2, 2, 4]]
                  and abs(rec["seconds_with_setup"] - rec["seconds"] - su["seconds"]) < 1e-9,
                  f"setup {su['seconds']:.3f} s, {su['fine_applies']} fine applications")
            # the 12 columns in lock step (the default) against one at a time
            j1 = os.path.join(tmp, "mg1.json")
            r = subprocess.run(base + mg + ["--mg-lock-step", "1", "--json", j1],
                               capture_output=True, text=True, env=env1)
            ok = r.returncode == 0
            one = json.load(open(j1)) if ok else {}
            ok = ok and one["mg"]["lock_step"] == 1 and rec["mg"]["lock_step"] == 0
            same = ok and [c["iterations"] for c in one["columns"]] == \
                [c["iterations"] for c in cols] and \
                [c["mg_iterations"] for c in one["columns"]] == [c["mg_iterations"] for c in cols]
            c1 = np.array(one["mesons"]["pseudoscalar"]["C"]) if ok else np.zeros_like(cm)
            check("--mg-lock-step 1 (one column at a time): the lock step's iterations and C(t)",
                  same and np.max(np.abs(c1 - cm) / cm) <= 1e-12,
                  f"{r.stderr.strip()[-120:]}")
        jb = os.path.join(tmp, "mgbad.json")
        r = subprocess.run(base + ["--mg", "--mg-block", "2", "--mg-nvec", "97", "--json", jb],
                           capture_output=True, text=True, env=env1)
        check("--mg-nvec 97 (an aggregate holds 2^4 x 6 = 96): exit 2, named, nothing written",
              r.returncode == 2 and "--mg-nvec" in r.stderr and not os.path.exists(jb),
              r.stderr.strip()[-120:])
        j2 = os.path.join(tmp, "b.json")
        r = run(base + ["--site", "1,2,3,5", "--json", j2])
        moved = np.array(json.load(open(j2))["mesons"]["pseudoscalar"]["C"])
        check("free field: a moved source gives the same C(t)",
              r.returncode == 0 and np.max(np.abs(moved - got) / got) <= 1e-9,
              f"max rel {np.max(np.abs(moved - got) / got):.1e}")
        j3 = os.path.join(tmp, "c.json")
        r = run(base + ["--site", "0,0,0,8", "--json", j3])
        check("bad site 0,0,0,8 (T = 8): exit 2, nothing written",
              r.returncode == 2 and not os.path.exists(j3), r.stderr.strip()[-120:])
        r = run(base + ["--json", j1])
        check("existing --json without --overwrite: exit 2", r.returncode == 2,
              r.stderr.strip()[-120:])
    else:
        cfg = os.path.join(tmp, "cfg")
        r = run([wdirac, "gauge", "generate", "--dims", "4", "4", "4", "8", "--beta", "5.8",
                 "--therm", "5", "--sweeps", "1", "--seed", "9", "--format", "nersc",
                 "--out", cfg, "--backend", "cpu"])
        check("gauge generate", r.returncode == 0, r.stderr.strip()[-200:])
        common = ["propagator", "--gauge", cfg, "--kappa", "0.13", "--tol", "1e-11",
                  "--backend", "cpu", "--quiet", "--site", "1,0,2,3"]
        j1, j2 = os.path.join(tmp, "one.json"), os.path.join(tmp, "two.json")
        o1, o2 = os.path.join(tmp, "one.npy"), os.path.join(tmp, "two.npy")
        r1 = run(mpi + ["-n", "1", wdirac] + common + ["--json", j1, "--out", o1])
        r2 = run(mpi + ["-n", "2", wdirac] + common + ["--grid", "1", "1", "1", "2", "--json", j2,
                                                      "--out", o2])
        check("one rank and two ranks run", r1.returncode == 0 and r2.returncode == 0,
              (r1.stderr + r2.stderr).strip()[-200:])
        a, b = json.load(open(j1)), json.load(open(j2))
        worst = 0.0
        for name in a["mesons"]:
            ca, cb = np.array(a["mesons"][name]["C"]), np.array(b["mesons"][name]["C"])
            worst = max(worst, np.max(np.abs(ca - cb)) / np.max(np.abs(ca)))
        check("two ranks: every meson's C(t) = one rank's", worst <= 1e-10, f"max rel {worst:.1e}")
        ia = [c["iterations"] for c in a["columns"]]
        ib = [c["iterations"] for c in b["columns"]]
        check("two ranks: the propagator file byte for byte one rank's",
              open(o1, "rb").read() == open(o2, "rb").read())
        check("two ranks: iterations within 1 of one rank's",
              all(abs(x - y) <= 1 for x, y in zip(ia, ib)), f"{ia} vs {ib}")
        # the clover term on 2 ranks and 1: the same C(t), every column to tol,
        # and a C(t) other than Wilson's (the term acts on this rough field)
        j3, j4 = os.path.join(tmp, "cl1.json"), os.path.join(tmp, "cl2.json")
        r3 = run(mpi + ["-n", "1", wdirac] + common + ["--csw", "1.5", "--json", j3])
        r4 = run(mpi + ["-n", "2", wdirac] + common + ["--csw", "1.5", "--grid", "1", "1", "1",
                                                      "2", "--json", j4])
        ok = r3.returncode == 0 and r4.returncode == 0
        check("clover --csw 1.5: one rank and two ranks run", ok,
              (r3.stderr + r4.stderr).strip()[-200:])
        if ok:
            c, d = json.load(open(j3)), json.load(open(j4))
            cc = np.array(c["mesons"]["pseudoscalar"]["C"])
            cd = np.array(d["mesons"]["pseudoscalar"]["C"])
            cw = np.array(a["mesons"]["pseudoscalar"]["C"])
            check("clover: two ranks' C(t) = one rank's", np.max(np.abs(cc - cd) / cc) <= 1e-10,
                  f"max rel {np.max(np.abs(cc - cd) / cc):.1e}")
            check("clover: every column's true residual <= tol",
                  all(col["true_residual"] <= 1e-11 for col in c["columns"] + d["columns"]))
            check("clover: C(t) differs from the Wilson one", np.max(np.abs(cc - cw) / cw) > 1e-3,
                  f"max rel {np.max(np.abs(cc - cw) / cw):.1e}")
        # --mg on a grid: one setup on 2 ranks, the 12 columns solved by it
        jm = os.path.join(tmp, "mg2.json")
        try:
            r = subprocess.run(mpi + ["-n", "2", wdirac] + common +
                               ["--grid", "1", "1", "1", "2", "--mg", "--mg-block", "2",
                                "--mg-nvec", "8", "--mg-setup-iter", "30", "--json", jm],
                               capture_output=True, text=True, timeout=300)
            ok = r.returncode == 0 and os.path.exists(jm)
            detail = r.stderr.strip()[-160:]
        except subprocess.TimeoutExpired:
            ok, detail = False, "hung (killed after 300 s)"
        check("--mg on 2 ranks: runs", ok, detail)
        if ok:
            m = json.load(open(jm))
            worst = 0.0
            for name in a["mesons"]:
                ca, cm = np.array(a["mesons"][name]["C"]), np.array(m["mesons"][name]["C"])
                worst = max(worst, np.max(np.abs(ca - cm)) / np.max(np.abs(ca)))
            check("--mg on 2 ranks: every meson's C(t) = one rank's Krylov one", worst <= 1e-8,
                  f"max rel {worst:.1e}")
            check("--mg on 2 ranks: every column's true residual <= tol",
                  all(c["true_residual"] <= 1e-11 for c in m["columns"]),
                  f"outer its {[c['iterations'] for c in m['columns']]}")
    print(f"{FAILED} of {RUN} failed")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
