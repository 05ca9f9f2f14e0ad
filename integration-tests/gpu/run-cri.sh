#!/usr/bin/env bash
# Kubernetes' way on the GPU host: what the kubelet does through containerd's CRI, driven by the test's own CRI client
# (CriGpuRounds, Java, from cri-bundle.sh) against containerd 2.1.9 + runc 1.3.6 (Debian sid's, carried by
# cri-bundle.sh) set up by integration-tests/cri/node.sh, criu 4.2.1 from the GPU bundle as the `criu` on containerd's
# PATH, our plugins installed as criu's default plugin dir (/usr/lib/criu), the GPU given as a CDI device
# (nvidia.com/gpu=N from the spec podman_lib.sh writes), the counter image pushed to the node's local registry.
# Cases (one PASS/FAIL line each; exit status non-zero if any failed):
#   cri-rounds         a pod runs cuda_counter; CRI_ROUNDS (5) times: CheckpointContainer to an archive (the
#                      container goes on), container and pod removed, a container created from the archive in a new
#                      pod and started (containerd restores it); the counter goes on from the checkpoint without a
#                      gap and its GPU memory verifies after every restore and at its exit
#   cri-gpu-elsewhere  (2+ GPUs) checkpointed with nvidia.com/gpu=1, restored into a pod given nvidia.com/gpu=0: the
#                      counter works on the GPU it was given, or the restore fails in one line with nothing left running
#   cri-gpu-absent     (2+ GPUs) checkpointed with nvidia.com/gpu=1, then the node made one without GPU 1 (its CDI
#                      spec without it, the plugin told to treat it as absent: cuda.treat-absent), restored into a pod
#                      given nvidia.com/gpu=0: the counter works on GPU 0, or the restore fails in one line with
#                      nothing left running
#   cri-gpu-absent-seen  (2+ GPUs) the same with a container given every GPU at the checkpoint (so its counter runs
#                      on GPU 0 and sees GPU 1), a node without GPU 0 at the restore, the new pod given GPU 1
#   cri-no-gpu-here    checkpointed with nvidia.com/gpu=0, then the node made one without any of its GPUs (the plugin
#                      treats them all as absent): the restore must fail, saying why in restore.log, nothing running
#   (a gpu-* case whose restore fails must also find the plugin's error line in the node's system log, which
#   containerd does not delete: the host's syslog, or busybox's syslogd started for the run)
#   cri-no-cdi-spec    a container asking for a CDI device no spec names: CreateContainer fails naming it
# CRI_CPU_ONLY=1 runs the same with a shell counter and no GPU (the plugins load and disable themselves): the wiring,
# testable in a sid container without a GPU.
#
# usage (repo root, as root): bash integration-tests/gpu/run-cri.sh BUNDLE_DIR OUT_DIR
# Env: CRI_BUNDLE (default .cri-bundle beside integration-tests/), CRI_CPU_ONLY, CRI_CASES ("rounds gpu-elsewhere
#      gpu-absent no-gpu-here no-cdi-spec"), CRI_ROUNDS (5), COUNTER_MIB (256), E2E_KEEP_LOG_DIR=1
set -uo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"   # sets GPU_DIR
start_host_script "$@"
CPU_ONLY="${CRI_CPU_ONLY:-0}"
source "$GPU_DIR/cases.sh"
source "$GPU_DIR/podman_lib.sh"   # install_default_plugins, write_cdi_spec, counter_rootfs
T_START=$(now_s)
CRI_BUNDLE="$(readlink -f "${CRI_BUNDLE:-$GPU_DIR/../../.cri-bundle}")"
CRI_ROOT=/var/tmp/criu-gpu-cri          # cri/ (the bundle) and path/ (criu's wrapper); must match cri-bundle.sh
NODE_SH="$GPU_DIR/../cri/node.sh"
NODE_STATE=/var/lib/criu-gpu-cri        # node.sh's
SOCKET=/run/criu-gpu-cri-sock/containerd.sock
CRI_IMAGE=localhost:5000/criu-gpu-cri/counter:1
CASES="${CRI_CASES:-rounds gpu-elsewhere gpu-absent gpu-absent-seen no-gpu-here no-cdi-spec}"
if [[ "$CPU_ONLY" == 1 ]]; then
    DUMP_LINE='cuda_plugin: disabled: no NVIDIA GPU'
    RESTORE_LINE='cuda_plugin: disabled: the image holds no CUDA state'
else
    DUMP_LINE="${E2E_CHECKPOINTED_PATTERN:-CUDA checkpointed}"
    RESTORE_LINE="${E2E_RESTORED_PATTERN:-CUDA restored}"
