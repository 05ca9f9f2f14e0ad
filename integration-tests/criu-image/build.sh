#!/usr/bin/env bash
# Builds the local Docker images the integration tests run criu in, from Debian root filesystems made with
# debootstrap (no image registry is reachable here):
#   criu-java-gpu/criu:4.2.1  Debian sid    (criu 4.2.1, the version that works on kernel 6.18)
#   criu-java-gpu/criu:4.1.1  Debian trixie (criu 4.1.1, older plugin ABI: 12 hooks)
#   criu-java-gpu/podman:4.2.1  the sid image plus podman, crun and iptables (criu's network lock), with vfs
#                               storage (overlay cannot nest here): podman checkpoint/restore (PodmanCheckpointIT)
# An image is rebuilt only when its recipe (suite, packages, this script) changed: the recipe hash is stored
# in the image label dev.criugpu.recipe (for podman, together with the id of the sid image it derives from).
#
# Usage: build.sh [sid|trixie|podman ...]   (default: all three; podman builds sid first)
# Env:   DEBIAN_MIRROR (default http://deb.debian.org/debian), CRIU_IMAGE_FORCE=1 rebuilds regardless.
set -euo pipefail

MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
PACKAGES="criu,libcriu-dev,python3-pycriu,procps,util-linux,iproute2,zlib1g,ca-certificates,openjdk-25-jre-headless"
PODMAN_PACKAGES="podman crun iptables"
LABEL="dev.criugpu.recipe"
SELF="$(readlink -f "${BASH_SOURCE[0]}")"

image_for_suite() {
    case "$1" in
        sid) echo "criu-java-gpu/criu:4.2.1" ;;
        trixie) echo "criu-java-gpu/criu:4.1.1" ;;
        podman) echo "criu-java-gpu/podman:4.2.1" ;;
        *) echo "build.sh: unknown suite '$1' (expected sid, trixie or podman)" >&2; return 2 ;;
    esac
}

recipe_hash() {
    { echo "suite=$1"; echo "packages=$PACKAGES"; cat "$SELF"; } | sha256sum | cut -c1-16
}

existing_hash() {
    docker image inspect -f "{{index .Config.Labels \"$LABEL\"}}" "$1" 2>/dev/null || true
}

build_suite() {
    local suite="$1" image hash rootfs log
    image="$(image_for_suite "$suite")"
    hash="$(recipe_hash "$suite")"
    if [[ "${CRIU_IMAGE_FORCE:-0}" != 1 && "$(existing_hash "$image")" == "$hash" ]]; then
        echo "build.sh: $image is up to date (recipe $hash)"
        return 0
    fi
    rootfs="$(mktemp -d /var/tmp/criu-rootfs-"$suite".XXXXXX)"
    log="$rootfs.debootstrap.log"
    echo "build.sh: building $image from Debian $suite (recipe $hash)"
    # sid's Release file may look expired to this machine's clock; debootstrap itself does not check
    # Valid-Until, apt inside the image is told not to.
    if ! debootstrap --variant=minbase --include="$PACKAGES" "$suite" "$rootfs" "$MIRROR" >"$log" 2>&1; then
        echo "build.sh: debootstrap of $suite failed; last lines of $log:" >&2
        tail -n 20 "$log" >&2
        rm -rf "$rootfs"
        return 1
    fi
    echo 'Acquire::Check-Valid-Until "false";' >"$rootfs/etc/apt/apt.conf.d/99no-valid-until"
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    local version
    version="$(chroot "$rootfs" criu --version | awk '/Version:/ {print $2}')"
    tar -C "$rootfs" --numeric-owner -c . | docker import \
        -c "LABEL $LABEL=$hash" \
        -c "LABEL dev.criugpu.criu-version=$version" \
        -c 'CMD ["sleep","infinity"]' \
        - "$image" >/dev/null
    rm -rf "$rootfs" "$log"
    echo "build.sh: built $image (criu $version)"
}

# The podman image is the sid image with podman installed by apt inside it (no second debootstrap).
build_podman() {
    local base image hash container
    base="$(image_for_suite sid)"
    image="$(image_for_suite podman)"
    build_suite sid || return 1
    hash="$({ echo "base=$(docker image inspect -f '{{.Id}}' "$base")"; echo "packages=$PODMAN_PACKAGES"; cat "$SELF"; } \
        | sha256sum | cut -c1-16)"
    if [[ "${CRIU_IMAGE_FORCE:-0}" != 1 && "$(existing_hash "$image")" == "$hash" ]]; then
        echo "build.sh: $image is up to date (recipe $hash)"
        return 0
    fi
    echo "build.sh: building $image from $base (recipe $hash)"
    container="criu-image-podman-$$"
    if ! docker run --name "$container" "$base" sh -c "apt-get update -q && DEBIAN_FRONTEND=noninteractive \
            apt-get install -y -q --no-install-recommends $PODMAN_PACKAGES \
            && printf '[storage]\ndriver = \"vfs\"\n' >/etc/containers/storage.conf \
            && rm -rf /var/cache/apt/archives/*.deb /var/lib/apt/lists/*" >"/var/tmp/$container.log" 2>&1; then
        echo "build.sh: installing podman into $base failed; last lines:" >&2
        tail -n 20 "/var/tmp/$container.log" >&2
        docker rm -f "$container" >/dev/null 2>&1 || true
        rm -f "/var/tmp/$container.log"
        return 1
    fi
    docker commit -c "LABEL $LABEL=$hash" -c 'CMD ["sleep","infinity"]' "$container" "$image" >/dev/null
    docker rm "$container" >/dev/null
    rm -f "/var/tmp/$container.log"
    echo "build.sh: built $image ($(docker run --rm "$image" podman --version))"
}

main() {
    local suites=("$@")
    [[ ${#suites[@]} -gt 0 ]] || suites=(trixie podman)
    command -v debootstrap >/dev/null || { echo "build.sh: debootstrap is not installed" >&2; exit 1; }
    docker info >/dev/null 2>&1 || { echo "build.sh: docker daemon is not reachable" >&2; exit 1; }
    local pids=() suite rc=0
    for suite in "${suites[@]}"; do
        image_for_suite "$suite" >/dev/null
    done
    # podman builds sid itself first; a separate sid build would race it.
    if [[ " ${suites[*]} " == *" podman "* ]]; then
        local rest=()
        for suite in "${suites[@]}"; do [[ "$suite" == sid ]] || rest+=("$suite"); done
        suites=("${rest[@]}")
    fi
    # The rest are independent: build them side by side (network-bound, ~1 min each).
    for suite in "${suites[@]}"; do
        if [[ "$suite" == podman ]]; then build_podman & else build_suite "$suite" & fi
        pids+=($!)
    done
    for pid in "${pids[@]}"; do
        wait "$pid" || rc=1
    done
    exit "$rc"
}

main "$@"
