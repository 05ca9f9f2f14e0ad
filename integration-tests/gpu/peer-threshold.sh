#!/usr/bin/env bash
# Which sizes of device memory the driver alone can checkpoint and restore in place in a process with peer access
# between two GPUs (issue 41: the zoo's `peer` restores at 64 MiB, fails at 4 GiB; cuda_multi's peer case fails at 64
# MiB beside a 1 GiB pad). For each size and feature: cuda_zoo.py FEATURE --mib SIZE on GPUs 0,1 (ZOO_FIRST_GPU on),
# then cuda_ckpt suspend + resume (no criu, no plugin), then 3 more ticks checked. One line per run:
#   PEER FEATURE mib=SIZE used=MIB+MIB driver=ok|fails(WHY)     (used: nvidia-smi's memory of the process per GPU)
#
# usage (repo root, on a host with 2+ GPUs): bash integration-tests/gpu/peer-threshold.sh BUNDLE_DIR OUT_DIR
# Env: PEER_SIZES (MiB per buffer, default "128 256 512 1024 2048"), PEER_FEATURES (default "peer two-gpus")
set -uo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"   # sets GPU_DIR
start_host_script "$@"
source "$GPU_DIR/cases_multi.sh"
source "$GPU_DIR/cases_zoo.sh"

finish() {
    trap '' TERM INT
    pack_logs_lean
    exit "$FAILED"
}
trap 'fail interrupted "stopped by a signal (outer timeout?)"; finish' TERM INT

unpack_bundle "$bundle" || { fail setup "cannot unpack $bundle"; finish; }
build_programs >"$LOGS/build.out" 2>&1 || { fail setup "building the test programs failed (build.out)"; finish; }
for feature in ${PEER_FEATURES:-peer two-gpus}; do
    for mib in ${PEER_SIZES:-128 256 512 1024 2048}; do
        name="$feature-$mib"
        if ! zoo_start "$name" 2 cuda_zoo.py "$feature" --mib "$mib"; then
            note "PEER $feature mib=$mib setup-failed: $ZOO_WHY"; kill_all "$ROOT"; wait_gone 30 "$ROOT"; continue
        fi
        used=$(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null \
            | awk -F', *' -v p="$ROOT" '$1 == p {print $2}' | paste -sd+)
        if helper "$name" suspend --timeout-ms 10000 "$ROOT" && helper "$name" resume "$ROOT" && zoo_goes_on; then
            note "PEER $feature mib=$mib used=$used driver=ok"
        else
            note "PEER $feature mib=$mib used=$used driver=fails($(grep -E 'failed' "$LOGS/$name.cuda_ckpt" | tail -n1 | cut -c1-100)${ZOO_WHY:+; $ZOO_WHY})"
        fi
        ZOO_WHY=""
        kill_all "$ROOT"; wait_gone 30 "$ROOT" || true
    done
done
finish
