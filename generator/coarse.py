"""Rendering of the coarse-operator family (docs/coarse-kernels.md).

Per variant the generator writes

    <name>_body.h   the row function (gcc and nvcc): one output row of a site
    <name>_cpu.c    the OpenMP loop over coarse sites, a vector loop over rows
    <name>_cuda.cu  the CUDA kernel (a thread per site and row) and its launcher

and once per build wd_coarse_registry.c and wd_coarse_registry_cuda.cu
(the tables of what was built).
The kernels are loops with constant bounds, not unrolled: (2 Nvec)^2 x 9
complex products a site would be 20736 statements for Nvec 24.  The rows of
a site are the innermost loop, which gcc vectorizes (a column of a block is
contiguous in the row); gcc 12 vectorizes no outer loop of a nest with two
inner loops, so a row function under `omp simd` would run scalar.  Every
expression that differs by precision or dagger is made here; the templates
hold the loops.
"""

import os

from .axes import COARSE_BLOCKS
from .render import _env, _write, banner

# the 9 blocks of a site in groups of 3: a row's sums split over 3 CUDA
# threads (and summed group by group on the CPU, the same order).  Nine
# groups, a block a thread, measured slower on nvidia-h100-x1
# (docs/coarse-kernels.md): half Nvec 24 at 12^3x24 71% of copy against
# 77%, and no faster on the 1728 sites of an even-odd hop
GROUPS = 3
assert COARSE_BLOCKS % GROUPS == 0
# the CUDA kernel's threads hold a pair of rows each while they sum, then
# a row each in linear order for the output: GROUPS x Nvec threads a site
# must cover its 2 Nvec rows
assert GROUPS >= 2

MAIN_TEMPLATES = {"_body.h": "coarse_body.h.j2", "_cpu.c": "coarse_cpu.c.j2",
                  "_cuda.cu": "coarse_cuda.cu.j2"}
# N > 1 right-hand sides a call: templates of their own, so that the one-RHS
# variants' files stay byte for byte what they were
MULTI_TEMPLATES = {"_body.h": "coarse_multi_body.h.j2", "_cpu.c": "coarse_multi_cpu.c.j2",
                   "_cuda.cu": "coarse_multi_cuda.cu.j2"}
REGISTRY_OUTPUTS = ("wd_coarse_registry.c", "wd_coarse_registry_cuda.cu")
# the 48 KB of shared memory a launch gets without opting in: a multi-RHS
# kernel must fit one site in it (the launcher rounds down to whole sites)
CUDA_SHARED_LIMIT = 48 * 1024


def main_templates(v):
    return MULTI_TEMPLATES if v.nrhs > 1 else MAIN_TEMPLATES


def partials(v):
    """The partial templates a variant renders with (its dependencies)."""
    fixed = "fixed" if v.info.has_norm else "float"
    if v.nrhs > 1:
        return {"store": f"coarse_multi_store_{fixed}.j2",
                "cuda_store": f"coarse_multi_cuda_store_{fixed}.j2"}
    return {"store": f"coarse_store_{fixed}.j2", "cuda_store": f"coarse_cuda_store_{fixed}.j2"}


def template_deps(v):
    return sorted(set(main_templates(v).values()) | set(partials(v).values()))


