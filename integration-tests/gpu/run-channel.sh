#!/usr/bin/env bash
# criu_gpu's channel on one GPU (issue 53): a one-rank DDP job on NCCL (ddp_train.py, DDP_CRIU_GPU=1) whose plugin side
# channel_ask.py plays (a single rank is never asked by a dump: it has no peer). The rank releases its real NCCL
# communicators when asked and answers in its memfd; `criu dump -R` with the plugins while it waits; cleared, it makes
# them again and trains on; asked again, dumped, restored: the restored rank's channel holds the request (criu
# dumped the memfd), cleared, it makes its communicators again; losses equal a reference run's bit for bit.
#
# usage (repo root, on the GPU host): bash integration-tests/gpu/run-channel.sh BUNDLE_DIR OUT_DIR
set -uo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"   # sets GPU_DIR
start_host_script "$@"
source "$GPU_DIR/cases_ddp.sh"
finish() { ddp_finish; }
trap 'fail interrupted "stopped by a signal (outer timeout?)"; finish' TERM INT
unpack_bundle "$bundle" || { fail setup "cannot unpack $bundle"; finish; }
RANKS=1
EXTRA_MIB=256
ASK=(python3 "$GPU_DIR/channel_ask.py")
ENVS=("${DEFAULTS_ENV[@]}" DDP_CRIU_GPU=1 PYTHONPATH="$PLUGIN_DIR/python")
name=channel1
step_fail() { fail "$name" "$1: $(tail -n 3 "$JOBLOG" | tr '\n' ' ' | cut -c1-300)"; finish; }

ddp_start "$name-reference" 29661 400 "${ENVS[@]}"
reflog=$JOBLOG
ddp_start "$name" 29671 100000000 "${ENVS[@]}"
ranks_step "$JOBLOG" 30 240 || step_fail "no step 30"
pid=$(rank_pid "$JOBLOG" 0)
"${ASK[@]}" ask "$pid" >>"$LOGS/$name.ask" 2>&1 || step_fail "no release: $(cat "$LOGS/$name.ask")"
grep -q "NCCL communicators released for a checkpoint" "$JOBLOG" || step_fail "the rank did not say it released"
criu_cmd "$name-R" dump "$IMG_ROOT/$name-R" -t "$JOB" -R --lib "$PLUGIN_DIR" "${JOB_CRIU_OPTS[@]}" \
    || step_fail "dump -R of the released rank failed ($LOGS/$name-R.dump.log)"
"${ASK[@]}" clear "$pid"
wait_for "$JOBLOG" "NCCL communicators made again" 60 1 || step_fail "no new communicators after -R"
ranks_advance "$JOBLOG" 60 || step_fail "no steps after -R"
note "INFO $name: released, dumped with -R in ${CRIU_SECS}s, made again, trained on"

"${ASK[@]}" ask "$pid" >>"$LOGS/$name.ask" 2>&1 || step_fail "no second release: $(tail -n1 "$LOGS/$name.ask")"
mapfile -t TREE_PIDS < <(tree_pids "$JOB")
criu_cmd "$name-c" dump "$IMG_ROOT/$name-c" -t "$JOB" --lib "$PLUGIN_DIR" "${JOB_CRIU_OPTS[@]}" \
    && wait_gone 30 "${TREE_PIDS[@]}" || step_fail "dump of the released rank failed"
reap_dumped "$JOB"
criu_cmd "$name-c" restore "$IMG_ROOT/$name-c" -d --lib "$PLUGIN_DIR" "${JOB_CRIU_OPTS[@]}" \
    || step_fail "restore failed ($LOGS/$name-c.restore.log)"
shown=$("${ASK[@]}" show "$pid" 2>&1)
[[ "$shown" == request=[1-9]* ]] || step_fail "the restored rank's channel: $shown"
"${ASK[@]}" clear "$pid"
wait_for "$JOBLOG" "NCCL communicators made again" 60 2 || step_fail "no new communicators after the restore"
ranks_advance "$JOBLOG" 60 || step_fail "no steps after the restore"
last=$(( $(steps_of "$JOBLOG" 0) - 1 ))
((last > 399)) && last=399
ranks_step "$reflog" "$last" 300 || step_fail "the reference did not reach step $last"
if [[ "$(losses_upto "$JOBLOG" "$last")" == "$(losses_upto "$reflog" "$last")" ]]; then
    pass "$name"
    note "INFO $name: restored channel showed '$shown'; losses of steps 0-$last equal the reference's"
else
    fail "$name" "losses differ from the reference run"
fi
finish
