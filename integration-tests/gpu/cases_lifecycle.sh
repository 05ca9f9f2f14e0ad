# The CUDA plugin's guarantees around criu itself (issue 11): images interchangeable with upstream's plugin in both
# directions, no task left locked or checkpointed whatever happens to criu, and a device restore that fails after the
# fork failing the command. Source after lib.sh, cases.sh and init_results. One PASS/FAIL line per case.

BIG_MIB="${BIG_MIB:-16384}"
RETURN_SECS=30        # a task criu left behind must be RUNNING again within this after criu's death
INTERRUPT_SECS=2      # criu must end within this after SIGINT/SIGTERM

upstream_ready() {
    [[ -n "$UPSTREAM_LIB" && -x "$UPSTREAM_BIN/cuda-checkpoint" ]] && return 0
    CKPT_WHY="the bundle has no upstream plugin or no cuda-checkpoint (build it with CUDA_CHECKPOINT=...)"
    return 1
}

# criu_with_upstream NAME ACTION IMG ARGS...: criu with upstream's plugin dir and NVIDIA's cuda-checkpoint on PATH
criu_with_upstream() {
    local name="$1" action="$2" img="$3"
    shift 3
    PATH="$UPSTREAM_BIN:$PATH" criu_cmd "$name" "$action" "$img" --lib "$UPSTREAM_LIB" "$@"
}

# case_interop NAME DUMPER RESTORER [legacy]: DUMPER/RESTORER = ours | upstream; legacy drops the inventory's
# plugins field between the two, as a criu older than 4.1 writes it
case_interop() {
    local name="$1" dumper="$2" restorer="$3" legacy="${4:-}" img="$IMG_ROOT/$1" records
    TREE_PIDS=()
    upstream_ready || { fail "$name" "$CKPT_WHY"; return; }
    start_counter "$name" 0 --tick-ms 20 || { fail "$name" "$CKPT_WHY"; kill_all "$ROOT"; return; }
    TREE_PIDS=("$ROOT")
    if [[ "$dumper" == upstream ]]; then
        criu_with_upstream "$name" dump "$img" -t "$ROOT" || { fail "$name" "upstream's dump failed: $(first_error "$LOGS/$name.dump.log")"; kill_all "$ROOT"; return; }
    else
        criu_cmd "$name" dump "$img" -t "$ROOT" --lib "$PLUGIN_DIR" || { fail "$name" "our dump failed: $(first_error "$LOGS/$name.dump.log")"; kill_all "$ROOT"; return; }
    fi
    T_DUMP=$CRIU_SECS
    reap_dumped "$ROOT"
    records=$(ls "$img"/cuda-plugin-*.img 2>/dev/null | wc -l)
    if [[ "$dumper" == upstream && "$records" != 0 ]]; then
        fail "$name" "upstream's dump left $records cuda-plugin-*.img records: not an upstream image"; return
    fi
    if [[ -n "$legacy" ]] && ! python3 "$GPU_DIR/inventory_plugins.py" --drop "$img/inventory.img" >"$LOGS/$name.inventory" 2>&1; then
        fail "$name" "cannot drop the plugins field: $(cat "$LOGS/$name.inventory")"; return
    fi
    wait_gone 30 "$ROOT" || { fail "$name" "pid $ROOT still exists"; return; }
    if [[ "$restorer" == upstream ]]; then
        criu_with_upstream "$name" restore "$img" -d || { fail "$name" "upstream's restore failed: $(first_error "$LOGS/$name.restore.log")"; kill_all "$ROOT"; return; }
    else
        criu_cmd "$name" restore "$img" -d --lib "$PLUGIN_DIR" || { fail "$name" "our restore failed: $(first_error "$LOGS/$name.restore.log")"; kill_all "$ROOT"; return; }
    fi
    T_RESTORE=$CRIU_SECS
    local inv
    inv=$(python3 "$GPU_DIR/inventory_plugins.py" "$img/inventory.img" 2>&1)
    if ! keeps_working "$name"; then
        fail "$name" "$CKPT_WHY (restore log: $(first_error "$LOGS/$name.restore.log"))"; kill_all "$ROOT"; return
    fi
    stop_counter "$PLOG" "$ROOT" p || { fail "$name" "no clean exit after restore"; kill_all "$ROOT"; return; }
    wait_gone 30 "$ROOT" || true
    rm -rf "$img"
    pass "$name"
    note "TIME $name dump=$T_DUMP restore=$T_RESTORE records=$records inventory=($inv)"
}

