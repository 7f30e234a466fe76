#!/usr/bin/env bash
# Entrypoint of the augmentd runtime image.
#
#   1. Collects flags: one file per flag in $AUGMENTD_FLAGS_DIR (default /etc/augmentd/flags.d; the file name is
#      the flag name, its content the value — this is how the Kubernetes ConfigMap is mounted), then the
#      container's arguments (which win, being last).
#   2. Checks what the chosen --device needs and says exactly what is wrong:
#        cpu      no GPU check at all;
#        cuda:N   GPU device nodes, the driver (nvidia-smi), driver >= 580 (CUDA 13.0), GPU N exists — or exit 78;
#        GPU-...  (a GPU UUID) the same, and that this GPU is visible;
#        auto     the same checks, but only warns (the server falls back to the CPU).
#   3. Checks the size of /dev/shm (host shared-memory delivery and PyTorch's IPC bookkeeping live there);
#      below $AUGMENTD_MIN_SHM_MB (default 1024) it exits 78 and says how to enlarge it; 0 disables the check.
#   4. execs /opt/augmentd/bin/augmentd with the flags (PID 1 becomes the server, so SIGTERM starts its drain).
#
# A first argument that does not start with '-' is run as a command instead (e.g. `augmentd-health`, `bash`).
# AUGMENTD_SKIP_CHECKS=1 skips steps 2 and 3.
set -euo pipefail

readonly EX_CONFIG=78
bin="${AUGMENTD_BIN:-/opt/augmentd/bin/augmentd}"
flags_dir="${AUGMENTD_FLAGS_DIR:-/etc/augmentd/flags.d}"
min_shm_mb="${AUGMENTD_MIN_SHM_MB:-1024}"
min_driver_major=580   # CUDA 13.0 needs an R580 driver or newer on Linux

log() { echo "[entrypoint] $*" >&2; }
fail() {
  log "ERROR: $1"
  shift
  for line in "$@"; do log "       $line"; done
  exit "$EX_CONFIG"
}

if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  exec "$@"
fi

