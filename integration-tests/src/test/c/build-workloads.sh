#!/usr/bin/env bash
# Compiles the test workloads as static binaries (they run in any criu image, whatever its libc).
# usage: build-workloads.sh OUT_DIR
set -euo pipefail
out="$1"
src="$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")"
mkdir -p "$out"
for c in counter; do
    if [[ ! -x "$out/$c" || "$src/$c.c" -nt "$out/$c" ]]; then
        gcc -static -O2 -Wall -Wextra -Werror -o "$out/$c" "$src/$c.c"
    fi
done
