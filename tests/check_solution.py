#!/usr/bin/env python3
"""check_solution.py: check a `wdirac solve` solution with numpy alone.

  check_solution.py check --gauge FILE|--unit --source B.npy --solution X.npy
                          --mass M [--tbc periodic|antiperiodic] [--tol 1e-9]
      reads the NERSC configuration (DATATYPE 4D_SU3_GAUGE_3x3, FLOATING_POINT
      IEEE64BIG or IEEE64LITTLE) and both spinor files, checks their shape and
      dtype, that they are finite and non-zero, and that ||b - M x|| / ||b||
      <= tol for this file's own Wilson-Dirac operator (DESIGN.md): M = (4+m)
      - D/2 in the DeGrand-Rossi basis, the time boundary on every hop across
      t = T-1 <-> 0.  Exit 0 when every check passes, 1 otherwise.
  check_solution.py load X.npy --dims X Y Z T
      the file is a finite, non-zero (T, Z, Y, X, 4, 3) complex128 array
      (for the best iterate of a solve that did not converge).
  check_solution.py make-source B.npy --dims X Y Z T --seed S [--big-endian]
      a random source written by np.save, for `wdirac solve --source`.

Shares nothing with the C library: the operator is written here from the
formula, so a convention error on either side shows up as a residual.
"""
import argparse
import sys

import numpy as np

I = 1j
# DeGrand-Rossi gamma matrices g1..g4 (DESIGN.md)
GAMMA = [
    np.array([[0, 0, 0, I], [0, 0, I, 0], [0, -I, 0, 0], [-I, 0, 0, 0]]),
    np.array([[0, 0, 0, -1], [0, 0, 1, 0], [0, 1, 0, 0], [-1, 0, 0, 0]], dtype=complex),
    np.array([[0, 0, I, 0], [0, 0, 0, -I], [-I, 0, 0, 0], [0, I, 0, 0]]),
    np.array([[0, 0, 1, 0], [0, 0, 0, 1], [1, 0, 0, 0], [0, 1, 0, 0]], dtype=complex),
]
# direction mu = 0..3 (x, y, z, t) is array axis 3..0 of [t, z, y, x, ...]
AXIS = [3, 2, 1, 0]


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def check_gammas():
    """The matrices typed above satisfy the Clifford algebra and are hermitian."""
    for m in range(4):
        for n in range(4):
            anti = GAMMA[m] @ GAMMA[n] + GAMMA[n] @ GAMMA[m]
            if not np.allclose(anti, 2 * (m == n) * np.eye(4)):
                fail(f"gamma {m + 1}, {n + 1} break the Clifford algebra")
        if not np.allclose(GAMMA[m], GAMMA[m].conj().T):
            fail(f"gamma {m + 1} is not hermitian")


def read_nersc(path):
    """Links U[t, z, y, x, mu, row, col] of a 3x3 64-bit NERSC file."""
    with open(path, "rb") as f:
        data = f.read()
    end = data.find(b"END_HEADER")
    if not data.startswith(b"BEGIN_HEADER") or end < 0:
        fail(f"{path}: no BEGIN_HEADER ... END_HEADER")
    start = data.index(b"\n", end) + 1
    header = {}
    for line in data[:end].decode("ascii").splitlines()[1:]:
        if "=" in line:
            key, value = line.split("=", 1)
            header[key.strip()] = value.strip()
    if header.get("DATATYPE") != "4D_SU3_GAUGE_3x3":
        fail(f"{path}: DATATYPE {header.get('DATATYPE')}, this checker reads 4D_SU3_GAUGE_3x3")
    order = {"IEEE64BIG": ">", "IEEE64LITTLE": "<"}.get(header.get("FLOATING_POINT"))
    if order is None:
        fail(f"{path}: FLOATING_POINT {header.get('FLOATING_POINT')}, this checker reads IEEE64")
    X, Y, Z, T = (int(header[f"DIMENSION_{k}"]) for k in range(1, 5))
    u = np.frombuffer(data, dtype=order + "c16", offset=start)
    if u.size != T * Z * Y * X * 4 * 9:
        fail(f"{path}: {u.size} complex numbers of data, expected {T * Z * Y * X * 36}")
    u = u.reshape(T, Z, Y, X, 4, 3, 3).astype("<c16")
    # a misread file would not be unitary
    err = np.abs(np.einsum("...ab,...cb->...ac", u, u.conj()) - np.eye(3)).max()
    if err > 1e-12:
        fail(f"{path}: links not unitary (max |U U^dag - 1| = {err:.2e}): misread?")
    return u, (X, Y, Z, T)


