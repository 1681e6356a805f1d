#!/bin/bash
# The protocol of docs/evidence.md: two workers on the main run, then the background-refresh
# run (UDA_MMD + Double-paired, psda_background off / on). Run from the repository root:
#   PSDA_DOMAINBED=/path/to/DomainBed nohup bash results/fashion/run.sh > results/fashion/run.log 2>&1 &
set -u
WT=$(pwd)
export PYTHONPATH=$WT/python:${PSDA_DOMAINBED:-/work/shared/DomainBed} OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
PY=${PYTHON:-python}
P="nice -n 5 $PY tools/fashion_protocol.py"
MAIN="--output_dir results/fashion/main --n_trials 5 --n_hparams_from 1 --n_hparams 4 --steps 1000 --checkpoint_freq 100 --test_envs 0 3 5"
FIX='{"psda_env_size": 1000, "mlp_width": 256, "mlp_depth": 3, "mlp_dropout": 0.0, "psda_refresh_steps": 500'
BG="--n_trials 1 --n_hparams_from 1 --n_hparams 4 --steps 1000 --checkpoint_freq 100 --test_envs 0 3 --baselines --algorithms UDA_MMD --samplers double-paired"
worker() {  # $1: shard index
  $P run --shard $1/2 $MAIN --fixed "$FIX}" > results/fashion/main-$1.log 2>&1
  if [ $1 = 0 ]; then order="false true"; else order="true false"; fi
  for bg in $order; do
    $P run --shard $1/2 --output_dir results/fashion/background-$bg $BG \
      --fixed "$FIX, \"psda_background\": $bg}" > results/fashion/background-$bg-$1.log 2>&1
  done
}
worker 0 & worker 1 &
wait
echo "fashion protocol: all done $(date)"
