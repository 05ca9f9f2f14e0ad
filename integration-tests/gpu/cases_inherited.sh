# Tasks that inherited /dev/nvidia* descriptors and mappings through fork() without CUDA state of their own
# (issue 17): PyTorch DataLoader workers, and a C child that tries CUDA after the restore. Source after lib.sh,
# cases.sh and init_results. One PASS/FAIL line per case.

# case_torch_workers NAME ARGS...: the training loop with a fork()ed DataLoader (ARGS: --workers W [--persistent]),
# dumped mid-run and restored: it finishes with the losses of an uninterrupted run with the same ARGS, and its
# workers were dumped and restored with it
case_torch_workers() {
    local name="$1" img="$IMG_ROOT/$1" log="$LOGS/$1.program.log" ref="$LOGS/$1.reference.log" at_dump workers
    shift
    local -a args=(--steps 40 --pace-ms 50 --epoch-steps 7 "$@")
    TREE_PIDS=()
    if ! timeout -k 5 240 python3 "$GPU_DIR/torch_train.py" "${args[@]}" >"$ref" 2>&1 || ! grep -q "^done steps=40$" "$ref"; then
        fail "$name" "the uninterrupted reference run failed: $(tail -n2 "$ref")"; return
    fi
    start_detached "$log" env PYTHONUNBUFFERED=1 python3 "$GPU_DIR/torch_train.py" "${args[@]}"
    ROOT=$STARTED_PID
    if ! wait_for "$log" '^step 15 ' 180; then
        fail "$name" "training never reached step 15"; kill_all "$ROOT"; return
    fi
    workers=$(( $(tree_pids "$ROOT" | wc -l) - 1 ))
    if ((workers < 1)); then
        fail "$name" "no DataLoader worker under pid $ROOT at the dump"; kill_all "$ROOT"; return
    fi
    if ! checkpoint_workers "$name" "$log" "$img"; then
        fail "$name" "$CKPT_WHY"; kill_all "${TREE_PIDS[@]}"; return
    fi
    reap_dumped "$ROOT"
    at_dump=$(count_lines "$log" '^step ')
    if ! restore_tree plugin "$name" "$img"; then
        fail "$name" "$CKPT_WHY"; kill_all "${TREE_PIDS[@]}"; return
    fi
    if ! wait_for "$log" '^done steps=40$' 180; then
        fail "$name" "restored training did not finish: $(tail -n2 "$log")"; kill_all "${TREE_PIDS[@]}"; return
    fi
    if ((at_dump >= 40)); then
        fail "$name" "all steps ran before the dump: nothing was checked"; return
    fi
    if ! diff <(grep '^step ' "$ref") <(grep '^step ' "$log") >"$LOGS/$name.diff"; then
        fail "$name" "losses differ from the uninterrupted run (see $name.diff)"; return
    fi
    wait_gone 30 "${TREE_PIDS[@]}" || true
    rm -rf "$img"
    pass "$name"
    note "TIME $name workers-at-dump=$workers steps-before-dump=$at_dump dump=$T_DUMP restore=$T_RESTORE $(grep -o '[0-9]* inherited /dev/nvidia[^)]*' "$LOGS/$name.restore.log" | head -n1)"
}

# checkpoint_workers NAME LOG IMG: checkpoint_tree of ROOT, tried up to 3 times when criu refuses the tree because a
# worker was caught half-exited ("Zombies with threads are not supported": non-persistent workers end every epoch,
# and criu 4.2.1 reads a task's threads once, whichever plugin is loaded). A refused dump must leave the training
# running: the next try starts only after a new step appeared in LOG.
checkpoint_workers() {
    local name="$1" log="$2" img="$3" try steps
    for try in 1 2 3; do
        checkpoint_tree plugin "$name" "$ROOT" "$img" && return 0
        grep -q 'Zombies with threads are not supported' "$LOGS/$name.dump.log" || return 1
        mv "$LOGS/$name.dump.log" "$LOGS/$name.dump-refused-$try.log"
        steps=$(count_lines "$log" '^step ')
        if ! wait_for "$log" '^step ' 60 $((steps + 1)); then
            CKPT_WHY="criu refused a half-exited worker (try $try) and the training did not go on after it"; return 1
        fi
        note "NOTE $name: criu refused a worker caught exiting (try $try); the training went on; dumping again"
        rm -rf "$img"
    done
    CKPT_WHY="criu refused a half-exited worker in 3 tries"
    return 1
}

