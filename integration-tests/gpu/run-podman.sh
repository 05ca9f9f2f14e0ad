#!/usr/bin/env bash
# A CUDA container checkpointed and restored by podman on the GPU host, as users of containers do it: root podman
# 4.3 with runc (Debian bookworm, carried by podman-bundle.sh), criu 4.2.1 from the GPU bundle as the `criu` on
# podman's PATH, our plugins installed as criu's default plugin dir (/usr/lib/criu, README's steps), the GPU given
# through a CDI spec written from what the host has (--device nvidia.com/gpu=all; --device and -v if this podman
# cannot use the spec), the image built locally from a directory (cuda_counter and its libraries).
# Cases (one PASS/FAIL line each; the exit status is non-zero if any failed):
#   podman-checkpoint   checkpoint --keep + restore in place: counter continues, pattern verifies, plugin lines
#   podman-export       checkpoint --export, podman rm, restore --import: the same
#   podman-no-plugins   /usr/lib/criu moved away: the checkpoint fails with criu's error, the container runs on
#   podman-rounds       (only when asked for) checkpoint + restore in place PODMAN_ROUNDS (20) times in a row
# PODMAN_CPU_ONLY=1 runs the same with a shell counter and no GPU (the plugins load and disable themselves; the
# no-plugins case checkpoints with --leave-running and must succeed): the wiring, testable without a GPU. With
# PODMAN_CPU_CDI=1 as well, the CPU containers also get the CDI devices and libraries found on the machine (on the
# development machine, stand-ins that podman-cpu-local.sh makes), so criu dumps and restores those too.
#
# usage (repo root, as root): bash integration-tests/gpu/run-podman.sh BUNDLE_DIR OUT_DIR
# Env: PODMAN_BUNDLE (default .podman-bundle beside integration-tests/), PODMAN_CPU_ONLY, PODMAN_CASES
#      ("checkpoint export no-plugins", a subset), PODMAN_GPU_VIA (cdi, the default, or device), COUNTER_MIB (256),
#      PODMAN_CMD_TIMEOUT (one podman command, default 300 s), E2E_KEEP_LOG_DIR=1, PODMAN_KEEP=1 (leave
#      /var/tmp/criu-gpu-podman, /usr/lib/criu and the CDI spec in place afterwards)
set -uo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"   # sets GPU_DIR
start_host_script "$@"
CPU_ONLY="${PODMAN_CPU_ONLY:-0}"
source "$GPU_DIR/cases.sh"
source "$GPU_DIR/podman_lib.sh"
source "$GPU_DIR/cases_podman.sh"
T_START=$(now_s)
PODMAN_BUNDLE="$(readlink -f "${PODMAN_BUNDLE:-$GPU_DIR/../../.podman-bundle}")"
CASES="${PODMAN_CASES:-checkpoint export no-plugins}"
GPU_ARGS=()

finish() {
    trap '' INT TERM   # once: the reaper passes on the outer timeout's signal a second time
    if [[ -f "$PODMAN_STATE/containers.conf" ]]; then
        pm ps --all >"$LOGS/podman-ps.out" 2>&1
        cp "$PODMAN_STATE/events.log" "$LOGS/podman-events.log" 2>/dev/null
        [[ "${PODMAN_KEEP:-0}" == 1 ]] || pm rm --all --force --time 0 >/dev/null 2>&1
    fi
    if [[ "${PODMAN_KEEP:-0}" != 1 ]]; then
        plugins_present
        restore_default_plugins
        remove_cdi_spec
        podman_teardown
    fi
    note "TIME total $(elapsed "$T_START")s"
    if [[ "${E2E_KEEP_LOG_DIR:-0}" == 1 ]]; then
        tar -C "$OUT_DIR" -czf "$OUT_DIR/logs.tar.gz" logs
    else
        pack_logs
    fi
    rm -rf "$IMG_ROOT"
    exit "$FAILED"
}
trap 'fail interrupted "signal"; finish' INT TERM

# limits_diag: what podman asked runc for (the rlimits of a container's OCI spec), and whether a container starts with
# limits well under this process's own: the NOTE lines say
limits_diag() {
    local spec
    pm create --name rlimit-diag "$PODMAN_IMAGE" /usr/bin/true >"$LOGS/rlimit-diag.out" 2>&1
    pm init rlimit-diag >>"$LOGS/rlimit-diag.out" 2>&1
    spec=$(grep -rl '"rlimits"' --include=config.json "$PODMAN_STATE" 2>/dev/null | head -n1)
    note "NOTE rlimits podman asked runc for: $([[ -n "$spec" ]] && python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["process"].get("rlimits"))' "$spec" 2>&1)"
    pm rm -f rlimit-diag >/dev/null 2>&1
    if pm run --rm --ulimit nofile=1024:1024 --ulimit nproc=1000:1000 "$PODMAN_IMAGE" /usr/bin/sh -c true >"$LOGS/rlimit-low.out" 2>&1; then
        note "NOTE a container with nofile 1024 and nproc 1000 starts"
    else
        note "NOTE a container with nofile 1024 and nproc 1000 does not start either: $(tail -n1 "$LOGS/rlimit-low.out")"
    fi
}

