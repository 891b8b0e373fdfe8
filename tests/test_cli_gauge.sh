#!/bin/sh
# test_cli_gauge.sh: `wdirac gauge generate`, `info` and `convert` end to end.
#   test_cli_gauge.sh WDIRAC
# Generates a 4^4 configuration in each format, checks that info passes it
# (exit 0), that generate refuses to overwrite without --overwrite (exit 2,
# file unchanged), that info fails a damaged or missing file (exit 2,
# MISMATCH) and bad usage (exit 2).  Converts NERSC 64 -> ILDG -> NERSC 32
# two-row (plaquettes of `info` agree), and checks that convert refuses an
# existing output, a missing input and a corrupted input (exit 2, nothing
# written).  One line per check; exit 1 on any failure.
set -u
wdirac=$1
dir=$(mktemp -d "${TMPDIR:-/tmp}/wdirac-cli-XXXXXX")
trap 'rm -rf "$dir"' EXIT
failed=0
check() { # name, expected exit code, actual exit code
    if [ "$2" = "$3" ]; then echo "$1  OK"; else echo "$1  FAIL (exit $3, expected $2)"; failed=1; fi
}

"$wdirac" gauge generate --dims 4 4 4 4 --beta 5.7 --therm 2 --sweeps 4 --or 2 --seed 3 \
    --format nersc --out "$dir/a.nersc" > "$dir/gen.log" 2>&1
check "generate nersc" 0 $?
grep -q "^# plaquette over 4 measurement sweeps" "$dir/gen.log"
check "generate prints the mean plaquette" 0 $?
[ "$(grep -c ' meas ' "$dir/gen.log")" = 4 ]
check "generate prints one line per measurement sweep" 0 $?
# --measure-every: fewer thermalization rows, the same configuration (bytes)
SOURCE_DATE_EPOCH=1700000000 "$wdirac" gauge generate --dims 4 4 4 4 --beta 5.7 --therm 7 \
    --sweeps 2 --or 2 --seed 3 --format nersc --out "$dir/m1.nersc" > /dev/null 2>&1
SOURCE_DATE_EPOCH=1700000000 "$wdirac" gauge generate --dims 4 4 4 4 --beta 5.7 --therm 7 \
    --sweeps 2 --or 2 --seed 3 --measure-every 3 --format nersc --out "$dir/m3.nersc" \
    > "$dir/m3.log" 2>&1
check "generate --measure-every 3" 0 $?
[ "$(grep -c ' therm ' "$dir/m3.log")" = 3 ] && [ "$(grep -c ' meas ' "$dir/m3.log")" = 2 ]
check "... measures thermalization sweeps 3, 6, 7 and both measurement sweeps" 0 $?
cmp -s "$dir/m1.nersc" "$dir/m3.nersc"
check "... and writes the same file as measuring every sweep" 0 $?
"$wdirac" gauge generate --dims 4 4 4 4 --beta 5.7 --sweeps 1 --measure-every 0 --format nersc \
    --out "$dir/m0.nersc" > /dev/null 2>&1
check "generate --measure-every 0 is bad usage" 2 $?
"$wdirac" gauge info "$dir/a.nersc" > "$dir/info.log" 2>&1
check "info nersc" 0 $?
grep -q "^checksum .* OK" "$dir/info.log" && grep -q "^plaquette .* OK" "$dir/info.log"
check "info reports checksum and plaquette OK" 0 $?
"$wdirac" gauge generate --dims 4 4 4 4 --beta 5.7 --sweeps 1 --format ildg --precision 32 \
    --out "$dir/b.ildg" > /dev/null 2>&1
check "generate ildg 32-bit" 0 $?
"$wdirac" gauge info "$dir/b.ildg" > "$dir/info2.log" 2>&1
check "info ildg" 0 $?
grep -q "^scidac .* OK" "$dir/info2.log"
check "info reports scidac-checksum OK" 0 $?

cp "$dir/a.nersc" "$dir/a.copy"
"$wdirac" gauge generate --dims 4 4 4 4 --beta 6 --sweeps 1 --format nersc --out "$dir/a.nersc" \
    > /dev/null 2>&1
