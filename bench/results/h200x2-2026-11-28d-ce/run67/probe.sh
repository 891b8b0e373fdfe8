#!/usr/bin/env bash
# probe 3: Z faces from the field (default) against gathered (WDIRAC_HALO_GATHER=1), 2 GPUs
G=/tmp/wdirac-gpu; rm -rf $G; mkdir -p $G; tar -C $G -xJf .gpu/wdirac-gpu.tar.xz
nccl_lib=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(nvidia.nccl.__path__[0], "lib"))' 2>/dev/null || true)
export LD_LIBRARY_PATH="$G/lib${nccl_lib:+:$nccl_lib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=8
O=$OUT/z; mkdir -p $O; export WDIRAC_TUNE_CACHE=$O/tunecache.tsv
nvidia-smi -L; cat $G/COMMIT
K="dslash_[dsh]_r12_gf0_dag0_xpay0_n1"
MP="mpirun --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE -x OMP_NUM_THREADS -x WDIRAC_TUNE_CACHE -x WDIRAC_HALO -x WDIRAC_HALO_GATHER"
for n in 1 2; do
  WDIRAC_HALO=copy timeout 150 $MP -n $n $G/test_decomposed --backend cuda --halo copy > $O/test-n$n-copy.log 2>&1
  echo "test_decomposed n$n copy rc $?: $(tail -1 $O/test-n$n-copy.log)"
done
WDIRAC_HALO=auto timeout 150 $MP -n 2 $G/test_decomposed --backend cuda > $O/test-n2-auto.log 2>&1
echo "test_decomposed n2 auto rc $?: $(tail -1 $O/test-n2-auto.log)"
timeout 100 $G/wdirac bench dslash --backend cuda --dims 48 48 48 96 --kernels "$K" --reps 100 --json $O/one.json > $O/one.log 2>&1
echo "== one GPU 48^3x96 rc $?"; grep -E "^dslash" $O/one.log | cut -c1-110
run() { # tag gather grid
  WDIRAC_HALO=copy WDIRAC_HALO_GATHER=$2 timeout 100 $MP -n 2 $G/wdirac bench dslash --backend cuda --grid $3 --dims 48 48 48 96 --kernels "$K" --reps 100 --json $O/$1.json > $O/$1.log 2>&1
  echo "== $1 (gather=$2) rc $?"; grep -E "^dslash" $O/$1.log | cut -c1-220
}
for r in a b c; do run z-field-$r 0 "1 1 2 1"; run z-gather-$r 1 "1 1 2 1"; done
run t-field 0 "1 1 1 2"; run t-gather 1 "1 1 1 2"
nrhs() { # tag gather
  WDIRAC_HALO=copy WDIRAC_HALO_GATHER=$2 timeout 150 $MP -n 2 $G/wdirac bench dslash --backend cuda --grid 1 1 2 1 --dims 32 32 32 64 --kernels "dslash_*_r12_gf0_dag0_xpay0_n1" --nrhs 1,4,12 --json $O/$1.json > $O/$1.log 2>&1
  echo "== $1 (gather=$2) rc $?"; grep -v '^#' $O/$1.log | grep -E "^dslash" | cut -c1-200 | tail -12
}
nrhs z-nrhs-field 0; nrhs z-nrhs-gather 1
# weak scaling, 32^3x64 a GPU, T split
timeout 100 $G/wdirac bench dslash --backend cuda --dims 32 32 32 64 --kernels "$K" --reps 100 --json $O/weak-one.json > $O/weak-one.log 2>&1
echo "== one GPU 32^3x64 rc $?"; grep -E "^dslash" $O/weak-one.log | cut -c1-110
for g in 0 1; do
  WDIRAC_HALO=copy WDIRAC_HALO_GATHER=$g timeout 100 $MP -n 2 $G/wdirac bench dslash --backend cuda --grid 1 1 1 2 --dims 32 32 32 128 --kernels "$K" --reps 100 --json $O/weak-two-g$g.json > $O/weak-two-g$g.log 2>&1
  echo "== two GPUs 32^3x128 gather=$g rc $?"; grep -E "^dslash" $O/weak-two-g$g.log | cut -c1-220
done
cd $OUT && tar czf z.tgz z && rm -rf z
