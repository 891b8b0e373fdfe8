#!/usr/bin/env bash
# test_install.sh BUILD_DIR SOURCE_DIR: the installed C library (issue 14).
# Installs the build into a scratch directory (meson install --destdir),
# then, against that installation alone, through pkg-config:
#   - the headers are the public ones (include/*.h), no module header;
#   - the shared library exports exactly the functions those headers
#     declare, and the static library is there too;
#   - examples/solve_point.c compiles and links with
#     `pkg-config --cflags --libs wdirac` and runs: its solve converges and
#     its own check of M x = b with the public Dslash agrees.
# One line per check; "N of M failed" last; exit 1 on any failure.
set -u
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/check.sh"

meson install -C "$build" --no-rebuild --quiet --destdir "$tmp/root" > "$tmp/install.log" 2>&1
check "meson install --destdir" $? "$(tail -1 "$tmp/install.log")"

pc=$(find "$tmp/root" -name wdirac.pc | head -1)
check "wdirac.pc installed" "$([ -n "$pc" ]; echo $?)" "${pc#"$tmp/root"}"
export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR="$tmp/root"
cflags=$(pkg-config --cflags wdirac)
libs=$(pkg-config --libs wdirac)
check "pkg-config --cflags --libs wdirac" $? "$cflags $libs"

# pkgconf puts the sysroot in front of variables, pkg-config 0.29 does not
inroot() { case "$1" in "$tmp/root"*) echo "$1" ;; *) echo "$tmp/root$1" ;; esac; }
incdir=$(inroot "$(pkg-config --variable=includedir wdirac)")
headers=$(cd "$incdir" && ls wdirac*.h wd_*.h 2>/dev/null | sort | tr '\n' ' ')
want=$(cd "$src/include" && ls *.h | sort | tr '\n' ' ')
check "installed headers are include/*.h alone" "$([ "$headers" = "$want" ]; echo $?)" "$headers"

libdir=$(inroot "$(pkg-config --variable=libdir wdirac)")
so=$(ls "$libdir"/libwdirac.so.* 2>/dev/null | head -1)
check "shared library installed" "$([ -n "$so" ]; echo $?)" "${so#"$tmp/root"}"
check "static library installed" "$([ -f "$libdir/libwdirac.a" ]; echo $?)"
exported=$(nm -D --defined-only "$so" | awk '$2 == "T" {print $3}' | sort | tr '\n' ' ')
python3 "$src/runtime/export_map.py" "$tmp/map" "$src"/include/*.h
declared=$(grep -oE 'wd_[A-Za-z0-9_]+' "$tmp/map" | sort | tr '\n' ' ')
check "the .so exports exactly the public functions" "$([ "$exported" = "$declared" ]; echo $?)" \
    "$(echo "$exported" | wc -w) exported, $(echo "$declared" | wc -w) declared"
[ "$exported" = "$declared" ] || diff <(tr ' ' '\n' <<< "$declared") <(tr ' ' '\n' <<< "$exported")

# shellcheck disable=SC2086
cc -std=c11 -O2 -Wall -Wextra -Werror $cflags "$src/examples/solve_point.c" $libs -lm \
    -o "$tmp/solve_point" > "$tmp/cc.log" 2>&1
check "examples/solve_point.c builds with pkg-config" $? "$(head -3 "$tmp/cc.log")"
LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    OMP_NUM_THREADS=2 "$tmp/solve_point" 6 > "$tmp/run.log" 2>&1
rc=$?
check "solve_point runs, converges, checks itself" $rc "$(grep -E '^(solve|check)' "$tmp/run.log" | tr '\n' ' ')"
[ $rc -eq 0 ] || cat "$tmp/run.log"
check "it ran on the installed .so" \
    "$(LD_LIBRARY_PATH="$libdir" ldd "$tmp/solve_point" | grep -q "$tmp/root"; echo $?)"

echo "$failed of $run failed"
[ "$failed" -eq 0 ]
