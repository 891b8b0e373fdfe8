#!/usr/bin/env bash
# 4-GPU call 3: test_decomposed --halo copy / copy-zt (WDIRAC_HALO_FIELD=ZT) on 4 and 2 ranks; then gpu-multi big (64^3x128)
cd "$(dirname "$0")/.."
mkdir -p $OUT/t $OUT/big
G=/tmp/wdirac-gpu
rm -rf $G && mkdir -p $G && tar -C $G -xJf .gpu/wdirac-gpu.tar.xz
nccl_lib=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(nvidia.nccl.__path__[0], "lib"))' 2>/dev/null || true)
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for p in copy copy-zt; do for n in 4 2; do
  f=$([ $p = copy-zt ] && echo ZT)
  s=$(date +%s)
  env LD_LIBRARY_PATH="$G/lib${nccl_lib:+:$nccl_lib}" OMP_NUM_THREADS=8 WDIRAC_TUNE_CACHE=/tmp/t-tc.tsv WDIRAC_HALO_FIELD=$f \
    timeout 90 mpirun --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE -x OMP_NUM_THREADS -x WDIRAC_TUNE_CACHE -x WDIRAC_HALO_FIELD \
    -n $n $G/test_decomposed --backend cuda --halo copy > $OUT/t/decomposed-n$n-$p.log 2>&1
  echo "--halo $p $n ranks: exit $? in $(($(date +%s) - s)) s: $(grep -E 'of [0-9]+ failed' $OUT/t/decomposed-n$n-$p.log | tail -1)"
  grep -m3 FAIL $OUT/t/decomposed-n$n-$p.log
done; done
tar -C $OUT -czf $OUT/tests.tar.gz t && rm -rf $OUT/t
GPU_MULTI_PARTS="big" GPU_MULTI_BUDGET=420 bench/gpu-multi $OUT/big > $OUT/big/stdout.txt 2>&1
echo "gpu-multi big rc $?"
tail -40 $OUT/big/stdout.txt
