# Shared functions of the GPU host scripts (run-e2e.sh, run-multi-gpu.sh, bench-cuda.sh, bench-multi-gpu.sh,
# validate-manual.sh). Source it.
# Everything waits with bounded polls: a wait that runs out returns non-zero, never hangs.

E2E_ROOT=/var/tmp/criu-gpu-e2e   # where the bundle is unpacked; build-bundle.sh assembles it at the same path
GPU_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# ------------------------------------------------------------------ folders at fixed paths
# These scripts run as root, and criu, containerd and runc load binaries and libraries from fixed paths under
# /var/tmp (the bundles' RPATHs and AOT cache name them) or /dev/shm, where any local user may make a path first,
# put a symlink there, or plant files.
# safe_dir DIR: 0 when DIR is a directory (not a symlink), ours and writable by nobody else; else says why (stderr)
safe_dir() {
    local st
    st=$(stat -c '%F:%u:%a' -- "$1" 2>/dev/null) || { echo "$1 does not exist" >&2; return 1; }
    [[ "${st%%:*}" == directory ]] || { echo "refusing $1: a ${st%%:*}, not a directory" >&2; return 1; }
    st=${st#*:}
    [[ "${st%%:*}" == "$EUID" ]] && (((8#${st#*:} & 8#022) == 0)) \
        || { echo "refusing $1: uid ${st%%:*}'s, mode ${st#*:}; it must be uid $EUID's and writable by it only (remove it)" >&2; return 1; }
}

# private_dir [--fresh] DIR: DIR, mode 0700, for us only: made with mkdir -m 0700 (which fails where anyone made the
# path first), or one already there that passes safe_dir, set to 0700; --fresh: that one emptied (removed, made
# again). Never follows a symlink at DIR; DIR's parent must exist.
private_dir() {
    local fresh=0
    [[ "$1" == --fresh ]] && { fresh=1; shift; }
    if [[ -e "$1" || -L "$1" ]]; then
        safe_dir "$1" || return 1
        ((fresh)) || { chmod 0700 -- "$1"; return; }
        rm -rf -- "$1"
    fi
    mkdir -m 0700 -- "$1" || { echo "cannot make $1" >&2; return 1; }
}

# unpack_bundle BUNDLE_DIR: unpacks it at E2E_ROOT, then bundle_paths
unpack_bundle() {
    local bundle="$1" part
    [[ -f "$bundle/criu.tar.xz" && -f "$bundle/jdk.tar.xz" ]] || { echo "no criu.tar.xz/jdk.tar.xz in $bundle" >&2; return 1; }
    private_dir --fresh "$E2E_ROOT" || return 1
    mkdir "$E2E_ROOT/empty-lib" "$E2E_ROOT/bin"
    for part in criu jdk criu-lib criu-lib-base upstream; do
        [[ -f "$bundle/$part.tar.xz" ]] && tar -C "$E2E_ROOT" -xJf "$bundle/$part.tar.xz"
    done
    bundle_paths
}

# bundle_paths: sets CRIU, JDK, PLUGIN_DIR (empty when the bundle has none), EMPTY_LIB, BIN of the bundle unpacked
bundle_paths() {
    CRIU="$E2E_ROOT/criu/criu"
    JDK="$E2E_ROOT/jdk"
    PLUGIN_DIR=""
    [[ -f "$E2E_ROOT/criu-lib/cuda_plugin.so" ]] && PLUGIN_DIR="$E2E_ROOT/criu-lib"
    BASE_PLUGIN_DIR=""   # the plugin dir of another commit, for side-by-side benchmarks (build-bundle.sh)
    [[ -f "$E2E_ROOT/criu-lib-base/cuda_plugin.so" ]] && BASE_PLUGIN_DIR="$E2E_ROOT/criu-lib-base"
    EMPTY_LIB="$E2E_ROOT/empty-lib"
    BIN="$E2E_ROOT/bin"
    # upstream's plugin dir (its cuda_plugin.so only) and NVIDIA's cuda-checkpoint, when the bundle carries them
    UPSTREAM_LIB=""
    [[ -f "$E2E_ROOT/upstream/lib/cuda_plugin.so" ]] && UPSTREAM_LIB="$E2E_ROOT/upstream/lib"
    UPSTREAM_BIN="$E2E_ROOT/upstream/bin"
    export CRIU JDK PLUGIN_DIR BASE_PLUGIN_DIR EMPTY_LIB BIN UPSTREAM_LIB UPSTREAM_BIN
}

# build_programs: compiles the test programs into $BIN with the host's nvcc
build_programs() {
    local nvcc="${NVCC:-$(command -v nvcc || ls /usr/local/cuda/bin/nvcc /usr/local/cuda-*/bin/nvcc 2>/dev/null | head -n1)}"
    [[ -x "$nvcc" ]] || { echo "nvcc not found (set NVCC)" >&2; return 1; }
    "$nvcc" --version | tail -n2
    "$nvcc" -O2 -o "$BIN/cuda_counter" "$GPU_DIR/cuda_counter.cu" || return 1
    # plain C, but nvcc knows where cuda.h is; libcuda is dlopen()ed
    "$nvcc" -O2 -o "$BIN/cuda_ckpt" "$GPU_DIR/cuda_ckpt.c" -ldl || return 1
}

# aot_cache_usable PLUGIN_DIR: 0 when the JVM maps the plugin dir's AOT cache with criu's JVM options
aot_cache_usable() {
    local dir="$1" cfg="$1/java/criu-gpu.cfg" home cp
    local -a opts
    [[ -f "$dir/java/criu-gpu.aot" ]] || return 1
    home="${CRIU_GPU_JAVA_HOME:-$(sed -n 's/^java.home=//p' "$cfg" | head -n1)}"
    case "$home" in /*) ;; *) home="$dir/java/$home" ;; esac
    cp=$(sed -n 's/^class.path=//p' "$cfg" | sed "s|^\([^/]\)|$dir/java/\1|" | paste -sd:)
    mapfile -t opts < <(sed -n 's/^option=//p' "$cfg" | sed "s|@JAVA_DIR@|$dir/java|g" | grep -v '^-Xlog:')
    "$home/bin/java" "${opts[@]}" -XX:AOTMode=on -cp "$cp" -version >/dev/null 2>&1
}

now_s() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now_s)" 'BEGIN { printf "%.2f", b - a }'; }

# wait_for FILE ERE TIMEOUT_S [COUNT]: until FILE has COUNT (default 1) lines matching ERE
wait_for() {
    local file="$1" re="$2" timeout="$3" count="${4:-1}" deadline
    deadline=$(($(date +%s%N) + timeout * 1000000000))
    while (($(date +%s%N) < deadline)); do
        local n
        n=$(grep -cE -- "$re" "$file" 2>/dev/null)   # nothing while the file does not exist yet
        ((${n:-0} >= count)) && return 0
        sleep 0.05
    done
    return 1
}

# sigblk PID TID: the thread's blocked signals (SigBlk of its /proc status), or "unknown"
sigblk() {
    local v
    v=$(awk '/^SigBlk:/ {print $2}' "/proc/$1/task/$2/status" 2>/dev/null)
    echo "${v:-unknown}"
}

# mask_back PID TID SIGBLK SECONDS: waits until the thread's blocked signals are SIGBLK again
mask_back() {
    local deadline=$(($(date +%s) + $4))
    while (($(date +%s) < deadline)); do
        [[ "$(sigblk "$1" "$2")" == "$3" ]] && return 0
        sleep 0.1
    done
    return 1
}

# count_lines FILE ERE
count_lines() { grep -cE -- "$2" "$1" 2>/dev/null || true; }

# pid_alive PID: exists and is not a zombie
pid_alive() {
    local state
    state="$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" || return 1
    [[ -n "$state" && "$state" != Z && "$state" != X ]]
}

# wait_gone TIMEOUT_S PID...: until no PID exists at all (zombies reaped), so criu can restore them
wait_gone() {
    local timeout="$1" deadline pid left
    shift
    deadline=$(($(date +%s%N) + timeout * 1000000000))
    while (($(date +%s%N) < deadline)); do
        left=0
        for pid in "$@"; do [[ -e "/proc/$pid" ]] && left=1; done
        ((left)) || return 0
        wait -n 2>/dev/null || sleep 0.05   # reaps our own children (we run as a subreaper)
    done
    return 1
}

# tree_pids ROOT: ROOT and its descendants
tree_pids() {
    local pid="$1" child
    echo "$pid"
    for child in $(cat /proc/"$pid"/task/*/children 2>/dev/null); do tree_pids "$child"; done
}

# ticks FILE TAG: the counter values printed by cuda_counter's process TAG, in order
ticks() { sed -n "s/^\[$2 [0-9]*\] tick \([0-9]*\)$/\1/p" "$1"; }

# ticks_contiguous FILE TAG: 0 when TAG's ticks run 1,2,3,... without a gap or reset; prints the last
ticks_contiguous() {
    ticks "$1" "$2" | awk 'NR != $1 { printf "tick %d at line %d\n", $1, NR; bad = 1; exit 1 } { last = $1 }
        END { if (!bad) print last; exit (NR == 0 || bad) }'
}

# last_tick FILE TAG
last_tick() { ticks "$1" "$2" | tail -n1; }

# start_detached LOG CMD...: starts CMD in its own session, stdin /dev/null, stdout+stderr appended to LOG;
# sets STARTED_PID
start_detached() {
    local log="$1"
    shift
    setsid "$@" </dev/null >>"$log" 2>&1 &
    STARTED_PID=$!
}

# ------------------------------------------------------------------ results
# init_results OUT_DIR: LOGS (per-case logs), SUMMARY; results go to stdout and SUMMARY
# start_host_script ARGS...: the start shared by the host scripts that take BUNDLE_DIR OUT_DIR. Re-executes the
# calling script under reaper.py unless it runs there already (criu reparents restored tasks to the nearest
# subreaper), checks the arguments, sets bundle (resolved) and the results folder (init_results OUT_DIR).
start_host_script() {
    local script
    script="$(readlink -f "${BASH_SOURCE[1]}")"
    if [[ -z "${E2E_UNDER_REAPER:-}" ]]; then
        export E2E_UNDER_REAPER=1
        exec python3 "$GPU_DIR/reaper.py" bash "$script" "$@"
    fi
    [[ $# -eq 2 ]] || { echo "usage: ${script##*/} BUNDLE_DIR OUT_DIR" >&2; exit 2; }
    bundle="$(readlink -f "$1")"
    mkdir -p "$2"
    init_results "$(readlink -f "$2")"
}

init_results() {
    OUT_DIR="$1"
    LOGS="$OUT_DIR/logs"
    SUMMARY="$OUT_DIR/summary.txt"
    IMG_ROOT="${E2E_IMG_ROOT:-/dev/shm/criu-gpu-e2e}"   # run-e2e-parallel.sh gives each shard its own
    mkdir -p "$LOGS"
    private_dir --fresh "$IMG_ROOT" || exit 1
    : >"$SUMMARY"
    FAILED=0
}
pass() { echo "PASS $1" | tee -a "$SUMMARY"; }
fail() { echo "FAIL $1: $2" | tee -a "$SUMMARY"; FAILED=1; }
note() { echo "$*" | tee -a "$SUMMARY"; }
# pack_logs: one archive of the logs folder beside summary.txt (the device tool returns few files)
pack_logs() { tar -C "$OUT_DIR" -czf "$OUT_DIR/logs.tar.gz" logs && rm -rf "$LOGS"; }
# pack_logs_lean: the same as logs.tar.xz, criu's -v4 lines of every page it moved left out of the logs (half their
# size; a 4-rank run's full logs are over the 16 MiB the device tool returns): what is left still times each phase
pack_logs_lean() {
    local f
    for f in "$LOGS"/*.log; do
        [[ -f "$f" ]] && grep -qE '^\([0-9.]+\) (page-pipe|pagemap-cache|page-xfer):' "$f" \
            && { grep -vE '^\([0-9.]+\) +(page-pipe|pagemap-cache|page-xfer):' "$f" >"$f.lean"; mv "$f.lean" "$f"; }
    done
    tar -C "$OUT_DIR" -cJf "$OUT_DIR/logs.tar.xz" logs && rm -rf "$LOGS"
}

# ------------------------------------------------------------------ criu
# criu_cmd NAME ACTION IMG [ARGS...]: criu ACTION -D IMG, log at $LOGS/NAME.ACTION.log, output at .out;
# sets CRIU_SECS (wall time). CRIU_ENV (an array of VAR=VALUE) is criu's extra environment.
CRIU_ENV=()
CRIU_PREFIX=()   # a command criu runs under, such as in_fresh_netns
# A criu that runs longer than E2E_STUCK_S (default 60) gets $LOGS/NAME.ACTION.stuck: stuck_snapshot of then.
criu_cmd() {
    local name="$1" action="$2" img="$3" t0 rc=0 watch
    shift 3
    mkdir -p "$img"
    t0=$(now_s)
    { sleep "${E2E_STUCK_S:-60}" && stuck_snapshot >"$LOGS/$name.$action.stuck" 2>&1; } </dev/null >/dev/null 2>&1 &
    watch=$!
    "${CRIU_PREFIX[@]}" env "${CRIU_ENV[@]}" timeout -k 10 "${CRIU_CMD_TIMEOUT:-180}" "$CRIU" "$action" -D "$img" -o "$LOGS/$name.$action.log" -v4 "$@" \
        >"$LOGS/$name.$action.out" 2>&1 || rc=$?
    CRIU_SECS=$(elapsed "$t0")
    pkill -P "$watch" -x sleep 2>/dev/null
    kill "$watch" 2>/dev/null
    return $rc
}

# stuck_snapshot: every thread of every criu, java (the CUDA agent) and TREE_PIDS task with its state, wait channel
# and kernel stack, then nvidia-smi: where a dump that does not end waits
stuck_snapshot() {
    local p t
    date
    for p in /proc/[0-9]*; do
        p=${p#/proc/}
        case "$(cat "/proc/$p/comm" 2>/dev/null)" in
            criu|java|timeout) ;;
            *) [[ " ${TREE_PIDS[*]:-} ${ROOT:-} " == *" $p "* ]] || continue ;;
        esac
        for t in /proc/"$p"/task/*; do
            echo "== pid $p tid ${t##*/} $(cat "$t/comm" 2>/dev/null) $(awk '/^State/ {print $2}' "$t/status" 2>/dev/null) wchan=$(cat "$t/wchan" 2>/dev/null)"
            cat "$t/stack" 2>/dev/null
        done
    done
    nvidia-smi 2>&1
}

# helper NAME ARGS...: cuda_ckpt ARGS, output appended to $LOGS/NAME.cuda_ckpt; sets HELPER_SECS
helper() {
    local name="$1" t0 rc=0
    shift
    t0=$(now_s)
    "$BIN/cuda_ckpt" "$@" >>"$LOGS/$name.cuda_ckpt" 2>&1 || rc=$?
    HELPER_SECS=$(elapsed "$t0")
    return $rc
}

# state_of NAME PID: prints the CUDA process state (RUNNING, LOCKED, ...) or "unknown"
state_of() {
    "$BIN/cuda_ckpt" state "$2" 2>&1 | tee -a "$LOGS/$1.cuda_ckpt" | awk '/ state pid=/ {print $4; found=1} END {if (!found) print "unknown"}'
}

# checkpoint_tree MODE NAME ROOT IMG [criu dump args]: plugin = criu dump --lib PLUGIN_DIR; manual = cuda_ckpt
# suspend of every pid of the tree, then plain criu dump. Sets TREE_PIDS, T_SUSPEND, T_DUMP.
checkpoint_tree() {
    local mode="$1" name="$2" root="$3" img="$4"
    shift 4
    mapfile -t TREE_PIDS < <(tree_pids "$root")
    T_SUSPEND=0
    mkdir -p "$img"
    if [[ "$mode" == manual ]]; then
        helper "$name" suspend "${TREE_PIDS[@]}" || { CKPT_WHY="cuda_ckpt suspend failed"; return 1; }
        T_SUSPEND=$HELPER_SECS
        criu_cmd "$name" dump "$img" -t "$root" --lib "$EMPTY_LIB" "$@" || { CKPT_WHY="criu dump failed"; T_DUMP=$CRIU_SECS; return 1; }
    else
        criu_cmd "$name" dump "$img" -t "$root" --lib "$PLUGIN_DIR" "$@" || { CKPT_WHY="criu dump failed: $(grep -E Error "$LOGS/$name.dump.log" | grep -v RLIMIT_NOFILE | head -n1)"; T_DUMP=$CRIU_SECS; return 1; }
    fi
    T_DUMP=$CRIU_SECS
}

# restore_tree MODE NAME IMG: criu restore -d (plugin: --lib PLUGIN_DIR; manual: then cuda_ckpt resume of
# TREE_PIDS). Waits (bounded) until the dumped pids are free first. Sets T_RESTORE, T_RESUME.
restore_tree() {
    local mode="$1" name="$2" img="$3"
    T_RESUME=0
    wait_gone 30 "${TREE_PIDS[@]}" || { CKPT_WHY="dumped pids still exist: ${TREE_PIDS[*]}"; return 1; }
    if [[ "$mode" == manual ]]; then
        criu_cmd "$name" restore "$img" -d --lib "$EMPTY_LIB" || { CKPT_WHY="criu restore failed"; return 1; }
        T_RESTORE=$CRIU_SECS
        helper "$name" resume "${TREE_PIDS[@]}" || { CKPT_WHY="cuda_ckpt resume failed"; return 1; }
        T_RESUME=$HELPER_SECS
    else
        criu_cmd "$name" restore "$img" -d --lib "$PLUGIN_DIR" || { CKPT_WHY="criu restore failed: $(grep -E Error "$LOGS/$name.restore.log" | grep -v RLIMIT_NOFILE | head -n1)"; return 1; }
        T_RESTORE=$CRIU_SECS
    fi
}

# reap_dumped PID...: the dumped (killed) tasks we started ourselves: collect them
reap_dumped() { local p; for p in "$@"; do wait "$p" 2>/dev/null || true; done; }

# stop_counter LOG ROOT TAGS...: SIGTERM, wait for every tag's "exit ... bad=0"; 0 when all ended clean
stop_counter() {
    local log="$1" root="$2" tag
    shift 2
    kill -TERM "$root" 2>/dev/null || return 1
    for tag in "$@"; do
        wait_for "$log" "^\[$tag [0-9]+\] exit counter=[0-9]+ bad=0$" 60 || return 1
    done
}

# verify_counter LOG ROOT TAGS...: SIGUSR1, then every tag must print a new "verify ... bad=0"
verify_counter() {
    local log="$1" root="$2" tag n
    shift 2
    n=$(count_lines "$log" ' verify counter=')
    kill -USR1 "$root" || return 1
    wait_for "$log" ' verify counter=' 60 $((n + $#)) || return 1
    for tag in "$@"; do
        [[ "$(grep -E "^\[$tag [0-9]+\] verify counter=" "$log" | tail -n1)" == *" bad=0" ]] || return 1
    done
}

# counter_case_check LOG TAGS...: each tag's ticks contiguous from 1 and past BEFORE_TICK[tag]+3
counters_continue() {
    local log="$1" tag last
    shift
    for tag in "$@"; do
        last=$(ticks_contiguous "$log" "$tag") || { CKPT_WHY="$tag: counter not contiguous ($last)"; return 1; }
    done
}

# warm_memory: BENCH_WARM_GIB (default 0) GiB of /dev/shm written and removed before a benchmark: on the VM hosts the
# first touch of guest memory is slow, and whichever case first meets untouched memory pays for it
warm_memory() {
    local gib="${BENCH_WARM_GIB:-0}" t0 f
    ((gib > 0)) || return 0
    t0=$(now_s)
    f=$(mktemp /dev/shm/bench-warm.XXXXXX)
    dd if=/dev/zero of="$f" bs=1M count=$((gib * 1024)) status=none
    rm -f "$f"
    # let the kernel finish with that memory now (writeback, freeing, compaction) rather than during a flow's page
    # dump: the first cycle of a run was measured 25-60 % slower in criu's page dump, whichever flow it was
    sync
    echo 3 >/proc/sys/vm/drop_caches 2>/dev/null
    echo 1 >/proc/sys/vm/compact_memory 2>/dev/null
    note "WARM ${gib} GiB of /dev/shm written and removed, caches dropped and memory compacted in $(elapsed "$t0") s"
}