check "generate refuses an existing file" 2 $?
cmp -s "$dir/a.nersc" "$dir/a.copy"
check "... and leaves it unchanged" 0 $?
sed 's/^PLAQUETTE = 0\./PLAQUETTE = 1./' "$dir/a.nersc" > "$dir/bad.nersc"
"$wdirac" gauge info "$dir/bad.nersc" > "$dir/info3.log" 2>&1
check "info on a wrong PLAQUETTE" 2 $?
grep -q "^plaquette .* MISMATCH" "$dir/info3.log"
check "... says MISMATCH" 0 $?
"$wdirac" gauge generate --dims 4 5 4 4 --beta 6 --sweeps 1 --format nersc --out "$dir/c" \
    > /dev/null 2>&1
check "generate with an odd extent" 2 $?
"$wdirac" gauge info "$dir/missing" > /dev/null 2>&1
check "info on a missing file" 2 $?
"$wdirac" gauge frobnicate > /dev/null 2>&1
check "unknown gauge command" 2 $?

# ---- convert ----
# the data plaquette that `gauge info` prints for a file
plaquette() {
    "$wdirac" gauge info "$1" | awk '$1 == "plaquette" { for (k = 1; k < NF; k++) if ($k == "data") print $(k + 1) }'
}
# exit 0 when |$1 - $2| <= $3
close() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a != "" && b != "" && d <= t) }'; }
# exit 0 when the directory holds nothing whose name starts with $1 (no
# output, no temporary file beside it)
nothing_named() { [ -z "$(find "$dir" -name "$1*" -print)" ]; }

"$wdirac" gauge convert "$dir/a.nersc" "$dir/c.ildg" --format ildg > "$dir/conv1.log" 2>&1
check "convert nersc 64 -> ildg" 0 $?
grep -q "^status *OK" "$dir/conv1.log" && grep -q "^output .*(ILDG, 64-bit, 3x3, big endian)" "$dir/conv1.log"
check "... summary: ILDG 64-bit, status OK" 0 $?
"$wdirac" gauge info "$dir/c.ildg" > "$dir/info4.log" 2>&1
check "info on the ildg output" 0 $?
grep -q "^format *ILDG/LIME" "$dir/info4.log"
check "... is ILDG" 0 $?
"$wdirac" gauge convert "$dir/c.ildg" "$dir/d.nersc" --format nersc --precision 32 --two-row \
    > "$dir/conv2.log" 2>&1
check "convert ildg -> nersc 32 two-row" 0 $?
"$wdirac" gauge info "$dir/d.nersc" > "$dir/info5.log" 2>&1
check "info on the nersc 32 two-row output" 0 $?
grep -q "DATATYPE 4D_SU3_GAUGE  FLOATING_POINT IEEE32BIG" "$dir/info5.log"
check "... is 4D_SU3_GAUGE IEEE32BIG" 0 $?
p0=$(plaquette "$dir/a.nersc"); p1=$(plaquette "$dir/c.ildg"); p2=$(plaquette "$dir/d.nersc")
echo "plaquettes: input $p0  ildg $p1  nersc32 $p2"
[ -n "$p0" ] && [ "$p0" = "$p1" ]
check "ildg 64-bit plaquette equals the input's" 0 $?
close "$p0" "$p2" 1e-5 && ! close "$p0" 1 1e-3
check "nersc 32-bit plaquette agrees to 1e-5 (and is not the unit field's)" 0 $?
"$wdirac" gauge convert "$dir/a.nersc" "$dir/e.nersc" --format nersc --little-endian \
    > /dev/null 2>&1 && "$wdirac" gauge info "$dir/e.nersc" 2>&1 | grep -q "FLOATING_POINT IEEE64LITTLE"
check "convert to nersc little endian" 0 $?

"$wdirac" gauge convert "$dir/b.ildg" "$dir/b.nersc" --format nersc > /dev/null 2>&1 &&
    "$wdirac" gauge info "$dir/b.nersc" 2>&1 | grep -q "FLOATING_POINT IEEE32BIG"
check "convert keeps a 32-bit input 32-bit without --precision" 0 $?
sed -e 's/^ENSEMBLE_ID = .*/ENSEMBLE_ID = my-ensemble/' \
    -e 's/^BOUNDARY_4 = PERIODIC/BOUNDARY_4 = ANTIPERIODIC/' "$dir/a.nersc" > "$dir/ens.nersc"
