#!/usr/bin/env bash
# The feature zoo (cases_zoo.sh) on an NVIDIA host: one ZOO line per case (the driver alone in place, dump -R,
# dump + restore right after), PASS/FAIL as cases_zoo.sh says. 2-GPU cases need a host with 2+ GPUs.
#
# usage (repo root, on the GPU host): bash integration-tests/gpu/run-zoo.sh BUNDLE_DIR OUT_DIR
# Env: ZOO_CASES "name name ..." (a subset of cases_zoo.sh's ZOO_ALL_CASES, in that order); ZOO_FIRST_GPU (the
#      first GPU the cases are shown, default 0); ZOO_PREPARE_ONLY=1 (unpack the bundle and build, nothing else) and
#      ZOO_CRIU_OPTIONS (criu options without "--", comma-separated, for every criu command, through CRIU_CONFIG_FILE;
#      default "tcp-established,network-lock nftables", empty for none);
#      ZOO_EXTRA_ARGS (appended to every case's program arguments, e.g. "--mib 4096" for cuda_zoo.py cases);
#      E2E_PREPARED=1 with E2E_IMG_ROOT (a shard: runs on what an earlier ZOO_PREPARE_ONLY run left)
set -uo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"   # sets GPU_DIR
start_host_script "$@"
source "$GPU_DIR/cases_multi.sh"
source "$GPU_DIR/cases_zoo.sh"
T_START=$(now_s)

finish() {
    trap '' TERM INT
    note "TIME total $(elapsed "$T_START")s"
    pack_logs_lean
    rm -rf "$IMG_ROOT"
    exit "$FAILED"
}
trap 'fail interrupted "stopped by a signal (outer timeout?)"; finish' TERM INT

if [[ "${E2E_PREPARED:-0}" == 1 ]]; then bundle_paths
else
    unpack_bundle "$bundle" || { fail setup "cannot unpack $bundle"; finish; }
    build_programs >"$LOGS/build.out" 2>&1 || { fail setup "building the test programs failed (build.out)"; finish; }
fi
[[ -n "$PLUGIN_DIR" ]] || { fail setup "the bundle has no plugin dir (criu-lib.tar.xz)"; finish; }
[[ "${ZOO_PREPARE_ONLY:-0}" == 1 ]] && finish
# a criu config file, for dump and restore alike; the default is what `criu-gpu check` prints for a process with
# loopback TCP connections (NCCL's bootstrap inside a JAX process that runs collectives)
if [[ -n "${ZOO_CRIU_OPTIONS-tcp-established,network-lock nftables}" ]]; then
    tr ',' '\n' <<<"${ZOO_CRIU_OPTIONS-tcp-established,network-lock nftables}" >"$OUT_DIR/criu.conf"
    CRIU_ENV=(CRIU_CONFIG_FILE="$OUT_DIR/criu.conf")
fi
NGPU=$(nvidia-smi -L | wc -l)
note "SETUP criu $("$CRIU" --version | awk '/Version/ {print $2}'), $NGPU GPU(s): $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort -u | paste -sd';'); $(python3 -c 'import jax, torch; print("jax", jax.__version__, "torch", torch.__version__)' 2>&1 | tail -n1)"

for entry in "${ZOO_ALL_CASES[@]}"; do
    name="${entry%%:*}" rest="${entry#*:}"
    gpus="${rest%%:*}" cmd="${rest#*:}"
    [[ -n "${ZOO_CASES:-}" && " $ZOO_CASES " != *" $name "* ]] && continue
    # shellcheck disable=SC2086
    case_zoo "$name" "$gpus" $cmd ${ZOO_EXTRA_ARGS:-}
done
finish
