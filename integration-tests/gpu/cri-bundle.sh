#!/usr/bin/env bash
# Builds .cri-bundle/, a Kubernetes node's runtime for the GPU test host (Ubuntu 24.04, glibc 2.39, no network) and
# the test's CRI client, for run-cri.sh:
#   cri.tar.xz   cri/bin/   containerd 2.1.9 (CRI), containerd-shim-runc-v2, ctr, runc 1.3.6, docker-registry (a local
#                           registry: a restore through CRI pulls the checkpoint's base image again), busybox (static)
#                           - all Debian sid's, the versions the CPU test's node image has (cri/build-image.sh)
#                cri/lib/   runc's libraries but glibc's (sid's binaries need at most GLIBC_2.38); found through the
#                           DT_RPATH $PREFIX/lib (patchelf), since runc re-executes itself for `runc init`
#   cri-java.tar cri/java/  the CRI client (integration-tests' classes under dev/criugpu/it/cri, CriGpuRounds its main)
#                           and the jars it needs; grpc-netty-shaded without its TLS and non-x86-64 natives
#                           (plain-text gRPC on a unix socket)
#   MANIFEST.txt package versions, sizes, checksums, the jars
# One solid xz archive: the Go binaries share most of their code (21 MB instead of 31 MB compressed one by one).
# The host scripts unpack it at /var/tmp/criu-gpu-cri (PREFIX is its cri/).
#
# Usage (repo root, as root for apt; after `mvn install` and `mvn -pl integration-tests test-compile`):
#   integration-tests/gpu/cri-bundle.sh [OUT_DIR]
# Env: DEBIAN_MIRROR (default http://deb.debian.org/debian), BUNDLE_CACHE (default /var/tmp/criu-gpu-bundle-cache),
#      CRI_BUNDLE_JAVA_ONLY=1 (only cri-java.tar again, after a change to the client; cri.tar.xz kept)
set -euo pipefail

REPO="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
OUT="${1:-$REPO/.cri-bundle}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
CACHE="${BUNDLE_CACHE:-/var/tmp/criu-gpu-bundle-cache}"
SUITE=sid
ROOT_PKGS=(containerd runc docker-registry busybox-static)
JAVA_JARS_RE='/(grpc-(api|core|stub|protobuf|protobuf-lite|util|context|netty-shaded)|protobuf-java|guava|failureaccess|perfmark-api|proto-google-common-protos)-[0-9][^/]*\.jar$'
TEST_CLASSES="$REPO/integration-tests/target/test-classes"

log() { echo "cri-bundle: $*"; }
die() { echo "cri-bundle: $*" >&2; exit 1; }

PREFIX=/var/tmp/criu-gpu-cri/cri   # must match run-cri.sh: the RPATH names it
for tool in apt-get apt-cache dpkg readelf objdump xz tar patchelf zip unzip mvn; do
    command -v "$tool" >/dev/null || die "$tool is not installed"
done
[[ -f "$TEST_CLASSES/dev/criugpu/it/cri/CriGpuRounds.class" ]] \
    || die "$TEST_CLASSES has no CriGpuRounds.class: run mvn -pl integration-tests test-compile first"

STAGE="$(mktemp -d /var/tmp/criu-gpu-cri-bundle.XXXXXX)"
trap 'rm -rf "$STAGE"' EXIT
source "$REPO/integration-tests/gpu/lib.sh"   # private_dir
source "$REPO/integration-tests/gpu/deb_lib.sh"

assemble_binaries() {
    local dest="$STAGE/cri" f
    mkdir -p "$dest/bin" "$dest/lib"
    for f in usr/bin/containerd usr/bin/containerd-shim-runc-v2 usr/bin/ctr usr/sbin/runc usr/bin/docker-registry bin/busybox; do
        [[ -f "$ROOTFS/$f" ]] || f="usr/$f"
        cp "$ROOTFS/$f" "$dest/bin/"
    done
    copy_needed_closure "$dest/lib" "$dest/bin/"*
    for f in "$dest/bin/"* "$dest/lib/"*; do
        readelf -d "$f" 2>/dev/null | grep -q NEEDED && patchelf --force-rpath --set-rpath "$PREFIX/lib" "$f"
    done
    chmod 755 "$dest/bin/"*
    grep -E '^(containerd|runc|docker-registry|busybox-static) ' "$STAGE/versions" >"$dest/VERSIONS"
}

