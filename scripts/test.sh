#!/usr/bin/env bash
# Runs every test of augmentd: installs what is missing (scripts/setup.sh), builds, then
#   1. ctest  — C++ unit and integration tests (GPU-labelled tests are skipped when no GPU is present);
#   2. pytest — Python tests: the real server through the generated stubs, parity with batchgeneratorsv2, the
#      transforms' own parity tests (augment/transforms/<name>/*_test.py) and the end-to-end harness's table
#      arithmetic (bench/e2e).
# Exits non-zero if anything fails; both runners print their summary lines.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 1
start=$(date +%s)
bash scripts/setup.sh || exit 1
bash scripts/build.sh || exit 1
build="${AUGMENTD_BUILD_DIR:-build}"
export AUGMENTD_BUILD_DIR="$root/$build" AUGMENTD_BIN="$root/$build/server/augmentd"

label_args=()
if ! nvidia-smi -L >/dev/null 2>&1; then label_args=(-LE gpu); echo "[test] no GPU: skipping tests labelled gpu"; fi
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" --timeout 600 "${label_args[@]}"
ctest_rc=$?

# The tests' tmp_path folders (volumes, datasets, servers' files) are kept only for failed tests: pytest's default keeps
# every test's for the last three runs (≈ 0.8 GB a run, 28 MB with this), and CI's disk is shared.
.venv/bin/python -m pytest tests/python augment/transforms bench/e2e -q -p no:cacheprovider \
  -o tmp_path_retention_policy=failed
pytest_rc=$?

echo "[test] ctest exit $ctest_rc, pytest exit $pytest_rc, $(( $(date +%s) - start )) s in all"
[ $ctest_rc -eq 0 ] && [ $pytest_rc -eq 0 ]
