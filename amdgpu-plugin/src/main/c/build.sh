#!/bin/sh
# Builds the module's production C code into $1 (called by Maven in the compile phase):
# libcriugpu_plan.so, the fork-safe restore-plan executor the shim runs in criu's children.
set -eu
out=$1
here=$(dirname "$0")
mkdir -p "$out"
CC=${CC:-gcc}
$CC -std=gnu11 -O2 -Wall -Wextra -Werror -fPIC -shared -I"$here/include" \
	-o "$out/libcriugpu_plan.so" "$here/gpu_plan.c"