assemble_java() {
    local dest="$STAGE/cri/java" jar
    mkdir -p "$dest"
    (cd "$TEST_CLASSES" && zip -qr "$dest/criu-gpu-cri-client.jar" dev/criugpu/it/cri)
    mvn -B -q -o -f "$REPO/pom.xml" dependency:build-classpath -pl integration-tests -Dmdep.includeScope=test \
        -Dmdep.outputFile="$STAGE/classpath.txt" >"$STAGE/mvn.log" 2>&1 || { cat "$STAGE/mvn.log" >&2; die "mvn dependency:build-classpath failed"; }
    for jar in $(tr ':' '\n' <"$STAGE/classpath.txt" | grep -E "$JAVA_JARS_RE"); do
        cp "$jar" "$dest/"
    done
    jar="$(ls "$dest"/grpc-netty-shaded-*.jar)" || die "grpc-netty-shaded is not on integration-tests' classpath"
    zip -q -d "$jar" 'META-INF/native/*tcnative*' 'META-INF/native/*aarch_64*' 'META-INF/native/*osx*' \
        'META-INF/native/*windows*' 'META-INF/native/*s390*' 'META-INF/native/*ppcle*' 'META-INF/native/*riscv*' \
        'META-INF/native/*loongarch*' >/dev/null 2>&1 || true
    unzip -l "$jar" >"$STAGE/netty.list"   # listed first: grep -q would cut unzip's pipe (pipefail)
    grep -q 'native/libio_grpc_netty_shaded_netty_transport_native_epoll_x86_64.so' "$STAGE/netty.list" \
        || die "$jar lost its x86-64 epoll library"
}

# check_runs: each binary runs here, unless it needs a newer glibc than this machine's (then only the GPU host's,
# 2.39, is checked against what it needs)
check_runs() {
    private_dir "${PREFIX%/*}" || die "cannot make ${PREFIX%/*}"
    rm -rf "$PREFIX"
    cp -a "$STAGE/cri" "$PREFIX"
    local b need have
    have="$(ldd --version | sed -n '1s/.* //p')"
    for b in "containerd --version" "containerd-shim-runc-v2 -v" "ctr --version" "runc --version" "docker-registry --version" "busybox true"; do
        need="$(objdump -T "$PREFIX/bin/${b%% *}" 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n1 || true)"
        if [[ -n "$need" ]] && [[ "$(printf '%s\n' "$need" "$have" | sort -V | tail -n1)" != "$have" ]]; then
            [[ "$(printf '%s\n' "$need" 2.39 | sort -V | tail -n1)" == 2.39 ]] \
                || { rm -rf "$PREFIX"; die "${b%% *} needs glibc $need, newer than the GPU host's 2.39"; }
            log "${b%% *} needs glibc $need (this machine has $have, the GPU host 2.39): not run here"
            continue
        fi
        "$PREFIX/bin/"$b >/dev/null 2>&1 || { rm -rf "$PREFIX"; die "the bundled $b does not run here"; }
    done
    rm -rf "$PREFIX"
}

main() {
    local java_only="${CRI_BUNDLE_JAVA_ONLY:-0}"
    [[ "$java_only" != 1 || -f "$OUT/cri.tar.xz" ]] || die "CRI_BUNDLE_JAVA_ONLY=1 needs $OUT/cri.tar.xz from a full run"
    mkdir -p "$STAGE/out"
    if [[ "$java_only" != 1 ]]; then
        fetch_packages "${ROOT_PKGS[@]}"
        assemble_binaries
        check_runs
        tar -C "$STAGE" --owner=0 --group=0 -cf - cri | xz -T1 -9e >"$STAGE/out/cri.tar.xz"
        {
            echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname) from Debian $SUITE"
            cat "$STAGE/cri/VERSIONS"
            echo "libraries: $(ls "$STAGE/cri/lib" | paste -sd' ')"
            (cd "$STAGE/out" && ls -l cri.tar.xz && sha256sum cri.tar.xz)
        } >"$STAGE/out/MANIFEST.txt"
    else
        cp "$OUT/cri.tar.xz" "$OUT/MANIFEST.txt" "$STAGE/out/"
    fi
    assemble_java
    tar -C "$STAGE" --owner=0 --group=0 -cf "$STAGE/out/cri-java.tar" cri/java
    echo "java ($(date -u +%Y-%m-%dT%H:%M:%SZ)): $(ls "$STAGE/cri/java" | paste -sd' ')" >>"$STAGE/out/MANIFEST.txt"
    rm -rf "$OUT"
    mkdir -p "$OUT"
    cp "$STAGE/out/"* "$OUT/"
    log "wrote $OUT ($(du -sh "$OUT" | cut -f1)):"
    cat "$OUT/MANIFEST.txt"
}

main
