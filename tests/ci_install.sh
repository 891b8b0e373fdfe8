#!/usr/bin/env bash
# ci_install.sh [pip|configure|all]: wdirac installed as a user installs it
# (issue 29), and meson's configure branches.  Run from anywhere; .ci/run
# calls it after `./run test`.
#
#   pip        `pip wheel .` with pip's default isolated build, in a fresh
#              virtual environment (no NCCL wheel in it: meson looks for a
#              system libnccl), CUDA / MPI / NCCL detected as a default
#              install detects them; the variants filtered to those
#              tests/test_python.py needs (KERNELS) and the CPU kernels
#              compiled for the default ISA alone, for time.  The wheel is
#              then installed into that environment with `pip install`, and
#              from a folder outside the source tree: an import, a small
#              solve checked against Solver.apply, tests/test_python.py.
#   configure  `meson setup` alone (seconds each) in every branch of the
#              CUDA / MPI / NCCL detection: no nvcc, -Dcuda=disabled, nvcc
#              without MPI, nvcc and MPI without NCCL, the NCCL wheel, a
#              system libnccl, and -Dnccl=enabled without NCCL (a clear
#              error).  A system NCCL is hidden in a private mount namespace
#              (unshare); where neither the wheel nor a system libnccl
#              exists, or unshare is refused, the branch says SKIP.
#
# One line per check; the seconds each step took; "N of M failed" last;
# exit 1 on any failure.  KEEP=1 keeps the scratch folder (venv, build
# folder, logs) and says where it is.
set -u
cd "$(dirname "$0")/.." || exit 2
src=$PWD
what=${1:-all}
KERNELS=${KERNELS:-'*_r12_gf0_*_n1,clover_*,coarse_*_nv8_dag0_xpay0_n1'}
tmp=$(mktemp -d /tmp/wdirac-ci-install.XXXXXX)
trap '[ -n "${KEEP:-}" ] && echo "kept $tmp" || rm -rf "$tmp"' EXIT
CHECK_WIDTH=58
. "$src/tests/check.sh"
skip() { printf '%-58s SKIP %s\n' "$1" "$2"; }
summary() { grep -E "^ +$2 *:" "$1" | tail -1 | sed 's/^ *[^:]*: *//'; }
tail_of() { tail -"${2:-5}" "$1" | sed 's/^/    | /'; }

venv=$tmp/venv
make_venv() {
    [ -x "$venv/bin/python" ] && return 0
    python3 -m venv "$venv"
}

pip_part() {
    local t0=$SECONDS
    make_venv
    check "fresh venv (python3 -m venv)" $? "$((SECONDS - t0)) s"

    local t1=$SECONDS
    "$venv/bin/pip" wheel --no-deps -w "$tmp/dist" "$src" \
        -Csetup-args=-Dcpu_simd=baseline "-Csetup-args=-Dkernels=$KERNELS" \
        -Cbuild-dir="$tmp/build" > "$tmp/wheel.log" 2>&1
    local st=$? whl="" f
    for f in "$tmp"/dist/wdirac-*.whl; do [ -f "$f" ] && whl=$f; done
    [ -n "$whl" ] || st=1
    check "pip wheel . (isolated build)" $st "$((SECONDS - t1)) s, ${whl##*/}"
    [ $st -eq 0 ] || { tail_of "$tmp/wheel.log" 30; return; }
    local log=$tmp/build/meson-logs/meson-log.txt cuda mpi nccl
    cuda=$(summary "$log" 'CUDA backend') mpi=$(summary "$log" MPI) nccl=$(summary "$log" NCCL)
    echo "    configured: CUDA backend $cuda, MPI $mpi, NCCL $nccl, variants $(summary "$log" 'Dslash variants')"
    if command -v nvcc > /dev/null; then
        check "nvcc on the PATH: the wheel has the CUDA backend" "$([ "$cuda" = true ]; echo $?)" "$cuda"
    fi

    t1=$SECONDS
    "$venv/bin/pip" install -q "$whl" > "$tmp/install.log" 2>&1
    st=$?
    check "pip install the wheel (and numpy)" $st "$((SECONDS - t1)) s"
    [ $st -eq 0 ] || { tail_of "$tmp/install.log" 20; return; }

    mkdir -p "$tmp/elsewhere"
    t1=$SECONDS
    (cd "$tmp/elsewhere" && OMP_NUM_THREADS=2 "$venv/bin/python" - "$venv" <<'PY'
import sys
import numpy as np
import wdirac

assert wdirac.__file__.startswith(sys.argv[1]), f"imported from {wdirac.__file__}"
print(f"    wdirac from {wdirac.__file__}; cuda_available: {wdirac.cuda_available()}")
u = wdirac.GaugeField.generate((4, 4, 4, 8), beta=6.0, sweeps=2, seed=5)
solver = wdirac.Solver(u, kappa=0.12, solver="bicgstab", precision="d", sloppy="s", tol=1e-10)
b = np.zeros(u.spinor_shape, np.complex128)
b[0, 0, 0, 0, 0, 0] = 1.0
x, stats = solver.solve(b)
r = np.linalg.norm(b - solver.apply(x)) / np.linalg.norm(b)
print(f"    4^3x8 d-s BiCGstab: {stats.iterations} iterations, ||b - M x|| / ||b|| = {r:.2e}")
sys.exit(0 if r <= 1e-9 else 1)
PY
    ) > "$tmp/solve.log" 2>&1
    st=$?
    cat "$tmp/solve.log"
    check "import and solve from outside the source tree" $st "$((SECONDS - t1)) s"

    t1=$SECONDS
    (cd "$tmp/elsewhere" && OMP_NUM_THREADS=2 "$venv/bin/python" "$src/tests/test_python.py") \
        > "$tmp/test_python.log" 2>&1
    st=$?
    check "tests/test_python.py with the venv's python" $st \
        "$((SECONDS - t1)) s, $(tail -1 "$tmp/test_python.log")"
    [ $st -eq 0 ] || tail_of "$tmp/test_python.log" 20
    echo "    pip part: $((SECONDS - t0)) s"
}

