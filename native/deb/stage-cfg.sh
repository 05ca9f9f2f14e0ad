#!/usr/bin/env bash
# Writes the criu-gpu.cfg the package ships: the plugin dir's, without this build machine's JDK and AOT cache
# (postinst names the JDK found at install time and builds the cache for it).
# Usage: stage-cfg.sh PLUGIN_DIR OUT_FILE
set -euo pipefail
src="$1/java/criu-gpu.cfg"
out=$2
mkdir -p "$(dirname "$out")"
sed -e 's|^java.home=.*|java.home=|' -e '/^option=-XX:AOTCache=/d' "$src" >"$out.tmp"
grep -q '^java.home=$' "$out.tmp" || { echo "stage-cfg: $src has no java.home line" >&2; exit 1; }
mv "$out.tmp" "$out"
