#!/usr/bin/env bash
# Side-by-side benchmark on the GPU host: criu dump + restore of CUDA processes through three flows, interleaved in
# one run, every command split into phases from criu's own log (-v4 timestamps), medians over rounds:
#   ours      criu 4.2.1 + our plugin dir (--lib)
#   upstream  the same criu binary + CRIU's own cuda_plugin.so (built from Debian's criu 4.2.1 source) and NVIDIA's
#             cuda-checkpoint on PATH (both from the bundle's upstream.tar.xz)
#   manual    the driver API called by a helper before and after plain criu (cuda_ckpt suspend / resume)
# base (BENCH_FLOWS): the same as ours with the plugin dir of another commit (build-bundle.sh BASE_PLUGIN_DIR=...),
# for "must not get slower" comparisons in one run. Diagnostic flows (BENCH_FLOWS): ours-seq (CRIU_CUDA_PARALLEL=0), ours-cli (CRIU_CUDA_BACKEND=cli: no libcuda in
# criu), ours-noagent (CRIU_CUDA_GUARD=0: the driver calls in criu's JVM, no agent), ours-hostcopy (CRIU_CUDA_HOST_COPY=plugin), manual-par (the manual flow with
# one cuda_ckpt per task, all at once, as our plugin checkpoints and restores a tree). The flows take turns at going
# first in a round (round r starts with flow r mod N), and BENCH_WARM_GIB (default 0) GiB of /dev/shm are written
# and removed before the first round: on the VM hosts the first touch of guest memory is slow, and whichever flow
# first meets untouched memory pays for it. For every task it also records, when criu starts dumping its pages, how much of its memory sits in
# transparent huge pages (AnonHugePages of /proc/PID/smaps_rollup). Then the kernel is made to settle (caches
# dropped, memory compacted) and one untimed cycle runs (round 0), because the first cycle of a run was measured
# 25-60 % slower in criu's page dump, whichever flow it was.
# Every cycle is checked: the restored counters continue and their device memory verifies on the GPU.
#
# usage (repo root, on the GPU host): bash integration-tests/gpu/bench-phases.sh BUNDLE_DIR OUT_DIR
# Env: BENCH_CASES   "mib:children:rounds ..." (default "64:0:3 8192:0:3 4096:3:1": 64 MiB and 8 GiB single
#                    processes, median of 3; a tree of 4 x 4 GiB, once)
#      BENCH_FLOWS   default "ours upstream manual"
#      BENCH_WARMUP_CYCLE  default 1: one untimed cycle (round 0: first case, first flow) before the rounds
#      BENCH_CPU     1: also LOGS/NAME.cpu, the busiest threads and vmstat during criu's page dump (cpu_window.py)
# Output: OUT_DIR/phases.md (the table), OUT_DIR/phases.tsv (one line per command), OUT_DIR/fixed.md (our plugin's
# fixed cost: "enabled" to the first lock, and to the end of restore init; ours and base), OUT_DIR/summary.txt.
set -uo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"   # sets GPU_DIR
start_host_script "$@"
source "$GPU_DIR/cases.sh"
source "$GPU_DIR/cases_lifecycle.sh"
CASES="${BENCH_CASES:-64:0:3 8192:0:3 4096:3:1}"
FLOWS="${BENCH_FLOWS:-ours upstream manual}"
TSV="$OUT_DIR/phases.tsv"
TABLE="$OUT_DIR/phases.md"

unpack_bundle "$bundle" || { echo "cannot unpack $bundle" >&2; exit 1; }
build_programs >"$LOGS/build.out" 2>&1 || { echo "building the test programs failed" >&2; exit 1; }
[[ -n "$PLUGIN_DIR" ]] || { echo "the bundle has no plugin dir" >&2; exit 1; }
if [[ " $FLOWS " == *" upstream "* ]] && ! upstream_ready; then echo "$CKPT_WHY" >&2; exit 1; fi
if [[ " $FLOWS " == *" base "* && -z "$BASE_PLUGIN_DIR" ]]; then echo "flow base: the bundle has no criu-lib-base.tar.xz" >&2; exit 1; fi

