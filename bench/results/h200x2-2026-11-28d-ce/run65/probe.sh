#!/usr/bin/env bash
# probe: the copy route's faces by the copy engine (WDIRAC_HALO_CE 0..3), 2 GPUs T split 48^3x96,
# one GPU at 48^3x96 and at the local 48^3x48, and the tests
G=/tmp/wdirac-gpu; rm -rf $G; mkdir -p $G; tar -C $G -xJf .gpu/wdirac-gpu.tar.xz
nccl_lib=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(nvidia.nccl.__path__[0], "lib"))' 2>/dev/null || true)
export LD_LIBRARY_PATH="$G/lib${nccl_lib:+:$nccl_lib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=8
O=$OUT/p; mkdir -p $O; export WDIRAC_TUNE_CACHE=$O/tunecache.tsv
nvidia-smi -L; nvidia-smi topo -m | head -4; cat $G/COMMIT
K="dslash_[dsh]_r12_gf0_dag0_xpay0_n1"
MP="mpirun --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE -x OMP_NUM_THREADS -x WDIRAC_TUNE_CACHE -x WDIRAC_HALO -x WDIRAC_HALO_CE"
# tests first: the copy engine paths must give one GPU's bits
for ce in 3 1 2; do for n in 1 2; do
  WDIRAC_HALO=copy WDIRAC_HALO_CE=$ce timeout 150 $MP -n $n $G/test_decomposed --backend cuda --halo copy > $O/test-n$n-ce$ce.log 2>&1
  echo "test_decomposed n$n copy ce$ce rc $?: $(tail -1 $O/test-n$n-ce$ce.log)"
done; done
WDIRAC_HALO_CE=3 timeout 150 $MP -n 2 $G/test_decomposed --backend cuda > $O/test-n2-auto-ce3.log 2>&1
echo "test_decomposed n2 auto ce3 rc $?: $(tail -1 $O/test-n2-auto-ce3.log)"
timeout 120 $G/test_multi_rhs --backend cuda > $O/test-mrhs.log 2>&1; echo "test_multi_rhs rc $?: $(tail -1 $O/test-mrhs.log)"
# one GPU: the whole lattice and the local block
for d in "48 48 48 96" "48 48 48 48"; do
  t=$(echo $d | tr ' ' x)
  timeout 100 $G/wdirac bench dslash --backend cuda --dims $d --kernels "$K" --reps 100 --json $O/one-$t.json > $O/one-$t.log 2>&1
  echo "== one GPU $t rc $?"; grep -E "^dslash" $O/one-$t.log | cut -c1-110
done
run() { # tag ce
  WDIRAC_HALO=copy WDIRAC_HALO_CE=$2 timeout 100 $MP -n 2 $G/wdirac bench dslash --backend cuda --grid 1 1 1 2 --dims 48 48 48 96 --kernels "$K" --reps 100 --json $O/$1.json > $O/$1.log 2>&1
  echo "== $1 (ce=$2) rc $?"; grep -E "^dslash" $O/$1.log | cut -c1-220
}
for r in a b; do for ce in 0 1 2 3; do run ce$ce-$r $ce; done; done
cd $OUT && tar czf p.tgz p && rm -rf p
