"""pion.py: from nothing to a pion mass with wdirac in Python.

    python3 examples/pion.py [--dims X Y Z T] [--kappa K] [--out DIR] [--cupy]

1. generate a quenched configuration (beta 5.8, hot start, heatbath);
2. solve M x = b for the 12 point sources (4 spins x 3 colours) at the
   origin: the point-to-all propagator S(x; 0);
3. the pion two-point function, by gamma5-hermiticity
   C(t) = sum_x tr[S(x,t; 0)^dagger S(x,t; 0)] = sum over everything of |S|^2;
4. the cosh effective mass per time slice, solving
   C(t) / C(t+1) = cosh(m (t - T/2)) / cosh(m (t + 1 - T/2)) for m;
5. a fit of the plateau and a plot of C(t) and m_eff(t) (matplotlib).
Prints the table and writes pion.png and pion.json under --out.
--cupy: the sources, the propagator and the contraction live on the GPU as
CuPy arrays (the CUDA backend takes them through DLPack, no host copy); only
C(t), T numbers, comes back to the host.
"""
import argparse
import json
import os

import numpy as np

import wdirac


def cosh_mass(c0, c1, t, T):
    """m with c0 / c1 = cosh(m (t - T/2)) / cosh(m (t + 1 - T/2)), by bisection."""
    target = c0 / c1

    def ratio(m):
        return np.cosh(m * (t - T / 2)) / np.cosh(m * (t + 1 - T / 2))
    lo, hi = 1e-6, 5.0
    if not (ratio(lo) - target) * (ratio(hi) - target) < 0:
        return np.nan
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if (ratio(lo) - target) * (ratio(mid) - target) <= 0:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dims", type=int, nargs=4, default=[8, 8, 8, 16])
    ap.add_argument("--kappa", type=float, default=0.150)
    ap.add_argument("--beta", type=float, default=5.8)
    ap.add_argument("--sweeps", type=int, default=50)
    ap.add_argument("--out", default=".")
    ap.add_argument("--cupy", action="store_true", help="GPU arrays (CuPy) throughout")
    args = ap.parse_args()
    xp = np
    if args.cupy:
        import cupy as xp

    u = wdirac.GaugeField.generate(args.dims, beta=args.beta, sweeps=args.sweeps, seed=11)
    print(f"lattice {args.dims}, beta {args.beta}, plaquette {u.plaquette():.6f}")

    solver = wdirac.Solver(u, kappa=args.kappa, solver="bicgstab", precision="d", sloppy="s",
                           tol=1e-10, backend="cuda" if args.cupy else "auto")
    # the 12 point sources at the origin, one solve each in a batch
    b = xp.zeros((12,) + u.spinor_shape, xp.complex128)
    for k in range(12):
        b[k, 0, 0, 0, 0, k // 3, k % 3] = 1.0
    prop, stats = solver.solve(b)
    print(f"12 solves on {solver.backend}: iterations {[s.iterations for s in stats]}, "
          f"largest true residual {max(s.true_residual for s in stats):.1e}, "
          f"{sum(s.seconds for s in stats):.2f} s")

    # C(t): sum over sources, sink spin and colour, and the spatial sites
    corr = xp.einsum("ktzyxsc->t", xp.abs(prop) ** 2)
    if xp is not np:
        corr = xp.asnumpy(corr)
    T = args.dims[3]
    meff = [cosh_mass(corr[t], corr[t + 1], t, T) for t in range(T // 2)]
    print(" t      C(t)          m_eff(t)")
    for t in range(T):
        m = f"{meff[t]:.4f}" if t < len(meff) and np.isfinite(meff[t]) else "-"
        print(f"{t:2d}  {corr[t]:.6e}  {m}")
    # the plateau: the second half of the first half of the lattice
    plateau = [m for m in meff[T // 4:] if np.isfinite(m)]
    m_pi = float(np.mean(plateau)) if plateau else float("nan")
    spread = float(np.std(plateau)) if plateau else float("nan")
    print(f"pion mass (plateau t = {T // 4}..{T // 2 - 1}): {m_pi:.4f} +- {spread:.4f} "
          f"(spread of the plateau, one configuration)")

    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "pion.json"), "w") as f:
        json.dump({"dims": args.dims, "kappa": args.kappa, "beta": args.beta,
                   "plaquette": u.plaquette(), "C": corr.tolist(),
                   "m_eff": [None if not np.isfinite(m) else m for m in meff],
                   "m_pi": m_pi}, f, indent=1)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a, c) = plt.subplots(1, 2, figsize=(9, 3.5))
    a.semilogy(range(T), corr, "o-")
    a.set_xlabel("t")
    a.set_ylabel("C(t)")
    a.set_title("pion correlator")
    c.plot(range(len(meff)), meff, "o")
    c.axhline(m_pi, color="k", lw=0.8)
    c.set_xlabel("t")
    c.set_ylabel("cosh effective mass")
    c.set_title(f"m_pi = {m_pi:.3f}")
    fig.tight_layout()
    fig.savefig(os.path.join(args.out, "pion.png"), dpi=100)
    print(f"wrote {os.path.join(args.out, 'pion.png')} and pion.json")
    return 0 if np.isfinite(m_pi) and m_pi > 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
