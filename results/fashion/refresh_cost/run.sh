#!/bin/bash
# The protocol of PROTOCOL.md beside this file. From the repository root:
#   nohup bash results/fashion/refresh_cost/run.sh > results/fashion/refresh_cost/run.log 2>&1 &
set -u
WT=$(pwd)
export PYTHONPATH=$WT/python:${PSDA_DOMAINBED:-/work/shared/DomainBed} OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
PY=${PYTHON:-python}
D=results/fashion/refresh_cost
JOBS="--n_trials 3 --n_hparams_from 1 --n_hparams 4 --steps 1000 --checkpoint_freq 100 --test_envs 0 3 --baselines --algorithms UDA_MMD --samplers double-paired"
FIX='{"psda_env_size": 1000, "mlp_width": 256, "mlp_depth": 3, "mlp_dropout": 0.0'
declare -A ARM=([none]=', "psda_refresh_steps": 0}' [fg]=', "psda_refresh_steps": 500, "psda_background": false}'
                [bg]=', "psda_refresh_steps": 500, "psda_background": true}')
arms=(none fg bg)
n=18
for i in $(seq 0 $((n - 1))); do
  for j in 0 1 2; do
    a=${arms[$(( (i + j) % 3 ))]}
    nice -n 5 $PY tools/fashion_protocol.py run --shard $i/$n --output_dir $D/$a $JOBS \
      --fixed "$FIX${ARM[$a]}" >> $D/$a.log 2>&1 || echo "job $i arm $a failed: rc $?"
  done
  echo "job $i done $(date +%T)"
done
echo "refresh_cost: all done $(date)"
