# The one-GPU stand-in for a multi-process NCCL job (issue 24), with cuda_pair.cu: two processes whose every
# kernel waits for the other's kernel of the same step, so neither can be locked while the other is locked first.
# Source after lib.sh, cases.sh and init_results (run-e2e.sh). One PASS/FAIL line per case.
#   pair-quiesce           case_pair_quiesce pair-quiesce            the whole job locked at once: dumps and restores
#   pair-sequential-fails  case_pair_sequential_fails pair-sequential-fails
#                          CRIU_CUDA_QUIESCE=0 (one task after another): the dump fails at the second task's lock
#                          and both run on

PAIR_TAGS=(pair0 pair1)
PAIR_BUSY_MS="${PAIR_BUSY_MS:-20}"   # each step's kernel spins this long after both processes arrived
PAIR_ROUNDS="${PAIR_ROUNDS:-3}"      # dump/restore rounds of pair-quiesce, at random moments of one run

# build_pair: cuda_pair into $BIN (build_programs makes the others)
build_pair() {
    [[ -x "$BIN/cuda_pair" ]] && return 0
    local nvcc="${NVCC:-$(command -v nvcc || ls /usr/local/cuda/bin/nvcc /usr/local/cuda-*/bin/nvcc 2>/dev/null | head -n1)}"
    "$nvcc" -O2 -o "$BIN/cuda_pair" "$GPU_DIR/cuda_pair.cu" -lpthread >>"$LOGS/build.out" 2>&1
}

