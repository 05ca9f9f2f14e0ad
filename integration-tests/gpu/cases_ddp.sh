# Multi-rank NCCL job cases (issues 31 A and 32), sourced by run-multi-rank.sh after lib.sh.
# The job is ddp_train.py: a plain launcher and RANKS ranks, back-to-back steps, EXTRA_MIB of device memory each.

# Socket transport: the settings measured to dump and restore. USE_LIBUV=0 keeps rank 0's TCPStore server off
# libuv, whose io_uring criu 4.2.1 cannot dump.
SOCKET_ENV=(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo NCCL_NVLS_ENABLE=0 USE_LIBUV=0)
# NCCL's defaults otherwise (P2P over NVLink): what issue 31 A froze.
DEFAULTS_ENV=(NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo NCCL_NVLS_ENABLE=0 USE_LIBUV=0)
JOB_CRIU_OPTS=(--tcp-established --ghost-limit 512M --network-lock nftables)
# what socket-rounds dumps and restores with: criu-gpu check's options for the live job (check_options), verbatim
DUMP_OPTS=("${JOB_CRIU_OPTS[@]}")
RESTORE_OPTS=("${JOB_CRIU_OPTS[@]}")

# check_options NAME: criu-gpu check on the live job; DUMP_OPTS and RESTORE_OPTS become the options its summary
# line names ("options: criu dump -t PID OPTS, criu restore OPTS"); 1 when it names none
check_options() {
    local name="$1" line
    # criu's ELF on PATH, as where users installed it (check reads its libraries for libnftables; the bundle's criu
    # is a shell script that runs criu.bin with sid's loader)
    local on_path="$E2E_ROOT/criu-on-path"
    mkdir -p "$on_path" && ln -sf "$(dirname "$CRIU")/criu.bin" "$on_path/criu"
    PATH="$on_path:$PATH" "$PLUGIN_DIR/bin/criu-gpu" check "$JOB" >"$LOGS/$name.check" 2>&1
    line=$(grep -m1 '^summary:.*options: criu dump -t' "$LOGS/$name.check") || return 1
    read -r -a DUMP_OPTS <<<"$(sed -n 's/.*options: criu dump -t [0-9]*\(.*\), criu restore.*/\1/p; t; s/.*options: criu dump -t [0-9]*\(.*\)$/\1/p' <<<"$line")"
    read -r -a RESTORE_OPTS <<<"$(sed -n 's/.*, criu restore\(.*\)$/\1/p' <<<"$line")"
    note "INFO $name: criu-gpu check's options: dump ${DUMP_OPTS[*]}; restore ${RESTORE_OPTS[*]}"
}

# ddp_start NAME PORT STEPS ENV...: the job in its own session; sets JOB (the launcher) and JOBLOG. The launcher is
# ddp_train.py itself (a plain launcher), or with LAUNCHER=torchrun torchrun started by `criu-gpu run --` (io_uring
# unavailable: criu 4.2.1 cannot dump the io_uring of torchrun's elastic agent), as the README tells users to
LAUNCHER=plain
ddp_start() {
    local name="$1" port="$2" steps="$3" launch
    shift 3
    JOBLOG="$LOGS/$name.job"
    : >"$JOBLOG"
    launch=(python3 "$GPU_DIR/ddp_train.py" --ranks "$RANKS")
    [[ "$LAUNCHER" == torchrun ]] && launch=("$PLUGIN_DIR/bin/criu-gpu" run -- python3 -m torch.distributed.run \
        --nproc-per-node "$RANKS" --master-port "$port" "$GPU_DIR/ddp_train.py")
    start_detached "$JOBLOG" env "$@" "${launch[@]}" --steps "$steps" \
        --extra-mib "$EXTRA_MIB" --port "$port" ${DDP_ARGS[@]+"${DDP_ARGS[@]}"}
    JOB=$STARTED_PID
}

# steps_of LOG RANK: how many steps RANK printed
steps_of() { grep -c "^\[rank $2\] step " "$1"; }

# ranks_step LOG N TIMEOUT: until every rank printed step N
ranks_step() {
    local r
    for ((r = 0; r < RANKS; r++)); do wait_for "$1" "^\[rank $r\] step $2 " "$3" || return 1; done
}

