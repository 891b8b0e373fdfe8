#!/usr/bin/env bash
# the kernels reading received faces in place (no scatter): test_decomposed --backend cuda, every route
G=/tmp/wdirac-gpu; rm -rf $G; mkdir -p $G; tar -C $G -xJf .gpu/wdirac-gpu.tar.xz
nccl_lib=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(nvidia.nccl.__path__[0], "lib"))' 2>/dev/null || true)
export LD_LIBRARY_PATH="$G/lib${nccl_lib:+:$nccl_lib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=8
O=$OUT/t; mkdir -p $O; export WDIRAC_TUNE_CACHE=$O/tunecache.tsv
nvidia-smi -L; cat $G/COMMIT
MP="mpirun --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE -x OMP_NUM_THREADS -x WDIRAC_TUNE_CACHE"
t() { # ranks halo
  s=$(date +%s)
  if [ "$2" = auto ]; then timeout 170 $MP -n $1 $G/test_decomposed --backend cuda > $O/test-n$1-$2.log 2>&1
  else timeout 170 $MP -n $1 $G/test_decomposed --backend cuda --halo $2 > $O/test-n$1-$2.log 2>&1; fi
  echo "test_decomposed n$1 $2 rc $? ($(( $(date +%s) - s )) s): $(tail -1 $O/test-n$1-$2.log)"
}
t 2 copy; t 2 kernel; t 2 nccl; t 2 mpi; t 2 auto; t 1 copy; t 1 nccl
grep -h "FAIL\|failed" $O/*.log | grep -v " 0 of " | head -20
cd $OUT && tar czf t.tgz t && rm -rf t
