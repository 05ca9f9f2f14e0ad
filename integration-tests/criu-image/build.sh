#!/usr/bin/env bash
# Builds the local Docker images the integration tests run criu in, from Debian root filesystems made with
# debootstrap (no image registry is reachable here):
#   criu-java-gpu/criu:4.2.1  Debian sid    (criu 4.2.1, the version that works on kernel 6.18)
#   criu-java-gpu/criu:4.1.1  Debian trixie (criu 4.1.1, older plugin ABI: 12 hooks)
#   criu-java-gpu/podman:4.2.1  the sid image plus podman, crun and iptables (criu's network lock), with vfs
#                               storage (overlay cannot nest here): podman checkpoint/restore (PodmanCheckpointIT)
#   criu-java-gpu/zdtm:4.2.1  the sid image plus CRIU's own test suite zdtm, from Debian's criu 4.2.1 source (the
#                             orig tarball upstream/fetch-source.sh fetches), built in /opt/criu-4.2.1/test (ZdtmIT)
#   criu-java-gpu/criu:4.3    the sid image with criu 4.3 from Debian experimental (17 plugin hooks: RESTORE_INIT,
#                             DUMP_DEVICES_LATE, UPDATE_INETSK, DUMP_FINISH), for the ITs run with -Dcriugpu.criu=4.3
#   criu-java-gpu/zdtm:4.3    the zdtm image with that criu 4.3 in place of 4.2.1 (zdtm 4.2.1's tests, criu 4.3)
# An image is rebuilt only when its recipe (suite, packages, this script) changed: the recipe hash is stored
# in the image label dev.criugpu.recipe (for podman and zdtm, together with the id of the sid image they derive
# from, and for zdtm the sha256 of the criu source).
#
# Usage: build.sh [sid|trixie|podman|zdtm|criu43|zdtm43 ...]   (default: all six; the derived ones build sid first,
#        zdtm43 zdtm first)
# Env:   DEBIAN_MIRROR (default http://deb.debian.org/debian), CRIU_IMAGE_FORCE=1 rebuilds regardless.
set -euo pipefail

MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
PACKAGES="criu,libcriu-dev,python3-pycriu,procps,util-linux,iproute2,zlib1g,ca-certificates,openjdk-25-jre-headless"
PODMAN_PACKAGES="podman crun iptables"
ZDTM_PACKAGES="make gcc libc6-dev xz-utils protobuf-compiler protobuf-c-compiler libprotobuf-c-dev python3-yaml libaio-dev libcap-dev pkg-config iproute2 libnl-3-dev libnl-route-3-dev iptables"
ZDTM_SRC=/opt/criu-4.2.1
LABEL="dev.criugpu.recipe"
SELF="$(readlink -f "${BASH_SOURCE[0]}")"

image_for_suite() {
    case "$1" in
        sid) echo "criu-java-gpu/criu:4.2.1" ;;
        trixie) echo "criu-java-gpu/criu:4.1.1" ;;
        podman) echo "criu-java-gpu/podman:4.2.1" ;;
        zdtm) echo "criu-java-gpu/zdtm:4.2.1" ;;
        criu43) echo "criu-java-gpu/criu:4.3" ;;
        zdtm43) echo "criu-java-gpu/zdtm:4.3" ;;
        *) echo "build.sh: unknown suite '$1' (expected sid, trixie, podman, zdtm, criu43 or zdtm43)" >&2; return 2 ;;
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
    log="$(mktemp --suffix=.debootstrap.log /var/tmp/criu-rootfs-"$suite".XXXXXX)"
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

# The other images are the sid image (zdtm43: the zdtm image) with more installed by apt inside it (no second
# debootstrap); main builds what they derive from first.
# build_derived NAME BASE PACKAGES SCRIPT HASH_EXTRA [docker run args]: SCRIPT runs after apt, in the container.
build_derived() {
    local name="$1" base="$2" packages="$3" script="$4" extra="$5" image hash container log
    shift 5
    base="$(image_for_suite "$base")"
    image="$(image_for_suite "$name")"
    hash="$({ echo "base=$(docker image inspect -f '{{.Id}}' "$base")"; echo "packages=$packages"; echo "$extra"
              cat "$SELF"; } | sha256sum | cut -c1-16)"
    if [[ "${CRIU_IMAGE_FORCE:-0}" != 1 && "$(existing_hash "$image")" == "$hash" ]]; then
        echo "build.sh: $image is up to date (recipe $hash)"
        return 0
    fi
    echo "build.sh: building $image from $base (recipe $hash)"
    container="criu-image-$name-$$"
    log="$(mktemp --suffix=.log /var/tmp/"$container".XXXXXX)"
    if ! docker run --name "$container" "$@" "$base" sh -c "apt-get update -q && DEBIAN_FRONTEND=noninteractive \
            apt-get install -y -q --no-install-recommends $packages \
            && rm -rf /var/cache/apt/archives/*.deb /var/lib/apt/lists/* && $script" >"$log" 2>&1; then
        echo "build.sh: building $image failed; last lines:" >&2
        tail -n 20 "$log" >&2
        docker rm -f "$container" >/dev/null 2>&1 || true
        rm -f "$log"
        return 1
    fi
    docker commit -c "LABEL $LABEL=$hash" -c 'CMD ["sleep","infinity"]' "$container" "$image" >/dev/null
    docker rm "$container" >/dev/null
    rm -f "$log"
    echo "build.sh: built $image"
}