# choose_gpu_args: the CDI device if this podman takes the spec and the container sees the devices and libcuda
choose_gpu_args() {
    local libcuda probe
    libcuda="$(ldconfig -p | awk '/libcuda\.so\.1 .*x86-64/ {print $NF; exit}')"
    probe="test -c /dev/nvidiactl && test -c /dev/nvidia0 && test -e $libcuda"
    if [[ "${PODMAN_GPU_VIA:-cdi}" == cdi ]]; then
        if pm run --rm --device nvidia.com/gpu=all "$PODMAN_IMAGE" /usr/bin/sh -c "$probe" >"$LOGS/cdi-probe.out" 2>&1; then
            GPU_ARGS=(--device nvidia.com/gpu=all)
            note "SETUP GPU given through CDI ($CDI_SPEC, --device nvidia.com/gpu=all)"
            return 0
        fi
        note "NOTE CDI did not work: $(tail -n1 "$LOGS/cdi-probe.out"); falling back to --device and -v"
    fi
    GPU_ARGS=("${GPU_DEVICE_ARGS[@]}")
    pm run --rm "${GPU_ARGS[@]}" "$PODMAN_IMAGE" /usr/bin/sh -c "$probe" >"$LOGS/device-probe.out" 2>&1 \
        || { limits_diag; echo "the container sees no GPU with --device and -v either: $(tail -n1 "$LOGS/device-probe.out")"; return 1; }
    note "SETUP GPU given with --device and -v (${#GPU_ARGS[@]} arguments)"
}

setup() {
    unpack_bundle "$bundle" || { echo "cannot unpack $bundle"; return 1; }
    [[ -n "$PLUGIN_DIR" ]] || { echo "the bundle has no plugin dir (criu-lib.tar.xz)"; return 1; }
    if ! "$CRIU" check >"$LOGS/criu-check.out" 2>&1 || ! grep -q "Looks good" "$LOGS/criu-check.out"; then
        echo "criu check: $(tail -n1 "$LOGS/criu-check.out")"; return 1
    fi
    podman_setup "$PODMAN_BUNDLE" || return 1
    pm info >"$LOGS/podman-info.out" 2>&1 || { echo "podman info: $(tail -n1 "$LOGS/podman-info.out")"; return 1; }
    pm version >"$LOGS/podman-version.out" 2>&1
    [[ "$(env -i PATH="$PODMAN_ROOT/path:/usr/bin:/bin" criu --version 2>&1)" == *4.2.1* ]] \
        || { echo "the criu wrapper on podman's PATH does not run the bundle's criu 4.2.1"; return 1; }
    install_default_plugins "$LOGS" || return 1
    local counter
    if [[ "$CPU_ONLY" == 1 ]]; then
        counter="$PODMAN_STATE/cpu-counter.sh"
        write_cpu_counter "$counter"
        COUNTER_ARGS=()
    else
        build_programs >"$LOGS/build.out" 2>&1 || { echo "building the test programs failed (build.out)"; return 1; }
        counter="$BIN/cuda_counter"
        COUNTER_ARGS=(--mib "$COUNTER_MIB" --tick-ms 20)
        write_cdi_spec || return 1
        cp "$CDI_SPEC" "$LOGS/cdi-nvidia.yaml"
    fi
    if [[ "$CPU_ONLY" == 1 && "${PODMAN_CPU_CDI:-0}" == 1 ]]; then
        write_cdi_spec || return 1   # stand-in device nodes and libraries (podman-cpu-local.sh makes them)
        cp "$CDI_SPEC" "$LOGS/cdi-nvidia.yaml"
    fi
    build_image "$counter" >"$LOGS/image.out" 2>&1 || { echo "podman import of the counter image failed: $(tail -n1 "$LOGS/image.out")"; return 1; }
    note "SETUP limits given to containers: nofile $(ulimit -Sn):$(ulimit -Hn), nproc $(podman_nproc); $(grep CapEff /proc/self/status | tr -s "\t" " ")"
    [[ "$CPU_ONLY" == 1 && "${PODMAN_CPU_CDI:-0}" != 1 ]] || choose_gpu_args || return 1
    note "SETUP $(pm --version), runc $(grep -m1 '^runc' "$PODMAN_ROOT/podman/VERSIONS" | cut -d' ' -f2), criu $("$CRIU" --version | awk '/Version/ {print $2}'), plugins in $CRIU_PLUGIN_DEFAULT, $(pm info -f '{{.Store.GraphDriverName}} storage, cgroups {{.Host.CgroupsVersion}} ({{.Host.CgroupManager}})' 2>/dev/null)$([[ "$CPU_ONLY" == 1 ]] && echo ", CPU only" || echo ", $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n1)")"
}

# setup's reason for stopping is its last line of output; its SETUP/NOTE lines are in the summary
if ! setup >"$LOGS/setup.out" 2>&1; then
    grep -E '^(SETUP|NOTE)' "$SUMMARY"
    fail setup "$(tail -n1 "$LOGS/setup.out")"; finish
fi
grep -E '^(SETUP|NOTE)' "$SUMMARY"
declare -A RUNS=()
for c in $CASES; do
    # a case asked for again (bench-cri.sh repeats export) gets a container name of its own: podman-export-2, ...
    RUNS[$c]=$((${RUNS[$c]:-0} + 1))
    sfx=""; ((RUNS[$c] > 1)) && sfx="-${RUNS[$c]}"
    case "$c" in
        checkpoint) case_podman_checkpoint podman-checkpoint ;;
        export) case_podman_export "podman-export$sfx" ;;
        no-plugins) case_podman_no_plugins podman-no-plugins ;;
        rounds) case_podman_rounds podman-rounds ;;
        *) fail "$c" "unknown case (PODMAN_CASES)" ;;
    esac
done
finish
