#!/usr/bin/env bash
# Cost of our plugins on criu commands that have no GPU work: criu 4.2.1 dumps and restores the counter workload
#   none    without --lib
#   gated   with --lib native/target/criu-lib, hardware gate says no (the normal case on a CPU-only host)
#   forced  same with CRIU_GPU_PLUGIN_FORCE=1 (JVM started, every hook goes through Java)
# The variants run interleaved in one container, ROUNDS times each; prints medians as a Markdown table, plus the
# forced mode's JVM start + bootstrap time read from criu's log (plugin enabled -> "Java side ready").
#
# usage: integration-tests/bench/spine-bench.sh [ROUNDS]    (default 11; needs dockerd, the criu images, and
#        the plugin dir from `mvn -B install`)
set -euo pipefail

ROUNDS="${1:-11}"
REPO="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
LIB="$REPO/native/target/criu-lib"
WORKLOADS="$REPO/integration-tests/target/workloads"
IMAGE=criu-java-gpu/criu:4.2.1

[[ -f "$LIB/cuda_plugin.so" ]] || { echo "spine-bench: $LIB/cuda_plugin.so missing: run mvn -B install" >&2; exit 1; }
JDK="$(sed -n 's/^java\.home=//p' "$LIB/java/criu-gpu.cfg")"
[[ -d "$JDK" ]] || { echo "spine-bench: java.home=$JDK from criu-gpu.cfg is not a directory" >&2; exit 1; }
bash "$REPO/integration-tests/src/test/c/build-workloads.sh" "$WORKLOADS"

NAME="spine-bench-$$"
docker run -d --name "$NAME" --init --cap-add ALL --cap-drop SYS_RESOURCE \
    --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
    -v "$WORKLOADS:/opt/workloads:ro" -v "$LIB:/opt/criu-lib:ro" -v "$JDK:$JDK:ro" \
    "$IMAGE" sleep infinity >/dev/null
trap 'docker rm -f "$NAME" >/dev/null' EXIT

docker exec -i -e ROUNDS="$ROUNDS" "$NAME" bash -s <<'INNER'
set -euo pipefail
now() { date +%s%N; }
ms() { awk -v ns="$1" 'BEGIN { printf "%.1f", ns / 1e6 }'; }
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# seconds between the first log line matching $2 and the first matching $3 in log $1, in ms
log_delta() { awk -v a="$2" -v b="$3" '
    $0 ~ a && !ta { ta = substr($1, 2) + 0 } $0 ~ b && !tb { tb = substr($1, 2) + 0 }
    END { if (ta && tb) printf "%.1f\n", (tb - ta) * 1000 }' "$1"; }

run_variant() {   # variant round -> appends "dump_ns restore_ns" to /tmp/bench/$variant
    local variant="$1" round="$2" dir="/tmp/bench/$1-$2" opts=() env=()
    case "$variant" in
        gated) opts=(--lib /opt/criu-lib) ;;
        forced) opts=(--lib /opt/criu-lib); env=(CRIU_GPU_PLUGIN_FORCE=1) ;;
    esac
    mkdir -p "$dir"
    setsid /opt/workloads/counter "$dir/count" </dev/null >/dev/null 2>&1 &
    local pid=$!
    disown "$pid"   # no "Killed" job notices when the round ends it
    until [[ -s "$dir/count" ]]; do :; done
    local t0 t1 t2 t3
    t0=$(now); env "${env[@]}" criu dump -t "$pid" -D "$dir" -v4 -o dump.log "${opts[@]}"; t1=$(now)
    while [[ -d /proc/$pid ]]; do :; done
    t2=$(now); env "${env[@]}" criu restore -D "$dir" -v4 -o restore.log --restore-detached "${opts[@]}"; t3=$(now)
    kill -9 "$pid"
    while [[ -d /proc/$pid ]]; do :; done
    echo "$((t1 - t0)) $((t3 - t2))" >> "/tmp/bench/$variant"
}

mkdir -p /tmp/bench
for variant in none gated forced; do run_variant "$variant" warmup; done
rm -f /tmp/bench/none /tmp/bench/gated /tmp/bench/forced
for round in $(seq 1 "$ROUNDS"); do
    for variant in none gated forced; do run_variant "$variant" "$round"; done
done

declare -A dump restore
for variant in none gated forced; do
    dump[$variant]=$(cut -d' ' -f1 "/tmp/bench/$variant" | median)
    restore[$variant]=$(cut -d' ' -f2 "/tmp/bench/$variant" | median)
done
jvm_dump=$(for r in $(seq 1 "$ROUNDS"); do
    log_delta "/tmp/bench/forced-$r/dump.log" "enabled \\(forced" "Java side ready for DUMP"; done | median)
jvm_restore=$(for r in $(seq 1 "$ROUNDS"); do
    log_delta "/tmp/bench/forced-$r/restore.log" "enabled \\(forced" "Java side ready for RESTORE"; done | median)

echo "criu $(criu --version | awk '/Version/ {print $2}'), $(nproc) cores, median of $ROUNDS rounds (ms):"
echo
echo "| variant | dump | restore | extra dump | extra restore |"
echo "|---|---|---|---|---|"
for variant in none gated forced; do
    echo "| $variant | $(ms "${dump[$variant]}") | $(ms "${restore[$variant]}") |" \
        "$(ms $((${dump[$variant]%.*} - ${dump[none]%.*}))) | $(ms $((${restore[$variant]%.*} - ${restore[none]%.*}))) |"
done
echo
echo "forced: JVM start + bootstrap (criu log, plugin enabled -> Java side ready): dump ${jvm_dump} ms, restore ${jvm_restore} ms"
INNER
