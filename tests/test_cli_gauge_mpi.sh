#!/bin/sh
# test_cli_gauge_mpi.sh: `wdirac gauge generate`, `info` and `convert` on a
# process grid against one process.
#   test_cli_gauge_mpi.sh WDIRAC MPIEXEC [MPIEXEC OPTIONS...]
# Generates the same configuration on 1 rank and on 2 ranks (grids 1 1 1 2,
# 2 1 1 1 and the automatic one, NERSC and ILDG) and compares the files
# byte for byte (SOURCE_DATE_EPOCH fixes the NERSC date); runs info and
# convert on 2 ranks (the converted file equals the one of 1 rank); checks
# that a bad grid exits 2 naming the dimension and writes nothing, and that
# info and convert fail a corrupted file with exit 2 on every rank.  One
# line per check; exit 1 on any failure.
set -u
wdirac=$1
shift
mpi="$*"
dir=$(mktemp -d "${TMPDIR:-/tmp}/wdirac-cli-mpi-XXXXXX")
trap 'rm -rf "$dir"' EXIT
SOURCE_DATE_EPOCH=1700000000
export SOURCE_DATE_EPOCH
failed=0
check() { # name, expected exit code, actual exit code
    if [ "$2" = "$3" ]; then echo "$1  OK"; else echo "$1  FAIL (exit $3, expected $2)"; failed=1; fi
}
gen() { # ranks, output, format, extra options...
    n=$1 out=$2 fmt=$3
    shift 3
    $mpi -n "$n" "$wdirac" gauge generate --dims 8 4 4 8 --beta 5.8 --therm 1 --sweeps 2 --or 1 \
        --seed 11 --start hot --format "$fmt" --out "$out" "$@" > "$out.log" 2>&1
}

gen 1 "$dir/one.nersc" nersc
check "generate nersc on 1 rank" 0 $?
gen 2 "$dir/t2.nersc" nersc --grid 1 1 1 2
check "generate nersc on 2 ranks, grid 1 1 1 2" 0 $?
cmp -s "$dir/one.nersc" "$dir/t2.nersc"
check "... the bytes of 1 rank" 0 $?
gen 2 "$dir/x2.nersc" nersc --grid 2 1 1 1
check "generate nersc on 2 ranks, grid 2 1 1 1" 0 $?
cmp -s "$dir/one.nersc" "$dir/x2.nersc"
check "... the bytes of 1 rank" 0 $?
gen 1 "$dir/one.ildg" ildg --precision 32
check "generate ildg 32-bit on 1 rank" 0 $?
gen 2 "$dir/auto.ildg" ildg --precision 32
check "generate ildg 32-bit on 2 ranks, automatic grid" 0 $?
cmp -s "$dir/one.ildg" "$dir/auto.ildg"
check "... the bytes of 1 rank" 0 $?
grep -q "^# grid 1 1 1 2: 2 ranks" "$dir/auto.ildg.log"
check "... the automatic grid splits T" 0 $?

$mpi -n 2 "$wdirac" gauge info "$dir/one.nersc" --grid 1 1 1 2 > "$dir/info.log" 2>&1
check "info on 2 ranks" 0 $?
grep -q "^checksum .* OK" "$dir/info.log" && grep -q "^plaquette .* OK" "$dir/info.log"
check "... checksum and plaquette OK" 0 $?
"$wdirac" gauge convert "$dir/one.nersc" "$dir/c1.ildg" --format ildg > /dev/null 2>&1
check "convert nersc -> ildg on 1 rank" 0 $?
$mpi -n 2 "$wdirac" gauge convert "$dir/one.nersc" "$dir/c2.ildg" --format ildg --grid 2 1 1 1 \
    > "$dir/conv.log" 2>&1
check "convert nersc -> ildg on 2 ranks" 0 $?
cmp -s "$dir/c1.ildg" "$dir/c2.ildg"
check "... the bytes of 1 rank" 0 $?

gen 2 "$dir/bad.nersc" nersc --grid 1 1 2 1
check "generate on a bad grid (1 1 2 1 on Z = 4)" 2 $?
grep -q "local extent Z = 2" "$dir/bad.nersc.log"
check "... names the dimension" 0 $?
[ ! -e "$dir/bad.nersc" ] && [ -z "$(find "$dir" -name 'bad.nersc.tmp*' -print)" ]
check "... writes nothing" 0 $?
gen 2 "$dir/three.nersc" nersc --grid 1 1 1 3
check "generate on a grid of 3 ranks for 2" 2 $?

sed 's/^CHECKSUM = /CHECKSUM = 1/' "$dir/one.nersc" > "$dir/corrupt.nersc"
$mpi -n 2 "$wdirac" gauge info "$dir/corrupt.nersc" > "$dir/info2.log" 2>&1
check "info on a corrupted CHECKSUM, 2 ranks" 2 $?
$mpi -n 2 "$wdirac" gauge convert "$dir/corrupt.nersc" "$dir/c3.ildg" --format ildg \
    > /dev/null 2>&1
check "convert of a corrupted file, 2 ranks" 2 $?
[ ! -e "$dir/c3.ildg" ]
check "... writes nothing" 0 $?
$mpi -n 2 "$wdirac" gauge info "$dir/missing" > /dev/null 2>&1
check "info on a missing file, 2 ranks" 2 $?
exit $failed
