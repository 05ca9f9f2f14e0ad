#!/usr/bin/env bash
# Checks lib.sh's private_dir/safe_dir and deb_lib.sh's verified_deb without a GPU, a network or apt: in a scratch
# folder made like /var/tmp (sticky, writable by all), private_dir must refuse what another local user could have put
# at a fixed path (a symlink, a folder of theirs, one they can write to, a file) and touch nothing behind it, and
# verified_deb must take only the .deb that apt's index names, never a newer one beside it. The other-user cases
# need root and setpriv (they run as nobody); elsewhere they are skipped. One line per check; exit 1 if any failed.
# usage: bash integration-tests/gpu/test-safe-dirs.sh   (about a second)
set -uo pipefail
GPU_DIR="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)"
source "$GPU_DIR/lib.sh"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
chmod 1777 "$T"
failed=0
ok() { echo "ok   $1"; }
bad() { echo "FAIL $1"; failed=1; }
expect() { local what="$1"; shift; if "$@" 2>"$T/err"; then ok "$what"; else bad "$what: $(cat "$T/err")"; fi; }
refuses() { local what="$1"; shift; if "$@" >/dev/null 2>"$T/err"; then bad "$what: accepted"; else ok "$what$([[ -s "$T/err" ]] && echo " ($(cat "$T/err"))")"; fi; }
mode_of() { stat -c '%u %a' -- "$1"; }

# made where nothing is: 0700, ours
expect "private_dir makes a new folder" private_dir "$T/new"
[[ "$(mode_of "$T/new")" == "$EUID 700" ]] && ok "it is ours, mode 0700" || bad "it is $(mode_of "$T/new")"

# one of ours already there: kept (made 0700), or emptied with --fresh
mkdir -m 0755 "$T/mine" && touch "$T/mine/kept"
expect "private_dir takes our own 0755 folder" private_dir "$T/mine"
[[ -e "$T/mine/kept" && "$(mode_of "$T/mine")" == "$EUID 700" ]] && ok "its files kept, mode now 0700" || bad "mine: $(mode_of "$T/mine")"
expect "private_dir --fresh takes it" private_dir --fresh "$T/mine"
[[ -z "$(ls -A "$T/mine")" && "$(mode_of "$T/mine")" == "$EUID 700" ]] && ok "emptied, mode 0700" || bad "mine after --fresh: $(ls -A "$T/mine")"

# a symlink at the path (to a folder of ours): refused, and nothing behind it touched
mkdir -m 0755 "$T/target" && touch "$T/target/precious"
ln -s "$T/target" "$T/link"
refuses "private_dir refuses a symlink" private_dir "$T/link"
refuses "private_dir --fresh refuses a symlink" private_dir --fresh "$T/link"
[[ -L "$T/link" && -e "$T/target/precious" && "$(mode_of "$T/target")" == "$EUID 755" ]] \
    && ok "the symlink and its target untouched" || bad "the symlink's target was touched"

# a folder anyone may write to, and a file
mkdir -m 0777 "$T/open"; chmod 0777 "$T/open"
refuses "private_dir refuses a folder others can write to" private_dir --fresh "$T/open"
touch "$T/file"
refuses "private_dir refuses a file" private_dir "$T/file"

# made by another user (nobody): a folder of theirs, and their symlink to one of ours
if ((EUID == 0)) && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
    as_nobody() { setpriv --reuid="$(id -u nobody)" --regid="$(id -g nobody)" --clear-groups "$@"; }
    as_nobody mkdir -m 0700 "$T/theirs" && as_nobody touch "$T/theirs/planted"
    refuses "private_dir refuses a folder nobody made" private_dir "$T/theirs"
    refuses "private_dir --fresh refuses it too" private_dir --fresh "$T/theirs"
    [[ -e "$T/theirs/planted" ]] && ok "their folder left as it was" || bad "their folder was emptied"
    as_nobody ln -s "$T/target" "$T/their-link"
    refuses "private_dir refuses nobody's symlink" private_dir --fresh "$T/their-link"
    [[ -e "$T/target/precious" ]] && ok "what it points to untouched" || bad "the target was removed"
else
    echo "skip the other-user cases (they need root, setpriv and a user nobody)"
fi

# verified_deb: the .deb apt's index names (PKG_VERSION_ARCH.deb, ':' as %3a) with that SHA256, nothing else
CACHE="$T/cache" SUITE=test
source "$GPU_DIR/deb_lib.sh"   # verified_deb
DEBS="$T/debs"; mkdir "$DEBS"
echo good >"$DEBS/foo_1%3a2.0-1_amd64.deb"
INDEX_SUM=$(sha256sum <"$DEBS/foo_1%3a2.0-1_amd64.deb" | cut -d' ' -f1)
apt-cache() { printf 'Package: foo\nVersion: 1:2.0-1\nArchitecture: amd64\nSHA256: %s\n\nPackage: foo\nVersion: 0.9\n' "$INDEX_SUM"; }
sleep 0.01; echo planted >"$DEBS/foo_9.9_amd64.deb"   # newer: what "ls -t | head -n1" would have taken
[[ "$(verified_deb foo)" == "$DEBS/foo_1%3a2.0-1_amd64.deb" ]] && ok "verified_deb takes the indexed .deb, not the newest" \
    || bad "verified_deb gave '$(verified_deb foo)'"
echo changed >"$DEBS/foo_1%3a2.0-1_amd64.deb"
refuses "verified_deb refuses it once its SHA256 differs" verified_deb foo
rm "$DEBS/foo_1%3a2.0-1_amd64.deb"; ln -s "$DEBS/foo_9.9_amd64.deb" "$DEBS/foo_1%3a2.0-1_amd64.deb"
INDEX_SUM=$(sha256sum <"$DEBS/foo_9.9_amd64.deb" | cut -d' ' -f1)
refuses "verified_deb refuses a symlink, even to a matching file" verified_deb foo

((failed == 0)) && echo "PASS test-safe-dirs" || echo "FAIL test-safe-dirs"
exit "$failed"
