#!/usr/bin/env bash
# Builds .gpu-bundle/, everything the GPU test host lacks (it has no network, no criu, no JDK):
#   criu.tar.xz      criu/    sid's criu 4.2.1, the shared libraries it needs and sid's ld-linux-x86-64.so.2,
#                             run through criu/criu (a wrapper: ld-linux --library-path criu/lib criu/criu.bin)
#   jdk.tar.xz       jdk/     a jlinked JDK 25 runtime (modules: jdeps over our jars + a fixed base set)
#   criu-lib.tar.xz  criu-lib/  a copy of native/target/criu-lib (only if it has been built) pointed at jdk/ by
#                             native/make-aot.sh (java/jvm.options with absolute paths, AOT cache rebuilt)
#   upstream.tar.xz  upstream/ CRIU's own cuda_plugin.so built from Debian's criu 4.2.1 source
#                             (integration-tests/upstream/build-upstream.sh) and, when CUDA_CHECKPOINT names it,
#                             NVIDIA's cuda-checkpoint binary in upstream/bin: the interop and baseline flows
#   MANIFEST.txt     versions and sizes
# Unpack all three archives into $E2E_ROOT (/var/tmp/criu-gpu-e2e; run-e2e.sh does): the plugin dir and the
# runtime are assembled at that same path here, because the AOT cache records the class path and JDK it was made
# with (a cache made elsewhere is rejected and the JVM starts without it).
#
# Usage (from anywhere, on the development machine, as root for apt): integration-tests/gpu/build-bundle.sh [OUT_DIR]
# Env: JAVA_HOME (default: the JDK integration-tests/find-jdk.sh finds), DEBIAN_MIRROR (default http://deb.debian.org/debian),
#      PLUGIN_DIR (default native/target/criu-lib), BUNDLE_CACHE (default /var/tmp/criu-gpu-bundle-cache),
#      CUDA_CHECKPOINT (path of NVIDIA's cuda-checkpoint binary to carry; never committed, fetched from
#      github:NVIDIA/cuda-checkpoint by whoever builds the bundle), UPSTREAM=0 to leave upstream's plugin out,
#      BASE_PLUGIN_DIR (a criu-lib built from another commit, e.g. in a git worktree: packed as criu-lib-base.tar.xz,
#      the "base" flow of bench-phases.sh).
set -euo pipefail

REPO="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
OUT="${1:-$REPO/.gpu-bundle}"
JDK="$(source "$REPO/integration-tests/find-jdk.sh" && find_jdk)" || exit 1
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
PLUGIN_DIR="${PLUGIN_DIR:-$REPO/native/target/criu-lib}"
CACHE="${BUNDLE_CACHE:-/var/tmp/criu-gpu-bundle-cache}"
BASE_MODULES="java.base,java.logging,jdk.unsupported"
CRIU_VERSION="4.2.1"

log() { echo "build-bundle: $*"; }
die() { echo "build-bundle: $*" >&2; exit 1; }

for tool in apt-get apt-cache dpkg readelf xz tar; do
    command -v "$tool" >/dev/null || die "$tool is not installed"
done
[[ -x "$JDK/bin/jlink" ]] || die "$JDK/bin/jlink not found (set JAVA_HOME to a JDK 25)"

source "$REPO/integration-tests/gpu/lib.sh"   # E2E_ROOT, private_dir
STAGE="$(mktemp -d /var/tmp/criu-gpu-bundle.XXXXXX)"
private_dir --fresh "$E2E_ROOT" || die "cannot make $E2E_ROOT"
trap 'rm -rf "$STAGE" "$E2E_ROOT"' EXIT

# ------------------------------------------------------------------ criu from Debian sid, private apt state
SUITE=sid
source "$REPO/integration-tests/gpu/deb_lib.sh"
apt_opts+=(-o "Acquire::Check-Valid-Until=false")

