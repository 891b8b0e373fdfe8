#!/usr/bin/env bash
G=/tmp/wdirac-gpu; rm -rf $G; mkdir -p $G; tar -C $G -xJf .gpu/wdirac-gpu.tar.xz
nccl_lib=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(nvidia.nccl.__path__[0], "lib"))' 2>/dev/null || true)
export LD_LIBRARY_PATH="$G/lib${nccl_lib:+:$nccl_lib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=8
O=$OUT/c; mkdir -p $O; export WDIRAC_TUNE_CACHE=$O/tunecache.tsv
nvidia-smi -L; cat $G/COMMIT
for n in 1 2; do
  timeout 120 mpirun --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE -x OMP_NUM_THREADS -x WDIRAC_TUNE_CACHE -n $n $G/test_decomposed --backend cuda > $O/test-n$n-auto.log 2>&1
  echo "test n$n auto rc $?: $(tail -1 $O/test-n$n-auto.log)"; grep -c "halo auto" $O/test-n$n-auto.log; grep "halo auto" $O/test-n$n-auto.log | grep -E "self" | head -4 | cut -c1-180
done
grep halo_route $O/tunecache.tsv | cut -f3- | head -40
cd $OUT && tar czf c.tgz c && rm -rf c