fi

# node_down: every container of the node killed, then containerd, its shims and the registry; their mounts gone
node_down() {
    local t
    if [[ -S "$SOCKET" ]] && command -v ctr >/dev/null; then
        for t in $(timeout 10 ctr --address "$SOCKET" -n k8s.io tasks ls -q 2>/dev/null); do
            timeout 10 ctr --address "$SOCKET" -n k8s.io tasks kill -a -s SIGKILL "$t" >/dev/null 2>&1
        done
    fi
    pkill -f "containerd --config /etc/containerd/criu-gpu-cri.toml" 2>/dev/null
    pkill -x docker-registry 2>/dev/null
    pkill -f "containerd-shim-runc-v2 .*criu-gpu-cri" 2>/dev/null
    local m
    for m in $(awk '$2 ~ "^(/run/criu-gpu-cri|/var/lib/criu-gpu-cri|/run/containerd)" {print $2}' /proc/mounts | sort -r); do
        umount -l "$m" 2>/dev/null || true
    done
}

# the node's system log, where the plugins' error lines also go when criu runs under RPC (containerd deletes a
# failed restore's task directory, restore.log with it): the host's where something serves /dev/log, else busybox's
# syslogd writing $LOGS/system.log for the run
SYSTEM_LOG=""
start_system_log() {
    if [[ -S /dev/log ]]; then note "SETUP system log: the host's (/dev/log)"; return; fi
    busybox syslogd -O "$LOGS/system.log" && SYSTEM_LOG="$LOGS/system.log" \
        && note "SETUP system log: busybox syslogd writing $SYSTEM_LOG"
}

stop_system_log() {
    [[ -n "$SYSTEM_LOG" ]] || return 0
    pkill -f "busybox syslogd -O $SYSTEM_LOG" 2>/dev/null
    rm -f /dev/log
}

finish() {
    trap '' INT TERM
    stop_system_log
    cp "$NODE_STATE/containerd.log" "$NODE_STATE/registry.log" "$LOGS/" 2>/dev/null
    find "$NODE_STATE/containerd/io.containerd.runtime.v2.task" -name '*.log' -exec cp --parents {} "$LOGS/" \; 2>/dev/null
    node_down
    plugins_present
    restore_default_plugins
    remove_cdi_spec
    rm -rf "$CRI_ROOT" "$NODE_STATE" /run/criu-gpu-cri /run/criu-gpu-cri-sock
    rmdir "$PODMAN_ROOT" 2>/dev/null
    note "TIME total $(elapsed "$T_START")s"
    if [[ "${E2E_KEEP_LOG_DIR:-0}" == 1 ]]; then tar -C "$OUT_DIR" -czf "$OUT_DIR/logs.tar.gz" logs; else pack_logs; fi
    rm -rf "$IMG_ROOT"
    exit "$FAILED"
}
trap 'fail interrupted "signal"; finish' INT TERM

setup() {
    unpack_bundle "$bundle" || { echo "cannot unpack $bundle"; return 1; }
    [[ -n "$PLUGIN_DIR" ]] || { echo "the bundle has no plugin dir (criu-lib.tar.xz)"; return 1; }
    [[ -f "$CRI_BUNDLE/cri.tar.xz" ]] || { echo "no cri.tar.xz in $CRI_BUNDLE (build it with cri-bundle.sh)"; return 1; }
    node_down
    rm -rf "$NODE_STATE"
    private_dir --fresh "$CRI_ROOT" && private_dir "$PODMAN_ROOT" || return 1
    mkdir "$CRI_ROOT/path"
    tar -C "$CRI_ROOT" -xJf "$CRI_BUNDLE/cri.tar.xz" && tar -C "$CRI_ROOT" -xf "$CRI_BUNDLE/cri-java.tar" \
        || { echo "cannot unpack $CRI_BUNDLE/cri.tar.xz and cri-java.tar"; return 1; }
    # containerd, its runc shim and runc run the criu they find on PATH: the bundle's
    printf '#!/bin/sh\nexec "%s" "$@"\n' "$CRIU" >"$CRI_ROOT/path/criu"
    chmod 755 "$CRI_ROOT/path/criu"
    export PATH="$CRI_ROOT/path:$CRI_ROOT/cri/bin:$PATH"
    install_default_plugins "$LOGS" || return 1
    local counter
    if [[ "$CPU_ONLY" == 1 ]]; then
        counter="$CRI_ROOT/cpu-counter.sh"
        write_cpu_counter "$counter"
        COUNTER_CMD="/usr/bin/counter"
    else
        build_programs >"$LOGS/build.out" 2>&1 || { echo "building the test programs failed (build.out)"; return 1; }
        counter="$BIN/cuda_counter"
        COUNTER_CMD="/usr/bin/counter --mib ${COUNTER_MIB:-256} --tick-ms 20"
        write_cdi_spec || return 1
        cp "$CDI_SPEC" "$LOGS/cdi-nvidia.yaml"
    fi
    counter_rootfs "$CRI_ROOT/image-rootfs" "$counter" || { echo "cannot build the counter's root filesystem"; return 1; }
    start_system_log
    sh "$NODE_SH" start "$SOCKET" >"$LOGS/node-start.out" 2>&1 || { echo "node.sh start: $(tail -n1 "$LOGS/node-start.out")"; return 1; }
    note "SETUP $(grep 'node up' "$LOGS/node-start.out" | sed 's/^criu-gpu-cri: //')"
    sh "$NODE_SH" push-image "$CRI_IMAGE" "$CRI_ROOT/image-rootfs" >"$LOGS/push-image.out" 2>&1 \
        || { echo "node.sh push-image: $(tail -n1 "$LOGS/push-image.out")"; return 1; }
    note "SETUP plugins in $CRIU_PLUGIN_DEFAULT, $([[ "$CPU_ONLY" == 1 ]] && echo "CPU only" || echo "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n1), $(nvidia-smi -L | wc -l) GPU(s) given through CDI ($CDI_SPEC)")"
}

