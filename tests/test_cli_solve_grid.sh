#!/usr/bin/env bash
# test_cli_solve_grid.sh WDIRAC MPIEXEC [MPIEXEC_ARGS...]: `wdirac solve` on
# a process grid (issue 11) against one process, on the CPU backend.
#   - a configuration from `wdirac gauge generate` (one process), a random
#     and a point source;
#   - one rank, then 2 ranks (--grid 1 1 1 2, 2 1 1 1) and 4 ranks
#     (--grid 1 1 2 2, automatic): iterations within 1, true residual within
#     2x, ||x_grid - x_1|| / ||x_1|| <= 100 tol (numpy on the .npy files);
#   - the source written by a grid (--save-source) byte-identical to one
#     process's; the same grid twice: byte-identical solutions;
#   - bad grids (not dividing, wrong product, odd local extent): exit 2 from
#     every rank, the dimension named, no output file;
#   - --mg on 1, 2 (T split) and 4 ranks (Z x T): true residual <= tol,
#     x within 100 tol of one process's Krylov solution, and the grids'
#     outer and coarse iterations those of one process (the null vectors'
#     starts are one global field on every grid);
#     --mg-save on 2 ranks, loaded on 1 and 4, and one process's file
#     loaded on 2: the saver's iterations, x within 100 tol; a corrupted
#     file refused on 2 ranks within a time limit (no hang), no output.
# One line per check; "N of M failed" last; exit 1 on any failure.
set -u
wdirac=$1
shift
mpi=("$@")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CHECK_WIDTH=66
. "$(dirname "$0")/check.sh"
export OMP_NUM_THREADS=1

"$wdirac" gauge generate --dims 8 8 8 8 --beta 5.8 --therm 4 --sweeps 2 --seed 3 \
    --format nersc --out "$tmp/cfg" --backend cpu > "$tmp/gen.log" 2>&1
check "gauge generate 8^4 (one process)" $? "$(tail -1 "$tmp/gen.log")"

# solve NAME NRANKS [ARGS...]: one solve, JSON and .npy under $tmp/NAME
solve() {
    local name=$1 n=$2
    shift 2
    "${mpi[@]}" -n "$n" "$wdirac" solve --gauge "$tmp/cfg" --kappa 0.12 --tol 1e-10 \
        --backend cpu --quiet --out "$tmp/$name.npy" --json "$tmp/$name.json" \
        --save-source "$tmp/$name.src.npy" "$@" > "$tmp/$name.log" 2>&1
}

compare() {   # compare NAME REF: numpy's verdict on iterations, residual, x
    python3 - "$tmp/$1" "$tmp/$2" <<'PY'
import json, sys
import numpy as np
a, b = sys.argv[1], sys.argv[2]
ja, jb = json.load(open(a + ".json")), json.load(open(b + ".json"))
ra, rb = ja["result"], jb["result"]
xa, xb = np.load(a + ".npy"), np.load(b + ".npy")
diff = np.linalg.norm(xa - xb) / np.linalg.norm(xb)
ok = (ra["status"] == "ok" and abs(ra["iterations"] - rb["iterations"]) <= 1
      and ra["true_residual"] <= 2 * rb["true_residual"] and diff <= 100 * ja["tol"]
      and ja["ranks"] > 0)
print(f"it {ra['iterations']} vs {rb['iterations']}, true {ra['true_residual']:.2e} vs "
      f"{rb['true_residual']:.2e}, |dx|/|x| {diff:.1e}, ranks {ja['ranks']}, grid {ja['grid']}")
sys.exit(0 if ok else 1)
PY
}

for src in "--random 11" "--point 3,5,2,6,1,2"; do
    tag=$(echo "$src" | cut -c3-7)
    # shellcheck disable=SC2086
    solve "$tag-1" 1 $src
    check "$tag: one process solves" $? "$(tail -1 "$tmp/$tag-1.log")"
    for g in "2 1 1 1 2" "2 2 1 1 1" "4 1 1 2 2" "4 auto"; do
        set -- $g
        n=$1
        shift
        name="$tag-$n-$(echo "$*" | tr ' ' '_')"
        if [ "$1" = auto ]; then
            # shellcheck disable=SC2086
            solve "$name" "$n" $src
        else
            # shellcheck disable=SC2086
            solve "$name" "$n" $src --grid "$@"
        fi
        rc=$?
        out=$(compare "$name" "$tag-1" 2>&1)
        crc=$?
        check "$tag: $n ranks, grid $*: the one-process solution" $((rc | crc)) "$out"
        cmp -s "$tmp/$name.src.npy" "$tmp/$tag-1.src.npy"
        check "$tag: $n ranks, grid $*: --save-source bytes = one process's" $?
    done
done
# the same grid twice: the same bits
solve again 2 --random 11 --grid 1 1 1 2
cmp -s "$tmp/again.npy" "$tmp/rando-2-1_1_1_2.npy"
check "random: grid 1 1 1 2 twice: byte-identical solutions" $?

# bad grids: exit 2, the dimension named, nothing written
bad() {   # bad NRANKS WORD GRID...
    local n=$1 word=$2
    shift 2
    "${mpi[@]}" -n "$n" "$wdirac" solve --gauge "$tmp/cfg" --kappa 0.12 --random 1 \
        --backend cpu --out "$tmp/bad.npy" --grid "$@" > "$tmp/bad.log" 2>&1
    local rc=$?
    grep -q "$word" "$tmp/bad.log" && [ $rc -eq 2 ] && [ ! -e "$tmp/bad.npy" ]
    check "bad grid $* on $n ranks: exit 2, '$word' named, no file" $? \
        "rc $rc: $(grep -m1 wdirac "$tmp/bad.log")"
}
bad 2 X 3 1 1 1
bad 2 ranks 2 2 2 1
bad 2 T 1 1 1 8
bad 4 Z 1 1 4 1

