#!/usr/bin/env bash
# criu-gpu: runs the command-line front end with the JVM and jars of this plugin dir.
set -euo pipefail
dir=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
cfg="$dir/java/criu-gpu.cfg"
home=${CRIU_GPU_JAVA_HOME:-$(sed -n 's/^java.home=//p' "$cfg" | head -n1)}
case "$home" in /*) ;; *) home="$dir/java/$home" ;; esac
cp=$(sed -n 's/^class.path=//p' "$cfg" | sed "s|^\([^/]\)|$dir/java/\1|" | paste -sd:)
exec "$home/bin/java" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow \
  -Dcriu.gpu.dir="$dir" -cp "$cp" dev.criugpu.cli.Main "$@"
