#!/usr/bin/env bash
# Checks the README's two commands on a fresh machine: a Debian bookworm container that has only git, root and its
# own Docker daemon to start, into which this repository's current branch is cloned.
#   1. as a non-root user, integration-tests/test-all.sh must name what is missing and exit non-zero;
#   2. as root, git clone + integration-tests/test-all.sh must pass with the criu integration tests run;
#   3. integration-tests/demo/demo.sh, in a second clone without a build, must build and show a dump and a restore.
# Prints the wall time of each; the transcripts go to OUT_DIR (default /var/tmp/criu-java-gpu-fresh).
# Usage (root, on a host with a Docker daemon and debootstrap): .ci/fresh-machine.sh [OUT_DIR]
# Env: DEBIAN_MIRROR (default http://deb.debian.org/debian), FRESH_KEEP=1 leaves the container running.
#
# Docker runs inside the container with every capability but CAP_SYS_RESOURCE (--privileged needs that one and
# this project's hosts may lack it, see integration-tests/criu-image), its /var/lib/docker on a host folder
# (overlay2 cannot stack on the container's own overlay root), and its cgroup v1 hierarchies remounted writable,
# as they are on a machine.
set -euo pipefail

REPO="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
OUT="${1:-/var/tmp/criu-java-gpu-fresh}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
BASE=criu-java-gpu-fresh/bookworm:git
NAME=criu-java-gpu-fresh-$$

log() { echo "fresh-machine: $*"; }
die() { echo "fresh-machine: ERROR: $*" >&2; exit 1; }

[[ $(id -u) == 0 ]] || die "run as root (debootstrap, docker)"
docker info >/dev/null 2>&1 || die "no Docker daemon answers"
branch=$(git -C "$REPO" rev-parse --abbrev-ref HEAD)
[[ -z "$(git -C "$REPO" status --porcelain --untracked-files=no)" ]] \
    || log "note: uncommitted changes in $REPO are not part of the check (it clones $branch)"

if ! docker image inspect "$BASE" >/dev/null 2>&1; then
    work=$(mktemp -d /var/tmp/fresh-bookworm.XXXXXX)   # the root filesystem and debootstrap's log
    rootfs=$work/rootfs
    log "building $BASE (debootstrap bookworm + git)"
    debootstrap --variant=minbase --include=git,ca-certificates bookworm "$rootfs" "$MIRROR" >"$work/debootstrap.log" 2>&1 \
        || { tail -n 20 "$work/debootstrap.log" >&2; rm -rf "$work"; die "debootstrap failed"; }
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb
    tar -C "$rootfs" --numeric-owner -c . | docker import -c 'CMD ["sleep","infinity"]' - "$BASE" >/dev/null
    rm -rf "$work"
fi

source "$REPO/integration-tests/gpu/lib.sh"   # private_dir
mkdir -p "$(dirname "$OUT")"
private_dir --fresh "$OUT" || die "cannot make $OUT"
mkdir "$OUT/docker"
git clone -q --bare --branch "$branch" "$REPO" "$OUT/src.git"
cleanup() {
    [[ "${FRESH_KEEP:-0}" == 1 ]] && { log "container $NAME left running"; return; }
    docker rm -f "$NAME" >/dev/null 2>&1 || true
    rm -rf "$OUT/docker" "$OUT/src.git"
}
trap cleanup EXIT
docker run -d --name "$NAME" --cap-add ALL --cap-drop SYS_RESOURCE \
    --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
    -v "$OUT/docker:/var/lib/docker" -v "$OUT/src.git:/src.git:ro" "$BASE" sleep infinity >/dev/null
in_box() { docker exec "$NAME" bash -c "$1"; }
in_box 'for d in /sys/fs/cgroup/*/; do mountpoint -q "$d" && mount -o remount,bind,rw "$d"; done'
# The host's own CA certificates are part of the network the box sees (an egress proxy that inspects TLS signs
# with one): without them Maven could not reach its repository from the box.
if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
    for crt in /usr/local/share/ca-certificates/*.crt; do
        docker cp "$crt" "$NAME:/usr/local/share/ca-certificates/" >/dev/null
    done
    in_box 'update-ca-certificates >/dev/null'
fi

timed() {  # LABEL LOGFILE COMMAND: runs COMMAND in the container, prints its wall time, returns its status
    local t0=$SECONDS rc=0
    in_box "$3" >"$OUT/$2" 2>&1 || rc=$?
    log "$1: exit $rc after $((SECONDS - t0)) s (transcript: $OUT/$2)"
    return "$rc"
}

log "1. non-root user, nothing installed"
# git refuses to clone from a repository another user owns: the user gets its own copy
in_box 'useradd -m newcomer && cp -r /src.git /home/newcomer/src.git && chown -R newcomer: /home/newcomer/src.git'
if timed "non-root test-all.sh" nonroot.log \
    'su - newcomer -c "git clone -q src.git criu-java-gpu && criu-java-gpu/integration-tests/test-all.sh"'; then
    die "test-all.sh as non-root on a machine without Docker exited 0"
fi
grep -q 'missing docker: install the Debian package docker.io' "$OUT/nonroot.log" || die "the non-root run did not name docker"
sed 's/^/  | /' "$OUT/nonroot.log"

log "2. root: git clone + the test command"
timed "git clone + test-all.sh" test-all.log \
    'cd /root && git clone -q /src.git criu-java-gpu && cd criu-java-gpu && integration-tests/test-all.sh' \
    || { tail -n 60 "$OUT/test-all.log" >&2; die "the test command failed"; }
grep -q 'SKIPPED: no Docker' "$OUT/test-all.log" && die "integration tests were skipped"
grep -E 'Tests run:.*Skipped' "$OUT/test-all.log" | grep -v ' in ' | sed 's/^/  | /'
grep -qE '^\[INFO\] Running dev\.criugpu\.it\.' "$OUT/test-all.log" || die "no integration test ran"

log "3. root: the demo command in a second clone, which has no build yet"
timed "git clone + demo.sh" demo.log \
    'cd /root && git clone -q /src.git demo-clone && cd demo-clone && integration-tests/demo/demo.sh' \
    || { tail -n 40 "$OUT/demo.log" >&2; die "the demo failed"; }
grep -q '^== no plugin directory' "$OUT/demo.log" || die "the demo did not build the plugin directory"
grep -E '^(== |dump took|restore took|counter was)' "$OUT/demo.log" | sed 's/^/  | /'
log "passed"
