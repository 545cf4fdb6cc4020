#!/usr/bin/env bash
# The GPU check (issue 45), in one call on a GPU host with no network, from the working
# tree, with only the wheels and data that bench/gpu_bundle.sh put in .gpu/ beside it:
#   1. `curator pipeline` on CIFAR-10 train (+ its test split for leaks) with CIFAR-10N's
#      labels: each step's seconds, and how busy the GPU was in each (nvidia-smi, 200 ms);
#   2. extraction alone of a folder of 256–500 px JPEGs (bench/jpeg_folder.py), decoded on
#      the GPU: ingest and extract img/s;
#   3. the data path alone (bench/datapath.py) with the GPU as the device;
#   4. one ResNet-18 training (`curator retrain`, full subset): img/s per epoch.
# Every figure goes to $OUT/summary.txt as it is made, so a run stopped at its time limit
# still leaves the ones before. Stages that would not end before DEADLINE are skipped.
#
#   OUT=/tmp/gpu-out bash bench/gpu_check.sh                       # on the GPU host
#   OUT=/tmp/gpu-out SCALE=mini DEVICE=cpu bash bench/gpu_check.sh # dry run here (CPU, small)
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:?set OUT to the folder the figures go to}
mkdir -p "$OUT"
PY=${PY:-python3}
SCALE=${SCALE:-full}       # full: CIFAR-10's 50k train + 10k test; mini: the 3k mini set
DEVICE=${DEVICE:-cuda}
DEADLINE=${DEADLINE:-440}  # seconds from the start
BUNDLE=${BUNDLE:-.gpu}
DATA=${DATA:-$BUNDLE/data}
[ -d "$DATA" ] || DATA=../shared/data
if [ "$SCALE" = mini ]; then PHOTOS=${PHOTOS:-600}; EPOCHS=${EPOCHS:-1}; else PHOTOS=${PHOTOS:-20000}; EPOCHS=${EPOCHS:-5}; fi
WORK=${WORK:-/tmp/gpu-check}
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
left() { echo $(( DEADLINE - $(el) )); }
log() { echo "[$(el)s] $*" | tee -a "$OUT/summary.txt"; }

