#!/usr/bin/env bash
# Multi-GPU end-to-end checks of our CUDA plugin (issue 5) on an NVIDIA host with 2+ GPUs, real criu 4.2.1 from
# the bundle. One "PASS <name>" / "FAIL <name>: <reason>" line per item; exit status non-zero if any failed.
# Images on /dev/shm; logs packed into OUT_DIR/logs.tar.gz; OUT_DIR/summary.txt holds PASS/FAIL/TIME/INFO lines.
#
# usage (repo root, on the GPU host): bash integration-tests/gpu/run-multi-gpu.sh BUNDLE_DIR OUT_DIR
# Env: MULTI_CASES "tree two-gpu two-gpu-staged single" (a subset, in that order); two-gpu enables peer access,
#                  two-gpu-staged copies between the GPUs without it
#      TREE_MIB    device memory of each per-GPU process (default 16384)
#      PEER_MIB    device memory on each GPU of the two-GPU process (default 4096)
#      SINGLE_MIB  device memory of the GPU-0 process that is moved and refused (default 4096)
set -uo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"   # sets GPU_DIR
start_host_script "$@"
source "$GPU_DIR/cases.sh"
source "$GPU_DIR/cases_multi.sh"
T_START=$(now_s)
CASES="${MULTI_CASES:-tree two-gpu two-gpu-staged single}"

finish() {
    trap '' TERM INT   # once: the reaper passes on the outer timeout's signal a second time
    note "TIME total $(elapsed "$T_START")s"
    pack_logs
    rm -rf "$IMG_ROOT"
    exit "$FAILED"
}

# an outer timeout still gets the logs
trap 'fail interrupted "stopped by a signal (outer timeout?)"; finish' TERM INT

unpack_bundle "$bundle" || { fail setup "cannot unpack $bundle"; finish; }
[[ -n "$PLUGIN_DIR" ]] || { fail setup "the bundle has no plugin dir (criu-lib.tar.xz)"; finish; }
if ! "$CRIU" check >"$LOGS/criu-check.out" 2>&1 || ! grep -q "Looks good" "$LOGS/criu-check.out"; then
    fail setup "criu check: $(tail -n1 "$LOGS/criu-check.out")"; finish
fi
build_multi >"$LOGS/build.out" 2>&1 || { fail setup "building the test programs failed (build.out)"; finish; }
list_gpus
nvidia-smi topo -m >"$LOGS/topo.out" 2>&1 || true
note "SETUP criu $("$CRIU" --version | awk '/Version/ {print $2}'), $NGPU GPU(s): $(nvidia-smi --query-gpu=index,name,uuid,memory.total,driver_version --format=csv,noheader | paste -sd';')"

for c in $CASES; do
    case "$c" in
        tree) case_tree_per_gpu tree-one-process-per-gpu "${TREE_MIB:-16384}" ;;
        two-gpu) case_two_gpu two-gpu-peer "${PEER_MIB:-4096}" 1 ;;
        two-gpu-staged) case_two_gpu two-gpu-staged "${PEER_MIB:-4096}" 0 ;;
        single) case_single_moves single-gpu0 "${SINGLE_MIB:-4096}" ;;
        *) fail "$c" "unknown case (MULTI_CASES)" ;;
    esac
done
finish