# case_host_copy_refused NAME: our dump keeps the host copy in the plugin's format (CRIU_CUDA_HOST_COPY=plugin); a restore with
# upstream's plugin must refuse it in criu's own words, naming the format, with nothing restored; then ours restores
# the same images and the counter's device memory verifies
case_host_copy_refused() {
    local name="$1" img="$IMG_ROOT/$1"
    TREE_PIDS=()
    upstream_ready || { fail "$name" "$CKPT_WHY"; return; }
    start_counter "$name" 0 --tick-ms 20 || { fail "$name" "$CKPT_WHY"; kill_all "$ROOT"; return; }
    TREE_PIDS=("$ROOT")
    CRIU_ENV=(CRIU_CUDA_HOST_COPY=plugin)
    criu_cmd "$name" dump "$img" -t "$ROOT" --lib "$PLUGIN_DIR" || { CRIU_ENV=(); fail "$name" "our dump failed: $(first_error "$LOGS/$name.dump.log")"; kill_all "$ROOT"; return; }
    CRIU_ENV=()
    reap_dumped "$ROOT"
    ls "$img"/cuda-hostcopy-*.img >/dev/null 2>&1 || { fail "$name" "no cuda-hostcopy-*.img: the dump left the host copy in criu's pages"; return; }
    wait_gone 30 "$ROOT" || { fail "$name" "pid $ROOT still exists"; return; }
    if criu_with_upstream "$name.upstream" restore "$img" -d; then
        fail "$name" "upstream's plugin restored an image in our format"; kill_all "$ROOT"; return
    fi
    grep -q 'Missing required plugin: criu_gpu_hostcopy_v1' "$LOGS/$name.upstream.restore.log" \
        || { fail "$name" "upstream's restore failed for another reason: $(first_error "$LOGS/$name.upstream.restore.log")"; return; }
    pid_alive "$ROOT" && { fail "$name" "the refused restore left pid $ROOT"; kill_all "$ROOT"; return; }
    criu_cmd "$name" restore "$img" -d --lib "$PLUGIN_DIR" || { fail "$name" "our restore failed: $(first_error "$LOGS/$name.restore.log")"; kill_all "$ROOT"; return; }
    keeps_working "$name" || { fail "$name" "$CKPT_WHY"; kill_all "$ROOT"; return; }
    stop_counter "$PLOG" "$ROOT" p || { fail "$name" "no clean exit after restore"; kill_all "$ROOT"; return; }
    wait_gone 30 "$ROOT" || true
    rm -rf "$img"
    pass "$name"
    note "TIME $name $(grep -ho 'host copy put back, .*' "$LOGS/$name.restore.log" | head -n1)"
}

# start_criu_dump NAME IMG ENV...: criu dump of ROOT with our plugins in the background, SIGINT/SIGQUIT at their
# defaults (a background job of a script ignores them, a user's terminal does not); sets CRIU_PID. A subshell waits
# for criu as its parent would and writes its exit status (128+N when signal N ended it) to CRIU_STATUS_FILE.
start_criu_dump() {
    local name="$1" img="$2"
    shift 2
    mkdir -p "$img"
    CRIU_STATUS_FILE="$LOGS/$name.criu-status"
    rm -f "$CRIU_STATUS_FILE" "$CRIU_STATUS_FILE.pid"
    (
        env --default-signal=INT,QUIT "$@" "$CRIU" dump -D "$img" -o "$LOGS/$name.dump.log" -v4 -t "$ROOT" \
            --lib "$PLUGIN_DIR" >"$LOGS/$name.dump.out" 2>&1 &
        echo $! >"$CRIU_STATUS_FILE.pid"
        wait $!
        echo $? >"$CRIU_STATUS_FILE"
    ) &
    wait_for "$CRIU_STATUS_FILE.pid" '^[0-9]+$' 10 || { CRIU_PID=0; return 1; }
    CRIU_PID=$(cat "$CRIU_STATUS_FILE.pid")
}