args=()
if [ -d "$flags_dir" ]; then
  # ConfigMap volumes hold the keys as symlinks next to hidden ..data entries; the glob skips dot files.
  for f in "$flags_dir"/*; do
    [ -f "$f" ] || continue
    name="$(basename "$f")"
    value="$(<"$f")"
    value="${value%$'\n'}"
    if [ -z "$value" ]; then args+=("--$name"); else args+=("--$name=$value"); fi
  done
fi
args+=("$@")

# The effective value of a flag: the last --name=value or --name value wins.
flag_value() {
  local want="$1" value="" i
  for ((i = 0; i < ${#args[@]}; i++)); do
    case "${args[$i]}" in
      "--$want="*) value="${args[$i]#*=}" ;;
      "--$want") if ((i + 1 < ${#args[@]})); then value="${args[$((i + 1))]}"; fi ;;
    esac
  done
  printf '%s' "$value"
}

for a in "${args[@]}"; do
  case "$a" in --help | -h | --helpfull | --version) exec "$bin" "${args[@]}" ;; esac
done

check_gpu() {  # $1: cuda index or "auto"; prints problems, returns 1 if any
  local want="$1" problems=()
  if ! compgen -G '/dev/nvidia[0-9]*' >/dev/null || [ ! -e /dev/nvidiactl ]; then
    problems+=("no NVIDIA GPU device nodes (/dev/nvidia0.., /dev/nvidiactl) in this container."
      "Docker: run with --gpus all (or --gpus device=N) and the NVIDIA Container Toolkit installed."
      "Kubernetes: request nvidia.com/gpu (device plugin) or a DRA ResourceClaim for this container.")
  elif [ ! -e /dev/nvidia-uvm ]; then
    problems+=("/dev/nvidia-uvm is missing: the nvidia-uvm kernel module is not loaded on the host"
      "or not passed to the container (NVIDIA Container Toolkit/CDI normally does both).")
  fi
  if ((${#problems[@]} == 0)); then
    if ! command -v nvidia-smi >/dev/null; then
      log "warning: nvidia-smi not in the container (NVIDIA_DRIVER_CAPABILITIES lacks 'utility'?);" \
        "device nodes are present, driver version not checked"
    else
      local out
      if ! out="$(nvidia-smi --query-gpu=index,driver_version,name --format=csv,noheader 2>&1)"; then
        problems+=("nvidia-smi failed: ${out//$'\n'/ }" "The host driver and the container's libraries do not match,"
          "or the driver is not loaded. Check \`nvidia-smi\` on the host.")
      else
        local driver count
        driver="$(printf '%s\n' "$out" | head -n1 | cut -d, -f2 | tr -d ' ')"
        count="$(printf '%s\n' "$out" | grep -c .)"
        log "GPUs visible: $count, driver $driver"
        if [ "${driver%%.*}" -lt "$min_driver_major" ] 2>/dev/null; then
          problems+=("NVIDIA driver $driver is too old: this image is built with CUDA 13.0, which needs driver"
            ">= ${min_driver_major}. Upgrade the host driver or use --device=cpu.")
        fi
        if [[ "$want" == GPU-* || "$want" == MIG-* ]]; then
          if ! nvidia-smi -L 2>/dev/null | grep -qF "UUID: $want)"; then
            problems+=("--device=$want but no GPU with that UUID is visible in this container:"
              "$(nvidia-smi -L 2>&1 | tr '\n' ';')")
          fi
        elif [ "$want" != auto ] && [ "$want" -ge "$count" ] 2>/dev/null; then
          problems+=("--device=cuda:$want but only $count GPU(s) are visible in this container (indices start at 0"
            "and are per container: with one GPU granted, use cuda:0).")
        fi
      fi
    fi
  fi
  if ((${#problems[@]})); then
    printf '%s\n' "${problems[@]}"
    return 1
  fi
}

if [ "${AUGMENTD_SKIP_CHECKS:-0}" != 1 ]; then
  device="$(flag_value device)"
  device="${device:-auto}"
  case "$device" in
    cpu) log "device cpu: GPU checks skipped" ;;
    auto)
      if ! report="$(check_gpu auto)"; then
        log "warning: --device=auto and no usable GPU; the server will run on the CPU:"
        while IFS= read -r line; do log "  $line"; done <<<"$report"
      fi
      ;;
    cuda | cuda:*)
      index="${device#cuda}"
      index="${index#:}"
      index="${index:-0}"
      if ! report="$(check_gpu "$index")"; then
        mapfile -t lines <<<"$report"
        fail "--device=$device but the GPU is not usable:" "${lines[@]}" "(use --device=cpu to run without a GPU)"
      fi
      ;;
    GPU-* | MIG-*)
      if ! report="$(check_gpu "$device")"; then
        mapfile -t lines <<<"$report"
        fail "--device=$device but the GPU is not usable:" "${lines[@]}" "(use --device=cpu to run without a GPU)"
      fi
      ;;
    *) log "warning: unrecognised --device=$device; leaving it to augmentd to reject" ;;
  esac

  if [ "$min_shm_mb" -gt 0 ] 2>/dev/null; then
    if [ ! -d /dev/shm ]; then
      fail "/dev/shm does not exist." "Mount a tmpfs there (Kubernetes: an emptyDir with medium: Memory)."
    fi
    shm_kb="$(df -Pk /dev/shm | awk 'NR == 2 { print $2 }')"
    shm_mb=$((shm_kb / 1024))
    if [ "$shm_mb" -lt "$min_shm_mb" ]; then
      fail "/dev/shm is ${shm_mb} MiB; augmentd needs at least ${min_shm_mb} MiB (shared-memory batch delivery)." \
        "Docker: docker run --shm-size=2g ... (the default is 64 MiB)." \
        "Kubernetes: mount an emptyDir {medium: Memory, sizeLimit: 2Gi} at /dev/shm." \
        "Or set AUGMENTD_MIN_SHM_MB to a smaller value (0 disables this check)."
    fi
    log "/dev/shm: ${shm_mb} MiB"
  fi
fi

log "exec $bin ${args[*]}"
exec "$bin" "${args[@]}"
