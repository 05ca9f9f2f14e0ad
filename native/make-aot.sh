#!/usr/bin/env bash
# (Re)builds the JDK 25 AOT cache of a plugin dir from a training run, with the JVM and class path criu uses.
# Run it again after moving the plugin dir or changing its JDK: the cache records both.
# Usage: make-aot.sh JAVA_HOME PLUGIN_DIR
set -euo pipefail
java_home=$1
dir=$(cd "$2" && pwd)
cfg="$dir/java/criu-gpu.cfg"
aot="$dir/java/criu-gpu.aot"

sed -i '/^option=-XX:AOTCache=/d' "$cfg"
rm -f "$aot"
cp=$(sed -n 's/^class.path=//p' "$cfg" | sed "s|^\([^/]\)|$dir/java/\1|" | paste -sd:)
mapfile -t opts < <(sed -n 's/^option=//p' "$cfg" | sed "s|@JAVA_DIR@|$dir/java|g")
if ! "$java_home/bin/java" -XX:AOTCacheOutput="$aot" "${opts[@]}" -cp "$cp" dev.criugpu.api.Training "$dir" \
    >"$dir/java/aot-training.log" 2>&1; then
  echo "make-aot: training run failed (see $dir/java/aot-training.log); plugins work without the cache" >&2
  exit 0
fi
echo "option=-XX:AOTCache=@JAVA_DIR@/criu-gpu.aot" >>"$cfg"