# ranks_advance LOG TIMEOUT: until every rank printed 5 more steps than now
ranks_advance() {
    local r n
    for ((r = 0; r < RANKS; r++)); do
        n=$(steps_of "$1" "$r")
        wait_for "$1" "^\[rank $r\] step " "$2" $((n + 5)) || return 1
    done
}

# rank_pids ROOT: the ranks (children of the launcher), one a line
rank_pids() { cat /proc/"$1"/task/*/children 2>/dev/null | tr ' ' '\n' | grep .; }

# losses_upto LOG N: "rank step loss" lines of steps 0..N, sorted, for comparison with the reference run
losses_upto() {
    sed -n 's/^\[rank \([0-9]*\)\] step \([0-9]*\) loss \(.*\)$/\1 \2 \3/p' "$1" | awk -v n="$2" '$2 <= n' | sort -k1,1n -k2,2n -u
}

# listen_timewait IMG_LOG: for each TCP_LISTEN port criu dumped, the TIME_WAIT entries on it now (/proc/net/tcp*)
listen_timewait() {
    local port hex n
    for port in $(sed -n 's/.*Collected:.*port *\([0-9]*\) state TCP_LISTEN.*/\1/p' "$1" | sort -u); do
        hex=$(printf '%04X' "$port")
        n=$(awk -v p=":$hex" '$2 ~ p"$" && $4 == "06"' /proc/net/tcp /proc/net/tcp6 | wc -l)
        ((n)) && printf 'port %s: %s TIME_WAIT; ' "$port" "$n"
    done
}

# case_defaults_refused NAME: the job on NCCL's defaults; criu dump -R is refused before any lock, the ranks train on
case_defaults_refused() {
    local name="$1" r pid st
    ddp_start "$name" 29611 100000000 "${DEFAULTS_ENV[@]}"
    ranks_step "$JOBLOG" 20 240 || { fail "$name" "the job never reached step 20: $(tail -n2 "$JOBLOG" | tr '\n' ' ')"; return; }
    if criu_cmd "$name" dump "$IMG_ROOT/$name" -t "$JOB" -R --lib "$PLUGIN_DIR" "${JOB_CRIU_OPTS[@]}"; then
        fail "$name" "criu dump succeeded on NCCL's default transports"
    elif ! grep -q "NCCL_P2P_DISABLE=1 is not set in their environment" "$LOGS/$name.dump.log"; then
        fail "$name" "the dump failed without naming the setting: $(grep -E 'Error' "$LOGS/$name.dump.log" | grep -v RLIMIT | head -n1)"
    elif grep -qE 'CUDA job locked|CUDA locked in|lock attempt' "$LOGS/$name.dump.log"; then
        fail "$name" "a lock was taken before the refusal"
    elif ! ranks_advance "$JOBLOG" 3; then
        fail "$name" "the ranks did not step on within 3 s after the refused dump"
    else
        for pid in $(rank_pids "$JOB"); do
            st=$(state_of "$name" "$pid")
            [[ "$st" == RUNNING ]] || { fail "$name" "pid $pid is $st after the refused dump"; kill_job; return; }
        done
        pass "$name"
        note "INFO $name: $(grep -m1 -o 'NCCL ranks .*transport' "$LOGS/$name.dump.log") (refused in ${CRIU_SECS}s)"
    fi
    kill_job
}

kill_job() {
    kill -KILL $(tree_pids "$JOB") 2>/dev/null
    wait_gone 30 $(tree_pids "$JOB") 2>/dev/null
}

# gpu_uuid INDEX
gpu_uuid() { nvidia-smi --query-gpu=uuid --format=csv,noheader -i "$1"; }

# gpu_of PID: the uuid of the GPU PID computes on (nvidia-smi), empty if none
gpu_of() { nvidia-smi --query-compute-apps=pid,gpu_uuid --format=csv,noheader | awk -F', ' -v p="$1" '$1 == p {print $2; exit}'; }

# rank_pid LOG R: the pid rank R printed at start
rank_pid() { sed -n "s/^\[rank $2\] ready pid=\([0-9]*\) .*/\1/p" "$1" | head -n1; }

