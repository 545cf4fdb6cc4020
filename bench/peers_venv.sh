#!/usr/bin/env bash
# Bench-only virtualenv for the peers of the duplicate / leak / outlier benchmark:
# cleanlab Datalab (`near_duplicate`, `outlier`) and fastdup (its bundled ONNX model, offline).
# FiftyOne is not installed: it cannot start offline, so bench/peer_findings.py applies the
# FiftyOne Brain rules by hand with numpy. None of this is a runtime dependency of the project.
#
#   bash bench/peers_venv.sh            # creates .bench-venv/ once; later runs only print versions
#   PYTHON=python3.12 bash bench/peers_venv.sh
#   BENCH_VENV=/tmp/bv bash bench/peers_venv.sh
#
# Idempotent: the stamp file .bench-venv/.installed holds a hash of the requirements below and of
# the interpreter; the venv is rebuilt from scratch only when either changes.
#
# Why the one constraint (`pyarrow<26`):
#   fastdup 2.54 requires numpy<2 (and pins scikit-learn==1.5.0, Pillow==10.3.0, joblib~=1.2.0),
#   so pip resolves numpy 1.26. `cleanlab[datalab]` pulls `datasets`, which imports pyarrow, and
#   pyarrow 26 refuses to import with numpy<2 ("pyarrow requires NumPy 2.0 or newer") without
#   declaring that in its metadata, so pip would install it and `Datalab` would then fail with
#   "Datalab is not available due to missing dependencies". pyarrow 25.x imports with numpy 1.26
#   and satisfies every `datasets` release (5.2 needs pyarrow>=24). Nothing else is pinned:
#   fastdup's own pins decide scikit-learn / Pillow / joblib.
# fastdup ships wheels for CPython 3.9-3.12 only (Requires-Python >=3.9,<3.13).
set -euo pipefail

cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${BENCH_VENV:-.bench-venv}
STAMP="$VENV/.installed"

REQUIREMENTS=(
  "cleanlab[datalab]"
  "fastdup"
  "pyarrow<26"
  "numpy"
  "scikit-learn"
  "pandas"
  "pillow"
)

py_ver=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
case "$py_ver" in
  3.9|3.10|3.11|3.12) ;;
  *) echo "peers_venv: $PYTHON is Python $py_ver; fastdup has wheels for 3.9-3.12 only." \
          "Set PYTHON=python3.11 (or 3.10/3.12)." >&2; exit 1 ;;
esac

want=$(printf '%s\n' "$("$PYTHON" -c 'import sys; print(sys.version)')" "${REQUIREMENTS[@]}" \
       | sha256sum | cut -d' ' -f1)

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] && [ -x "$VENV/bin/python" ]; then
  echo "peers_venv: $VENV is up to date"
else
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip || echo "peers_venv: pip upgrade skipped"
  "$VENV/bin/python" -m pip install -q "${REQUIREMENTS[@]}"
  echo "$want" > "$STAMP"
fi

# Smoke check: every peer imports (fastdup with its telemetry off; this machine is offline).
SENTRY_OPT_OUT=1 "$VENV/bin/python" - <<'EOF'
import importlib.metadata as md
import platform

from cleanlab import Datalab  # noqa: F401  (raises ImportError if `datasets`/pyarrow is broken)
import fastdup  # noqa: F401

print(f"python {platform.python_version()}")
for dist in ("cleanlab", "datasets", "pyarrow", "fastdup", "numpy", "scikit-learn", "scipy",
             "pandas", "pillow", "opencv-python-headless"):
    try:
        print(f"{dist} {md.version(dist)}")
    except md.PackageNotFoundError:
        print(f"{dist} (not installed)")
EOF
