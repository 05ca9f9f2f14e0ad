#!/usr/bin/env bash
# End-to-end checks of our criu GPU plugins on the GPU host (NVIDIA), with real criu 4.2.1 from the bundle.
# Each case prints exactly one "PASS <name>" or "FAIL <name>: <reason>" line; the exit status is non-zero if
# any failed. Images go to /dev/shm; logs to OUT_DIR/logs, packed into OUT_DIR/logs.tar.gz at the end (set
# E2E_KEEP_LOG_DIR=1 to keep the folder too); OUT_DIR/summary.txt holds the PASS/FAIL and TIME lines.
#
# usage (repo root, on the GPU host): bash integration-tests/gpu/run-e2e.sh BUNDLE_DIR OUT_DIR
# Env:  E2E_CASES="counter torch tree leave-running fail-script fail-full lock-timeout cpu-process twin
#       interop-upstream interop-to-upstream host-copy-refused interop-legacy killed-after-pause killed-during-checkpoint
#       killed-during-pagedump killed-after-exit sigint sigterm late-restore-failure dataloader-persistent
#       dataloader-4 late-child own-nvidia-file agent-kill-after-lock agent-kill-after-lock-R
#       agent-kill-during-checkpoint agent-kill-during-checkpoint-R agent-kill-during-pagedump
#       agent-kill-during-pagedump-R agent-kill-after-exit agent-kill-after-exit-R agent-kill-fails-later
#       pair-sequential-fails pair-quiesce (pair-driver-only: a diagnostic)"
#       (a subset, in that order; E2E_ALL_CASES in cases.sh), E2E_PREPARED=1 (the bundle is unpacked and the programs
#       built: run-e2e-parallel.sh's shards), E2E_IMG_ROOT (default /dev/shm/criu-gpu-e2e), E2E_STUCK_S (lib.sh
#       criu_cmd), COUNTER_MIB (default 256), BIG_MIB (the killed/interrupted cases' process, default 16384), and the
#       log patterns E2E_CPU_CUDA_PATTERN,
#       E2E_CHECKPOINTED_PATTERN, E2E_LOCK_FAILED_PATTERN, E2E_NVML_PATTERN (see cases.sh).
set -uo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"   # sets GPU_DIR
start_host_script "$@"
source "$GPU_DIR/cases.sh"
source "$GPU_DIR/cases_lifecycle.sh"
source "$GPU_DIR/cases_inherited.sh"
source "$GPU_DIR/cases_pair.sh"
source "$GPU_DIR/cases_agent.sh"
T_START=$(now_s)
CASES="${E2E_CASES:-$E2E_ALL_CASES}"

finish() {
    trap '' TERM INT   # once: the reaper passes on the outer timeout's signal a second time
    note "TIME total $(elapsed "$T_START")s"
    if [[ "${E2E_KEEP_LOG_DIR:-0}" == 1 ]]; then
        tar -C "$OUT_DIR" -czf "$OUT_DIR/logs.tar.gz" logs
    else
        pack_logs
    fi
    rm -rf "$IMG_ROOT"
    exit "$FAILED"
}
trap 'fail interrupted "stopped by a signal (outer timeout?)"; finish' TERM INT

if [[ "${E2E_PREPARED:-0}" == 1 ]]; then
    bundle_paths   # run-e2e-parallel.sh unpacked the bundle and built the programs once for all shards
else
    unpack_bundle "$bundle" || { fail setup "cannot unpack $bundle"; finish; }
fi
[[ -n "$PLUGIN_DIR" ]] || { fail setup "the bundle has no plugin dir (criu-lib.tar.xz): build it after 'mvn -B install'"; finish; }
if ! "$CRIU" check >"$LOGS/criu-check.out" 2>&1 || ! grep -q "Looks good" "$LOGS/criu-check.out"; then
    fail setup "criu check: $(tail -n1 "$LOGS/criu-check.out")"; finish
fi
if [[ "${E2E_PREPARED:-0}" != 1 ]]; then
    build_programs >"$LOGS/build.out" 2>&1 || { fail setup "building the test programs failed (build.out)"; finish; }
fi
aot_cache_usable "$PLUGIN_DIR" || note "NOTE the plugin dir's AOT cache is not usable here: the JVM starts without it"
note "SETUP criu $("$CRIU" --version | awk '/Version/ {print $2}'), $("$JDK/bin/java" -version 2>&1 | head -n1), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null)"

for c in $CASES; do
    case "$c" in
        counter) case_counter plugin cuda-counter 0 ;;
        torch) if torch_reference; then case_torch plugin torch-training; else fail torch-training "the uninterrupted reference run failed"; fi ;;
        tree) case_counter plugin cuda-tree 2 ;;
        leave-running) case_leave_running plugin dump-leave-running ;;
        fail-script) case_fail_post_dump_script fail-post-dump-script ;;
        fail-full) case_fail_images_full fail-images-full ;;
        lock-timeout) case_lock_timeout plugin lock-timeout ;;
        cpu-process) case_cpu_process cpu-process ;;
        twin) case_twin cuda-checkpoint-twin ;;
        interop-upstream) case_interop interop-upstream-to-ours upstream ours ;;
        interop-to-upstream) CRIU_ENV=(CRIU_CUDA_HOST_COPY=criu); case_interop interop-ours-to-upstream ours upstream; CRIU_ENV=() ;;
        host-copy-refused) case_host_copy_refused host-copy-refused-by-upstream ;;
        interop-legacy) case_interop interop-legacy-upstream-to-ours upstream ours legacy ;;
        killed-after-pause|killed-during-checkpoint|killed-during-pagedump|killed-after-exit)
            case_criu_killed "criu-$c" "${c#killed-}" ;;
        sigint) case_criu_interrupted criu-sigint INT ;;
        sigterm) case_criu_interrupted criu-sigterm TERM ;;
        late-restore-failure) case_late_restore_failure late-restore-failure ;;
        dataloader-persistent) case_torch_workers torch-dataloader-2-persistent --workers 2 --persistent ;;
        dataloader-4) case_torch_workers torch-dataloader-4 --workers 4 ;;
        late-child) case_late_child cuda-late-child ;;
        pair-quiesce) case_pair_quiesce pair-quiesce ;;
        pair-sequential-fails) case_pair_sequential_fails pair-sequential-fails ;;
        pair-driver-only) case_pair_driver_only pair-driver-only ;;
        own-nvidia-file) case_own_nvidia_file own-nvidia-file ;;
        agent-kill-fails-later) case_agent_killed "$c" during-pagedump "" fails-later ;;
        agent-kill-*-R) p="${c#agent-kill-}"; case_agent_killed "$c" "${p%-R}" -R ;;
        agent-kill-*) case_agent_killed "$c" "${c#agent-kill-}" ;;
        *) fail "$c" "unknown case (E2E_CASES)" ;;
    esac
done
finish
