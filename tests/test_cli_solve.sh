#!/bin/sh
# test_cli_solve.sh: `wdirac solve` end to end, checked by numpy.
#   test_cli_solve.sh WDIRAC PYTHON CHECK_SOLUTION_PY      (SEED=N to replay)
# Generates a 4x4x4x8 NERSC configuration (3x3, 64-bit) from a fresh seed,
# solves with a point source (BiCGstab, double-single reliable updates), a
# random source (CG, double-half), a big-endian source written by np.save
# (--kappa, periodic time) and on the unit gauge field, each to tol 1e-10;
# check_solution.py then verifies M x = b to 1e-9 with its own numpy
# Wilson-Dirac operator.  --mg (the multigrid, tiny settings) on a random
# source: M x = b to 1e-9 by the same numpy check, and its JSON record
# holds the MG settings, the setup's cost and diagnostics and the
# per-level iterations.  Exit codes: a missing gauge file, a damaged
# source, bad options, a --mg-block that does not divide the lattice (the
# dimension and the option named, nothing written) and an existing --out
# without --overwrite (file untouched) give 2; --max-iter 3 gives 1 with the best iterate written;
# --backend cuda gives 4 without a GPU.  One line per check; exit 1 on any
# failure.
set -u
wdirac=$1
python=$2
checker=$3
seed=${SEED:-$(date +%s)}
echo "test_cli_solve: seed $seed (replay with SEED=$seed)"
dir=$(mktemp -d "${TMPDIR:-/tmp}/wdirac-solve-XXXXXX")
trap 'rm -rf "$dir"' EXIT
failed=0
check() { # name, expected exit code, actual exit code
    if [ "$2" = "$3" ]; then echo "$1  OK"; else echo "$1  FAIL (exit $3, expected $2)"; failed=1; fi
}
show() { # the log of a failed step
    sed 's/^/    /' "$1"
}
numpy_check() { # name, log, check_solution.py arguments...
    name=$1 log=$2
    shift 2
    "$python" "$checker" "$@" > "$log" 2>&1
    rc=$?
    check "$name: $(tail -n 2 "$log" | head -n 1)" 0 $rc
    [ $rc = 0 ] || show "$log"
}

g=$dir/g.nersc
"$wdirac" gauge generate --dims 4 4 4 8 --beta 5.8 --sweeps 5 --or 1 --seed "$seed" \
    --format nersc --precision 64 --out "$g" > "$dir/gen.log" 2>&1
check "gauge generate 4x4x4x8 NERSC 3x3 64-bit" 0 $?
grep -q "^DATATYPE = 4D_SU3_GAUGE_3x3" "$g" && grep -q "^FLOATING_POINT = IEEE64BIG" "$g"
check "... header says 4D_SU3_GAUGE_3x3 IEEE64BIG" 0 $?

# point source, BiCGstab, double-single with reliable updates
"$wdirac" solve --gauge "$g" --point 1,2,3,5,2,1 --mass 0.05 --solver bicgstab \
    --precision d --sloppy s --mixed reliable --tol 1e-10 --backend cpu \
    --save-source "$dir/b1.npy" --out "$dir/x1.npy" --json "$dir/r1.json" > "$dir/s1.log" 2>&1
rc=$?
check "solve point source, BiCGstab d-s reliable" 0 $rc
[ $rc = 0 ] || show "$dir/s1.log"
grep -q "^status *converged" "$dir/s1.log" && grep -q "^residual .*||b - M x|| / ||b||" "$dir/s1.log" &&
    grep -q "^iterations [0-9]* = [0-9]* + [0-9]*" "$dir/s1.log" && grep -q "plaquette 0\." "$dir/s1.log"
check "... summary: status, iterations k + l, true residual, plaquette" 0 $?
numpy_check "... numpy M x = b" "$dir/c1.log" check --gauge "$g" --source "$dir/b1.npy" \
    --solution "$dir/x1.npy" --mass 0.05 --tol 1e-9
"$python" -c "
import json, sys
r = json.load(open(sys.argv[1]))
assert r['command'] == 'solve' and r['commit'] and r['date'] and r['device'], r
assert r['result']['status'] == 'ok' and r['result']['true_residual'] <= 1e-10, r['result']
assert r['solver'] == 'bicgstab' and r['outer']['precision'] == 8 and r['sloppy']['precision'] == 4
assert r['dims'] == [4, 4, 4, 8] and abs(r['mass'] - 0.05) < 1e-15
" "$dir/r1.json" > "$dir/j1.log" 2>&1
check "... JSON record: settings, device, commit, date, result" 0 $?

