"""The axes of a Dslash variant and the one table of tokens for each.

Every string that names part of a variant (the "s" in dslash_s_r12_gf1_...),
every storage type and every element width comes from these tables; the
manifest, the templates, the registry and the meson filter all read them from
here.  Enum values mean something: a precision's value is its bytes per
stored real, a reconstruction's value is the reals stored per link.
"""

from dataclasses import dataclass
from enum import IntEnum


class Precision(IntEnum):
    """Storage precision; the value is bytes per stored real."""

    D = 8
    S = 4
    H = 2


class Operator(IntEnum):
    """What a kernel applies; the value is the registry's op number.

    WILSON         out = D in (or x + a D in): the hopping term of DESIGN.md
    WILSON_CLOVER  out = C D in (or x + a C D in): the hopping term followed,
                   at the same output site, by a clover field C (in the
                   even-odd operators C = A^-1, the inverse clover matrix)
    CLOVER         out = C in: the clover field alone, site by site
    """

    WILSON = 0
    WILSON_CLOVER = 1
    CLOVER = 2


class Form(IntEnum):
    """How a multi-RHS kernel spreads its N right-hand sides over threads;
    the value is the registry's form number.

    REGISTERS  a thread a site holding all N right-hand sides in registers
               (each link loaded once a thread): dslash_..._n<N>
    THREADS    a thread a (site, right-hand side), a block of sites x N
               right-hand sides, the site's links shared through L1 by the
               N threads of a site: dslash_..._t<N>
    SHARED     the same threads, the block's links staged once in shared
               memory (each of a site's N threads loads a share of them):
               dslash_..._sh<N>
    """

    REGISTERS = 0
    THREADS = 1
    SHARED = 2


class Recon(IntEnum):
    """Gauge reconstruction; the value is reals stored per link."""

    R18 = 18
    R12 = 12
    R8 = 8


@dataclass(frozen=True)
class PrecisionInfo:
    token: str  # name part: dslash_<token>_...
    store: str  # C type of one stored real
    compute: str  # C type the arithmetic runs in
    literal: str  # suffix of a floating literal in the compute type
    spinor_width: int  # reals per vector element of a spinor field
    gauge_widths: dict  # Recon -> reals per element of a link, element by element
    has_norm: bool  # fixed point with one float norm per spinor site
    cname: str  # enum constant in the C headers


# Vector element types by (store type, width): CUDA's own names, and the
# names wd_kernel.h gives the same layouts on the CPU.
VECTOR_TYPES = {
    ("double", 2): "double2",
    ("float", 2): "float2",
    ("float", 4): "float4",
    ("short", 2): "short2",
    ("short", 4): "short4",
}

# Links of 4-byte and 2-byte reals in elements of 4 (16- or 8-byte loads);
# 18 reals end in one element of 2, so recon 18 needs no 8-byte float2 loads.
WIDE_LINKS = {Recon.R18: (4, 4, 4, 4, 2), Recon.R12: (4, 4, 4), Recon.R8: (4, 4)}

PRECISIONS = {
    Precision.D: PrecisionInfo(
        token="d", store="double", compute="double", literal="",
        spinor_width=2,
        gauge_widths={Recon.R18: (2,) * 9, Recon.R12: (2,) * 6, Recon.R8: (2,) * 4},
        has_norm=False, cname="WD_PREC_DOUBLE"),
    Precision.S: PrecisionInfo(
        token="s", store="float", compute="float", literal="f",
        spinor_width=4,
        gauge_widths=WIDE_LINKS,
        has_norm=False, cname="WD_PREC_SINGLE"),
    Precision.H: PrecisionInfo(
        token="h", store="short", compute="float", literal="f",
        spinor_width=4,
        gauge_widths=WIDE_LINKS,
        has_norm=True, cname="WD_PREC_HALF"),
}

RECON_TOKEN = {Recon.R18: "r18", Recon.R12: "r12", Recon.R8: "r8"}

# Boolean axes: gauge fixing, dagger, xpay.  Each spells "<token><0|1>".
GAUGE_FIX_TOKEN = "gf"
DAGGER_TOKEN = "dag"
XPAY_TOKEN = "xpay"
# Right-hand sides a call applies to, and how (Form): "n<count>", N
# right-hand sides a thread (each link loaded once for all of them),
# "t<count>", a thread a site and right-hand side, or "sh<count>", the same
# with the links staged in shared memory.
NRHS_TOKEN = "n"
FORM_TOKEN = {Form.REGISTERS: NRHS_TOKEN, Form.THREADS: "t", Form.SHARED: "sh"}

# The first part of a name: the operator.  Names of the hopping kernels spell
# every Dslash axis; the clover kernel has the precision axis alone.
OPERATOR_TOKEN = {Operator.WILSON: "dslash", Operator.WILSON_CLOVER: "dslashcl",
                  Operator.CLOVER: "clover"}

# The CPU backend's vector rows (templates/dslash_cpu.c.j2, docs/generator.md
# "The CPU loop"): the one-RHS Wilson kernels of these reconstructions run a
# row of X/2 checkerboard sites under `omp simd` with this many sites a
# vector (AVX2: 4 doubles, 8 floats; half precision computes in float), and
# each is compiled for these GCC target_clones (meson option cpu_simd).
CPU_SIMD_RECONS = (Recon.R12,)
CPU_SIMDLEN = {Precision.D: 4, Precision.S: 8, Precision.H: 8}
CPU_CLONES = ("avx2", "default")

SPINOR_REALS = 24  # 4 spins x 3 colours x (re, im)
NDIM = 4
TIME_DIR = 3


def vector_type(store, width):
    try:
        return VECTOR_TYPES[(store, width)]
    except KeyError:
        raise ValueError(f"no vector type of {width} x {store}") from None

# ---------------------------------------------------------------- the coarse family
# The multigrid coarse operator D_c (DESIGN.md, "Multigrid";
# docs/coarse-kernels.md): out(x) = sum_d X_d(x) in(nbr_d(x)) over the 8
# direction links and the local block of a coarse site, each a
# (2 Nvec) x (2 Nvec) complex matrix.  Its own axes: storage precision
# (float arithmetic whatever is stored), Nvec, dagger (through gamma5-
# hermiticity, no links of its own), xpay, right-hand sides.
COARSE_TOKEN = "coarse"
# Nvec spells "nv<count>": coarse_s_nv24_...
NVEC_TOKEN = "nv"
# 8 hops (d = 2 mu forward, 2 mu + 1 backward) and the local block (index 8)
COARSE_DIRS = 8
COARSE_BLOCKS = COARSE_DIRS + 1
