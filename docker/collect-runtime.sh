#!/usr/bin/env bash
# Runs in the builder stage: gathers exactly what the augmentd binary needs at run time into a staging tree
# that the runtime stage copies with one COPY.
#
#   $1/opt/augmentd/bin/            augmentd, augmentd-health, entrypoint.sh
#   $1/opt/augmentd/python/...      the torch wheel's LibTorch (torch/lib) and the NVIDIA wheels' CUDA libraries
#                                   (nvidia/*/lib), with the wheel layout kept so their $ORIGIN RPATHs still work;
#                                   whole directories, because cuDNN and NVRTC dlopen siblings that ldd cannot see
#   $1/etc/ld.so.conf.d/augmentd.conf   those directories, for ldconfig in the runtime stage
#   $2 (a file)                     the Debian packages that own every other shared library augmentd links
#                                   (gRPC, protobuf, abseil, ...), found with ldd + dpkg -S: the runtime stage
#                                   installs exactly these, pinned as name=version to what the builder
#                                   compiled against.
# Usage: docker/collect-runtime.sh STAGING_DIR PACKAGES_FILE  (from the repository root, after the build)
set -euo pipefail
staging="$1"
packages_file="$2"
build="${AUGMENTD_BUILD_DIR:-build}"
python=".venv/bin/python"
prefix=/opt/augmentd

mkdir -p "$staging$prefix/bin" "$staging/etc/ld.so.conf.d" "$(dirname "$packages_file")"
install -m 0755 "$build/server/augmentd" "$staging$prefix/bin/augmentd"
install -m 0755 "$build/augmentd-health" "$staging$prefix/bin/augmentd-health"
install -m 0755 docker/entrypoint.sh "$staging$prefix/bin/entrypoint.sh"

site="$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
lib_dirs=("$site/torch/lib")
for d in "$site"/nvidia/*/lib; do [ -d "$d" ] && lib_dirs+=("$d"); done

: >"$staging/etc/ld.so.conf.d/augmentd.conf"
for d in "${lib_dirs[@]}"; do
  rel="${d#"$site"/}"
  mkdir -p "$staging$prefix/python/$rel"
  # Shared objects only: no static archives, headers or the Python extension's libtorch_python.
  find "$d" -maxdepth 1 \( -type f -o -type l \) -name '*.so*' ! -name 'libtorch_python.so' \
    -exec cp -a {} "$staging$prefix/python/$rel/" \;
  echo "$prefix/python/$rel" >>"$staging/etc/ld.so.conf.d/augmentd.conf"
done

# Every library ldd resolves: the wheel directories above are staged already; another wheel's library is staged
# with its directory; a CUDA toolkit library without a wheel copy of the same soname is copied; everything else
# maps to the Debian package that owns it.
staged_sonames="$(find "$staging$prefix/python" -name '*.so*' -printf '%f\n' | sort -u)"
: >"$packages_file.tmp"
missing=0
for binary in "$staging$prefix/bin/augmentd" "$staging$prefix/bin/augmentd-health"; do
  while read -r soname path; do
    case "$soname" in linux-vdso.so.* | *ld-linux*.so.* | libcuda.so.* | libnvidia-ml.so.*) continue ;; esac
    if grep -qxF "$soname" <<<"$staged_sonames"; then continue; fi
    if [ -z "$path" ] || [ "$path" = "not" ]; then
      echo "[collect] $binary needs $soname, which is not found" >&2
      missing=1
      continue
    fi
    real="$(readlink -f "$path")"
    case "$real" in
      "$site"/*)  # another wheel's library (e.g. blosc2's): stage its directory with the wheel layout
        rel="$(dirname "${real#"$site"/}")"
        mkdir -p "$staging$prefix/python/$rel"
        find "$(dirname "$real")" -maxdepth 1 \( -type f -o -type l \) -name '*.so*' \
          -exec cp -a {} "$staging$prefix/python/$rel/" \;
        grep -qxF "$prefix/python/$rel" "$staging/etc/ld.so.conf.d/augmentd.conf" ||
          echo "$prefix/python/$rel" >>"$staging/etc/ld.so.conf.d/augmentd.conf"
        staged_sonames+=$'\n'"$soname"
        continue
        ;;
      /usr/local/cuda*)  # a CUDA toolkit library without a wheel copy: NVIDIA's apt repository is builder-only
        mkdir -p "$staging$prefix/lib"
        cp -a "$path" "$real" "$staging$prefix/lib/"
        grep -qxF "$prefix/lib" "$staging/etc/ld.so.conf.d/augmentd.conf" ||
          echo "$prefix/lib" >>"$staging/etc/ld.so.conf.d/augmentd.conf"
        staged_sonames+=$'\n'"$soname"
        continue
        ;;
    esac
    if ! pkg="$(dpkg -S "$real" 2>/dev/null | head -n1 | cut -d: -f1)"; then
      pkg="$(dpkg -S "$path" 2>/dev/null | head -n1 | cut -d: -f1)" || true
    fi
    if [ -z "$pkg" ]; then
      echo "[collect] $soname ($path) belongs to no Debian package and is not staged" >&2
      missing=1
      continue
    fi
    echo "$pkg" >>"$packages_file.tmp"
  done < <(LD_LIBRARY_PATH="$(IFS=:; echo "${lib_dirs[*]}")" ldd "$binary" |
    awk '/=>/ { print $1, $3; next } { print $1, "" }')
done
# Pin each package to the version installed here, so the runtime links what the builder compiled against.
sort -u "$packages_file.tmp" | while read -r pkg; do
  echo "$pkg=$(dpkg-query -W -f='${Version}' "$pkg")"
done >"$packages_file"
rm -f "$packages_file.tmp"
echo "[collect] runtime Debian packages: $(tr '\n' ' ' <"$packages_file")"
echo "[collect] staged $(du -sh "$staging$prefix" | cut -f1) under $prefix"
exit "$missing"
