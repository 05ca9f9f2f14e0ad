# The podman cases of run-podman.sh: a counter container (cuda_counter on the GPU; a shell loop that prints the
# same lines with PODMAN_CPU_ONLY=1) checkpointed and restored by podman, whose runc runs the bundle's criu with
# the plugins of criu's default directory. Source after lib.sh, cases.sh and podman_lib.sh. Each case prints one
# PASS/FAIL line and removes its container.
# Set by run-podman.sh: CPU_ONLY (0/1), COUNTER_ARGS (the counter's arguments), GPU_ARGS (how the GPU is given).

PLUGIN_LOADED_RE='Plugin "cuda_plugin" \(version [0-9]+ hooks [0-9]+\)'
if [[ "${CPU_ONLY:-0}" == 1 ]]; then
    DUMP_PLUGIN_RE='cuda_plugin: disabled: no NVIDIA GPU'
    RESTORE_PLUGIN_RE='cuda_plugin: disabled: the image holds no CUDA state'
else
    DUMP_PLUGIN_RE="${E2E_CHECKPOINTED_PATTERN:-CUDA checkpointed}"
    RESTORE_PLUGIN_RE="${E2E_RESTORED_PATTERN:-CUDA restored}"
fi

# container_pid NAME: ROOT = the host pid of the container's first process; TREE_PIDS the pids whose CUDA state
# keeps_working asks the driver about (none without a GPU)
container_pid() {
    ROOT="$(pm inspect -f '{{.State.Pid}}' "$1" 2>/dev/null)"
    [[ "$ROOT" =~ ^[1-9][0-9]*$ ]] || { CKPT_WHY="podman inspect gives no pid for $1 ('$ROOT')"; return 1; }
    TREE_PIDS=()
    [[ "${CPU_ONLY:-0}" == 1 ]] || TREE_PIDS=("$ROOT")
}

# start_container NAME: the counter in a detached container, its output in a host folder bind-mounted at /out
# (PLOG, which survives checkpoint, rm and restore); waits until it ticked 10
start_container() {
    local name="$1" out="$LOGS/$1.out"
    mkdir -p "$out"
    PLOG="$out/program.log"
    : >"$PLOG"
    TAGS=(p)
    if ! pm run -d --name "$name" "${GPU_ARGS[@]}" -v "$out:/out" --annotation "org.criu.config=$PODMAN_STATE/criu-runc.conf" "$PODMAN_IMAGE" \
            /usr/bin/sh -c "exec /usr/bin/counter ${COUNTER_ARGS[*]} >>/out/program.log 2>&1" >"$LOGS/$name.run.out" 2>&1; then
        CKPT_WHY="podman run failed: $(tail -n1 "$LOGS/$name.run.out")"; return 1
    fi
    wait_for "$PLOG" '^\[p [0-9]+\] tick 10$' 120 || { CKPT_WHY="the container's counter never reached tick 10"; return 1; }
    container_pid "$name"
}

# remove_container NAME: gone, whatever state it is in
remove_container() {
    pm rm --force --time 0 "$1" >>"$LOGS/$1.rm.out" 2>&1 || true
}

# stop_container NAME: SIGTERM to the counter, which checks its memory and prints "exit ... bad=0"; then removed
stop_container() {
    local rc=0
    stop_counter "$PLOG" "$ROOT" p || rc=1
    remove_container "$1"
    return $rc
}

# podman_checkpoint NAME ARGS...: podman container checkpoint ARGS NAME; criu's dump.log (podman keeps it in the
# container's userdata dir with --keep, and after a failure) copied to LOGS/NAME.dump.log; sets USERDATA, T_DUMP
podman_checkpoint() {
    local name="$1" rc=0 t0
    shift
    USERDATA="$(pm inspect -f '{{.StaticDir}}' "$name")"
    rm -f "$LOGS/$name.dump.log"
    t0=$(now_s)
    pm container checkpoint "$@" "$name" >"$LOGS/$name.checkpoint.out" 2>&1 || rc=$?
    T_DUMP=$(elapsed "$t0")
    cp "$USERDATA/dump.log" "$LOGS/$name.dump.log" 2>/dev/null || true
    return $rc
}

# podman_restore NAME ARGS...: podman container restore ARGS (NAME itself is passed unless ARGS has --import);
# restore.log copied to LOGS/NAME.restore.log; sets T_RESTORE and ROOT (the restored pid)
podman_restore() {
    local name="$1" rc=0 t0
    shift
    local -a target=("$name")
    [[ " $* " == *" --import "* ]] && target=()
    t0=$(now_s)
    pm container restore "$@" "${target[@]}" >"$LOGS/$name.restore.out" 2>&1 || rc=$?
    T_RESTORE=$(elapsed "$t0")
    USERDATA="$(pm inspect -f '{{.StaticDir}}' "$name" 2>/dev/null)"
    [[ -n "$USERDATA" ]] && cp "$USERDATA/restore.log" "$LOGS/$name.restore.log" 2>/dev/null
    ((rc == 0)) || { CKPT_WHY="podman container restore failed: $(podman_error "$name" restore)"; return $rc; }
    container_pid "$name"
}

