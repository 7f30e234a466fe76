#!/usr/bin/env bash
# scripts/daext-kit.sh — on the development machine, once: fills .whl/auglab/ (git-ignored through .whl/) with what
# bench/daext_bench.py needs on the GPU machine beyond nnU-Net's wheels in .whl/ and the image's torch:
#   - AugLab's parameter JSONs, transform_params_gpu.json and transform_params.json, from the AugLab mirror at the
#     commit of auglab 20260109 (GPL-3.0: never committed here, only carried; auglab's wheel ships no JSON);
#   - cp312 wheels: auglab 20260109 and kornia (AugTransformsGPU), torchio and its pure dependencies
#     (nnUNetTrainerDAExt's CPU transforms), torchvision 0.26.0 (auglab's GPU contrast module imports it; installed
#     on the GPU machine only if the image lacks it). ~16 MiB.
# and build-sitk/ (git-ignored through /build*/) with SimpleITK's wheel (~50 MiB): TorchIO's RandomAffine,
# RandomElasticDeformation and RandomAnisotropy resample with SimpleITK, the GPU image has none, and it does not fit
# in one carry beside .device-kit and .whl, so it travels in a call of its own (scripts/gpu-daext.sh, stage sitk).
#   scripts/daext-kit.sh [AUGLAB_REPO (default /work/.mirror/neuropoly+AugLab/repo)] [COMMIT (default ca2099a)]
# Then the two device calls of scripts/gpu-daext.sh (its header).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=${1:-/work/.mirror/neuropoly+AugLab/repo}
commit=${2:-ca2099a}
dst=.whl/auglab
mkdir -p "$dst"
for f in transform_params_gpu.json transform_params.json; do
  git -C "$repo" show "$commit:auglab/configs/$f" >"$dst/$f"
done
pip=${PIP:-.venv/bin/pip}
"$pip" download -q --no-deps -d "$dst" --python-version 3.12 --only-binary=:all: \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  auglab==20260109 kornia==0.8.1 kornia_rs==0.2.0 torchvision==0.26.0 torchio==1.2.1 deprecated==1.3.1 \
  wrapt==2.5.2 humanize==4.17.0 einops==0.8.2 jaxtyping==0.3.11 wadler_lindig==0.1.8 rich==15.0.0 \
  markdown-it-py==4.3.0 mdurl==0.1.2 pygments==2.21.0 typer==0.29.2 click==8.5.1 shellingham==1.5.4
mkdir -p build-sitk
"$pip" download -q --no-deps -d build-sitk --python-version 3.12 --only-binary=:all: \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 simpleitk==2.5.7
ls -la "$dst" build-sitk
du -sh "$dst" build-sitk
