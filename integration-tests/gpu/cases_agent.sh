# The CUDA agent (the JVM beside criu that makes a dump's driver calls and answers for its tasks) SIGKILLed at each
# point of a dump (issue 22): every task the dump touched ends RUNNING (driver state, and the program answers)
# within RETURN_SECS of criu's end whenever criu leaves it alive, and criu's exit status is non-zero wherever the dump
# did not complete. Source after lib.sh, cases.sh, cases_lifecycle.sh (BIG_MIB, RETURN_SECS, criu_end_status,
# returned_after) and init_results. One PASS/FAIL line per case.

# agent_pid NAME: the CUDA agent of that case's dump, as criu's log names it once the agent is up
# (empty once that process has ended: its pid may belong to another process by then)
agent_pid() {
    local pid
    pid=$(sed -n 's/.* in the CUDA agent (pid \([0-9]*\)).*/\1/p' "$LOGS/$1.dump.log" | head -n1)
    [[ -n "$pid" ]] && pid_alive "$pid" && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'cuda\.agent\.CudaAgent' && echo "$pid"
}

# start_agent_dump NAME IMG: criu dump of ROOT with our plugins in the background, with AGENT_ENV (VAR=VALUE...) in
# its environment and AGENT_ARGS after its own options; sets CRIU_PID, CRIU_STATUS_FILE (see start_criu_dump)
start_agent_dump() {
    local name="$1" img="$2"
    mkdir -p "$img"
    CRIU_STATUS_FILE="$LOGS/$name.criu-status"
    rm -f "$CRIU_STATUS_FILE" "$CRIU_STATUS_FILE.pid"
    (
        env --default-signal=INT,QUIT "${AGENT_ENV[@]}" "$CRIU" dump -D "$img" -o "$LOGS/$name.dump.log" -v4 -t "$ROOT" \
            --lib "$PLUGIN_DIR" "${AGENT_ARGS[@]}" >"$LOGS/$name.dump.out" 2>&1 &
        echo $! >"$CRIU_STATUS_FILE.pid"
        wait $!
        echo $? >"$CRIU_STATUS_FILE"
    ) &
    wait_for "$CRIU_STATUS_FILE.pid" '^[0-9]+$' 10 || { CRIU_PID=0; return 1; }
    CRIU_PID=$(cat "$CRIU_STATUS_FILE.pid")
}

# keep_agent_logs NAME IMG: both agents' logs (the second exists when criu's exit started one) into LOGS
keep_agent_logs() {
    cp "$2/cuda-plugin-agent.log" "$LOGS/$1.agent.log" 2>/dev/null
    cp "$2/cuda-plugin-agent-2.log" "$LOGS/$1.agent-2.log" 2>/dev/null
    return 0
}

