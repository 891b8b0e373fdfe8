"""One procedural name per variant: file name, symbol, registry key, filter key.

    dslash_<prec>_r<recon>_gf<0|1>_dag<0|1>_xpay<0|1>_n<N>     D (Wilson), N right-hand sides
    dslash_<prec>_r<recon>_gf<0|1>_dag<0|1>_xpay<0|1>_t<N>     the same, a thread a site and right-hand side
    dslash_<prec>_r<recon>_gf<0|1>_dag<0|1>_xpay<0|1>_sh<N>    ... the block's links in shared memory
    dslashcl_<prec>_r<recon>_gf<0|1>_dag<0|1>_xpay<0|1>_n<N>   C D (clover epilogue)
    clover_<prec>                                             C alone
    coarse_<prec>_nv<Nvec>_dag<0|1>_xpay<0|1>_n<N>             D_c, the multigrid coarse operator

Every part of an operator's axes is always spelled, in this fixed order, so
names glob (dslash_* is the Wilson set, dslash*_ both hopping sets).
"""

import re
from dataclasses import dataclass

from .axes import (COARSE_TOKEN, DAGGER_TOKEN, FORM_TOKEN, GAUGE_FIX_TOKEN, NRHS_TOKEN,
                   NVEC_TOKEN, OPERATOR_TOKEN, PRECISIONS, RECON_TOKEN, XPAY_TOKEN, Form,
                   Operator, Precision, Recon)


@dataclass(frozen=True)
class Variant:
    """A kernel's axis values; a CLOVER kernel has recon None and zeros."""

    precision: Precision
    recon: Recon
    gauge_fix: int
    dagger: int
    xpay: int
    op: Operator = Operator.WILSON
    nrhs: int = 1   # right-hand sides a call applies to (hopping operators)
    form: Form = Form.REGISTERS  # how they spread over threads (axes.Form)

    @property
    def hopping(self):
        """The kernel applies D (reads neighbours and links)."""
        return self.op != Operator.CLOVER

    @property
    def clover(self):
        """The kernel reads a clover field."""
        return self.op != Operator.WILSON

    @property
    def reduces(self):
        """The variant has a reducing CUDA kernel beside its plain one.

        It also reduces what it writes (`_reduce_kernel`): BiCGstab's
        <r0, v>, <t, s> and |t|^2 and CG's |Mhat p|^2 come from the xpay
        application that ends each Schur operator instead of a BLAS pass
        over the field just written.  Only where the half sloppy level of a
        one-RHS solve runs it (Wilson, half precision, xpay, no dagger):
        there the reductions are the largest share of an iteration, and
        half batches already need not give their single solves' bits, while
        double and single batches must, and their lock-step lanes reduce
        with the BLAS (docs/generator.md, "Reductions in the epilogue").
        A property of the axes, not a manifest entry: the rendering of a
        variant depends on it, and not on the manifest.
        """
        return (self.op == Operator.WILSON and self.precision == Precision.H
                and self.dagger == 0 and self.xpay == 1 and self.nrhs == 1
                and self.form == Form.REGISTERS)

    @property
    def name(self):
        prefix = f"{OPERATOR_TOKEN[self.op]}_{PRECISIONS[self.precision].token}"
        if not self.hopping:
            return prefix
        return (f"{prefix}_{RECON_TOKEN[self.recon]}"
                f"_{GAUGE_FIX_TOKEN}{self.gauge_fix}"
                f"_{DAGGER_TOKEN}{self.dagger}"
                f"_{XPAY_TOKEN}{self.xpay}"
                f"_{FORM_TOKEN[self.form]}{self.nrhs}")

    @property
    def threads(self):
        """A thread a site and right-hand side (axes.Form.THREADS, SHARED)."""
        return self.form in (Form.THREADS, Form.SHARED)

    @property
    def shared(self):
        """... with the block's links staged in shared memory (Form.SHARED)."""
        return self.form == Form.SHARED

    @property
    def info(self):
        return PRECISIONS[self.precision]