# random source, CG, double-half
"$wdirac" solve --gauge "$g" --random "$seed" --mass 0.1 --solver cg --precision d --sloppy h \
    --tol 1e-10 --backend cpu --save-source "$dir/b2.npy" --out "$dir/x2.npy" > "$dir/s2.log" 2>&1
rc=$?
check "solve random source, CG d-h reliable" 0 $rc
[ $rc = 0 ] || show "$dir/s2.log"
numpy_check "... numpy M x = b" "$dir/c2.log" check --gauge "$g" --source "$dir/b2.npy" \
    --solution "$dir/x2.npy" --mass 0.1 --tol 1e-9

# a source numpy wrote (big endian), kappa, periodic time, defect correction
"$python" "$checker" make-source "$dir/b3.npy" --dims 4 4 4 8 --seed "$seed" --big-endian
"$wdirac" solve --gauge "$g" --source "$dir/b3.npy" --kappa 0.12 --tbc periodic \
    --mixed defect --eps-in 0.01 --tol 1e-10 --backend cpu --out "$dir/x3.npy" > "$dir/s3.log" 2>&1
rc=$?
check "solve a '>c16' np.save source, kappa 0.12, periodic, defect correction" 0 $rc
[ $rc = 0 ] || show "$dir/s3.log"
numpy_check "... numpy M x = b" "$dir/c3.log" check --gauge "$g" --source "$dir/b3.npy" \
    --solution "$dir/x3.npy" --mass "$("$python" -c 'print(repr(1 / (2 * 0.12) - 4))')" \
    --tbc periodic --tol 1e-9

# the free field
"$wdirac" solve --unit-gauge --dims 4 4 4 4 --random "$seed" --mass 0.2 --backend cpu \
    --save-source "$dir/b4.npy" --out "$dir/x4.npy" --quiet > "$dir/s4.log" 2>&1
rc=$?
check "solve on the unit gauge field, --quiet" 0 $rc
[ $rc = 0 ] || show "$dir/s4.log"
[ ! -s "$dir/s4.log" ]
check "... --quiet prints nothing" 0 $?
numpy_check "... numpy M x = b" "$dir/c4.log" check --unit 4 4 4 4 --source "$dir/b4.npy" \
    --solution "$dir/x4.npy" --mass 0.2 --tol 1e-9

# multigrid: 2 levels, 2^4 blocks (coarse 2x2x2x4), 8 null vectors.  One
# thread: a lattice this small gains nothing from two, and threads spinning
# on a busy machine cost seconds.
mg="--mg --mg-block 2 --mg-nvec 8 --mg-setup-iter 30"
# shellcheck disable=SC2086
OMP_NUM_THREADS=1 "$wdirac" solve --gauge "$g" --random "$seed" --mass 0.05 --tol 1e-10 \
    --backend cpu $mg --mg-refine 1 --mg-verbose 1 --save-source "$dir/b7.npy" \
    --out "$dir/x7.npy" --json "$dir/r7.json" > "$dir/s7.log" 2>&1
rc=$?
check "solve --mg (2 levels, blocks 2^4, 8 null vectors, 1 refinement pass), random source" 0 $rc
[ $rc = 0 ] || show "$dir/s7.log"
grep -q "^mg setup .*fine-operator applications" "$dir/s7.log" &&
    grep -q "^ *1 refinement pass in .* s (the last one's solves" "$dir/s7.log" &&
    grep -q "^iterations [0-9]* outer (flexible GCR); per level: fine smoother [0-9]*, level 1 [0-9]*" \
        "$dir/s7.log"
check "... summary: setup cost, refinement, outer and per-level iterations" 0 $?
numpy_check "... numpy M x = b" "$dir/c7.log" check --gauge "$g" --source "$dir/b7.npy" \
    --solution "$dir/x7.npy" --mass 0.05 --tol 1e-9