# in_fresh_netns CMD...: CMD in a new network namespace with only loopback up, as on a host the job never ran on
in_fresh_netns() {
    unshare -n python3 -c 'import fcntl, os, socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
fcntl.ioctl(s, 0x8914, struct.pack("16sH22x", b"lo", 0x1 | 0x8 | 0x40))  # SIOCSIFFLAGS: UP LOOPBACK RUNNING
os.execvp(sys.argv[1], sys.argv[1:])' "$@"
}

# restore_cycles NAME: RESTORES times (default 5): dump the job (not -R), restore it as soon as its pids are gone,
# onto its GPUs rotated by one (CRIU_CUDA_DEVICE_MAP), the job steps on; every first try must succeed. With
# ANOTHER_HOST=1 and twice the job's GPUs on the host, one more cycle restores as on another host: in a fresh
# network namespace, the job's GPUs treated as absent (automatic mapping onto the others). Clears ok on failure.
restore_cycles() {
    local name="$1" cycles="${RESTORES:-5}" c r t0 try img map first_ok=0 u=() absent="" want on
    for ((r = 0; r < RANKS; r++)); do u+=("$(gpu_uuid "$r")"); done
    map=$(for ((r = 0; r < RANKS; r++)); do printf '%s=%s,' "${u[r]}" "${u[(r + 1) % RANKS]}"; done)
    map=${map%,}
    local total=$cycles another=0
    if [[ "${ANOTHER_HOST:-0}" == 1 ]] && ((NGPU >= 2 * RANKS)); then another=1; total=$((cycles + 1)); fi
    for ((c = 1; c <= total && ok; c++)); do
        img="$IMG_ROOT/$name-c$c"
        mapfile -t TREE_PIDS < <(tree_pids "$JOB")
        if ! criu_cmd "$name-c$c" dump "$img" -t "$JOB" --lib "$PLUGIN_DIR" "${DUMP_OPTS[@]}"; then
            fail "$name" "dump $c failed: $(grep -E 'Error' "$LOGS/$name-c$c.dump.log" | grep -v RLIMIT | head -n1)"; ok=0; break
        fi
        t0=$(now_s)
        note "INFO $name: dump $c in ${CRIU_SECS}s; on its listen ports now: $(listen_timewait "$LOGS/$name-c$c.dump.log")"
        wait_gone 30 "${TREE_PIDS[@]}" || note "INFO $name: dumped pids not gone in 30 s"
        local prefix=() kind="rotated GPUs"
        if ((another && c == total)); then
            absent=$(IFS=,; echo "${u[*]}")
            CRIU_ENV=(CRIU_CUDA_TREAT_ABSENT="$absent"); prefix=(in_fresh_netns); kind="another host"
        else
            CRIU_ENV=(CRIU_CUDA_DEVICE_MAP="$map")
        fi
        for try in 1 2 3 4 5 6 7 8; do
            note "INFO $name: restore $c try $try starts $(elapsed "$t0")s after the dump"
            CRIU_PREFIX=("${prefix[@]}")
            criu_cmd "$name-c$c-try$try" restore "$img" -d --lib "$PLUGIN_DIR" "${RESTORE_OPTS[@]}" && break
            note "INFO $name: restore $c try $try failed: $(grep -E 'Error' "$LOGS/$name-c$c-try$try.restore.log" | grep -v RLIMIT | head -n1)"
            sleep 10
        done
        CRIU_ENV=(); CRIU_PREFIX=()
        ((try > 8)) && { fail "$name" "restore $c failed 8 times"; ok=0; break; }
        if ((try == 1)); then first_ok=$((first_ok + 1)); else fail "$name-restore-right-after" "restore $c ($kind) failed, try $try worked at $(elapsed "$t0")s"; fi
        note "INFO $name: restore $c ($kind) in ${CRIU_SECS}s $(grep -h -o 'port [0-9]*: removed .*' "$LOGS/$name-c$c-try1.restore.log" | sort -u | head -n 2 | tr '\n' ' ')"
        rm -rf "$img"
        ranks_advance "$JOBLOG" 60 || { fail "$name" "no steps after restore $c"; ok=0; break; }
        for ((r = 0; r < RANKS; r++)); do
            on=$(gpu_of "$(rank_pid "$JOBLOG" "$r")")
            if ((another && c == total)); then
                [[ -n "$on" && ",$absent," != *",$on,"* ]] || { fail "$name-another-host" "rank $r runs on '$on', one of the GPUs treated as absent"; ok=0; }
            else
                want=${u[(r + c) % RANKS]}
                [[ "$on" == "$want" ]] || { fail "$name-rotated-gpus" "after restore $c rank $r runs on '$on', not $want"; ok=0; }
            fi
        done
    done
    note "INFO $name: $first_ok of $total restores right after the dump worked at the first try"
    ((ok && first_ok == total)) && pass "$name-restore-right-after"
    ((ok)) && pass "$name-rotated-gpus"
    ((ok && another)) && pass "$name-another-host"
}