# watch_restores NAME: in the background while a case runs, every restore.log of the node's tasks copied to LOGS as
# it grows (containerd deletes a task's bundle, restore.log with it, when a restore fails or is cancelled), and
# every 10 s the processes with their kernel wait channels: what a restore that does not end is waiting for
watch_restores() {
    local name="$1" tasks="$NODE_STATE/containerd/io.containerd.runtime.v2.task/k8s.io" f n=0
    while :; do
        for f in "$tasks"/*/restore.log; do
            [[ -f "$f" ]] && cp "$f" "$LOGS/$name.task-$(basename "$(dirname "$f")" | cut -c1-12).restore.log" 2>/dev/null
        done
        if ((n % 10 == 9)); then
            {
                ps -eo pid,ppid,stat,wchan:32,etimes,args --sort=pid | grep -vE ' \[[^]]*\]$'
                local p t   # the counter's threads: state, wait channel, kernel stack
                for p in $(pgrep -x counter); do
                    for t in /proc/"$p"/task/*; do
                        echo "thread ${t##*/} of $p: $(cut -d' ' -f3 "$t/stat" 2>/dev/null) $(cat "$t/wchan" 2>/dev/null) $(tr '\0' ' ' <"$t/comm" 2>/dev/null)"
                        sed 's/^/    /' "$t/stack" 2>/dev/null
                    done
                done
            } >"$LOGS/$name.ps-$n.txt" 2>&1
        fi
        n=$((n + 1))
        sleep 1
    done
}

# cri_case CASE NAME ARGS...: the CRI client's case; its PASS/FAIL/TIME/NOTE lines go to the summary
cri_case() {
    local kind="$1" name="$2" out line got=0 watcher
    shift 2
    out="$LOGS/$name.out"
    watch_restores "$name" &
    watcher=$!
    "$JDK/bin/java" -cp "$CRI_ROOT/cri/java/*" dev.criugpu.it.cri.CriGpuRounds "$kind" "$name" \
        socket="$SOCKET" image="$CRI_IMAGE" archive-dir="$IMG_ROOT" containerd-log="$NODE_STATE/containerd.log" \
        command="$COUNTER_CMD" dump-line="$DUMP_LINE" restore-line="$RESTORE_LINE" log-dir="$LOGS" \
        ${SYSTEM_LOG:+system-log="$SYSTEM_LOG"} "$@" \
        >"$out" 2>"$LOGS/$name.err"
    kill "$watcher" 2>/dev/null; wait "$watcher" 2>/dev/null
    while IFS= read -r line; do
        case "$line" in
            "PASS $name") pass "$name"; got=1 ;;
            "FAIL $name: "*) fail "$name" "${line#FAIL "$name": }"; got=1 ;;
            TIME\ *|NOTE\ *) note "$line" ;;
        esac
    done <"$out"
    ((got)) || fail "$name" "the CRI client gave no result: $(tail -n1 "$LOGS/$name.err")"
    local left
    left="$(pgrep -x counter | paste -sd' ')"
    [[ -z "$left" ]] || { note "NOTE $name: counter pid(s) $left still there after the case: killed"; pkill -KILL -x counter; }
}

