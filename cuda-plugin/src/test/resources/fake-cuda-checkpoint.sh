#!/bin/sh
# Stands in for NVIDIA's cuda-checkpoint at the process boundary: keeps each pid's CUDA state in
# $dir/state-<pid>, logs every call to $dir/calls.log, and follows the driver's state rules.
# From the file "settings" next to it, NAME=value lines (the plugins start programs with named variables only, so
# criu's environment does not reach this script):
#   FAKE_CUDA_RESTORE_TID=self      --get-restore-tid prints the pid itself (the main thread, which exists and which
#                                   criu seizes) instead of pid+1
#   FAKE_CUDA_CHECKPOINT_SECONDS=N  a checkpoint takes N seconds (a large one); meanwhile every other call for that
#                                   pid but --get-restore-tid waits for it, as the driver serves them through the task's
#                                   restore thread, which the checkpoint holds
#   FAKE_CUDA_HOST_COPY=FILE        a checkpoint makes the task map its host copy as the driver does: it creates
#                                   FILE.map-request and waits (at most a minute) for FILE.mapped (the counter
#                                   workload's --host-copy, whose thread the plugin wakes for the checkpoint)
#   FAKE_CUDA_FAIL_RESTORE=1        every --action restore fails as the driver's does when it cannot put the state
#                                   back ("operation not supported"); the pid stays checkpointed
dir=$(dirname "$0")
if [ -f "$dir/settings" ]; then . "$dir/settings"; fi
echo "$*" >> "$dir/calls.log"
# wait_idle PID: waits (at most a minute) while a slow checkpoint of PID runs
wait_idle() {
  i=0
  while [ -d "$dir/busy-$1" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done
}
case "$1" in
  --help|-h)
    echo "--action lock | checkpoint | restore | unlock --pid <pid> [--timeout <ms>] [--device-map <uuids>]"
    exit 0 ;;
  --get-state)
    f="$dir/state-$3"
    [ -f "$f" ] || { echo "Could not get state of process ID $3: \"invalid argument\""; exit 1; }
    wait_idle "$3"
    cat "$f"; exit 0 ;;
  --get-restore-tid)
    [ -f "$dir/state-$3" ] || { echo "Could not get restore tid for process ID $3: \"invalid argument\""; exit 1; }
    if [ "$FAKE_CUDA_RESTORE_TID" = self ]; then echo "$3"; else echo $(( $3 + 1 )); fi
    exit 0 ;;
  --action)
    pid=$4; f="$dir/state-$pid"
    [ -f "$f" ] || { echo "Could not $2 on process ID $pid: \"invalid argument\""; exit 1; }
    wait_idle "$pid"
    if [ "$2" = restore ] && [ "$FAKE_CUDA_FAIL_RESTORE" = 1 ]; then
      echo "Could not restore on process ID $pid: \"operation not supported\""; exit 1
    fi
    case "$2:$(cat "$f")" in
      lock:running) echo locked > "$f" ;;
      checkpoint:locked)
        if [ -n "$FAKE_CUDA_HOST_COPY" ]; then
          : > "$FAKE_CUDA_HOST_COPY.map-request"
          i=0
          while [ ! -f "$FAKE_CUDA_HOST_COPY.mapped" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i + 1)); done
          [ -f "$FAKE_CUDA_HOST_COPY.mapped" ] || { echo "Could not checkpoint process ID $pid: \"timeout\""; exit 1; }
        fi
        if [ -n "$FAKE_CUDA_CHECKPOINT_SECONDS" ]; then
          mkdir "$dir/busy-$pid"; sleep "$FAKE_CUDA_CHECKPOINT_SECONDS"; echo checkpointed > "$f"; rmdir "$dir/busy-$pid"
        else
          echo checkpointed > "$f"
        fi ;;
      restore:checkpointed) echo locked > "$f" ;;
      unlock:locked) echo running > "$f" ;;
      *) echo "Could not $2 on process ID $pid: \"operation not permitted\""; exit 32 ;;
    esac
    exit 0 ;;
esac
echo "unknown option $1"; exit 1