# dump_r_round NAME I CRIU_OPTS...: at a random moment 0.5-3.5 s from now, criu dump -R of JOB (logs NAME-RI); the
# ranks must step on after it; 1 (after a FAIL line) when either fails
dump_r_round() {
    local name="$1" i="$2"
    shift 2
    sleep "$(awk -v s="$RANDOM" 'BEGIN { srand(s); printf "%.2f", 0.5 + rand() * 3 }')"   # a random moment
    if ! criu_cmd "$name-R$i" dump "$IMG_ROOT/$name-R$i" -t "$JOB" -R --lib "$PLUGIN_DIR" "$@"; then
        fail "$name" "dump -R $i failed: $(grep -E 'Error' "$LOGS/$name-R$i.dump.log" | grep -v RLIMIT | head -n1)"; return 1
    fi
    note "INFO $name: dump -R $i in ${CRIU_SECS}s ($(grep -m1 -o -E 'CUDA job locked: .*|CUDA locked in [0-9]+ ms' "$LOGS/$name-R$i.dump.log"))"
    rm -rf "$IMG_ROOT/$name-R$i"
    ranks_advance "$JOBLOG" 30 || { fail "$name" "no steps after dump -R $i"; return 1; }
}

# case_socket_rounds NAME: the job on JOB_ENV's transports (default the socket transport) with a reference run of
# the same settings beside it, dumped and restored with the options criu-gpu check names for it; dump -R at DUMPS
# random moments, then restore_cycles; the job's losses equal the reference's bit for bit
JOB_ENV=()
case_socket_rounds() {
    local name="$1" steps="${DDP_STEPS:-100000000}" i ok=1 ref reflog envs=("${SOCKET_ENV[@]}")
    ((${#JOB_ENV[@]})) && envs=("${JOB_ENV[@]}")
    ddp_start "$name-reference" 29621 "$steps" "${envs[@]}"
    ref=$JOB; reflog=$JOBLOG
    ddp_start "$name" 29631 "$steps" "${envs[@]}"
    ranks_step "$JOBLOG" 20 240 || { fail "$name" "the job never reached step 20: $(tail -n2 "$JOBLOG" | tr '\n' ' ')"; kill_job; return; }
    check_options "$name" || { fail "$name-check-options" "criu-gpu check named no options: $(tail -n1 "$LOGS/$name.check")"; ok=0; }
    for ((i = 1; i <= DUMPS && ok; i++)); do
        dump_r_round "$name" "$i" "${DUMP_OPTS[@]}" || ok=0
    done
    ((ok)) && restore_cycles "$name"
    ((ok)) && pass "$name-check-options"
    if ((ok)); then
        # both runs to the same step, 20 past the furthest rank's after the last restore; compared up to it
        local r last=0 n
        for ((r = 0; r < RANKS; r++)); do n=$(steps_of "$JOBLOG" "$r"); ((n > last)) && last=$n; done
        last=$((last + 20))
        ranks_step "$JOBLOG" "$last" 120 || { fail "$name" "the job did not reach step $last"; ok=0; }
        ranks_step "$reflog" "$last" 600 || { fail "$name" "the reference did not reach step $last"; ok=0; }
        grep -q 'extra=bad' "$JOBLOG" && { fail "$name" "device memory differs after a restore: $(grep -m1 'extra=bad' "$JOBLOG")"; ok=0; }
        if ((ok)) && cmp -s <(losses_upto "$JOBLOG" "$last") <(losses_upto "$reflog" "$last") \
            && [[ $(losses_upto "$JOBLOG" "$last" | wc -l) -eq $(((last + 1) * RANKS)) ]]; then
            pass "$name"
            note "INFO $name: losses of steps 0-$last of $RANKS ranks equal the reference's"
        elif ((ok)); then
            fail "$name" "losses differ from the reference run ($(diff <(losses_upto "$JOBLOG" "$last") <(losses_upto "$reflog" "$last") | head -n 2 | tr '\n' ' '))"
        fi
    fi
    kill_job
    JOB=$ref; kill_job
}

# case_torchrun_check NAME: a job started with torchrun cannot be dumped by criu 4.2.1 (its elastic agent holds an
# io_uring); criu-gpu check must say so, naming the agent, and what to use instead
case_torchrun_check() {
    local name="$1" rc=0
    JOBLOG="$LOGS/$name.job"; : >"$JOBLOG"
    start_detached "$JOBLOG" env "${SOCKET_ENV[@]}" python3 -m torch.distributed.run --nproc-per-node "$RANKS" \
        --master-port 29641 "$GPU_DIR/ddp_train.py" --steps 100000000 --extra-mib 256
    JOB=$STARTED_PID
    ranks_step "$JOBLOG" 20 240 || { fail "$name" "the job never reached step 20: $(tail -n2 "$JOBLOG" | tr '\n' ' ')"; kill_job; return; }
    # criu's ELF on PATH, as where users installed it (check reads its libraries for libnftables; the bundle's criu
    # is a shell script that runs criu.bin with sid's loader)
    local on_path="$E2E_ROOT/criu-on-path"
    mkdir -p "$on_path" && ln -sf "$(dirname "$CRIU")/criu.bin" "$on_path/criu"
    PATH="$on_path:$PATH" "$PLUGIN_DIR/bin/criu-gpu" check "$JOB" >"$LOGS/$name.check" 2>&1 || rc=$?
    if ((rc == 0)); then
        fail "$name" "criu-gpu check found nothing in a torchrun job"
    elif ! grep -E '^problem:.*io_uring' "$LOGS/$name.check" | grep -q -i 'plain launcher'; then
        fail "$name" "no problem line naming the io_uring and a plain launcher: $(grep -m1 io_uring "$LOGS/$name.check")"
    else
        pass "$name"
        note "INFO $name: $(grep -m1 -E '^problem:.*io_uring' "$LOGS/$name.check" | cut -c1-300)"
    fi
    kill_job
}

# tp_start NAME PORT REQUESTS WAIT_IN PACE_MS: tp_serve.py with RANKS ranks; sets JOB and JOBLOG
tp_start() {
    local name="$1" port="$2" requests="$3" wait_in="$4" pace="$5"
    JOBLOG="$LOGS/$name.job"
    : >"$JOBLOG"
    start_detached "$JOBLOG" env "${SOCKET_ENV[@]}" python3 "$GPU_DIR/tp_serve.py" --ranks "$RANKS" \
        --requests "$requests" --wait-in "$wait_in" --pace-ms "$pace" --port "$port"
    JOB=$STARTED_PID
}

answers() { sed -n 's/^\[serve\] answer \([0-9]*\) \(.*\)$/\1 \2/p' "$1" | sort -n -u; }

# case_tp_serving NAME: a tensor-parallel server waiting for requests on the host, dumped with -R mid-serving, then
# dumped and restored right after, with criu-gpu check's options; its answers equal a reference server's
case_tp_serving() {
    local name="$1" requests=400 ref reflog n ok=1
    tp_start "$name-reference" 29721 "$requests" host 20
    ref=$JOB; reflog=$JOBLOG
    tp_start "$name" 29731 "$requests" host 20
    wait_for "$JOBLOG" '^\[serve\] answer 20 ' 240 || { fail "$name" "no answer 20: $(tail -n2 "$JOBLOG" | tr '\n' ' ')"; kill_job; JOB=$ref; kill_job; return; }
    check_options "$name" || { fail "$name-check-options" "criu-gpu check named no options: $(tail -n1 "$LOGS/$name.check")"; ok=0; }
    if ((ok)) && ! criu_cmd "$name-R" dump "$IMG_ROOT/$name-R" -t "$JOB" -R --lib "$PLUGIN_DIR" "${DUMP_OPTS[@]}"; then
        fail "$name" "dump -R failed: $(grep -E 'Error' "$LOGS/$name-R.dump.log" | grep -v RLIMIT | head -n1)"; ok=0
    fi
    rm -rf "$IMG_ROOT/$name-R"
    if ((ok)); then
        n=$(count_lines "$JOBLOG" '^\[serve\] answer ')
        wait_for "$JOBLOG" '^\[serve\] answer ' 60 $((n + 10)) || { fail "$name" "no answers after dump -R"; ok=0; }
    fi
    if ((ok)); then
        mapfile -t TREE_PIDS < <(tree_pids "$JOB")
        if criu_cmd "$name-final" dump "$IMG_ROOT/$name" -t "$JOB" --lib "$PLUGIN_DIR" "${DUMP_OPTS[@]}" \
            && wait_gone 30 "${TREE_PIDS[@]}" \
            && criu_cmd "$name" restore "$IMG_ROOT/$name" -d --lib "$PLUGIN_DIR" "${RESTORE_OPTS[@]}"; then
            wait_for "$JOBLOG" '^\[rank 0\] done ' 600 && wait_for "$reflog" '^\[rank 0\] done ' 600 || { fail "$name" "the servers did not finish"; ok=0; }
        else
            fail "$name" "dump and restore failed: $(grep -h -E 'Error' "$LOGS/$name-final.dump.log" "$LOGS/$name.restore.log" 2>/dev/null | grep -v RLIMIT | head -n1)"; ok=0
        fi
    fi
    if ((ok)); then
        if cmp -s <(answers "$JOBLOG") <(answers "$reflog") && [[ $(answers "$JOBLOG" | wc -l) -eq $requests ]]; then
            pass "$name"
            pass "$name-check-options"
        else
            fail "$name" "answers differ from the reference server's ($(diff <(answers "$JOBLOG") <(answers "$reflog") | head -n 2 | tr '\n' ' '))"
        fi
    fi
    kill_job
    JOB=$ref; kill_job
}

# case_tp_idle_in_collective NAME: ranks wait for the next request inside an NCCL broadcast; the dump fails within
# criu's timeout naming the ranks that wait in a collective and what a server must do instead; the server answers on
case_tp_idle_in_collective() {
    local name="$1" n
    tp_start "$name" 29741 100000 nccl 3000
    wait_for "$JOBLOG" '^\[serve\] answer 2 ' 240 || { fail "$name" "no answer 2: $(tail -n2 "$JOBLOG" | tr '\n' ' ')"; kill_job; return; }
    if criu_cmd "$name" dump "$IMG_ROOT/$name" -t "$JOB" -R --lib "$PLUGIN_DIR" "${JOB_CRIU_OPTS[@]}"; then
        fail "$name" "the dump of ranks idling in a collective succeeded"
    elif ! grep -q 'inside a GPU collective for a peer' "$LOGS/$name.dump.log"; then
        fail "$name" "the failure does not say the ranks wait in a collective: $(grep -E 'Error' "$LOGS/$name.dump.log" | grep -v RLIMIT | head -n1)"
    else
        n=$(count_lines "$JOBLOG" '^\[serve\] answer ')
        if wait_for "$JOBLOG" '^\[serve\] answer ' 30 $((n + 2)); then pass "$name"; else fail "$name" "no answers after the refused dump"; fi
        note "INFO $name: failed after ${CRIU_SECS}s"
    fi
    kill_job
}

# ddp_finish: the end of a script of DDP jobs (run-multi-rank.sh, run-channel.sh): the total time where T_START is set,
# no rank left, the logs packed lean, the images gone, the exit status
ddp_finish() {
    trap '' TERM INT   # once: the reaper passes on the outer timeout's signal a second time
    [[ -n "${T_START:-}" ]] && note "TIME total $(elapsed "$T_START")s"
    pkill -KILL -f ddp_train.py
    pack_logs_lean
    rm -rf "$IMG_ROOT"
    exit "$FAILED"
}
