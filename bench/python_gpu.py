"""The Python package on the CUDA backend: GPU arrays in and out (DLPack),
and the Python layer's overhead per solve (issue 14).

    python3 bench/python_gpu.py --gauge CFG.nersc --out result.json

Runs on the GPU machine (bench/python-gpu-check builds the extension there).
Checks, each printed OK / FAIL with its figure:
  - a CuPy and a PyTorch source give a solution of the same library on the
    GPU, equal to the numpy solve's within the solve's tolerance, whose true
    residual (measured again with the package's float64 CPU operator,
    Solver.apply) is below tol;
  - bad GPU inputs raise: float64 dtype (TypeError), wrong shape and
    non-contiguous (ValueError), NaN (wdirac.Error naming the site).
Measures (median of --reps solves after one untimed): the wall time of
Solver.solve in Python, the C call's own wall time inside it
(stats.call_seconds), their difference (the overhead) and its share of the
solve, for numpy, CuPy and PyTorch arrays.
"""

import argparse
import json
import statistics
import sys
import time

import numpy as np

import wdirac


def timed(solver, b, reps):
    walls, calls, x, st = [], [], None, None
    solver.solve(b)   # untimed: work fields, tuning
    for _ in range(reps):
        t = time.perf_counter()
        x, st = solver.solve(b)
        walls.append(time.perf_counter() - t)
        calls.append(st.call_seconds)
    over = [w - c for w, c in zip(walls, calls)]
    return x, st, {"wall_s": statistics.median(walls), "call_s": statistics.median(calls),
                   "overhead_s": statistics.median(over),
                   "overhead_share": statistics.median(o / w for o, w in zip(over, walls)),
                   "seconds": st.seconds, "iterations": st.iterations,
                   "true_residual": st.true_residual}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gauge", required=True)
    ap.add_argument("--kappa", type=float, default=0.1555)
    ap.add_argument("--tol", type=float, default=1e-10)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    failed = 0

    def check(what, ok, detail=""):
        nonlocal failed
        failed += not ok
        print(f"{what:<66} {'OK  ' if ok else 'FAIL'} {detail}", flush=True)

    u = wdirac.GaugeField.load(a.gauge)
    s = wdirac.Solver(u, kappa=a.kappa, solver="bicgstab", precision="d", sloppy="h",
                      tol=a.tol, backend="cuda")
    shape = u.spinor_shape
    rng = np.random.default_rng(7)
    b = rng.normal(size=shape) + 1j * rng.normal(size=shape)
    result = {"device": "", "lattice": list(u.dims), "kappa": a.kappa, "tol": a.tol,
              "solver": "bicgstab d-h", "reps": a.reps, "rows": {}}
    x_np, st, row = timed(s, b, a.reps)
    result["rows"]["numpy"] = row
    bnorm = np.linalg.norm(b)
    bs = np.stack([b, rng.normal(size=shape) + 0j, np.zeros(shape, np.complex128)])
    xs_np, sts_np = s.solve(bs)

    def residual(x):
        return np.linalg.norm(s.apply(x) - b) / bnorm

    libs = {}
    try:
        import cupy
        libs["cupy"] = (cupy.asarray, lambda x: cupy.asnumpy(x), cupy.ndarray)
        result["device"] = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    except ImportError as e:
        print(f"no CuPy: {e}")
    try:
        import torch
        libs["torch"] = (lambda h: torch.from_numpy(h).cuda(), lambda x: x.cpu().numpy(),
                         torch.Tensor)
    except ImportError as e:
        print(f"no PyTorch: {e}")
    for name, (to_gpu, to_host, kind) in libs.items():
        bg = to_gpu(b)
        x_g, st_g, row = timed(s, bg, a.reps)
        result["rows"][name] = row
        xh = to_host(x_g)
        check(f"{name}: x is a {kind.__name__} on the GPU", isinstance(x_g, kind))
        dx = np.linalg.norm(xh - x_np) / np.linalg.norm(x_np)
        check(f"{name}: x = the numpy solve's within 10 tol", dx <= 10 * a.tol, f"{dx:.2e}")
        r = residual(xh)
        check(f"{name}: true residual (CPU float64 operator) <= tol", r <= a.tol,
              f"{r:.2e} (stats {st_g.true_residual:.2e}, {st_g.iterations} iterations)")
        for what, bad, exc in (("float64", to_gpu(b.real.copy()), TypeError),
                               ("wrong shape", to_gpu(b[:2].copy()), ValueError),
                               ("non-contiguous", to_gpu(np.concatenate([b, b], axis=-1))[..., ::2],
                                ValueError)):
            try:
                s.solve(bad)
                check(f"{name}: {what} b raises {exc.__name__}", False)
            except exc as e:
                check(f"{name}: {what} b raises {exc.__name__}", True, str(e)[:50])
        xs_g, sts_g = s.solve(to_gpu(bs))
        xs_h = to_host(xs_g)
        ok = isinstance(xs_g, kind) and len(sts_g) == 3 and not xs_h[2].any()
        dxs = max(np.linalg.norm(xs_h[k] - xs_np[k]) / np.linalg.norm(xs_np[k]) for k in range(2))
        check(f"{name}: a batch of 3 (one zero) = the numpy batch within 10 tol",
              ok and dxs <= 10 * a.tol,
              f"{dxs:.2e}, iterations {[st.iterations for st in sts_g]} (numpy "
              f"{[st.iterations for st in sts_np]})")
        bn = b.copy()
        bn[5, 4, 3, 2, 1, 0] = np.nan
        try:
            s.solve(to_gpu(bn))
            check(f"{name}: NaN b raises wdirac.Error naming the site", False)
        except wdirac.Error as e:
            check(f"{name}: NaN b raises wdirac.Error naming the site",
                  "(2, 3, 4, 5)" in e.message, e.message[:70])
    for name, row in result["rows"].items():
        print(f"{name:>6}: wall {row['wall_s']:.4f} s, C call {row['call_s']:.4f} s, overhead "
              f"{1e3 * row['overhead_s']:.3f} ms = {100 * row['overhead_share']:.3f}% "
              f"(solve {row['seconds']:.4f} s, {row['iterations']} iterations, true residual "
              f"{row['true_residual']:.2e})")
    result["failed"] = failed
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"{failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
