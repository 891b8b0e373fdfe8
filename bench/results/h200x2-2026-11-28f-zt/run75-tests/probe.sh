#!/usr/bin/env bash
# run75: the launch fix (G = 1 blocks capped): tests on two ranks and one, then the 4-GPU blocks alone and exchanging with themselves (copy, copy-zt)
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=8
nccl_lib=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(nvidia.nccl.__path__[0], "lib"))' 2>/dev/null || true)
v=new; mkdir -p /tmp/$v; tar -C /tmp/$v -xJf .gpu/wdirac-gpu.tar.xz; echo "$v $(cat /tmp/$v/COMMIT)"
O=/tmp/s; rm -rf $O; mkdir -p $O
save() { tar -C /tmp -czf $OUT/s.tgz s; }
K="dslash_[dsh]_r12_gf0_dag0_xpay0_n1"
MP="mpirun --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE -x OMP_NUM_THREADS -x WDIRAC_TUNE_CACHE -x WDIRAC_HALO -x WDIRAC_HALO_FIELD"
export LD_LIBRARY_PATH="/tmp/new/lib${nccl_lib:+:$nccl_lib}"
t() { # ranks halo field limit
  s=$(date +%s); WDIRAC_TUNE_CACHE=$O/tc-test.tsv WDIRAC_HALO_FIELD=$3 timeout $4 $MP -n $1 /tmp/new/test_decomposed --backend cuda --halo $2 > $O/test-n$1-$2$3.log 2>&1
  echo "test n$1 $2 field=$3 rc $? ($(( $(date +%s) - s )) s): $(tail -1 $O/test-n$1-$2$3.log)"; grep -m3 FAIL $O/test-n$1-$2$3.log; save
}
b() { # tag halo field args...
  t=$1; h=$2; f=$3; shift 3; s=$(date +%s)
  WDIRAC_TUNE_CACHE=$O/tc-new.tsv WDIRAC_HALO=$h WDIRAC_HALO_FIELD=$f timeout 60 /tmp/new/wdirac bench dslash --backend cuda "$@" --kernels "$K" --reps 100 --json $O/$t-$h$f.json > $O/$t-$h$f.log 2>&1
  echo "== $t $h $f rc $? ($(( $(date +%s) - s )) s)"; grep -E "^dslash" $O/$t-$h$f.log | cut -c1-200; save
}
nvidia-smi -L
t 2 copy ZT 150
t 2 auto "" 150
t 1 copy ZT 100
for r in a b; do
  b blockZT4-$r copy "" --dims 48 48 24 48
  b selfZT4-$r copy "" --grid 1 1 1 1 --wrap-halo ZT --dims 48 48 24 48
  b selfZT4-$r copy ZT --grid 1 1 1 1 --wrap-halo ZT --dims 48 48 24 48
done
b blockT4 copy "" --dims 48 48 48 24
b selfT4 copy "" --grid 1 1 1 1 --wrap-halo T --dims 48 48 48 24
echo done