build_criu() {
    # Depends/Pre-Depends closure only; shared libraries are then picked by DT_NEEDED below.
    fetch_packages criu
    local version dest="$E2E_ROOT/criu"
    version="$(awk '$1 == "criu" {print $2}' "$STAGE/versions")"
    [[ "$version" == "$CRIU_VERSION"* ]] || die "sid's criu is '$version', expected $CRIU_VERSION"
    mkdir -p "$dest/lib"
    cp "$ROOTFS/usr/sbin/criu" "$dest/criu.bin"
    GLIBC_RE='^$' copy_needed_closure "$dest/lib" "$dest/criu.bin"   # glibc too: criu runs on sid's loader
    # ld.so itself must be sid's: the libc beside it is sid's glibc.
    cp -L "$(find_lib ld-linux-x86-64.so.2)" "$dest/ld-linux-x86-64.so.2"
    rm -f "$dest/lib/ld-linux-x86-64.so.2"
    cat >"$dest/criu" <<'EOF'
#!/bin/sh
# criu 4.2.1 from Debian sid, run with sid's dynamic loader and libraries (the host's glibc is older).
d="$(cd "$(dirname "$0")" && pwd)"
exec "$d/ld-linux-x86-64.so.2" --library-path "$d/lib" --argv0 criu "$d/criu.bin" "$@"
EOF
    chmod 755 "$dest/criu" "$dest/criu.bin" "$dest/ld-linux-x86-64.so.2"
    "$dest/criu" --version | head -n1 | grep -q "$CRIU_VERSION" || die "the bundled criu does not run here"
    log "criu: $(du -sh "$dest" | cut -f1) ($(ls "$dest/lib" | wc -l) libraries)"
}

