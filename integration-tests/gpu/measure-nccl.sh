#!/usr/bin/env bash
# Measurements on a 2-GPU host for issues 31 A and 32 (not a pass/fail suite): what tells a job on NCCL's default
# transports apart from one on the socket transport (environment, /dev/shm files and who maps them, device files,
# NCCL's own words), who holds the port when a restore right after the dump fails with "Address already in use",
# and what holds the io_uring of a torchrun job.
# usage (repo root, GPU host): bash integration-tests/gpu/measure-nccl.sh BUNDLE_DIR OUT_DIR
# Env: MEASURE "defaults socket torchrun" (a subset), EXTRA_MIB (default 512), CYCLES (default 3)
set -uo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"
start_host_script "$@"
unpack_bundle "$bundle" || { fail setup "cannot unpack $bundle"; exit 1; }
T0=$(now_s)
EXTRA="${EXTRA_MIB:-512}"
BASE_ENV=(NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo NCCL_NVLS_ENABLE=0 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,P2P,SHM,NET)
SOCK_ENV=(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 "${BASE_ENV[@]}" ${SOCK_EXTRA:-USE_LIBUV=0})
CRIU_OPTS=(--tcp-established --ghost-limit 512M --network-lock nftables)
trap 'pkill -KILL -f ddp_train.py; pack_logs' EXIT

