# Test cases shared by run-e2e.sh (MODE plugin: our criu plugins) and validate-manual.sh (MODE manual: the
# driver API through cuda_ckpt + plain criu). Source after lib.sh and init_results. Each case prints exactly one
# PASS/FAIL line and leaves no process of its own behind.

COUNTER_MIB="${COUNTER_MIB:-256}"
# run-e2e.sh's cases, in its order (run-e2e-parallel.sh spreads them over the GPUs)
E2E_ALL_CASES="counter torch tree leave-running fail-script fail-full lock-timeout cpu-process twin interop-upstream interop-to-upstream host-copy-refused interop-legacy killed-after-pause killed-during-checkpoint killed-during-pagedump killed-after-exit sigint sigterm late-restore-failure dataloader-persistent dataloader-4 late-child own-nvidia-file agent-kill-after-lock agent-kill-after-lock-R agent-kill-during-checkpoint agent-kill-during-checkpoint-R agent-kill-during-pagedump agent-kill-during-pagedump-R agent-kill-after-exit agent-kill-after-exit-R agent-kill-fails-later pair-sequential-fails pair-quiesce"

kill_all() { local p; for p in "$@"; do kill -KILL "$p" 2>/dev/null || true; done; }

tags_for() { local k; echo p; for ((k = 1; k <= $1; k++)); do echo "c$k"; done; }

# start_counter NAME CHILDREN [cuda_counter args]: sets ROOT, TAGS, PLOG; waits until every process ticked 10
start_counter() {
    local name="$1" children="$2" tag
    shift 2
    PLOG="$LOGS/$name.program.log"
    mapfile -t TAGS < <(tags_for "$children")
    start_detached "$PLOG" "$BIN/cuda_counter" --mib "$COUNTER_MIB" --children "$children" "$@"
    ROOT=$STARTED_PID
    for tag in "${TAGS[@]}"; do
        wait_for "$PLOG" "^\[$tag [0-9]+\] tick 10$" 120 || { CKPT_WHY="$tag never reached tick 10"; return 1; }
    done
}

# expect_running NAME PIDS...: every pid's CUDA state is RUNNING
expect_running() {
    local name="$1" p s
    shift
    for p in "$@"; do
        s=$(state_of "$name" "$p")
        [[ "$s" == RUNNING ]] || { CKPT_WHY="pid $p is $s, not RUNNING"; return 1; }
    done
}

# await_running NAME SECONDS PID...: bounded poll until every pid is RUNNING (for work criu lets happen after it exits)
await_running() {
    local name="$1" secs="$2" deadline
    shift 2
    deadline=$(($(date +%s) + secs))
    until expect_running "$name" "$@"; do
        (($(date +%s) < deadline)) || return 1
        sleep 0.1
    done
}

# keeps_working NAME [TICKS]: every tag ticks TICKS (default 5) more times, the pattern verifies, state RUNNING
keeps_working() {
    local name="$1" more="${2:-5}" tag last
    for tag in "${TAGS[@]}"; do
        last=$(last_tick "$PLOG" "$tag")
        wait_for "$PLOG" "^\[$tag [0-9]+\] tick $((last + more))$" 60 || { CKPT_WHY="$tag stopped ticking after tick $last"; return 1; }
    done
    counters_continue "$PLOG" "${TAGS[@]}" || return 1
    verify_counter "$PLOG" "$ROOT" "${TAGS[@]}" || { CKPT_WHY="pattern check on the GPU failed or did not answer"; return 1; }
    expect_running "$name" "${TREE_PIDS[@]}"
}

# nvml_agrees NAME PID...: NVML read through the plugin's bindings gives nvidia-smi's figures and lists the pids
nvml_agrees() {
    local name="$1" out="$LOGS/$1.gpu-memory.out"
    shift
    timeout 60 "$JDK/bin/java" --enable-native-access=ALL-UNNAMED -cp "$PLUGIN_DIR/java/lib/*" \
        dev.criugpu.cuda.gpu.GpuMemoryCheck "$@" >"$out" 2>&1 && return 0
    CKPT_WHY="GpuMemoryCheck: $(grep -m1 '^RESULT' "$out" || tail -n1 "$out")"
    return 1
}

