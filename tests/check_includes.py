"""The module dependencies of docs/architecture.md, checked on the includes.

Every quoted #include of a file in include/, runtime/<module>/ or cli/ must
name a header of its own module, of a module it may depend on (the table
below, the same as docs/architecture.md draws), a public header (include/),
or a header the build generates.  Headers must be unique by name across
the tree (they are found through one include path).  Usage:
    python3 check_includes.py SOURCE_ROOT
Prints one line per violation and "N of M includes violate" last; exit 1
on any violation.
"""
import pathlib
import re
import sys

# module -> the modules it may include (besides itself and include/)
ALLOWED = {
    "include": set(),
    "core": set(),
    "comm": {"core"},
    "operator": {"core"},
    "backends": {"core", "comm", "operator"},
    "gauge": {"core", "comm", "backends"},
    "numerics": {"core", "comm", "operator", "backends", "gauge"},
    "io": {"core", "comm", "gauge"},
    "physics": {"core", "comm", "numerics"},
    "multigrid": {"core", "comm", "operator", "backends", "gauge", "numerics", "io"},
    "python": set(),
    "cli": set(),
}
# The benchmark subcommands time single kernels and backend operations,
# which the public API deliberately does not offer: they alone of the
# program may include the library's module headers.
BENCH_ALLOWED = {"core", "operator", "backends", "numerics", "gauge"}
# Headers the build writes (generated/ and vcs_tag): module they belong to.
GENERATED = {"wd_physics.h": "core", "wd_build_id.h": "backends", "wd_version.h": "cli"}
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCES = ("*.c", "*.h", "*.cu")


def module_of(path, root):
    rel = path.relative_to(root).parts
    if rel[0] == "runtime":
        return rel[1]
    return rel[0]


def main():
    root = pathlib.Path(sys.argv[1]).resolve()
    files = []
    for top in ("include", "runtime", "cli", "python"):
        for pattern in SOURCES:
            files += (root / top).rglob(pattern)
    owner = {}
    bad = []
    for f in sorted(files):
        if f.suffix in (".h",):
            if f.name in owner:
                bad.append(f"{f.relative_to(root)}: header name also used by {owner[f.name][1]}")
            owner[f.name] = (module_of(f, root), f.relative_to(root))
    for name, mod in GENERATED.items():
        owner.setdefault(name, (mod, "<generated>"))
    checked = 0
    for f in sorted(files):
        mod = module_of(f, root)
        if mod not in ALLOWED:
            bad.append(f"{f.relative_to(root)}: module '{mod}' is not in the table")
            continue
        allowed = set(ALLOWED[mod]) | {mod, "include"}
        if mod == "cli" and (f.name.startswith("bench_") or f.name == "cli_bench.h"):
            allowed |= BENCH_ALLOWED
        for inc in INCLUDE_RE.findall(f.read_text(errors="replace")):
            checked += 1
            if inc not in owner:
                bad.append(f"{f.relative_to(root)}: includes \"{inc}\", which no module owns")
                continue
            dep = owner[inc][0]
            if dep not in allowed:
                bad.append(f"{f.relative_to(root)} ({mod}): includes \"{inc}\" of module "
                           f"'{dep}', which {mod} may not depend on")
    for line in bad:
        print(line)
    print(f"{len(bad)} of {checked} includes violate the module dependencies")
    if checked == 0:
        print("no include checked: the tree was not found")
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