def _loads(v):
    """Expressions of the input's and a link's (re, im) in float.

    16-bit storage: the link stays raw and the input carries both scales
    (f, once a block), so a product costs what it costs in single."""
    n = v.ncomp
    raw = {"in_re": "v[j]", "in_im": f"v[{n} + j]",
           "stage_re": "v[i]", "stage_im": f"v[{n} + i]",
           "link_re": "col[i]", "link_im": f"col[{n} + i]",
           "pair_re0": "pr.x", "pair_re1": "pr.y", "pair_im0": "pi.x", "pair_im1": "pi.y",
           "x_re": "xs[i]", "x_im": f"xs[{n} + i]"}
    if not v.info.has_norm:
        return dict(raw, block_prelude=[], x_prelude=[], pair_type="float2")
    return {
        "in_re": f"wd_s2f({raw['in_re']}) * f", "in_im": f"wd_s2f({raw['in_im']}) * f",
        "stage_re": f"wd_s2f({raw['stage_re']}) * f", "stage_im": f"wd_s2f({raw['stage_im']}) * f",
        "link_re": f"wd_s2f({raw['link_re']})", "link_im": f"wd_s2f({raw['link_im']})",
        "pair_type": "short2",
        **{k: f"wd_s2f({raw[k]})" for k in ("pair_re0", "pair_re1", "pair_im0", "pair_im1")},
        "x_re": f"wd_s2f({raw['x_re']}) * xn", "x_im": f"wd_s2f({raw['x_im']}) * xn",
        "block_prelude": [
            f"const float f = WD_LOAD(a->link_norm + {COARSE_BLOCKS} * s + d) "
            "* WD_LOAD(a->in_norm + nb) * (WD_HALF_INV_SCALE * WD_HALF_INV_SCALE);"],
        "x_prelude": ["const float xn = WD_LOAD(a->x_norm + s) * WD_HALF_INV_SCALE;"],
    }


def _multi_loads(v):
    """The multi-RHS variants' per right-hand side expressions: the input
    site of rhs r (v) and, in 16 bits, its block scale f (fs[r], once a
    block), x and its scale of rhs r, all as the one-RHS expressions of
    _loads (the same arithmetic a right-hand side)."""
    n, store = v.ncomp, v.info.store
    in_site = f"(const {store} *)a->in + (size_t)r * a->rhs_stride + (size_t)nb * {2 * n}"
    x_site = f"(const {store} *)a->x + (size_t)r * a->rhs_stride + (size_t)s * {2 * n}"
    ctx = {"in_site": in_site, "x_site": x_site, "rhs_scale_decl": [], "rhs_scale": [],
           "rhs_scale_use": []}
    ctx["stage_prelude"] = []
    if v.info.has_norm:
        scale = (f"WD_LOAD(a->link_norm + {COARSE_BLOCKS} * s + d) "
                 "* WD_LOAD(a->in_norm + (size_t)r * a->rhs_norm_stride + nb) "
                 "* (WD_HALF_INV_SCALE * WD_HALF_INV_SCALE)")
        ctx["rhs_scale_decl"] = [f"float fs[{v.nrhs}];"]
        ctx["rhs_scale"] = [f"fs[r] = {scale};"]
        ctx["rhs_scale_use"] = ["const float f = fs[r];"]
        ctx["stage_prelude"] = [f"const float f = {scale};"]
        ctx["x_prelude_rhs"] = ["const float xn = WD_LOAD(a->x_norm + (size_t)r * "
                                "a->rhs_norm_stride + s) * WD_HALF_INV_SCALE;"]
    else:
        ctx["x_prelude_rhs"] = []
    return ctx


def _multi_epilogue(v, loads, multi):
    """_epilogue for right-hand side r (its x, its scale)."""
    if not v.xpay:
        return {"epilogue_prelude_rhs": []}
    return {"epilogue_prelude_rhs": ([f"const {v.info.store} *xs = {multi['x_site']};"]
                                     + multi["x_prelude_rhs"]
                                     + ["const float ca = (float)a->a;"])}


def _epilogue(v, loads):
    """Row i's output from its operator value (re, im): the lines before
    the rows (per site) and the two expressions."""
    if not v.xpay:
        return {"epilogue_prelude": [], "out_re": "re", "out_im": "im"}
    store = v.info.store
    return {
        "epilogue_prelude": ([f"const {store} *xs = (const {store} *)a->x + (size_t)s * "
                              f"{2 * v.ncomp};"] + loads["x_prelude"]
                             + ["const float ca = (float)a->a;"]),
        "out_re": f"{loads['x_re']} + ca * re",
        "out_im": f"{loads['x_im']} + ca * im",
    }


def _sums(v, index):
    """Row i's operator value from the two chiralities' sums (index: "[i]"
    for the CPU's arrays of rows, "" for a CUDA thread's scalars)."""
    def part(c):
        p, m = f"{c}_p{index}", f"{c}_m{index}"
        if v.dagger:
            # D_c^dag = g5 D_c g5, g5 = +1 on the first nvec components of a
            # site: row i gets s_i (sum over + inputs - sum over - inputs)
            return f"i < {v.nvec} ? {p} - {m} : {m} - {p}"
        return f"{p} + {m}"
    return part("re"), part("im")


