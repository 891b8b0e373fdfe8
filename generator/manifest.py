"""The manifest: the one list of the kernels wdirac can build.

manifest() lists the Dslash variants (Wilson, clover epilogue, clover),
coarse_manifest() the multigrid coarse operator's (docs/coarse-kernels.md).
Nested loops over plain lists of axis values append to the lists; meson's
`kernels` / `kernels_exclude` globs pick what a build compiles, of both.
"""

import fnmatch

from .axes import Form, Operator, Precision, Recon
from .naming import CoarseVariant, Variant

PRECISION_AXIS = [Precision.D, Precision.S, Precision.H]
RECON_AXIS = [Recon.R18, Recon.R12, Recon.R8]
GAUGE_FIX_AXIS = [0, 1]
DAGGER_AXIS = [0, 1]
XPAY_AXIS = [0, 1]
# The hopping operators, Wilson first (its first variant is the benchmarks'
# baseline).  The clover-epilogue set has every Dslash axis: the even-odd
# clover operators use A^-1 after D in each precision, reconstruction and
# gauge fixing a solver may run, with and without dagger (CG) and xpay
# (docs/generator.md, "The clover kernels").
HOPPING_AXIS = [Operator.WILSON, Operator.WILSON_CLOVER]
# Right-hand sides per thread.  Every hopping kernel exists for one; the
# multi-RHS kernels (each link loaded and reconstructed once for all N) only
# where the batched solvers run: the Wilson operator, recon 12, with and
# without temporal gauge fixing (--sloppy-gauge-fix), every precision
# (double outer, single or half sloppy), dagger (CG) and xpay
# (docs/generator.md, "Many right-hand sides").  Other combinations run a
# batch as N one-RHS applications.
# Right-hand sides per thread by precision: double _n4 would hold 96
# double accumulators and spills 2.7 KB a thread (ptxas, sm_90), so double
# stops at 2 (which spills 40-56 bytes); single _n4 uses 250 registers
# without spilling, half 168.  With temporal gauge fixing half stops at 2:
# its _n4 ran slower a right-hand side than the one-RHS kernel on an H100
# (32^3x64: 137.4 against 123.7 us; _n2 109.3, bench/results/
# h100-2026-11-25-gf1), where single _n4 gains 1.53x.
# An _n3 (single and half, 2026-11-28, bench/results/h100-2026-11-28b-mrhs
# run58) ran between _n2 and _n4 a right-hand side at 24^3x64 and 32^3x64:
# not built.
MULTI_RHS_AXIS = {Precision.D: [2], Precision.S: [2, 4], Precision.H: [2, 4]}
MULTI_RHS_GAUGE_FIXED_AXIS = {Precision.D: [2], Precision.S: [2, 4], Precision.H: [2]}
# The thread form (axes.Form.THREADS, dslash_..._t<N>): a thread a site and
# right-hand side, a block of sites x N right-hand sides sharing each
# site's links through L1; the one-RHS site function's registers (96 in
# single, 176 in double on sm_90) whatever N.  Issue 30: the register form
# stays flat past N = 4 (single _n4: 250 registers, 8 warps an SM), so the
# lock-step batches of 12 (a propagator's columns) get N = 12 without
# gauge fixing, every precision, dagger and xpay (the batched BiCGstab and
# CG).  A call of count right-hand sides runs the largest N built
# (wd_dslash_group): 12 as one _t12 launch, 24 as one over 2 groups,
# other counts as before through _n4 / _n2.  Where the register form
# measures faster on the H100 (bench dslash --nrhs times both side by
# side) a precision is dropped here (docs/generator.md, "Many right-hand
# sides").
# Measured (nvidia-h100-x1, 2026-11-27, dbfceb6, bench dslash --nrhs at
# 32^3x64, dag0 xpay0, us a right-hand side against one-RHS calls): double
# _t12 1.35x, _n2 1.30x, _sh12 1.25x; single _n4 1.68x, _t12 1.59x, _sh12
# 1.42x; half _n4 1.44x, _t12 1.08x, _sh12 0.86x.  So the thread form is
# built for double alone, where it wins; single and half keep _n4 (a
# larger N built would be the one wd_dslash_group takes, and slower).
THREAD_RHS_AXIS = {Precision.D: [12], Precision.S: [], Precision.H: []}
THREAD_RHS_GAUGE_FIXED_AXIS = {Precision.D: [], Precision.S: [], Precision.H: []}
# The same threads with the links of a block's sites staged in shared
# memory once (axes.Form.SHARED, dslash_..._sh<N>: each of a site's N
# threads loads a share of its 8 links, a barrier, then the one-RHS site
# code reading them there): the other way the issue proposes to share the
# links, built beside _t12 so that the H100 decides between them (L1 may
# lose links to the spinor stream; shared memory costs a barrier and
# occupancy).  Without gauge fixing only.  After the thread form in the
# manifest: at equal N wd_dslash_group takes _t12.
# Measured slower than _t12 or _n4 in every precision (above): built for
# none; the form stays in the generator for a later device to measure.
SHARED_RHS_AXIS = {Precision.D: [], Precision.S: [], Precision.H: []}


