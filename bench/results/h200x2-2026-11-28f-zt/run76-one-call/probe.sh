#!/usr/bin/env bash
# run76: ee41e3d in one call against one GPU: 48^3x96 on 1 GPU, 2 GPUs T and Z split (copy, copy-zt, auto), the 4-GPU blocks exchanging with themselves
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=8
nccl_lib=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(nvidia.nccl.__path__[0], "lib"))' 2>/dev/null || true)
v=new; mkdir -p /tmp/$v; tar -C /tmp/$v -xJf .gpu/wdirac-gpu.tar.xz; echo "$v $(cat /tmp/$v/COMMIT)"
O=/tmp/u; rm -rf $O; mkdir -p $O
save() { tar -C /tmp -czf $OUT/u.tgz u; }
K="dslash_[dsh]_r12_gf0_dag0_xpay0_n1"
MP="mpirun --bind-to none -x LD_LIBRARY_PATH -x NCCL_NVLS_ENABLE -x OMP_NUM_THREADS -x WDIRAC_TUNE_CACHE -x WDIRAC_HALO -x WDIRAC_HALO_FIELD"
export LD_LIBRARY_PATH="/tmp/new/lib${nccl_lib:+:$nccl_lib}" WDIRAC_TUNE_CACHE=$O/tc.tsv
b() { # tag ranks halo field args...
  t=$1; n=$2; h=$3; f=$4; shift 4; s=$(date +%s)
  WDIRAC_HALO=$h WDIRAC_HALO_FIELD=$f timeout 75 $MP -n $n /tmp/new/wdirac bench dslash --backend cuda "$@" --kernels "$K" --reps 100 --json $O/$t-$h$f.json > $O/$t-$h$f.log 2>&1
  echo "== $t $h $f rc $? ($(( $(date +%s) - s )) s)"; grep -E "^dslash|auto|us ->|cache" $O/$t-$h$f.log | cut -c1-250; save
}
nvidia-smi -L
b one 1 copy "" --dims 48 48 48 96
b T2 2 copy "" --grid 1 1 1 2 --dims 48 48 48 96
b Z2 2 copy "" --grid 1 1 2 1 --dims 48 48 48 96
b Z2 2 copy ZT --grid 1 1 2 1 --dims 48 48 48 96
b selfT4 1 copy "" --grid 1 1 1 1 --wrap-halo T --dims 48 48 48 24
b selfZT4 1 copy "" --grid 1 1 1 1 --wrap-halo ZT --dims 48 48 24 48
b selfZT4 1 copy ZT --grid 1 1 1 1 --wrap-halo ZT --dims 48 48 24 48
b Z2 2 auto "" --grid 1 1 2 1 --dims 48 48 48 96
echo done
