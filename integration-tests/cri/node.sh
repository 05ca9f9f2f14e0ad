#!/bin/sh
# A Kubernetes node without the kubelet, inside the criu-gpu-cri-node image (integration-tests/cri/build-image.sh):
# Debian's containerd 2.1.9 with its CRI plugin, runc 1.3.6, criu 4.2.1 and a local registry (Debian's
# docker-registry on 127.0.0.1:5000, since no image registry can be reached here: containerd pulls a checkpoint's
# base image again when it restores one). What the kubelet would do is left to the CRI client (CriCheckpointIT).
# The registry and containerd (so its pods, which take the node's network, and the runc and criu it runs) are in a
# network namespace of the node's own, NETNS, with a loopback only: no other local user can push to that registry or
# take its port first.
#
#   node.sh start SOCKET   checks the node (one line per problem, exit 1), starts the registry and containerd (CRI on
#                          the unix socket SOCKET), builds a one-layer busybox image, pushes it to the registry as
#                          localhost:5000/criu-gpu-cri/busybox:1 (pulled through CRI afterwards, as a kubelet does);
#                          exits once both answer (bounded polls), leaving them running
#   node.sh push-image NAME ROOTFS   a one-layer image of the directory ROOTFS pushed to the local registry as NAME
#                          (the GPU host's counter image: run-cri.sh)
#   node.sh logs           the last lines of containerd's and the registry's logs; while a criu runs (a call that
#                          timed out), every thread's state, wait channel and tracer, and criu's restore logs
# Runs in the CPU test's node container and on the GPU host (run-cri.sh, with the binaries of cri-bundle.sh on PATH).
#
# The containerd settings that matter for checkpoint/restore are in write_config below.
set -eu

STATE=/var/lib/criu-gpu-cri
CONFIG=/etc/containerd/criu-gpu-cri.toml
NETNS=/run/criu-gpu-cri/netns
IMAGE=localhost:5000/criu-gpu-cri/busybox:1
WAIT_S=60

die() { echo "criu-gpu-cri: $*" >&2; exit 1; }

# What a user's node needs for CRI checkpoint/restore, each as one line.
check_node() {
    problems=0
    criu=$(command -v criu 2>/dev/null || true)
    if [ -z "$criu" ]; then
        echo "criu-gpu-cri: criu is not on containerd's PATH ($PATH): CheckpointContainer fails with \"CRIU binary not found or too old\"; install criu (>= 4.0) into /usr/sbin or /usr/bin" >&2
        problems=$((problems + 1))
    fi
    command -v runc >/dev/null 2>&1 || { echo "criu-gpu-cri: runc is not on PATH: containerd's runc shim runs it (and runc runs criu)" >&2; problems=$((problems + 1)); }
    # runc runs criu through its RPC without --lib: criu loads plugins only from its compiled-in default directory.
    for so in cuda_plugin.so amdgpu_plugin.so; do
        if [ ! -f "/usr/lib/criu/$so" ]; then
            echo "criu-gpu-cri: /usr/lib/criu/$so is missing: criu run by containerd/runc loads plugins only from /usr/lib/criu (it gets no --lib and no environment); copy the plugin dir there (cp -r native/target/criu-lib/. /usr/lib/criu/)" >&2
            problems=$((problems + 1))
        fi
    done
    if [ -n "$criu" ] && ! out=$(criu check 2>&1); then
        echo "criu-gpu-cri: \`criu check\` fails here: $(printf '%s\n' "$out" | grep -v RLIMIT_NOFILE | tail -n 1)" >&2
        problems=$((problems + 1))
    fi
    [ "$problems" = 0 ] || exit 1
}