# node_without MINORS...: a script that makes this node look like one without those GPUs to a restore: the CDI
# spec without them, the plugin treating them as absent. "all": the plugin treats every GPU as absent, the CDI spec
# stays (a node whose GPUs differ from the archive's). node_whole undoes it.
CFG="$CRIU_PLUGIN_DEFAULT/java/criu-gpu.cfg"
node_without() {
    local script="$CRI_ROOT/node-without-$*.sh" uuids="" m
    local -a minors=("$@")
    [[ "$1" == all ]] && mapfile -t minors < <(nvidia-smi --query-gpu=index --format=csv,noheader)
    for m in "${minors[@]}"; do
        uuids+="${uuids:+,}$(nvidia-smi -i "$m" --query-gpu=uuid --format=csv,noheader)"
    done
    cp "$CFG" "$CRI_ROOT/criu-gpu.cfg.whole"
    cp "$CDI_SPEC" "$CRI_ROOT/cdi.whole.yaml"
    { cat "$CFG"; echo "cuda.treat-absent=$uuids"; } >"$CRI_ROOT/criu-gpu.cfg.without"
    cp "$CDI_SPEC" "$CRI_ROOT/cdi.without.yaml"
    [[ "$1" == all ]] || CDI_SKIP_GPUS="${minors[*]}" CDI_SPEC="$CRI_ROOT/cdi.without.yaml" write_cdi_spec >/dev/null
    printf 'cp %s %s && cp %s %s\n' "$CRI_ROOT/criu-gpu.cfg.without" "$CFG" "$CRI_ROOT/cdi.without.yaml" "$CDI_SPEC" >"$script"
    echo "$script"
}
node_whole() {
    cp "$CRI_ROOT/criu-gpu.cfg.whole" "$CFG"
    cp "$CRI_ROOT/cdi.whole.yaml" "$CDI_SPEC"
}

if ! setup >"$LOGS/setup.out" 2>&1; then
    grep -E '^(SETUP|NOTE)' "$SUMMARY"
    fail setup "$(tail -n1 "$LOGS/setup.out")"; finish
fi
grep -E '^(SETUP|NOTE)' "$SUMMARY"
GPU_COUNT=0
[[ "$CPU_ONLY" == 1 ]] || GPU_COUNT=$(nvidia-smi -L 2>/dev/null | wc -l)
GPU0=""; [[ "$CPU_ONLY" == 1 ]] || GPU0="nvidia.com/gpu=0"
for c in $CASES; do
    case "$c" in
        rounds) cri_case rounds cri-rounds gpu="$GPU0" rounds="${CRI_ROUNDS:-5}" ;;
        gpu-elsewhere)
            if ((GPU_COUNT >= 2)); then
                cri_case gpu-elsewhere cri-gpu-elsewhere gpu=nvidia.com/gpu=1 restore-gpu=nvidia.com/gpu=0
            else
                note "NOT RUN cri-gpu-elsewhere: it needs 2 GPUs, this host has $GPU_COUNT"
            fi ;;
        gpu-absent)
            if ((GPU_COUNT >= 2)); then
                cri_case gpu-elsewhere cri-gpu-absent gpu=nvidia.com/gpu=1 restore-gpu=nvidia.com/gpu=0 \
                    before-restore="sh $(node_without 1)"
                node_whole
            else
                note "NOT RUN cri-gpu-absent: it needs 2 GPUs, this host has $GPU_COUNT"
            fi ;;
        gpu-absent-seen)
            if ((GPU_COUNT >= 2)); then
                cri_case gpu-elsewhere cri-gpu-absent-seen gpu=nvidia.com/gpu=all restore-gpu=nvidia.com/gpu=1 \
                    before-restore="sh $(node_without 0)"
                node_whole
            else
                note "NOT RUN cri-gpu-absent-seen: it needs 2 GPUs, this host has $GPU_COUNT"
            fi ;;
        no-gpu-here)
            if ((GPU_COUNT >= 1)); then
                cri_case gpu-elsewhere cri-no-gpu-here gpu=nvidia.com/gpu=0 restore-gpu=nvidia.com/gpu=0 expect=refused \
                    before-restore="sh $(node_without all)"
                node_whole
            else
                note "NOT RUN cri-no-gpu-here: no GPU (CPU only)"
            fi ;;
        no-cdi-spec) cri_case no-cdi-spec cri-no-cdi-spec ;;
        *) fail "$c" "unknown case (CRI_CASES)" ;;
    esac
done
finish
