#!/usr/bin/env bash
# Compiles the test workloads as static binaries (they run in any criu image, whatever its libc).
# usage: build-workloads.sh OUT_DIR
set -euo pipefail
out="$1"
src="$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")"
# fake-amd.c includes linux/kfd_ioctl.h, which needs the drm/drm.h stand-in the AMD plugin's tests use
kfd_include="$src/../../../../amdgpu-plugin/src/test/c/include"
mkdir -p "$out"
for c in counter fake-amd; do
    if [[ ! -x "$out/$c" || "$src/$c.c" -nt "$out/$c" ]]; then
        gcc -static -O2 -Wall -Wextra -Werror -I"$kfd_include" -o "$out/$c" "$src/$c.c"
    fi
done