# from_nvml NAME: the plugin's dump and restore took their GPU memory figures from NVML, not from nvidia-smi
NVML_PATTERN="${E2E_NVML_PATTERN:-GPU memory from NVML}"
from_nvml() {
    local action
    for action in dump restore; do
        grep -qE "$NVML_PATTERN" "$LOGS/$1.$action.log" || { CKPT_WHY="no /$NVML_PATTERN/ in $action.log"; return 1; }
    done
}

# case_counter MODE NAME CHILDREN: dump (process killed), restore, counter continues and memory intact
case_counter() {
    local mode="$1" name="$2" children="$3" img="$IMG_ROOT/$2" inv
    TREE_PIDS=()
    if ! start_counter "$name" "$children" --tick-ms 20; then
        fail "$name" "$CKPT_WHY"; kill_all "$ROOT"; return
    fi
    if [[ "$mode" == plugin ]] && ! nvml_agrees "$name" "$ROOT"; then
        fail "$name" "$CKPT_WHY"; kill_all "$ROOT"; return
    fi
    if ! checkpoint_tree "$mode" "$name" "$ROOT" "$img"; then
        fail "$name" "$CKPT_WHY"; kill_all "${TREE_PIDS[@]}"; return
    fi
    reap_dumped "$ROOT"
    inv=$(python3 "$GPU_DIR/inventory_plugins.py" "$img/inventory.img" 2>&1)
    if [[ "$mode" == plugin && "$inv" != *cuda_plugin* ]]; then
        fail "$name" "inventory.img does not list cuda_plugin ($inv)"; return
    fi
    if ! restore_tree "$mode" "$name" "$img"; then
        fail "$name" "$CKPT_WHY"; kill_all "${TREE_PIDS[@]}"; return
    fi
    if ! keeps_working "$name"; then
        fail "$name" "$CKPT_WHY"; kill_all "${TREE_PIDS[@]}"; return
    fi
    if [[ "$mode" == plugin ]] && ! from_nvml "$name"; then
        fail "$name" "$CKPT_WHY"; kill_all "${TREE_PIDS[@]}"; return
    fi
    stop_counter "$PLOG" "$ROOT" "${TAGS[@]}" || { fail "$name" "no clean exit after restore"; kill_all "${TREE_PIDS[@]}"; return; }
    wait_gone 30 "${TREE_PIDS[@]}" || true
    rm -rf "$img"
    pass "$name"
    note "TIME $name pids=${#TREE_PIDS[@]} mib=$COUNTER_MIB suspend=$T_SUSPEND dump=$T_DUMP restore=$T_RESTORE resume=$T_RESUME ($inv)"
}

# case_leave_running MODE NAME: criu dump -R; the process keeps running and using the GPU
case_leave_running() {
    local mode="$1" name="$2" img="$IMG_ROOT/$2"
    TREE_PIDS=()
    if ! start_counter "$name" 0 --tick-ms 20; then
        fail "$name" "$CKPT_WHY"; kill_all "$ROOT"; return
    fi
    if ! checkpoint_tree "$mode" "$name" "$ROOT" "$img" -R; then
        fail "$name" "$CKPT_WHY"; kill_all "$ROOT"; return
    fi
    if [[ "$mode" == manual ]] && ! helper "$name" resume "${TREE_PIDS[@]}"; then
        fail "$name" "cuda_ckpt resume failed"; kill_all "$ROOT"; return
    fi
    if ! keeps_working "$name"; then
        fail "$name" "$CKPT_WHY"; kill_all "$ROOT"; return
    fi
    stop_counter "$PLOG" "$ROOT" "${TAGS[@]}" || { fail "$name" "no clean exit"; kill_all "$ROOT"; return; }
    reap_dumped "$ROOT"
    rm -rf "$img"
    pass "$name"
    note "TIME $name suspend=$T_SUSPEND dump=$T_DUMP"
}

LOCK_FAILED_PATTERN="${E2E_LOCK_FAILED_PATTERN:-CUDA lock did not finish|CUDA lock failed}"
# first_error LOG: criu's first real error line (the RLIMIT_NOFILE one is harmless on these hosts)
first_error() { grep -E 'Error' "$1" 2>/dev/null | grep -v RLIMIT_NOFILE | head -n1; }

