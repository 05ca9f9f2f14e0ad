#!/usr/bin/env bash
# Builds CRIU's own GPU plugins (upstream's plugins/cuda and plugins/amdgpu) from Debian's criu 4.2.1 source
# package, the compatibility oracle of our tests and benchmarks. Nothing of it is committed: the source is fetched
# at test time (fetch-source.sh: the orig tarball of the sid source package, checked by apt against the signed
# Release file) and built in a cache folder outside the repository.
#
# Usage: build-upstream.sh OUT_DIR
#   OUT_DIR/cuda_plugin.so, OUT_DIR/amdgpu_plugin.so   the two plugins, as `make criu cuda_plugin amdgpu_plugin` builds them
#   OUT_DIR/src                                        a link to the built source tree (criu headers, generated protobuf-c code)
#   OUT_DIR/VERSION                                    the source package version and the tarball's sha256
# Exit status: 0 built (or already built from the same tarball); 3 the source package cannot be fetched (no network,
# no such version); 1 anything else. Needs: apt-get, gcc, make, pkg-config and criu's build dependencies
# (libprotobuf-c-dev protobuf-c-compiler libprotobuf-dev protobuf-compiler libnl-3-dev libnet1-dev libcap-dev
#  libbsd-dev libgnutls28-dev uuid-dev libdrm-dev python3-protobuf): a missing one is named in one line.
# Env: DEBIAN_MIRROR (default http://deb.debian.org/debian), UPSTREAM_CACHE (default /var/tmp/criu-upstream-cache).
set -euo pipefail

VERSION=4.2.1
CACHE="${UPSTREAM_CACHE:-/var/tmp/criu-upstream-cache}"
OUT="${1:?usage: build-upstream.sh OUT_DIR}"

die() { echo "build-upstream: $*" >&2; exit "${2:-1}"; }

missing=()
for tool in gcc make pkg-config protoc-c protoc xz; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
for hdr in protobuf-c/protobuf-c.h libnl3/netlink/netlink.h libnet.h sys/capability.h bsd/string.h gnutls/gnutls.h \
           uuid/uuid.h libdrm/amdgpu.h; do
    [[ -e /usr/include/$hdr ]] || missing+=("/usr/include/$hdr")
done
((${#missing[@]} == 0)) || die "missing build tools or headers: ${missing[*]} (Debian: apt-get install libprotobuf-c-dev protobuf-c-compiler libprotobuf-dev protobuf-compiler libnl-3-dev libnet1-dev libcap-dev libbsd-dev libgnutls28-dev uuid-dev libdrm-dev python3-protobuf pkg-config)"

# The orig tarball, fetched once into the cache (exit status 3 when it cannot be: no network, no such version).
tarball=$("$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/fetch-source.sh") || exit $?
sum=$(sha256sum "$tarball" | cut -d' ' -f1)

tree="$CACHE/build-$sum/criu-$VERSION"
if [[ ! -f "$tree/plugins/cuda/cuda_plugin.so" || ! -f "$tree/plugins/amdgpu/amdgpu_plugin.so" ]]; then
    rm -rf "$CACHE/build-$sum"
    mkdir -p "$CACHE/build-$sum"
    tar -C "$CACHE/build-$sum" -xJf "$tarball"
    # Debian's gcc may default to a newer C standard than criu 4.2.1 was written for; warnings are not errors here.
    make -C "$tree" -j"$(nproc)" CC="gcc -std=gnu11" WERROR=0 criu cuda_plugin amdgpu_plugin \
        >"$CACHE/build-$sum.log" 2>&1 || { tail -n 30 "$CACHE/build-$sum.log" >&2; die "building criu $VERSION failed (log: $CACHE/build-$sum.log)"; }
fi

mkdir -p "$OUT"
install -m 0755 "$tree/plugins/cuda/cuda_plugin.so" "$OUT/cuda_plugin.so"
install -m 0755 "$tree/plugins/amdgpu/amdgpu_plugin.so" "$OUT/amdgpu_plugin.so"
ln -sfn "$tree" "$OUT/src"
printf 'criu %s (Debian sid source package, orig tarball sha256 %s)\n' "$VERSION" "$sum" >"$OUT/VERSION"
echo "build-upstream: $(cat "$OUT/VERSION") -> $OUT"
