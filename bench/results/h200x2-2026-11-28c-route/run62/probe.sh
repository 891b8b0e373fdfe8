#!/usr/bin/env bash
# probe: auto vs copy on 2 GPUs, h only, 48^3x96
G=/tmp/wdirac-gpu; rm -rf $G; mkdir -p $G; tar -C $G -xJf .gpu/wdirac-gpu.tar.xz
nccl_lib=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(nvidia.nccl.__path__[0], "lib"))' 2>/dev/null || true)
export LD_LIBRARY_PATH="$G/lib${nccl_lib:+:$nccl_lib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
O=$OUT/p; mkdir -p $O
run() { # tag halo cache threads
  env WDIRAC_HALO=$2 WDIRAC_TUNE_CACHE=$O/$3 OMP_NUM_THREADS=$4 timeout 100 mpirun --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE -x OMP_NUM_THREADS -x WDIRAC_TUNE_CACHE -x WDIRAC_HALO -n 2 \
    $G/wdirac bench dslash --backend cuda --grid 1 1 1 2 --dims 48 48 48 96 --kernels "dslash_[sh]_r12_gf0_dag0_xpay0_n1" --reps 100 --json $O/$1.json > $O/$1.log 2>&1
  echo "== $1 (halo=$2 cache=$3 threads=$4) rc $?"; grep -E "^dslash|auto:" $O/$1.log | awk '{print "   " $0}' | cut -c1-200
}
run copy1 copy c1.tsv 16
run auto-fresh auto c2.tsv 16
run auto-cached auto c2.tsv 16
run copy2 copy c1.tsv 16
run auto-fresh-t4 auto c3.tsv 4
run copy-t4 copy c1.tsv 4
cd $OUT && tar czf p.tgz p && rm -rf p
