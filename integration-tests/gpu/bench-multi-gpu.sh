#!/usr/bin/env bash
# Benchmark (issue 5) on an NVIDIA host with N GPUs: criu dump + restore wall time with our plugin of
#   - one process alone (BENCH_MIB on GPU 0),
#   - N processes, one per GPU (BENCH_MIB each), parallel work across tasks (the default),
#   - the same with CRIU_CUDA_PARALLEL=0 (one task after another, as upstream does).
# Every cycle is checked (counters continue, memory verifies on the GPU). Images on /dev/shm. Prints a markdown
# table (also OUT_DIR/bench.md); target: N processes <= 1.3x one process.
#
# usage (repo root, on the GPU host): bash integration-tests/gpu/bench-multi-gpu.sh BUNDLE_DIR OUT_DIR
# Env: BENCH_MIB (default 16384), BENCH_DEADLINE (epoch seconds: no cycle starts after it)
set -uo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"   # sets GPU_DIR
start_host_script "$@"
source "$GPU_DIR/cases.sh"
source "$GPU_DIR/cases_multi.sh"
MIB="${BENCH_MIB:-16384}"
DEADLINE="${BENCH_DEADLINE:-0}"
TABLE="$OUT_DIR/bench.md"

unpack_bundle "$bundle" || { echo "cannot unpack $bundle" >&2; exit 1; }
build_multi >"$LOGS/build.out" 2>&1 || { echo "building the test programs failed" >&2; exit 1; }
list_gpus

plugin_ms() { grep -oE "CUDA $2 in [0-9]+ ms" "$1" 2>/dev/null | awk '{print $4}' | paste -sd+; }

declare -A DUMP RESTORE
# cycle KEY LABEL TAGS [VAR=VALUE] -- cuda_multi args: one dump + restore, one row
cycle() {
    local key="$1" label="$2" tags="$3" envs="" name ok=yes
    shift 3
    [[ "$1" == *=* ]] && { envs="$1"; shift; }
    [[ "$1" == -- ]] && shift
    name="bench-$key"
    if ((DEADLINE > 0 && $(date +%s) > DEADLINE)); then
        echo "| $label | ${envs:-ours (parallel)} | - | - | - | - | skipped: out of time |" | tee -a "$TABLE"; return
    fi
    (
        [[ -n "$envs" ]] && export "${envs?}"
        TREE_PIDS=()
        mstart "$name" "$tags" "$@" || { echo "start: $CKPT_WHY"; kill_all "$ROOT"; exit 1; }
        mdump "$name" "$IMG_ROOT/$name" || { echo "dump: $CKPT_WHY"; kill_all "${TREE_PIDS[@]}"; exit 1; }
        mrestore "$name" "$IMG_ROOT/$name" || { echo "restore: $CKPT_WHY"; kill_all "${TREE_PIDS[@]}"; exit 1; }
        echo "T $T_DUMP $T_RESTORE"
        mcheck "$name" || { echo "check: $CKPT_WHY"; kill_all "${TREE_PIDS[@]}"; exit 1; }
        mstop || { echo "check: no clean exit"; kill_all "${TREE_PIDS[@]}"; exit 1; }
    ) >"$LOGS/$name.bench.out" 2>&1 || ok="FAILED ($(tail -n1 "$LOGS/$name.bench.out"))"
    rm -rf "${IMG_ROOT:?}/$name"
    local d r
    read -r _ d r < <(grep '^T ' "$LOGS/$name.bench.out" || echo "T - -")
    DUMP[$key]=$d RESTORE[$key]=$r
    echo "| $label | ${envs:-ours (parallel)} | $(plugin_ms "$LOGS/$name.dump.log" checkpointed) | $(plugin_ms "$LOGS/$name.restore.log" restored) | **$d** | **$r** | $ok |" | tee -a "$TABLE"
}

ratio() { awk -v a="${1:--}" -v b="${2:--}" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b }'; }

{
    echo "GPUs: $NGPU x $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n1); criu $("$CRIU" --version | awk '/Version/ {print $2}'); images on /dev/shm; $MIB MiB per process; seconds, wall clock"
    echo
    echo "| case | flow | CUDA checkpoint per task (ms, in dump) | CUDA restore per task (ms, in restore) | criu dump | criu restore | check |"
    echo "|---|---|---|---|---|---|---|"
} | tee "$TABLE"
tags=""; for ((k = 0; k < NGPU; k++)); do tags+="g$k "; done
cycle one "1 process, GPU 0" "p" -- --gpus 0 --mib "$MIB"
cycle par "$NGPU processes, one per GPU" "$tags" -- --per-gpu "$NGPU" --mib "$MIB"
cycle seq "$NGPU processes, one per GPU" "$tags" CRIU_CUDA_PARALLEL=0 -- --per-gpu "$NGPU" --mib "$MIB"
{
    echo
    echo "| $NGPU processes vs 1 | dump ratio | restore ratio | target |"
    echo "|---|---|---|---|"
    echo "| ours (parallel) | $(ratio "${DUMP[par]:-}" "${DUMP[one]:-}") | $(ratio "${RESTORE[par]:-}" "${RESTORE[one]:-}") | <= 1.3 |"
    echo "| CRIU_CUDA_PARALLEL=0 | $(ratio "${DUMP[seq]:-}" "${DUMP[one]:-}") | $(ratio "${RESTORE[seq]:-}" "${RESTORE[one]:-}") | (reference) |"
} | tee -a "$TABLE"
pack_logs
