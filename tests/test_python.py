"""test_python.py: the Python package wdirac (issue 14) against numpy.

    PYTHONPATH=<build>/python python3 tests/test_python.py [--seed N]

Checks, on fresh random data:
  - GaugeField.generate: the same seed gives the same field; the plaquette
    of a beta 6.0 field is in (0, 1); save and load (NERSC 64, ILDG 64)
    give back the same array; load of a missing file raises wdirac.Error;
  - Solver.solve: for BiCGstab and CG, pure double and mixed double-single
    and double-half, both time boundaries, the solution checked by a
    Wilson-Dirac operator written here in numpy from DESIGN.md (gammas
    typed from its table, np.roll hops): ||b - M x|| / ||b|| <= tol, and
    equal to the stats' true residual to 1e-3;
  - Solver.apply equals the numpy operator (1e-13), dagger too;
  - many sources: b of shape (N, T, Z, Y, X, 4, 3) gives N solutions, one
    lock-step batch equal bit for bit to one solve each, a zero source x = 0;
  - propagator(): each column the solve of its source, bit for bit;
    meson_correlators(): the pseudoscalar is sum |S|^2 from the source slice;
  - the multigrid, Solver(..., mg={...}) (2 levels, 2^4 blocks, 8 null
    vectors): its setup stats (coarse extents, ||P^dag P - 1||, the coarse
    operator against P^dag A P); a solve within 1e-8 of a BiCGstab solve
    on the same solver, numpy's residual <= tol, the outer and per-level
    iterations reported; two sources in one batch (their outer GCRs in
    lock step) = one solve each, bit for bit, and = lock_step=1's;
    propagator() on one setup, every column M x = b by numpy; a
    block that does not divide raises Error naming it; smoother='ca-gcr'
    reaches the tolerance, an unknown smoother raises ValueError; outer_eo=1
    (the outer GCR on the even-odd system) reaches it too; the null
    vectors saved (mg=dict(save=...)) and loaded into another Solver: x bit
    for bit;
  - errors: complex64, wrong shape, non-contiguous b raise TypeError or
    ValueError; NaN in b raises wdirac.Error naming the site; max_iter 3
    raises wdirac.Error carrying the best x and its stats;
  - progress: the callable is called with growing iteration counts; an
    exception in it reaches the caller;
  - the GIL is released during a solve: a Python thread keeps counting;
  - with --wdirac PROGRAM: the same bits as the program for the same
    inputs (a generated configuration, a point-source solve).
One line per check; "N of M failed" last; exit 1 on any failure.
"""
import os
import sys
import tempfile
import threading
import time

import numpy as np

import wdirac

RUN = FAILED = 0


def check(what, ok, detail=""):
    global RUN, FAILED
    RUN += 1
    FAILED += not ok
    print(f"{what:<66} {'OK  ' if ok else 'FAIL'} {detail}")


# DeGrand-Rossi gamma_1..gamma_4, typed from DESIGN.md's table
I = 1j
GAMMA = [
    np.array([[0, 0, 0, I], [0, 0, I, 0], [0, -I, 0, 0], [-I, 0, 0, 0]]),
    np.array([[0, 0, 0, -1], [0, 0, 1, 0], [0, 1, 0, 0], [-1, 0, 0, 0]]),
    np.array([[0, 0, I, 0], [0, 0, 0, -I], [-I, 0, 0, 0], [0, I, 0, 0]]),
    np.array([[0, 0, 1, 0], [0, 0, 0, 1], [1, 0, 0, 0], [0, 1, 0, 0]]),
]
AXIS = [3, 2, 1, 0]   # array axis of direction mu = x, y, z, t


