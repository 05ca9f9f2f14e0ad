# NCCL transport configurations of one DDP job (issue 44), sourced after lib.sh and cases_ddp.sh.
# For each configuration: its step rate, the NCCL connections it made ("via ..."), and what criu dump -R with the
# plugin's NCCL check skipped (CRIU_CUDA_NCCL_CHECK=0) does: lock, checkpoint, page dump, return; where the return
# fails, the driver's error and whether returning the ranks one at a time (cuda_ckpt resume, rank order) works;
# where it works, a dump and a restore right after it. One "MATRIX ..." line per row in the summary.

# transport_env NAME: the NCCL settings of a configuration, added to TRANSPORT_BASE
transport_env() {
    case "$1" in
        defaults) ;;                                                       # P2P over NVLink (cuMem handles)
        p2p-cumem) echo NCCL_SHM_DISABLE=1 ;;
        p2p-ipc) echo NCCL_SHM_DISABLE=1 NCCL_CUMEM_ENABLE=0 ;;            # P2P through legacy CUDA IPC
        p2p-memcpy) echo NCCL_SHM_DISABLE=1 NCCL_P2P_USE_CUDA_MEMCPY=1 ;;  # P2P copies by the copy engines
        shm-cumem) echo NCCL_P2P_DISABLE=1 ;;                              # SHM, host memory from cuMem (default)
        shm-host) echo NCCL_P2P_DISABLE=1 NCCL_CUMEM_HOST_ENABLE=0 ;;      # SHM, /dev/shm registered with CUDA
        shm-nocumem) echo NCCL_P2P_DISABLE=1 NCCL_CUMEM_ENABLE=0 ;;        # SHM, no cuMem anywhere
        shm-host-memcpy) echo NCCL_P2P_DISABLE=1 NCCL_CUMEM_HOST_ENABLE=0 NCCL_SHM_USE_CUDA_MEMCPY=1 ;;
        shm-host-ch8) echo NCCL_P2P_DISABLE=1 NCCL_CUMEM_HOST_ENABLE=0 NCCL_MIN_NCHANNELS=8 ;;   # more SHM channels
        shm-host-ch16) echo NCCL_P2P_DISABLE=1 NCCL_CUMEM_HOST_ENABLE=0 NCCL_MIN_NCHANNELS=16 ;;
        sockets) echo NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 ;;
        p2p-criu-gpu) echo DDP_CRIU_GPU=1 PYTHONPATH="$PLUGIN_DIR/python" ;;   # defaults; released for dumps (criu_gpu)
        *) return 1 ;;
    esac
}
TRANSPORT_BASE=(NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo NCCL_NVLS_ENABLE=0 USE_LIBUV=0)

# vias LOG: NCCL's connection kinds in the job's log ("via P2P/CUMEM" ...) with their counts
vias() { grep -o -E ' via [A-Za-z0-9/_]+' "$1" | sed 's/^ via //' | sort | uniq -c | awk '{printf "%s%s:%s", sep, $2, $1; sep=","}'; }

# cuda_errors LOG: the plugin's lines naming a CUDA error, first two
cuda_errors() { grep -E 'CUDA error|failed' "$1" | grep -v RLIMIT | sed 's/^([0-9. ]*)//' | head -n 2 | tr '\n' ' ' | cut -c1-400; }

# ranks_states: "RUNNING,RUNNING,..." of the job's ranks, in rank order
ranks_states() {
    local r out=""
    for ((r = 0; r < RANKS; r++)); do out+="$(state_of "$1" "$(rank_pid "$JOBLOG" "$r")"),"; done
    echo "${out%,}"
}

