"""Physics derived once, as data: gammas, basis change, projectors, links.

Everything numeric that the generated code uses is computed here from the
DeGrand-Rossi gamma matrices of DESIGN.md and rendered by the templates:

* the unitary spin matrix S taking DeGrand-Rossi spinors to the internal
  (UKQCD / non-relativistic) basis, where gamma_4 = diag(1, 1, -1, -1);
* for every hop (direction, forward/backward, dagger) the rank-2 projector
  P = 1 +- gamma_mu in the internal basis, split into a projection onto two
  half-spinor components and a reconstruction of all four spins;
* which reals a link stores for reconstruction 18, 12 and 8;
* the half-precision fixed-point scale.

Complex numbers here are exact small Gaussian integers (and multiples of
1/sqrt(2) inside S); every derived quantity is checked before it is used.
"""

import math
from dataclasses import dataclass

from .axes import NDIM, TIME_DIR, Recon

# DeGrand-Rossi gammas, DESIGN.md (g1..g4 = directions x, y, z, t).
I = 1j
DR_GAMMA = (
    ((0, 0, 0, I), (0, 0, I, 0), (0, -I, 0, 0), (-I, 0, 0, 0)),
    ((0, 0, 0, -1), (0, 0, 1, 0), (0, 1, 0, 0), (-1, 0, 0, 0)),
    ((0, 0, I, 0), (0, 0, 0, -I), (-I, 0, 0, 0), (0, I, 0, 0)),
    ((0, 0, 1, 0), (0, 0, 0, 1), (1, 0, 0, 0), (0, 1, 0, 0)),
)

# Largest magnitude of a 16-bit fixed-point value: v = round(x * HALF_SCALE).
HALF_SCALE = 32767
# Reconstruction 8 stores each phase divided by pi, in [-1, 1], in every
# precision: half precision needs numbers in [-1, 1], and the kernel takes
# sin(pi x), cos(pi x) with sincospi, which needs no argument reduction.
R8_PHASE_SCALE = math.pi

EPS = 1e-12


def matmul(a, b):
    n, m, p = len(a), len(b), len(b[0])
    return tuple(tuple(sum(a[i][k] * b[k][j] for k in range(m))
                       for j in range(p)) for i in range(n))


def dagger(a):
    return tuple(tuple(complex(a[j][i]).conjugate() for j in range(len(a)))
                 for i in range(len(a[0])))


def identity(n):
    return tuple(tuple(1 if i == j else 0 for j in range(n)) for i in range(n))


def close(a, b, eps=EPS):
    return all(abs(x - y) < eps for ra, rb in zip(a, b) for x, y in zip(ra, rb))


def snap(z):
    """Round a derived number to the exact value it stands for."""
    z = complex(z)
    re, im = round(z.real, 12), round(z.imag, 12)
    return complex(re + 0.0, im + 0.0)


def _basis_change():
    """S with S g4 S^dag = diag(1,1,-1,-1): rows are eigenvectors of g4.

    g4 = [[0,1],[1,0]] in 2x2 spin blocks, so (e_k +- e_{k+2})/sqrt(2) are
    its eigenvectors for +-1; taking them in this order gives a real S.
    """
    r = 1 / math.sqrt(2)
    s = ((r, 0, r, 0), (0, r, 0, r), (r, 0, -r, 0), (0, r, 0, -r))
    assert close(matmul(s, dagger(s)), identity(4))
    g4 = matmul(matmul(s, DR_GAMMA[TIME_DIR]), dagger(s))
    assert close(g4, ((1, 0, 0, 0), (0, 1, 0, 0), (0, 0, -1, 0), (0, 0, 0, -1)))
    return s


BASIS_CHANGE = _basis_change()
INTERNAL_GAMMA = tuple(
    tuple(tuple(snap(z) for z in row)
          for row in matmul(matmul(BASIS_CHANGE, g), dagger(BASIS_CHANGE)))
    for g in DR_GAMMA)


def _check_clifford():
    for mu in range(NDIM):
        for nu in range(NDIM):
            ac = [[INTERNAL_GAMMA[mu][i][j] * 0 for j in range(4)] for i in range(4)]
            a = matmul(INTERNAL_GAMMA[mu], INTERNAL_GAMMA[nu])
            b = matmul(INTERNAL_GAMMA[nu], INTERNAL_GAMMA[mu])
            for i in range(4):
                for j in range(4):
                    ac[i][j] = a[i][j] + b[i][j]
            want = tuple(tuple(2 * (mu == nu) * (i == j) for j in range(4))
                         for i in range(4))
            assert close(ac, want), (mu, nu)


_check_clifford()


@dataclass(frozen=True)
class Hop:
    """One of the eight neighbour terms of D at a site, for one dagger value.

    forward: x(n+mu) with U_mu(n); backward: x(n-mu) with U_mu(n-mu)^dag.
    The projector P = 1 + sign * gamma_mu (internal basis) is applied as
      h_j = sum_k proj[j][k] psi_k          (j = 0, 1; psi the neighbour)
      out_i += sum_j recon[i][j] (U h)_j     (i = 0..3)
    spins: the spin components of psi that proj touches (the only ones loaded).
    """

    mu: int
    forward: bool
    sign: int
    proj: tuple
    recon: tuple
    spins: tuple

    @property
    def label(self):
        return (f"mu = {self.mu} {'forward' if self.forward else 'backward'}, "
                f"P{'+' if self.sign > 0 else '-'}")


