#!/usr/bin/env bash
# Builds the local Docker image criu-gpu-cri-node:4.2.1 that CriCheckpointIT runs a Kubernetes node in (a node without
# the kubelet: the test speaks CRI itself), from a Debian sid root filesystem made with debootstrap, as
# integration-tests/criu-image/build.sh builds the other criu images (no image registry is reachable here):
#   containerd 2.1.9 (with its CRI plugin and ctr), runc 1.3.6, criu 4.2.1, docker-registry (a local registry: a
#   restore through CRI pulls the checkpoint's base image again), busybox-static (the test pod's image is built from it).
# Our plugin dir is not in the image: the test mounts this build's native/target/criu-lib at /usr/lib/criu.
# The image is rebuilt only when its recipe (suite, packages, this script; node.sh is mounted, not built in) changed: the recipe hash is the
# image label dev.criugpu.recipe.
#
# Usage: integration-tests/cri/build-image.sh
# Env:   DEBIAN_MIRROR (default http://deb.debian.org/debian), CRIU_IMAGE_FORCE=1 rebuilds regardless.
set -euo pipefail

IMAGE="criu-gpu-cri-node:4.2.1"
SUITE=sid
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
PACKAGES="criu,containerd,runc,docker-registry,busybox-static,procps,util-linux,ca-certificates"
LABEL="dev.criugpu.recipe"
SELF="$(readlink -f "${BASH_SOURCE[0]}")"

command -v debootstrap >/dev/null || { echo "cri/build-image.sh: debootstrap is not installed" >&2; exit 1; }
docker info >/dev/null 2>&1 || { echo "cri/build-image.sh: docker daemon is not reachable" >&2; exit 1; }

hash="$({ echo "suite=$SUITE"; echo "packages=$PACKAGES"; cat "$SELF"; } | sha256sum | cut -c1-16)"
if [[ "${CRIU_IMAGE_FORCE:-0}" != 1 \
      && "$(docker image inspect -f "{{index .Config.Labels \"$LABEL\"}}" "$IMAGE" 2>/dev/null || true)" == "$hash" ]]; then
    echo "cri/build-image.sh: $IMAGE is up to date (recipe $hash)"
    exit 0
fi
rootfs="$(mktemp -d /var/tmp/criu-gpu-cri-rootfs.XXXXXX)"
log="$(mktemp --suffix=.debootstrap.log /var/tmp/criu-gpu-cri-rootfs.XXXXXX)"
trap 'rm -rf "$rootfs"' EXIT
echo "cri/build-image.sh: building $IMAGE from Debian $SUITE (recipe $hash)"
if ! debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$rootfs" "$MIRROR" >"$log" 2>&1; then
    echo "cri/build-image.sh: debootstrap of $SUITE failed; last lines of $log:" >&2
    tail -n 20 "$log" >&2
    exit 1
fi
rm -f "$log"
echo 'Acquire::Check-Valid-Until "false";' >"$rootfs/etc/apt/apt.conf.d/99no-valid-until"
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
versions="$(chroot "$rootfs" sh -c 'echo "containerd $(containerd --version | cut -d" " -f3), runc $(runc --version | sed -n "1s/.* //p"), criu $(criu --version | sed -n "s/Version: //p")"')"
for tool in containerd containerd-shim-runc-v2 ctr runc criu docker-registry busybox; do
    chroot "$rootfs" sh -c "command -v $tool" >/dev/null || { echo "cri/build-image.sh: $tool is missing in the root filesystem" >&2; exit 1; }
done
tar -C "$rootfs" --numeric-owner -c . | docker import \
    -c "LABEL $LABEL=$hash" \
    -c "LABEL dev.criugpu.versions=\"$versions\"" \
    -c 'CMD ["sleep","infinity"]' \
    - "$IMAGE" >/dev/null
echo "cri/build-image.sh: built $IMAGE ($versions)"
