#!/usr/bin/env bash
# Fetches Debian's criu 4.2.1 source (the orig tarball of the sid source package, checked by apt against the signed
# Release file and by sha256 against the .dsc) into a cache folder outside the repository, and prints its path.
# Nothing of it is committed. Used by build-upstream.sh (criu's own GPU plugins) and criu-image/build.sh (zdtm).
#
# Usage: fetch-source.sh   -> prints /var/tmp/criu-upstream-cache/src/criu_4.2.1.orig.tar.xz
# Exit status: 0 fetched (or already there); 3 it cannot be fetched (no network, no such version); 1 anything else.
# Env: DEBIAN_MIRROR (default http://deb.debian.org/debian), UPSTREAM_CACHE (default /var/tmp/criu-upstream-cache).
set -euo pipefail

VERSION=4.2.1
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
CACHE="${UPSTREAM_CACHE:-/var/tmp/criu-upstream-cache}"

die() { echo "fetch-source: $*" >&2; exit "${2:-1}"; }
command -v apt-get >/dev/null 2>&1 || die "apt-get is missing"
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../gpu/lib.sh"   # private_dir
private_dir "$CACHE" || die "no private folder for the cache"

APT="$CACHE/apt"
apt_opts=(
    -o "Dir::Etc::sourcelist=$APT/sources.list" -o "Dir::Etc::sourceparts=-"
    -o "Dir::State::Lists=$APT/lists" -o "Dir::State::status=$APT/status" -o "Dir::Cache=$APT/cache"
    -o "Acquire::Check-Valid-Until=false" -o "Acquire::Languages=none"
)
mkdir -p "$APT/lists/partial" "$APT/cache/archives/partial" "$CACHE/src"
echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR sid main" >"$APT/sources.list"
touch "$APT/status"

tarball="$CACHE/src/criu_${VERSION}.orig.tar.xz"
if [[ ! -s "$tarball" ]]; then
    apt-get "${apt_opts[@]}" -q update >"$CACHE/apt-update.log" 2>&1 \
        || die "apt-get update of sid's sources failed (see $CACHE/apt-update.log): no network to $MIRROR?" 3
    # --download-only fetches the .dsc and the tarballs it names; the Debian packaging tarball of a revision that was
    # replaced may be gone from the mirror, so only the orig tarball is required here.
    (cd "$CACHE/src" && apt-get "${apt_opts[@]}" -q source --download-only "criu=${VERSION}-1" \
        >"$CACHE/apt-source.log" 2>&1) || true
    [[ -s "$tarball" ]] || die "sid's source package criu ${VERSION} could not be fetched (see $CACHE/apt-source.log)" 3
fi
sum=$(sha256sum "$tarball" | cut -d' ' -f1)
dsc=$(ls "$CACHE"/src/criu_${VERSION}-*.dsc 2>/dev/null | head -n1 || true)
if [[ -n "$dsc" ]] && ! grep -q "$sum" "$dsc"; then
    die "$tarball: sha256 $sum is not the one $dsc lists"
fi
echo "$tarball"
