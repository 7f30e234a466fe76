#!/usr/bin/env bash
# One-step, idempotent setup of everything augmentd needs to build and test:
#   1. Debian packages (gRPC, protobuf, abseil, GoogleTest, Google Benchmark, cpp-httplib, ...) listed in
#      scripts/apt-packages.txt;
#   2. the virtual environment .venv with the pinned Python packages of requirements.txt
#      (torch provides the LibTorch we link; nnunetv2 + batchgeneratorsv2 are the reference).
# A second run with nothing to do finishes in seconds.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
start=$(date +%s)

# The package list lives in scripts/apt-packages.txt, shared with the container builder (docker/Dockerfile).
[ -f scripts/apt-packages.txt ] || { echo "[setup] scripts/apt-packages.txt is missing" >&2; exit 1; }
mapfile -t apt_packages < <(sed -e 's/#.*//' scripts/apt-packages.txt | tr -s ' \t' '\n' | sed '/^$/d')
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "[setup] installing Debian packages: ${missing[*]}"
  sudo_cmd=(); [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

python_bin="${AUGMENTD_PYTHON:-python3}"
venv="$root/.venv"
stamp="$venv/.augmentd-requirements.sha256"
want="$(sha256sum requirements.txt | cut -d' ' -f1)"
if [ ! -x "$venv/bin/python" ]; then
  echo "[setup] creating $venv"
  "$python_bin" -m venv "$venv"
fi
# The pinned packages fill about 6 GB once installed (torch and its CUDA libraries most of it), and pip unpacks each
# wheel in the temporary folder first. A full disk otherwise shows up only as pip's "[Errno 28] No space left on device".
venv_need_gb=7
free_gb() { df -Pk "$1" 2>/dev/null | awk 'NR == 2 { printf "%.1f", $4 / 1048576 }'; }  # GiB; empty if df fails
disk_report() {
  echo "[setup]   free: $(free_gb "$venv") GiB where .venv lives ($venv), $(free_gb "${TMPDIR:-/tmp}") GiB in" \
       "${TMPDIR:-/tmp}; the pinned packages need about $venv_need_gb GiB" >&2
}
short_of_disk() {  # true if df answers for the venv's or the temporary folder's file system with less than the need
  local d f
  for d in "$venv" "${TMPDIR:-/tmp}"; do
    f=$(free_gb "$d")
    [ -n "$f" ] && awk -v f="$f" -v n="$venv_need_gb" 'BEGIN { exit !(f + 0 < n) }' && return 0
  done
  return 1
}
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "[setup] installing Python packages from requirements.txt (torch is large: a few minutes the first time)"
  if short_of_disk; then
    echo "[setup] warning: little free disk; the install below may fail" >&2
    disk_report
  fi
  if ! { "$venv/bin/python" -m pip install -q --upgrade pip && "$venv/bin/python" -m pip install -q -r requirements.txt; }; then
    echo "[setup] pip could not install requirements.txt (its message is above)" >&2
    disk_report
    exit 1
  fi
  echo "$want" > "$stamp"
fi
# Both batchgeneratorsv2 releases augmentd follows, side by side for tests/python/parity/test_spatial_bgv2_versions.py
# (same module name: each in its own folder, imported by its own interpreter). 0.3.6 is also the venv's own.
for v in 0.3.5 0.3.6; do
  if [ ! -f "$venv/bgv2/$v/batchgeneratorsv2-$v.dist-info/METADATA" ]; then
    echo "[setup] installing batchgeneratorsv2 $v into $venv/bgv2/$v"
    "$venv/bin/python" -m pip install -q --no-deps --target "$venv/bgv2/$v" "batchgeneratorsv2==$v"
  fi
done
# AugLab (GPL-3.0, a test reference only: tests/python/test_auglab_*_parity.py) with the kornia it imports (< 0.9).
if [ ! -d "$venv/auglab/auglab" ]; then
  echo "[setup] installing auglab into $venv/auglab"
  "$venv/bin/python" -m pip install -q --no-deps --target "$venv/auglab" auglab==20260109 kornia==0.8.1 kornia-rs==0.2.0
fi
echo "[setup] ready in $(( $(date +%s) - start )) s"
