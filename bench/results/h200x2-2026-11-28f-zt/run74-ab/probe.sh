#!/usr/bin/env bash
# run74: 228d166 against f4e1df1, after run73 stopped at its limit: tests of copy-zt and AUTO on two ranks,
# one GPU in turns, Z split with copy-zt, the Z x T 4-GPU block exchanging with itself, several right-hand sides
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=8
nccl_lib=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(nvidia.nccl.__path__[0], "lib"))' 2>/dev/null || true)
for v in new before; do mkdir -p /tmp/$v; f=.gpu/wdirac-gpu.tar.xz; [ $v = before ] && f=.gpu/before.tar.xz; [ -x /tmp/$v/wdirac ] || tar -C /tmp/$v -xJf $f; echo "$v $(cat /tmp/$v/COMMIT)"; done
O=/tmp/r; rm -rf $O; mkdir -p $O
save() { tar -C /tmp -czf $OUT/r.tgz r; }
K="dslash_[dsh]_r12_gf0_dag0_xpay0_n1"
MP="mpirun --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE -x OMP_NUM_THREADS -x WDIRAC_TUNE_CACHE -x WDIRAC_HALO -x WDIRAC_HALO_FIELD"
t() { # ranks halo field limit
  s=$(date +%s); LD_LIBRARY_PATH="/tmp/new/lib${nccl_lib:+:$nccl_lib}" WDIRAC_TUNE_CACHE=$O/tc-test.tsv WDIRAC_HALO_FIELD=$3 timeout $4 $MP -n $1 /tmp/new/test_decomposed --backend cuda --halo $2 > $O/test-n$1-$2$3.log 2>&1
  echo "test n$1 $2 field=$3 rc $? ($(( $(date +%s) - s )) s): $(tail -1 $O/test-n$1-$2$3.log)"; grep -m3 FAIL $O/test-n$1-$2$3.log; save
}
b() { # tag version ranks halo field args...
  t=$1; v=$2; n=$3; h=$4; f=$5; shift 5; s=$(date +%s)
  LD_LIBRARY_PATH="/tmp/$v/lib${nccl_lib:+:$nccl_lib}" WDIRAC_TUNE_CACHE=$O/tc-$v.tsv WDIRAC_HALO=$h WDIRAC_HALO_FIELD=$f timeout 80 $MP -n $n /tmp/$v/wdirac bench dslash --backend cuda "$@" --json $O/$t-$v-$h$f.json > $O/$t-$v-$h$f.log 2>&1
  echo "== $t $v $h $f rc $? ($(( $(date +%s) - s )) s)"; grep -E "^dslash|auto:|^ +[a-z]+=|grid=" $O/$t-$v-$h$f.log | cut -c1-260; save
}
nvidia-smi -L
S="--kernels $K --reps 100"
t 2 copy ZT 90
b one new 1 copy "" --dims 48 48 48 96 $S
b one before 1 copy "" --dims 48 48 48 96 $S
b Z2 new 2 copy ZT --grid 1 1 2 1 --dims 48 48 48 96 $S
b selfZT4 new 1 copy "" --grid 1 1 1 1 --wrap-halo ZT --dims 48 48 24 48 $S
b selfZT4 new 1 copy ZT --grid 1 1 1 1 --wrap-halo ZT --dims 48 48 24 48 $S
b selfZT4 before 1 copy "" --grid 1 1 1 1 --wrap-halo ZT --dims 48 48 24 48 $S
t 2 auto "" 90
N="--kernels dslash_[sh]_r12_gf0_dag0_xpay0_n1 --nrhs 4"
b Znrhs new 2 copy "" --grid 1 1 2 1 --dims 32 32 32 64 $N
b Znrhs new 2 copy ZT --grid 1 1 2 1 --dims 32 32 32 64 $N
t 1 copy ZT 60
echo done
