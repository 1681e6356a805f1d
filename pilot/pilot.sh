cd /work/wt-h27data
export PYTHONPATH=/work/wt-h27data/python:/work/shared/DomainBed OMP_NUM_THREADS=1 MKL_NUM_THREADS=1
PY=~/.cache/psda-venv/bin/python
FIX='"psda_env_size": 3000, "mlp_width": 256, "mlp_depth": 3, "mlp_dropout": 0.0, "psda_refresh_steps": 100'
C="--dataset RotatedFashionMNISTFlat --task domain_adaptation --uda_holdout_fraction 0.2 --test_envs 0 --skip_model_save"
/usr/bin/time -v nice -n 5 $PY -m psda.domainbed $C --algorithm ERM --steps 3001 --checkpoint_freq 300 --hparams "{$FIX}" --output_dir pilot/erm_default > pilot/erm_default.log 2>&1
/usr/bin/time -v nice -n 5 $PY -m psda.domainbed $C --algorithm ERM --steps 3001 --checkpoint_freq 300 --hparams "{$FIX, \"batch_size\": 6}" --output_dir pilot/erm_bs6 > pilot/erm_bs6.log 2>&1
/usr/bin/time -v nice -n 5 $PY -m psda.domainbed $C --algorithm UDA_MMD --sampler double-paired --steps 501 --checkpoint_freq 100 --hparams "{$FIX, \"batch_size\": 6}" --output_dir pilot/mmd_dp_bs6 > pilot/mmd_dp_bs6.log 2>&1
/usr/bin/time -v nice -n 5 $PY -m psda.domainbed $C --algorithm UDA_MMD --sampler uniform --steps 501 --checkpoint_freq 100 --hparams "{$FIX, \"batch_size\": 6}" --output_dir pilot/mmd_u_bs6 > pilot/mmd_u_bs6.log 2>&1
echo PILOT DONE
