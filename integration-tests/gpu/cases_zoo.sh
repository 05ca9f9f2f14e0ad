# The feature zoo (issue 41): one CUDA feature per program (cuda_zoo.py FEATURE, jax_zoo.py, torch_zoo.py), each
# through a driver-only round trip in place, `criu dump -R` and a dump + restore right after with our plugins.
# Every case must end one of two ways: the results after -R and after the restore equal the uninterrupted run's
# (every tick "ok"), or the dump is refused with the task running. "Dump ok, restore failed" (LOST) and a process
# that runs on with wrong results (BROKEN) fail the case. Source it after lib.sh and cases_multi.sh (kill_all).

# ZOO_ALL_CASES entries: NAME:GPUS:PROGRAM ARGS (GPUS = how many GPUs it is shown: CUDA_VISIBLE_DEVICES from
# ZOO_FIRST_GPU (default 0) on, or "all": every GPU of the host, as JAX uses by default)
ZOO_ALL_CASES=(
    "jax-2gpu:2:jax_zoo.py"
    "jax-all-gpus:all:jax_zoo.py"
    "jax-all-gpus-collective:all:jax_zoo.py --collective"
    "jax-2gpu-collective:2:jax_zoo.py --collective"
    "jax-2gpu-collective-manual:2:jax_zoo.py --collective"
    "jax-1gpu:1:jax_zoo.py"
    "jax-2gpu-manual:2:jax_zoo.py"
    "peer:2:cuda_zoo.py peer"
    "peer-enabled-unused:2:cuda_zoo.py peer-enabled-unused"
    "vmm-peer-access:2:cuda_zoo.py vmm-peer-access"
    "peer-after-alloc:2:cuda_zoo.py peer-after-alloc"
    "peer-after-alloc-kernel:2:cuda_zoo.py peer-after-alloc-kernel"
    "pinned-portable-2gpu:2:cuda_zoo.py pinned-portable-2gpu"
    "two-gpus:2:cuda_zoo.py two-gpus"
    "torch-2gpu:2:torch_zoo.py"
    "torch-1gpu:1:torch_zoo.py"
    "vmm:1:cuda_zoo.py vmm"
    "vmm-fd:1:cuda_zoo.py vmm-fd"
    "pinned:1:cuda_zoo.py pinned"
    "host-registered:1:cuda_zoo.py host-registered"
    "host-registered-shared:1:cuda_zoo.py host-registered-shared"
    "async-pool:1:cuda_zoo.py async-pool"
    "async-pool-fd:1:cuda_zoo.py async-pool-fd"
    "managed:1:cuda_zoo.py managed"
    "idle:1:cuda_zoo.py idle"
    "kernel:1:cuda_zoo.py kernel"
    "ipc-pair:1:cuda_zoo.py ipc-pair"
    "vmm-fd-pair:1:cuda_zoo.py vmm-fd-pair"
    "graph-mem-nodes:1:cuda_zoo.py graph-mem-nodes"
    "green-context:1:cuda_zoo.py green-context"
)

# zoo_start NAME GPUS PROGRAM ARGS...: starts it, waits for tick 5 ok; sets ROOT, PLOG. Status 1 (ZOO_WHY) when
# it never got there.
zoo_start() {
    local name="$1" gpus="$2" prog="$3" visible=() first="${ZOO_FIRST_GPU:-0}"
    shift 3
    PLOG="$LOGS/$name.program.log"
    : >"$PLOG"
    if [[ "$gpus" == all ]]; then visible=(-u CUDA_VISIBLE_DEVICES)   # what the program finds on a plain host
    else visible=(CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES="$(seq -s, "$first" $((first + gpus - 1)))"); fi
    start_detached "$PLOG" env "${visible[@]}" XLA_PYTHON_CLIENT_PREALLOCATE=false python3 "$GPU_DIR/$prog" "$@"
    ROOT=$STARTED_PID
    wait_for "$PLOG" '^\[z [0-9]+\] (tick 5 ok|error|.*BAD)' 240 || { ZOO_WHY="no tick 5 within 240 s: $(tail -n1 "$PLOG")"; return 1; }
    grep -qE '^\[z [0-9]+\] tick 5 ok' "$PLOG" || { ZOO_WHY="$(grep -E 'error|BAD' "$PLOG" | head -n1)"; return 1; }
}

# zoo_goes_on: 3 more ticks, all ok, after now (bounded); ZOO_WHY when not
zoo_goes_on() {
    local n
    n=$(count_lines "$PLOG" '^\[z [0-9]+\] tick [0-9]+ ')
    if ! wait_for "$PLOG" '^\[z [0-9]+\] tick [0-9]+ ' 60 $((n + 3)); then
        ZOO_WHY="no new ticks: $(tail -n1 "$PLOG")"; return 1
    fi
    if grep -qE '^\[z [0-9]+\] (tick [0-9]+ BAD|error)' "$PLOG"; then ZOO_WHY="$(grep -E 'BAD|error' "$PLOG" | head -n1)"; return 1; fi
}

# zoo_refusal NAME ACTION: the plugin's one-line reason in NAME's ACTION log, else criu's first error
zoo_refusal() {
    local log="$LOGS/$1.$2.log" line
    line=$(grep -E 'Error \(cuda_plugin\)|cuda_plugin: .*refus' "$log" 2>/dev/null | head -n1)
    [[ -n "$line" ]] || line=$(grep -E 'Error' "$log" 2>/dev/null | grep -v RLIMIT_NOFILE | head -n1)
    cut -c1-300 <<<"$line"
}