def wilson(u, x, mass, tbc=-1, dagger=False):
    """M x = (4+m) x - D x / 2 (dagger: D^dag), numpy, whole lattice."""
    one = np.eye(4)
    d = np.zeros_like(x)
    for mu in range(4):
        ax = AXIS[mu]
        s = -1 if dagger else 1
        pf, pb = one - s * GAMMA[mu], one + s * GAMMA[mu]
        xf = np.roll(x, -1, axis=ax)
        xb = np.roll(x, 1, axis=ax)
        if mu == 3:
            xf[-1] *= tbc     # the hop from t = T-1 to t = 0
            xb[0] *= tbc      # the hop from t = 0 to t = T-1
        umu = u[..., mu, :, :]
        ub = np.roll(umu, 1, axis=ax)
        vf = np.einsum("...ab,...sb->...sa", umu, xf)
        vb = np.einsum("...ba,...sb->...sa", ub.conj(), xb)
        d += np.einsum("st,...tc->...sc", pf, vf) + np.einsum("st,...tc->...sc", pb, vb)
    return (4 + mass) * x - 0.5 * d


def clover_term(u, x, csw):
    """c_sw (i/4) sum_{mu != nu} sigma_{mu nu} Fhat_{mu nu} x, numpy (DESIGN.md,
    Clover): Fhat = (Q - Q^dag) / 8, Q the four leaves at n in the (mu, nu)
    plane, all turning the same way (mu before nu)."""
    def sh(f, mu, step):      # f(n + step mu)
        return np.roll(f, -step, axis=AXIS[mu])

    def dag(m):
        return np.conj(np.swapaxes(m, -1, -2))

    out = np.zeros_like(x)
    for mu in range(4):
        for nu in range(4):
            if mu == nu:
                continue
            um, un = u[..., mu, :, :], u[..., nu, :, :]
            leaves = (um @ sh(un, mu, 1) @ dag(sh(um, nu, 1)) @ dag(un)
                      + un @ dag(sh(sh(um, mu, -1), nu, 1)) @ dag(sh(un, mu, -1)) @ sh(um, mu, -1)
                      + dag(sh(um, mu, -1)) @ dag(sh(sh(un, mu, -1), nu, -1))
                      @ sh(sh(um, mu, -1), nu, -1) @ sh(un, nu, -1)
                      + dag(sh(un, nu, -1)) @ sh(um, nu, -1) @ sh(sh(un, nu, -1), mu, 1) @ dag(um))
            f = (leaves - dag(leaves)) / 8
            sigma = 0.5j * (GAMMA[mu] @ GAMMA[nu] - GAMMA[nu] @ GAMMA[mu])
            out += 0.25j * csw * np.einsum("st,...ab,...tb->...sa", sigma, f, x)
    return out


