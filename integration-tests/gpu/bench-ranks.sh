#!/usr/bin/env bash
# Where a multi-rank NCCL job's `criu dump -R` stall goes, at 1, 2 and 4 ranks with the same device memory per rank,
# and with the 4 ranks' memory in one process. Per case (ddp_train.py, socket transport, JOB_CRIU_OPTS): ROUNDS
# dump -R at random moments 0.5-3.5 s apart, the ranks stepping on after each; then RESTORES cycles of a dump and a
# restore right after onto the same GPUs, the ranks stepping on. rank_phases.py splits every dump log into lock,
# device checkpoint, page dump (per rank), return and stall (lock start to unfreeze).
#
# usage (repo root, on a 4-GPU host): bash integration-tests/gpu/bench-ranks.sh BUNDLE_DIR OUT_DIR
# Env: BENCH_RANK_CASES  "ranks:MiB[:e] ..." (default "1:2048 2:2048 4:2048 1:8192"; MiB: EXTRA_MIB per rank; ":e":
#                        the ranks run with --empty-cache, case name "r<ranks>x<MiB>e")
#      ROUNDS 3, RESTORES 1, BENCH_WARM_GIB (default 16): GiB of /dev/shm written and removed first (lib.sh warm_memory)
#      BENCH_DEADLINE_S  default 560: seconds from the start after which nothing new starts, so that the script packs
#                        its logs before an outer timeout. A case is skipped (NOTE line) when fewer seconds remain
#                        than its estimate, 30 + ROUNDS * R + RESTORES * C, with G = ranks * (MiB + 1024) / 1024
#                        (device GiB of the job, ~1 GiB of torch/NCCL per rank), R = 3 + 2.25 G (a dump -R round),
#                        C = 5 + 4.25 G (a dump + restore cycle); from 2 ranks x 2 GiB on H200 (session 13: dump -R
#                        13.5 s, dump 16-21 s, restore 9-13 s). A round or cycle that no longer fits is not started.
# Output: OUT_DIR/summary.txt (PASS/FAIL/NOTE/INFO/TIME lines), OUT_DIR/rank-phases.tsv (one line per dump log:
# r<ranks>x<MiB>-R<i> = dump -R round i, -c<i> = the dump of cycle i), OUT_DIR/rank-phases.md (medians per case;
# "X" = the -R rounds, "X-c" = the cycles' dumps, which kill the job), OUT_DIR/logs.tar.xz (pack_logs_lean).
set -uo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"   # sets GPU_DIR
start_host_script "$@"
source "$GPU_DIR/cases_ddp.sh"
T_START=$(now_s)
DEADLINE=$(($(date +%s) + ${BENCH_DEADLINE_S:-560}))
ROUNDS="${ROUNDS:-3}"
RESTORES="${RESTORES:-1}"
JOB=""
DONE_CASES=()

left() { echo $((DEADLINE - $(date +%s))); }