def _decompose(p):
    """Split a rank-2 4x4 matrix as P = recon @ proj (proj = two of its rows)."""
    rows = [i for i in range(4) if any(abs(z) > EPS for z in p[i])]
    r0 = rows[0]
    r1 = next(i for i in rows[1:]
              if any(abs(p[i][k] * p[r0][l] - p[i][l] * p[r0][k]) > EPS
                     for k in range(4) for l in range(4)))
    proj = (tuple(p[r0]), tuple(p[r1]))
    recon = []
    for i in range(4):
        # Solve p[i] = c0 p[r0] + c1 p[r1] on two columns where the 2x2 block
        # of the chosen rows is invertible.
        cols = next((k, l) for k in range(4) for l in range(k + 1, 4)
                    if abs(p[r0][k] * p[r1][l] - p[r0][l] * p[r1][k]) > EPS)
        k, l = cols
        det = p[r0][k] * p[r1][l] - p[r0][l] * p[r1][k]
        c0 = (p[i][k] * p[r1][l] - p[i][l] * p[r1][k]) / det
        c1 = (p[r0][k] * p[i][l] - p[r0][l] * p[i][k]) / det
        recon.append((snap(c0), snap(c1)))
    recon = tuple(recon)
    assert close(matmul(recon, proj), p), "projector is not rank 2"
    spins = tuple(k for k in range(4) if any(abs(proj[j][k]) > EPS for j in range(2)))
    return proj, recon, spins


def hops(dag):
    """The eight hops in the order the kernel visits them.

    D has (1 - g_mu) forward and (1 + g_mu) backward; D^dag swaps the signs.
    """
    out = []
    for mu in range(NDIM):
        for forward in (True, False):
            sign = -1 if forward else 1
            if dag:
                sign = -sign
            p = tuple(tuple(snap((i == j) + sign * INTERNAL_GAMMA[mu][i][j])
                            for j in range(4)) for i in range(4))
            proj, recon, spins = _decompose(p)
            out.append(Hop(mu, forward, sign, proj, recon, spins))
    return tuple(out)


# Reconstruction: which reals of the row-major 3x3 link (re, im interleaved:
# real index 2*(3*row + col) + part) a stored link holds, in stored order.
LINK_REALS = 18
STORED_REALS = {
    Recon.R18: tuple(range(18)),
    Recon.R12: tuple(range(12)),  # rows a, b; c = (a x b)^*
}
# Reconstruction 8 (paper, appendix A) stores a2, a3, b1 and the phases of
# a1 and c1.  Stored order: re a2, im a2, re a3, im a3, re b1, im b1,
# arg a1, arg c1.
R8_COMPLEX = ("a2", "a3", "b1")
R8_PHASES = ("a1", "c1")
R8_STORED = len(R8_COMPLEX) * 2 + len(R8_PHASES)
assert R8_STORED == Recon.R8

# (row, col) of each named element of the link
LINK_ELEMENT = {
    "a1": (0, 0), "a2": (0, 1), "a3": (0, 2),
    "b1": (1, 0), "b2": (1, 1), "b3": (1, 2),
    "c1": (2, 0), "c2": (2, 1), "c3": (2, 2),
}


def cross_conj_terms():
    """c_i = conj(a_j b_k - a_k b_j) for (i, j, k) cyclic: third row of SU(3)."""
    return tuple((i, (i + 1) % 3, (i + 2) % 3) for i in range(3))


