#!/usr/bin/env bash
# test_cli_solve_fault.sh WDIRAC_FAULT MPIEXEC [MPIEXEC_ARGS...]: a rank
# that fails mid-solve (issue 28), on the CPU backend.  WDIRAC_FAULT is the
# test-only copy of the program whose Krylov solver reads the environment
# variable WDIRAC_FAULT=KIND:RANK:K (runtime/numerics/krylov.c): rank RANK
# fails in iteration K.  On one rank, 2 ranks (--grid 1 1 1 2: T split)
# and 4 ranks (--grid 1 1 2 2: Z and T split):
#   - without WDIRAC_FAULT the solve converges (exit 0, the solution
#     written) in more than K iterations, so the injection is what fails;
#   - fail:RANK:K (a backend failure on that rank alone): every rank ends
#     within FAULT_TIMEOUT seconds (no hang), exit 3 (internal error),
#     rank 0's message names the failing rank ("rank R: injected
#     failure"; on one rank the failure itself), no solution file and no
#     temporary file;
#   - nan:RANK:K (that rank's part of the residual set to NaN): every rank
#     ends within the time, exit 1 (the solver's NaN stop), the message
#     says so, and the solution file is the whole best iterate (the size
#     of the converged one, finite: numpy) with no temporary file beside it.
# Without MPIEXEC (a build without MPI): skipped, exit 77.
# One line per check; "N of M failed" last; exit 1 on any failure.
set -u
if [ $# -lt 2 ]; then
    echo "no MPI in this build: skipped"
    exit 77
fi
wdirac=$1
shift
mpi=("$@")
limit=${FAULT_TIMEOUT:-20}
k=3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/check.sh"
export OMP_NUM_THREADS=1

"$wdirac" gauge generate --dims 8 8 8 8 --beta 5.8 --therm 4 --sweeps 2 --seed 3 \
    --format nersc --out "$tmp/cfg" --backend cpu > "$tmp/gen.log" 2>&1
check "gauge generate 8^4 (one process)" $? "$(tail -1 "$tmp/gen.log")"

# solve NAME NRANKS FAULT [GRID...]: one solve under `timeout`, its output
# alone in $tmp/NAME/; sets rc and secs
solve() {
    local name=$1 n=$2 fault=$3
    shift 3
    mkdir -p "$tmp/$name"
    local t0
    t0=$(date +%s%N)
    WDIRAC_FAULT=$fault timeout "$limit" "${mpi[@]}" -n "$n" "$wdirac" solve \
        --gauge "$tmp/cfg" --kappa 0.12 --tol 1e-10 --random 11 --backend cpu --quiet \
        --out "$tmp/$name/x.npy" --json "$tmp/$name.json" "$@" > "$tmp/$name.log" 2>&1
    rc=$?
    local ms=$((($(date +%s%N) - t0) / 1000000))
    secs=$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))
}

# iterations NAME: the iterations of the JSON record
iterations() {
    python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["result"]["iterations"])' \
        "$tmp/$1.json" 2>/dev/null || echo 0
}

# finite NAME: the solution file loads whole, finite, in the lattice's shape
finite() {
    python3 - "$tmp/$1/x.npy" <<'PY'
import sys
import numpy as np
x = np.load(sys.argv[1])
sys.exit(0 if x.shape == (8, 8, 8, 8, 4, 3) and np.isfinite(x).all() else 1)
PY
}

for g in "1 0 1 1 1 1" "2 1 1 1 1 2" "4 2 1 1 2 2"; do
    set -- $g
    n=$1 bad=$2
    shift 2
    grid="$*"
    tag="$n rank(s), grid $grid"

    solve "ok-$n" "$n" "" --grid "$@"
    it=$(iterations "ok-$n")
    [ $rc -eq 0 ] && [ -s "$tmp/ok-$n/x.npy" ] && [ "$it" -gt $((k + 1)) ]
    check "$tag: no fault: converges in more than $k iterations" $? \
        "rc $rc, $it iterations, ${secs} s"

    solve "fail-$n" "$n" "fail:$bad:$k" --grid "$@"
    want="rank $bad: injected failure"
    [ "$n" -eq 1 ] && want="injected failure"
    left=$(ls -A "$tmp/fail-$n")
    grep -q "internal error: $want" "$tmp/fail-$n.log" && [ $rc -eq 3 ] && [ -z "$left" ]
    check "$tag: fail:$bad:$k: exit 3, '$want', no file" $? \
        "rc $rc, ${secs} s: $(grep -m1 'wdirac solve' "$tmp/fail-$n.log")${left:+; left: $left}"
    grep -q '"converged": false' "$tmp/fail-$n.json" &&
        grep -q "injected failure" "$tmp/fail-$n.json"
    check "$tag: fail:$bad:$k: the JSON record says so" $?

    solve "nan-$n" "$n" "nan:$bad:$k" --grid "$@"
    left=$(ls -A "$tmp/nan-$n")
    grep -q "NaN or Inf in the iteration" "$tmp/nan-$n.log" && [ $rc -eq 1 ] &&
        [ "$left" = x.npy ] && [ "$(stat -c %s "$tmp/nan-$n/x.npy")" -eq \
        "$(stat -c %s "$tmp/ok-$n/x.npy")" ] && finite "nan-$n"
    check "$tag: nan:$bad:$k: exit 1, NaN said, the whole best iterate" $? \
        "rc $rc, ${secs} s: $(grep -m1 'wdirac solve' "$tmp/nan-$n.log")${left:+; files: $left}"
done

# a malformed WDIRAC_FAULT fails every rank alike, with the reason
solve malformed 2 "fail:1" --grid 1 1 1 2
grep -q "expected fail:RANK:K" "$tmp/malformed.log" && [ $rc -eq 2 ] && [ -z "$(ls -A "$tmp/malformed")" ]
check "2 ranks: WDIRAC_FAULT=fail:1: exit 2, the format named, no file" $? \
    "rc $rc, ${secs} s: $(grep -m1 'wdirac solve' "$tmp/malformed.log")"

echo "$failed of $run failed"
[ "$failed" -eq 0 ]
