#!/usr/bin/env bash
# Benchmark on the GPU host: criu dump + restore of CUDA processes with our plugin vs the manual flow
# (cuda_ckpt driver-API helper + plain criu), each phase timed, images on /dev/shm. Prints a markdown table
# (also OUT_DIR/bench.md). Every cycle is also checked: counter continues, memory verifies on the GPU.
#
# usage (repo root, on the GPU host): bash integration-tests/gpu/bench-cuda.sh BUNDLE_DIR OUT_DIR
# Env: BENCH_SIZES_MIB   single-process sizes (default "64 8192 32768"; "" skips them)
#      BENCH_TREE_MIB    device memory of each of the 4 processes of the tree (default 8192; 0 skips the tree)
#      BENCH_FLOWS       single-process flows (default "plugin manual")
set -uo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"   # sets GPU_DIR
start_host_script "$@"
source "$GPU_DIR/cases.sh"
SIZES="${BENCH_SIZES_MIB-64 8192 32768}"   # set but empty: no single-process rows
TREE_MIB="${BENCH_TREE_MIB:-8192}"
FLOWS="${BENCH_FLOWS:-manual plugin}"
TABLE="$OUT_DIR/bench.md"

unpack_bundle "$bundle" || { echo "cannot unpack $bundle" >&2; exit 1; }
[[ -n "$PLUGIN_DIR" ]] || FLOWS="manual"
build_programs >"$LOGS/build.out" 2>&1 || { echo "building the test programs failed" >&2; exit 1; }

# plugin_ms LOG WORD: sum of the plugin's "CUDA WORD in N ms" lines (the driver calls inside criu's hooks)
plugin_ms() { grep -oE "CUDA $2 in [0-9]+ ms" "$1" 2>/dev/null | awk '{s += $4} END {printf "%.2f", s / 1000}'; }

# bench_cycle FLOW LABEL CHILDREN MIB [VAR=VALUE for criu]: one dump+restore cycle, one table row
bench_cycle() {
    local flow="$1" label="$2" children="$3" mib="$4" envs="${5:-}" name ok=yes d_total r_total lk ck
    name="bench-$flow-$(tr -c 'a-zA-Z0-9\n' '-' <<<"$label${envs:+ $envs}" | tr -s '-')"
    name="${name%-}"
    COUNTER_MIB="$mib"
    T_SUSPEND=0 T_DUMP=0 T_RESTORE=0 T_RESUME=0
    (
        [[ -n "$envs" ]] && export "${envs?}"
        if ! start_counter "$name" "$children" --tick-ms 20; then echo "start: $CKPT_WHY"; exit 1; fi
        echo "ROOT $ROOT"
        if ! checkpoint_tree "$flow" "$name" "$ROOT" "$IMG_ROOT/$name"; then echo "dump: $CKPT_WHY"; kill_all "${TREE_PIDS[@]}"; exit 1; fi
        reap_dumped "$ROOT"
        if ! restore_tree "$flow" "$name" "$IMG_ROOT/$name"; then echo "restore: $CKPT_WHY"; kill_all "${TREE_PIDS[@]}"; exit 1; fi
        echo "T $T_SUSPEND $T_DUMP $T_RESTORE $T_RESUME"
        if ! keeps_working "$name" 3; then echo "check: $CKPT_WHY"; kill_all "${TREE_PIDS[@]}"; exit 1; fi
        stop_counter "$PLOG" "$ROOT" "${TAGS[@]}" || { echo "check: no clean exit"; kill_all "${TREE_PIDS[@]}"; exit 1; }
        wait_gone 60 "${TREE_PIDS[@]}" || true
    ) >"$LOGS/$name.bench.out" 2>&1 || ok="FAILED ($(tail -n1 "$LOGS/$name.bench.out"))"
    rm -rf "${IMG_ROOT:?}/$name"
    read -r _ T_SUSPEND T_DUMP T_RESTORE T_RESUME < <(grep '^T ' "$LOGS/$name.bench.out" || echo "T - - - -")
    d_total=$(awk -v a="$T_SUSPEND" -v b="$T_DUMP" 'BEGIN { if (b == "-") print "-"; else printf "%.2f", a + b }')
    r_total=$(awk -v a="$T_RESTORE" -v b="$T_RESUME" 'BEGIN { if (a == "-") print "-"; else printf "%.2f", a + b }')
    if [[ "$flow" == plugin ]]; then
        lk=$(plugin_ms "$LOGS/$name.dump.log" locked); ck=$(plugin_ms "$LOGS/$name.dump.log" checkpointed)
        row="| $label | ours${envs:+ ($envs)} | (in dump: lock $lk + ckpt $ck) | $T_DUMP | $T_RESTORE | (in restore) | **$d_total** | **$r_total** | $ok |"
    else
        row="| $label | manual | $T_SUSPEND | $T_DUMP | $T_RESTORE | $T_RESUME | **$d_total** | **$r_total** | $ok |"
    fi
    echo "$row" | tee -a "$TABLE"
}

{
    echo "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null); criu $("$CRIU" --version | awk '/Version/ {print $2}'); images on /dev/shm; seconds, wall clock"
    echo
    echo "| case | flow | lock+checkpoint | criu dump | criu restore | restore+unlock | dump total | restore total | check |"
    echo "|---|---|---|---|---|---|---|---|---|"
} | tee "$TABLE"
for mib in $SIZES; do
    for flow in $FLOWS; do
        bench_cycle "$flow" "1 process, $mib MiB" 0 "$mib"
    done
done
if ((TREE_MIB > 0)); then
    if [[ " $FLOWS " == *" plugin "* ]]; then
        bench_cycle plugin "4 processes x $TREE_MIB MiB" 3 "$TREE_MIB"
        bench_cycle plugin "4 processes x $TREE_MIB MiB" 3 "$TREE_MIB" CRIU_CUDA_PARALLEL=0
    fi
    [[ " $FLOWS " == *" manual "* ]] && bench_cycle manual "4 processes x $TREE_MIB MiB" 3 "$TREE_MIB"
fi
pack_logs
