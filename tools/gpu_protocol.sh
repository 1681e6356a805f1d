#!/usr/bin/env bash
# The evidence protocol at full size on one CUDA GPU, in one call (issue 27, item 7):
# RotatedFashionMNIST with DomainBed's MNIST_CNN, all six test environments, 3,000 steps
# (the paper's), rows ERM, DANN, UDA_MMD and UDA_CORAL x {uniform, Paired, Double-paired},
# draws 1-3 per (test env, trial), trials 0-4, as many as fit a time budget.
#
# Usage (on the device machine, from the repository root; the bundle from
# tools/device_bundle.py travels as the call's one carried folder):
#   bash tools/gpu_protocol.sh [BUNDLE] [fashion_protocol.py options that override the defaults]
#
# Steps: check the bundle's SHA256SUMS and Python version; pip-install its wheels (psda,
# wilds, pytz) into a private target dir, with the bundle's DomainBed copy after it on
# PYTHONPATH (psda then comes from the wheel, not from the source tree); check CUDA; start
# $PSDA_GPU_WORKERS processes of `tools/fashion_protocol.py run --queue --deadline` that
# take jobs in the order (trial, test env, draw, row) from one shared queue and start a job
# only while it should end before the deadline; `analyze`; copy the results to $OUT.
#
# Sizing: the deadline is the script's start + PSDA_GPU_BUDGET_S (default 420 s); a worker
# starts a job only while now + 1.25 x the longest job so far ends before it, and every
# worker is killed at the deadline + 60 s; every 30 s the results so far are copied to
# $OUT. The order keeps a stopped run to complete (test env, trial) units, and analyze
# uses only those: the run holds as many trials (and test envs of the last trial) as the
# budget buys, with 3 draws each. Whole call: about budget + 1.5 min.
#
# Environment: OUT (results; the device sets it, default results/gpu), PSDA_GPU_PYTHON
# (default python3, the device's torch Python), PSDA_GPU_WORKERS (default 12),
# PSDA_GPU_BUDGET_S, PSDA_GPU_ALLOW_CPU=1 (run on the CPU when torch sees no GPU: the
# CPU rehearsal only). Results in $OUT (at most 8 files come back from a device call):
# tables.md, selected.jsonl, records.jsonl, accuracy_strip.png, jobs.tar.gz (every job's
# results.jsonl and out.txt, the workers' logs), device.txt, run.log.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
bundle="${1:-device}"
[ "$#" -gt 0 ] && shift
out="${OUT:-$root/results/gpu}"
py="${PSDA_GPU_PYTHON:-python3}"
workers="${PSDA_GPU_WORKERS:-12}"
budget="${PSDA_GPU_BUDGET_S:-420}"
t0=$(date +%s)
say() { echo "gpu_protocol: [$(( $(date +%s) - t0 )) s] $*"; }
die() { echo "gpu_protocol: $*"; exit 2; }

# snapshot copies the records and the jobs' directories so far to $OUT (through a
# temporary file in the run directory: $OUT holds only the files that come back).
snapshot() {
    cat "$run_dir"/records-shard*.jsonl > "$run_dir/.records.tmp" 2>/dev/null && cp "$run_dir/.records.tmp" "$out/records.jsonl" || true
    (cd "$run_dir" && tar czf .jobs.tmp --exclude='claims-*' --exclude='*.pkl' --exclude='.*.tmp' . 2>/dev/null) &&
        cp "$run_dir/.jobs.tmp" "$out/jobs.tar.gz" || true
}