# case_lock_timeout MODE NAME: the process sits in a 6 s kernel; a lock with a 1 s timeout fails cleanly and
# leaves it RUNNING and usable
case_lock_timeout() {
    local mode="$1" name="$2" img="$IMG_ROOT/$2" n rc=0 t0 secs
    TREE_PIDS=()
    PLOG="$LOGS/$name.program.log"
    TAGS=(p)
    start_detached "$PLOG" "$BIN/cuda_counter" --mib "$COUNTER_MIB" --busy-ms 6000 --tick-ms 0
    ROOT=$STARTED_PID
    TREE_PIDS=("$ROOT")
    # "busy 2": the second long kernel was just launched, so the lock meets about 6 s of work
    if ! wait_for "$PLOG" '^\[p [0-9]+\] busy 2$' 60; then
        fail "$name" "program never started its long kernel"; kill_all "$ROOT"; return
    fi
    t0=$(now_s)
    if [[ "$mode" == manual ]]; then
        helper "$name" lock --timeout-ms 1000 "$ROOT" || rc=$?
    else
        mkdir -p "$img"
        criu_cmd "$name" dump "$img" -t "$ROOT" --lib "$PLUGIN_DIR" --timeout 1 || rc=$?
    fi
    secs=$(elapsed "$t0")
    if ((rc == 0)); then
        fail "$name" "the lock/dump succeeded while the process was inside a 6 s kernel"
        [[ "$mode" == manual ]] && helper "$name" unlock "$ROOT"
        kill_all "$ROOT"; return
    fi
    # the failure must be the lock's, not any other dump error
    if [[ "$mode" == manual ]]; then
        n=$(grep -E 'lock pid=[0-9]+ failed:' "$LOGS/$name.cuda_ckpt" 2>/dev/null | tail -n1)
    else
        n=$(grep -m1 -E "$LOCK_FAILED_PATTERN" "$LOGS/$name.dump.log" 2>/dev/null)
    fi
    if [[ -z "$n" ]]; then
        fail "$name" "the dump failed, but not at the lock: $(first_error "$LOGS/$name.dump.log")"
        kill_all "$ROOT"; return
    fi
    if ! keeps_working "$name" 1; then
        fail "$name" "$CKPT_WHY"; kill_all "$ROOT"; return
    fi
    stop_counter "$PLOG" "$ROOT" p || { fail "$name" "no clean exit"; kill_all "$ROOT"; return; }
    reap_dumped "$ROOT"
    rm -rf "$img"
    pass "$name"
    note "TIME $name failed-after=${secs}s ${n}"
}

# case_torch MODE NAME: a deterministic training loop checkpointed at step 15 finishes with the losses of an
# uninterrupted run. REF_LOG must hold the uninterrupted run's output.
TORCH_ARGS=(--steps 40 --pace-ms 50)
torch_reference() {
    REF_LOG="$LOGS/torch.reference.log"
    timeout -k 5 240 python3 "$GPU_DIR/torch_train.py" "${TORCH_ARGS[@]}" >"$REF_LOG" 2>&1 \
        && grep -q "^done steps=40$" "$REF_LOG"
}
case_torch() {
    local mode="$1" name="$2" img="$IMG_ROOT/$2" log="$LOGS/$2.program.log" at_dump
    TREE_PIDS=()
    start_detached "$log" env PYTHONUNBUFFERED=1 python3 "$GPU_DIR/torch_train.py" "${TORCH_ARGS[@]}"
    ROOT=$STARTED_PID
    if ! wait_for "$log" '^step 15 ' 180; then
        fail "$name" "training never reached step 15"; kill_all "$ROOT"; return
    fi
    if ! checkpoint_tree "$mode" "$name" "$ROOT" "$img"; then
        fail "$name" "$CKPT_WHY"; kill_all "${TREE_PIDS[@]}"; return
    fi
    reap_dumped "$ROOT"
    at_dump=$(count_lines "$log" '^step ')
    if ! restore_tree "$mode" "$name" "$img"; then
        fail "$name" "$CKPT_WHY"; kill_all "${TREE_PIDS[@]}"; return
    fi
    if ! wait_for "$log" '^done steps=40$' 180; then
        fail "$name" "restored training did not finish"; kill_all "${TREE_PIDS[@]}"; return
    fi
    if ((at_dump >= 40)); then
        fail "$name" "all steps ran before the dump: nothing was checked"; return
    fi
    if ! diff <(grep '^step ' "$REF_LOG") <(grep '^step ' "$log") >"$LOGS/$name.diff"; then
        fail "$name" "losses differ from the uninterrupted run (see $name.diff)"; return
    fi
    wait_gone 30 "${TREE_PIDS[@]}" || true
    rm -rf "$img"
    pass "$name"
    note "TIME $name steps-before-dump=$at_dump suspend=$T_SUSPEND dump=$T_DUMP restore=$T_RESTORE resume=$T_RESUME"
}

