# Pilot 2: the subset of 1000 images per environment (n_s = 4000, n_t = 160 with one test env).
cd /work/wt-h27data
export PYTHONPATH=/work/wt-h27data/python:/work/shared/DomainBed OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
PY=~/.cache/psda-venv/bin/python
FIX='"psda_env_size": 1000, "mlp_width": 256, "mlp_depth": 3, "mlp_dropout": 0.0'
C="--dataset RotatedFashionMNISTFlat --task domain_adaptation --uda_holdout_fraction 0.2 --test_envs 0 --skip_model_save"
while pgrep -f "pilot/pilot.sh" >/dev/null; do sleep 2; done
/usr/bin/time -v nice -n 5 $PY -m psda.domainbed $C --algorithm ERM --steps 3001 --checkpoint_freq 300 --hparams "{$FIX}" --output_dir pilot/e1000_erm_default > pilot/e1000_erm_default.log 2>&1
/usr/bin/time -v nice -n 5 $PY -m psda.domainbed $C --algorithm ERM --steps 3001 --checkpoint_freq 300 --hparams "{$FIX, \"batch_size\": 6}" --output_dir pilot/e1000_erm_bs6 > pilot/e1000_erm_bs6.log 2>&1
/usr/bin/time -v nice -n 5 $PY -m psda.domainbed $C --algorithm UDA_MMD --sampler double-paired --steps 1501 --checkpoint_freq 150 --hparams "{$FIX, \"batch_size\": 6, \"psda_refresh_steps\": 500}" --output_dir pilot/e1000_mmd_dp_bs6 > pilot/e1000_mmd_dp_bs6.log 2>&1
echo PILOT2 DONE
