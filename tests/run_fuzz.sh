#!/bin/sh
# run_fuzz.sh: run the libFuzzer harnesses of the gauge-file readers
# (tests/fuzz_nersc.c, tests/fuzz_lime.c) for a bounded time.
#
#   tests/run_fuzz.sh [SECONDS] [BUILDDIR]
#       configure BUILDDIR (default build-fuzz) with clang, -Dfuzz=true,
#       AddressSanitizer and UndefinedBehaviorSanitizer (every report
#       fatal) and the one Dslash variant the readers need none of, build
#       the harnesses, then run each for SECONDS (default 60)
#   tests/run_fuzz.sh --run BUILDDIR SECONDS nersc|lime
#       run one harness of a configured build (what `meson test --suite
#       fuzz` calls)
#
# Seeds: small configurations written by `wdirac gauge generate` of the
# same build (NERSC 32/64-bit, two-row and 3x3, both byte orders; ILDG 32
# and 64-bit) plus the keyword dictionaries tests/fuzz_*.dict.  Exit 0 when
# no harness found a crash, leak or sanitizer report; the crashing input is
# left in BUILDDIR/fuzz-<name>/ (libFuzzer's crash-* file).
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)

run_one() {
    build=$1 seconds=$2 name=$3
    work="$build/fuzz-$name"
    mkdir -p "$work/corpus" "$work/seeds"
    wdirac="$build/cli/wdirac"
    gen() {
        out="$work/seeds/$1"
        shift
        [ -s "$out" ] || "$wdirac" gauge generate --dims 4 4 4 4 --beta 5.7 --sweeps 1 \
            --seed 1 --out "$out" --overwrite "$@" > /dev/null
    }
    if [ "$name" = nersc ]; then
        gen n32_2row_be --format nersc --precision 32 --two-row
        gen n32_3x3_le --format nersc --precision 32 --little-endian
        gen n64_2row_le --format nersc --precision 64 --two-row --little-endian
        printf 'BEGIN_HEADER\nDATATYPE = 4D_SU3_GAUGE\nDIMENSION_1 = 4\nCHECKSUM = 0\nEND_HEADER\n' \
            > "$work/seeds/header_only"
    else
        gen i32 --format ildg --precision 32
        gen i64 --format ildg --precision 64
    fi
    cd "$work"
    "$build/tests/fuzz_$name" -max_total_time="$seconds" -max_len=160000 -timeout=20 \
        -rss_limit_mb=2048 -print_final_stats=1 -dict="$src/tests/fuzz_$name.dict" \
        corpus seeds
}

if [ "${1:-}" = --run ]; then
    run_one "$2" "$3" "$4"
    exit 0
fi

seconds=${1:-60}
build=${2:-build-fuzz}
case $build in /*) ;; *) build="$src/$build" ;; esac
if [ ! -f "$build/build.ninja" ]; then
    # glibc's <complex.h> defines CMPLX only for GCC, and clang 14 claims
    # GCC 4.2: supply it for the runtime files that use it.  No MPI (Open
    # MPI's own allocations read as leaks, and `wdirac gauge` starts MPI)
    CC=clang CFLAGS="-fsanitize=fuzzer-no-link -fno-sanitize-recover=all \
-DCMPLX(x,y)=__builtin_complex((double)(x),(double)(y))" \
    meson setup "$build" "$src" -Dcuda=disabled -Dfuzz=true -Dmpi=disabled -Dpython=disabled \
        -Dkernels=dslash_d_r18_gf0_dag0_xpay0_n1 -Dbuildtype=debugoptimized \
        -Db_sanitize=address,undefined -Db_lundef=false
fi
ninja -C "$build" tests/fuzz_nersc tests/fuzz_lime cli/wdirac
for name in nersc lime; do
    echo "== fuzz_$name for $seconds s"
    run_one "$build" "$seconds" "$name"
done
