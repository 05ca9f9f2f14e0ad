#!/usr/bin/env bash
# GPU host: checks the bundle and the test programs WITHOUT our plugins (the driver API through cuda_ckpt plus
# plain criu), so run-e2e.sh failures can be told apart from harness or host problems. Also a smoke check of
# the plugin dir when the bundle has one: criu loads the shims and starts the JVM.
#
# usage (repo root, on the GPU host): bash integration-tests/gpu/validate-manual.sh BUNDLE_DIR OUT_DIR
# Output: PASS/FAIL lines and TIME lines on stdout and in OUT_DIR/summary.txt, logs in OUT_DIR/logs.tar.gz.
set -uo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"   # sets GPU_DIR
start_host_script "$@"
source "$GPU_DIR/cases.sh"
T_START=$(now_s)

{
    nvidia-smi --query-gpu=name,driver_version,memory.total,persistence_mode --format=csv,noheader
    uname -r; df -h /dev/shm | tail -n1; nproc; free -g | sed -n 2p
    python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name(0))'
} >"$LOGS/host.txt" 2>&1
note "HOST $(head -n1 "$LOGS/host.txt") | kernel $(sed -n 2p "$LOGS/host.txt") | shm $(sed -n 3p "$LOGS/host.txt" | awk '{print $2}')"

unpack_bundle "$bundle" || { fail unpack "cannot unpack $bundle"; exit 1; }
if "$CRIU" check >"$LOGS/criu-check.out" 2>&1 && grep -q "Looks good" "$LOGS/criu-check.out"; then
    pass criu-check
else
    fail criu-check "$(tail -n1 "$LOGS/criu-check.out")"
fi
if "$JDK/bin/java" -version >"$LOGS/java-version.out" 2>&1; then
    pass jdk-runs; note "JAVA $(head -n1 "$LOGS/java-version.out")"
else
    fail jdk-runs "$(tail -n1 "$LOGS/java-version.out")"
fi
t0=$(now_s)
if build_programs >"$LOGS/build.out" 2>&1; then
    pass build-programs; note "TIME build-programs $(elapsed "$t0")s"
else
    fail build-programs "see build.out: $(tail -n1 "$LOGS/build.out")"
    pack_logs; exit 1
fi

case_counter manual manual-counter 0
case_counter manual manual-tree 2
case_leave_running manual manual-dump-R
case_lock_timeout manual manual-lock-timeout

if torch_reference; then
    cp "$REF_LOG" "$LOGS/torch.reference1.log"
    if torch_reference && diff <(grep '^step ' "$LOGS/torch.reference1.log") <(grep '^step ' "$REF_LOG") >"$LOGS/torch-determinism.diff"; then
        pass torch-determinism; note "TORCH $(grep -c '^step ' "$REF_LOG") steps, last: $(grep '^step ' "$REF_LOG" | tail -n1)"
        case_torch manual manual-torch
    else
        fail torch-determinism "two runs gave different losses (torch-determinism.diff)"
    fi
else
    fail torch-reference "reference run failed: $(tail -n1 "$REF_LOG")"
fi

if [[ -n "$PLUGIN_DIR" ]]; then
    if aot_cache_usable "$PLUGIN_DIR"; then note "AOT cache usable with the bundled runtime"; else note "AOT cache NOT usable"; fi
    case_cpu_process plugin-cpu-process
    note "PLUGIN dump.log lines of plugin-cpu-process:"
    grep -E '(cuda|amdgpu)_plugin|JVM|Java' "$LOGS/plugin-cpu-process.dump.log" | head -n 25 | sed 's/^/    /' | tee -a "$SUMMARY"
    # probe only (no PASS/FAIL): our plugin on a CUDA process, left running
    if start_counter plugin-probe 0 --tick-ms 20; then
        CRIU_CMD_TIMEOUT=90 criu_cmd plugin-probe dump "$IMG_ROOT/plugin-probe" -t "$ROOT" --lib "$PLUGIN_DIR" -R
        rc=$?
        note "PROBE criu dump -R --lib (CUDA process): rc=$rc in ${CRIU_SECS}s; state after: $(state_of plugin-probe "$ROOT"); inventory: $(python3 "$GPU_DIR/inventory_plugins.py" "$IMG_ROOT/plugin-probe/inventory.img" 2>&1)"
        grep -E 'cuda_plugin|Error' "$LOGS/plugin-probe.dump.log" | head -n 30 | sed 's/^/    /' | tee -a "$SUMMARY"
        kill_all "$ROOT"; reap_dumped "$ROOT"; rm -rf "$IMG_ROOT/plugin-probe"
    fi
fi

note "TIME total $(elapsed "$T_START")s"
pack_logs
exit "$FAILED"
