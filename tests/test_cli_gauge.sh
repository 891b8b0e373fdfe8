#!/bin/sh
# test_cli_gauge.sh: `wdirac gauge generate` and `wdirac gauge info` end to end.
#   test_cli_gauge.sh WDIRAC
# Generates a 4^4 configuration in each format, checks that info passes it
# (exit 0), that generate refuses to overwrite without --overwrite (exit 2,
# file unchanged), that info fails a damaged file (exit 2, MISMATCH) and bad
# usage (exit 2).  One line per check; exit 1 on any failure.
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
check "info on a missing file" 1 $?
"$wdirac" gauge frobnicate > /dev/null 2>&1
check "unknown gauge command" 2 $?
exit $failed