# The folders that hold the system's libnccl and nccl.h (real paths): what
# the linker finds for -lnccl, and nccl.h as the compiler finds it with the
# CUDA toolkit's include folder (where meson's CUDA dependency points).
nccl_dirs() {
    local cuda=""
    command -v nvcc > /dev/null && cuda=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
    # /usr/local/bin/nvcc may be a wrapper script: then ask nvcc itself
    if [ -n "$cuda" ] && [ ! -d "$cuda/include" ]; then
        cuda=$(nvcc --dryrun -x cu /dev/null 2>&1 | sed -n 's/^#\$ TOP=//p' | head -1)
    fi
    {
        printf 'int main(void) { return 0; }\n' | cc -x c - -o /dev/null -lnccl -Wl,--trace 2>/dev/null \
            | grep -o '/[^ ()]*libnccl[^ ()]*'
        printf '#include <nccl.h>\n' | cc -x c -E -M - ${cuda:+-I"$cuda/include"} 2>/dev/null \
            | tr -s ' \\' '\n' | grep 'nccl\.h$'
    } | while read -r f; do [ -e "$f" ] && dirname "$(readlink -f "$f")"; done | sort -u
}

# without_nccl COMMAND...: run it where no system NCCL can be seen: in a
# private mount namespace, each folder of nccl_dirs is covered by a folder
# of links to everything in it but NCCL's files.
without_nccl() {
    local ns="unshare -m"
    [ "$(id -u)" = 0 ] || ns="unshare -r -m"
    # shellcheck disable=SC2016
    $ns bash -c '
        set -e
        farm=$1; shift; n=0
        while [ "$1" != -- ]; do
            n=$((n + 1)); mkdir -p "$farm/orig$n" "$farm/view$n"
            mount --bind "$1" "$farm/orig$n"
            for f in "$farm/orig$n"/*; do
                case ${f##*/} in *nccl*) ;; *) ln -s "$f" "$farm/view$n/" ;; esac
            done
            mount --bind "$farm/view$n" "$1"
            shift
        done
        shift
        exec "$@"' hide "$tmp/hide-$BASHPID" "${hidden[@]}" -- "$@"
}

# launch NAME WANT PATTERN CASE COMMAND...: a meson setup in the background,
# two at a time (each is mostly one process); judged by judge_all in order:
# exit status 0 (WANT 0) or not (WANT 1), and PATTERN in its output
names=() wants=() patterns=() descs=()
launch() {
    names+=("$1") wants+=("$2") patterns+=("$3") descs+=("$4")
    local name=$1; shift 4
    while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n; done
    (t=$SECONDS; "$@" > "$tmp/cfg-$name.log" 2>&1; echo "$? $((SECONDS - t))" > "$tmp/cfg-$name.rc") &
}
judge_all() {
    wait
    local i rc secs out ok got
    for i in "${!names[@]}"; do
        out=$tmp/cfg-${names[i]}.log
        read -r rc secs < "$tmp/cfg-${names[i]}.rc"
        ok=1
        if [ "${wants[i]}" = 0 ]; then
            [ "$rc" -eq 0 ] && grep -qE "${patterns[i]}" "$out" && ok=0
        else
            [ "$rc" -ne 0 ] && grep -qE "${patterns[i]}" "$out" && ok=0
        fi
        got=$(grep -E '^ +(CUDA backend|MPI|NCCL) +:|ERROR' "$out" | sed 's/^ *//; s/  */ /g' \
            | paste -sd, | cut -c1-110)
        check "meson setup: ${descs[i]}" $ok "$secs s: $got"
        [ $ok -eq 0 ] || tail_of "$out" 8
    done
}