"$wdirac" gauge convert "$dir/ens.nersc" "$dir/ens2.nersc" --format nersc > /dev/null \
    2> "$dir/conv6.log"
check "convert a file with its own ENSEMBLE_ID and BOUNDARY_4" 0 $?
"$wdirac" gauge info "$dir/ens2.nersc" | grep -q "^ensemble *my-ensemble"
check "... keeps the ENSEMBLE_ID" 0 $?
grep -q "BOUNDARY_4 = ANTIPERIODIC" "$dir/conv6.log"
check "... says BOUNDARY_4 is not kept" 0 $?

cp "$dir/c.ildg" "$dir/c.copy"
"$wdirac" gauge convert "$dir/a.nersc" "$dir/c.ildg" --format ildg --precision 32 > /dev/null 2>&1
check "convert refuses an existing output" 2 $?
cmp -s "$dir/c.ildg" "$dir/c.copy"
check "... and leaves it byte-identical" 0 $?
"$wdirac" gauge convert "$dir/a.nersc" "$dir/c.ildg" --format ildg --precision 32 --overwrite \
    > /dev/null 2>&1
check "convert --overwrite replaces it" 0 $?
! cmp -s "$dir/c.ildg" "$dir/c.copy" && "$wdirac" gauge info "$dir/c.ildg" | grep -q "precision 32"
check "... with the 32-bit file" 0 $?

"$wdirac" gauge convert "$dir/missing" "$dir/f.ildg" --format ildg > "$dir/conv3.log" 2>&1
check "convert a missing input" 2 $?
nothing_named f.ildg && grep -q "missing" "$dir/conv3.log"
check "... writes nothing and names the file" 0 $?

# flip the last byte of the data (the low byte of the last big-endian
# double: only the checksum can notice)
cp "$dir/a.nersc" "$dir/bad2.nersc"
size=$(wc -c < "$dir/bad2.nersc")
byte=$(od -An -tu1 -j $((size - 1)) -N1 "$dir/bad2.nersc" | tr -d ' ')
printf "\\$(printf %o $((byte ^ 255)))" | dd of="$dir/bad2.nersc" bs=1 seek=$((size - 1)) conv=notrunc 2> /dev/null
[ "$(wc -c < "$dir/bad2.nersc")" = "$size" ] && ! cmp -s "$dir/a.nersc" "$dir/bad2.nersc"
check "corrupted copy differs in one byte, same size" 0 $?
"$wdirac" gauge convert "$dir/bad2.nersc" "$dir/g.ildg" --format ildg > "$dir/conv4.log" 2>&1
check "convert a corrupted input" 2 $?
nothing_named g.ildg && grep -qi "checksum" "$dir/conv4.log"
check "... writes nothing and says checksum" 0 $?

"$wdirac" gauge convert "$dir/a.nersc" "$dir/h.ildg" --format ildg --two-row > "$dir/conv5.log" 2>&1
check "convert to ildg with --two-row" 2 $?
nothing_named h.ildg && grep -q "NERSC options" "$dir/conv5.log"
check "... writes nothing and says why" 0 $?
"$wdirac" gauge convert "$dir/a.nersc" "$dir/h.ildg" --format ildg --little-endian > /dev/null 2>&1
check "convert to ildg with --little-endian" 2 $?
"$wdirac" gauge convert "$dir/a.nersc" "$dir/h.ildg" > /dev/null 2>&1
check "convert without --format" 2 $?
"$wdirac" gauge convert "$dir/a.nersc" "$dir/h.ildg" --format ildg --precision 16 > /dev/null 2>&1
check "convert with --precision 16" 2 $?
"$wdirac" gauge convert "$dir/a.nersc" --format ildg > /dev/null 2>&1
check "convert without OUT" 2 $?
nothing_named h.ildg
check "... none of them wrote anything" 0 $?
"$wdirac" gauge convert --help | grep -q "^usage: wdirac gauge convert IN OUT"
check "convert --help" 0 $?
"$wdirac" gauge --help | grep -q "convert IN OUT"
check "gauge --help lists convert" 0 $?
exit $failed