# phases: rank_phases.py over the dump logs of the cases run, in their order
phases() {
    local name logs=()
    shopt -s nullglob
    for name in "${DONE_CASES[@]}"; do logs+=("$LOGS/$name"-R[0-9]*.dump.log "$LOGS/$name"-c[0-9]*.dump.log); done
    shopt -u nullglob
    ((${#logs[@]})) || return 0
    python3 "$GPU_DIR/rank_phases.py" --header "${logs[@]}" >"$OUT_DIR/rank-phases.tsv" 2>>"$SUMMARY"
    python3 "$GPU_DIR/rank_phases.py" --table "$OUT_DIR/rank-phases.tsv" >"$OUT_DIR/rank-phases.md" 2>>"$SUMMARY"
    cat "$OUT_DIR/rank-phases.md"
}

finish() {
    trap '' TERM INT   # once: the reaper passes on the outer timeout's signal a second time
    [[ -n "$JOB" ]] && kill_job
    phases
    note "TIME total $(elapsed "$T_START")s"
    pack_logs_lean
    rm -rf "$IMG_ROOT"
    exit "$FAILED"
}
trap 'fail interrupted "stopped by a signal (outer timeout?)"; finish' TERM INT

# bench_case NAME PORT: the job of RANKS x EXTRA_MIB; ROUNDS dump -R, RESTORES dump + restore; sets JOB. A round
# starts only while R_EST seconds are left, a cycle while C_EST are.
bench_case() {
    local name="$1" port="$2" i ok=1 done_r=0 done_c=0 img d wait_s
    ddp_start "$name" "$port" 100000000 "${SOCKET_ENV[@]}"
    DONE_CASES+=("$name")
    wait_s=$(($(left) - 10)); ((wait_s > 240)) && wait_s=240; ((wait_s < 1)) && wait_s=1
    ranks_step "$JOBLOG" 20 "$wait_s" || { fail "$name" "the job never reached step 20: $(tail -n2 "$JOBLOG" | tr '\n' ' ')"; return; }
    for ((i = 1; i <= ROUNDS && ok; i++)); do
        (($(left) >= R_EST)) || break
        dump_r_round "$name" "$i" "${JOB_CRIU_OPTS[@]}" || { ok=0; break; }
        done_r=$i
    done
    for ((i = 1; i <= RESTORES && ok && done_r == ROUNDS; i++)); do
        (($(left) >= C_EST)) || break
        img="$IMG_ROOT/$name-c$i"
        mapfile -t TREE_PIDS < <(tree_pids "$JOB")
        if ! criu_cmd "$name-c$i" dump "$img" -t "$JOB" --lib "$PLUGIN_DIR" "${JOB_CRIU_OPTS[@]}"; then
            fail "$name" "dump $i failed: $(grep -E 'Error' "$LOGS/$name-c$i.dump.log" | grep -v RLIMIT | head -n1)"; ok=0; break
        fi
        d=$CRIU_SECS
        wait_gone 30 "${TREE_PIDS[@]}" || { fail "$name" "dumped pids not gone in 30 s"; ok=0; break; }
        if ! criu_cmd "$name-c$i" restore "$img" -d --lib "$PLUGIN_DIR" "${JOB_CRIU_OPTS[@]}"; then
            fail "$name" "restore $i failed: $(grep -E 'Error' "$LOGS/$name-c$i.restore.log" | grep -v RLIMIT | head -n1)"; ok=0; break
        fi
        note "TIME $name dump=${d}s restore=${CRIU_SECS}s"
        rm -rf "$img"
        ranks_advance "$JOBLOG" 60 || { fail "$name" "no steps after restore $i"; ok=0; break; }
        grep -q 'extra=bad' "$JOBLOG" && { fail "$name" "device memory differs: $(grep -m1 'extra=bad' "$JOBLOG")"; ok=0; break; }
        done_c=$i
    done
    if ((ok && done_r == ROUNDS && done_c == RESTORES)); then
        pass "$name"
    elif ((ok)); then
        note "NOTE $name: deadline: $done_r of $ROUNDS dump -R rounds, $done_c of $RESTORES cycles; no PASS/FAIL"
    fi
}

unpack_bundle "$bundle" || { fail setup "cannot unpack $bundle"; finish; }
[[ -n "$PLUGIN_DIR" ]] || { fail setup "the bundle has no plugin dir"; finish; }
build_programs >"$LOGS/build.out" 2>&1 || { fail setup "building the test programs failed (build.out)"; finish; }
NGPU=$(nvidia-smi -L | wc -l)
note "SETUP criu $("$CRIU" --version | awk '/Version/ {print $2}'), $NGPU GPU(s): $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sort -u | paste -sd';'), $(python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())' 2>&1); ROUNDS=$ROUNDS RESTORES=$RESTORES, $(left)s left"

BENCH_WARM_GIB="${BENCH_WARM_GIB:-16}" warm_memory
index=0
for c in ${BENCH_RANK_CASES:-1:2048 2:2048 4:2048 1:8192}; do
    port=$((29811 + 10 * index)) index=$((index + 1))
    [[ "$c" =~ ^([1-9][0-9]*):([0-9]+)(:e)?$ ]] || { fail "$c" "not ranks:MiB[:e] (BENCH_RANK_CASES)"; continue; }
    RANKS=${BASH_REMATCH[1]} EXTRA_MIB=${BASH_REMATCH[2]} name="r${BASH_REMATCH[1]}x${BASH_REMATCH[2]}"
    DDP_ARGS=()
    [[ -n "${BASH_REMATCH[3]}" ]] && DDP_ARGS=(--empty-cache) name+="e"
    ((RANKS <= NGPU)) || { note "NOTE $name: skipped, $RANKS ranks on $NGPU GPU(s)"; continue; }
    G=$((RANKS * (EXTRA_MIB + 1024) / 1024))
    R_EST=$((3 + G * 9 / 4)) C_EST=$((5 + G * 17 / 4))
    est=$((30 + ROUNDS * R_EST + RESTORES * C_EST))
    (($(left) >= est)) || { note "NOTE $name: skipped, estimate ${est}s, $(left)s left (BENCH_DEADLINE_S)"; continue; }
    note "INFO $name: $RANKS rank(s) x $EXTRA_MIB MiB, estimate ${est}s, $(left)s left"
    bench_case "$name" "$port"
    kill_job
    JOB=""
done
finish
