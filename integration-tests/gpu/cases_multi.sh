# Multi-GPU cases for run-multi-gpu.sh and bench-multi-gpu.sh, with our plugin and cuda_multi.cu. Source after
# lib.sh and init_results. Each case prints exactly one PASS/FAIL line and leaves no process of its own behind.
# NVLink multicast stays off (a multicast object can take a shared host's GPUs down); cuda_multi never makes one.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_DEVICE_ORDER=PCI_BUS_ID   # CUDA ordinal i = nvidia-smi index i

kill_all() { local p; for p in "$@"; do kill -KILL "$p" 2>/dev/null || true; done; }

# build_multi: cuda_ckpt and cuda_counter (lib.sh) and cuda_multi into $BIN
build_multi() {
    build_programs || return 1
    local nvcc="${NVCC:-$(command -v nvcc || ls /usr/local/cuda/bin/nvcc /usr/local/cuda-*/bin/nvcc 2>/dev/null | head -n1)}"
    "$nvcc" -O2 -o "$BIN/cuda_multi" "$GPU_DIR/cuda_multi.cu"
}

# list_gpus: GPU_UUID[i], GPU_NAME[i], NGPU from nvidia-smi (index order = PCI bus order)
list_gpus() {
    local idx uuid name
    GPU_UUID=() GPU_NAME=()
    while IFS=, read -r idx uuid name; do
        GPU_UUID[$idx]="${uuid// /}"
        GPU_NAME[$idx]="$(sed 's/^ *//' <<<"$name")"
    done < <(nvidia-smi --query-gpu=index,uuid,name --format=csv,noheader)
    NGPU=${#GPU_UUID[@]}
}

# mstart NAME TAGS ARGS...: starts cuda_multi ARGS (TAGS: space-separated, e.g. "g0 g1"); waits for every tag's
# tick 10. Sets ROOT, TAGS, PLOG.
mstart() {
    local name="$1" tag
    read -r -a TAGS <<<"$2"
    shift 2
    PLOG="$LOGS/$name.program.log"
    : >"$PLOG"
    start_detached "$PLOG" "$BIN/cuda_multi" --tick-ms 20 "$@"
    ROOT=$STARTED_PID
    for tag in "${TAGS[@]}"; do
        wait_for "$PLOG" "^\[$tag [0-9]+\] tick 10$" 180 || { CKPT_WHY="$tag never reached tick 10: $(grep -E "^\[$tag |error" "$PLOG" | tail -n1)"; return 1; }
    done
}

# field LINE KEY: the value of KEY=... in a program line
field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<"$1"; }

# ready_gpus TAG: the gpus= of TAG's ready line
ready_gpus() { field "$(grep -E "^\[$1 [0-9]+\] ready " "$PLOG" | tail -n1)" gpus; }

# smi_used PID: "GPU-uuid MiB" lines of PID's device memory, from nvidia-smi's compute-apps (the driver's view)
smi_used() {
    nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv,noheader,nounits 2>/dev/null |
        awk -F', *' -v p="$1" '$1 == p { print $2, $3 }' | sort
}

# placed NAME TAG UUIDS: where TAG's device memory is now, by nvidia-smi (the authority: after a remapping restore
# CUDA inside the process still reports the GPUs of the dump, uuid and bus id alike). UUIDS (comma-separated) are
# the GPUs the state of TAG's GPUs (in its ready line's order) must be on now: nvidia-smi lists the pid on exactly
# those, and where the dump recorded figures (NAME's dump, smi-at-dump) each holds what its old GPU held, give or
# take 256 MiB (cuda_multi --pad-step-mib makes them differ by more, so a swap shows)
placed() {
    local name="$1" tag="$2" want="$3" pid old i now got before after
    pid=$(sed -n "s/^\[$tag \([0-9]*\)\] .*/\1/p" "$PLOG" | tail -n1)
    now=$(smi_used "$pid")
    echo "$now" >"$LOGS/$name.$tag.smi-after"
    got=$(awk '{print $1}' <<<"$now" | sort | paste -sd,)
    [[ "$got" == "$(tr , '\n' <<<"$want" | sort | paste -sd,)" ]] ||
        { CKPT_WHY="$tag (pid $pid): nvidia-smi shows its memory on [$got], expected [$want] (CUDA in the process reports $(field "$(grep -E "^\[$tag [0-9]+\] verify counter=" "$PLOG" | tail -n1)" gpus))"; return 1; }
    IFS=, read -r -a old <<<"$(ready_gpus "$tag")"
    IFS=, read -r -a want <<<"$want"
    [[ -s "$LOGS/${AT_DUMP_NAME:-}.$tag.smi-at-dump" ]] || return 0
    for i in "${!old[@]}"; do
        before=$(awk -v g="${old[$i]}" '$1 == g {print $2}' "$LOGS/$AT_DUMP_NAME.$tag.smi-at-dump")
        after=$(awk -v g="${want[$i]}" '$1 == g {print $2}' <<<"$now")
        [[ -n "$before" && -n "$after" ]] || continue
        ((after - before <= 256 && before - after <= 256)) ||
            { CKPT_WHY="$tag: ${old[$i]} held $before MiB at dump, but ${want[$i]} (its target) holds $after MiB now [$(paste -sd';' <<<"$now")]"; return 1; }
    done
}

# mcheck NAME [TAG=UUIDS ...]: every tag ticks 5 more, contiguous from 1; SIGUSR1 check: bad=0, peer ok|none,
# and (where given) nvidia-smi places the tag's memory as UUIDS says (see placed); CUDA state RUNNING
mcheck() {
    local name="$1" tag last n line want got
    shift
    for tag in "${TAGS[@]}"; do
        last=$(last_tick "$PLOG" "$tag")
        wait_for "$PLOG" "^\[$tag [0-9]+\] tick $((last + 5))$" 60 || { CKPT_WHY="$tag stopped ticking after tick $last: $(grep -E "^\[$tag .*error" "$PLOG" | tail -n1) [plugin: $(plugin_restore_lines "$name")]"; return 1; }
    done
    counters_continue "$PLOG" "${TAGS[@]}" || return 1
    n=$(count_lines "$PLOG" ' verify counter=')
    kill -USR1 "$ROOT" || { CKPT_WHY="pid $ROOT is gone"; return 1; }
    wait_for "$PLOG" ' verify counter=' 120 $((n + ${#TAGS[@]})) || { CKPT_WHY="the GPU check did not answer"; return 1; }
    for tag in "${TAGS[@]}"; do
        line=$(grep -E "^\[$tag [0-9]+\] verify counter=" "$PLOG" | tail -n1)
        [[ "$(field "$line" bad)" == 0 ]] || { CKPT_WHY="$tag: memory differs from its pattern: $line"; return 1; }
        [[ "$(field "$line" peer)" =~ ^(ok|none)$ ]] || { CKPT_WHY="$tag: peer copy check failed: $line"; return 1; }
    done
    for want in "$@"; do
        placed "$name" "${want%%=*}" "${want#*=}" || return 1
    done
    # the CUDA workers only: a CPU-only parent has no CUDA state to ask about
    expect_running "$name" $(for tag in "${TAGS[@]}"; do sed -n "s/^\[$tag \([0-9]*\)\] .*/\1/p" "$PLOG" | tail -n1; done)
}

# plugin_restore_lines NAME: the plugin's restore outcome lines of NAME's restore.log (info and error forms)
plugin_restore_lines() {
    grep -oE '(cuda_plugin|\(cuda_plugin\)): .*(CUDA restore|restored|refused|cannot).*' "$LOGS/$1.restore.log" 2>/dev/null |
        head -n2 | paste -sd' '
}

# mstop: SIGTERM; every tag ends with a clean final check
mstop() {
    local tag
    kill -TERM "$ROOT" 2>/dev/null || return 1
    for tag in "${TAGS[@]}"; do
        wait_for "$PLOG" "^\[$tag [0-9]+\] exit counter=[0-9]+ bad=0 peer=(ok|none)$" 120 || return 1
    done
    wait_gone 60 "${TREE_PIDS[@]}"
}

# mdump NAME IMG: criu dump with the plugin; the program log is kept as it was at the dump (LOG_AT_DUMP) so the
# same images can be restored several times (criu checks the size of files the tasks had open)
mdump() {
    local name="$1" img="$2" tag pid
    for tag in "${TAGS[@]}"; do
        pid=$(sed -n "s/^\[$tag \([0-9]*\)\] .*/\1/p" "$PLOG" | tail -n1)
        smi_used "$pid" >"$LOGS/$name.$tag.smi-at-dump"
    done
    AT_DUMP_NAME="$name"
    checkpoint_tree plugin "$name" "$ROOT" "$img" || return 1
    reap_dumped "$ROOT"
    # the plugin's CUDA agent (a detached JVM) outlives criu dump and writes its last lines into
    # cuda-plugin-agent.log in the images dir: let it finish, so it neither races a restore nor changes the images
    # dir under a later check
    if [[ -n "$(ls "$img"/cuda-plugin-*.img 2>/dev/null)" ]] \
        && ! wait_for "$img/cuda-plugin-agent.log" 'cuda agent: (criu finished with|pid [0-9]+: (ended with|outlived))' 60; then
        note "INFO $name: the CUDA agent wrote no final line within 60 s ($(tail -n1 "$img/cuda-plugin-agent.log" 2>&1))"
    fi
    LOG_AT_DUMP="$LOGS/$name.program.at-dump"
    cp "$PLOG" "$LOG_AT_DUMP"
}

# mrestore NAME IMG [VAR=VALUE...]: the program log back to its state at the dump (the previous run's copy kept
# as NAME.program.log.N), then criu restore with the plugin and VAR=VALUE in criu's environment
RUN_NO=0
mrestore() {
    local name="$1" img="$2" kv rc=0
    shift 2
    RUN_NO=$((RUN_NO + 1))
    [[ -s "$PLOG" ]] && cp "$PLOG" "$PLOG.$RUN_NO"
    cp "$LOG_AT_DUMP" "$PLOG"
    for kv in "$@"; do export "${kv?}"; done
    restore_tree plugin "$name" "$img" || rc=1
    for kv in "$@"; do unset "${kv%%=*}"; done
    return $rc
}

# restore_checked NAME IMG EXPECT WHY_SUFFIX [VAR=VALUE...]: mrestore, mcheck NAME EXPECT, mstop. On failure one
# FAIL line (CKPT_WHY then WHY_SUFFIX), the restored tree killed, status 1; on success no line (the caller passes).
restore_checked() {
    local name="$1" img="$2" expect="$3" suffix="$4"
    shift 4
    if ! mrestore "$name" "$img" "$@"; then fail "$name" "$CKPT_WHY$suffix"
    elif ! mcheck "$name" "$expect"; then fail "$name" "$CKPT_WHY$suffix"
    elif ! mstop; then fail "$name" "no clean exit after restore"
    else return 0
    fi
    kill_all "${TREE_PIDS[@]}"
    return 1
}

# images_fingerprint IMG: names, sizes and contents of the image files (*.img: criu's and our cuda-plugin-*.img).
# Logs are left out: cuda-plugin-agent.log is written by the dump's CUDA agent after criu dump returns.
images_fingerprint() { (cd "$1" && stat -c '%n %s' -- *.img && sha256sum -- *.img) | sort; }

# ------------------------------------------------------------------ item 1
# case_tree_per_gpu NAME MIB: one CUDA process per GPU under a CPU-only parent; dump, restore, all intact
case_tree_per_gpu() {
    local name="$1" mib="$2" img="$IMG_ROOT/$1" k expect=() recs
    TREE_PIDS=()
    ((NGPU >= 1)) || { fail "$name" "no GPU"; return; }
    local tags=""; for ((k = 0; k < NGPU; k++)); do tags+="g$k "; done
    if ! mstart "$name" "$tags" --per-gpu "$NGPU" --mib "$mib"; then fail "$name" "$CKPT_WHY"; kill_all "$ROOT"; return; fi
    for ((k = 0; k < NGPU; k++)); do expect+=("g$k=${GPU_UUID[$k]}"); done
    for ((k = 0; k < NGPU; k++)); do
        [[ "$(ready_gpus "g$k")" == "${GPU_UUID[$k]}" ]] || { fail "$name" "g$k started on $(ready_gpus "g$k"), not GPU $k"; mstop; kill_all "$ROOT"; return; }
    done
    if ! mdump "$name" "$img"; then fail "$name" "$CKPT_WHY"; kill_all "${TREE_PIDS[@]}"; return; fi
    recs=$(ls "$img"/cuda-plugin-*.img 2>/dev/null | wc -l)
    ((recs == NGPU)) || { fail "$name" "$recs CUDA task records in the images, expected $NGPU"; return; }
    if ! mrestore "$name" "$img"; then fail "$name" "$CKPT_WHY"; kill_all "${TREE_PIDS[@]}"; return; fi
    if ! mcheck "$name" "${expect[@]}"; then fail "$name" "$CKPT_WHY"; kill_all "${TREE_PIDS[@]}"; return; fi
    mstop || { fail "$name" "no clean exit after restore"; kill_all "${TREE_PIDS[@]}"; return; }
    rm -rf "$img"
    pass "$name"
    note "TIME $name gpus=$NGPU mib-per-process=$mib dump=$T_DUMP restore=$T_RESTORE checkpointed:[$(grep -oE 'CUDA checkpointed in [0-9]+ ms' "$LOGS/$name.dump.log" | awk '{print $4}' | paste -sd,)] ms"
}

# ------------------------------------------------------------------ items 2 and 3 (two GPUs in one process)
# driver_round_trip NAME: the driver alone (cuda_ckpt suspend + resume in place, no criu) on $ROOT, then 5 more
# ticks: tells a driver limitation from a fault of the criu path. Sets CONTROL_WHY when it fails.
driver_round_trip() {
    local name="$1" last
    CONTROL_WHY=""
    last=$(last_tick "$PLOG" p)
    if ! helper "$name" suspend "$ROOT" || ! helper "$name" resume "$ROOT"; then
        CONTROL_WHY="$(grep -E 'failed' "$LOGS/$name.cuda_ckpt" | tail -n1)"; return 1
    fi
    wait_for "$PLOG" "^\[p [0-9]+\] tick $((last + 5))$" 60 || { CONTROL_WHY="no tick after the driver-only resume"; return 1; }
}

# case_two_gpu NAME MIB ACCESS: one process, MIB on GPU 0 and MIB+1024 on GPU 1, copies between them (ACCESS 1:
# peer access enabled, 0: staged copies); a driver-only round trip first; dump, restore in place (item 2), then
# the same images restored with the GPUs swapped (item 3)
case_two_gpu() {
    local name="$1" mib="$2" access="$3" img="$IMG_ROOT/$1" u0 u1 ready flags=(--peer --pad-step-mib 1024) ctl=""
    TREE_PIDS=()
    ((NGPU >= 2)) || { fail "$name" "needs 2 GPUs, this host has $NGPU"; fail "$name-swapped" "needs 2 GPUs"; return; }
    u0=${GPU_UUID[0]} u1=${GPU_UUID[1]}
    ((access)) || flags+=(--no-peer-access)
    if ! mstart "$name" "p" --gpus 0,1 "${flags[@]}" --mib "$mib"; then fail "$name" "$CKPT_WHY"; fail "$name-swapped" "not reached"; kill_all "$ROOT"; return; fi
    ready=$(grep -E '^\[p [0-9]+\] ready ' "$PLOG" | tail -n1)
    if [[ "$(field "$ready" peer)" != ok || "$(field "$ready" gpus)" != "$u0,$u1" || "$(field "$ready" peer-access)" != "$access" ]]; then
        fail "$name" "before the dump (want peer-access=$access): $ready"; fail "$name-swapped" "not reached"; mstop; kill_all "$ROOT"; return
    fi
    grep -E '/dev/nvidia' "/proc/$ROOT/maps" | awk '{print $6}' | sort | uniq -c >"$LOGS/$name.maps-before" 2>&1
    ls -l "/proc/$ROOT/fd" >"$LOGS/$name.fds-before" 2>&1
    if ! driver_round_trip "$name"; then
        fail "$name" "driver limitation: the driver alone cannot restore this process in place either (cuda_ckpt suspend+resume, no criu, peer-access=$access): $CONTROL_WHY"
        fail "$name-swapped" "not reached (driver limitation above)"
        kill_all "$ROOT"; wait_gone 30 "$ROOT" || true; return
    fi
    ctl=" (the driver-only round trip of the same process passed, so the criu path is at fault)"
    # without peer access the driver restores it at any size; the plugin cannot see that, so it is told (MultiGpuMemory)
    local saved_env=("${CRIU_ENV[@]}")
    ((access)) || CRIU_ENV+=(CRIU_CUDA_MULTI_GPU_CHECK=0)
    if ! mdump "$name" "$img"; then CRIU_ENV=("${saved_env[@]}"); fail "$name" "$CKPT_WHY"; fail "$name-swapped" "not reached"; kill_all "${TREE_PIDS[@]}"; return; fi
    CRIU_ENV=("${saved_env[@]}")
    if restore_checked "$name" "$img" "p=$u0,$u1" "$ctl"; then
        pass "$name"
        note "TIME $name mib-per-gpu=$mib+pad dump=$T_DUMP restore=$T_RESTORE (peer-access=$access)"
    fi
    wait_gone 30 "${TREE_PIDS[@]}" || true
    if restore_checked "$name-swapped" "$img" "p=$u1,$u0" "$ctl" "CRIU_CUDA_DEVICE_MAP=$u0=$u1,$u1=$u0"; then
        pass "$name-swapped"
        note "TIME $name-swapped restore=$T_RESTORE ($(grep -oE 'CUDA restored in [0-9]+ ms.*' "$LOGS/$name-swapped.restore.log" | head -n1))"
    fi
    rm -rf "$img"
}

# ------------------------------------------------------------------ items 3 and 4 (a process of GPU 0)
# refused NAME IMG WHY_ERE [VAR=VALUE...]: the restore must fail with a line matching WHY_ERE, create no task
# and leave the images as they were
refused() {
    local name="$1" img="$2" why="$3" before line
    shift 3
    before=$(images_fingerprint "$img")
    if mrestore "$name" "$img" "$@"; then
        fail "$name" "criu restore succeeded ($*): $(grep -oE 'cuda_plugin: .*(refused|cannot|restored).*' "$LOGS/$name.restore.log" | head -n1)"
        kill_all "${TREE_PIDS[@]}"; wait_gone 30 "${TREE_PIDS[@]}" || true; return 1
    fi
    line=$(grep -E 'CUDA restore refused' "$LOGS/$name.restore.log" | head -n1)
    if [[ -z "$line" ]] || ! grep -qE "$why" <<<"$line"; then
        fail "$name" "no 'CUDA restore refused' line matching /$why/ in restore.log: $(first_error "$LOGS/$name.restore.log")"; kill_all "${TREE_PIDS[@]}"; return 1
    fi
    local p
    for p in "${TREE_PIDS[@]}"; do
        [[ ! -e /proc/$p ]] || { fail "$name" "pid $p exists after the refused restore"; kill_all "${TREE_PIDS[@]}"; return 1; }
    done
    [[ "$(images_fingerprint "$img")" == "$before" ]] || { fail "$name" "the images changed"; return 1; }
    pass "$name"
    note "INFO $name: ${line#*Error }"
}

# case_single_moves NAME MIB: a process of GPU 0 is dumped once; its images are refused for a map onto an absent
# GPU, onto another model (record edited) and onto a GPU without room; then restored onto GPU 1 by an explicit
# map, and by the automatic policy with GPU 0 treated as absent
case_single_moves() {
    local name="$1" mib="$2" img="$IMG_ROOT/$1" u0 u1 other hog
    TREE_PIDS=()
    ((NGPU >= 2)) || { fail "$name" "needs 2 GPUs, this host has $NGPU"; return; }
    u0=${GPU_UUID[0]} u1=${GPU_UUID[1]}
    if ! mstart "$name" "p" --gpus 0 --mib "$mib"; then fail "$name" "$CKPT_WHY"; kill_all "$ROOT"; return; fi
    [[ "$(ready_gpus p)" == "$u0" ]] || { fail "$name" "started on $(ready_gpus p), not GPU 0"; mstop; kill_all "$ROOT"; return; }
    grep -E '/dev/nvidia' "/proc/$ROOT/maps" | awk '{print $6}' | sort | uniq -c >"$LOGS/$name.maps-before" 2>&1
    ls -l "/proc/$ROOT/fd" >"$LOGS/$name.fds-before" 2>&1
    if ! mdump "$name" "$img"; then fail "$name" "$CKPT_WHY"; kill_all "${TREE_PIDS[@]}"; return; fi
    pass "$name-dump"

    refused "refuse-absent-gpu" "$img" "not a usable GPU" "CRIU_CUDA_DEVICE_MAP=$u0=GPU-00000000-dead-beef-0000-000000000000"

    # another model: the record is edited (same length) to say the task's GPU was another model
    other="$IMG_ROOT/$name-other-model"
    rm -rf "$other" && mkdir -p "$other" && cp -a "$img"/. "$other"/
    if python3 - "$other" "${GPU_NAME[0]}" <<'EOF'
import glob, sys
d, model = sys.argv[1], sys.argv[2].encode()
fake = bytes(b if not chr(b).isalnum() else (ord('X') if b != ord('X') else ord('Y')) for b in model)
n = 0
for f in glob.glob(d + "/cuda-plugin-*.img"):
    data = open(f, "rb").read()
    n += data.count(model)
    open(f, "wb").write(data.replace(model, fake))
sys.exit(0 if n else 1)
EOF
    then
        refused "refuse-other-model" "$other" "same model" "CRIU_CUDA_DEVICE_MAP=$u0=$u1"
    else
        fail "refuse-other-model" "the model '${GPU_NAME[0]}' is not in the CUDA record"
    fi
    rm -rf "$other"

    # too small: a hog leaves GPU 1 less free memory than the process held
    local hlog="$LOGS/refuse-too-small.hog.log"
    start_detached "$hlog" "$BIN/cuda_multi" --gpus 1 --hog $((mib / 2))
    hog=$STARTED_PID
    if wait_for "$hlog" '^\[hog [0-9]+\] hog held=' 60; then
        refused "refuse-too-small" "$img" "too small" "CRIU_CUDA_DEVICE_MAP=$u0=$u1"
    else
        fail "refuse-too-small" "the hog could not take GPU 1's memory: $(tail -n1 "$hlog")"
    fi
    kill -TERM "$hog" 2>/dev/null; wait_gone 30 "$hog" || kill_all "$hog"

    # item 3: explicit map onto GPU 1 (after the refusals: the process restores as if they never happened)
    if restore_checked "restore-onto-gpu1" "$img" "p=$u1" "" "CRIU_CUDA_DEVICE_MAP=$u0=$u1"; then
        pass "restore-onto-gpu1"
        note "TIME restore-onto-gpu1 restore=$T_RESTORE ($(grep -oE 'CUDA restored in [0-9]+ ms.*' "$LOGS/restore-onto-gpu1.restore.log" | head -n1))"
    fi
    wait_gone 30 "${TREE_PIDS[@]}" || true

    # the automatic policy: GPU 0 treated as absent, so its task goes to the free GPU of the same model
    if restore_checked "restore-auto-absent" "$img" "p=$u1" "" "CRIU_CUDA_TREAT_ABSENT=$u0"; then
        pass "restore-auto-absent"
        note "TIME restore-auto-absent restore=$T_RESTORE ($(grep -oE 'GPU map for restore.*' "$LOGS/restore-auto-absent.restore.log" | head -n1))"
    fi
    rm -rf "$img"
}
