#!/usr/bin/env bash
# What /proc and nvidia-smi show of the zoo's process pairs (issue 41: looking for what tells a task that imported
# another's GPU memory from one with memory of its own), beside single-process cases for comparison. No criu, no
# checkpoint: each program is started, recorded once it ticks, and ended.
# usage (repo root, on the GPU host): bash integration-tests/gpu/pair-records.sh OUT_DIR   (env: FEATURES)
set -u
out="$1"; mkdir -p "$out"
here="$(cd "$(dirname "$0")" && pwd)"
for f in ${FEATURES:-ipc-pair vmm-fd-pair vmm-fd two-gpus}; do
    log="$out/$f.program.log" rec="$out/$f.records"
    setsid python3 "$here/cuda_zoo.py" "$f" >"$log" 2>&1 </dev/null &
    root=$!
    for _ in $(seq 1 600); do grep -qE '^\[z [0-9]+\] (tick 5|error)' "$log" && break; sleep 0.1; done
    pids="$root $(pgrep -P "$root" | tr '\n' ' ')"
    {
        echo "### $f root=$root pids=$pids"
        nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader
        for p in $pids; do
            echo "== pid $p $(tr '\0' ' ' </proc/$p/cmdline | cut -c1-100)"
            echo "-- maps (nvidia, memfd, deleted, shm)"; grep -E 'nvidia|memfd|deleted|/dev/shm|anon_inode' /proc/$p/maps
            echo "-- maps counts"; awk '{print $6}' /proc/$p/maps | sort | uniq -c | sort -rn | head -12
            echo "-- fds"; ls -l /proc/$p/fd | awk '{print $9, $10, $11}'
            for fd in /proc/$p/fd/*; do
                t=$(readlink "$fd"); [[ "$t" == /dev/nvidia* || "$t" == anon_inode* ]] || continue
                echo "-- fdinfo ${fd##*/} $t"; cat /proc/$p/fdinfo/${fd##*/}
            done
            echo "-- status"; grep -E 'VmRSS|VmPin|VmLck|RssShmem|RssFile|Threads' /proc/$p/status
        done
    } >"$rec" 2>&1
    kill -TERM -- "-$root" 2>/dev/null; sleep 1; kill -KILL -- "-$root" 2>/dev/null
done