# criu_end_status SECS: waits (bounded) until criu's parent saw it end; sets CRIU_STATUS (exit status, or "running")
criu_end_status() {
    if wait_for "$CRIU_STATUS_FILE" '^[0-9]+$' "$1"; then
        CRIU_STATUS=$(cat "$CRIU_STATUS_FILE")
    else
        CRIU_STATUS=running
    fi
}

# returned_after NAME: the task is RUNNING within RETURN_SECS of criu's end, and then works (counter, pattern)
returned_after() {
    local name="$1" t0="$2"
    if ! await_running "$name" "$RETURN_SECS" "$ROOT"; then
        CKPT_WHY="pid $ROOT is $(state_of "$name" "$ROOT"), not RUNNING, ${RETURN_SECS}s after criu ended"; return 1
    fi
    T_BACK=$(elapsed "$t0")
    keeps_working "$name"
}

# remember_restore_mask PID: the task's CUDA restore thread (RT_TID) and its blocked signals before the dump (RT_SIGBLK)
remember_restore_mask() {
    RT_TID=$("$BIN/cuda_ckpt" restore-tid "$1" 2>&1 | sed -n 's/.* tid=\([0-9]*\)$/\1/p')
    RT_SIGBLK=$(sigblk "$1" "$RT_TID")
}

# restore_mask_back NAME T0: the restore thread has its blocked signals from before the dump again within 30 s
# (a NOTE says when, counted from T0); else CKPT_WHY says what it has
restore_mask_back() {
    if ! mask_back "$ROOT" "$RT_TID" "$RT_SIGBLK" 30; then
        CKPT_WHY="restore thread $RT_TID of pid $ROOT: SigBlk $(sigblk "$ROOT" "$RT_TID") 30 s on, $RT_SIGBLK before the dump"
        return 1
    fi
    note "SIGBLK $1 restore thread $RT_TID of pid $ROOT: $RT_SIGBLK before the dump and again $(elapsed "$2") s after criu was killed or stopped"
}

