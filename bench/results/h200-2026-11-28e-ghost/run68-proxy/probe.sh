#!/usr/bin/env bash
# proxy: one H200 exchanging with itself at the 2- and 4-GPU local blocks, against the blocks alone
G=/tmp/wdirac-gpu; rm -rf $G; mkdir -p $G; tar -C $G -xJf .gpu/wdirac-gpu.tar.xz
nccl_lib=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(nvidia.nccl.__path__[0], "lib"))' 2>/dev/null || true)
export LD_LIBRARY_PATH="$G/lib${nccl_lib:+:$nccl_lib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=8
O=$OUT/q; mkdir -p $O; export WDIRAC_TUNE_CACHE=$O/tunecache.tsv
nvidia-smi -L; cat $G/COMMIT
K="dslash_[dsh]_r12_gf0_dag0_xpay0_n1"
one() { # tag dims...
  t=$1; shift
  timeout 100 $G/wdirac bench dslash --backend cuda --dims "$@" --kernels "$K" --reps 100 --json $O/$t.json > $O/$t.log 2>&1
  echo "== $t rc $?"; grep -E "^dslash" $O/$t.log | cut -c1-110
}
self() { # tag wrap dims...
  t=$1; w=$2; shift 2
  WDIRAC_HALO=copy timeout 100 $G/wdirac bench dslash --backend cuda --grid 1 1 1 1 --wrap-halo $w --dims "$@" --kernels "$K" --reps 100 --json $O/$t.json > $O/$t.log 2>&1
  echo "== $t rc $?"; grep -E "^dslash" $O/$t.log | cut -c1-230
}
for r in a b; do
  one whole-$r 48 48 48 96
  one blockT2-$r 48 48 48 48
  self selfT2-$r T 48 48 48 48
  one blockT4-$r 48 48 48 24
  self selfT4-$r T 48 48 48 24
  one blockZT4-$r 48 48 24 48
  self selfZT4-$r ZT 48 48 24 48
done
head -3 $O/selfT4-a.log
cd $OUT && tar czf q.tgz q && rm -rf q
