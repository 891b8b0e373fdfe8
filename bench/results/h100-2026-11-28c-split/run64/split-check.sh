#!/usr/bin/env bash
# one call: test_multi_rhs (forced splits), the N = 1, 4, 12 group table at 32^3x64, the tuned propagator
G=/tmp/wdirac-gpu; rm -rf $G; mkdir -p $G; tar -C $G -xJf .gpu/wdirac-gpu.tar.xz
export LD_LIBRARY_PATH="$G/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
O=$OUT/s; mkdir -p $O; export WDIRAC_TUNE_CACHE=$O/tunecache.tsv
nvidia-smi --query-gpu=name --format=csv,noheader; cat $G/COMMIT
timeout 90 $G/test_multi_rhs --backend cuda > $O/test_multi_rhs.txt 2>&1; echo "test_multi_rhs rc $?: $(tail -1 $O/test_multi_rhs.txt)"
grep -E "launch asked" $O/test_multi_rhs.txt | grep -c OK; grep FAIL $O/test_multi_rhs.txt | head -5
timeout 150 $G/wdirac bench dslash --backend cuda --dims 32 32 32 64 --kernels 'dslash_*_r12_gf0_dag0_xpay0_n1' \
    --nrhs 1,4,12 --json $O/dslash-group-32x32x32x64.json > $O/dslash-group-32x32x32x64.txt 2>&1; echo "group rc $?"
grep "^dslash" $O/dslash-group-32x32x32x64.txt
grep split $O/tunecache.tsv | cut -f3-
timeout 200 env MRHS_PARTS=tuned bench/mrhs-check $OUT/t 2>&1 | grep -E "pass|12 right-hand"
