#!/usr/bin/env bash
# The main job: set up, build, then run augmentd end to end (client/python/src/augmentd/demo.py):
# a synthetic nnU-Net dataset preprocessed by the real nnUNetv2_plan_and_preprocess (cached in
# build/demo-data), augmentd on a unix socket + a free TCP port (device auto), a Python client pulling
# augmented dataset-mode batches with the nnunet_default preset, a short result table, a clean shutdown.
# Exits non-zero on any failure. Extra arguments go to the demo (e.g. --batches 50 --batch-size 4).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup.sh
bash scripts/build.sh
build="${AUGMENTD_BUILD_DIR:-build}"
case "$build" in /*) ;; *) build="$root/$build" ;; esac
export PYTHONPATH="$root/client/python/src${PYTHONPATH:+:$PYTHONPATH}"
exec "$root/.venv/bin/python" -m augmentd.demo --augmentd "$build/server/augmentd" --data "$build/demo-data" "$@"