# case_criu_killed NAME POINT: kill -9 of criu at POINT of the dump of a BIG_MIB process; the task comes back
#   after-pause       tasks locked and frozen, before the checkpoint (criu held there by a fault switch)
#   during-checkpoint a second into CHECKPOINT_DEVICES
#   during-pagedump   a second into criu's page dump of the task
#   after-exit        right after the plugin's exit hook, before criu kills the tree (held by a fault switch)
case_criu_killed() {
    local name="$1" point="$2" img="$IMG_ROOT/$1" t0
    local -a fault=()
    TREE_PIDS=()
    COUNTER_MIB="$BIG_MIB" start_counter "$name" 0 --tick-ms 20 || { fail "$name" "$CKPT_WHY"; kill_all "$ROOT"; return; }
    TREE_PIDS=("$ROOT")
    remember_restore_mask "$ROOT"
    case "$point" in
        after-pause) fault=(CRIU_GPU_PLUGIN_FORCE=1 CRIU_GPU_FAULT=cuda_plugin:stall-before-checkpoint) ;;
        after-exit) fault=(CRIU_GPU_PLUGIN_FORCE=1 CRIU_GPU_FAULT=cuda_plugin:stall-after-exit) ;;
    esac
    start_criu_dump "$name" "$img" "${fault[@]}"
    local log="$LOGS/$name.dump.log" mark
    case "$point" in
        after-pause) mark="criu stalls before checkpoint" ;;
        during-checkpoint) mark="hook CHECKPOINT_DEVICES\(pid=$ROOT\) entered Java" ;;
        during-pagedump) mark="Dumping pages \(type: [0-9]+ pid: $ROOT\)" ;;
        after-exit) mark="criu stalls after exit" ;;
    esac
    if ! wait_for "$log" "$mark" 180; then
        fail "$name" "criu never reached '$mark': $(first_error "$log")"; kill -9 "$CRIU_PID" 2>/dev/null; kill_all "$ROOT"; return
    fi
    [[ "$point" == during-* ]] && sleep 1   # well inside a phase that lasts several seconds at BIG_MIB
    kill -9 "$CRIU_PID"
    t0=$(now_s)
    criu_end_status 60
    note "NOTE $name: criu killed at $point; its parent saw it end after $(elapsed "$t0")s with status $CRIU_STATUS; the task was then $(state_of "$name" "$ROOT")"
    if ! returned_after "$name" "$t0"; then
        cp "$img/cuda-plugin-agent.log" "$LOGS/$name.agent.log" 2>/dev/null
        fail "$name" "$CKPT_WHY"; kill_all "$ROOT"; return
    fi
    if ! wait_for "$img/cuda-plugin-agent.log" "pid $ROOT: outlived criu" 30; then
        cp "$img/cuda-plugin-agent.log" "$LOGS/$name.agent.log" 2>/dev/null
        fail "$name" "the agent's log has no line for pid $ROOT"; kill_all "$ROOT"; return
    fi
    # killed during the checkpoint, criu left the restore thread running with our signals blocked: the agent gives
    # its mask back; at the other points the thread was not woken or was stopped again with its mask
    restore_mask_back "$name" "$t0" || { cp "$img/cuda-plugin-agent.log" "$LOGS/$name.agent.log" 2>/dev/null; fail "$name" "$CKPT_WHY"; kill_all "$ROOT"; return; }
    cp "$img/cuda-plugin-agent.log" "$LOGS/$name.agent.log" 2>/dev/null
    stop_counter "$PLOG" "$ROOT" p || { fail "$name" "no clean exit"; kill_all "$ROOT"; return; }
    reap_dumped "$ROOT"
    rm -rf "$img"
    pass "$name"
    note "TIME $name running-again-after=${T_BACK}s mib=$BIG_MIB"
}

# case_criu_interrupted NAME SIGNAL: SIGINT/SIGTERM to criu half a second into the checkpoint of a BIG_MIB process:
# criu ends within INTERRUPT_SECS with a non-zero status, the task is RUNNING within RETURN_SECS and works
case_criu_interrupted() {
    local name="$1" sig="$2" img="$IMG_ROOT/$1" t0 status secs
    TREE_PIDS=()
    COUNTER_MIB="$BIG_MIB" start_counter "$name" 0 --tick-ms 20 || { fail "$name" "$CKPT_WHY"; kill_all "$ROOT"; return; }
    TREE_PIDS=("$ROOT")
    remember_restore_mask "$ROOT"
    start_criu_dump "$name" "$img"
    if ! wait_for "$LOGS/$name.dump.log" "hook CHECKPOINT_DEVICES\(pid=$ROOT\) entered Java" 180; then
        fail "$name" "criu never reached the checkpoint: $(first_error "$LOGS/$name.dump.log")"; kill -9 "$CRIU_PID"; kill_all "$ROOT"; return
    fi
    sleep 0.5   # inside the checkpoint, which lasts seconds at BIG_MIB
    t0=$(now_s)
    kill "-$sig" "$CRIU_PID"
    criu_end_status 30
    status=$CRIU_STATUS
    secs=$(elapsed "$t0")
    if [[ "$status" == running ]]; then
        fail "$name" "criu still runs 30 s after $sig"; kill -9 "$CRIU_PID"; kill_all "$ROOT"; return
    fi
    if [[ "$status" == 0 ]] || awk -v s="$secs" -v m="$INTERRUPT_SECS" 'BEGIN { exit !(s > m) }'; then
        fail "$name" "criu ended with status $status ${secs}s after $sig (want non-zero within ${INTERRUPT_SECS}s)"; kill_all "$ROOT"; return
    fi
    if ! returned_after "$name" "$t0"; then
        cp "$img/cuda-plugin-agent.log" "$LOGS/$name.agent.log" 2>/dev/null
        fail "$name" "$CKPT_WHY"; kill_all "$ROOT"; return
    fi
    cp "$img/cuda-plugin-agent.log" "$LOGS/$name.agent.log" 2>/dev/null
    # the restore thread was inside the driver's checkpoint when criu was told to stop and kept the signals blocked
    # while it ran; the agent gives its mask back once criu is gone and the task is back
    restore_mask_back "$name" "$t0" || { fail "$name" "$CKPT_WHY"; kill_all "$ROOT"; return; }
    stop_counter "$PLOG" "$ROOT" p || { fail "$name" "no clean exit"; kill_all "$ROOT"; return; }
    reap_dumped "$ROOT"
    rm -rf "$img"
    pass "$name"
    note "TIME $name criu-ended-after=${secs}s status=$status running-again-after=${T_BACK}s mib=$BIG_MIB"
}