# no right-hand-side counts for any precision (a form without gauge fixing)
NO_RHS = {Precision.D: [], Precision.S: [], Precision.H: []}


def _multi_rhs(axis, gauge_fixed_axis, form):
    """The Wilson recon-12 kernels of one multi-RHS form: each N that axis
    (gauge_fixed_axis with temporal gauge fixing) lists for a precision,
    every dagger and xpay, N ascending."""
    variants = []
    for nrhs in sorted({n for a in (axis, gauge_fixed_axis) for ns in a.values() for n in ns}):
        for precision in PRECISION_AXIS:
            for gauge_fix in GAUGE_FIX_AXIS:
                allowed = gauge_fixed_axis if gauge_fix else axis
                if nrhs not in allowed[precision]:
                    continue
                for dagger in DAGGER_AXIS:
                    for xpay in XPAY_AXIS:
                        variants.append(Variant(precision, Recon.R12, gauge_fix, dagger, xpay,
                                                Operator.WILSON, nrhs, form))
    return variants


def manifest():
    variants = []
    for op in HOPPING_AXIS:
        for precision in PRECISION_AXIS:
            for recon in RECON_AXIS:
                for gauge_fix in GAUGE_FIX_AXIS:
                    for dagger in DAGGER_AXIS:
                        for xpay in XPAY_AXIS:
                            variants.append(Variant(precision, recon, gauge_fix, dagger,
                                                    xpay, op))
    for precision in PRECISION_AXIS:
        variants.append(Variant(precision, None, 0, 0, 0, Operator.CLOVER))
    variants += _multi_rhs(MULTI_RHS_AXIS, MULTI_RHS_GAUGE_FIXED_AXIS, Form.REGISTERS)
    variants += _multi_rhs(THREAD_RHS_AXIS, THREAD_RHS_GAUGE_FIXED_AXIS, Form.THREADS)
    variants += _multi_rhs(SHARED_RHS_AXIS, NO_RHS, Form.SHARED)
    return variants


# The coarse operator: exactly the (Nvec, storage precision) pairs the
# multigrid solvers run.  Nvec 24 is the usual second level (4^4
# aggregates: issue 27's QUDA anchor), Nvec 32 a third level (2^4 blocks,
# 24-32 vectors; 32 also fills a warp a chirality).  The coarse solves are
# the preconditioner's, inside a flexible outer GCR in double: single
# storage for the coarse GCR, half where a measurement shows it pays
# (16-bit fixed point halves the link bytes, which are the whole cost).
# No double: the coarse reference is the float64 definition itself
# (wd_mg_coarse_build), and no solver would run a double coarse level.
# Nvec 8: the small lattices of the tests (8^4 with 4^4 aggregates, where
# 24 vectors would take most of a block's 1536 dimensions) and a cheap
# level for a user's first try.
COARSE_PAIRS = [(8, Precision.S), (8, Precision.H), (24, Precision.S), (24, Precision.H),
                (32, Precision.S), (32, Precision.H)]
# Right-hand sides a call applies to, for every pair above: one.
COARSE_NRHS_AXIS = [1]
# Several right-hand sides a call (issue 30, item 4: the coarse links, the
# whole cost of the kernel, read once for N; docs/coarse-kernels.md): only
# what the multigrid's multi-RHS coarse solves run: Nvec 24 (the second
# level), single and half, D_c alone (the coarse GCR applies no dagger)
# with and without xpay; N = 4 (three calls a 12-column propagator batch,
# 8 sums a right-hand side a thread: about the registers of the fine _n4)
# and N = 12 (the batch in one call: the links' bytes a right-hand side
# 12x fewer, 96 sums a thread); not yet measured on a GPU, so both are
# built until the measurement drops one (checkcoarse --bench prints the
# time a right-hand side of each against one-RHS calls).  8 variants.
COARSE_MULTI_PAIRS = [(24, Precision.S), (24, Precision.H)]
COARSE_MULTI_DAGGER_AXIS = [0]
COARSE_MULTI_NRHS_AXIS = [4, 12]


def coarse_manifest():
    variants = []
    for nvec, precision in COARSE_PAIRS:
        for dagger in DAGGER_AXIS:
            for xpay in XPAY_AXIS:
                for nrhs in COARSE_NRHS_AXIS:
                    variants.append(CoarseVariant(precision, nvec, dagger, xpay, nrhs))
    for nvec, precision in COARSE_MULTI_PAIRS:
        for dagger in COARSE_MULTI_DAGGER_AXIS:
            for xpay in XPAY_AXIS:
                for nrhs in COARSE_MULTI_NRHS_AXIS:
                    variants.append(CoarseVariant(precision, nvec, dagger, xpay, nrhs))
    return variants


def _globs(spec):
    return [g for g in (spec or "").replace(",", " ").split() if g]


def select(variants, include="*", exclude=""):
    """Variants whose name matches an include glob and no exclude glob."""
    inc, exc = _globs(include) or ["*"], _globs(exclude)
    return [v for v in variants
            if any(fnmatch.fnmatchcase(v.name, g) for g in inc)
            and not any(fnmatch.fnmatchcase(v.name, g) for g in exc)]