# containerd 2.x (config version 3). Checkpoint/restore through CRI needs no switch of its own; what matters here:
# * the runc runtime (runc v2 shim): the only one whose checkpoint options containerd's CRI sets;
# * the native snapshotter, for CRI and for the transfer service's unpacking (CRI's PullImage): overlayfs cannot
#   be mounted on the overlayfs of this Docker container (a real node keeps the default, overlayfs);
# * restrict_oom_score_adj: the pause container's oom_score_adj (-998) needs CAP_SYS_RESOURCE, which this Docker
#   container lacks (runc then fails with "can't get final child's PID from pipe: EOF"); a real node leaves it off;
# * disable_apparmor: this host has no AppArmor (a real node leaves it off);
# * the sandbox ("pause") image pinned to the local one, and the registry's hosts.toml (plain HTTP).
write_config() {
    mkdir -p "$(dirname "$CONFIG")" /etc/containerd/certs.d/localhost:5000 /etc/docker/registry
    cat >"$CONFIG" <<EOF
version = 3
root = "$STATE/containerd"
state = "/run/criu-gpu-cri/state"

[grpc]
  address = "$SOCKET"

[plugins."io.containerd.transfer.v1.local"]
  [[plugins."io.containerd.transfer.v1.local".unpack_config]]
    platform = "linux/amd64"
    snapshotter = "native"

[plugins."io.containerd.cri.v1.images"]
  snapshotter = "native"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "$IMAGE"
  [plugins."io.containerd.cri.v1.images".registry]
    config_path = "/etc/containerd/certs.d"

[plugins."io.containerd.cri.v1.runtime"]
  enable_cdi = true
  cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]
  disable_apparmor = true
  restrict_oom_score_adj = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        SystemdCgroup = false
EOF
    cat >/etc/containerd/certs.d/localhost:5000/hosts.toml <<EOF
server = "http://localhost:5000"
[host."http://localhost:5000"]
  capabilities = ["pull", "resolve", "push"]
EOF
    cat >/etc/docker/registry/criu-gpu-cri.yml <<EOF
version: 0.1
storage:
  filesystem:
    rootdirectory: $STATE/registry
http:
  addr: 127.0.0.1:5000
EOF
}

await() { # await WHAT LOG COMMAND...
    what=$1 log=$2
    shift 2
    end=$(($(date +%s) + WAIT_S))
    until "$@" >/dev/null 2>&1; do
        if [ "$(date +%s)" -ge "$end" ]; then
            echo "criu-gpu-cri: $what did not answer within ${WAIT_S}s; last lines of $log:" >&2
            tail -n 15 "$log" >&2
            exit 1
        fi
        sleep 0.1
    done
}

# push_image NAME ROOTFS: a one-layer OCI image of the directory ROOTFS (entrypoint: sleep), built in a containerd
# namespace of its own and pushed to the local registry: CRI's namespace (k8s.io) gets it only by a CRI PullImage.
push_image() {
    name=$1 rootfs=$2
    dir=$(mktemp -d)
    mkdir -p "$dir/oci/blobs/sha256"
    tar --numeric-owner --owner=0 --group=0 --sort=name --mtime=@0 -C "$rootfs" -cf "$dir/layer.tar" .
    layer=$(sha256sum "$dir/layer.tar" | cut -d' ' -f1)
    layer_size=$(stat -c %s "$dir/layer.tar")
    mv "$dir/layer.tar" "$dir/oci/blobs/sha256/$layer"
    printf '{"architecture":"amd64","os":"linux","config":{"Env":["PATH=/usr/bin:/bin"],"Entrypoint":["/bin/sleep","infinity"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
        "$layer" >"$dir/config.json"
    config=$(sha256sum "$dir/config.json" | cut -d' ' -f1)
    config_size=$(stat -c %s "$dir/config.json")
    mv "$dir/config.json" "$dir/oci/blobs/sha256/$config"
    printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
        "$config" "$config_size" "$layer" "$layer_size" >"$dir/manifest.json"
    manifest=$(sha256sum "$dir/manifest.json" | cut -d' ' -f1)
    manifest_size=$(stat -c %s "$dir/manifest.json")
    mv "$dir/manifest.json" "$dir/oci/blobs/sha256/$manifest"
    printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"io.containerd.image.name":"%s"}}]}' \
        "$manifest" "$manifest_size" "$name" >"$dir/oci/index.json"
    echo '{"imageLayoutVersion":"1.0.0"}' >"$dir/oci/oci-layout"
    tar -C "$dir/oci" -cf "$dir/image.tar" .
    ctr --address "$SOCKET" -n criu-gpu-cri-build images import "$dir/image.tar" >/dev/null
    nsenter --net="$NETNS" ctr --address "$SOCKET" -n criu-gpu-cri-build images push --plain-http "$name" >"$STATE/push.log" 2>&1 \
        || { tail -n 5 "$STATE/push.log" >&2; die "pushing $name to the local registry failed"; }
    rm -rf "$dir"
}

