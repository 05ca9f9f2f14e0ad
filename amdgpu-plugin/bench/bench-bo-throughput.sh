#!/bin/bash
# AMD BO dump and refill throughput: the plugin's real Java/native data path (KfdFileDumper, BoRefiller, SdmaCopier,
# PagesFileWriter/Reader) on the simulated KFD + libdrm_amdgpu, against plain mmap + memcpy + FileChannel I/O of the
# same bytes with the same thread count, side by side in one JVM. Target: plugin >= 0.8x baseline.
#   amdgpu-plugin/bench/bench-bo-throughput.sh [--dir DIR] [--bos-per-gpu N] [--bo-mib M] [--rounds R] [--caps 0,16M]
# Defaults: /dev/shm/amdgpu-bo-bench (tmpfs), 2 GPUs x 4 BOs x 128 MiB, 7 rounds, buffer = whole BO and 16 MiB
# (KFD_MAX_BUFFER_SIZE). The directory is emptied first and removed afterwards.
set -euo pipefail
MODULE=$(cd "$(dirname "$0")/.." && pwd)
ROOT=$(cd "$MODULE/.." && pwd)
JAVA_HOME=$(source "$ROOT/integration-tests/find-jdk.sh" && find_jdk) || exit 1
export JAVA_HOME
export PATH="$JAVA_HOME/bin:$PATH"

# Build the module (and the modules it needs) if its test classes or the simulator are missing.
if [ ! -f "$MODULE/target/native/libkfdsim.so" ] || [ ! -d "$MODULE/target/classes/dev" ]; then
    (cd "$ROOT" && mvn -B -q -pl amdgpu-plugin -am install -DskipTests) 2>&1 | grep -v WARNING || true
fi
# (Re)compile the test sources, the benchmark among them, and get the test classpath.
(cd "$ROOT" && mvn -B -q -pl amdgpu-plugin test-compile dependency:build-classpath \
    -Dmdep.outputFile="$MODULE/target/test.classpath" -Dmdep.includeScope=test) 2>&1 | grep -v WARNING || true
[ -f "$MODULE/target/native/libkfdsim.so" ] || { echo "bench-bo-throughput: target/native/libkfdsim.so was not built" >&2; exit 1; }
# Run from a private copy, so that a build started meanwhile cannot swap classes under the running JVM.
RUN="$MODULE/target/bench-bo-throughput"
rm -rf "$RUN" && mkdir -p "$RUN"
cp -r "$MODULE/target/classes" "$MODULE/target/test-classes" "$MODULE/target/native" "$RUN/"
NATIVE="$RUN/native"
CP="$RUN/test-classes:$RUN/classes:$(cat "$MODULE/target/test.classpath")"

echo "$(date -u +%Y-%m-%dT%H:%MZ), $(uname -r), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
# The same system properties surefire sets (amdgpu-plugin/pom.xml): amdgpu_h binds the simulated libdrm_amdgpu.
java --enable-native-access=ALL-UNNAMED \
    -Damdgpu.native.dir="$NATIVE" \
    -Damdgpu.libdrm.library="$NATIVE/libkfdsim.so" \
    -Damdgpu.libdrm.prefix=kfdsim_ \
    -cp "$CP" dev.criugpu.amdgpu.bench.BoThroughputBenchmark "$@" 2>&1 | grep -v '^WARNING: '
