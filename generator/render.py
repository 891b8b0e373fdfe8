"""Rendering: the per-variant context, the expression helpers, the outputs.

The templates hold structure (loops over hops, spins, colours); every number
and every expression with a coefficient in it is made here from physics.py's
data.  Per variant the generator writes

    <name>_body.h   the per-site function (gcc and nvcc)
    <name>_cpu.c    the OpenMP loop over one parity
    <name>_cuda.cu  the CUDA kernel and its launcher

and once per build wd_physics.h (constants and host-side layout helpers) and
wd_registry.c / wd_registry_cuda.cu (the table of what was built).
"""

import os

import jinja2

from . import physics
from .axes import (CPU_CLONES, CPU_SIMD_RECONS, CPU_SIMDLEN, NDIM, PRECISIONS, SPINOR_REALS,
                   TIME_DIR, Operator, Precision, Recon, vector_type)

TEMPLATE_DIR = os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "templates")

OUTPUT_SUFFIXES = ("_body.h", "_cpu.c", "_cuda.cu")
REGISTRY_OUTPUTS = ("wd_registry.c", "wd_registry_cuda.cu")
PHYSICS_OUTPUT = "wd_physics.h"

MAIN_TEMPLATES = {"_body.h": "dslash_body.h.j2", "_cpu.c": "dslash_cpu.c.j2",
                  "_cuda.cu": "dslash_cuda.cu.j2"}
# the clover kernel's own body; its loops are the Dslash ones (one thread an
# output site, the input read at the same site)
SITE_TEMPLATES = dict(MAIN_TEMPLATES, **{"_body.h": "clover_body.h.j2"})
# N > 1 right-hand sides a thread: the hops load each link once for all
MULTI_RHS_TEMPLATES = dict(MAIN_TEMPLATES, **{"_body.h": "dslash_mrhs_body.h.j2"})
# a thread a site and right-hand side: the one-RHS site function of
# right-hand side r, the CUDA kernel over blocks of sites x N
THREAD_RHS_TEMPLATES = dict(MAIN_TEMPLATES, **{"_cuda.cu": "dslash_thread_cuda.cu.j2"})
# ... the block's links staged in shared memory (the CPU form is the same)
SHARED_RHS_TEMPLATES = dict(MAIN_TEMPLATES, **{"_cuda.cu": "dslash_shared_cuda.cu.j2"})
# where the epilogue partials read x and write out: the one right-hand side
SINGLE_RHS_POINTERS = {"x": "a->x", "x_norm": "a->x_norm", "out": "a->out",
                       "out_norm": "a->out_norm", "off": ""}
# ... and right-hand side r of the thread form's site function (`rs`: its
# vector elements from one right-hand side to the next)
THREAD_RHS_POINTERS = {"x": "a->x", "out": "a->out", "off": " + r * rs",
                       "x_norm": "(a->x_norm + r * (long)a->rhs_norm_stride)",
                       "out_norm": "(a->out_norm + r * (long)a->rhs_norm_stride)"}
COLOURS = 3


def _env():
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE_DIR),
        undefined=jinja2.StrictUndefined, trim_blocks=True,
        lstrip_blocks=True, keep_trailing_newline=True)
    return env


# ---------------------------------------------------------------- expressions

def _num(x):
    """An exact small real as C source (coefficients are integers here)."""
    r = round(x)
    assert abs(r - x) < physics.EPS, f"non-integer coefficient {x}"
    return int(r)


def _sum(terms):
    """Join (integer scale, expression) terms into one C expression."""
    parts = []
    for scale, expr in terms:
        if scale == 0:
            continue
        mag = abs(scale)
        body = expr if mag == 1 else f"{mag} * {expr}"
        parts.append(("- " if scale < 0 else "+ ") + body)
    if not parts:
        return "0"
    text = " ".join(parts)
    return text[2:] if text.startswith("+ ") else "-" + text[2:]


def cmul_terms(coef, re, im):
    """(re terms, im terms) of coef * (re + i im) for an exact coefficient."""
    a, b = _num(coef.real), _num(coef.imag)
    return [(a, re), (-b, im)], [(a, im), (b, re)]


