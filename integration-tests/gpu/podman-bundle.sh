#!/usr/bin/env bash
# Builds .podman-bundle/, root podman for the GPU test host (Ubuntu 24.04, glibc 2.39, no network), from Debian
# bookworm's packages: bookworm's glibc (2.36) is older than the host's, so its binaries run there with the host's
# own loader and libc; only the other shared libraries travel.
#   podman.tar.xz  podman/   bin/{podman,conmon,runc}, lib/ (the DT_NEEDED closure of the three, glibc's own
#                            libraries left out; found through DT_RPATH $PREFIX/lib, set with patchelf),
#                            share/containers/seccomp.json (containers-common's default profile)
#   MANIFEST.txt   package versions, sizes, checksums
# The OCI runtime is runc, not crun: bookworm's crun 1.8.1 is built without libcriu (it has no checkpoint), while
# runc runs the `criu` it finds on PATH (criu swrk), which lets run-podman.sh put the bundle's criu 4.2.1 there.
# The host scripts unpack it at /var/tmp/criu-gpu-podman (PREFIX is its podman/; run-podman.sh writes the config
# files beside it).
#
# Usage (on the development machine, as root for apt): integration-tests/gpu/podman-bundle.sh [OUT_DIR]
# Env: DEBIAN_MIRROR (default http://deb.debian.org/debian), BUNDLE_CACHE (default /var/tmp/criu-gpu-bundle-cache)
set -euo pipefail

REPO="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
OUT="${1:-$REPO/.podman-bundle}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
CACHE="${BUNDLE_CACHE:-/var/tmp/criu-gpu-bundle-cache}"
SUITE=bookworm
ROOT_PKGS=(podman conmon runc golang-github-containers-common)

log() { echo "podman-bundle: $*"; }
die() { echo "podman-bundle: $*" >&2; exit 1; }

PREFIX=/var/tmp/criu-gpu-podman/podman   # must match podman_lib.sh: the RPATH names it
for tool in apt-get apt-cache dpkg readelf xz tar patchelf; do
    command -v "$tool" >/dev/null || die "$tool is not installed"
done

STAGE="$(mktemp -d /var/tmp/criu-gpu-podman-bundle.XXXXXX)"
trap 'rm -rf "$STAGE"' EXIT
source "$REPO/integration-tests/gpu/lib.sh"   # private_dir
source "$REPO/integration-tests/gpu/deb_lib.sh"

assemble() {
    local dest="$STAGE/podman" f
    mkdir -p "$dest/bin" "$dest/lib" "$dest/share/containers"
    cp "$ROOTFS/usr/bin/podman" "$dest/bin/podman"
    cp "$ROOTFS/usr/bin/conmon" "$dest/bin/conmon" 2>/dev/null || cp "$ROOTFS/usr/libexec/podman/conmon" "$dest/bin/conmon"
    cp "$ROOTFS/usr/sbin/runc" "$dest/bin/runc"
    cp "$ROOTFS/usr/share/containers/seccomp.json" "$dest/share/containers/seccomp.json"
    copy_needed_closure "$dest/lib" "$dest/bin/podman" "$dest/bin/conmon" "$dest/bin/runc"
    # The libraries are found through an absolute DT_RPATH (searched for the whole dependency tree), not
    # LD_LIBRARY_PATH: podman starts conmon with a clean environment, runc re-executes itself for `runc init` from
    # a memfd with another one ($ORIGIN means nothing there), and criu, which podman and runc start, must see the
    # host's libraries only.
    for f in "$dest/bin/"* "$dest/lib/"*; do
        patchelf --force-rpath --set-rpath "$PREFIX/lib" "$f"
    done
    chmod 755 "$dest/bin/"*
    grep -E '^(podman|conmon|runc|crun|golang-github-containers-common) ' "$STAGE/versions" >"$dest/VERSIONS"
    private_dir "${PREFIX%/*}" || die "cannot make ${PREFIX%/*}"
    rm -rf "$PREFIX"
    cp -a "$dest" "$PREFIX"
    "$PREFIX/bin/podman" --version >/dev/null && "$PREFIX/bin/conmon" --version >/dev/null && "$PREFIX/bin/runc" --version >/dev/null \
        || { rm -rf "$PREFIX"; die "the bundled podman, conmon or runc does not run here"; }
    rm -rf "$PREFIX"
    log "podman/: $(du -sh "$dest" | cut -f1) ($(ls "$dest/lib" | wc -l) libraries: $(ls "$dest/lib" | paste -sd' '))"
}

main() {
    fetch_packages "${ROOT_PKGS[@]}"
    assemble
    mkdir -p "$STAGE/out"
    tar -C "$STAGE" --owner=0 --group=0 -cf - podman | xz -T0 -6 >"$STAGE/out/podman.tar.xz"
    {
        echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname) from Debian $SUITE"
        cat "$STAGE/podman/VERSIONS"
        echo "libraries: $(ls "$STAGE/podman/lib" | paste -sd' ')"
        (cd "$STAGE/out" && ls -l podman.tar.xz && sha256sum podman.tar.xz)
    } >"$STAGE/out/MANIFEST.txt"
    rm -rf "$OUT"
    mkdir -p "$OUT"
    cp "$STAGE/out/"* "$OUT/"
    log "wrote $OUT ($(du -sh "$OUT" | cut -f1)):"
    cat "$OUT/MANIFEST.txt"
}

main