def unit_gauge(dims):
    X, Y, Z, T = dims
    u = np.zeros((T, Z, Y, X, 4, 3, 3), dtype=complex)
    u[...] = np.eye(3)
    return u


def hop(field, mu, step, sign, T):
    """field(n + step * mu), with `sign` on the hops that cross the time boundary."""
    out = np.roll(field, -step, axis=AXIS[mu])
    if mu == 3 and sign != 1:
        out = out.copy()
        out[T - 1 if step == 1 else 0] *= sign
    return out


def wilson(u, x, mass, sign):
    """M x = (4+m) x - 1/2 sum_mu [(1 - g_mu) U_mu(n) x(n+mu) + (1 + g_mu) U_mu(n-mu)^dag x(n-mu)]."""
    T = x.shape[0]
    one = np.eye(4)
    d = np.zeros_like(x)
    for mu in range(4):
        umu = u[..., mu, :, :]
        fwd = np.einsum("...ab,...sb->...sa", umu, hop(x, mu, 1, sign, T))
        d += np.einsum("st,...tb->...sb", one - GAMMA[mu], fwd)
        ub = np.roll(umu, 1, axis=AXIS[mu])  # U_mu(n - mu), links periodic
        bwd = np.einsum("...ba,...sb->...sa", ub.conj(), hop(x, mu, -1, sign, T))
        d += np.einsum("st,...tb->...sb", one + GAMMA[mu], bwd)
    return (4 + mass) * x - 0.5 * d


def load_spinor(path, dims):
    X, Y, Z, T = dims
    a = np.load(path)
    if a.dtype.kind != "c" or a.dtype.itemsize != 16:
        fail(f"{path}: dtype {a.dtype}, expected complex128")
    a = a.astype(np.complex128)  # native byte order
    if a.shape != (T, Z, Y, X, 4, 3):
        fail(f"{path}: shape {a.shape}, expected {(T, Z, Y, X, 4, 3)}")
    if not np.isfinite(a).all():
        fail(f"{path}: NaN or Inf")
    if not np.any(a):
        fail(f"{path}: all zero")
    return a


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    g = c.add_mutually_exclusive_group(required=True)
    g.add_argument("--gauge")
    g.add_argument("--unit", type=int, nargs=4, metavar=("X", "Y", "Z", "T"))
    c.add_argument("--source", required=True)
    c.add_argument("--solution", required=True)
    c.add_argument("--mass", type=float, required=True)
    c.add_argument("--tbc", choices=["periodic", "antiperiodic"], default="antiperiodic")
    c.add_argument("--tol", type=float, default=1e-9)
    ld = sub.add_parser("load")
    ld.add_argument("file")
    ld.add_argument("--dims", type=int, nargs=4, required=True)
    m = sub.add_parser("make-source")
    m.add_argument("file")
    m.add_argument("--dims", type=int, nargs=4, required=True)
    m.add_argument("--seed", type=int, required=True)
    m.add_argument("--big-endian", action="store_true")
    a = p.parse_args()

    if a.cmd == "make-source":
        X, Y, Z, T = a.dims
        rng = np.random.default_rng(a.seed)
        b = rng.normal(size=(T, Z, Y, X, 4, 3)) + 1j * rng.normal(size=(T, Z, Y, X, 4, 3))
        np.save(a.file, b.astype(">c16" if a.big_endian else "<c16"))
        return
    if a.cmd == "load":
        load_spinor(a.file, a.dims)
        print(f"{a.file}: finite, non-zero, shape and dtype OK")
        return

    check_gammas()
    if a.gauge:
        u, dims = read_nersc(a.gauge)
    else:
        dims = tuple(a.unit)
        u = unit_gauge(dims)
    b = load_spinor(a.source, dims)
    x = load_spinor(a.solution, dims)
    sign = -1 if a.tbc == "antiperiodic" else 1
    r = np.linalg.norm(b - wilson(u, x, a.mass, sign)) / np.linalg.norm(b)
    # the wrong boundary or mass must not pass too: the check has teeth
    r_other = np.linalg.norm(b - wilson(u, x, a.mass, -sign)) / np.linalg.norm(b)
    print(f"||b - M x|| / ||b|| = {r:.3e} (tol {a.tol:.0e}); with the other time boundary "
          f"{r_other:.3e}")
    if not r <= a.tol:
        fail(f"residual {r:.3e} > {a.tol:.0e}")
    if not r_other > 1e3 * a.tol:
        fail("the other time boundary fits as well: the check cannot tell them apart")
    print("OK")


if __name__ == "__main__":
    main()
