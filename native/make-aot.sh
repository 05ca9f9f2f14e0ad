#!/usr/bin/env bash
# Points a plugin dir at a JDK and writes what criu's plugins start it with: java/jvm.options, one JavaVMOption per
# line with absolute paths, from java/criu-gpu.cfg (its java.home, class.path and option lines; relative paths there
# are relative to java/) - the shim reads nothing else and checks, as root, that every file it names is writable by
# root only. Then (re)builds the JDK 25 AOT cache from a training run. Run it again after moving the plugin dir or
# changing its JDK: the options and the cache record both.
# Usage: make-aot.sh JAVA_HOME PLUGIN_DIR
set -euo pipefail
java_home=$(cd "$1" && pwd -P)
dir=$(cd "$2" && pwd)
java="$dir/java"
cfg="$java/criu-gpu.cfg"
options="$java/jvm.options"
aot="$java/criu-gpu.aot"

absolute() { case "$1" in /*) echo "$1" ;; *) echo "$java/$1" ;; esac; }

sed -i -e '/^option=-XX:AOTCache=/d' -e "s|^java.home=.*|java.home=$java_home|" "$cfg"
grep -q '^java.home=' "$cfg" || echo "java.home=$java_home" >>"$cfg"
cp=$(sed -n 's/^class.path=//p' "$cfg" | while read -r entry; do absolute "$entry"; done | paste -sd:)
mapfile -t opts < <(sed -n 's/^option=//p' "$cfg" | sed "s|@JAVA_DIR@|$java|g")

write_options() {
  {
    echo "# The JVM criu's GPU plugins start: written by make-aot.sh from criu-gpu.cfg; run it again, do not edit."
    echo "-Dcriu.gpu.java.home=$java_home"
    echo "-Djava.class.path=$cp"
    printf '%s\n' "${opts[@]}" "$@"
  } >"$options.tmp"
  chmod 0644 "$options.tmp"
  mv "$options.tmp" "$options"
}

# java/<plugin>.helper: the helper a plugin's dump always starts (the CUDA agent), which the shim then starts before
# criu's JVM. Written after the cache, whose option it carries; without one, criu's JVM starts the helper itself.
write_helpers() {
  rm -f "$java"/*.helper
  if "$java_home/bin/java" -cp "$cp" dev.criugpu.api.EarlyHelpers "$dir" >>"$java/aot-training.log" 2>&1; then
    chmod 0644 "$java"/*.helper 2>/dev/null || true
  else
    rm -f "$java"/*.helper
    echo "make-aot: writing the early helpers failed (see $java/aot-training.log); criu's JVM starts them" >&2
  fi
}

write_options
rm -f "$aot"
if ! "$java_home/bin/java" -XX:AOTCacheOutput="$aot" "${opts[@]}" -cp "$cp" dev.criugpu.api.Training "$dir" \
    >"$java/aot-training.log" 2>&1; then
  echo "make-aot: training run failed (see $java/aot-training.log); plugins work without the cache" >&2
  rm -f "$aot"
  write_helpers
  exit 0
fi
chmod 0644 "$aot"
echo "option=-XX:AOTCache=@JAVA_DIR@/criu-gpu.aot" >>"$cfg"
write_options "-XX:AOTCache=$aot"
write_helpers
