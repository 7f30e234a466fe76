#!/usr/bin/env bash
# ms per training iteration of nnUNetTrainerAugmentd against a compute-only trainer (one fixed batch kept on the
# device, no data loading), on the GPU if there is one (else the CPU).
#
#   scripts/gpu-trainer-check.sh [--iterations N] [--warmup W] [--device cuda|cpu] [--tiny]
#                                [--dataset ID --configuration C]   (default: the synthetic Dataset987)
#
# Environment: AUGMENTD_BIN (default build/server/augmentd), AUGMENTD_DELIVERY (auto|inline|host_shm|cuda_ipc),
# AUGMENTD_ADDRESS (use a running server instead of a private local one), nnUNet_* for --dataset.
# The synthetic dataset is built once under $TRAINER_CHECK_DATA (default build/trainer-check-data). Prints a table and one JSON line.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
export AUGMENTD_BIN="${AUGMENTD_BIN:-$root/build/server/augmentd}"
export PYTHONPATH="$root/client/python/src${PYTHONPATH:+:$PYTHONPATH}"
export nnUNet_compile="${nnUNet_compile:-false}"
synthetic=(--synthetic "${TRAINER_CHECK_DATA:-$root/build/trainer-check-data}")
for arg in "$@"; do [[ "$arg" == --dataset ]] && synthetic=(); done
exec "$root/.venv/bin/python" -m augmentd.nnunet.timing "${synthetic[@]}" "$@"