build_podman() {
    build_derived podman sid "$PODMAN_PACKAGES" "printf '[storage]\ndriver = \"vfs\"\n' >/etc/containers/storage.conf" ""
}

# zdtm's helpers (umount2, zdtm_ct), its library and all its static tests, so that the test list can change without
# a rebuild. The criu source comes in read-only; nothing of it leaves this machine's images and caches.
build_zdtm() {
    local tarball sum
    tarball="$("$(dirname "$SELF")/../upstream/fetch-source.sh")" || return 1
    sum="$(sha256sum "$tarball" | cut -d' ' -f1)"
    build_derived zdtm sid "$ZDTM_PACKAGES" "mkdir -p $ZDTM_SRC && tar -C $ZDTM_SRC --strip-components=1 -xJf /tmp/criu.tar.xz \
            && make -C $ZDTM_SRC/test umount2 zdtm_ct && make -C $ZDTM_SRC/test/zdtm/lib \
            && make -C $ZDTM_SRC/test/zdtm/static -j\$(nproc)" "source=$sum" -v "$tarball:/tmp/criu.tar.xz:ro"
}

# criu 4.3 from Debian experimental over an image's 4.2.1 (criu, libcompel1 and pycriu come as one version); the
# experimental source is gone again afterwards, so that apt in the image sees what it saw before.
CRIU43_SCRIPT="echo 'deb $MIRROR experimental main' >/etc/apt/sources.list.d/experimental.list && apt-get update -q \
        && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends -t experimental criu libcompel1 libcriu2 libcriu-dev \
           python3-pycriu && rm -rf /etc/apt/sources.list.d/experimental.list /var/lib/apt/lists/* \
           /var/cache/apt/archives/*.deb && criu --version | grep -qx 'Version: 4.3'"

build_criu43() {
    build_derived criu43 sid "" "$CRIU43_SCRIPT" "criu=4.3"
}

build_zdtm43() {
    build_derived zdtm43 zdtm "" "$CRIU43_SCRIPT" "criu=4.3"
}

main() {
    local suites=("$@")
    [[ ${#suites[@]} -gt 0 ]] || suites=(trixie podman zdtm criu43 zdtm43)
    command -v debootstrap >/dev/null || { echo "build.sh: debootstrap is not installed" >&2; exit 1; }
    docker info >/dev/null 2>&1 || { echo "build.sh: docker daemon is not reachable" >&2; exit 1; }
    local suite base=() derived=() sid_pid="" zdtm_pid="" want_zdtm43=0 pids=() rc=0
    for suite in "${suites[@]}"; do
        image_for_suite "$suite" >/dev/null
        case "$suite" in
            zdtm43) want_zdtm43=1 ;;
            podman | zdtm | criu43) derived+=("$suite") ;;
            *) base+=("$suite") ;;
        esac
    done
    if ((want_zdtm43)) && [[ " ${derived[*]} " != *" zdtm "* ]]; then derived+=(zdtm); fi
    # podman and zdtm derive from sid: they start once sid is built. The rest are independent: side by side
    # (debootstrap is network-bound, ~1 min each).
    if [[ ${#derived[@]} -gt 0 && " ${base[*]} " != *" sid "* ]]; then base+=(sid); fi
    for suite in "${base[@]}"; do
        build_suite "$suite" &
        if [[ "$suite" == sid ]]; then sid_pid=$!; else pids+=($!); fi
    done
    if [[ -n "$sid_pid" ]] && ! wait "$sid_pid"; then
        rc=1
        derived=()
        want_zdtm43=0
    fi
    for suite in "${derived[@]}"; do
        "build_$suite" &
        if [[ "$suite" == zdtm ]]; then zdtm_pid=$!; else pids+=($!); fi
    done
    if [[ -n "$zdtm_pid" ]] && ! wait "$zdtm_pid"; then
        rc=1
        want_zdtm43=0
    fi
    if ((want_zdtm43)); then
        build_zdtm43 &
        pids+=($!)
    fi
    for pid in "${pids[@]}"; do
        wait "$pid" || rc=1
    done
    exit "$rc"
}

main "$@"
