#!/usr/bin/env bash
# A real criu dump + restore with our plugins, narrated. Run from the repo root:
#   integration-tests/demo/demo.sh
# It builds the plugin directory first (mvn install -pl native -am, no tests) if there is none yet.
# On an NVIDIA host with the GPU bundle (integration-tests/gpu/build-bundle.sh, made on a build machine) it
# checkpoints and restores a CUDA program whose device memory holds a pattern and a counter, and shows what the
# CUDA plugin did. Otherwise, with docker, it checkpoints a counting process inside the criu 4.2.1 container, CPU
# only: the plugins load, see there is no GPU state, and stay out of the way (CRIU_GPU_PLUGIN_FORCE=1 makes them
# run their Java side anyway).
# Installed by the Debian package as criu-gpu-demo (next to criu-gpu), it uses this host's criu, which loads the
# installed plugins from /usr/lib/criu by itself.
set -euo pipefail
say() { printf '\n== %s\n' "$*"; }
here=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
if [[ -x "$here/criu-gpu" ]]; then
    installed=1 lib=$(cd "$here/.." && pwd) root=
else
    installed=0 root=$(cd "$here/../.." && pwd)
    lib="$root/native/target/criu-lib"
fi
image=criu-java-gpu/criu:4.2.1

if ((!installed)) && [[ -d /proc/driver/nvidia/gpus && -f "$root/.gpu-bundle/criu.tar.xz" ]]; then
    out=${DEMO_OUT:-$(mktemp -d /tmp/criu-gpu-demo.XXXXXX)}
    say "NVIDIA GPU found: CUDA demo with the bundle in $root/.gpu-bundle (logs: $out)"
    rc=0
    E2E_CASES=counter E2E_KEEP_LOG_DIR=1 bash "$root/integration-tests/gpu/run-e2e.sh" "$root/.gpu-bundle" "$out" || rc=$?
    say "what the CUDA plugin wrote into criu's logs"
    grep -hE 'cuda_plugin: (enabled|using|pid|GPU|[0-9]+ CUDA)' "$out"/logs/cuda-counter.dump.log "$out"/logs/cuda-counter.restore.log | sed 's/^/  /'
    say "the program's own view (device counter and pattern check)"
    grep -E 'ready|verify|tick' "$out"/logs/cuda-counter.program.log | sed -n '1p;$p' | sed 's/^/  /'
    exit "$rc"
fi

if ((!installed)) && [[ ! -x "$lib/bin/criu-gpu" ]]; then
    say "no plugin directory at $lib yet: building it (mvn -B -q install -DskipTests -pl native -am)"
    source "$root/integration-tests/find-jdk.sh"
    jdk=$(find_jdk) || { echo "demo: the build needs a JDK 22+ (as root, integration-tests/test-all.sh installs everything)" >&2; exit 1; }
    for tool in mvn gcc make; do
        command -v "$tool" >/dev/null || { echo "demo: the build needs $tool (as root, integration-tests/test-all.sh installs everything)" >&2; exit 1; }
    done
    (cd "$root" && JAVA_HOME="$jdk" mvn -B -q install -DskipTests -pl native -am)
    [[ -x "$lib/bin/criu-gpu" ]] || { echo "demo: the build did not produce $lib/bin/criu-gpu" >&2; exit 1; }
fi
say "criu-gpu doctor (this host)"
"$lib/bin/criu-gpu" doctor || true

name=criu-gpu-demo-$$
LIB_ARGS=
if ((!installed)) && docker info >/dev/null 2>&1; then
    # criu 4.2.1 in its container, our plugin dir (and the JDK it names) mounted read-only where they are here:
    # java/jvm.options names both by absolute path
    docker image inspect "$image" >/dev/null 2>&1 || "$root/integration-tests/criu-image/build.sh" sid
    jdk=$(sed -n 's/^java.home=//p' "$lib/java/criu-gpu.cfg" | head -n1)
    trap 'docker rm -f "$name" >/dev/null 2>&1 || true' EXIT
    docker run -d --name "$name" --init --cap-add ALL --cap-drop SYS_RESOURCE \
      --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
      -v "$lib:$lib:ro" -v "$jdk:$jdk:ro" -e CRIU_GPU_PLUGIN_FORCE="${CRIU_GPU_PLUGIN_FORCE:-}" \
      "$image" sleep infinity >/dev/null
    run() { docker exec "$name" bash -c "$1"; }
    W=/tmp/demo LIB_ARGS="--lib $lib"
    fetch_images() { docker cp "$name:$W/img" "$1" >/dev/null; }
elif command -v criu >/dev/null 2>&1 && [[ $(id -u) == 0 ]]; then
    # no docker: this host's own criu (4.0 or newer)
    W=$(mktemp -d /tmp/"$name".XXXXXX)
    ((installed)) || LIB_ARGS="--lib $lib"
    trap '[[ -n "${pid:-}" ]] && kill -9 "$pid" 2>/dev/null; rm -rf "$W"' EXIT
    run() { bash -c "$1"; }
    fetch_images() { cp -r "$W/img" "$1"; }
else
    echo "demo: needs a Docker daemon (as root, integration-tests/test-all.sh installs and starts one) or, as root, a criu 4.0+ on PATH" >&2
    exit 1
fi
run "mkdir -p $W/img"
# the counter file is replaced whole (rename) at each step: read until the first one shows (bounded)
counter() { run 'for i in $(seq 200); do c=$(cat '"$W"'/counter 2>/dev/null); [ -n "$c" ] && break; sleep 0.01; done; echo "$c"'; }

say "start a process that counts into $W/counter"
run 'setsid sh -c "i=0; while :; do i=\$((i+1)); echo \$i >'"$W"'/counter.new; mv '"$W"'/counter.new '"$W"'/counter; sleep 0.05; done" </dev/null >/dev/null 2>&1 & echo $! >'"$W"'/pid'
pid=$(run "cat $W/pid")
echo "pid $pid, counter at $(counter)"

say "criu dump${LIB_ARGS:+ $LIB_ARGS} (criu $(run 'criu --version | sed -n "s/Version: //p"'))"
t0=$(date +%s%N)
run "criu dump -t $pid -D $W/img -v4 -o dump.log $LIB_ARGS"
t1=$(date +%s%N)
echo "dump took $(( (t1 - t0) / 1000000 )) ms; counter frozen at $(counter)"
echo "what our plugins wrote into criu's log:"
run "grep -E '(cuda|amdgpu)_plugin' $W/img/dump.log | grep -v 'hook [0-9]' | sed 's/^/  /'"

say "criu-gpu inspect of the checkpoint"
imgs=$(mktemp -d /tmp/"$name"-img.XXXXXX)
fetch_images "$imgs/img"
"$lib/bin/criu-gpu" inspect "$imgs/img" || true
rm -rf "$imgs"

say "criu restore${LIB_ARGS:+ $LIB_ARGS}"
before=$(counter)
t0=$(date +%s%N)
run "criu restore -D $W/img -v4 -o restore.log $LIB_ARGS --restore-detached"
t1=$(date +%s%N)
echo "restore took $(( (t1 - t0) / 1000000 )) ms"
run "grep -E '(cuda|amdgpu)_plugin' $W/img/restore.log | grep -v 'hook [0-9]' | sed 's/^/  /'"
after=$before
for _ in $(seq 100); do after=$(counter); [[ $after -gt $before ]] && break; sleep 0.05; done
echo "counter was $before at the dump, now $after: the process continued where it stopped"
[[ $after -gt $before ]]
