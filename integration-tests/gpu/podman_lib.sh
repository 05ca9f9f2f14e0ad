# What run-podman.sh needs to drive the carried podman (podman-bundle.sh) on a host that has no podman, no
# container config and no image registry. Source after lib.sh and unpack_bundle (it uses CRIU, JDK, PLUGIN_DIR).
# Nothing here reads the host's /etc/containers: podman gets its own containers.conf, storage.conf,
# registries.conf and policy.json through the environment (pm), and a criu wrapper first on its PATH.

PODMAN_ROOT=/var/tmp/criu-gpu-podman       # the podman/ prefix and the state (storage, run, config) below it
PODMAN_STATE="$PODMAN_ROOT/state"
CRIU_PLUGIN_DEFAULT=/usr/lib/criu          # compiled into sid's criu 4.2.1 (checked in install_default_plugins)
CDI_SPEC=/etc/cdi/nvidia.yaml
PODMAN_IMAGE=localhost/criu-gpu-counter:test

# podman_nproc: SOFT:HARD process limit for a container, this shell's capped at the kernel's pid_max
podman_nproc() {
    local max soft hard
    max=$(cat /proc/sys/kernel/pid_max)
    soft=$(ulimit -Su); hard=$(ulimit -Hu)
    [[ "$soft" == unlimited || "$soft" -gt "$max" ]] && soft=$max
    [[ "$hard" == unlimited || "$hard" -gt "$max" ]] && hard=$max
    echo "$soft:$hard"
}

# pm ARGS...: the carried podman with only our configuration; bounded like every wait
pm() {
    local -a args=("$@")
    # podman as root asks runc for more open files than this process's hard limit; where root lacks CAP_SYS_RESOURCE
    # (the GPU host) runc's setrlimit then fails with EPERM: a container gets its starter's open-file limits, and at
    # most pid_max processes (measured there: nproc 1000 starts, this shell's 515506 is refused, pid_max is 32768)
    [[ "${1:-}" == run || "${1:-}" == create ]] && args=("$1" --ulimit "nofile=$(ulimit -Sn):$(ulimit -Hn)" --ulimit "nproc=$(podman_nproc)" "${@:2}")
    env -i PATH="$PODMAN_ROOT/path:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        HOME="$PODMAN_STATE/home" TMPDIR="$PODMAN_STATE/tmp" \
        CONTAINERS_CONF="$PODMAN_STATE/containers.conf" CONTAINERS_STORAGE_CONF="$PODMAN_STATE/storage.conf" \
        CONTAINERS_REGISTRIES_CONF="$PODMAN_STATE/registries.conf" \
        timeout -k 10 "${PODMAN_CMD_TIMEOUT:-300}" "$PODMAN_ROOT/podman/bin/podman" "${args[@]}"
}

# podman_teardown: every container of an earlier run removed, its mounts gone, the state folder deleted
podman_teardown() {
    if [[ -x "$PODMAN_ROOT/podman/bin/podman" && -f "$PODMAN_STATE/containers.conf" ]]; then
        pm rm --all --force --time 0 >/dev/null 2>&1 || true
    fi
    local m
    # deepest first: conmon's shm mounts and runc's leftovers under the state folder
    for m in $(awk -v p="$PODMAN_ROOT/" 'index($2, p) == 1 {print $2}' /proc/mounts | sort -r); do
        umount -l "$m" 2>/dev/null || true
    done
    rm -rf "$PODMAN_ROOT"
}

