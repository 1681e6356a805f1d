#!/bin/bash
# Imbalanced pairing in the protocol: UDA_MMD + Double-paired, psda_imbalance cost vs systematic.
set -u
export PYTHONPATH=$(pwd)/python:${PSDA_DOMAINBED:-/work/shared/DomainBed} OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
PY=${PYTHON:-python}
ARGS="--n_trials 5 --n_hparams_from 1 --n_hparams 4 --steps 1000 --checkpoint_freq 100 --test_envs 0 3 5 --uda_holdout_fraction 0.3 --baselines --algorithms UDA_MMD --samplers double-paired"
FIX='{"psda_env_size": 1000, "mlp_width": 256, "mlp_depth": 3, "mlp_dropout": 0.0, "psda_refresh_steps": 500'
for imb in cost systematic; do
  nice -n 5 $PY tools/fashion_protocol.py run --output_dir results/fashion/imbalance/$imb $ARGS \
    --fixed "$FIX, \"psda_imbalance\": \"$imb\"}" > results/fashion/imbalance/$imb.log 2>&1 &
done
wait
echo "imbalance run: done $(date)"
