#!/usr/bin/env bash
# Assembles the criu plugin directory: the two shims (with the restore-plan executor linked in), the jars, the JVM
# settings (java/criu-gpu.cfg, from which make-aot.sh writes java/jvm.options and the AOT cache), bin/criu-gpu.
# Usage: assemble.sh JAVA_HOME OUT_DIR VERSION   (the jars are already in OUT_DIR/java/lib, copied by Maven;
# VERSION: the Maven project version, written to java/VERSION and into the criu_gpu package)
set -euo pipefail
java_home=$1
out=$2
version=$3
here=$(cd "$(dirname "$0")" && pwd)

make -C "$here" --no-print-directory OUT="$out" JAVA_HOME="$java_home" all
rm -rf "$out/java/native" # the plan executor lived there before it was linked into the shims

cfg="$out/java/criu-gpu.cfg"
{
  echo "# JVM settings of criu's GPU plugins (java.home, class.path, option; relative paths are relative to this folder)"
  echo "# and plugin keys (cuda.*). After an edit run make-aot.sh: criu reads the jvm.options it writes from this file."
  echo "java.home=$java_home"
  (cd "$out/java" && ls lib/*.jar | LC_ALL=C sort | sed 's/^/class.path=/')
  cat "$here/jvm-options.cfg"
} >"$cfg.tmp"
mv "$cfg.tmp" "$cfg"

install -d "$out/bin"
install -m 0755 "$here/criu-gpu.sh" "$out/bin/criu-gpu"
install -m 0755 "$here/make-aot.sh" "$out/bin/make-aot.sh"
echo "$version" >"$out/java/VERSION" # what criu_gpu compares its own version with at import
# the PyTorch side of releasing NCCL communicators for a dump (CommRelease): PYTHONPATH=$out/python, or
# pip install $out/python/criu_gpu-*.whl (both of this version)
python3 "$here/../cuda-plugin/build-wheel.py" "$version" "$here/../cuda-plugin/src/main/python" "$out/python"

# Also the AOT training run: it bootstraps the plugins over this directory as criu would.
"$here/make-aot.sh" "$java_home" "$out"
