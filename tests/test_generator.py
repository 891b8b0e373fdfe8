"""Tests of the generator: its physics data, names, determinism, meson deps.

    python3 tests/test_generator.py SOURCE_ROOT

1. physics: the basis change is unitary and makes gamma_4 diagonal; every
   hop's projector equals recon @ proj; the recon-8 tables rebuild random
   SU(3) matrices; the recon-12 cross product is the third row.
2. names: every manifest variant has a unique name that parses back to it;
   include/exclude globs select what they say.
3. determinism: two runs of the generator give byte-identical files, each
   opening with the do-not-edit banner naming its template and variant.
4. meson dependencies: in a scratch copy of the source tree, editing the
   recon-8 link partial regenerates exactly the recon-8 variants, and editing
   the manifest regenerates the registry and no variant file.
"""

import cmath
import filecmp
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(__file__)))
sys.path.insert(0, ROOT)

from generator import physics, render  # noqa: E402
from generator.axes import Recon  # noqa: E402
from generator.manifest import manifest, select  # noqa: E402
from generator.naming import parse  # noqa: E402

failures = []


def check(ok, what, detail=""):
    print(f"{what:<66} {'OK' if ok else 'FAIL'}{'  ' + detail if detail else ''}")
    if not ok:
        failures.append(what)


def random_su3(rng):
    def rnd():
        return complex(rng.gauss(0, 1), rng.gauss(0, 1))

    def normalise(v):
        n = sum(abs(z) ** 2 for z in v) ** 0.5
        return [z / n for z in v]
    a = normalise([rnd() for _ in range(3)])
    b = [rnd() for _ in range(3)]
    d = sum(x.conjugate() * y for x, y in zip(a, b))
    b = normalise([y - d * x for x, y in zip(a, b)])
    c = [(a[(i + 1) % 3] * b[(i + 2) % 3] - a[(i + 2) % 3] * b[(i + 1) % 3]).conjugate()
         for i in range(3)]
    return [a, b, c]


def test_physics(rng):
    s = physics.BASIS_CHANGE
    check(physics.close(physics.matmul(s, physics.dagger(s)), physics.identity(4)),
          "basis change S is unitary")
    g4 = physics.INTERNAL_GAMMA[3]
    check(all(abs(g4[i][j]) < 1e-12 for i in range(4) for j in range(4) if i != j),
          "gamma_4 is diagonal in the internal basis")
    ok = True
    for dag in (0, 1):
        for hop in physics.hops(dag):
            p = tuple(tuple((i == j) + hop.sign * physics.INTERNAL_GAMMA[hop.mu][i][j]
                            for j in range(4)) for i in range(4))
            ok &= physics.close(physics.matmul(hop.recon, hop.proj), p)
            if hop.mu == 3:
                ok &= len(hop.spins) == 2
    check(ok, "every projector = recon @ proj; temporal ones touch 2 spins")
    worst = 0
    for _ in range(200):
        u = random_su3(rng)
        r = physics.r8_reconstruct_reference(u[0][1], u[0][2], u[1][0],
                                             cmath.phase(u[0][0]), cmath.phase(u[2][0]))
        worst = max(worst, max(abs(u[i][j] - r[i][j]) for i in range(3) for j in range(3)))
    check(worst < 1e-12, "recon-8 tables rebuild random SU(3)", f"max err {worst:.1e}")
    # the clover epilogue: CLOVER_SCALE * FROM_CHIRAL B TO_CHIRAL is S B S^dag
    # for a spin matrix B that is block diagonal in the DeGrand-Rossi chiral
    # pairs (what the kernels apply), and gamma_5 commutes with such a B
    g5 = physics.DR_GAMMA5
    worst = 0
    for _ in range(20):
        b = [[0j] * 4 for _ in range(4)]
        for spins in physics.CHIRAL_SPINS:
            for i in spins:
                for j in spins:
                    b[i][j] = complex(rng.uniform(-1, 1), rng.uniform(-1, 1))
        want = physics.matmul(physics.matmul(s, b), physics.dagger(s))
        got = physics.matmul(physics.matmul(physics.CLOVER_FROM_CHIRAL, b),
                             physics.CLOVER_TO_CHIRAL)
        worst = max(worst, max(abs(physics.CLOVER_SCALE * got[i][j] - want[i][j])
                               for i in range(4) for j in range(4)))
        gb, bg = physics.matmul(g5, b), physics.matmul(b, g5)
        worst = max(worst, max(abs(gb[i][j] - bg[i][j]) for i in range(4) for j in range(4)))
    check(worst < 1e-12 and physics.CHIRAL_SPINS == ((0, 1), (2, 3)),
          "clover rotation = basis change on chiral blocks", f"max err {worst:.1e}")