# --mg on grids: the one-process Krylov solution (rando-1) and the
# one-process multigrid's iterations (mg-1)
mgcompare() {   # mgcompare NAME REF MGREF
    python3 - "$tmp/$1" "$tmp/$2" "$tmp/$3" <<'PY'
import json, sys
import numpy as np
a, b, c = sys.argv[1], sys.argv[2], sys.argv[3]
ja, jc = json.load(open(a + ".json")), json.load(open(c + ".json"))
ra, rc = ja["result"], jc["result"]
xa, xb = np.load(a + ".npy"), np.load(b + ".npy")
diff = np.linalg.norm(xa - xb) / np.linalg.norm(xb)
same = (ra["iterations"] == rc["iterations"]
        and ra.get("mg_iterations") == rc.get("mg_iterations"))
ok = (ra["status"] == "ok" and ra["true_residual"] <= ja["tol"] and diff <= 100 * ja["tol"]
      and same)
print(f"it {ra['iterations']} {ra.get('mg_iterations')} (one process {rc['iterations']} "
      f"{rc.get('mg_iterations')}), true {ra['true_residual']:.2e}, |dx|/|x| {diff:.1e}, "
      f"ranks {ja['ranks']}, grid {ja['grid']}")
sys.exit(0 if ok else 1)
PY
}
for g in "1 1 1 1 1" "2 1 1 1 2" "4 1 1 2 2"; do
    set -- $g
    n=$1
    shift
    name="mg-$n"
    timeout 300 "${mpi[@]}" -n "$n" "$wdirac" solve --gauge "$tmp/cfg" --kappa 0.12 --tol 1e-10 \
        --random 11 --backend cpu --quiet --grid "$@" --mg --mg-block 2 --mg-nvec 8 \
        --mg-setup-iter 20 --out "$tmp/$name.npy" --json "$tmp/$name.json" > "$tmp/$name.log" 2>&1
    rc=$?
    out=$(mgcompare "$name" rando-1 mg-1 2>&1)
    crc=$?
    check "--mg on $n rank(s), grid $*: one process's solution and iterations" $((rc | crc)) \
        "$out $(grep -m1 'wdirac' "$tmp/$name.log")"
done
# --mg-save / --mg-load across grids: the file holds the vectors in the
# global order whatever wrote it, so a setup saved on 2 ranks loads on 1
# and on 4, one saved on 1 loads on 2, each with the saver's iterations
mgfile() {   # mgfile NAME NRANKS FILEOPTION FILE GRID...
    local name=$1 n=$2 opt=$3 file=$4
    shift 4
    timeout 300 "${mpi[@]}" -n "$n" "$wdirac" solve --gauge "$tmp/cfg" --kappa 0.12 \
        --tol 1e-10 --random 11 --backend cpu --quiet --grid "$@" --mg --mg-block 2 \
        --mg-nvec 8 --mg-setup-iter 20 "$opt" "$file" --out "$tmp/$name.npy" \
        --json "$tmp/$name.json" > "$tmp/$name.log" 2>&1
}
mgfile mgsave-2 2 --mg-save "$tmp/mg2.nv" 1 1 1 2
rc=$?
out=$(mgcompare mgsave-2 rando-1 mg-2 2>&1)
check "--mg-save on 2 ranks (T split): the file, the grid's iterations" \
    $((rc | $? )) "$out; $(ls -l "$tmp/mg2.nv" 2>&1 | cut -c1-60)"
for g in "1 1 1 1 1" "4 1 1 2 2"; do
    set -- $g
    n=$1
    shift
    mgfile "mgload2-$n" "$n" --mg-load "$tmp/mg2.nv" "$@"
    rc=$?
    out=$(mgcompare "mgload2-$n" rando-1 mgsave-2 2>&1)
    check "--mg-load on $n rank(s) of 2 ranks' file: its iterations, x" $((rc | $?)) "$out"
done
mgfile mgsave-1 1 --mg-save "$tmp/mg1.nv" 1 1 1 1
rc=$?
mgfile mgload1-2 2 --mg-load "$tmp/mg1.nv" 1 1 1 2
rc=$((rc | $?))
out=$(mgcompare mgload1-2 rando-1 mgsave-1 2>&1)
check "--mg-load on 2 ranks of one process's file: its iterations, x" $((rc | $?)) "$out"
# a corrupted byte: refused on every rank (rank 0 reads the checksum, the
# status agreed), no hang, no solution file
python3 -c "
import sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
b[4096] ^= 0x10
open(p, 'wb').write(b)
" "$tmp/mg2.nv"
mgfile mgbad-2 2 --mg-load "$tmp/mg2.nv" 1 1 1 2
rc=$?
grep -q "checksum" "$tmp/mgbad-2.log" && [ $rc -ne 0 ] && [ ! -e "$tmp/mgbad-2.npy" ]
check "--mg-load of a corrupted file on 2 ranks: refused, no hang, no file" $? \
    "rc $rc: $(grep -m1 'wdirac' "$tmp/mgbad-2.log")"

echo "$failed of $run failed"
[ "$failed" -eq 0 ]