@dataclass(frozen=True)
class CoarseVariant:
    """A coarse-operator kernel's axis values (docs/coarse-kernels.md)."""

    precision: Precision
    nvec: int
    dagger: int
    xpay: int
    nrhs: int = 1

    @property
    def ncomp(self):
        """Complex components a coarse site: 2 Nvec, chirality major."""
        return 2 * self.nvec

    @property
    def name(self):
        return (f"{COARSE_TOKEN}_{PRECISIONS[self.precision].token}"
                f"_{NVEC_TOKEN}{self.nvec}"
                f"_{DAGGER_TOKEN}{self.dagger}"
                f"_{XPAY_TOKEN}{self.xpay}"
                f"_{NRHS_TOKEN}{self.nrhs}")

    @property
    def info(self):
        return PRECISIONS[self.precision]


_PREC_BY_TOKEN = {info.token: p for p, info in PRECISIONS.items()}
_RECON_BY_TOKEN = {tok: r for r, tok in RECON_TOKEN.items()}
_OP_BY_TOKEN = {tok: op for op, tok in OPERATOR_TOKEN.items()}
_FORM_BY_TOKEN = {tok: f for f, tok in FORM_TOKEN.items()}
_HOPPING_RE = re.compile(
    rf"^(?P<op>[a-z]+)_(?P<p>[a-z]+)_(?P<r>r\d+)_{GAUGE_FIX_TOKEN}(?P<gf>[01])"
    rf"_{DAGGER_TOKEN}(?P<dag>[01])_{XPAY_TOKEN}(?P<xpay>[01])"
    rf"_(?P<form>{'|'.join(FORM_TOKEN.values())})(?P<n>[1-9][0-9]*)$")
_SITE_RE = re.compile(r"^(?P<op>[a-z]+)_(?P<p>[a-z]+)$")
_COARSE_RE = re.compile(
    rf"^{COARSE_TOKEN}_(?P<p>[a-z]+)_{NVEC_TOKEN}(?P<nv>[1-9][0-9]*)_{DAGGER_TOKEN}(?P<dag>[01])"
    rf"_{XPAY_TOKEN}(?P<xpay>[01])_{NRHS_TOKEN}(?P<n>[1-9][0-9]*)$")


def parse(name):
    """The Variant (or CoarseVariant) a name spells; ValueError naming the
    bad part otherwise."""
    if name.startswith(COARSE_TOKEN + "_"):
        return _parse_coarse(name)
    m = _HOPPING_RE.match(name) or _SITE_RE.match(name)
    if not m or m["op"] not in _OP_BY_TOKEN:
        raise ValueError(f"not a variant name: {name!r}")
    op = _OP_BY_TOKEN[m["op"]]
    hopping = "r" in m.groupdict()
    if hopping != (op != Operator.CLOVER):
        raise ValueError(f"not a variant name: {name!r}")
    if m["p"] not in _PREC_BY_TOKEN:
        raise ValueError(f"{name}: unknown precision {m['p']!r}")
    if not hopping:
        return Variant(_PREC_BY_TOKEN[m["p"]], None, 0, 0, 0, op)
    if m["r"] not in _RECON_BY_TOKEN:
        raise ValueError(f"{name}: unknown reconstruction {m['r']!r}")
    return Variant(_PREC_BY_TOKEN[m["p"]], _RECON_BY_TOKEN[m["r"]],
                   int(m["gf"]), int(m["dag"]), int(m["xpay"]), op, int(m["n"]),
                   _FORM_BY_TOKEN[m["form"]])


def _parse_coarse(name):
    m = _COARSE_RE.match(name)
    if not m:
        raise ValueError(f"not a variant name: {name!r}")
    if m["p"] not in _PREC_BY_TOKEN:
        raise ValueError(f"{name}: unknown precision {m['p']!r}")
    return CoarseVariant(_PREC_BY_TOKEN[m["p"]], int(m["nv"]), int(m["dag"]), int(m["xpay"]),
                         int(m["n"]))
