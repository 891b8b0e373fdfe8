"""One procedural name per variant: file name, symbol, registry key, filter key.

    dslash_<prec>_r<recon>_gf<0|1>_dag<0|1>_xpay<0|1>

Every part is always spelled, in this fixed order, so names glob.
"""

import re
from dataclasses import dataclass

from .axes import (DAGGER_TOKEN, GAUGE_FIX_TOKEN, OPERATOR_TOKEN, PRECISIONS,
                   RECON_TOKEN, XPAY_TOKEN, Precision, Recon)


@dataclass(frozen=True)
class Variant:
    precision: Precision
    recon: Recon
    gauge_fix: int
    dagger: int
    xpay: int

    @property
    def name(self):
        return (f"{OPERATOR_TOKEN}_{PRECISIONS[self.precision].token}"
                f"_{RECON_TOKEN[self.recon]}"
                f"_{GAUGE_FIX_TOKEN}{self.gauge_fix}"
                f"_{DAGGER_TOKEN}{self.dagger}"
                f"_{XPAY_TOKEN}{self.xpay}")

    @property
    def info(self):
        return PRECISIONS[self.precision]


_PREC_BY_TOKEN = {info.token: p for p, info in PRECISIONS.items()}
_RECON_BY_TOKEN = {tok: r for r, tok in RECON_TOKEN.items()}
_NAME_RE = re.compile(
    rf"^{OPERATOR_TOKEN}_(?P<p>[a-z]+)_(?P<r>r\d+)_{GAUGE_FIX_TOKEN}(?P<gf>[01])"
    rf"_{DAGGER_TOKEN}(?P<dag>[01])_{XPAY_TOKEN}(?P<xpay>[01])$")


def parse(name):
    """The Variant a name spells; ValueError naming the bad part otherwise."""
    m = _NAME_RE.match(name)
    if not m:
        raise ValueError(f"not a variant name: {name!r}")
    if m["p"] not in _PREC_BY_TOKEN:
        raise ValueError(f"{name}: unknown precision {m['p']!r}")
    if m["r"] not in _RECON_BY_TOKEN:
        raise ValueError(f"{name}: unknown reconstruction {m['r']!r}")
    return Variant(_PREC_BY_TOKEN[m["p"]], _RECON_BY_TOKEN[m["r"]],
                   int(m["gf"]), int(m["dag"]), int(m["xpay"]))
