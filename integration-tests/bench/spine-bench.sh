#!/usr/bin/env bash
# Cost of our plugins on criu commands that have no GPU work: criu 4.2.1 dumps and restores the counter workload
#   none         without --lib
#   gated        with --lib $SPINE_LIB, hardware gate says no (the normal case on a CPU-only host)
#   forced       same with CRIU_GPU_PLUGIN_FORCE=1 (JVM started, every hook goes through Java)
#   forced-base  only with SPINE_BASE_LIB: forced with --lib $SPINE_BASE_LIB (A/B against another build, e.g. the
#                previous commit's, in the same container and rounds, so machine noise hits both alike)
# The variants run interleaved in one container, ROUNDS times each; prints medians as a Markdown table, plus for each
# forced variant, read from criu's log: JVM start + bootstrap (plugin enabled -> "Java side ready") and, on dump,
# "cuda_plugin: enabled" -> first "hook PAUSE_DEVICES(" (NA where no log has it).
# Plugin dirs are mounted read-only at their own host path and criu gets that path: make-aot.sh writes absolute
# paths (class path, AOT cache) into java/jvm.options, so mounted elsewhere the JVM would not start and "forced"
# would measure plugins that disabled themselves. The run stops if a forced warm-up round did not reach Java.
#
# With SPINE_FDS=N the workload holds N more open files, which criu takes in one drain per dump: a drain that grows
# criu's fd table waits for an RCU grace period once JVM threads share that table (see grow_fd_table in the shim).
#
# usage: [SPINE_LIB=DIR] [SPINE_BASE_LIB=DIR] [SPINE_FDS=N] integration-tests/bench/spine-bench.sh [ROUNDS]
#        ROUNDS defaults to 11 (odd keeps medians exact); SPINE_LIB defaults to native/target/criu-lib. Needs dockerd,
#        the criu images, and plugin dirs from `mvn -B install`.
set -euo pipefail

ROUNDS="${1:-11}"
REPO="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
LIB="$(readlink -f "${SPINE_LIB:-$REPO/native/target/criu-lib}")"
BASE_LIB="${SPINE_BASE_LIB:+$(readlink -f "$SPINE_BASE_LIB")}"
WORKLOADS="$REPO/integration-tests/target/workloads"
IMAGE=criu-java-gpu/criu:4.2.1

mounts=(-v "$WORKLOADS:/opt/workloads:ro")
for lib in "$LIB" ${BASE_LIB:+"$BASE_LIB"}; do
    [[ -f "$lib/cuda_plugin.so" ]] || { echo "spine-bench: $lib/cuda_plugin.so missing: run mvn -B install" >&2; exit 1; }
    jdk="$(sed -n 's/^java\.home=//p' "$lib/java/criu-gpu.cfg")"
    [[ -d "$jdk" ]] || { echo "spine-bench: java.home=$jdk from $lib/java/criu-gpu.cfg is not a directory" >&2; exit 1; }
    mounts+=(-v "$lib:$lib:ro")
    [[ " ${mounts[*]} " == *" $jdk:$jdk:ro "* ]] || mounts+=(-v "$jdk:$jdk:ro")
done
bash "$REPO/integration-tests/src/test/c/build-workloads.sh" "$WORKLOADS"

NAME="spine-bench-$$"
docker run -d --name "$NAME" --init --cap-add ALL --cap-drop SYS_RESOURCE \
    --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
    "${mounts[@]}" "$IMAGE" sleep infinity >/dev/null
trap 'docker rm -f "$NAME" >/dev/null' EXIT