# case_cpu_process NAME: a plain CPU process on the GPU host: both plugins stay out of it (log lines), the
# inventory lists no plugin, and it restores with the plugins loaded
CPU_CUDA_PATTERN="${E2E_CPU_CUDA_PATTERN:-cuda_plugin.*disabled|has no CUDA state}"
case_cpu_process() {
    local name="$1" img="$IMG_ROOT/$1" log="$LOGS/$1.program.log" inv
    TREE_PIDS=()
    start_detached "$log" sleep 600
    ROOT=$STARTED_PID
    TREE_PIDS=("$ROOT")
    mkdir -p "$img"
    if ! criu_cmd "$name" dump "$img" -t "$ROOT" --lib "$PLUGIN_DIR"; then
        fail "$name" "criu dump failed"; kill_all "$ROOT"; return
    fi
    T_DUMP=$CRIU_SECS
    reap_dumped "$ROOT"
    if ! grep -qE 'amdgpu_plugin.*disabled' "$LOGS/$name.dump.log"; then
        fail "$name" "dump.log has no amdgpu_plugin 'disabled' line"; return
    fi
    if ! grep -qE "$CPU_CUDA_PATTERN" "$LOGS/$name.dump.log"; then
        fail "$name" "dump.log has no line matching /$CPU_CUDA_PATTERN/"; return
    fi
    inv=$(python3 "$GPU_DIR/inventory_plugins.py" "$img/inventory.img" 2>&1)
    if [[ "$inv" != "plugins: " ]]; then
        fail "$name" "inventory.img should list no plugin: $inv"; return
    fi
    if ! restore_tree plugin "$name" "$img"; then
        fail "$name" "$CKPT_WHY"; kill_all "$ROOT"; return
    fi
    if ! pid_alive "$ROOT"; then
        fail "$name" "restored pid $ROOT is not running"; return
    fi
    kill_all "$ROOT"
    if [[ $(grep -cE '(cuda|amdgpu)_plugin: disabled' "$LOGS/$name.restore.log") -lt 2 ]]; then
        fail "$name" "restore.log lacks a 'disabled' line for each plugin"; return
    fi
    rm -rf "$img"
    pass "$name"
    note "TIME $name dump=$T_DUMP restore=$T_RESTORE"
}

# dump_fails_then_running NAME WHAT [criu dump args]: a dump with our plugin that fails after
# CHECKPOINT_DEVICES leaves the process RUNNING and usable
CHECKPOINTED_PATTERN="${E2E_CHECKPOINTED_PATTERN:-CUDA checkpointed}"
dump_fails_then_running() {
    local name="$1" what="$2" img="$3"
    shift 3
    TREE_PIDS=()
    if ! start_counter "$name" 0 --tick-ms 20; then
        fail "$name" "$CKPT_WHY"; kill_all "$ROOT"; return 1
    fi
    TREE_PIDS=("$ROOT")
    if criu_cmd "$name" dump "$img" -t "$ROOT" --lib "$PLUGIN_DIR" "$@"; then
        fail "$name" "criu dump succeeded despite $what"; kill_all "$ROOT"; return 1
    fi
    if ! grep -qE "$CHECKPOINTED_PATTERN" "$LOGS/$name.dump.log"; then
        fail "$name" "dump failed before the checkpoint (no /$CHECKPOINTED_PATTERN/ in dump.log): $(first_error "$LOGS/$name.dump.log")"
        kill_all "$ROOT"; return 1
    fi
    # a failed dump returns the tasks before criu exits; after a post-dump script failure criu resumes the tree
    # only after the plugin's exit hook, so the CUDA agent returns them once criu is gone (AWAIT_SECS)
    if ! await_running "$name" "${AWAIT_SECS:-0}" "$ROOT" || ! keeps_working "$name"; then
        cp "$img/cuda-plugin-agent.log" "$LOGS/$name.agent.log" 2>/dev/null || true
        fail "$name" "after a failed dump ($what): $CKPT_WHY"; kill_all "$ROOT"; return 1
    fi
    cp "$img/cuda-plugin-agent.log" "$LOGS/$name.agent.log" 2>/dev/null || true
    stop_counter "$PLOG" "$ROOT" p || { fail "$name" "no clean exit"; kill_all "$ROOT"; return 1; }
    reap_dumped "$ROOT"
    pass "$name"
    note "TIME $name failed-dump=${CRIU_SECS}s"
}