# ts LOG ERE [last]: the criu timestamp (seconds) of the first (or last) line matching ERE; empty when none
ts() {
    local pick=head
    [[ "${3:-}" == last ]] && pick=tail
    grep -E -- "$2" "$1" 2>/dev/null | "$pick" -n1 | sed -n 's/^(\([0-9]*\.[0-9]*\)).*/\1/p'
}
span() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "") print "NA"; else printf "%.3f", b - a }'; }

# dump_phases LOG: init, freeze (incl. locking), device checkpoint, task dump (pages), rest
dump_phases() {
    local log="$1" pre frozen lock first post fin
    pre=$(ts "$log" "Running pre-dump scripts")
    frozen=$(ts "$log" "Collected [0-9]+ in [0-9]+ state" last)
    lock=$(ts "$log" "net: Lock network")
    first=$(ts "$log" "Dumping task \(pid")
    post=$(ts "$log" "Running post-dump scripts")
    fin=$(ts "$log" "Dumping finished successfully")
    echo "$(span 0 "$pre") $(span "$pre" "$frozen") $(span "$frozen" "$lock") $(span "$first" "$post") $(span "$post" "$fin")"
}

# restore_phases LOG: init, memory and tasks (fork .. late hook), device restore (late hook .. done)
restore_phases() {
    local log="$1" pre late fin
    pre=$(ts "$log" "Running pre-restore scripts")
    late=$(ts "$log" "Run late stage hook")
    fin=$(ts "$log" "Restore finished successfully")
    echo "$(span 0 "$pre") $(span "$pre" "$late") $(span "$late" "$fin")"
}

# helper_each NAME OP PIDS...: one cuda_ckpt OP per pid, all running at once; sets HELPER_SECS
helper_each() {
    local name="$1" op="$2" t0 rc=0 p
    local -a kids=()
    shift 2
    t0=$(now_s)
    for p in "$@"; do
        "$BIN/cuda_ckpt" "$op" "$p" >>"$LOGS/$name.cuda_ckpt" 2>&1 &
        kids+=("$!")
    done
    for p in "${kids[@]}"; do wait "$p" || rc=1; done
    HELPER_SECS=$(elapsed "$t0")
    return $rc
}

# thp_at_page_dump LOG PIDS...: MiB in huge pages of each task when criu began its pages (sampled by a watcher)
watch_thp() {
    local log="$1" out="$2"
    shift 2
    (
        for p in "$@"; do
            wait_for "$log" "Dumping pages \(type: [0-9]+ pid: $p\)" 300 || continue
            awk -v p="$p" '/AnonHugePages/ {printf "%s:%d ", p, $2 / 1024}' "/proc/$p/smaps_rollup" 2>/dev/null
        done >"$out"
    ) &
    THP_WATCHER=$!
}