"$python" -c "
import json, sys
r = json.load(open(sys.argv[1]))
m, res = r['mg'], r['result']
assert r['solver'] == 'mg', r['solver']
assert m['levels'] == 2 and m['block'] == [[2, 2, 2, 2]] and m['nvec'] == [8], m
assert m['setup_max_iter'] == 30 and m['cycle'] == 'k' and m['post_smooth'] == 8, m
assert m['smoother'] == 'ca-gcr', m
assert m['coarse_eo'] == 1 and m['outer_eo'] == 1, m
assert m['refine_passes'] == 1 and m['refine_iter'] == 2, m
su = m['setup']
assert 0 < su['refine_seconds'] < su['seconds'] and 0 < su['refine_residual'] < 1, su
assert su['diagnostics_seconds'] > 0, su
assert su['seconds'] > 0 and su['fine_applies'] > 0, su
assert su['dims'] == [[4, 4, 4, 8], [2, 2, 2, 4]], su['dims']
assert len(su['setup_residual']) == 1 and 0 < su['setup_residual'][0] < 1, su
assert su['orth_error'][0] < 1e-12 and su['coarse_error'][0] < 1e-12, su
assert su['setup_unconverged'][0] in range(5), su
assert res['status'] == 'ok' and res['true_residual'] <= 1e-10, res
assert res['mg_levels'] == 2 and len(res['mg_iterations']) == 2, res
assert res['mg_iterations'][0] > 0 and res['mg_iterations'][1] > 0, res
assert res['outer_iterations'] == res['iterations'] > 0, res
assert abs(res['seconds_with_setup'] - su['seconds'] - res['seconds']) < 1e-9, res
" "$dir/r7.json" > "$dir/j7.log" 2>&1
rc=$?
check "... JSON: MG settings, setup cost and diagnostics, per-level iterations" 0 $rc
[ $rc = 0 ] || show "$dir/j7.log"
# the outer GCR on the even-odd Schur system
# shellcheck disable=SC2086
OMP_NUM_THREADS=1 "$wdirac" solve --gauge "$g" --source "$dir/b7.npy" --mass 0.05 --tol 1e-10 \
    --backend cpu $mg --mg-outer-eo 1 --out "$dir/x9.npy" --json "$dir/r9.json" \
    > "$dir/s9.log" 2>&1
rc=$?
check "solve --mg --mg-outer-eo 1" 0 $rc
[ $rc = 0 ] || show "$dir/s9.log"
numpy_check "... numpy M x = b" "$dir/c9.log" check --gauge "$g" --source "$dir/b7.npy" \
    --solution "$dir/x9.npy" --mass 0.05 --tol 1e-9
"$python" -c "
import json, sys
r = json.load(open(sys.argv[1]))
m, res = r['mg'], r['result']
assert m['outer_eo'] == 1, m
assert res['status'] == 'ok' and res['true_residual'] <= 1e-10, res
" "$dir/r9.json" > "$dir/j9.log" 2>&1
rc=$?
check "... JSON: outer_eo 1, the true residual" 0 $rc
[ $rc = 0 ] || show "$dir/j9.log"
# shellcheck disable=SC2086
OMP_NUM_THREADS=1 "$wdirac" solve --gauge "$g" --random 1 --backend cpu $mg \
    --mg-block 4x4x3x4 --out "$dir/x8.npy" > "$dir/e8.log" 2>&1
check "--mg-block 4x4x3x4 (3 does not divide Z = 4): exit 2" 2 $?
grep -q "block 3 in Z does not divide" "$dir/e8.log" && grep -q -- "--mg-block" "$dir/e8.log" &&
    [ ! -e "$dir/x8.npy" ]
check "... the message names Z and --mg-block; nothing written" 0 $?
"$wdirac" solve --gauge "$g" --random 1 --backend cpu --mg-nvec 4 > "$dir/e.log" 2>&1
check "--mg-nvec without --mg: exit 2" 2 $?
"$wdirac" solve --gauge "$g" --random 1 --backend cpu --mg --mg-cycle w > "$dir/e.log" 2>&1
check "--mg-cycle w: exit 2" 2 $?
grep -q -- "--mg-cycle needs v or k, got 'w'" "$dir/e.log"
check "... the message names the option and the value" 0 $?
"$wdirac" solve --gauge "$g" --random 1 --backend cpu --mg --mg-smoother gmres > "$dir/e.log" 2>&1
check "--mg-smoother gmres: exit 2" 2 $?
grep -q -- "--mg-smoother needs mr or ca-gcr, got 'gmres'" "$dir/e.log"
check "... the message names the option and the value" 0 $?
"$wdirac" solve --gauge "$g" --random 1 --backend cpu --mg --mg-smoother ca-gcr --mg-post 40 \
    > "$dir/e.log" 2>&1
