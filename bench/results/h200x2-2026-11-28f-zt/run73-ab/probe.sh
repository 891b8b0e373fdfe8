#!/usr/bin/env bash
# run73: 228d166 (949367b's ghost reads from a second kernel instance; AUTO's copy-zt) against f4e1df1 (scatter): tests, then 1 GPU, T and Z split in turns
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=8
nccl_lib=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(nvidia.nccl.__path__[0], "lib"))' 2>/dev/null || true)
for v in new before; do mkdir -p /tmp/$v; f=.gpu/wdirac-gpu.tar.xz; [ $v = before ] && f=.gpu/before.tar.xz; [ -x /tmp/$v/wdirac ] || tar -C /tmp/$v -xJf $f; echo "$v $(cat /tmp/$v/COMMIT)"; done
O=$OUT/q; mkdir -p $O
K="dslash_[dsh]_r12_gf0_dag0_xpay0_n1"
MP="mpirun --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE -x OMP_NUM_THREADS -x WDIRAC_TUNE_CACHE -x WDIRAC_HALO -x WDIRAC_HALO_FIELD"
export LD_LIBRARY_PATH="/tmp/new/lib${nccl_lib:+:$nccl_lib}" WDIRAC_TUNE_CACHE=$O/tc-test.tsv
t() { # ranks halo field
  s=$(date +%s); WDIRAC_HALO_FIELD=$3 timeout 90 $MP -n $1 /tmp/new/test_decomposed --backend cuda --halo $2 > $O/test-n$1-$2$3.log 2>&1
  echo "test n$1 $2 field=$3 rc $? ($(( $(date +%s) - s )) s): $(tail -1 $O/test-n$1-$2$3.log)"
}
nvidia-smi -L
t 2 copy ""; t 2 copy ZT; t 2 auto ""; t 2 nccl ""; t 1 copy ZT
b() { # tag version ranks field args...
  t=$1; v=$2; n=$3; f=$4; shift 4
  export LD_LIBRARY_PATH="/tmp/$v/lib${nccl_lib:+:$nccl_lib}" WDIRAC_TUNE_CACHE=$O/tc-$v.tsv WDIRAC_HALO=copy WDIRAC_HALO_FIELD=$f
  timeout 90 $MP -n $n /tmp/$v/wdirac bench dslash --backend cuda "$@" --kernels "$K" --reps 100 --json $O/$t-$v$f.json > $O/$t-$v$f.log 2>&1
  echo "== $t $v $f rc $?"; grep -E "^dslash" $O/$t-$v$f.log | awk '{print $1, $5, $6, $7, $13, $14, $15}'
}
for r in a b; do
  for v in new before; do b one-$r $v 1 "" --dims 48 48 48 96; done
  for v in new before; do b T2-$r $v 2 "" --grid 1 1 1 2 --dims 48 48 48 96; done
  b Z2-$r new 2 "" --grid 1 1 2 1 --dims 48 48 48 96; b Z2-$r new 2 ZT --grid 1 1 2 1 --dims 48 48 48 96; b Z2-$r before 2 "" --grid 1 1 2 1 --dims 48 48 48 96
done
cd $OUT && tar czf q.tgz q && rm -rf q