def lincomb(coefs, names):
    """(re, im) C expressions of sum_k coefs[k] * z_k; names[k] = (re, im)."""
    re_terms, im_terms = [], []
    for coef, (re, im) in zip(coefs, names):
        if abs(coef) < physics.EPS:
            continue
        r, i = cmul_terms(coef, re, im)
        re_terms += r
        im_terms += i
    return _sum(re_terms), _sum(im_terms)


def cprod(f, g):
    """(re, im) of the product of two named complex factors ("x*" = conj).

    "inv" is a real scalar.
    """
    def parts(name):
        if name == "inv":
            return "inv", None
        conj = name.endswith("*")
        base = name.rstrip("*")
        return f"{base}_re", (f"-{base}_im" if conj else f"{base}_im")

    fr, fi = parts(f)
    gr, gi = parts(g)
    if gi is None:
        return f"{fr} * {gr}", f"{fi} * {gr}"
    if fi is None:
        return f"{fr} * {gr}", f"{fr} * {gi}"

    def mul(x, y):
        neg = x.startswith("-") != y.startswith("-")
        return (neg, f"{x.lstrip('-')} * {y.lstrip('-')}")

    def combine(p, q, sub):
        (n1, e1), (n2, e2) = p, q
        n2 = n2 != sub
        text = ("-" if n1 else "") + e1 + (" - " if n2 else " + ") + e2
        return text
    return combine(mul(fr, gr), mul(fi, gi), True), combine(mul(fr, gi), mul(fi, gr), False)


def link_name(row, col):
    return next(n for n, rc in physics.LINK_ELEMENT.items() if rc == (row, col))


# ---------------------------------------------------------------- contexts

def _link_elements(widths):
    """[(element, component)] of every stored real, and each element's offset
    in reals (the start of its sub-array, in units of the site stride)."""
    where, roff = [], []
    for e, w in enumerate(widths):
        roff.append(sum(widths[:e]))
        where += [(e, "xyzw"[c]) for c in range(w)]
    return where, roff


