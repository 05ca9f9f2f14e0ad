#!/bin/sh
# Stands in for NVIDIA's cuda-checkpoint at the process boundary: keeps each pid's CUDA state in
# $dir/state-<pid>, logs every call to $dir/calls.log, and follows the driver's state rules.
dir=$(dirname "$0")
echo "$*" >> "$dir/calls.log"
case "$1" in
  --help|-h)
    echo "--action lock | checkpoint | restore | unlock --pid <pid> [--timeout <ms>] [--device-map <uuids>]"
    exit 0 ;;
  --get-state)
    f="$dir/state-$3"
    [ -f "$f" ] || { echo "Could not get state of process ID $3: \"invalid argument\""; exit 1; }
    cat "$f"; exit 0 ;;
  --get-restore-tid)
    [ -f "$dir/state-$3" ] || { echo "Could not get restore tid for process ID $3: \"invalid argument\""; exit 1; }
    echo $(( $3 + 1 )); exit 0 ;;
  --action)
    pid=$4; f="$dir/state-$pid"
    [ -f "$f" ] || { echo "Could not $2 on process ID $pid: \"invalid argument\""; exit 1; }
    case "$2:$(cat "$f")" in
      lock:running) echo locked > "$f" ;;
      checkpoint:locked) echo checkpointed > "$f" ;;
      restore:checkpointed) echo locked > "$f" ;;
      unlock:locked) echo running > "$f" ;;
      *) echo "Could not $2 on process ID $pid: \"operation not permitted\""; exit 32 ;;
    esac
    exit 0 ;;
esac
echo "unknown option $1"; exit 1