# podman_setup PODMAN_BUNDLE_DIR: unpacks podman, writes its configuration, puts a criu wrapper on its PATH
podman_setup() {
    local bundle="$1" p="$PODMAN_ROOT/podman" s="$PODMAN_STATE"
    [[ -f "$bundle/podman.tar.xz" ]] || { echo "no podman.tar.xz in $bundle (build it with podman-bundle.sh)"; return 1; }
    podman_teardown
    private_dir "$PODMAN_ROOT" || return 1
    mkdir -p "$PODMAN_ROOT/path" "$s"/{storage,run,tmp,cni,home/.config/containers}
    tar -C "$PODMAN_ROOT" -xJf "$bundle/podman.tar.xz" || { echo "cannot unpack $bundle/podman.tar.xz"; return 1; }
    # runc and podman run the criu they find on PATH: the bundle's (sid's criu, started through sid's loader)
    printf '#!/bin/sh\nexec "%s" "$@"\n' "$CRIU" >"$PODMAN_ROOT/path/criu"
    chmod 755 "$PODMAN_ROOT/path/criu"
    cat >"$s/containers.conf" <<EOF
[containers]
netns = "none"
apparmor_profile = "unconfined"
seccomp_profile = "$p/share/containers/seccomp.json"
log_driver = "k8s-file"

[network]
network_config_dir = "$s/cni"

[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$s/events.log"
runtime = "runc"
conmon_path = ["$p/bin/conmon"]
helper_binaries_dir = ["$p/bin"]
tmp_dir = "$s/tmp/libpod"
static_dir = "$s/storage/libpod"
volume_path = "$s/storage/volumes"

[engine.runtimes]
runc = ["$p/bin/runc"]
EOF
    cat >"$s/storage.conf" <<EOF
[storage]
driver = "vfs"
runroot = "$s/run"
graphroot = "$s/storage"
EOF
    echo 'unqualified-search-registries = []' >"$s/registries.conf"
    # criu's options for runc's checkpoint and restore, given per container (podman run --annotation
    # org.criu.config=FILE; /etc/criu/runc.conf does the same for every container). The host has neither iptables
    # nor nft, so criu's default network lock (iptables-restore) cannot run; a container without a network has
    # only its loopback, which needs no lock.
    echo 'network-lock skip' >"$s/criu-runc.conf"
    echo '{"default": [{"type": "insecureAcceptAnything"}]}' >"$s/home/.config/containers/policy.json"
}

# ------------------------------------------------------------------ criu's default plugin directory
# install_default_plugins LOGDIR: our plugin dir as criu's default one, by the README's steps (copy, make-aot.sh,
# doctor). A directory that was there before is set aside and put back by restore_default_plugins.
install_default_plugins() {
    local logdir="$1"
    grep -aq "$CRIU_PLUGIN_DEFAULT/" "$E2E_ROOT/criu/criu.bin" \
        || { echo "the bundle's criu does not name $CRIU_PLUGIN_DEFAULT/ as its plugin dir"; return 1; }
    if [[ -e "$CRIU_PLUGIN_DEFAULT" && ! -e "$PODMAN_ROOT/.plugins-installed" ]]; then
        rm -rf "$CRIU_PLUGIN_DEFAULT.before-run-podman"
        mv "$CRIU_PLUGIN_DEFAULT" "$CRIU_PLUGIN_DEFAULT.before-run-podman"
    fi
    rm -rf "$CRIU_PLUGIN_DEFAULT" "$CRIU_PLUGIN_DEFAULT.absent"
    touch "$PODMAN_ROOT/.plugins-installed"
    mkdir -p "$CRIU_PLUGIN_DEFAULT"
    cp -r "$PLUGIN_DIR/." "$CRIU_PLUGIN_DEFAULT/"
    bash "$CRIU_PLUGIN_DEFAULT/bin/make-aot.sh" "$JDK" "$CRIU_PLUGIN_DEFAULT" >"$logdir/make-aot.out" 2>&1 \
        || { echo "make-aot.sh failed (make-aot.out)"; return 1; }
    # its verdict is noted, not a stop: the cases show whether criu really loads the plugins
    "$CRIU_PLUGIN_DEFAULT/bin/criu-gpu" doctor >"$logdir/doctor.out" 2>&1 \
        || note "NOTE criu-gpu doctor failed: $(grep -v '^ ' "$logdir/doctor.out" | tail -n1)"
}

# plugins_absent / plugins_present: criu's default plugin dir moved out of criu's sight and back
plugins_absent() { mv "$CRIU_PLUGIN_DEFAULT" "$CRIU_PLUGIN_DEFAULT.absent"; }
plugins_present() { [[ ! -d "$CRIU_PLUGIN_DEFAULT.absent" ]] || mv "$CRIU_PLUGIN_DEFAULT.absent" "$CRIU_PLUGIN_DEFAULT"; }

restore_default_plugins() {
    [[ -e "$PODMAN_ROOT/.plugins-installed" ]] || return 0
    rm -rf "$CRIU_PLUGIN_DEFAULT" "$CRIU_PLUGIN_DEFAULT.absent"
    [[ ! -e "$CRIU_PLUGIN_DEFAULT.before-run-podman" ]] || mv "$CRIU_PLUGIN_DEFAULT.before-run-podman" "$CRIU_PLUGIN_DEFAULT"
    rm -f "$PODMAN_ROOT/.plugins-installed"
}

# ------------------------------------------------------------------ the GPU, given as users give it
# write_cdi_spec: a CDI spec for the host's NVIDIA devices (but the minors in CDI_SKIP_GPUS, "1 2") and driver libraries (what `nvidia-ctk cdi generate`
# writes for compute, without its hooks: each library is mounted at its own path and at its soname, no
# nvidia-smi and no persistenced socket, which the counter does not use). An existing spec is set
# aside and put back by remove_cdi_spec.
write_cdi_spec() {
    local libcuda libdir ver f link dev
    libcuda="$(ldconfig -p | awk '/libcuda\.so\.1 .*x86-64/ {print $NF; exit}')"
    [[ -n "$libcuda" ]] || { echo "ldconfig knows no libcuda.so.1"; return 1; }
    libcuda="$(readlink -f "$libcuda")"
    libdir="$(dirname "$libcuda")"
    ver="${libcuda##*/libcuda.so.}"
    local -a devs=() mounts=()
    for dev in /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia-uvm-tools /dev/nvidia[0-9]*; do
        [[ -c "$dev" ]] || continue
        [[ " ${CDI_SKIP_GPUS:-} " == *" ${dev#/dev/nvidia} "* ]] && continue   # a node without these GPUs (run-cri.sh)
        devs+=("$dev")
    done
    # the compute libraries of nvidia-ctk's list (libcuda dlopens the PTX JIT, nvvm and gpucomp as needed)
    for f in "$libdir"/{libcuda,libcudadebugger,libnvidia-ptxjitcompiler,libnvidia-nvvm,libnvidia-gpucomp,libnvidia-ml,libnvidia-cfg,libnvidia-opencl}.so."$ver"; do
        [[ -f "$f" ]] || continue
        mounts+=("$f:$f")
        for link in "$libdir"/*.so.[0-9]; do
            [[ -L "$link" && "$(readlink -f "$link")" == "$f" ]] && mounts+=("$f:$link")
        done
    done
    mkdir -p "$(dirname "$CDI_SPEC")"
    if [[ -e "$CDI_SPEC" && ! -e "$PODMAN_ROOT/.cdi-written" ]]; then mv "$CDI_SPEC" "$CDI_SPEC.before-run-podman"; fi
    touch "$PODMAN_ROOT/.cdi-written"
    {
        echo 'cdiVersion: "0.5.0"'
        echo 'kind: "nvidia.com/gpu"'
        echo 'devices:'
        for dev in "${devs[@]}"; do
            [[ "$dev" =~ ^/dev/nvidia([0-9]+)$ ]] || continue
            echo "  - name: \"${BASH_REMATCH[1]}\""
            echo "    containerEdits:"
            echo "      deviceNodes:"
            echo "        - path: \"$dev\""
        done
        echo '  - name: "all"'
        echo '    containerEdits:'
        echo '      deviceNodes:'
        for dev in "${devs[@]}"; do [[ "$dev" =~ ^/dev/nvidia[0-9]+$ ]] && echo "        - path: \"$dev\""; done
        echo 'containerEdits:'
        echo '  deviceNodes:'
        for dev in "${devs[@]}"; do [[ "$dev" =~ ^/dev/nvidia[0-9]+$ ]] || echo "    - path: \"$dev\""; done
        # the image's loader searches the multiarch directory by default; elsewhere it must be told
        case "$libdir" in
            /usr/lib/x86_64-linux-gnu|/lib/x86_64-linux-gnu) ;;
            *) echo '  env:'; echo "    - \"LD_LIBRARY_PATH=$libdir\"" ;;
        esac
        echo '  mounts:'
        for f in "${mounts[@]}"; do
            echo "    - hostPath: \"${f%%:*}\""
            echo "      containerPath: \"${f#*:}\""
            echo '      options: ["ro", "nosuid", "nodev", "bind"]'
        done
    } >"$CDI_SPEC"
    # the same, for --device and -v (the fallback when this podman cannot use the CDI spec)
    GPU_DEVICE_ARGS=()
    for dev in "${devs[@]}"; do GPU_DEVICE_ARGS+=(--device "$dev"); done
    for f in "${mounts[@]}"; do GPU_DEVICE_ARGS+=(-v "$f:ro"); done
    case "$libdir" in /usr/lib/x86_64-linux-gnu|/lib/x86_64-linux-gnu) ;; *) GPU_DEVICE_ARGS+=(-e "LD_LIBRARY_PATH=$libdir") ;; esac
}

remove_cdi_spec() {
    [[ -e "$PODMAN_ROOT/.cdi-written" ]] || return 0
    rm -f "$CDI_SPEC"
    [[ ! -e "$CDI_SPEC.before-run-podman" ]] || mv "$CDI_SPEC.before-run-podman" "$CDI_SPEC"
    rm -f "$PODMAN_ROOT/.cdi-written"
}

# ------------------------------------------------------------------ the image
# copy_libs ROOTFS FILE...: the shared libraries ldd names for the files (the loader included), at their own paths
copy_libs() {
    local root="$1" f lib
    shift
    for f in "$@"; do
        for lib in $(ldd "$f" 2>/dev/null | grep -oE '/[^ ]+'); do
            [[ -e "$root$lib" ]] && continue
            mkdir -p "$root$(dirname "$lib")"
            cp -L "$lib" "$root$lib"
        done
    done
}

# write_cpu_counter FILE: the lines cuda_counter prints, from a shell: ticks, and verify/exit on SIGUSR1/SIGTERM (no
# memory to check), for the CPU-only runs of run-podman.sh and run-cri.sh
write_cpu_counter() {
    cat >"$1" <<'SH'
#!/bin/sh
i=0
trap 'echo "[p $$] verify counter=$i bad=0"' USR1
trap 'echo "[p $$] exit counter=$i bad=0"; exit 0' TERM
while :; do i=$((i + 1)); echo "[p $$] tick $i"; sleep 0.02; done
SH
    chmod 755 "$1"
}

# counter_rootfs ROOT COUNTER: a container's root filesystem in ROOT holding /bin/sh, sleep, the counter program as
# /usr/bin/counter and the host's libraries they need (the images of run-podman.sh and run-cri.sh)
counter_rootfs() {
    local root="$1" counter="$2" sh sleep
    sh="$(readlink -f /bin/sh)"
    sleep="$(readlink -f "$(command -v sleep)")"
    rm -rf "$root"
    mkdir -p "$root"/{dev,proc,sys,tmp,out,etc,usr/bin,usr/sbin,usr/lib,usr/lib64}
    for d in bin sbin lib lib64; do ln -s "usr/$d" "$root/$d"; done   # merged /usr: ldd's paths land either way
    cp "$sh" "$root/usr/bin/sh"
    cp "$sleep" "$root/usr/bin/sleep"
    cp "$counter" "$root/usr/bin/counter"
    copy_libs "$root" "$sh" "$sleep" "$counter"
    # the counter loads libcuda at run time (not in its ldd); the CDI spec mounts the driver's libraries, and what
    # they need from the C library (librt, libdl, libpthread stubs...) must be in the image, or CUDA says
    # "driver version is insufficient" (measured on the GPU host)
    local driverlib
    for driverlib in $(ldconfig -p | awk '/lib(cuda|nvidia-ml)\.so\.1 .*x86-64/ {print $NF}'); do
        copy_libs "$root" "$(readlink -f "$driverlib")"
    done
    echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
    echo 'root:x:0:' >"$root/etc/group"
}

# build_image COUNTER: the counter's root filesystem imported with `podman import` (no registry)
build_image() {
    local root="$PODMAN_STATE/image-rootfs"
    counter_rootfs "$root" "$1" || return 1
    tar -C "$root" -cf "$PODMAN_STATE/image.tar" . || return 1
    pm import "$PODMAN_STATE/image.tar" "$PODMAN_IMAGE"
}