# case_zoo NAME GPUS PROGRAM ARGS...: the round trip, -R, dump + restore; one ZOO line; PASS unless LOST/BROKEN or
# a refusal that left the task stopped. NAME ending in -manual: cuda_ckpt + plain criu (no plugin), for comparison.
case_zoo() {
    local name="$1" gpus="$2" mode=plugin img="$IMG_ROOT/$1" driver dumpr restore bad=""
    shift 2
    [[ "$name" == *-manual ]] && mode=manual
    TREE_PIDS=()
    if [[ "$gpus" != all ]] && ((${ZOO_FIRST_GPU:-0} + gpus > NGPU)); then fail "zoo-$name" "needs $gpus GPUs, this host has $NGPU"; return; fi
    if ! zoo_start "$name" "$gpus" "$@"; then
        note "ZOO $name setup-failed: $ZOO_WHY"; fail "zoo-$name" "the program did not start: $ZOO_WHY"; kill_all "$ROOT"; return
    fi
    local p cuda=()
    for p in $(tree_pids "$ROOT"); do
        # what each task maps and holds of the driver's files, to look for what tells a task that imported another
        # one's memory (ipc-pair, vmm-fd-pair) from one with memory of its own
        { echo "== pid $p $(tr '\0' ' ' <"/proc/$p/cmdline" | cut -c1-120)"; grep -E '/dev/nvidia' "/proc/$p/maps"; } >>"$LOGS/$name.maps" 2>&1
        { echo "== pid $p"; ls -l "/proc/$p/fd"; } >>"$LOGS/$name.fds" 2>&1
        ls -l "/proc/$p/fd" 2>/dev/null | grep -q '/dev/nvidia' && cuda+=("$p")
    done
    # the driver alone, in place, on every task of the tree that holds the driver's files, one after the other in
    # tree order (parents first): tells a driver limitation from a fault of the criu path
    if helper "$name" suspend --timeout-ms 10000 "${cuda[@]}" && helper "$name" resume "${cuda[@]}" && zoo_goes_on; then driver=ok
    else
        driver="fails($(grep -E 'failed' "$LOGS/$name.cuda_ckpt" | tail -n1 | cut -c1-120)${ZOO_WHY:+; $ZOO_WHY})"
        kill_all "$ROOT"; wait_gone 30 "$ROOT" || true
        zoo_start "$name" "$gpus" "$@" || { note "ZOO $name driver=$driver restart-failed: $ZOO_WHY"; fail "zoo-$name" "restart: $ZOO_WHY"; kill_all "$ROOT"; return; }
    fi
    # -R
    ZOO_WHY=""
    if checkpoint_tree "$mode" "$name-R" "$ROOT" "$img-R" -R; then
        if [[ "$mode" == manual ]]; then helper "$name" resume "$ROOT" || ZOO_WHY="cuda_ckpt resume: $(tail -n1 "$LOGS/$name.cuda_ckpt")"; fi
        if [[ -z "$ZOO_WHY" ]] && zoo_goes_on; then dumpr=ok; else dumpr="BROKEN($ZOO_WHY)"; bad+=" -R went on wrong"; fi
    elif { [[ "$mode" != manual ]] || helper "$name" resume "$ROOT"; } && pid_alive "$ROOT" \
        && [[ "$(state_of "$name" "$ROOT")" == RUNNING ]] && zoo_goes_on; then
        dumpr="refused($(zoo_refusal "$name-R" dump))"
    else
        dumpr="BROKEN(dump -R failed and the task is not running on: $(zoo_refusal "$name-R" dump))"; bad+=" -R left it stopped"
    fi
    rm -rf "$img-R"
    # dump + restore right after
    ZOO_WHY=""
    if [[ "$dumpr" == BROKEN* ]]; then restore="not tried"
    elif checkpoint_tree "$mode" "$name" "$ROOT" "$img"; then
        reap_dumped "$ROOT"
        cp "$PLOG" "$LOGS/$name.program.at-dump"
        if restore_tree "$mode" "$name" "$img" && zoo_goes_on; then restore=ok
        else restore="LOST(${CKPT_WHY:-}${ZOO_WHY:+ $ZOO_WHY})"; bad+=" dump ok, restore failed"
        fi
    elif { [[ "$mode" != manual ]] || helper "$name" resume "$ROOT"; } && pid_alive "$ROOT" && zoo_goes_on; then restore="refused($(zoo_refusal "$name" dump))"
    else restore="BROKEN(dump failed, task not running on)"; bad+=" dump left it stopped"
    fi
    note "ZOO $name gpus=$gpus driver_in_place=$driver dump_R=$dumpr dump_restore=$restore"
    mapfile -t TREE_PIDS < <(tree_pids "$ROOT" 2>/dev/null)
    kill -TERM "$ROOT" 2>/dev/null
    wait_for "$PLOG" '^\[z [0-9]+\] exit ' 20 || true
    kill_all "$ROOT"; wait_gone 30 "$ROOT" || true
    rm -rf "$img"
    if [[ -n "$bad" ]]; then fail "zoo-$name" "${bad# }"; else pass "zoo-$name"; fi
}
