#!/usr/bin/env bash
# One-step, idempotent setup of everything augmentd needs to build and test:
#   1. Debian packages (gRPC, protobuf, abseil, GoogleTest, Google Benchmark, cpp-httplib, ...);
#   2. the virtual environment .venv with the pinned Python packages of requirements.txt
#      (torch provides the LibTorch we link; nnunetv2 + batchgeneratorsv2 are the reference).
# A second run with nothing to do finishes in seconds.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
start=$(date +%s)

apt_packages=(
  build-essential cmake ninja-build pkg-config git
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev libcpp-httplib-dev nlohmann-json3-dev
  python3-venv
)
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
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "[setup] installing Python packages from requirements.txt (torch is large: a few minutes the first time)"
  "$venv/bin/python" -m pip install -q --upgrade pip
  "$venv/bin/python" -m pip install -q -r requirements.txt
  echo "$want" > "$stamp"
fi
echo "[setup] ready in $(( $(date +%s) - start )) s"