# cycle FLOW MIB CHILDREN ROUND: one dump + restore, one TSV line
cycle() {
    local flow="$1" mib="$2" children="$3" round="$4" name img ok=yes dump_s restore_s helper_d=0 helper_r=0
    local -a env=()
    local lib="$PLUGIN_DIR"
    [[ "$flow" == base ]] && lib="$BASE_PLUGIN_DIR"
    name="ph-$flow-$mib-$children-$round"
    img="$IMG_ROOT/$name"
    case "$flow" in
        ours-seq) env=(CRIU_CUDA_PARALLEL=0) ;;
        ours-cli) env=(CRIU_CUDA_BACKEND=cli PATH="$UPSTREAM_BIN:$PATH") ;;
        ours-noagent) env=(CRIU_CUDA_GUARD=0) ;;
        ours-hostcopy) env=(CRIU_CUDA_HOST_COPY=plugin) ;;
    esac
    COUNTER_MIB="$mib" start_counter "$name" "$children" --tick-ms 20 || { note "FAIL $name: $CKPT_WHY"; kill_all "$ROOT"; return; }
    mapfile -t TREE_PIDS < <(tree_pids "$ROOT")
    watch_thp "$LOGS/$name.dump.log" "$LOGS/$name.thp" "${TREE_PIDS[@]}"
    local cpu_watcher=
    if [[ "${BENCH_CPU:-0}" == 1 ]]; then
        python3 "$GPU_DIR/cpu_window.py" "$LOGS/$name.dump.log" 300 >"$LOGS/$name.cpu" 2>&1 &
        cpu_watcher=$!
    fi
    CRIU_ENV=("${env[@]}")
    case "$flow" in
        manual | manual-par)
            if [[ "$flow" == manual ]]; then
                helper "$name" suspend "${TREE_PIDS[@]}" || ok="suspend"
            else
                helper_each "$name" suspend "${TREE_PIDS[@]}" || ok="suspend"
            fi
            helper_d=$HELPER_SECS
            criu_cmd "$name" dump "$img" -t "$ROOT" --lib "$EMPTY_LIB" || ok="dump" ;;
        upstream) criu_with_upstream "$name" dump "$img" -t "$ROOT" || ok="dump" ;;
        *) criu_cmd "$name" dump "$img" -t "$ROOT" --lib "$lib" || ok="dump" ;;
    esac
    dump_s=$CRIU_SECS
    wait "$THP_WATCHER" 2>/dev/null
    [[ -n "$cpu_watcher" ]] && wait "$cpu_watcher" 2>/dev/null
    reap_dumped "$ROOT"
    if [[ "$ok" == yes ]]; then
        wait_gone 60 "${TREE_PIDS[@]}" || ok="pids-busy"
    fi
    if [[ "$ok" == yes ]]; then
        case "$flow" in
            manual | manual-par)
                criu_cmd "$name" restore "$img" -d --lib "$EMPTY_LIB" || ok="restore"
                restore_s=$CRIU_SECS
                if [[ "$flow" == manual ]]; then
                    helper "$name" resume "${TREE_PIDS[@]}" || ok="resume"
                else
                    helper_each "$name" resume "${TREE_PIDS[@]}" || ok="resume"
                fi
                helper_r=$HELPER_SECS ;;
            upstream) criu_with_upstream "$name" restore "$img" -d || ok="restore"; restore_s=$CRIU_SECS ;;
            *) criu_cmd "$name" restore "$img" -d --lib "$lib" || ok="restore"; restore_s=$CRIU_SECS ;;
        esac
    fi
    if [[ "$ok" == yes ]]; then
        keeps_working "$name" || ok="check: $CKPT_WHY"
    fi
    CRIU_ENV=()
    kill_all "${TREE_PIDS[@]}"
    wait_gone 60 "${TREE_PIDS[@]}" || true
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$flow" "$mib" "$children" "$round" "${dump_s:-NA}" "$helper_d" \
        "$(dump_phases "$LOGS/$name.dump.log")" "${restore_s:-NA}" "$helper_r" "$(restore_phases "$LOGS/$name.restore.log")" \
        "$ok|$(cat "$LOGS/$name.thp" 2>/dev/null)" | tee -a "$TSV"
    rm -rf "$img"
}

note "SETUP $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n1); criu $("$CRIU" --version | awk '/Version/ {print $2}'); upstream: $(cat "$E2E_ROOT/upstream/VERSION" 2>/dev/null)"
: >"$TSV"
warm_memory
read -r -a FLOW_LIST <<<"$FLOWS"
if [[ "${BENCH_WARMUP_CYCLE:-1}" == 1 ]]; then
    # round 0, left out of the table: whichever flow goes first in a run pays for what the host still settles
    IFS=: read -r mib children _ <<<"${CASES%% *}"
    cycle "${FLOW_LIST[0]}" "$mib" "$children" 0
fi
for spec in $CASES; do
    IFS=: read -r mib children rounds <<<"$spec"
    for ((r = 1; r <= rounds; r++)); do
        for ((i = 0; i < ${#FLOW_LIST[@]}; i++)); do
            cycle "${FLOW_LIST[$(((i + r - 1) % ${#FLOW_LIST[@]}))]}" "$mib" "$children" "$r"
        done
    done
done
python3 "$GPU_DIR/phases_table.py" "$TSV" >"$TABLE" 2>&1 || echo "phases_table.py failed" >>"$TABLE"
cat "$TABLE" | tee -a "$SUMMARY"
python3 "$GPU_DIR/fixed_cost.py" "$LOGS" >"$OUT_DIR/fixed.md" 2>&1 || echo "fixed_cost.py failed" >>"$OUT_DIR/fixed.md"
cat "$OUT_DIR/fixed.md" | tee -a "$SUMMARY"
pack_logs
