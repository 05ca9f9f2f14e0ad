#!/usr/bin/env bash
# criu-gpu: runs the command-line front end with the JVM and jars of this plugin dir.
# CRIU_GPU_CLI_HEAP: the JVM's most heap (-Xmx, default 256m). check reads /proc files whose length each process's
# owner decides; it keeps at most about 6 MiB of one process (4 MiB of its maps, 1 MiB of environ, its cmdline), so the
# default holds a few dozen processes that fill them, and many more ordinary ones.
set -euo pipefail
dir=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
cfg="$dir/java/criu-gpu.cfg"
home=${CRIU_GPU_JAVA_HOME:-$(sed -n 's/^java.home=//p' "$cfg" | head -n1)}
case "$home" in /*) ;; *) home="$dir/java/$home" ;; esac
cp=$(sed -n 's/^class.path=//p' "$cfg" | sed "s|^\([^/]\)|$dir/java/\1|" | paste -sd:)
exec "$home/bin/java" -Xmx"${CRIU_GPU_CLI_HEAP:-256m}" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow \
  -Dcriu.gpu.dir="$dir" -cp "$cp" dev.criugpu.cli.Main "$@"