# case_late_child NAME: a CUDA process forks a child after initialising CUDA; both are dumped and restored; the
# parent's counter continues and its memory verifies, and the child, asked to call CUDA after the restore, answers
# with CUDA's error instead of crashing
case_late_child() {
    local name="$1" img="$IMG_ROOT/$1" child answer
    TREE_PIDS=()
    if ! start_counter "$name" 0 --tick-ms 20 --late-child 1; then
        fail "$name" "$CKPT_WHY"; kill_all "$ROOT"; return
    fi
    wait_for "$PLOG" '^\[lc1 [0-9]+\] waiting$' 30 || { fail "$name" "the late child never started"; kill_all "$ROOT"; return; }
    child=$(sed -n 's/^\[lc1 \([0-9]*\)\] waiting$/\1/p' "$PLOG" | head -n1)
    if ! checkpoint_tree plugin "$name" "$ROOT" "$img"; then
        fail "$name" "$CKPT_WHY"; kill_all "${TREE_PIDS[@]}"; return
    fi
    reap_dumped "$ROOT"
    if ! restore_tree plugin "$name" "$img"; then
        fail "$name" "$CKPT_WHY"; kill_all "${TREE_PIDS[@]}"; return
    fi
    TREE_PIDS=("$ROOT")   # the child has no CUDA state: keeps_working asks the driver about the parent only
    if ! keeps_working "$name"; then
        fail "$name" "$CKPT_WHY"; kill_all "$ROOT" "$child"; return
    fi
    answer=$(grep -E "^\[lc1 $child\] cuda after fork: " "$PLOG" | tail -n1)
    if [[ -z "$answer" ]] || ! pid_alive "$child"; then
        fail "$name" "the forked child did not answer its CUDA call after the restore (alive: $(pid_alive "$child" && echo yes || echo no))"
        kill_all "$ROOT" "$child"; return
    fi
    stop_counter "$PLOG" "$ROOT" p || { fail "$name" "no clean exit after restore"; kill_all "$ROOT" "$child"; return; }
    wait_gone 30 "$ROOT" "$child" || true
    rm -rf "$img"
    pass "$name"
    note "TIME $name ${answer#*] } (restore log: $(grep -o '[0-9]* inherited /dev/nvidia[^)]*' "$LOGS/$name.restore.log" | head -n1))"
}

# case_own_nvidia_file NAME: a CUDA process that holds /dev/nvidiactl open outside CUDA (fd 9, opened before it
# started, as a launcher or NVML can leave one): the driver's checkpoint does not close that file, so it is no
# inherited reference and a /dev/null stand-in would hide a device the task uses. The dump is refused with our line
# naming /dev/nvidiactl beside criu's error, and the process goes on running on the GPU
case_own_nvidia_file() {
    local name="$1" img="$IMG_ROOT/$1" why
    TREE_PIDS=()
    PLOG="$LOGS/$name.program.log"
    TAGS=(p)
    start_detached "$PLOG" bash -c 'exec 9</dev/nvidiactl; exec "$0" "$@"' "$BIN/cuda_counter" --mib "$COUNTER_MIB" --tick-ms 20
    ROOT=$STARTED_PID
    TREE_PIDS=("$ROOT")
    wait_for "$PLOG" '^\[p [0-9]+\] tick 10$' 120 || { fail "$name" "p never reached tick 10"; kill_all "$ROOT"; return; }
    if criu_cmd "$name" dump "$img" -t "$ROOT" --lib "$PLUGIN_DIR"; then
        fail "$name" "criu dump succeeded: the process's own /dev/nvidiactl was taken for an inherited one"; kill_all "$ROOT"; return
    fi
    why=$(grep -m1 -o '/dev/nvidiactl: an NVIDIA device, not taken as inherited: .*' "$LOGS/$name.dump.log")
    if [[ -z "$why" ]]; then
        fail "$name" "the dump failed without our line naming /dev/nvidiactl: $(first_error "$LOGS/$name.dump.log")"; kill_all "$ROOT"; return
    fi
    if ! await_running "$name" 30 "$ROOT" || ! keeps_working "$name"; then
        fail "$name" "after the refused dump: $CKPT_WHY"; kill_all "$ROOT"; return
    fi
    stop_counter "$PLOG" "$ROOT" p || { fail "$name" "no clean exit"; kill_all "$ROOT"; return; }
    reap_dumped "$ROOT"
    rm -rf "$img"
    pass "$name"
    note "TIME $name refused in ${CRIU_SECS}s: $why"
}
