#!/bin/bash
# The protocol of PROTOCOL.md beside this file. From the repository root:
#   nohup bash results/fashion/refresh_cost/run.sh > results/fashion/refresh_cost/run.log 2>&1 &
# The quiet rerun (results/fashion/refresh_cost_quiet/PROTOCOL.md) names its folder and arms:
#   D=results/fashion/refresh_cost_quiet ARMS="none fg bg bg1" bash results/fashion/refresh_cost/run.sh
set -u
WT=$(pwd)
export PYTHONPATH=$WT/python:${PSDA_DOMAINBED:-/work/shared/DomainBed} OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
PY=${PYTHON:-python}
D=${D:-results/fashion/refresh_cost}
JOBS="--n_trials 3 --n_hparams_from 1 --n_hparams 4 --steps 1000 --checkpoint_freq 100 --test_envs 0 3 --baselines --algorithms UDA_MMD --samplers double-paired"
FIX='{"psda_env_size": 1000, "mlp_width": 256, "mlp_depth": 3, "mlp_dropout": 0.0'
declare -A ARM=([none]=', "psda_refresh_steps": 0}' [fg]=', "psda_refresh_steps": 500, "psda_background": false}'
                [bg]=', "psda_refresh_steps": 500, "psda_background": true}'
                [bg1]=', "psda_refresh_steps": 500, "psda_background": true}')
# bg1 is bg with the Go core held to one thread, so that the background refresh and the
# training's one torch thread each have a core of a 2-core machine.
declare -A THREADS=([none]='' [fg]='' [bg]='' [bg1]=1)
read -r -a arms <<< "${ARMS:-none fg bg}"
k=${#arms[@]}
n=18
for i in $(seq 0 $((n - 1))); do
  for j in $(seq 0 $((k - 1))); do
    a=${arms[$(( (i + j) % k ))]}
    echo "job $i arm $a start $(date +%T) load $(cut -d' ' -f1 /proc/loadavg)"
    env ${THREADS[$a]:+PSDA_NUM_THREADS=${THREADS[$a]}} nice -n 5 $PY tools/fashion_protocol.py run \
      --shard $i/$n --output_dir $D/$a $JOBS --fixed "$FIX${ARM[$a]}" >> $D/$a.log 2>&1 \
      || echo "job $i arm $a failed: rc $?"
  done
  echo "job $i done $(date +%T)"
done
echo "refresh_cost: all done $(date)"