def variant_context(v):
    n, nvec = v.ncomp, v.nvec
    sum_re_rows, sum_im_rows = _sums(v, "[i]")
    sum_re_rhs, sum_im_rhs = _sums(v, "[r][i]")
    sum_re_row, sum_im_row = _sums(v, "")
    what = "D_c^dag in" if v.dagger else "D_c in"
    if v.xpay:
        what = f"x + a {what}"
    ctx = {
        "name": v.name,
        "variant": v,
        "what": what,
        "dagger_words": ("D_c^dag = g5 D_c g5 (gamma5-hermiticity): the chirality - "
                         "halves of input and output negated" if v.dagger
                         else "no dagger"),
        "precision_words": ("16-bit fixed point with float scales, float arithmetic"
                            if v.info.has_norm else "float storage and arithmetic"),
        "store": v.info.store,
        "nvec": nvec,
        "ncomp": n,
        "site_reals": 2 * n,
        "block_reals": 2 * n * n,
        "site_link_reals": COARSE_BLOCKS * 2 * n * n,
        "halves": [{"label": "+", "first": 0, "last": nvec, "acc": "p"},
                   {"label": "-", "first": nvec, "last": n, "acc": "m"}],
        "sum_re_rows": sum_re_rows,
        "sum_im_rows": sum_im_rows,
        "sum_re_row": sum_re_row,
        "sum_im_row": sum_im_row,
        "sum_re_rhs": sum_re_rhs,
        "sum_im_rhs": sum_im_rhs,
        "nrhs": v.nrhs,
        # the blocks' groups: the CUDA threads of a row, the order of sums
        "groups": GROUPS,
        "group_len": COARSE_BLOCKS // GROUPS,
        # the CUDA kernel's shared memory: the partials (a float4 per row
        # and group), the input site each group reads (a float2 per
        # component, scaled once), with half a row maximum per row and a
        # norm per site (templates/coarse_cuda_store_fixed.j2)
        "cuda_shared_site": (f"({GROUPS * n} * sizeof(float4) + {GROUPS * n} * sizeof(float2)"
                             + (f" + {n + 1} * sizeof(float))" if v.info.has_norm else ")")),
        "partials": partials(v),
    }
    loads = _loads(v)
    ctx.update(loads)
    ctx.update(_epilogue(v, loads))
    if v.nrhs > 1:
        multi = _multi_loads(v)
        ctx.update(multi)
        ctx.update(_multi_epilogue(v, loads, multi))
        # a site's shared memory: each group's N staged input sites (a
        # float2 a component), over which the partials of one right-hand
        # side at a time (a float4 a row and group) go once the sums are
        # done; with half the row maxima and the site's norm
        staged = GROUPS * v.nrhs * n * 8
        assert staged >= GROUPS * n * 16
        ctx["cuda_shared_site"] = (f"({GROUPS * v.nrhs * n} * sizeof(float2)"
                                   + (f" + {n + 1} * sizeof(float))" if v.info.has_norm
                                      else ")"))
        assert staged + (4 * (n + 1) if v.info.has_norm else 0) <= CUDA_SHARED_LIMIT, v.name
    return ctx


def render_variant(v, outdir):
    env = _env()
    ctx = variant_context(v)
    written = []
    for suffix, template in main_templates(v).items():
        text = env.get_template(template).render(banner=banner(template, v.name), **ctx)
        path = os.path.join(outdir, v.name + suffix)
        _write(path, text)
        written.append(path)
    return written


def render_registry(variants, outdir):
    env = _env()
    rows = [{"name": v.name, "prec": v.info.cname, "nvec": v.nvec, "dagger": v.dagger,
             "xpay": v.xpay, "nrhs": v.nrhs} for v in variants]
    for out in REGISTRY_OUTPUTS:
        template = out + ".j2"
        text = env.get_template(template).render(
            banner=banner(template, f"{len(rows)} selected coarse variants"), rows=rows)
        _write(os.path.join(outdir, out), text)