def _link_context(v):
    info = v.info
    widths = info.gauge_widths[v.recon]
    count = int(v.recon)
    assert sum(widths) == count, f"{v.name}: {count} reals in elements {widths}"
    lit = info.literal
    where, roff = _link_elements(widths)
    raw = [f"g{e}.{c}" for e, c in where]
    if info.has_norm:
        stored = [f"wd_s2f({r}) * WD_HALF_INV_SCALE" for r in raw]
    else:
        stored = raw
    ctx = {
        "store": info.store,
        "elements": [(vector_type(info.store, w), r) for w, r in zip(widths, roff)],
        "stored": stored,
        "lit": lit,
        "sincospi": "wd_sincospi" + lit,
        "rcp": "wd_rcp" + lit,
    }
    if v.recon == Recon.R8:
        names = list(physics.R8_COMPLEX)
        ctx["r8_complex"] = [(n, stored[2 * i], stored[2 * i + 1])
                             for i, n in enumerate(names)]
        ctx["r8_phases"] = [(n, stored[len(names) * 2 + i])
                            for i, n in enumerate(physics.R8_PHASES)]
        ctx["r8_temps"] = [(n,) + cprod(f, g) for n, (f, g) in physics.R8_TEMPS]
        ctx["r8_products"] = []
        for n, terms in physics.R8_PRODUCTS:
            re_terms, im_terms = [], []
            for s, f, g in terms:
                r, i = cprod(f, g)
                re_terms.append((s, f"({r})"))
                im_terms.append((s, f"({i})"))
            ctx["r8_products"].append((n, _sum(re_terms), _sum(im_terms)))
    else:
        ctx["direct"] = [(link_name(q // 6, (q % 6) // 2), q % 2, stored[q])
                         for q in physics.STORED_REALS[v.recon]]
        if v.recon == Recon.R12:
            ctx["cross"] = [(link_name(2, i), link_name(0, j), link_name(1, k),
                             link_name(0, k), link_name(1, j))
                            for i, j, k in physics.cross_conj_terms()]
    return ctx


def _matvec(adjoint):
    """(re, im) of (U h)_r or (U^dag h)_r for r = 0..2, h locals h{j}{c}."""
    rows = []
    for j in range(2):
        per_row = []
        for r in range(COLOURS):
            re_terms, im_terms = [], []
            for c in range(COLOURS):
                u = link_name(c, r) if adjoint else link_name(r, c)
                if adjoint:
                    # conj(u) h = (ur hr + ui hi) + i (ur hi - ui hr)
                    re_terms += [(1, f"{u}_re * h{j}{c}_re"), (1, f"{u}_im * h{j}{c}_im")]
                    im_terms += [(1, f"{u}_re * h{j}{c}_im"), (-1, f"{u}_im * h{j}{c}_re")]
                else:
                    re_terms += [(1, f"{u}_re * h{j}{c}_re"), (-1, f"{u}_im * h{j}{c}_im")]
                    im_terms += [(1, f"{u}_re * h{j}{c}_im"), (1, f"{u}_im * h{j}{c}_re")]
            per_row.append((_sum(re_terms), _sum(im_terms)))
        rows.append(per_row)
    return rows


def _hop_context(v, hop, spinor_width):
    lay = physics.spinor_layout(spinor_width)
    elements = physics.elements_for_spins(hop.spins, spinor_width)
    proj = []
    for j in range(2):
        per_c = []
        for c in range(COLOURS):
            names = [(f"e{lay[(k, c, 0)][0]}.{lay[(k, c, 0)][1]}",
                      f"e{lay[(k, c, 1)][0]}.{lay[(k, c, 1)][1]}")
                     for k in range(4)]
            re, im = lincomb(hop.proj[j], names)
            if v.info.has_norm:
                # 16-bit fixed point: the projection's integer combination
                # of the raw values (C promotes them to int; exact), then
                # one conversion per component instead of one per term
                re, im = f"wd_i2f({re})", f"wd_i2f({im})"
            per_c.append((re, im))
        proj.append(per_c)
    acc = []
    for i in range(4):
        per_c = []
        for c in range(COLOURS):
            re, im = lincomb(hop.recon[i], [(f"w0{c}_re", f"w0{c}_im"),
                                            (f"w1{c}_re", f"w1{c}_im")])
            per_c.append(None if re == "0" else (re, im))
        acc.append(per_c)
    gauge_fixed = v.gauge_fix and hop.mu == TIME_DIR
    return {
        # where the hop reads, per site function (dslash_site.j2): "site"
        # finds its neighbours (wd_site_neighbours); "row" is a site of a
        # vector row (wd_kernel.h, wd_row), whose x neighbours come from the
        # row's rotated copy and whose other neighbours are at the row's
        # constant offsets, and which never crosses the time boundary
        "src": {"site": _hop_source_site(hop), "row": _hop_source_row(hop),
                "rhs": _hop_source_rhs(hop)},
        # a hop that crosses the time boundary carries the boundary sign
        "wrap": _hop_source_site(hop)["wrap"],
        "label": hop.label,
        "mu": hop.mu,
        "forward": hop.forward,
        "elements": elements,
        "proj": proj,
        "acc": acc,
        "matvec": _matvec(adjoint=not hop.forward),
        "partial": "hop_gauge_fixed.j2" if gauge_fixed else "hop_link.j2",
        # a unit link but on the last time slice (temporal gauge)
        "gauge_fixed": gauge_fixed,
    }


def _hop_source_site(hop, rhs="0", norm="a->in_norm"):
    """A site found by wd_site_neighbours: its spinor is read at index `hn`
    of `hin` (element stride `hs`, norms `hnorm`), which hop_ghost.j2 sets
    to the field `in` at nb, or, for a ghost site whose face the exchange
    left where it landed (wd_ghost_src), to that face of right-hand side
    `rhs`."""
    link_parity = "a->parity" if hop.forward else "opp"
    return {
        "load": "WD_LOAD",
        "nb": f"n.{'fwd' if hop.forward else 'bwd'}[{hop.mu}]",
        "in": "hin", "stride": "hs", "norm": "hnorm", "idx": "hn",
        "ghost": {"in": "in", "norm": norm, "rhs": rhs, "mu": hop.mu,
                  "dir": 0 if hop.forward else 1},
        "gauge": f"gauge + a->goff[{hop.mu}][{link_parity}]",
        "gi": "cb" if hop.forward else "nb",
        "gs": f"a->gstride[{hop.mu}]",
        "wrap": ("n.t_last" if hop.forward else "n.t_first") if hop.mu == TIME_DIR else None,
    }


def _hop_source_rhs(hop):
    """A site of right-hand side r (the thread form): its own `in` and
    half-precision norms (in_norm), offset by r in the site function."""
    return _hop_source_site(hop, rhs="r", norm="in_norm")


def _hop_source_row(hop):
    src = dict(_hop_source_site(hop), ghost=None, idx="nb", stride="stride", norm="a->in_norm",
               **{"in": "in"})
    if hop.mu == 0:
        # the row's copy holds its sites from the last one round to the
        # first: the site before lane j's x is at j + p (p: the row starts
        # at odd x), the site after it at j + p + 1
        src.update(nb=f"j + row->p{' + 1' if hop.forward else ''}",
                   norm="row->x_norm", stride="row->x_stride", **{"in": "x_in"})
        if not hop.forward:
            src.update(gauge="x_link", gs="row->x_stride")
    else:
        src["nb"] = f"cb + row->{'fwd' if hop.forward else 'bwd'}[{hop.mu}]"
    if src["wrap"]:
        src["wrap"] = "0"
    return src


def _shared_links(v, link, hops):
    """The shared-memory form: element e of hop h's link of the block's
    site s at lk[(h E + e) bx + s] (E elements a link, all of one vector
    type); the hops' "shared" source reads it there (`lk` offset by the
    thread's site, `lb` = bx), and `stage` lists the loads that fill it,
    the k-th by the threads of right-hand side k % N of each site."""
    assert not v.gauge_fix, f"{v.name}: the shared form stages every hop's link (gf0)"
    types = {t for t, _ in link["elements"]}
    assert len(types) == 1, f"{v.name}: link elements of one vector type, not {types}"
    nel = len(link["elements"])
    stage = []
    for h, hop in enumerate(hops):
        site = hop["src"]["site"]
        hop["src"]["shared"] = dict(hop["src"]["rhs"], load="*", gi="0", gs="lb",
                                    gauge=f"(const {link['store']} *)(lk + {h * nel} * lb)")
        for e, (vtype, roff) in enumerate(link["elements"]):
            stage.append({"k": h * nel + e, "label": hop["label"], "type": vtype,
                          "gauge": site["gauge"].replace("a->", "a."), "roff": roff,
                          "gs": site["gs"].replace("a->", "a."),
                          "gi": "cbc" if hop["forward"] else site["nb"]})
    return {"type": next(iter(types)), "per_site": len(stage), "loads": stage}


def cpu_rows(v):
    """The variant's one-RHS CPU loop runs vector rows (axes.CPU_SIMD_RECONS)."""
    return v.op == Operator.WILSON and v.nrhs == 1 and v.recon in CPU_SIMD_RECONS


def _spinor_context(info):
    width = info.spinor_width
    lay = physics.spinor_layout(width)
    out = [[[f"r{s}{c}_re", f"r{s}{c}_im"] for c in range(COLOURS)] for s in range(4)]
    slots = [[None] * width for _ in range(SPINOR_REALS // width)]
    for (s, c, part), (e, comp) in lay.items():
        slots[e]["xyzw".index(comp)] = out[s][c][part]
    xload = [[(f"x{lay[(s, c, 0)][0]}.{lay[(s, c, 0)][1]}",
               f"x{lay[(s, c, 1)][0]}.{lay[(s, c, 1)][1]}") for c in range(COLOURS)]
             for s in range(4)]
    if info.has_norm:
        xload = [[(f"wd_s2f({re}) * x_scale", f"wd_s2f({im}) * x_scale") for re, im in row]
                 for row in xload]
    return {
        "svec": vector_type(info.store, width),
        "spinor_elements": SPINOR_REALS // width,
        "spinor_width": width,
        "store_slots": slots,
        "xload": xload,
        "all_reals": [name for row in out for pair in row for name in pair],
        # what the clover kernel needs before it reads its input as xload
        "in_prelude": (["const float x_scale = WD_LOAD(a->in_norm + cb) * WD_HALF_INV_SCALE;"]
                       if info.has_norm else []),
    }


def _cmuladd_terms(entry, conj, u):
    """(re terms, im terms) of e * u (conj: conj(e) * u); e, u local names."""
    er, ei, ur, ui = f"{entry}_re", f"{entry}_im", f"{u}_re", f"{u}_im"
    sign = -1 if conj else 1
    return ([(1, f"{er} * {ur}"), (-sign, f"{ei} * {ui}")],
            [(1, f"{er} * {ui}"), (sign, f"{ei} * {ur}")])


def _clover_context(info):
    """The clover epilogue: o = C o at the output site (physics.py, clover).

    u{b}{i}: the internal spinor o rotated to DeGrand-Rossi spin
    CHIRAL_SPINS[b][i // 3], colour i % 3 (times CLOVER_BASIS_NORM); the
    block's reals become locals k{b}_{r} (diagonal) and L{b}{i}{j} (lower);
    v{b}{i} = (block b) u{b}; o = CLOVER_FROM_CHIRAL v (times the norm, which
    the stored field's CLOVER_SCALE cancels)."""
    width = info.spinor_width
    store_width = 2 if info.store == "double" else 4
    dim = physics.CLOVER_BLOCK_DIM
    o = [[(f"o{k}{c}_re", f"o{k}{c}_im") for c in range(COLOURS)] for k in range(4)]
    blocks = []
    for b, spins in enumerate(physics.CHIRAL_SPINS):
        to_chiral = []
        for i in range(dim):
            s, c = spins[i // COLOURS], i % COLOURS
            re, im = lincomb(physics.CLOVER_TO_CHIRAL[s], [o[k][c] for k in range(4)])
            to_chiral.append((f"u{b}{i}", re, im))
        first = b * physics.CLOVER_BLOCK_REALS
        elements = sorted({(first + r) // store_width
                           for r in range(physics.CLOVER_BLOCK_REALS)})
        assert first % store_width == 0, "a clover block starts inside an element"

        def real(r):
            e, comp = divmod(first + r, store_width)
            raw = f"c{e}.{'xyzw'[comp]}"
            return f"wd_s2f({raw}) * cs{b}" if info.has_norm else raw
        named = [(f"k{b}_{i}", real(i)) for i in range(dim)]
        for q, (i, j) in enumerate(physics.CLOVER_LOWER):
            named.append((f"L{b}{i}{j}_re", real(dim + 2 * q)))
            named.append((f"L{b}{i}{j}_im", real(dim + 2 * q + 1)))
        matvec = []
        for i in range(dim):
            re_terms = [(1, f"k{b}_{i} * u{b}{i}_re")]
            im_terms = [(1, f"k{b}_{i} * u{b}{i}_im")]
            for j in range(dim):
                if j == i:
                    continue
                entry = f"L{b}{i}{j}" if i > j else f"L{b}{j}{i}"
                r, m = _cmuladd_terms(entry, i < j, f"u{b}{j}")
                re_terms += r
                im_terms += m
            matvec.append((f"v{b}{i}", _sum(re_terms), _sum(im_terms)))
        prelude = ([f"const float cs{b} = WD_LOAD(a->clover_norm + 2 * cb + {b}) "
                    "* WD_HALF_INV_SCALE;"] if info.has_norm else [])
        blocks.append({"index": b, "spins": spins, "to_chiral": to_chiral,
                       "elements": elements, "named": named, "matvec": matvec,
                       "prelude": prelude})
    # back: o_k = sum_s CLOVER_FROM_CHIRAL[k][s] v(s)
    where = {s: (b, i) for b, spins in enumerate(physics.CHIRAL_SPINS)
             for i, s in enumerate(spins)}
    back = []
    for k in range(4):
        for c in range(COLOURS):
            names = [(f"v{where[s][0]}{COLOURS * where[s][1] + c}_re",
                      f"v{where[s][0]}{COLOURS * where[s][1] + c}_im") for s in range(4)]
            re, im = lincomb(physics.CLOVER_FROM_CHIRAL[k], names)
            back.append((f"o{k}{c}", re, im))
    return {"cvec": vector_type(info.store, store_width), "blocks": blocks, "back": back}


def partials(v):
    """The partial templates a variant renders with (its dependencies)."""
    fixed = "fixed" if v.info.has_norm else "float"
    out = {
        "spinor_load": f"spinor_load_{fixed}.j2",
        "spinor_store": f"spinor_store_{fixed}.j2",
        "xpay": f"xpay{v.xpay}_{fixed}.j2",
        "clover": "clover_apply.j2" if v.clover else "clover_none.j2",
    }
    if v.hopping:
        out["link"] = f"link_r{int(v.recon)}.j2"
    return out


def main_templates(v):
    if not v.hopping:
        return SITE_TEMPLATES
    if v.shared:
        return SHARED_RHS_TEMPLATES
    if v.threads:
        return THREAD_RHS_TEMPLATES
    return MAIN_TEMPLATES if v.nrhs == 1 else MULTI_RHS_TEMPLATES


def _multi_rhs_context(v):
    """Right-hand side q of the site function's group (its first r0) of in,
    out and x starts (r0 + q) * rs vector elements (its norms (r0 + q) *
    a->rhs_norm_stride floats) after the first."""
    has_norm = v.info.has_norm
    prelude, ptrs = [], []
    for q in range(v.nrhs):
        norm = f"a->rhs_norm_stride * (r0 + {q})"
        prelude.append(["const float in_scale = WD_LOAD(hnorm + hn) * WD_HALF_INV_SCALE;"]
                       if has_norm else [])
        ptrs.append({"x": "a->x", "out": "a->out", "off": f" + (r0 + {q}) * rs",
                     "x_norm": f"(a->x_norm + {norm})", "out_norm": f"(a->out_norm + {norm})"})
    return {"nrhs": v.nrhs, "rhs_in_prelude": prelude, "rhs_ptrs": ptrs}


def template_deps(v):
    hop_partials = set()
    if v.hopping and (v.nrhs == 1 or v.threads):
        hop_partials = ({"dslash_site.j2", "hop_link.j2", "hop_ghost.j2"}
                        | ({"hop_gauge_fixed.j2"} if v.gauge_fix else set()))
    return sorted(set(main_templates(v).values()) | set(partials(v).values()) | hop_partials)


def variant_context(v):
    info = v.info
    ctx = {
        "name": v.name,
        "variant": v,
        "prec_cname": info.cname,
        "real": info.compute,
        "lit": info.literal,
        "has_norm": info.has_norm,
        "partials": partials(v),
        "ndim": NDIM,
        "clover": _clover_context(info),
        "what": {Operator.WILSON: "D", Operator.WILSON_CLOVER: "C D",
                 Operator.CLOVER: "C"}[v.op],
        "ptr": SINGLE_RHS_POINTERS,
        # the site function the body renders (dslash_site.j2): one site, or
        # one site of right-hand side r (the thread form)
        "site_mode": "rhs" if v.threads else "site",
        "rhs_ptr": THREAD_RHS_POINTERS,
        "threads": v.threads,
    }
    ctx["reduce"] = v.reduces
    # the site function's sums (dslash_site.j2) are rendered for the 16-bit
    # store alone (spinor_store_fixed.j2): a reducing variant must have one
    assert not v.reduces or info.has_norm, v.name
    ctx["sums"] = False
    ctx.update(_multi_rhs_context(v))
    ctx["cpu_rows"] = cpu_rows(v)
    ctx["spinor_reals"] = SPINOR_REALS
    ctx["cpu_simdlen"] = CPU_SIMDLEN[v.precision]
    ctx["cpu_clones"] = ", ".join(f'"{c}"' for c in CPU_CLONES)
    if v.hopping:
        ctx["link"] = _link_context(v)
        ctx["hops"] = [_hop_context(v, h, info.spinor_width) for h in physics.hops(v.dagger)]
        if v.shared:
            ctx["stage"] = _shared_links(v, ctx["link"], ctx["hops"])
    ctx.update(_spinor_context(info))
    return ctx


def banner(template, what):
    return (f"/* Generated by the wdirac generator from templates/{template} for "
            f"{what}.  Do not edit: change the template or generator/ and rebuild. */")


def render_variant(v, outdir):
    env = _env()
    ctx = variant_context(v)
    written = []
    for suffix, template in main_templates(v).items():
        text = env.get_template(template).render(
            banner=banner(template, v.name), **ctx)
        path = os.path.join(outdir, v.name + suffix)
        _write(path, text)
        written.append(path)
    return written


def render_registry(variants, outdir):
    env = _env()
    rows = [{"name": v.name, "op": int(v.op), "nrhs": v.nrhs,
             "form": int(v.form) if v.hopping else 0, "prec": v.info.cname,
             "recon": int(v.recon) if v.hopping else 0,
             "gauge_fix": v.gauge_fix, "dagger": v.dagger, "xpay": v.xpay,
             "reduce": v.reduces}
            for v in variants]
    for out in REGISTRY_OUTPUTS:
        template = out + ".j2"
        text = env.get_template(template).render(
            banner=banner(template, f"{len(rows)} selected variants"), rows=rows)
        _write(os.path.join(outdir, out), text)


def physics_context():
    s = physics.BASIS_CHANGE
    sd = physics.dagger(s)

    def table(m):
        return [[(repr(float(complex(z).real)), repr(float(complex(z).imag))) for z in row]
                for row in m]
    return {
        "half_scale": physics.HALF_SCALE,
        "phase_scale": repr(physics.R8_PHASE_SCALE),
        "basis_change": table(s),
        "basis_change_inv": table(sd),
        "stored": {int(r): list(q) for r, q in physics.STORED_REALS.items()},
        "r8_complex": [physics.LINK_ELEMENT[n] for n in physics.R8_COMPLEX],
        "r8_phases": [physics.LINK_ELEMENT[n] for n in physics.R8_PHASES],
        "recons": [int(r) for r in Recon],
        "precisions": [{"cname": i.cname, "bytes": int(p), "token": i.token,
                        "spinor_width": i.spinor_width,
                        "gauge_widths": {int(r): list(w) for r, w in i.gauge_widths.items()},
                        "has_norm": int(i.has_norm)}
                       for p, i in PRECISIONS.items()],
        "spinor_reals": SPINOR_REALS,
        "max_link_elements": max(len(w) for i in PRECISIONS.values()
                                 for w in i.gauge_widths.values()),
        "clover_scale": repr(physics.CLOVER_SCALE),
        "clover_block_reals": physics.CLOVER_BLOCK_REALS,
        "clover_site_reals": physics.CLOVER_SITE_REALS,
        "clover_lower": physics.CLOVER_LOWER,
        "chiral_spins": physics.CHIRAL_SPINS,
    }


def render_physics(outdir):
    env = _env()
    template = PHYSICS_OUTPUT + ".j2"
    text = env.get_template(template).render(
        banner=banner(template, "every variant"), **physics_context())
    _write(os.path.join(outdir, PHYSICS_OUTPUT), text)


def write_build_id(path, digest):
    _write(path, "/* Generated by the wdirac generator (buildid): a hash of the generated "
                 "CUDA sources.  Do not edit. */\n"
                 "#ifndef WDIRAC_BUILD_ID_H\n#define WDIRAC_BUILD_ID_H\n"
                 f"#define WD_BUILD_ID \"{digest}\"\n#endif\n")


def _write(path, text):
    """Write through a temporary name, so an interrupted run leaves no half file."""
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    os.replace(tmp, path)


__all__ = ["render_variant", "render_registry", "render_physics", "template_deps",
           "partials", "variant_context", "Precision"]
