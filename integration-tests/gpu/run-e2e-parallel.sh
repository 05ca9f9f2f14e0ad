#!/usr/bin/env bash
# run-e2e.sh's cases spread over the host's GPUs: one shard per GPU, the shards running at the same time, each a
# run-e2e.sh of its own (CUDA_VISIBLE_DEVICES=i, its own images folder), the bundle unpacked and the programs built
# once. Same cases and checks as run-e2e.sh, in about 1/N of its time; for timings use run-e2e.sh or the benchmarks.
#
# usage (repo root, on the GPU host): bash integration-tests/gpu/run-e2e-parallel.sh BUNDLE_DIR OUT_DIR
# Env: E2E_CASES (default all, see run-e2e.sh), E2E_SHARDS (default: the number of GPUs), and run-e2e.sh's others.
# Output: OUT_DIR/summary.txt (every shard's lines, then a RESULT line), OUT_DIR/shards.tar (gpuI/: shard I's
# summary.txt and logs.tar.gz; gpuI.out: its output). Exit status non-zero if any shard failed or a case gave no result.
set -uo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"   # sets GPU_DIR
start_host_script "$@"
source "$GPU_DIR/cases.sh"
T_START=$(now_s)
CASES="${E2E_CASES:-$E2E_ALL_CASES}"
SHARD_PIDS=()

finish() {
    trap '' TERM INT   # once: an outer timeout signals the whole group, and the shards pack their own logs
    local i want got
    for i in "${!SHARD_PIDS[@]}"; do
        wait "${SHARD_PIDS[i]}" || FAILED=1
        note "SHARD gpu$i: ${SHARDS[i]}"
        cat "$OUT_DIR/gpu$i/summary.txt" >>"$SUMMARY" 2>/dev/null
    done
    want=$(wc -w <<<"$CASES")
    got=$(grep -cE '^(PASS|FAIL) ' "$SUMMARY" | head -n1)
    grep -qE '^FAIL ' "$SUMMARY" && FAILED=1
    ((got >= want)) || FAILED=1
    note "RESULT $(grep -c '^PASS ' "$SUMMARY") PASS, $(grep -c '^FAIL ' "$SUMMARY") FAIL, for $want case(s) on ${#SHARD_PIDS[@]} GPU(s)"
    note "TIME total $(elapsed "$T_START")s"
    # one archive of the shards' folders: the device tool brings back only a few files
    (cd "$OUT_DIR" && tar -cf shards.tar gpu[0-9]* && rm -rf gpu[0-9]*)
    rm -rf "$LOGS" "$IMG_ROOT"   # the shards' images folders are their own
    exit "$FAILED"
}
trap 'fail interrupted "stopped by a signal (outer timeout?)"; kill -TERM "${SHARD_PIDS[@]}" 2>/dev/null; finish' TERM INT

unpack_bundle "$bundle" || { fail setup "cannot unpack $bundle"; finish; }
build_programs >"$OUT_DIR/build.out" 2>&1 || { fail setup "building the test programs failed (build.out)"; finish; }
n="${E2E_SHARDS:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')}"
((n >= 1)) || { fail setup "no GPU listed by nvidia-smi -L"; finish; }
mapfile -t SHARDS < <(python3 "$GPU_DIR/e2e_shards.py" "$n" $CASES)
for i in "${!SHARDS[@]}"; do
    [[ -n "${SHARDS[i]}" ]] || continue
    CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES="$i" E2E_PREPARED=1 E2E_IMG_ROOT="/dev/shm/criu-gpu-e2e-gpu$i" \
        E2E_CASES="${SHARDS[i]}" bash "$GPU_DIR/run-e2e.sh" "$bundle" "$OUT_DIR/gpu$i" >"$OUT_DIR/gpu$i.out" 2>&1 &
    SHARD_PIDS[i]=$!
done
finish