# ------------------------------------------------------------------ jlinked runtime
plugin_jars() {
    if [[ -d "$PLUGIN_DIR/java/lib" ]] && compgen -G "$PLUGIN_DIR/java/lib/*.jar" >/dev/null; then
        ls "$PLUGIN_DIR"/java/lib/*.jar
    else
        ls "$REPO"/*/target/*.jar 2>/dev/null | grep -v -- '-tests\.jar$' | grep -v integration-tests || true
    fi
}

build_jdk() {
    local modules="$BASE_MODULES" jars found
    mapfile -t jars < <(plugin_jars)
    if ((${#jars[@]})); then
        found="$("$JDK/bin/jdeps" --print-module-deps --ignore-missing-deps --multi-release 25 -q \
            "${jars[@]}" 2>/dev/null || true)"
        [[ -n "$found" ]] && modules="$modules,$found"
    fi
    modules="$(tr ',' '\n' <<<"$modules" | sed '/^$/d' | sort -u | paste -sd,)"
    log "jlink modules: $modules (jdeps over ${#jars[@]} jars)"
    "$JDK/bin/jlink" --add-modules "$modules" --strip-debug --no-man-pages --no-header-files \
        --compress=zip-0 --output "$E2E_ROOT/jdk"
    "$E2E_ROOT/jdk/bin/java" -version 2>&1 | head -n1
    log "jdk: $(du -sh "$E2E_ROOT/jdk" | cut -f1)"
}

# ------------------------------------------------------------------ plugin dir copy
# build_plugin_dir [SOURCE NAME]: SOURCE (default PLUGIN_DIR) copied to $E2E_ROOT/NAME (default criu-lib)
build_plugin_dir() {
    local src="${1:-$PLUGIN_DIR}" name="${2:-criu-lib}"
    if [[ ! -f "$src/cuda_plugin.so" ]]; then
        log "no $src/cuda_plugin.so yet: bundle carries no $name (run 'mvn -B install' first)"
        return 0
    fi
    local dest="$E2E_ROOT/$name" cfg
    cp -a "$src" "$dest"
    cfg="$dest/java/criu-gpu.cfg"
    [[ -f "$cfg" ]] || die "$PLUGIN_DIR/java/criu-gpu.cfg is missing"
    # make-aot.sh points the copy at the jlinked JDK: java.home and java/jvm.options name both by the absolute paths
    # they have here and on the GPU host (both unpack at $E2E_ROOT); it also rebuilds the AOT cache for that JDK
    log "pointing the plugin dir at the jlinked runtime and rebuilding its AOT cache"
    bash "$REPO/native/make-aot.sh" "$E2E_ROOT/jdk" "$dest" >"$STAGE/make-aot.log" 2>&1 \
        || { cat "$STAGE/make-aot.log" >&2; die "native/make-aot.sh failed"; }
    log "$name: $(du -sh "$dest" | cut -f1); cfg: $(grep -c . "$cfg") lines"
}

# ------------------------------------------------------------------ upstream's plugin (compatibility oracle)
build_upstream() {
    [[ "${UPSTREAM:-1}" == 1 ]] || { log "UPSTREAM=0: no upstream plugin in the bundle"; return 0; }
    local dest="$E2E_ROOT/upstream"
    mkdir -p "$dest/lib" "$dest/bin"
    "$REPO/integration-tests/upstream/build-upstream.sh" "$STAGE/upstream-build" >"$STAGE/upstream.log" 2>&1 \
        || { cat "$STAGE/upstream.log" >&2; die "building upstream's cuda_plugin failed"; }
    cp "$STAGE/upstream-build/cuda_plugin.so" "$dest/lib/"
    cp "$STAGE/upstream-build/VERSION" "$dest/VERSION"
    if [[ -n "${CUDA_CHECKPOINT:-}" ]]; then
        [[ -x "$CUDA_CHECKPOINT" ]] || die "CUDA_CHECKPOINT=$CUDA_CHECKPOINT is not an executable"
        cp "$CUDA_CHECKPOINT" "$dest/bin/cuda-checkpoint"
        chmod 755 "$dest/bin/cuda-checkpoint"
    else
        log "WARNING: no CUDA_CHECKPOINT given: the bundle has upstream's plugin but not NVIDIA's cuda-checkpoint it runs;" \
            "run-e2e.sh's 3 interop cases will FAIL for want of it (fetch github:NVIDIA/cuda-checkpoint, then" \
            "CUDA_CHECKPOINT=DIR/bin/x86_64_Linux/cuda-checkpoint)"
    fi
    log "upstream: $(cat "$dest/VERSION")"
}

pack() {
    local name="$1"
    tar -C "$E2E_ROOT" --owner=0 --group=0 -cf - "$name" | xz -T0 -6 >"$STAGE/out/$name.tar.xz"
}

main() {
    mkdir -p "$STAGE/out"
    build_criu
    build_jdk
    build_plugin_dir
    build_upstream
    [[ -n "${BASE_PLUGIN_DIR:-}" ]] && build_plugin_dir "$BASE_PLUGIN_DIR" criu-lib-base
    for part in criu jdk criu-lib criu-lib-base upstream; do
        [[ -d "$E2E_ROOT/$part" ]] && pack "$part"
    done
    {
        echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
        echo "criu: $("$E2E_ROOT/criu/criu" --version | head -n1)"
        echo "jdk: $("$E2E_ROOT/jdk/bin/java" -version 2>&1 | head -n1)"
        echo "jdk modules: $("$E2E_ROOT/jdk/bin/java" --list-modules | cut -d@ -f1 | paste -sd,)"
        echo "plugin dir: $([[ -d "$E2E_ROOT/criu-lib" ]] && echo "from $PLUGIN_DIR" || echo none)"
        echo "base plugin dir: $([[ -d "$E2E_ROOT/criu-lib-base" ]] && echo "from $BASE_PLUGIN_DIR" || echo none)"
        (cd "$STAGE/out" && ls -l *.tar.xz && sha256sum *.tar.xz)
    } >"$STAGE/out/MANIFEST.txt"
    rm -rf "$OUT"
    mkdir -p "$OUT"
    cp "$STAGE/out/"* "$OUT/"
    log "wrote $OUT ($(du -sh "$OUT" | cut -f1)):"
    cat "$OUT/MANIFEST.txt"
}

main