def test_names():
    vs = manifest()
    names = [v.name for v in vs]
    # 72 Wilson (dslash_*_n1), 72 with the clover epilogue (dslashcl_*), 3 clover_*,
    # 36 multi-RHS (dslash_*_r12_gf[01]_*_n2; _n4 in single, and half without gauge fixing),
    # 4 of the thread form (dslash_d_r12_gf0_*_t12: double alone, where it measured
    # faster), none with shared links (_sh12: slower in every precision)
    check(len(vs) == 187 and len(set(names)) == len(names), "187 unique variant names",
          f"{len(vs)} variants")
    check(sum(n.startswith("dslash_") and n.endswith("_n1") for n in names) == 72
          and sum(n.startswith("dslashcl_") for n in names) == 72
          and sum(n.startswith("clover_") for n in names) == 3
          and sum(n.endswith(("_n2", "_n4")) for n in names) == 36
          and "dslash_h_r12_gf1_dag0_xpay0_n4" not in names
          and not any(n.startswith("dslash_d_") and n.endswith("_n4") for n in names)
          and sum(n.startswith("dslash_d_") and n.endswith("_t12") and "_r12_gf0_" in n
                  for n in names) == 4
          and sum(n.endswith("_t12") for n in names) == 4
          and not any(n.endswith("_sh12") for n in names)
          and all(v.threads == v.name.endswith(("_t12", "_sh12")) for v in vs if v.hopping)
          and all(v.shared == v.name.endswith("_sh12") for v in vs if v.hopping),
          "72 Wilson, 72 clover-epilogue, 3 clover, 36 + 4 multi-RHS kernels")
    check(all(parse(n) == v for n, v in zip(names, vs)), "every name parses back to its variant")
    bad = 0
    malformed = ("dslash_x_r12_gf0_dag0_xpay0_n1", "dslash_s_r12_gf0_dag0_n1",
                 "dslash_s_r10_gf0_dag0_xpay0_n1", "dslash_s_r12_gf0_dag0_xpay0",
                 "dslash_s_r12_gf0_dag0_xpay0_n0", "clover_s_r12_gf0_dag0_xpay0_n1", "dslashcl_h",
                 "dslash_s_r12_gf0_dag0_xpay0_t0", "dslash_s_r12_gf0_dag0_xpay0_x12",
                 "dslash_s_r12_gf0_dag0_xpay0_s12",
                 "wilson_d", "clover_q")
    for n in malformed:
        try:
            parse(n)
        except ValueError:
            bad += 1
    check(bad == len(malformed), "malformed names are refused")
    sel = select(vs, "dslash_h_*_n1", "*_xpay1_*")
    check(len(sel) == 12 and all(v.name.startswith("dslash_h_") and v.xpay == 0 for v in sel),
          "include/exclude globs", f"{len(sel)} selected")


def run_generator(outdir):
    env = dict(os.environ, PYTHONPATH=ROOT, PYTHONDONTWRITEBYTECODE="1")
    subprocess.run([sys.executable, "-m", "generator", "all", "--outdir", outdir],
                   check=True, env=env, cwd=ROOT)


def test_determinism(tmp):
    a, b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
    run_generator(a)
    run_generator(b)
    files = sorted(os.listdir(a))
    want = 3 * len(manifest()) + len(render.REGISTRY_OUTPUTS) + 1
    check(len(files) == want, "generator writes every expected file", f"{len(files)} of {want}")
    same = filecmp.cmpfiles(a, b, files, shallow=False)
    check(not same[1] and not same[2] and sorted(os.listdir(b)) == files,
          "two generator runs are byte-identical")
    banner = re.compile(r"^/\* Generated by the wdirac generator from templates/\S+\.j2 for .+"
                        r"Do not edit")
    bad = [f for f in files if not banner.match(open(os.path.join(a, f)).readline())]
    check(not bad, "every generated file opens with the do-not-edit banner", ", ".join(bad[:3]))


def regenerated(builddir):
    """Build every generator output; return the custom-target names that ran."""
    # reconfigure first if the manifest changed, so the target list is current
    subprocess.run(["ninja", "-C", builddir, "build.ninja"], check=True,
                   capture_output=True, text=True)
    out = subprocess.run(["ninja", "-C", builddir, "-v"] + generator_outputs(builddir),
                         check=True, capture_output=True, text=True).stdout
    ran = set()
    for line in out.splitlines():
        m = re.search(r"-m generator (variant (\S+)|registry|physics)", line)
        if m:
            ran.add(m.group(2) or m.group(1).split()[0])
    return ran


def generator_outputs(builddir):
    out = subprocess.run(["ninja", "-C", builddir, "-t", "targets", "all"], check=True,
                         capture_output=True, text=True).stdout
    return sorted({line.split(":")[0] for line in out.splitlines()
                   if line.startswith("generated/") and line.split(":")[0].endswith((".h", ".c", ".cu"))})


def test_meson_deps(tmp):
    if not shutil.which("meson") or not shutil.which("ninja"):
        check(False, "meson and ninja are on PATH for the dependency test")
        return
    src = os.path.join(tmp, "src")
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", "build*", "__pycache__", ".whl", ".gl"))
    build = os.path.join(tmp, "build")
    subprocess.run(["meson", "setup", build, src, "-Dcuda=disabled"], check=True,
                   capture_output=True, text=True)
    first = regenerated(build)
    check(len(first) == len(manifest()) + 2, "a fresh build generates every variant once",
          f"{len(first)} targets")
    check(not regenerated(build), "a second build regenerates nothing")

    with open(os.path.join(src, "templates", "link_r8.j2"), "a") as f:
        f.write("{# touched by test_generator #}\n")
    ran = regenerated(build)
    want = {v.name for v in manifest() if v.recon == Recon.R8}
    check(ran == want, "editing link_r8.j2 regenerates exactly the recon-8 variants",
          f"{len(ran)} regenerated, {len(want)} expected")

    path = os.path.join(src, "generator", "manifest.py")
    text = open(path).read()
    with open(path, "w") as f:
        f.write(text.replace("DAGGER_AXIS = [0, 1]", "DAGGER_AXIS = [0]"))
    ran = regenerated(build)
    check(ran == {"registry"}, "editing the manifest regenerates the registry and no variant",
          ", ".join(sorted(ran)[:4]))


def main():
    rng = random.Random(int(os.environ.get("WDIRAC_SEED", "12345")))
    test_physics(rng)
    test_names()
    with tempfile.TemporaryDirectory() as tmp:
        test_determinism(tmp)
        test_meson_deps(tmp)
    print(f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