docker exec -i -e ROUNDS="$ROUNDS" -e LIB="$LIB" -e BASE_LIB="$BASE_LIB" -e FDS="${SPINE_FDS:-0}" "$NAME" bash -s <<'INNER'
set -euo pipefail
VARIANTS=(none gated forced ${BASE_LIB:+forced-base})
FORCED=(forced ${BASE_LIB:+forced-base})
now() { date +%s%N; }
ms() { awk -v ns="$1" 'BEGIN { printf "%.1f", ns / 1e6 }'; }
# median of the numbers on stdin, one decimal (not awk's %.6g, which turns ns into 3.1e+07); NA without input
median() { sort -n | awk '{ v[NR] = $1 }
    END { if (!NR) print "NA"; else printf "%.1f\n", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# seconds between the first log line matching $2 and the first matching $3 in log $1, in ms
log_delta() { awk -v a="$2" -v b="$3" '
    $0 ~ a && !ta { ta = substr($1, 2) + 0 } $0 ~ b && !tb { tb = substr($1, 2) + 0 }
    END { if (ta && tb) printf "%.1f\n", (tb - ta) * 1000 }' "$1"; }
# median of log_delta over the measured rounds of variant $1
rounds_delta() { for r in $(seq 1 "$ROUNDS"); do log_delta "/tmp/bench/$1-$r/$2" "$3" "$4"; done | median; }

run_variant() {   # variant round -> appends "dump_ns restore_ns" to /tmp/bench/$variant
    local variant="$1" round="$2" dir="/tmp/bench/$1-$2" opts=() env=()
    case "$variant" in
        gated) opts=(--lib "$LIB") ;;
        forced) opts=(--lib "$LIB"); env=(CRIU_GPU_PLUGIN_FORCE=1) ;;
        forced-base) opts=(--lib "$BASE_LIB"); env=(CRIU_GPU_PLUGIN_FORCE=1) ;;
    esac
    mkdir -p "$dir"
    setsid /opt/workloads/counter --fds "$FDS" "$dir/count" </dev/null >/dev/null 2>&1 &
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
for variant in "${VARIANTS[@]}"; do run_variant "$variant" warmup; done
# a plugin that cannot start the JVM disables itself and criu goes on: the numbers would be the gated ones
for variant in "${FORCED[@]}"; do
    for log in dump.log restore.log; do
        if ! grep -q "Java side ready" "/tmp/bench/$variant-warmup/$log"; then
            echo "spine-bench: $variant did not reach Java in its warm-up $log:" >&2
            grep -E "enabled|disabled|cannot start the JVM|Error \(.*plugin" "/tmp/bench/$variant-warmup/$log" >&2 || true
            exit 1
        fi
    done
done
for variant in "${VARIANTS[@]}"; do rm -f "/tmp/bench/$variant"; done
for round in $(seq 1 "$ROUNDS"); do
    for variant in "${VARIANTS[@]}"; do run_variant "$variant" "$round"; done
done

declare -A dump restore
for variant in "${VARIANTS[@]}"; do
    dump[$variant]=$(cut -d' ' -f1 "/tmp/bench/$variant" | median)
    restore[$variant]=$(cut -d' ' -f2 "/tmp/bench/$variant" | median)
done

echo "criu $(criu --version | awk '/Version/ {print $2}'), $(nproc) cores, median of $ROUNDS rounds (ms):"
echo "forced: --lib $LIB${BASE_LIB:+; forced-base: --lib $BASE_LIB}"
echo
echo "| variant | dump | restore | extra dump | extra restore |"
echo "|---|---|---|---|---|"
for variant in "${VARIANTS[@]}"; do
    echo "| $variant | $(ms "${dump[$variant]}") | $(ms "${restore[$variant]}") |" \
        "$(ms "$(awk -v a="${dump[$variant]}" -v b="${dump[none]}" 'BEGIN { print a - b }')") |" \
        "$(ms "$(awk -v a="${restore[$variant]}" -v b="${restore[none]}" 'BEGIN { print a - b }')") |"
done
echo
echo "JVM start + bootstrap (criu log, plugin enabled -> Java side ready), and cuda_plugin enabled -> first hook PAUSE_DEVICES( on dump (ms):"
echo
echo "(restore: enabled -> criu forks is what the restore's init costs before criu creates a task: since DESIGN rule 1"
echo "the probe's JVM; enabled -> ready then counts the probe's first Java line)"
echo
echo "| variant | dump: enabled -> ready | restore: enabled -> ready | restore: enabled -> criu forks | dump: cuda enabled -> PAUSE_DEVICES |"
echo "|---|---|---|---|---|"
for variant in "${FORCED[@]}"; do
    echo "| $variant | $(rounds_delta "$variant" dump.log "enabled \\(forced" "Java side ready for DUMP") |" \
        "$(rounds_delta "$variant" restore.log "enabled \\(forced" "Java side ready for RESTORE") |" \
        "$(rounds_delta "$variant" restore.log "enabled \\(forced" "Forking task with") |" \
        "$(rounds_delta "$variant" dump.log "cuda_plugin: enabled" "hook PAUSE_DEVICES\\(") |"
done
echo
echo "Where the JVM's start goes (the shim's line of the plugin that created the JVM), median ms:"
for variant in "${FORCED[@]}"; do for log in dump.log restore.log; do
    echo "$variant $log: $(for r in $(seq 1 "$ROUNDS"); do grep -h -m1 -o 'JVM ready in .*' "/tmp/bench/$variant-$r/$log"; done |
        awk '{ c[NR] = $4; p[NR] = $7; s[NR] = $10 }
             function med(a, n,  i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                                          return n ? a[int((n + 1) / 2)] : "NA" }
             END { printf "JVM ready %s, Bootstrap.prepare %s, Bootstrap.start %s", med(c, NR), med(p, NR), med(s, NR) }')"
done; done
echo
echo "criu taking the task's $FDS + 4 files (PARASITE_CMD_DRAIN_FDS, dump log), median ms:" $(for variant in "${VARIANTS[@]}"; do
    echo "$variant $(rounds_delta "$variant" dump.log "Sent msg to daemon 71 " "Wait for ack 71 on")"; done | paste -sd,)
INNER
