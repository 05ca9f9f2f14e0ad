#!/usr/bin/env bash
# Builds the local Docker images the integration tests run criu in, from Debian root filesystems made with
# debootstrap (no image registry is reachable here):
#   criu-java-gpu/criu:4.2.1  Debian sid    (criu 4.2.1, the version that works on kernel 6.18)
#   criu-java-gpu/criu:4.1.1  Debian trixie (criu 4.1.1, older plugin ABI: 12 hooks)
# An image is rebuilt only when its recipe (suite, packages, this script) changed: the recipe hash is stored
# in the image label dev.criugpu.recipe.
#
# Usage: build.sh [sid|trixie ...]   (default: both)
# Env:   DEBIAN_MIRROR (default http://deb.debian.org/debian), CRIU_IMAGE_FORCE=1 rebuilds regardless.
set -euo pipefail

MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
PACKAGES="criu,libcriu-dev,python3-pycriu,procps,util-linux,iproute2,zlib1g,ca-certificates,openjdk-25-jre-headless"
LABEL="dev.criugpu.recipe"
SELF="$(readlink -f "${BASH_SOURCE[0]}")"

image_for_suite() {
    case "$1" in
        sid) echo "criu-java-gpu/criu:4.2.1" ;;
        trixie) echo "criu-java-gpu/criu:4.1.1" ;;
        *) echo "build.sh: unknown suite '$1' (expected sid or trixie)" >&2; return 2 ;;
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

main() {
    local suites=("$@")
    [[ ${#suites[@]} -gt 0 ]] || suites=(sid trixie)
    command -v debootstrap >/dev/null || { echo "build.sh: debootstrap is not installed" >&2; exit 1; }
    docker info >/dev/null 2>&1 || { echo "build.sh: docker daemon is not reachable" >&2; exit 1; }
    local pids=() suite rc=0
    # The two suites are independent: build them side by side (network-bound, ~1 min each).
    for suite in "${suites[@]}"; do
        image_for_suite "$suite" >/dev/null
        build_suite "$suite" &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do
        wait "$pid" || rc=1
    done
    exit "$rc"
}

main "$@"