main() {  # (not indented: it holds a here-document)
[ -f "$bundle/SHA256SUMS" ] || die "$bundle/SHA256SUMS not found: make the bundle with tools/device_bundle.py and carry it (run(..., carry=[\"$bundle\"]))"
bundle="$(cd "$bundle" && pwd)"
(cd "$bundle" && sha256sum -c --quiet SHA256SUMS) || die "the bundle $bundle does not match its SHA256SUMS: remake it with tools/device_bundle.py"
want="$(cat "$bundle/PYTHON_VERSION")"
have="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
[ "$want" = "$have" ] || die "the bundle is for CPython $want but $py is $have: remake it with tools/device_bundle.py --python-version $have"

site="$(mktemp -d)/site"
"$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" "$bundle"/wheels/*.whl
export PYTHONPATH="$site:$bundle/DomainBed" PYTHONUNBUFFERED=1
"$py" - "$site" "$bundle" <<'EOF' | tee "$out/device.txt"
import json, os, platform, sys
import torch, psda, domainbed
site, bundle = sys.argv[1], sys.argv[2]
assert psda.__file__.startswith(site), "psda comes from %s, not the bundle's wheel" % psda.__file__
assert domainbed.__file__.startswith(bundle), "domainbed comes from %s, not the bundle" % domainbed.__file__
m = json.load(open(os.path.join(bundle, "MANIFEST.json")))
print("bundle: psda commit %s%s, %s" % (m["psda_commit"], " (tree modified)" if m["psda_tree_dirty"] else "",
                                       m["psda_wheel"]))
print("python %s, torch %s (CUDA %s), psda from %s, %d cores" % (platform.python_version(), torch.__version__,
      torch.version.cuda, os.path.dirname(psda.__file__), os.cpu_count()))
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print("GPU: %s, %.0f GiB, %d SMs" % (p.name, p.total_memory / 2 ** 30, p.multi_processor_count))
else:
    print("GPU: none (torch.cuda.is_available() is False)")
EOF
if ! grep -q "^GPU: none" "$out/device.txt"; then
    nvidia-smi -L >> "$out/device.txt" 2>&1 || true
elif [ "${PSDA_GPU_ALLOW_CPU:-0}" != 1 ]; then
    die "torch sees no CUDA device; this is the GPU protocol (set PSDA_GPU_ALLOW_CPU=1 for the CPU rehearsal)"
fi
say "installed; $(grep '^GPU' "$out/device.txt")"

run_dir="$(mktemp -d)/fashion-gpu"
mkdir -p "$run_dir"
proto=(--dataset RotatedFashionMNIST --data_dir "$bundle/fashion-mnist" --steps 3000 --checkpoint_freq 300
       --test_envs 0 1 2 3 4 5 --n_hparams_from 1 --n_hparams 4 --n_trials 5
       --fixed '{"psda_env_size": 1000, "psda_refresh_steps": 500}' "$@")
# The budget counts from the script's start (t0), install included, so that the whole
# call's length does not depend on how long the install took.
deadline=$(( t0 + budget ))
hard=$(( deadline + 60 - $(date +%s) ))
token="q$(date +%s)"
say "$workers workers, deadline in $(( deadline - $(date +%s) )) s; jobs in $run_dir"
# Every 30 s what has finished goes to $OUT, so that a call cut short (the device's limit
# can be under timeout_s) still brings back the jobs done so far.
( while sleep 30; do snapshot; done ) &
snapper=$!
declare -A who  # worker pid -> worker number
for i in $(seq 0 $(( workers - 1 ))); do
    timeout -k 10 "$hard" "$py" "$root/tools/fashion_protocol.py" run --queue "$token" \
        --deadline "$deadline" --shard "$i/$workers" --output_dir "$run_dir" "${proto[@]}" \
        > "$run_dir/worker-$i.log" 2>&1 &
    who[$!]=$i
done
# A worker that fails (not the hard time limit, 124) stops the others at once, so a broken
# run ends early and leaves device time for a corrected one.
failed=0
while [ "${#who[@]}" -gt 0 ]; do
    rc=0 pid=""
    wait -n -p pid "${!who[@]}" || rc=$?
    [ -n "${pid:-}" ] || break
    i=${who[$pid]}
    unset "who[$pid]"
    [ "$rc" = 0 ] && continue
    say "worker $i exited $rc$([ "$rc" = 124 ] && echo ' (killed at the hard limit: its job is dropped)'); its log ends:"
    tail -n 25 "$run_dir/worker-$i.log"
    if [ "$rc" != 124 ] && [ "$failed" = 0 ] && [ "${#who[@]}" -gt 0 ]; then
        say "stopping the other workers"
        kill "${!who[@]}" 2>/dev/null || true
    fi
    failed=1
done
kill "$snapper" 2>/dev/null || true
snapshot
say "workers done: $(ls "$run_dir"/*/done 2>/dev/null | wc -l) jobs finished"
grep -h "stops at the deadline" "$run_dir"/worker-*.log || true

"$py" "$root/tools/fashion_protocol.py" analyze --output_dir "$run_dir" "${proto[@]}" > "$run_dir/analyze.log" 2>&1 ||
    { failed=1; say "analyze failed:"; tail -n 30 "$run_dir/analyze.log"; }
for f in tables.md selected.jsonl accuracy_strip.png; do
    if [ -f "$run_dir/$f" ]; then cp "$run_dir/$f" "$out/"; fi
done
snapshot
say "results in $out: $(cd "$out" && ls | tr '\n' ' ')"
if [ -f "$out/tables.md" ]; then sed -n '1,/^## Paired/p' "$out/tables.md"; fi
return "$failed"
}

mkdir -p "$out"
main "$@" 2>&1 | tee "$out/run.log"
exit "${PIPESTATUS[0]}"
