#!/usr/bin/env bash
# 4-GPU call 2: halo-ab Dslash copy / copy-zt / auto, 2 rounds; then test_decomposed with WDIRAC_HALO=kernel, mpi forced on 2 and 4 ranks
cd "$(dirname "$0")/.."
mkdir -p $OUT/ab $OUT/env
HALO_POLICIES="copy copy-zt auto" HALO_REPS=2 HALO_PARTS="dslash" HALO_BUDGET=430 bench/halo-ab $OUT/ab > $OUT/ab/stdout.txt 2>&1
echo "halo-ab rc $?"
cat $OUT/ab/summary.txt
G=/tmp/wdirac-gpu
nccl_lib=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(nvidia.nccl.__path__[0], "lib"))' 2>/dev/null || true)
export LD_LIBRARY_PATH="$G/lib${nccl_lib:+:$nccl_lib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=8 WDIRAC_TUNE_CACHE=/tmp/env-tc.tsv
for p in kernel mpi; do for n in 4 2; do
  s=$(date +%s)
  WDIRAC_HALO=$p timeout 70 mpirun --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE -x OMP_NUM_THREADS -x WDIRAC_TUNE_CACHE -x WDIRAC_HALO -n $n $G/test_decomposed --backend cuda > $OUT/env/decomposed-n$n-WDIRAC_HALO=$p.log 2>&1
  echo "WDIRAC_HALO=$p $n ranks: exit $? in $(($(date +%s) - s)) s: $(grep -E 'of [0-9]+ failed' $OUT/env/decomposed-n$n-WDIRAC_HALO=$p.log | tail -1)"
  grep -m3 FAIL $OUT/env/decomposed-n$n-WDIRAC_HALO=$p.log
done; done
tar -C $OUT -czf $OUT/env.tar.gz env && rm -rf $OUT/env