# case_late_restore_failure NAME: a post-restore action script starts a process that takes the GPU's free memory
# after our init check and before RESUME_DEVICES_LATE; criu restore must fail and leave no restored task running
case_late_restore_failure() {
    local name="$1" img="$IMG_ROOT/$1" script="$E2E_ROOT/hog-on-post-restore.sh" hoglog="$LOGS/$1.hog.log" rc=0
    TREE_PIDS=()
    COUNTER_MIB=4096 start_counter "$name" 0 --tick-ms 20 || { fail "$name" "$CKPT_WHY"; kill_all "$ROOT"; return; }
    TREE_PIDS=("$ROOT")
    criu_cmd "$name" dump "$img" -t "$ROOT" --lib "$PLUGIN_DIR" || { fail "$name" "dump failed: $(first_error "$LOGS/$name.dump.log")"; kill_all "$ROOT"; return; }
    reap_dumped "$ROOT"
    wait_gone 30 "$ROOT" || { fail "$name" "pid $ROOT still exists"; return; }
    cat >"$script" <<EOF
#!/bin/sh
[ "\$CRTOOLS_SCRIPT_ACTION" = post-restore ] || exit 0
setsid python3 -c '
import time, torch
free, _ = torch.cuda.mem_get_info()
held = torch.empty(free - (512 << 20), dtype=torch.uint8, device="cuda")
print("held", held.numel() >> 20, "MiB", flush=True)
time.sleep(600)' </dev/null >"$hoglog" 2>&1 &
echo \$! >"$hoglog.pid"
i=0
while ! grep -q '^held' "$hoglog" 2>/dev/null; do
    i=\$((i + 1)); [ \$i -lt 1200 ] || exit 1
    sleep 0.05
done
EOF
    chmod 755 "$script"
    criu_cmd "$name" restore "$img" -d --lib "$PLUGIN_DIR" --action-script "$script" || rc=$?
    local hog
    hog=$(cat "$hoglog.pid" 2>/dev/null)
    if ((rc == 0)); then
        fail "$name" "criu restore succeeded although the GPU memory was taken ($(cat "$hoglog" 2>/dev/null | tail -n1))"
        kill_all "$ROOT" "$hog"; return
    fi
    if ! grep -q "^held" "$hoglog" 2>/dev/null; then
        fail "$name" "the memory hog never held the GPU: $(tail -n2 "$hoglog" 2>/dev/null)"; kill_all "$ROOT" "$hog"; return
    fi
    local line
    line=$(grep -m1 -E "Error \(cuda_plugin\): pid [0-9]+: CUDA restore failed" "$LOGS/$name.restore.log")
    if [[ -z "$line" ]]; then
        fail "$name" "no error line naming the pid: $(first_error "$LOGS/$name.restore.log")"; kill_all "$ROOT" "$hog"; return
    fi
    if ! wait_gone 10 "$ROOT"; then
        fail "$name" "pid $ROOT still runs after the failed restore (state $(state_of "$name" "$ROOT"))"; kill_all "$ROOT" "$hog"; return
    fi
    kill_all "$hog"
    rm -rf "$img"
    pass "$name"
    note "TIME $name criu-status=$rc: ${line#*Error (cuda_plugin): }"
}
