#!/usr/bin/env bash
# where the self-exchange's time goes: WDIRAC_EXP switches of a temporary build (1 no copies, 2 no scatter,
# 4 no boundary kernel, 8 no exchange at all, 16 the boundary on the main stream)
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
  echo "== $t rc $?"; grep -E "^dslash" $O/$t.log | awk '{print $1, $5}'
}
self() { # tag exp wrap dims...
  t=$1; e=$2; w=$3; shift 3
  WDIRAC_EXP=$e WDIRAC_HALO=copy timeout 100 $G/wdirac bench dslash --backend cuda --grid 1 1 1 1 --wrap-halo $w --dims "$@" --kernels "$K" --reps 100 --json $O/$t.json > $O/$t.log 2>&1
  echo "== $t exp $e rc $?"; grep -E "^dslash" $O/$t.log | awk "{print \$1, \$6, \$7, \$13, \$14}"
}
one blockT4 48 48 48 24
for e in 0 1 2 3 8 24 12; do self selfT4-e$e $e T 48 48 48 24; done
one blockZT4 48 48 24 48
for e in 0 1 2 3 8 24 12; do self selfZT4-e$e $e ZT 48 48 24 48; done
cd $OUT && tar czf q.tgz q && rm -rf q
