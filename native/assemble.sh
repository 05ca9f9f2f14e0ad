#!/usr/bin/env bash
# Assembles the criu plugin directory: the two shims, the jars, the JVM config, the restore-plan executor the
# shim runs in criu's children (java/native), the AOT cache, bin/criu-gpu.
# Usage: assemble.sh JAVA_HOME OUT_DIR PLAN_EXECUTOR_SO   (the jars are already in OUT_DIR/java/lib, copied by Maven)
set -euo pipefail
java_home=$1
out=$2
plan_executor=$3
here=$(cd "$(dirname "$0")" && pwd)

make -C "$here" --no-print-directory OUT="$out" JAVA_HOME="$java_home" all

cfg="$out/java/criu-gpu.cfg"
{
  echo "# JVM that criu starts for the GPU plugins. Relative paths are relative to this folder."
  echo "# CRIU_GPU_JAVA_HOME in criu's environment overrides java.home."
  echo "java.home=$java_home"
  (cd "$out/java" && ls lib/*.jar | LC_ALL=C sort | sed 's/^/class.path=/')
  cat "$here/jvm-options.cfg"
} >"$cfg.tmp"
mv "$cfg.tmp" "$cfg"

install -d "$out/bin"
install -m 0755 "$here/criu-gpu.sh" "$out/bin/criu-gpu"

# Before the AOT training run: it bootstraps the plugins over this directory as criu would.
if [ ! -f "$plan_executor" ]; then
  echo "assemble: $plan_executor is missing (built by: mvn -pl amdgpu-plugin install)" >&2
  exit 1
fi
install -d "$out/java/native"
install -m 0755 "$plan_executor" "$out/java/native/libcriugpu_plan.so"

"$here/make-aot.sh" "$java_home" "$out"