# snap NAME ROOT: what /proc says of every process of the tree
snap() {
    local name="$1" root="$2" out="$LOGS/$1.snap" p fd
    {
        for p in $(tree_pids "$root"); do
            echo "=== pid $p ppid $(awk '/^PPid/ {print $2}' /proc/$p/status) $(tr '\0' ' ' </proc/$p/cmdline | cut -c1-160)"
            echo "--- env"; tr '\0' '\n' </proc/$p/environ | grep -E '^(NCCL|CUDA|RANK|LOCAL_RANK|WORLD|MASTER|UV_|USE_LIBUV|TORCH)' | sort
            echo "--- maps (shm, nvidia, memfd, anon_inode, deleted, libuv, libnccl)"
            grep -E '/dev/shm|/dev/nvidia|memfd|anon_inode|deleted|libuv|libnccl|libtorch_cpu' /proc/$p/maps | awk '{print $1, $2, $5, $6, $7}' | sort -k5 | uniq -f4 -c
            echo "--- fds"
            for fd in /proc/$p/fd/*; do printf '%s -> %s\n' "${fd##*/}" "$(readlink "$fd")"; done | grep -v -E 'pipe:|/dev/null|/dev/pts' | sort -n | awk '{print}' | uniq -c -f2
            for fd in /proc/$p/fd/*; do
                [[ "$(readlink "$fd")" == *io_uring* ]] && { echo "--- fdinfo ${fd##*/} (io_uring)"; head -n 12 /proc/$p/fdinfo/${fd##*/}; }
            done
            echo "--- threads"; cat /proc/$p/task/*/comm | sort | uniq -c
        done
        echo "=== /dev/shm"; ls -li /dev/shm | grep -v criu-gpu-e2e
        echo "=== /dev/shm files and the pids mapping them"
        for p in $(tree_pids "$root"); do
            awk -v p="$p" '$6 ~ /^\/dev\/shm\// {print $5, $6, p}' /proc/$p/maps
        done | sort -u | awk '{k=$1" "$2; pids[k]=pids[k]" "$3} END {for (k in pids) print k ":" pids[k]}' | sort
        echo "=== ss"; ss -tanpoe 2>/dev/null | grep -E '127.0.0.1|State' | head -n 80
    } >"$out" 2>&1
    "$PLUGIN_DIR/bin/criu-gpu" check "$root" >"$LOGS/$name.check" 2>&1
    note "INFO $name: check exit $? ($(grep -c . "$LOGS/$name.check") lines)"
}

# start_job NAME ENV... -- ARGS: the launcher as a session leader; sets JOB (its pid), JOBLOG
start_job() {
    local name="$1"; shift
    local envs=()
    while [[ "$1" != -- ]]; do envs+=("$1"); shift; done
    shift
    JOBLOG="$LOGS/$name.job"
    : >"$JOBLOG"
    start_detached "$JOBLOG" env "${envs[@]}" python3 "$GPU_DIR/ddp_train.py" "$@"
    JOB=$STARTED_PID
}

steps_of() { grep -c "^\[rank $2\] step " "$1"; }

if [[ " ${MEASURE:-defaults socket torchrun} " == *" defaults "* ]]; then
    start_job defaults "${BASE_ENV[@]}" -- --ranks 2 --steps 1000000 --extra-mib "$EXTRA" --port 29511
    if wait_for "$JOBLOG" '^\[rank 1\] step 20 ' 180; then
        snap defaults "$JOB"
        grep -E 'via|Channel 00|P2P|SHM|transport' "$JOBLOG" | head -n 40 >"$LOGS/defaults.transports"
        note "INFO defaults: $(grep -cE ' via (P2P|SHM)' "$JOBLOG") 'via P2P/SHM' lines, $(grep -cE ' via NET' "$JOBLOG") 'via NET'"
    else
        fail defaults "no step 20: $(tail -n 3 "$JOBLOG" | tr '\n' ' ')"
    fi
    kill -KILL $(tree_pids "$JOB") 2>/dev/null; wait_gone 30 "$JOB"
fi

if [[ " ${MEASURE:-defaults socket torchrun} " == *" socket "* ]]; then
    start_job socket "${SOCK_ENV[@]}" -- --ranks 2 --steps 1000000 --extra-mib "$EXTRA" --port 29521
    if wait_for "$JOBLOG" '^\[rank 1\] step 20 ' 180; then
        snap socket "$JOB"
        note "INFO socket: $(grep -cE ' via (P2P|SHM)' "$JOBLOG") 'via P2P/SHM' lines, $(grep -cE ' via NET' "$JOBLOG") 'via NET'"
        for i in $(seq 1 "${CYCLES:-3}"); do
            img="$IMG_ROOT/socket-$i"
            mapfile -t TREE_PIDS < <(tree_pids "$JOB")
            ss -tanoe >"$LOGS/socket-$i.ss-before" 2>&1
            criu_cmd "socket-$i" dump "$img" -t "$JOB" --lib "$PLUGIN_DIR" "${CRIU_OPTS[@]}" \
                || { fail "socket-$i" "dump failed: $(grep Error "$LOGS/socket-$i.dump.log" | head -n 2 | tr '\n' ' ')"; break; }
            note "INFO socket-$i: dump ${CRIU_SECS}s"
            ss -tanoe >"$LOGS/socket-$i.ss-after-dump" 2>&1
            wait_gone 30 "${TREE_PIDS[@]}" || note "INFO socket-$i: dumped pids not gone in 30 s"
            ss -tanoe >"$LOGS/socket-$i.ss-pids-gone" 2>&1
            t0=$(now_s); ok=0
            for try in 1 2 3 4 5 6 7 8 9; do
                if criu_cmd "socket-$i-try$try" restore "$img" -d --lib "$PLUGIN_DIR" "${CRIU_OPTS[@]}"; then ok=1; break; fi
                ss -tanoe >"$LOGS/socket-$i-try$try.ss" 2>&1
                note "INFO socket-$i: restore try $try failed at $(elapsed "$t0")s: $(grep -E 'Error|Can.t' "$LOGS/socket-$i-try$try.restore.log" | grep -v RLIMIT | head -n 2 | tr '\n' ' ')"
                sleep 10
            done
            ((ok)) || { fail "socket-$i" "no restore in 9 tries"; break; }
            note "INFO socket-$i: restored after $(elapsed "$t0")s (try $try)"
            n=$(steps_of "$JOBLOG" 1)
            wait_for "$JOBLOG" '^\[rank 1\] step ' 60 $((n + 20)) || { fail "socket-$i" "no steps after restore"; break; }
        done
    else
        fail socket "no step 20: $(tail -n 3 "$JOBLOG" | tr '\n' ' ')"
    fi
    kill -KILL $(tree_pids "$JOB") 2>/dev/null; sleep 1
fi

if [[ " ${MEASURE:-defaults socket torchrun} " == *" torchrun "* ]]; then
    tdir=$(python3 -c 'import torch, os; print(os.path.dirname(torch.__file__))')
    grep -n -i 'libuv' "$tdir/distributed/run.py" "$tdir/distributed/elastic/rendezvous/"*.py "$tdir/distributed/elastic/agent/server/"*.py "$tdir/distributed/rendezvous.py" >"$LOGS/torch-libuv.grep" 2>&1
    for variant in ${TORCHRUN_VARIANTS:-plain use_libuv=False use_libuv=0}; do
        name="torchrun-${variant//[^a-zA-Z0-9]/_}"
        extra=(); [[ "$variant" != plain ]] && extra=(--rdzv-conf "$variant")
        JOBLOG="$LOGS/$name.job"; : >"$JOBLOG"
        start_detached "$JOBLOG" env "${SOCK_ENV[@]}" python3 -m torch.distributed.run --nproc-per-node 2 \
            --master-port 29531 "${extra[@]}" "$GPU_DIR/ddp_train.py" --steps 1000000 --extra-mib 256
        JOB=$STARTED_PID
        if wait_for "$JOBLOG" '^\[rank 1\] step 20 ' 180; then
            snap "$name" "$JOB"
            note "INFO $name: io_uring fds by pid: $(for p in $(tree_pids "$JOB"); do n=$(ls -l /proc/$p/fd 2>/dev/null | grep -c io_uring); ((n)) && printf '%s(%s):%s ' "$p" "$(cat /proc/$p/comm)" "$n"; done)"
            criu_cmd "$name" dump "$IMG_ROOT/$name" -t "$JOB" -R --lib "$PLUGIN_DIR" "${CRIU_OPTS[@]}"
            note "INFO $name: dump -R rc $? ${CRIU_SECS}s: $(grep -E 'Error' "$LOGS/$name.dump.log" | grep -v RLIMIT | head -n 1)"
            n=$(steps_of "$JOBLOG" 1)
            wait_for "$JOBLOG" '^\[rank 1\] step ' 30 $((n + 20)) && note "INFO $name: steps go on after dump -R" || note "INFO $name: no steps after dump -R"
        else
            fail "$name" "no step 20: $(tail -n 3 "$JOBLOG" | tr '\n' ' ')"
        fi
        kill -KILL $(tree_pids "$JOB") 2>/dev/null; sleep 2
    done
fi
note "TIME total $(elapsed "$T0")s"
