#!/usr/bin/env bash
# 4-GPU call 1: gpu-multi strong, weak, solver, tests (AUTO routes)
cd "$(dirname "$0")/.."
mkdir -p $OUT/gm
nvidia-smi -L
GPU_MULTI_PARTS="strong weak solver tests" GPU_MULTI_BUDGET=555 bench/gpu-multi $OUT/gm > $OUT/gm/stdout.txt 2>&1
echo "gpu-multi rc $?"
grep -vE '^ +[0-9]+ +[0-9.]+ +[0-9.]+' $OUT/gm/stdout.txt | tail -90
cat /tmp/wdirac-multi-out/times.txt 2>/dev/null