# podman_error NAME ACTION: criu's first error line in ACTION's log, else the last line podman printed
podman_error() {
    local e
    e="$(first_error "$LOGS/$1.$2.log")"
    [[ -n "$e" ]] || e="$(tail -n1 "$LOGS/$1.$2.out" 2>/dev/null)"
    [[ "$2" == dump ]] && [[ -z "$e" ]] && e="$(tail -n1 "$LOGS/$1.checkpoint.out" 2>/dev/null)"
    echo "$e"
}

# log_has NAME ACTION ERE WHAT: the line is in criu's ACTION log, else CKPT_WHY names what is missing
log_has() {
    grep -qE -- "$3" "$LOGS/$1.$2.log" 2>/dev/null && return 0
    CKPT_WHY="$2.log has no $4 line (/$3/)"
    return 1
}

# checkpointed_with_plugins NAME: the dump ran our plugins and, on a GPU, saved CUDA state the image requires
checkpointed_with_plugins() {
    local name="$1" state inv
    state="$(pm inspect -f '{{.State.Status}}' "$name")"
    [[ "$state" == exited ]] || { CKPT_WHY="container is '$state' after the checkpoint, not exited"; return 1; }
    log_has "$name" dump "$PLUGIN_LOADED_RE" "plugin-loaded" || return 1
    log_has "$name" dump "$DUMP_PLUGIN_RE" "CUDA plugin" || return 1
    [[ "${CPU_ONLY:-0}" == 1 || ! -f "$USERDATA/checkpoint/inventory.img" ]] && return 0
    inv=$(python3 "$GPU_DIR/inventory_plugins.py" "$USERDATA/checkpoint/inventory.img" 2>&1)
    [[ "$inv" == *cuda_plugin* ]] || { CKPT_WHY="inventory.img does not list cuda_plugin ($inv)"; return 1; }
}

# restored_and_working NAME AT_DUMP: the restore ran our plugins, the counter goes on from AT_DUMP without a
# gap, the memory pattern verifies (on the GPU), the CUDA state is RUNNING
restored_and_working() {
    local name="$1" at_dump="$2" state
    log_has "$name" restore "$PLUGIN_LOADED_RE" "plugin-loaded" || return 1
    log_has "$name" restore "$RESTORE_PLUGIN_RE" "CUDA plugin" || return 1
    state="$(pm inspect -f '{{.State.Status}}' "$name")"
    [[ "$state" == running ]] || { CKPT_WHY="container is '$state' after the restore"; return 1; }
    keeps_working "$name" || return 1
    (($(last_tick "$PLOG" p) > at_dump)) || { CKPT_WHY="no tick after the dump's $at_dump"; return 1; }
}

# checkpoint_restore_in_place NAME: podman container checkpoint --keep, then podman container restore in place, the
# counter going on; sets AT_DUMP, T_DUMP, T_RESTORE, or CKPT_WHY and returns 1
checkpoint_restore_in_place() {
    local name="$1"
    podman_checkpoint "$name" --keep || { CKPT_WHY="podman container checkpoint failed: $(podman_error "$name" dump)"; return 1; }
    AT_DUMP=$(last_tick "$PLOG" p)
    checkpointed_with_plugins "$name" || return 1
    podman_restore "$name" --keep && restored_and_working "$name" "$AT_DUMP"
}

# case_podman_checkpoint NAME: one checkpoint --keep and restore in place
case_podman_checkpoint() {
    local name="$1"
    if ! start_container "$name"; then fail "$name" "$CKPT_WHY"; remove_container "$name"; return; fi
    if ! checkpoint_restore_in_place "$name"; then fail "$name" "$CKPT_WHY"; remove_container "$name"; return; fi
    stop_container "$name" || { fail "$name" "no clean exit after the restore"; return; }
    pass "$name"
    note "TIME $name checkpoint=$T_DUMP restore=$T_RESTORE tick-at-dump=$AT_DUMP"
}