def rel(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


def main():
    seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else int(time.time())
    print(f"test_python: seed {seed} (--seed N replays); variants built: {len(wdirac.variants())}")
    rng = np.random.default_rng(seed)
    dims = (4, 4, 4, 8)
    u = wdirac.GaugeField.generate(dims, beta=6.0, sweeps=3, seed=seed % 1000)
    u2 = wdirac.GaugeField.generate(dims, beta=6.0, sweeps=3, seed=seed % 1000)
    check("generate: same seed, same field", np.array_equal(u.array, u2.array))
    p = u.plaquette()
    check("generate: plaquette of beta 6.0 in (0, 1)", 0 < p < 1, f"{p:.6f}")
    check("generate: array shape (T, Z, Y, X, 4, 3, 3)", u.array.shape == (8, 4, 4, 4, 4, 3, 3))

    with tempfile.TemporaryDirectory() as tmp:
        for fmt in ("nersc", "ildg"):
            path = os.path.join(tmp, "cfg." + fmt)
            u.save(path, format=fmt)
            v = wdirac.GaugeField.load(path)
            check(f"save / load {fmt} 64-bit: the same array", np.array_equal(v.array, u.array))
        try:
            u.save(os.path.join(tmp, "cfg.nersc"))
            check("save over an existing file without overwrite raises Error", False)
        except wdirac.Error as e:
            check("save over an existing file without overwrite raises Error", True, e.status)
        try:
            wdirac.GaugeField.load(os.path.join(tmp, "missing"))
            check("load of a missing file raises Error", False)
        except wdirac.Error as e:
            check("load of a missing file raises Error", "cannot open" in e.message, e.message)

    shape = u.spinor_shape
    b = rng.normal(size=shape) + 1j * rng.normal(size=shape)
    mass = 0.05
    cases = [("bicgstab", "d", "d", 1e-10, -1), ("bicgstab", "d", "s", 1e-10, 1),
             ("cg", "d", "h", 1e-10, -1), ("bicgstab", "s", "s", 1e-6, -1)]
    for solver, prec, sloppy, tol, tbc in cases:
        s = wdirac.Solver(u, mass=mass, solver=solver, precision=prec, sloppy=sloppy, tol=tol,
                          backend="cpu", tbc=tbc)
        x, st = s.solve(b)
        r = rel(wilson(u.array, x, mass, tbc), b)
        check(f"solve {solver} {prec}-{sloppy} tbc {tbc:+d}: numpy residual <= tol",
              r <= tol and abs(r - st.true_residual) <= 1e-3 * r,
              f"it={st.iterations} numpy {r:.2e} stats {st.true_residual:.2e}")

    for form, solver, sloppy in (("symmetric", "bicgstab", "s"), ("asymmetric", "cg", "h")):
        s = wdirac.Solver(u, mass=mass, solver=solver, sloppy=sloppy, backend="cpu", csw=1.5,
                          clover_form=form)
        x, st = s.solve(b)
        r = rel(wilson(u.array, x, mass) + clover_term(u.array, x, 1.5), b)
        check(f"clover solve c_sw 1.5 {form} {solver} d-{sloppy}: numpy M_sw residual <= tol",
              r <= 1e-10 and abs(r - st.true_residual) <= 1e-3 * r,
              f"it={st.iterations} numpy {r:.2e} stats {st.true_residual:.2e}")
    try:
        s.apply(b)
        check("clover: apply raises Error (not offered yet)", False)
    except wdirac.Error as e:
        check("clover: apply raises Error (not offered yet)", "clover" in e.message, e.message)

    s = wdirac.Solver(u, kappa=1 / (2 * (4 + mass)), backend="cpu")
    for dag in (False, True):
        got = s.apply(b, dagger=dag)
        want = wilson(u.array, b, mass, -1, dagger=dag)
        check(f"apply (dagger {dag}) = numpy M", rel(got, want) <= 1e-13, f"{rel(got, want):.1e}")

    bs = np.stack([b, rng.normal(size=shape) + 0j])
    xs, sts = s.solve(bs)
    check("many sources: (2, T, Z, Y, X, 4, 3) gives two solutions",
          xs.shape == bs.shape and all(st.status == "ok" for st in sts)
          and all(rel(wilson(u.array, xs[k], mass), bs[k]) <= 1e-10 for k in range(2)))
    singles = [s.solve(bs[k]) for k in range(2)]
    check("many sources: one batch (wd_solver_solve_many) = one solve each, bit for bit",
          all(np.array_equal(xs[k], singles[k][0]) for k in range(2))
          and [st.iterations for st in sts] == [st.iterations for _, st in singles])
    bz = np.stack([b, np.zeros(shape, np.complex128), bs[1]])
    xz, stz = s.solve(bz)
    check("many sources: a zero source gives x = 0 while the others solve",
          not xz[1].any() and stz[1].status == "ok" and stz[1].iterations == 0
          and np.array_equal(xz[0], xs[0]) and np.array_equal(xz[2], xs[1]))

    for what, bad, exc in (("complex64", b.astype(np.complex64), TypeError),
                           ("wrong shape", b[:4], ValueError),
                           ("non-contiguous", np.asfortranarray(b), ValueError),
                           ("a list", b.tolist(), TypeError)):
        try:
            s.solve(bad)
            check(f"error: {what} b raises {exc.__name__}", False)
        except exc as e:
            check(f"error: {what} b raises {exc.__name__}", True, str(e)[:60])
    # a GPU array (anything saying kDLCUDA through __dlpack_device__) on a
    # CPU-backend solver: refused before anything runs, naming the remedy
    class FakeCudaArray:
        def __dlpack_device__(self):
            return (2, 0)

        def __dlpack__(self, stream=None):
            raise AssertionError("not to be consumed")
    try:
        s.solve(FakeCudaArray())
        check("error: a GPU array on a CPU-backend solver raises ValueError", False)
    except ValueError as e:
        check("error: a GPU array on a CPU-backend solver raises ValueError",
              "backend='cuda'" in str(e), str(e)[:60])
    t_wall = time.perf_counter()
    _, st1 = s.solve(b)
    t_wall = time.perf_counter() - t_wall
    check("call_seconds: the C call's wall time, within the Python call's",
          0 < st1.call_seconds <= t_wall, f"{st1.call_seconds:.4f} s of {t_wall:.4f} s")
    bn = b.copy()
    bn[3, 2, 1, 0, 2, 1] = np.nan
    try:
        s.solve(bn)
        check("error: NaN in b raises wdirac.Error naming the site", False)
    except wdirac.Error as e:
        check("error: NaN in b raises wdirac.Error naming the site",
              "site (0, 1, 2, 3)" in e.message, e.message)
    try:
        s.solve(b, max_iter=3)
        check("error: max_iter 3 raises wdirac.Error with the best x", False)
    except wdirac.Error as e:
        check("error: max_iter 3 raises wdirac.Error with the best x",
              e.x.shape == shape and abs(rel(wilson(u.array, e.x, mass), b)
                                         - e.stats.true_residual) <= 1e-3 * e.stats.true_residual,
              f"{e.status}, true residual {e.stats.true_residual:.2e}")

    # propagator and correlators against the batch of 12 solves and numpy
    prop, pstats = wdirac.propagator(s, "point", (1, 2, 3, 5))
    b12 = np.zeros((12,) + shape, np.complex128)
    for k in range(12):
        b12[k, 5, 3, 2, 1, k // 3, k % 3] = 1
    x12, _ = s.solve(b12)
    same = all(np.array_equal(prop[..., k // 3, k % 3], x12[k]) for k in range(12))
    check("propagator: column (s, c) = the solve of that source, bit for bit",
          same and len(pstats) == 12 and all(p["status"] == "ok" for p in pstats))
    c = wdirac.meson_correlators(prop, t_source=5)
    ps = np.roll(np.einsum("tzyxabcd->t", np.abs(prop) ** 2), -5)
    check("meson_correlators: pseudoscalar = sum |S|^2 from the source slice",
          np.max(np.abs(c["pseudoscalar"] - ps) / ps) <= 1e-12 and len(c) == 4,
          f"{np.max(np.abs(c['pseudoscalar'] - ps) / ps):.1e}")

    mg_checks(u, b, mass, s, rng)

    calls = []
    s.solve(b, progress=lambda it, res: calls.append(it))
    check("progress: called with growing iteration counts",
          len(calls) > 3 and all(a <= c for a, c in zip(calls, calls[1:])), f"{len(calls)} calls")

    def boom(it, res):
        raise ValueError("stop here")
    try:
        s.solve(b, progress=boom)
        check("progress: an exception in it reaches the caller", False)
    except ValueError as e:
        check("progress: an exception in it reaches the caller", str(e) == "stop here")

    # the GIL: a thread counts while a larger solve runs
    big = wdirac.GaugeField.generate((8, 8, 8, 8), beta=6.0, sweeps=1, seed=5)
    sb = wdirac.Solver(big, mass=0.01, backend="cpu", sloppy="d", tol=1e-12)
    bb = np.ones(big.spinor_shape, np.complex128)
    count = [0]
    done = threading.Event()

    def counter():
        while not done.is_set():
            count[0] += 1
    t = threading.Thread(target=counter)
    t.start()
    seen = []   # the counter at each progress call: between the first and the
    # last one the solver runs in C; with the GIL held there, the counter
    # could not move
    _, st = sb.solve(bb, progress=lambda it, res: seen.append(count[0]))
    done.set()
    t.join()
    during = seen[-1] - seen[0] if seen else 0
    check("the GIL is released during a solve (a thread keeps counting)", during > 1000,
          f"{during} counts over {len(seen)} iterations, {st.seconds:.3f} s")

    if "--wdirac" in sys.argv:
        same_as_cli(sys.argv[sys.argv.index("--wdirac") + 1], seed)

    print(f"{FAILED} of {RUN} failed")
    return 1 if FAILED else 0


def mg_checks(u, b, mass, krylov, rng):
    """The multigrid through Solver(mg=...), against BiCGstab and numpy."""
    shape = u.spinor_shape
    smg = wdirac.Solver(u, mass=mass, backend="cpu", tol=1e-11,
                        mg=dict(block=2, nvec=8, setup_max_iter=30, diagnostics=1))
    m = smg.mg_stats
    check("mg: setup stats (coarse 2x2x2x4, P^dag P = 1, D_c = P^dag A P, cost)",
          m.levels == 2 and m.dims == [(4, 4, 4, 8), (2, 2, 2, 4)] and m.seconds > 0
          and 0 < m.diagnostics_seconds < m.seconds
          and m.fine_applies > 0 and m.orth_error[0] < 1e-12 and m.coarse_error[0] < 1e-12
          and 0 < m.setup_residual[0] < 1, str(m)[:200])
    xm, stm = smg.solve(b)
    xb, stb = krylov.solve(b, tol=1e-11)
    r = rel(wilson(u.array, xm, mass), b)
    d = rel(xm, xb)
    check("mg: x within 1e-8 of BiCGstab's, numpy residual <= tol",
          stm.status == "ok" and d <= 1e-8 and r <= 1e-11 and stb.mg_levels == 0,
          f"|x_mg - x_bicgstab| / |x| {d:.1e}, numpy {r:.1e}, outer {stm.iterations} "
          f"vs bicgstab {stb.iterations}")
    check("mg: outer and per-level iterations reported",
          stm.mg_levels == 2 and len(stm.mg_iterations) == 2 and min(stm.mg_iterations) > 0
          and stm.iterations > 0, f"{stm.iterations} outer, per level {stm.mg_iterations}")
    sref = wdirac.Solver(u, mass=mass, backend="cpu", tol=1e-11,
                         mg=dict(block=2, nvec=8, setup_max_iter=30, refine_passes=1,
                                 refine_iter=3))
    mr = sref.mg_stats
    xr, str_ = sref.solve(b)
    r = rel(wilson(u.array, xr, mass), b)
    check("mg: a refinement pass (refine_passes=1): its seconds and residual, x <= tol",
          0 < mr.refine_seconds < mr.seconds and 0 < mr.refine_residual < 1
          and np.isnan(m.refine_residual) and str_.status == "ok" and r <= 1e-11,
          f"{mr.refine_seconds:.3f} of {mr.seconds:.3f} s, residual {mr.refine_residual:.2e}, "
          f"numpy {r:.1e}, outer {str_.iterations} (unrefined {stm.iterations})")
    bs = np.stack([b, rng.normal(size=shape) + 1j * rng.normal(size=shape)])
    xs, sts = smg.solve(bs)
    x1, st1 = smg.solve(bs[1])
    check("mg: two sources in one batch = one solve each, bit for bit",
          np.array_equal(xs[0], xm) and np.array_equal(xs[1], x1)
          and [t.iterations for t in sts] == [stm.iterations, st1.iterations]
          and all(t.mg_iterations for t in sts))
    s1 = wdirac.Solver(u, mass=mass, backend="cpu", tol=1e-11,
                       mg=dict(block=2, nvec=8, setup_max_iter=30, lock_step=1))
    xs1, sts1 = s1.solve(bs)
    check("mg: lock_step=1 (one source at a time) = the lock-step batch, bit for bit",
          np.array_equal(xs1, xs) and [t.iterations for t in sts1] == [t.iterations for t in sts])
    prop, pstats = wdirac.propagator(smg, "point", (1, 2, 3, 5))
    worst = 0.0
    for k in range(12):
        e = np.zeros(shape, np.complex128)
        e[5, 3, 2, 1, k // 3, k % 3] = 1
        worst = max(worst, rel(wilson(u.array, prop[..., k // 3, k % 3], mass), e))
    check("mg: propagator() on one setup, every column M x = b by numpy",
          worst <= 1e-11 and all(p["status"] == "ok" and len(p["mg_iterations"]) == 2
                                 for p in pstats), f"worst numpy residual {worst:.1e}")
    sca = wdirac.Solver(u, mass=mass, backend="cpu", tol=1e-11,
                        mg=dict(block=2, nvec=8, setup_max_iter=30, smoother="ca-gcr",
                                post_smooth=6))
    xc, stc = sca.solve(b)
    check("mg: smoother='ca-gcr' reaches the tolerance, x within 1e-8 of BiCGstab's",
          stc.status == "ok" and rel(wilson(u.array, xc, mass), b) <= 1e-11
          and rel(xc, xb) <= 1e-8, f"{stc.iterations} outer, per level {stc.mg_iterations}")
    seo = wdirac.Solver(u, mass=mass, backend="cpu", tol=1e-11,
                        mg=dict(block=2, nvec=8, setup_max_iter=30, outer_eo=1))
    xe, ste = seo.solve(b)
    check("mg: outer_eo=1 reaches the tolerance, x within 1e-8 of BiCGstab's",
          ste.status == "ok" and rel(wilson(u.array, xe, mass), b) <= 1e-11
          and rel(xe, xb) <= 1e-8, f"{ste.iterations} outer, per level {ste.mg_iterations}")
    try:
        wdirac.Solver(u, mass=mass, backend="cpu", mg=dict(smoother="gmres"))
        check("mg: an unknown smoother raises ValueError naming the choices", False)
    except ValueError as e:
        check("mg: an unknown smoother raises ValueError naming the choices",
              "ca-gcr" in str(e) and "mr" in str(e), str(e))
    try:
        wdirac.Solver(u, mass=mass, backend="cpu", mg=dict(block=(4, 4, 3, 4), nvec=8))
        check("mg: a block that does not divide raises Error naming it", False)
    except wdirac.Error as e:
        check("mg: a block that does not divide raises Error naming it",
              "block 3 in Z" in e.message, e.message)
    # the null vectors to a file and back: the same multigrid, bit for bit
    with tempfile.TemporaryDirectory() as tmp:
        nv = os.path.join(tmp, "mg.nv")
        settings = dict(block=2, nvec=8, setup_max_iter=30)
        xs1, _ = wdirac.Solver(u, mass=mass, backend="cpu", tol=1e-11,
                               mg=dict(settings, save=nv)).solve(b)
        xl, stl = wdirac.Solver(u, mass=mass, backend="cpu", tol=1e-11,
                                mg=dict(settings, load=nv)).solve(b)
        check("mg: save and load give the same x bit for bit",
              stl.status == "ok" and np.array_equal(xs1, xl) and np.array_equal(xs1, xm),
              f"{stl.iterations} outer iterations")


def same_as_cli(program, seed):
    """The bindings against the program on the same inputs: bit for bit."""
    import subprocess
    with tempfile.TemporaryDirectory() as tmp:
        cfg, xf = os.path.join(tmp, "cfg"), os.path.join(tmp, "x.npy")
        s = seed % 1000
        r = subprocess.run([program, "gauge", "generate", "--dims", "4", "4", "4", "8", "--beta",
                            "6.0", "--start", "hot", "--sweeps", "3", "--or", "4", "--seed",
                            str(s), "--format", "nersc", "--out", cfg, "--backend", "cpu"],
                           capture_output=True, text=True)
        u = wdirac.GaugeField.generate((4, 4, 4, 8), beta=6.0, sweeps=3, seed=s, n_or=4)
        v = wdirac.GaugeField.load(cfg) if r.returncode == 0 else None
        check("same bits as `wdirac gauge generate` (hot, 3 sweeps)",
              v is not None and np.array_equal(u.array, v.array), r.stderr.strip()[-100:])
        r = subprocess.run([program, "solve", "--gauge", cfg, "--point", "1,2,3,4,2,1", "--kappa",
                            "0.13", "--tol", "1e-11", "--backend", "cpu", "--quiet", "--out", xf],
                           capture_output=True, text=True)
        b = np.zeros(u.spinor_shape, np.complex128)
        b[4, 3, 2, 1, 2, 1] = 1
        x, _ = wdirac.Solver(u, kappa=0.13, tol=1e-11, backend="cpu").solve(b)
        check("same bits as `wdirac solve --point` (default solver)",
              r.returncode == 0 and np.array_equal(np.load(xf), x), r.stderr.strip()[-100:])


if __name__ == "__main__":
    sys.exit(main())