# failing_post_dump_script: prints the path of an action script that fails criu's post-dump (written whole, then
# renamed: cases of parallel shards may write it at the same time)
failing_post_dump_script() {
    local script="$E2E_ROOT/fail-post-dump.sh"
    printf '#!/bin/sh\n[ "$CRTOOLS_SCRIPT_ACTION" = post-dump ] && exit 1\nexit 0\n' >"$script.$$"
    chmod 755 "$script.$$" && mv -f "$script.$$" "$script"
    echo "$script"
}

case_fail_post_dump_script() {
    local name="$1" script
    script=$(failing_post_dump_script)
    AWAIT_SECS=30 dump_fails_then_running "$name" "a failing post-dump action script" "$IMG_ROOT/$name" --action-script "$script"
    rm -rf "$IMG_ROOT/$name"
}

case_fail_images_full() {
    local name="$1" img="$IMG_ROOT/$1"
    mkdir -p "$img"
    if ! mount -t tmpfs -o size=16m criu-gpu-full "$img" 2>"$LOGS/$name.mount.out"; then
        fail "$name" "cannot mount a 16 MiB tmpfs for the images: $(cat "$LOGS/$name.mount.out")"; return
    fi
    dump_fails_then_running "$name" "a full (16 MiB) images dir" "$img"
    umount "$img" && rm -rf "$img"
}

# case_twin NAME: the cuda-checkpoint twin toggles, plain criu (no plugin) dumps and restores, toggle back
case_twin() {
    local name="$1" img="$IMG_ROOT/$1" twin="$PLUGIN_DIR/bin/criu-gpu" s
    TREE_PIDS=()
    if ! start_counter "$name" 0 --tick-ms 20; then
        fail "$name" "$CKPT_WHY"; kill_all "$ROOT"; return
    fi
    TREE_PIDS=("$ROOT")
    if ! "$twin" cuda --toggle --pid "$ROOT" >"$LOGS/$name.toggle1.out" 2>&1; then
        fail "$name" "criu-gpu cuda --toggle failed: $(tail -n1 "$LOGS/$name.toggle1.out")"; kill_all "$ROOT"; return
    fi
    s=$(state_of "$name" "$ROOT")
    [[ "$s" == CHECKPOINTED ]] || { fail "$name" "after the first toggle the state is $s"; kill_all "$ROOT"; return; }
    if ! criu_cmd "$name" dump "$img" -t "$ROOT" --lib "$EMPTY_LIB"; then
        fail "$name" "plain criu dump failed"; kill_all "$ROOT"; return
    fi
    T_DUMP=$CRIU_SECS
    reap_dumped "$ROOT"
    wait_gone 30 "$ROOT" || { fail "$name" "pid $ROOT still exists"; return; }
    if ! criu_cmd "$name" restore "$img" -d --lib "$EMPTY_LIB"; then
        fail "$name" "plain criu restore failed"; kill_all "$ROOT"; return
    fi
    T_RESTORE=$CRIU_SECS
    if ! "$twin" cuda --toggle --pid "$ROOT" >"$LOGS/$name.toggle2.out" 2>&1; then
        fail "$name" "second toggle failed: $(tail -n1 "$LOGS/$name.toggle2.out")"; kill_all "$ROOT"; return
    fi
    if ! keeps_working "$name"; then
        fail "$name" "$CKPT_WHY"; kill_all "$ROOT"; return
    fi
    stop_counter "$PLOG" "$ROOT" p || { fail "$name" "no clean exit"; kill_all "$ROOT"; return; }
    wait_gone 30 "$ROOT" || true
    rm -rf "$img"
    pass "$name"
    note "TIME $name dump=$T_DUMP restore=$T_RESTORE"
}