# case_podman_export NAME: checkpoint --export to an archive, podman rm, restore --import from the archive
case_podman_export() {
    local name="$1" archive="$IMG_ROOT/$1.tar.zst" at_dump
    if ! start_container "$name"; then fail "$name" "$CKPT_WHY"; remove_container "$name"; return; fi
    if ! podman_checkpoint "$name" --keep --export "$archive"; then
        fail "$name" "podman container checkpoint --export failed: $(podman_error "$name" dump)"; remove_container "$name"; return
    fi
    at_dump=$(last_tick "$PLOG" p)
    if ! checkpointed_with_plugins "$name"; then fail "$name" "$CKPT_WHY"; remove_container "$name"; return; fi
    remove_container "$name"
    if pm container exists "$name"; then fail "$name" "the container still exists after podman rm"; remove_container "$name"; return; fi
    if ! podman_restore "$name" --keep --import "$archive" || ! restored_and_working "$name" "$at_dump"; then
        fail "$name" "$CKPT_WHY"; remove_container "$name"; return
    fi
    local size
    size=$(du -m "$archive" | cut -f1)
    rm -f "$archive"
    stop_container "$name" || { fail "$name" "no clean exit after the restore from the archive"; return; }
    pass "$name"
    note "TIME $name checkpoint+export=$T_DUMP import+restore=$T_RESTORE archive=${size}MiB tick-at-dump=$at_dump"
}

# case_podman_no_plugins NAME: criu's default plugin dir gone. On the GPU the checkpoint must fail with criu's
# error and leave the container running; without a GPU nothing needs the plugins, so the checkpoint
# (--leave-running) must succeed with no plugin loaded. Either way the counter keeps going in the same process.
case_podman_no_plugins() {
    local name="$1" rc=0 before err state
    if ! start_container "$name"; then fail "$name" "$CKPT_WHY"; remove_container "$name"; return; fi
    before="$ROOT"
    plugins_absent
    if [[ "${CPU_ONLY:-0}" == 1 ]]; then
        podman_checkpoint "$name" --keep --leave-running || rc=$?
    else
        podman_checkpoint "$name" --keep || rc=$?
    fi
    plugins_present
    err=""
    ((rc == 0)) || err="$(podman_error "$name" dump)"
    if grep -qE -- "$PLUGIN_LOADED_RE" "$LOGS/$name.dump.log" 2>/dev/null; then
        fail "$name" "criu loaded cuda_plugin although $CRIU_PLUGIN_DEFAULT was moved away"; remove_container "$name"; return
    fi
    if [[ "${CPU_ONLY:-0}" == 1 ]] && ((rc != 0)); then
        fail "$name" "checkpoint of a CPU container without plugins failed: $err"; remove_container "$name"; return
    fi
    if [[ "${CPU_ONLY:-0}" != 1 ]] && ((rc == 0)); then
        fail "$name" "podman checkpointed a CUDA container without the plugins"; remove_container "$name"; return
    fi
    state="$(pm inspect -f '{{.State.Status}}' "$name")"
    if [[ "$state" != running ]]; then
        fail "$name" "container is '$state' after the checkpoint without plugins (criu: $err)"; remove_container "$name"; return
    fi
    if ! container_pid "$name" || [[ "$ROOT" != "$before" ]]; then
        fail "$name" "the container's process changed ($before -> $ROOT)"; remove_container "$name"; return
    fi
    if ! keeps_working "$name"; then fail "$name" "$CKPT_WHY (criu: $err)"; remove_container "$name"; return; fi
    stop_container "$name" || { fail "$name" "no clean exit"; return; }
    pass "$name"
    note "TIME $name checkpoint=$T_DUMP rc=$rc criu: ${err:-no error}"
}

# case_podman_rounds NAME: the same container checkpointed (--keep) and restored in place PODMAN_ROUNDS times in a
# row (default 20), the counter going on each time. A container's restore is a namespace restore: the restore that
# hung when criu's JVM ran while criu cloned the first task (DESIGN rule 1); a hang ends in PODMAN_CMD_TIMEOUT. Each
# restore.log must say that criu cloned its first task single-threaded.
case_podman_rounds() {
    local name="$1" rounds="${PODMAN_ROUNDS:-20}" i dumps=() restores=()
    if ! start_container "$name"; then fail "$name" "$CKPT_WHY"; remove_container "$name"; return; fi
    for ((i = 1; i <= rounds; i++)); do
        if ! checkpoint_restore_in_place "$name" \
                || ! log_has "$name" restore "criu cloned the restore's first task single-threaded" "fork-safety"; then
            fail "$name" "round $i: $CKPT_WHY"; remove_container "$name"; return
        fi
        cp "$LOGS/$name.restore.log" "$LOGS/$name.restore.$i.log" 2>/dev/null
        dumps+=("$T_DUMP"); restores+=("$T_RESTORE")
    done
    stop_container "$name" || { fail "$name" "no clean exit after $rounds rounds"; return; }
    pass "$name"
    note "TIME $name rounds=$rounds checkpoint=${dumps[*]} restore=${restores[*]}"
}
