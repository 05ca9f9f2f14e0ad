#!/usr/bin/env bash
# issue 55: what /proc shows of a CUDA tensor sent through torch.multiprocessing (ipc_probe.py: exporter and importer),
# what `criu-gpu check` says of the pair, then `criu dump -R` of the pair with the plugins (expected: refused at the first
# hook, "pid I imports GPU memory of pid E", both RUNNING after). Needs run-e2e.sh to have unpacked the bundle and built
# cuda_ckpt first (it uses /var/tmp/criu-gpu-e2e). usage (repo root, GPU host): ipc-records.sh PLUGIN_DIR OUT_FILE
set -u
out=$2
python3 integration-tests/gpu/ipc_probe.py > /tmp/ipc.out 2>&1 &
for i in $(seq 1 120); do grep -q exporter /tmp/ipc.out && break; sleep 0.5; done
cat /tmp/ipc.out > "$out"
read -r _ e _ i _ < <(grep exporter /tmp/ipc.out)
for p in $e $i; do
  echo "== pid $p $(tr '\0' ' ' < /proc/$p/cmdline | cut -c1-120) ppid $(awk '/PPid/{print $2}' /proc/$p/status) nspid $(grep NSpid /proc/$p/status)" >> "$out"
  echo "-- maps (shm, nvidia, deleted)" >> "$out"; grep -E 'shm|nvidia|deleted|memfd' /proc/$p/maps | awk '{print $2, $6, $7}' | sort | uniq -c >> "$out"
  echo "-- fds" >> "$out"; for f in /proc/$p/fd/*; do echo "$(basename $f) -> $(readlink $f) $(grep -E '^(flags|mnt_id)' /proc/$p/fdinfo/$(basename $f) 2>/dev/null | tr '\n' ' ')"; done >> "$out"
done
ls -la /dev/shm >> "$out"
PATH=/var/tmp/criu-gpu-e2e/criu:$PATH "$1/bin/criu-gpu" check $e >> "$out" 2>&1
mkdir -p /tmp/ipcimg
timeout 120 /var/tmp/criu-gpu-e2e/criu/criu dump -D /tmp/ipcimg -t $e -R --shell-job --lib "$1" -o /tmp/ipc.dump.log -v4 >> "$out" 2>&1; echo "dump rc=$?" >> "$out"
grep -E "Error|imports GPU|locked" /tmp/ipc.dump.log | head -5 >> "$out"
for p in $e $i; do echo "state $p: $(/var/tmp/criu-gpu-e2e/bin/cuda_ckpt state $p 2>&1)" >> "$out"; done
kill -9 $e $i; wait