configure_part() {
    local t0=$SECONDS k='-Dkernels=clover_d' novcc_path
    local -a hidden=() gen_py
    # the generator's python without the NCCL wheel: the fresh venv with jinja2
    make_venv && "$venv/bin/pip" install -q jinja2 > "$tmp/jinja2.log" 2>&1
    check "a python without nvidia.nccl, with jinja2 (venv)" $? "$((SECONDS - t0)) s"
    printf "[binaries]\npython3 = '%s'\npython = '%s'\n" "$venv/bin/python" "$venv/bin/python" \
        > "$tmp/venv-python.ini"
    gen_py=(--native-file "$tmp/venv-python.ini")
    novcc_path=$(printf '%s' "$PATH" | tr ':' '\n' \
        | while read -r d; do [ -x "$d/nvcc" ] || echo "$d"; done | paste -sd:)
    local no_nccl='NCCL +: -$' not_found='ERROR: .*-Dnccl=enabled: NCCL not found'

    launch no-nvcc 0 'CUDA backend +: false' "no nvcc on the PATH" \
        env PATH="$novcc_path" meson setup "$tmp/b-no-nvcc" "$k"
    launch cuda-disabled 0 'CUDA backend +: false' "-Dcuda=disabled" \
        meson setup "$tmp/b-cuda-disabled" "$k" -Dcuda=disabled
    launch nccl-no-cuda 1 'ERROR: .*-Dnccl=enabled needs the CUDA backend and MPI' \
        "-Dnccl=enabled -Dcuda=disabled: an error" \
        meson setup "$tmp/b-nccl-no-cuda" "$k" -Dcuda=disabled -Dnccl=enabled
    if command -v nvcc > /dev/null; then
        launch no-mpi 0 "$no_nccl" "nvcc, -Dmpi=disabled" \
            meson setup "$tmp/b-no-mpi" "$k" -Dmpi=disabled
        mapfile -t hidden < <(nccl_dirs)
        if [ ${#hidden[@]} -eq 0 ]; then
            launch no-nccl 0 "$no_nccl" "nvcc and MPI, no NCCL" \
                meson setup "$tmp/b-no-nccl" "$k" "${gen_py[@]}"
            launch nccl-enabled-none 1 "$not_found" "-Dnccl=enabled without NCCL: an error" \
                meson setup "$tmp/b-nccl-enabled-none" "$k" "${gen_py[@]}" -Dnccl=enabled
            skip "meson setup: a system libnccl" "none on this machine"
        else
            if without_nccl true 2> "$tmp/unshare.log"; then
                launch no-nccl 0 "$no_nccl" "nvcc and MPI, no NCCL (system's hidden)" \
                    without_nccl meson setup "$tmp/b-no-nccl" "$k" "${gen_py[@]}"
                launch nccl-enabled-none 1 "$not_found" "-Dnccl=enabled without NCCL: an error" \
                    without_nccl meson setup "$tmp/b-nccl-enabled-none" "$k" "${gen_py[@]}" -Dnccl=enabled
            else
                skip "meson setup: nvcc and MPI, no NCCL" \
                    "cannot hide ${hidden[*]}: $(head -1 "$tmp/unshare.log")"
            fi
            launch system-nccl 0 'NCCL +: system libnccl' "a system libnccl (${hidden[*]})" \
                meson setup "$tmp/b-system-nccl" "$k" "${gen_py[@]}"
        fi
        if python3 -c 'import nvidia.nccl, jinja2' 2> /dev/null; then
            launch wheel 0 'NCCL +: wheel nvidia-nccl' "the NCCL wheel (python3's nvidia-nccl-cu13)" \
                meson setup "$tmp/b-wheel" "$k"
        else
            skip "meson setup: the NCCL wheel" "python3 has no nvidia.nccl (pip install nvidia-nccl-cu13)"
        fi
    else
        skip "meson setup: the CUDA branches" "no nvcc on the PATH"
    fi
    judge_all
    echo "    configure part: $((SECONDS - t0)) s"
}

t0=$SECONDS
case $what in
pip) pip_part ;;
configure) configure_part ;;
all) pip_part; configure_part ;;
*) echo "usage: tests/ci_install.sh [pip|configure|all]" >&2; exit 2 ;;
esac
echo "$failed of $run failed ($((SECONDS - t0)) s)"
[ $failed -eq 0 ]
