#!/usr/bin/env bash
# Builds criu-dev's amdgpu plugin (the branch criu 4.3 will come from), at one pinned commit, for the compatibility
# tests of amdgpu-plugin against criu-dev's image format. Like build-upstream.sh, nothing of it is committed: the
# source is fetched at test time and built in a cache folder outside the repository.
#
# Source, in this order: CRIU_DEV_GIT, a git directory (a clone or mirror of checkpoint-restore/criu) that has the
# pinned commit (`git archive` of that commit: its hash is the integrity check); else GitHub's archive of the commit
# (codeload.github.com), checked against the pinned tree listing below once unpacked.
#
# Usage: build-criu-dev.sh OUT_DIR
#   OUT_DIR/amdgpu_plugin.so   criu-dev's plugin, as `make criu amdgpu_plugin` builds it
#   OUT_DIR/src                a link to the built source tree (its plugins/amdgpu/criu-amdgpu.proto)
#   OUT_DIR/VERSION            the commit
# Exit status: 0 built (or already built); 3 the source cannot be fetched; 1 anything else. Needs what
# build-upstream.sh needs, plus git (for CRIU_DEV_GIT) or curl.
# Env: CRIU_DEV_GIT, UPSTREAM_CACHE (default /var/tmp/criu-upstream-cache).
set -euo pipefail

COMMIT=2cf8f13ca1f11a0491977e438b262e646137256c # criu-dev, v4.2-22-g2cf8f13ca
# `git rev-parse $COMMIT:plugins/amdgpu`: the plugin's folder as the commit has it, checked in a downloaded archive
AMDGPU_TREE=a59cb01b9d93cc910a35c39a250db6d3e8c4eb2a
CACHE="${UPSTREAM_CACHE:-/var/tmp/criu-upstream-cache}"
OUT="${1:?usage: build-criu-dev.sh OUT_DIR}"

die() { echo "build-criu-dev: $1" >&2; exit "${2:-1}"; }

for tool in gcc make pkg-config protoc-c protoc; do
    command -v "$tool" >/dev/null 2>&1 || die "missing build tool: $tool (see build-upstream.sh)"
done
[[ -e /usr/include/libdrm/amdgpu.h ]] || die "missing /usr/include/libdrm/amdgpu.h (Debian: libdrm-dev)"

source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../gpu/lib.sh"   # private_dir
private_dir "$CACHE" || die "no private folder for the cache"
base="$CACHE/criu-dev-$COMMIT"
tree="$base/criu"
if [[ ! -f "$tree/plugins/amdgpu/amdgpu_plugin.so" ]]; then
    rm -rf "$base"
    mkdir -p "$base"
    if [[ -n "${CRIU_DEV_GIT:-}" ]] && git -C "$CRIU_DEV_GIT" cat-file -e "$COMMIT^{commit}" 2>/dev/null; then
        git -C "$CRIU_DEV_GIT" archive --prefix=criu/ "$COMMIT" | tar -C "$base" -x \
            || die "git archive of $COMMIT from $CRIU_DEV_GIT failed"
    else
        command -v curl >/dev/null 2>&1 || die "criu-dev's source: no CRIU_DEV_GIT with $COMMIT, and no curl" 3
        curl -fsSL --max-time 300 -o "$base/src.tar.gz" \
            "https://codeload.github.com/checkpoint-restore/criu/tar.gz/$COMMIT" \
            || die "criu-dev's source: no CRIU_DEV_GIT with commit $COMMIT, and GitHub's archive of it could not be fetched" 3
        mkdir -p "$tree"
        tar -C "$tree" --strip-components=1 -xzf "$base/src.tar.gz"
        if [[ -n "$AMDGPU_TREE" ]] && command -v git >/dev/null 2>&1; then
            got=$(cd "$tree" && git init -q . && git add -f plugins/amdgpu && git write-tree --prefix=plugins/amdgpu/)
            rm -rf "$tree/.git"
            [[ "$got" == "$AMDGPU_TREE" ]] || die "GitHub's archive of $COMMIT: plugins/amdgpu is tree $got, not $AMDGPU_TREE"
        fi
    fi
    make -C "$tree" -j"$(nproc)" WERROR=0 criu amdgpu_plugin >"$base.log" 2>&1 \
        || { tail -n 30 "$base.log" >&2; die "building criu-dev $COMMIT failed (log: $base.log)"; }
fi

mkdir -p "$OUT"
install -m 0755 "$tree/plugins/amdgpu/amdgpu_plugin.so" "$OUT/amdgpu_plugin.so"
ln -sfn "$tree" "$OUT/src"
printf 'criu-dev %s (checkpoint-restore/criu)\n' "$COMMIT" >"$OUT/VERSION"
echo "build-criu-dev: $(cat "$OUT/VERSION") -> $OUT"
