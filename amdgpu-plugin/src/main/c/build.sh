#!/bin/sh
# Builds the module's production C code into $1 (called by Maven in the compile phase):
# libamdgpu_restore.so, the fork-safe restore executor the shim will link.
set -eu
out=$1
here=$(dirname "$0")
mkdir -p "$out"
CC=${CC:-gcc}
$CC -std=gnu11 -O2 -Wall -Wextra -Werror -fPIC -shared -I"$here/include" \
	-o "$out/libamdgpu_restore.so" "$here/amdgpu_restore.c"