log "start $(date -u +%FT%TZ) scale=$SCALE device=$DEVICE commit=$(git rev-parse --short HEAD 2>/dev/null || echo '?')"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee -a "$OUT/summary.txt"
log "cores: $(nproc)"
if compgen -G "$BUNDLE/whl/*.whl" >/dev/null; then
  $PY -m pip install -q --no-index --no-deps --no-compile --target "$WORK/site" "$BUNDLE"/whl/*.whl >"$OUT/pip.log" 2>&1 \
    || log "installing the wheels failed: $(tail -1 "$OUT/pip.log")"
  export PYTHONPATH="$WORK/site"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
# bench/datapath.py reads the CIFAR archive through the shared-data root: the bundle's copy
export CURATOR_SHARED_DATA=${CURATOR_SHARED_DATA:-$(cd "$DATA" && pwd)}
CUR="$PY -m worker.cli"
$PY -c "import torch, torchvision, openTSNE, sklearn; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), 'torchvision', torchvision.__version__, 'openTSNE', openTSNE.__version__)" 2>&1 | tee -a "$OUT/summary.txt"

rm -rf "$WORK/data" "$WORK/runs"; mkdir -p "$WORK/data" "$WORK/runs"
if [ "$SCALE" = mini ]; then
  tar xzf "$DATA/cifar10-jpeg-mini.tar.gz" -C "$WORK/data" && D=$WORK/data/cifar10-mini
else
  tar xzf "$DATA/cifar10-jpeg.tar.gz" -C "$WORK/data" && D=$WORK/data/cifar10
fi
# the CIFAR-10N rows of the files there (all of them at full scale)
$PY - "$DATA/cifar10n-train-labels.csv" "$D" "$WORK/labels.csv" <<'PY'
import csv, os, sys
rows = list(csv.DictReader(open(sys.argv[1])))
with open(sys.argv[3], "w", newline="") as fh:
    w = csv.DictWriter(fh, rows[0].keys()); w.writeheader()
    w.writerows(r for r in rows if os.path.exists(os.path.join(sys.argv[2], r["path"])))
PY
log "data: $(find "$D" -name '*.jpg' | wc -l) CIFAR images"

SMI=
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader,nounits -lms 200 >"$OUT/gpu.csv" 2>/dev/null &
  SMI=$!
fi
# seconds and GPU busy share of each step of a run, from run.json and gpu.csv
steps() {
  $PY - "$1/run.json" "$OUT/gpu.csv" "$2" <<'PY' 2>&1 | tee -a "$OUT/summary.txt"
import csv, datetime as dt, json, sys
m = json.load(open(sys.argv[1])); start = float(sys.argv[3])
util = []
try:
    for r in csv.reader(open(sys.argv[2])):
        t = dt.datetime.strptime(r[0].strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp()
        util.append((t, float(r[1])))
except (OSError, ValueError, IndexError):
    pass
prev = start
for name, st in sorted(m["steps"].items(), key=lambda kv: kv[1].get("at", "")):
    if "at" not in st:
        continue
    at = dt.datetime.fromisoformat(st["at"]).timestamp()
    busy = [u for t, u in util if prev <= t <= at]
    share = f"GPU busy {sum(busy) / len(busy):.0f}% ({len(busy)} samples)" if busy else "no GPU samples"
    n = m.get("n_samples", 0)
    rate = f", {n / (at - prev):.0f} img/s" if name in ("ingest", "extract") and at > prev else ""
    print(f"  step {name:9s} {at - prev:7.1f} s{rate}; {share}")
    prev = at
print(f"  total {prev - start:.1f} s for {m.get('n_samples')} samples")
PY
}

log "stage 1: pipeline on CIFAR-10 train + test, $(left) s left"
R=$WORK/runs/cifar; s=$(date +%s.%N)
timeout $(( $(left) > 60 ? $(left) - 30 : 30 )) $CUR pipeline --dataset "folder:$D" --split train \
  --labels "$WORK/labels.csv" --label-column aggre_label --true-label-column clean_label \
  --device "$DEVICE" --out "$R" >"$OUT/pipeline.log" 2>&1
log "stage 1 rc=$?"
steps "$R" "$s"

if [ "$(left)" -gt 60 ]; then
  log "stage 2: $PHOTOS photograph-size JPEGs, ingest + extract, $(left) s left"
  $PY -m bench.jpeg_folder --n "$PHOTOS" --out "$WORK/photos" --source "$D" >"$OUT/photos-gen.log" 2>&1
  s=$(date +%s.%N)
  timeout $(( $(left) - 20 )) $CUR extract --dataset "folder:$WORK/photos" --device "$DEVICE" \
    --out "$WORK/runs/photos" >"$OUT/photos.log" 2>&1
  log "stage 2 rc=$?"
  steps "$WORK/runs/photos" "$s"
fi

if [ "$(left)" -gt 60 ]; then
  log "stage 3: the data path alone, $(left) s left"
  timeout $(( $(left) - 20 )) $PY -m bench.datapath --device "$DEVICE" --photos "$PHOTOS" \
    --cifar $([ "$SCALE" = mini ] && echo 2000 || echo 20000) >"$OUT/datapath.log" 2>&1
  log "stage 3 rc=$?"
  grep -v Warning "$OUT/datapath.log" | tail -20 | tee -a "$OUT/summary.txt"
fi

if [ "$(left)" -gt 40 ] && [ -f "$R/embedding.npy" ]; then
  log "stage 4: one ResNet-18 training, $EPOCHS epochs, $(left) s left"
  timeout $(( $(left) - 10 )) $CUR retrain "$R" --subset full --epochs "$EPOCHS" \
    --batch-size 512 --device "$DEVICE" --name gpu-check >"$OUT/train.log" 2>&1
  log "stage 4 rc=$?"
  tail -4 "$OUT/train.log" | tee -a "$OUT/summary.txt"
  for f in "$R"/train/*/metrics.jsonl; do [ -f "$f" ] && tail -2 "$f" | cut -c1-400 | tee -a "$OUT/summary.txt"; done
fi
[ -n "$SMI" ] && kill "$SMI" 2>/dev/null
log "end"