# case_agent_killed NAME POINT [-R] [fails-later]: kill -9 of the CUDA agent at POINT of the dump of a BIG_MIB process
#   after-lock        the task LOCKED, criu held before the checkpoint by a fault switch (criu stalls 20 s, then
#                     its checkpoint hook finds the agent dead: the dump fails)
#   during-checkpoint a second into CHECKPOINT_DEVICES (the dump fails; the checkpoint may land after the kill)
#   during-pagedump   a second into criu's page dump of the task (the task is CHECKPOINTED; the dump completes)
#   after-exit        right after the plugin's exit hook (criu held there 20 s by a fault switch; the dump completes)
# -R: criu leaves the tree running; fails-later: a post-dump action script fails the dump after the kill.
# Where criu leaves the task alive it must be RUNNING within RETURN_SECS of criu's end and work; where criu kills it
# (the dump completed, no -R) the images must restore and the task work. criu's status: non-zero where the dump did
# not complete (after-lock, during-checkpoint, fails-later), 0 otherwise.
case_agent_killed() {
    local name="$1" point="$2" leave="${3:-}" later="${4:-}" img="$IMG_ROOT/$1" mark apid t0 want survives=0
    AGENT_ENV=()
    AGENT_ARGS=()
    TREE_PIDS=()
    COUNTER_MIB="$BIG_MIB" start_counter "$name" 0 --tick-ms 20 || { fail "$name" "$CKPT_WHY"; kill_all "$ROOT"; return; }
    TREE_PIDS=("$ROOT")
    case "$point" in
        after-lock) AGENT_ENV=(CRIU_GPU_PLUGIN_FORCE=1 CRIU_GPU_FAULT=cuda_plugin:stall-before-checkpoint CRIU_GPU_FAULT_STALL_MS=20000)
            mark="criu stalls before checkpoint" ;;
        during-checkpoint) mark="hook CHECKPOINT_DEVICES\(pid=$ROOT\) entered Java" ;;
        during-pagedump) mark="Dumping pages \(type: [0-9]+ pid: $ROOT\)" ;;
        after-exit) AGENT_ENV=(CRIU_GPU_PLUGIN_FORCE=1 CRIU_GPU_FAULT=cuda_plugin:stall-after-exit CRIU_GPU_FAULT_STALL_MS=20000)
            mark="criu stalls after exit" ;;
    esac
    [[ "$leave" == -R ]] && AGENT_ARGS+=(-R)
    if [[ -n "$later" ]]; then
        AGENT_ARGS+=(--action-script "$(failing_post_dump_script)")
    fi
    case "$point" in after-lock|during-checkpoint) want=nonzero ;; *) want=0 ;; esac
    [[ -n "$later" ]] && want=nonzero
    start_agent_dump "$name" "$img" || { fail "$name" "criu did not start"; kill_all "$ROOT"; return; }
    if ! wait_for "$LOGS/$name.dump.log" "$mark" 180; then
        fail "$name" "criu never reached '$mark': $(first_error "$LOGS/$name.dump.log")"; kill -9 "$CRIU_PID" 2>/dev/null; kill_all "$ROOT"; return
    fi
    [[ "$point" == during-* ]] && sleep 1   # well inside a phase that lasts several seconds at BIG_MIB
    local before
    apid=$(agent_pid "$name")
    # killed before the task's state is asked: during a checkpoint the driver answers only once it is done
    [[ -n "$apid" ]] && kill -9 "$apid"
    before=$(state_of "$name" "$ROOT")
    if [[ -z "$apid" ]]; then
        if [[ "$point" != after-exit ]]; then
            fail "$name" "no CUDA agent process at $point"; kill -9 "$CRIU_PID" 2>/dev/null; kill_all "$ROOT"; return
        fi
        note "NOTE $name: the agent had already ended at $point (every task returned or ended); nothing to kill"
    fi
    criu_end_status 200   # after-lock and after-exit wait out criu's 20 s stall
    t0=$(now_s)
    note "NOTE $name: agent ${apid:-none} killed at $point (task then $before); criu ended with status $CRIU_STATUS; the task was then $(state_of "$name" "$ROOT")"
    if [[ "$CRIU_STATUS" == running ]]; then
        fail "$name" "criu still runs 200 s after the agent was killed"; kill -9 "$CRIU_PID"; keep_agent_logs "$name" "$img"; kill_all "$ROOT"; return
    fi
    if [[ "$want" == 0 && "$CRIU_STATUS" != 0 ]] || [[ "$want" == nonzero && "$CRIU_STATUS" == 0 ]]; then
        fail "$name" "criu's status is $CRIU_STATUS (want $want): $(first_error "$LOGS/$name.dump.log")"; keep_agent_logs "$name" "$img"; kill_all "$ROOT"; return
    fi
    [[ "$leave" == -R || "$CRIU_STATUS" != 0 ]] && survives=1
    if ((survives)); then
        if ! returned_after "$name" "$t0"; then
            keep_agent_logs "$name" "$img"; fail "$name" "$CKPT_WHY"; kill_all "$ROOT"; return
        fi
    else
        reap_dumped "$ROOT"
        if ! restore_tree plugin "$name" "$img" || ! keeps_working "$name"; then
            keep_agent_logs "$name" "$img"; fail "$name" "after the completed dump: $CKPT_WHY"; kill_all "$ROOT"; return
        fi
        T_BACK="restored in ${T_RESTORE}s"
    fi
    keep_agent_logs "$name" "$img"
    stop_counter "$PLOG" "$ROOT" p || { fail "$name" "no clean exit"; kill_all "$ROOT"; return; }
    wait_gone 30 "$ROOT" || true
    rm -rf "$img"
    pass "$name"
    note "TIME $name criu-status=$CRIU_STATUS running-again-after=${T_BACK}s mib=$BIG_MIB"
}