# start_pair NAME: starts cuda_pair; sets ROOT, TAGS, PLOG, TREE_PIDS (parent, child); waits until both ticked 10
start_pair() {
    local name="$1" tag
    ROOT=""
    PLOG="$LOGS/$name.program.log"
    : >"$PLOG"
    TAGS=("${PAIR_TAGS[@]}")
    build_pair || { CKPT_WHY="building cuda_pair failed (build.out)"; return 1; }
    start_detached "$PLOG" "$BIN/cuda_pair" --mib "$COUNTER_MIB" --busy-ms "$PAIR_BUSY_MS"
    ROOT=$STARTED_PID
    for tag in "${TAGS[@]}"; do
        wait_for "$PLOG" "^\[$tag [0-9]+\] tick 10$" 120 || { CKPT_WHY="$tag never reached tick 10: $(grep -E "^\[$tag " "$PLOG" | tail -n1)"; return 1; }
    done
    mapfile -t TREE_PIDS < <(tree_pids "$ROOT")
    ((${#TREE_PIDS[@]} == 2)) || { CKPT_WHY="expected 2 processes under $ROOT, found: ${TREE_PIDS[*]}"; return 1; }
}

# random_pause: 0 to 0.5 s, so that each dump meets the pair at another point of its step
random_pause() { sleep "0.$(printf '%03d' $((RANDOM % 500)))"; }

# case_pair_quiesce NAME: PAIR_ROUNDS times: dump the running pair (criu's default --timeout), restore it, both keep
# stepping with contiguous counters, their patterns verify on the GPU, both RUNNING. A pair of its own goes first
# through pair_driver_roundtrip: when the driver alone cannot resume the pair in place, only the dump (the job locked
# together) and the restore up to RUNNING are asserted, once, and a NOTE says so.
case_pair_quiesce() {
    local name="$1" img="$IMG_ROOT/$1" k rn locks=()
    TREE_PIDS=()
    if ! start_pair "$name.probe"; then
        fail "$name" "$CKPT_WHY"; kill_all "$ROOT" "${TREE_PIDS[@]}"; return
    fi
    PAIR_DRIVER_OK=1
    pair_driver_roundtrip "$name.probe" || { PAIR_DRIVER_OK=0; note "NOTE $name: probe: $CKPT_WHY"; }
    kill_all "${TREE_PIDS[@]}"; wait_gone 30 "${TREE_PIDS[@]}" || true
    TREE_PIDS=()
    if ! start_pair "$name"; then
        fail "$name" "$CKPT_WHY"; kill_all "$ROOT" "${TREE_PIDS[@]}"; return
    fi
    for ((k = 1; k <= PAIR_ROUNDS; k++)); do
        rn="$name.r$k"
        random_pause
        if ! checkpoint_tree plugin "$rn" "$ROOT" "$img"; then
            fail "$name" "round $k: $CKPT_WHY"; kill_all "${TREE_PIDS[@]}"; return
        fi
        reap_dumped "$ROOT"
        locks+=("r$k:$(grep -o 'CUDA job locked: .*' "$LOGS/$rn.dump.log" | head -n1 | sed 's/^CUDA job locked: //')")
        if ! restore_tree plugin "$rn" "$img"; then
            fail "$name" "round $k: $CKPT_WHY"; kill_all "${TREE_PIDS[@]}"; return
        fi
        if [[ "${PAIR_DRIVER_OK:-}" == 0 ]]; then
            # the driver alone cannot resume this pair in place (pair-driver-only failed): what is ours to show is
            # that the whole job locked and dumped, and that criu and the driver restored it
            if ! expect_running "$rn" "${TREE_PIDS[@]}"; then
                fail "$name" "round $k: after the restore: $CKPT_WHY"; kill_all "${TREE_PIDS[@]}"; return
            fi
            note "NOTE $name: restored and RUNNING; its kernels then fail as they do after the driver's own suspend/resume in place (the probe, as pair-driver-only): the program's mapped pinned flags do not survive the driver's checkpoint, so the program's progress is not asserted"
            kill_all "${TREE_PIDS[@]}"; wait_gone 30 "${TREE_PIDS[@]}" || true; rm -rf "$img"
            pass "$name"
            note "TIME $name rounds=$k mib=$COUNTER_MIB last-dump=$T_DUMP last-restore=$T_RESTORE locks: ${locks[*]}"
            return
        fi
        if ! keeps_working "$rn"; then
            fail "$name" "round $k: $CKPT_WHY"; kill_all "${TREE_PIDS[@]}"; return
        fi
        rm -rf "$img"
    done
    stop_counter "$PLOG" "$ROOT" "${TAGS[@]}" || { fail "$name" "no clean exit after the restores"; kill_all "${TREE_PIDS[@]}"; return; }
    wait_gone 30 "${TREE_PIDS[@]}" || true
    pass "$name"
    note "TIME $name rounds=$PAIR_ROUNDS mib=$COUNTER_MIB busy-ms=$PAIR_BUSY_MS last-dump=$T_DUMP last-restore=$T_RESTORE locks: ${locks[*]}"
}

# case_pair_sequential_fails NAME: today's one-task-after-another locking (CRIU_CUDA_QUIESCE=0) on the pair: the
# parent, locked first, finishes its step (its peer is still running); the child, locked second, is inside a step
# that waits for the locked parent, so its lock runs out of time. The dump fails there, and both run on.
case_pair_sequential_fails() {
    local name="$1" img="$IMG_ROOT/$1" rc=0 line secs
    TREE_PIDS=()
    if ! start_pair "$name"; then
        fail "$name" "$CKPT_WHY"; kill_all "$ROOT" "${TREE_PIDS[@]}"; return
    fi
    mkdir -p "$img"
    CRIU_ENV=(CRIU_CUDA_QUIESCE=0)
    criu_cmd "$name" dump "$img" -t "$ROOT" --lib "$PLUGIN_DIR" --timeout "${PAIR_SEQUENTIAL_TIMEOUT_S:-5}" || rc=$?
    CRIU_ENV=()
    secs=$CRIU_SECS
    if ((rc == 0)); then
        fail "$name" "locking one task after the other succeeded: the pair did not hold each other's lock up"
        kill_all "${TREE_PIDS[@]}"; rm -rf "$img"; return
    fi
    line=$(grep -m1 -E "$LOCK_FAILED_PATTERN" "$LOGS/$name.dump.log" 2>/dev/null)
    if [[ -z "$line" ]]; then
        fail "$name" "the dump failed, but not at the lock: $(first_error "$LOGS/$name.dump.log")"
        kill_all "${TREE_PIDS[@]}"; return
    fi
    if [[ "$line" != *"pid ${TREE_PIDS[1]}:"* ]]; then
        fail "$name" "the lock that failed was not the child's (pid ${TREE_PIDS[1]}, locked second): $line"
        kill_all "${TREE_PIDS[@]}"; return
    fi
    if ! keeps_working "$name"; then
        fail "$name" "after the failed dump: $CKPT_WHY"; kill_all "${TREE_PIDS[@]}"; return
    fi
    stop_counter "$PLOG" "$ROOT" "${TAGS[@]}" || { fail "$name" "no clean exit"; kill_all "${TREE_PIDS[@]}"; return; }
    reap_dumped "$ROOT"
    rm -rf "$img"
    pass "$name"
    note "TIME $name failed-after=${secs}s $line"
}

# pair_driver_roundtrip NAME: the driver alone, no criu, on the running pair: both processes locked and checkpointed
# at once (cuda_ckpt suspend, one helper per pid), then restored and unlocked in place (resume); 0 when both then go
# on stepping and verify. Tells a driver limitation of the pair's mapped pinned flags apart from a fault of the criu
# path; sets CKPT_WHY otherwise.
pair_driver_roundtrip() {
    local name="$1" p rc=0
    local -a helpers=()
    for p in "${TREE_PIDS[@]}"; do "$BIN/cuda_ckpt" suspend --timeout-ms 10000 "$p" >>"$LOGS/$name.cuda_ckpt" 2>&1 & helpers+=($!); done
    for p in "${helpers[@]}"; do wait "$p" || rc=1; done
    helpers=()
    for p in "${TREE_PIDS[@]}"; do "$BIN/cuda_ckpt" resume "$p" >>"$LOGS/$name.cuda_ckpt" 2>&1 & helpers+=($!); done
    for p in "${helpers[@]}"; do wait "$p" || rc=1; done
    ((rc == 0)) || { CKPT_WHY="the driver's suspend/resume failed: $(grep -i -m1 error "$LOGS/$name.cuda_ckpt")"; return 1; }
    keeps_working "$name" || { CKPT_WHY="after the driver's suspend/resume in place: $CKPT_WHY"; return 1; }
}

# case_pair_driver_only NAME: pair_driver_roundtrip on its own (a diagnostic, not in the default list)
case_pair_driver_only() {
    local name="$1"
    TREE_PIDS=()
    if ! start_pair "$name"; then
        fail "$name" "$CKPT_WHY"; kill_all "$ROOT" "${TREE_PIDS[@]}"; return
    fi
    if ! pair_driver_roundtrip "$name"; then
        fail "$name" "$CKPT_WHY"; kill_all "${TREE_PIDS[@]}"; return
    fi
    stop_counter "$PLOG" "$ROOT" "${TAGS[@]}" || { fail "$name" "no clean exit"; kill_all "${TREE_PIDS[@]}"; return; }
    wait_gone 30 "${TREE_PIDS[@]}" || true
    pass "$name"
}