def spinor_layout(width):
    """Where each (spin, colour, part) real sits: (element, component)."""
    comps = "xyzw"[:width]
    layout = {}
    for s in range(4):
        for c in range(3):
            for part in range(2):
                r = 2 * (3 * s + c) + part
                layout[(s, c, part)] = (r // width, comps[r % width])
    return layout


def elements_for_spins(spins, width):
    """The spinor elements holding every real of the given spins."""
    lay = spinor_layout(width)
    return tuple(sorted({lay[(s, c, p)][0] for s in spins
                         for c in range(3) for p in range(2)}))


# Reconstruction 8, the rest of the link from a2, a3, b1, a1 and c1 (paper,
# appendix A, rows b and c as an SU(2) rotation of the plane orthogonal to a).
# With inv = 1 / (|a2|^2 + |a3|^2) and the complex temporaries
#   ia1 = conj(a1) inv, ic1 = conj(c1) inv, ib1 = conj(b1) inv,
#   t2 = a2 ia1, t3 = a3 ia1,
# each element is a sum of signed products of two factors ("x*" = conj x).
R8_TEMPS = (
    ("ia1", ("a1*", "inv")),
    ("ic1", ("c1*", "inv")),
    ("ib1", ("b1*", "inv")),
    ("t2", ("a2", "ia1")),
    ("t3", ("a3", "ia1")),
)
R8_PRODUCTS = (
    ("b2", ((-1, "ic1", "a3*"), (-1, "b1", "t2"))),
    ("b3", ((+1, "ic1", "a2*"), (-1, "b1", "t3"))),
    ("c2", ((+1, "ib1", "a3*"), (-1, "c1", "t2"))),
    ("c3", ((-1, "ib1", "a2*"), (-1, "c1", "t3"))),
)


def r8_reconstruct_reference(a2, a3, b1, phase_a1, phase_c1):
    """Evaluate the R8 tables in Python complex arithmetic (for the tests)."""
    import cmath
    n2 = abs(a2) ** 2 + abs(a3) ** 2
    a1 = math.sqrt(max(0.0, 1 - n2)) * cmath.exp(1j * phase_a1)
    c1 = math.sqrt(max(0.0, n2 - abs(b1) ** 2)) * cmath.exp(1j * phase_c1)
    env = {"a1": a1, "a2": a2, "a3": a3, "b1": b1, "c1": c1, "inv": 1 / n2}

    def val(f):
        return env[f[:-1]].conjugate() if f.endswith("*") else env[f]
    for name, (f, g) in R8_TEMPS:
        env[name] = val(f) * val(g)
    for name, terms in R8_PRODUCTS:
        env[name] = sum(s * val(f) * val(g) for s, f, g in terms)
    return [[env[f"{r}{c}"] for c in (1, 2, 3)] for r in "abc"]


# ---------------------------------------------------------------- clover
# The clover term is block diagonal in the DeGrand-Rossi basis, where
# gamma_5 = g1 g2 g3 g4 is diagonal: one 6x6 Hermitian block (spin pair x
# colour) per chirality.  The kernels hold spinors in the internal basis, so
# the clover epilogue rotates the internal spinor to the two chiral spin
# pairs (DR = S^dag internal), applies the blocks, and rotates back
# (internal = S DR).  S has entries 0 and +-1/sqrt(2): scaled by
# CLOVER_BASIS_NORM = sqrt(2) both rotations have integer coefficients, and
# the factor 1 / CLOVER_BASIS_NORM^2 they leave over is folded into the
# stored clover field (CLOVER_SCALE, applied by the host packing code).


def _gamma5():
    g = identity(4)
    for mu in range(NDIM):
        g = matmul(g, DR_GAMMA[mu])
    g = tuple(tuple(snap(z) for z in row) for row in g)
    assert all(abs(g[i][j]) < EPS for i in range(4) for j in range(4) if i != j), \
        "gamma_5 is not diagonal in the DeGrand-Rossi basis"
    return g


DR_GAMMA5 = _gamma5()
# DeGrand-Rossi spins of each chiral block: gamma_5 = +1 first, then -1
CHIRAL_SPINS = tuple(tuple(s for s in range(4) if abs(DR_GAMMA5[s][s] - sign) < EPS)
                     for sign in (1, -1))
assert all(len(b) == 2 for b in CHIRAL_SPINS)
CLOVER_BLOCK_DIM = 6  # 2 spins x 3 colours


def _clover_rotations():
    mags = {round(abs(z), 12) for row in BASIS_CHANGE for z in row if abs(z) > EPS}
    assert len(mags) == 1, "basis change entries of more than one magnitude"
    norm = 1 / next(abs(z) for row in BASIS_CHANGE for z in row if abs(z) > EPS)
    to_chiral = tuple(tuple(snap(norm * complex(BASIS_CHANGE[k][s]).conjugate())
                            for k in range(4)) for s in range(4))
    from_chiral = tuple(tuple(snap(norm * BASIS_CHANGE[k][s]) for s in range(4))
                        for k in range(4))
    for m in (to_chiral, from_chiral):
        assert all(abs(z - round(z.real)) < EPS for row in m for z in row), \
            "clover rotation is not integer"
    scale = round(1 / norm ** 2, 12)
    back = matmul(from_chiral, to_chiral)
    assert close(tuple(tuple(scale * z for z in row) for row in back), identity(4))
    return norm, to_chiral, from_chiral, scale


# CLOVER_TO_CHIRAL[s][k]: DR spin s = sum_k coefficient x internal spin k
# (times 1 / CLOVER_BASIS_NORM); CLOVER_FROM_CHIRAL[k][s] the way back.
CLOVER_BASIS_NORM, CLOVER_TO_CHIRAL, CLOVER_FROM_CHIRAL, CLOVER_SCALE = _clover_rotations()

# The reals of one stored 6x6 Hermitian block, in stored order: the six
# real diagonal entries, then the strictly lower entries (i > j) row by row
# as (re, im).  Two blocks a site, chirality + first: 72 reals.
CLOVER_LOWER = tuple((i, j) for i in range(CLOVER_BLOCK_DIM) for j in range(i))
CLOVER_BLOCK_REALS = CLOVER_BLOCK_DIM + 2 * len(CLOVER_LOWER)
CLOVER_SITE_REALS = 2 * CLOVER_BLOCK_REALS
assert CLOVER_BLOCK_REALS == 36