# transport_row RANKS CONFIG PORT [rate]: one row of the matrix (with "rate", the step rate only)
transport_row() {
    local ranks="$1" cfg="$2" port="$3" only="${4:-}" name env rate n0 n1 t0 dumpr="-" seq="-" cycle="-" after r pid
    name="t$ranks-$cfg"
    RANKS=$ranks
    read -r -a env <<<"$(transport_env "$cfg")"
    ddp_start "$name" "$port" 100000000 "${TRANSPORT_BASE[@]}" ${env[@]+"${env[@]}"} \
        CUDA_VISIBLE_DEVICES="$(seq -s, 0 $((ranks - 1)))" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,P2P,SHM,NET
    if ! ranks_step "$JOBLOG" 30 240; then
        note "MATRIX ranks=$ranks config=$cfg error=no-step-30 $(grep -v '^\[rank' "$JOBLOG" | tail -n 2 | tr '\n' ' ' | cut -c1-300)"
        kill_job; return
    fi
    n0=$(steps_of "$JOBLOG" 0); t0=$(now_s)
    sleep "${RATE_S:-6}"   # the measuring window, not a synchronisation
    n1=$(steps_of "$JOBLOG" 0)
    rate=$(awk -v a="$n0" -v b="$n1" -v t="$(elapsed "$t0")" 'BEGIN { printf "%.1f", (b - a) / t }')
    if [[ "$only" != rate ]]; then
        [[ "$cfg" == p2p-criu-gpu ]] || CRIU_ENV=(CRIU_CUDA_NCCL_CHECK=0)   # criu_gpu's release with the check on
        if criu_cmd "$name-R1" dump "$IMG_ROOT/$name-R1" -t "$JOB" -R --lib "$PLUGIN_DIR" "${JOB_CRIU_OPTS[@]}"; then
            dumpr="ok:${CRIU_SECS}s"
            ranks_advance "$JOBLOG" 30 && dumpr+=",steps-on" || dumpr+=",NO-STEPS"
        else
            after=$(ranks_states "$name")
            dumpr="FAIL:${CRIU_SECS}s,states=$after,$(cuda_errors "$LOGS/$name-R1.dump.log")"
            if [[ "$after" == *CHECKPOINTED* ]]; then
                # the driver's return one rank at a time, in rank order: does the order matter?
                for ((r = 0; r < RANKS; r++)); do
                    pid=$(rank_pid "$JOBLOG" "$r")
                    [[ "$(state_of "$name" "$pid")" == CHECKPOINTED ]] \
                        && timeout 60 "$BIN/cuda_ckpt" resume "$pid" >>"$LOGS/$name-seq.cuda_ckpt" 2>&1
                done
                seq="states=$(ranks_states "$name"),$(grep -E 'failed' "$LOGS/$name-seq.cuda_ckpt" 2>/dev/null | head -n 2 | tr '\n' ' ')"
            fi
        fi
        rm -rf "$IMG_ROOT/$name-R1"
        if [[ "$dumpr" == ok*steps-on ]]; then
            mapfile -t TREE_PIDS < <(tree_pids "$JOB")
            if criu_cmd "$name-c1" dump "$IMG_ROOT/$name-c1" -t "$JOB" --lib "$PLUGIN_DIR" "${JOB_CRIU_OPTS[@]}" \
                && wait_gone 30 "${TREE_PIDS[@]}"; then
                local dsecs=$CRIU_SECS
                if criu_cmd "$name-c1" restore "$IMG_ROOT/$name-c1" -d --lib "$PLUGIN_DIR" "${JOB_CRIU_OPTS[@]}"; then
                    cycle="ok:dump=${dsecs}s,restore=${CRIU_SECS}s"
                    ranks_advance "$JOBLOG" 60 && cycle+=",steps-on" || cycle+=",NO-STEPS"
                    grep -q 'extra=bad' "$JOBLOG" && cycle+=",EXTRA-BAD"
                else
                    cycle="FAIL-restore:$(cuda_errors "$LOGS/$name-c1.restore.log")"
                fi
            else
                cycle="FAIL-dump:$(cuda_errors "$LOGS/$name-c1.dump.log")"
            fi
            rm -rf "$IMG_ROOT/$name-c1"
        fi
        CRIU_ENV=()
    fi
    note "MATRIX ranks=$ranks config=$cfg steps_s=$rate via=$(vias "$JOBLOG") dumpR=$dumpr seq_resume=$seq dump_restore=$cycle"
    kill_job
}

# transport_rates: from the summary's MATRIX lines, per ranks and setting the median steps/s over its rows and its
# share of the defaults' median (name settings several times in TRANSPORTS, alternating, to get several windows)
transport_rates() {
    echo "| ranks | setting | windows | steps/s (each) | median | share of defaults |"
    echo "|---|---|---|---|---|---|"
    sed -n 's/^MATRIX ranks=\([0-9]*\) config=\([^ ]*\) steps_s=\([0-9.]*\) .*/\1 \2 \3/p' "$SUMMARY" | python3 -c '
import statistics, sys
rows = {}
for line in sys.stdin:
    r, c, v = line.split()
    rows.setdefault((int(r), c), []).append(float(v))
for (r, c), vs in rows.items():
    base = rows.get((r, "defaults"))
    share = "%.1f %%" % (100 * statistics.median(vs) / statistics.median(base)) if base else "-"
    print("| %d | %s | %d | %s | %.1f | %s |" % (r, c, len(vs), " ".join("%.1f" % v for v in vs), statistics.median(vs), share))
'
}