# The pod sandbox's image (and the CPU test's): busybox (static) and the applets the test's shell program uses.
build_image() {
    rootfs=$(mktemp -d)
    mkdir -p "$rootfs/bin" "$rootfs/tmp"
    cp "$(command -v busybox)" "$rootfs/bin/busybox"
    for applet in sh sleep cat echo; do ln -s busybox "$rootfs/bin/$applet"; done
    push_image "$IMAGE" "$rootfs"
    rm -rf "$rootfs"
}

start() {
    check_node
    mkdir -p "$STATE" "$(dirname "$SOCKET")" /run/criu-gpu-cri
    write_config
    if ! nsenter --net="$NETNS" true 2>/dev/null; then   # made once, kept by a bind mount on NETNS
        : >"$NETNS" && unshare --net="$NETNS" busybox ip link set lo up || die "cannot make the network namespace $NETNS"
    fi
    setsid nsenter --net="$NETNS" docker-registry serve /etc/docker/registry/criu-gpu-cri.yml >"$STATE/registry.log" 2>&1 </dev/null &
    setsid nsenter --net="$NETNS" containerd --config "$CONFIG" --log-level debug >"$STATE/containerd.log" 2>&1 </dev/null &
    await "the local registry (127.0.0.1:5000)" "$STATE/registry.log" nsenter --net="$NETNS" busybox wget -q -O /dev/null http://127.0.0.1:5000/v2/
    await "containerd (CRI on $SOCKET)" "$STATE/containerd.log" ctr --address "$SOCKET" version
    build_image
    echo "criu-gpu-cri: node up: containerd $(containerd --version | awk '{print $3}'), runc $(runc --version | awk 'NR==1 {print $3}'), criu $(criu --version | awk '/Version:/ {print $2}'), $IMAGE in the local registry"
}

case "${1:-}" in
    start)
        [ $# = 2 ] || die "usage: node.sh start SOCKET"
        SOCKET=$2
        start
        ;;
    push-image)
        [ $# = 3 ] || die "usage: node.sh push-image NAME ROOTFS"
        SOCKET=$(sed -n 's/^ *address = "\(.*\)"$/\1/p' "$CONFIG" | head -n1)
        push_image "$2" "$3"
        ;;
    logs)
        tail -n "${2:-40}" "$STATE/containerd.log"
        tail -n 10 "$STATE/registry.log"
        if pgrep -x criu >/dev/null; then
            echo "--- a criu still runs: the node's threads (tid state wchan tracer command)"
            for t in /proc/[0-9]*/task/[0-9]*; do
                printf '%s %s %s tracer=%s %s\n' "${t##*/}" "$(sed 's/.*) \(.\).*/\1/' "$t/stat" 2>/dev/null)" \
                    "$(cat "$t/wchan" 2>/dev/null)" "$(sed -n 's/^TracerPid:\t//p' "$t/status" 2>/dev/null)" \
                    "$(tr '\0' ' ' <"$t/cmdline" 2>/dev/null | cut -c1-100)"
            done
        fi
        # criu's logs of the tasks runc dumped or restored (a failed call's reason is in them, not in runc's line)
        find /run/criu-gpu-cri/state "$STATE" \( -name 'criu-dump.log' -o -name 'restore.log' -o -name 'dump.log' \) \
                -newer "$CONFIG" 2>/dev/null | while read -r f; do
            echo "--- $f (errors and plugin lines, then the last lines)"
            grep -E 'Error|Warn|cuda_plugin|amdgpu_plugin|criu-java-gpu' "$f" | tail -n 25
            tail -n 8 "$f"
        done
        ;;
    *) die "usage: node.sh start SOCKET | node.sh push-image NAME ROOTFS | node.sh logs [LINES]" ;;
esac
