"""Command line of the generator: python3 -m generator <command> ...

  list     print the selected variant names (with --deps: their templates)
  variant  render one variant's three files into --outdir
  registry render wd_registry.c / wd_registry_cuda.cu for the selection
  physics  render wd_physics.h
  all      render everything for the selection (for reading, or the tests)
  buildid  write wd_build_id.h: a hash of the given generated sources and
           options, which keys the GPU tune cache to this exact build
  coarse   the multigrid coarse-operator family (docs/coarse-kernels.md),
           its own manifest: coarse list | variant NAME | registry | all,
           with the same filters (an empty selection is allowed: a build
           may leave every coarse variant out)
"""

import argparse
import hashlib
import os
import sys

from . import coarse, render
from .manifest import coarse_manifest, manifest, select
from .naming import parse


def _selection(args):
    return select(manifest(), args.kernels, args.kernels_exclude)


def _coarse(args):
    if args.coarse_cmd == "variant":
        try:
            v = parse(args.name)
        except ValueError as e:
            print(f"generator: {e}", file=sys.stderr)
            return 2
        if v not in coarse_manifest():
            print(f"generator: {args.name} is not in the coarse manifest", file=sys.stderr)
            return 2
        os.makedirs(args.outdir, exist_ok=True)
        coarse.render_variant(v, args.outdir)
        return 0
    chosen = select(coarse_manifest(), args.kernels, args.kernels_exclude)
    if args.coarse_cmd == "list":
        for v in chosen:
            print(" ".join([v.name] + coarse.template_deps(v)) if args.deps else v.name)
        return 0
    os.makedirs(args.outdir, exist_ok=True)
    if args.coarse_cmd == "all":
        for v in chosen:
            coarse.render_variant(v, args.outdir)
    coarse.render_registry(chosen, args.outdir)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m generator", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)

    def add_filter(p):
        p.add_argument("--kernels", default="*",
                       help="include globs, comma or space separated (default *)")
        p.add_argument("--kernels-exclude", default="",
                       help="exclude globs, comma or space separated")

    p = sub.add_parser("list", help="print the selected variant names")
    add_filter(p)
    p.add_argument("--deps", action="store_true",
                   help="print 'name template...' per line")
    p = sub.add_parser("variant", help="render one variant")
    p.add_argument("name")
    p.add_argument("--outdir", required=True)
    p = sub.add_parser("registry", help="render the registry for the selection")
    add_filter(p)
    p.add_argument("--outdir", required=True)
    p = sub.add_parser("physics", help="render wd_physics.h")
    p.add_argument("--outdir", required=True)
    p = sub.add_parser("all", help="render everything for the selection")
    add_filter(p)
    p.add_argument("--outdir", required=True)
    p = sub.add_parser("buildid", help="write wd_build_id.h")
    p.add_argument("--out", required=True)
    p.add_argument("--salt", default="", help="build options that change the code")
    p.add_argument("sources", nargs="*")
    p = sub.add_parser("coarse", help="the coarse-operator family")
    csub = p.add_subparsers(dest="coarse_cmd", required=True)
    q = csub.add_parser("list", help="print the selected coarse variant names")
    add_filter(q)
    q.add_argument("--deps", action="store_true", help="print 'name template...' per line")
    q = csub.add_parser("variant", help="render one coarse variant")
    q.add_argument("name")
    q.add_argument("--outdir", required=True)
    for what in ("registry", "all"):
        q = csub.add_parser(what, help=f"render the coarse {what} for the selection")
        add_filter(q)
        q.add_argument("--outdir", required=True)
    args = ap.parse_args(argv)

    if args.cmd == "coarse":
        return _coarse(args)

    if args.cmd == "buildid":
        h = hashlib.sha256(args.salt.encode())
        for path in sorted(args.sources, key=os.path.basename):
            h.update(os.path.basename(path).encode())
            with open(path, "rb") as f:
                h.update(f.read())
        render.write_build_id(args.out, h.hexdigest()[:16])
        return 0

    if args.cmd == "list":
        chosen = _selection(args)
        if not chosen:
            print(f"no variant matches --kernels={args.kernels!r} "
                  f"--kernels-exclude={args.kernels_exclude!r}", file=sys.stderr)
            return 2
        for v in chosen:
            print(" ".join([v.name] + render.template_deps(v)) if args.deps else v.name)
        return 0
    os.makedirs(args.outdir, exist_ok=True)
    if args.cmd == "variant":
        try:
            v = parse(args.name)
        except ValueError as e:
            print(f"generator: {e}", file=sys.stderr)
            return 2
        if v not in manifest():
            hint = " (a coarse variant: `coarse variant`)" if v in coarse_manifest() else ""
            print(f"generator: {args.name} is not in the manifest{hint}", file=sys.stderr)
            return 2
        render.render_variant(v, args.outdir)
    elif args.cmd == "registry":
        render.render_registry(_selection(args), args.outdir)
    elif args.cmd == "physics":
        render.render_physics(args.outdir)
    elif args.cmd == "all":
        chosen = _selection(args)
        for v in chosen:
            render.render_variant(v, args.outdir)
        render.render_registry(chosen, args.outdir)
        render.render_physics(args.outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