check "--mg-smoother ca-gcr --mg-post 40: exit 2" 2 $?
grep -q -- "--mg-smoother ca-gcr takes at most 32 steps" "$dir/e.log"
check "... the message names the limit" 0 $?
"$wdirac" solve --gauge "$g" --random 1 --backend cpu --mg --mg-coarse-eo 2 > "$dir/e.log" 2>&1
check "--mg-coarse-eo 2: exit 2" 2 $?
grep -q -- "--mg-coarse-eo needs 0 or 1, got '2'" "$dir/e.log"
check "... the message names the option and the value" 0 $?
"$wdirac" solve --gauge "$g" --random 1 --backend cpu --mg --mg-outer-eo 2 > "$dir/e.log" 2>&1
check "--mg-outer-eo 2: exit 2" 2 $?
grep -q -- "--mg-outer-eo needs 0 or 1, got '2'" "$dir/e.log"
check "... the message names the option and the value" 0 $?

# exit codes
"$wdirac" solve --gauge "$dir/missing.nersc" --random 1 --backend cpu > "$dir/e.log" 2>&1
check "missing gauge file: exit 2" 2 $?
cp "$dir/x1.npy" "$dir/x1.copy"
"$wdirac" solve --gauge "$g" --random 1 --backend cpu --out "$dir/x1.npy" > "$dir/e.log" 2>&1
check "existing --out without --overwrite: exit 2" 2 $?
cmp -s "$dir/x1.npy" "$dir/x1.copy"
check "... the file is untouched" 0 $?
grep -q "overwrite" "$dir/e.log"
check "... the message says --overwrite" 0 $?
"$wdirac" solve --gauge "$g" --random 1 --backend cpu --out "$dir/x1.npy" --overwrite \
    --quiet > "$dir/e.log" 2>&1
check "... with --overwrite: exit 0" 0 $?
cmp -s "$dir/x1.npy" "$dir/x1.copy"
check "... and the file is replaced" 1 $?
"$wdirac" solve --gauge "$g" --random 1 --max-iter 3 --backend cpu --out "$dir/x5.npy" \
    > "$dir/e5.log" 2>&1
check "--max-iter 3: exit 1" 1 $?
grep -q "best iterate .* written to" "$dir/e5.log"
check "... the message says the best iterate was written" 0 $?
numpy_check "... which is a finite non-zero spinor file" "$dir/c5.log" load "$dir/x5.npy" \
    --dims 4 4 4 8
"$wdirac" solve --gauge "$g" --random 1 --backend cuda --out "$dir/x6.npy" > "$dir/e6.log" 2>&1
rc=$?
if [ $rc = 0 ]; then
    check "--backend cuda with a GPU: converged" 0 $rc
else
    check "--backend cuda without a GPU: exit 4" 4 $rc
    [ ! -e "$dir/x6.npy" ]
    check "... and no output file" 0 $?
fi
head -c 1000 "$dir/b3.npy" > "$dir/short.npy"
"$wdirac" solve --gauge "$g" --source "$dir/short.npy" --backend cpu > "$dir/e.log" 2>&1
check "truncated --source: exit 2" 2 $?
"$wdirac" solve --unit-gauge --dims 4 4 4 4 --source "$dir/b3.npy" --backend cpu > "$dir/e.log" 2>&1
check "--source of other extents: exit 2" 2 $?
grep -q "shape (8, 4, 4, 4, 4, 3), expected" "$dir/e.log"
check "... the message names both shapes" 0 $?
"$wdirac" solve --gauge "$g" --random 1 --point 0,0,0,0,0,0 > "$dir/e.log" 2>&1
check "two sources: exit 2" 2 $?
"$wdirac" solve --gauge "$g" --point 0,0,0,8,0,0 --backend cpu > "$dir/e.log" 2>&1
check "--point outside the lattice: exit 2" 2 $?
"$wdirac" solve --gauge "$g" --random 1 --mass 0.1 --kappa 0.12 > "$dir/e.log" 2>&1
check "--mass and --kappa: exit 2" 2 $?
"$wdirac" solve --gauge "$g" --random 1 --frobnicate > "$dir/e.log" 2>&1
check "unknown option: exit 2" 2 $?
"$wdirac" solve --gauge "$g" --random 1 --backend cpu --out "$dir/no/such/dir/x.npy" \
    > "$dir/e.log" 2>&1
check "unwritable --out: exit 2 before solving" 2 $?
! grep -q "^status" "$dir/e.log"
check "... (no solve ran)" 0 $?
"$wdirac" solve --help > "$dir/help.log" 2>&1
check "--help: exit 0" 0 $?
grep -q "exit codes" "$dir/help.log" && grep -q "default antiperiodic" "$dir/help.log"
check "... documents exit codes and defaults" 0 $?
leftover=$(find "$dir" -name '*.tmp-*' | head -n 1)
[ -z "$leftover" ]
check "no temporary file left behind" 0 $?
exit $failed
