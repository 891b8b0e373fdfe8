#!/usr/bin/env bash
# A/B: 96d2147 (kernels read received faces in place) against f4e1df1 (scatter), in turns
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=8
nccl_lib=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(nvidia.nccl.__path__[0], "lib"))' 2>/dev/null || true)
for v in new before; do mkdir -p /tmp/$v; f=.gpu/wdirac-gpu.tar.xz; [ $v = before ] && f=.gpu/before.tar.xz; tar -C /tmp/$v -xJf $f; echo "$v $(cat /tmp/$v/COMMIT)"; done
O=$OUT/q; mkdir -p $O
K="dslash_[dsh]_r12_gf0_dag0_xpay0_n1"
MP="mpirun --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE -x OMP_NUM_THREADS -x WDIRAC_TUNE_CACHE -x WDIRAC_HALO"
b() { # tag version ranks args...
  t=$1; v=$2; n=$3; shift 3
  export LD_LIBRARY_PATH="/tmp/$v/lib${nccl_lib:+:$nccl_lib}" WDIRAC_TUNE_CACHE=$O/tc-$v.tsv WDIRAC_HALO=copy
  timeout 120 $MP -n $n /tmp/$v/wdirac bench dslash --backend cuda "$@" --kernels "$K" --reps 100 --json $O/$t-$v.json > $O/$t-$v.log 2>&1
  echo "== $t $v rc $?"; grep -E "^dslash" $O/$t-$v.log | awk '{print $1, $5, $6, $7, $13, $14, $15}'
}
nvidia-smi -L
for v in new before; do b one $v 1 --dims 48 48 48 96; done
for r in a b; do for v in new before; do b T2-$r $v 2 --grid 1 1 1 2 --dims 48 48 48 96; done; done
for v in new before; do b Z2 $v 2 --grid 1 1 2 1 --dims 48 48 48 96; done
for v in new before; do b selfT4 $v 1 --grid 1 1 1 1 --wrap-halo T --dims 48 48 48 24; b selfZT4 $v 1 --grid 1 1 1 1 --wrap-halo ZT --dims 48 48 24 48; done
b blockT4 new 1 --dims 48 48 48 24; b blockZT4 new 1 --dims 48 48 24 48
cd $OUT && tar czf q.tgz q && rm -rf q
