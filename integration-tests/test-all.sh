#!/usr/bin/env bash
# The README's test command: the build and every test, the criu integration tests included, from a fresh Debian
# or Ubuntu machine on.
#   integration-tests/test-all.sh [MAVEN ARGUMENTS]
# As root it first installs what is missing: a JDK 22+ unless one is found (integration-tests/find-jdk.sh), else
# openjdk-25-jdk-headless (on a Debian suite without it, such as bookworm, from trixie through a private source
# pinned so that nothing else comes from there unasked), Docker, debootstrap, gcc, make, Maven, python3-venv, the
# headers the layout tests read, and the build dependencies of upstream criu
# (integration-tests/upstream/build-upstream.sh).
# It starts dockerd if no daemon answers (left running) and builds the local criu images (criu 4.2.1 and 4.1.1,
# podman, zdtm: CRIU's own test suite, which ZdtmIT runs with and without our plugins, and criu 4.3 from Debian
# experimental, with and without zdtm). Then it runs `mvn -B install` with CI set, so that an unusable Docker fails
# the criu tests instead of skipping them, and the criu tests a second time against criu 4.3.
# Not as root it installs nothing: it names each missing thing in one line and exits 1.
# Env: DEBIAN_MIRROR (default http://deb.debian.org/debian) for the trixie source.
set -euo pipefail

cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.."
# Debian's PATH for users leaves out the sbin folders that debootstrap and dockerd live in.
export PATH="$PATH:/usr/sbin:/sbin"
export CI="${CI:-true}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
DOCKERD_LOG=/var/log/criu-java-gpu-dockerd.log
DOCKERD_WAIT_S=60
# shellcheck source=find-jdk.sh
source integration-tests/find-jdk.sh

log() { echo "test-all: [${SECONDS}s] $*"; }
die() { echo "test-all: ERROR: $*" >&2; exit 1; }
root() { [[ $(id -u) == 0 ]]; }

# What the build and the tests need, as "how-to-check what package": cmd = a command on PATH, file = a path,
# pkg = an installed Debian package (python modules, headers whose path varies), py = a module python3 imports.
REQUIREMENTS=(
    "cmd mvn maven"
    "cmd gcc gcc"
    "cmd make make"
    "cmd nm binutils"
    # the criu_gpu wheel's build (cuda-plugin/build-wheel.py) and its test in a fresh venv (CriuGpuWheelTest)
    "cmd python3 python3"
    "py ensurepip python3-venv"
    "cmd docker docker.io"
    "cmd debootstrap debootstrap"
    "file /usr/share/keyrings/debian-archive-keyring.gpg debian-archive-keyring"
    "file /usr/lib/x86_64-linux-gnu/libc.a libc6-dev"
    "file /usr/include/linux/kfd_ioctl.h linux-libc-dev"
    "file /usr/include/libdrm/amdgpu.h libdrm-dev"
    # upstream criu's build dependencies
    "cmd pkg-config pkg-config"
    "cmd xz xz-utils"
    "cmd protoc-c protobuf-c-compiler"
    "cmd protoc protobuf-compiler"
    "file /usr/include/protobuf-c/protobuf-c.h libprotobuf-c-dev"
    "pkg libprotobuf-dev libprotobuf-dev"
    "file /usr/include/libnl3/netlink/netlink.h libnl-3-dev"
    "file /usr/include/libnet.h libnet1-dev"
    "file /usr/include/sys/capability.h libcap-dev"
    "file /usr/include/bsd/string.h libbsd-dev"
    "file /usr/include/gnutls/gnutls.h libgnutls28-dev"
    "file /usr/include/uuid/uuid.h uuid-dev"
    "pkg python3-protobuf python3-protobuf"
)
# Only needed to start a daemon here.
DOCKERD_REQUIREMENTS=(
    "cmd dockerd docker.io"
    "cmd docker-init tini"
)

present() {
    case "$1" in
        cmd) command -v "$2" >/dev/null 2>&1 ;;
        file) [[ -e "$2" ]] ;;
        pkg) [[ "$(dpkg-query -W -f='${Status}' "$2" 2>/dev/null)" == "install ok installed" ]] ;;
        py) python3 -c "import $2" >/dev/null 2>&1 ;;
    esac
}

# Prints the packages of the requirements given that are missing, one "package<TAB>what" line each.
missing_packages() {
    local r kind what pkg
    for r in "$@"; do
        read -r kind what pkg <<<"$r"
        present "$kind" "$what" || printf '%s\t%s\n' "$pkg" "$what"
    done
}

docker_answers() { docker info >/dev/null 2>&1; }

# Not root: one line per missing thing, then exit 1; nothing is installed or started.
check_as_user() {
    local problems=0 pkg what err
    while IFS=$'\t' read -r pkg what; do
        [[ -n "$pkg" ]] || continue
        echo "test-all: missing $what: install the Debian package $pkg (as root: apt-get install $pkg)" >&2
        problems=$((problems + 1))
    done < <(missing_packages "${REQUIREMENTS[@]}")
    if ! find_jdk >/dev/null 2>&1; then
        echo "test-all: missing a JDK 22 or newer: install one (e.g. apt-get install openjdk-25-jdk-headless) or set JAVA_HOME to it" >&2
        problems=$((problems + 1))
    fi
    if command -v docker >/dev/null 2>&1 && ! docker_answers; then
        err=$(docker info 2>&1 >/dev/null | tail -n 1 || true)
        if [[ "$err" == *"permission denied"* ]]; then
            echo "test-all: this user may not use the Docker daemon: add it to the group docker (usermod -aG docker $(id -un))" >&2
        else
            echo "test-all: no Docker daemon answers: start one as root (systemctl start docker, or run this script as root)" >&2
        fi
        problems=$((problems + 1))
    fi
    if ((problems > 0)); then
        die "$problems thing(s) missing; as root this script installs and starts them itself"
    fi
}

apt_install() {
    log "installing $*"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"
}

# openjdk-25-jdk-headless from this system's sources, or from trixie where the suite has none (bookworm). trixie's
# JDK needs trixie's libc6 (>= 2.38), which comes with it; the pin keeps every other package where it is.
install_jdk() {
    if [[ -n "$(apt-cache policy openjdk-25-jdk-headless 2>/dev/null | sed -n 's/^ *Candidate: //p' | grep -v '(none)')" ]]; then
        apt_install openjdk-25-jdk-headless
        return
    fi
    [[ "$(. /etc/os-release && echo "$ID")" == debian ]] \
        || die "no JDK 22+ found and no openjdk-25-jdk-headless in this system's apt sources: install a JDK 22+ and set JAVA_HOME"
    log "this Debian suite has no openjdk-25-jdk-headless: taking it from trixie (pinned: nothing else comes from there unasked)"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR trixie main" \
        >/etc/apt/sources.list.d/criu-java-gpu-trixie.list
    printf 'Package: *\nPin: release n=trixie\nPin-Priority: 100\n' >/etc/apt/preferences.d/criu-java-gpu-trixie
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends -t trixie openjdk-25-jdk-headless
}

install_as_root() {
    local packages=() kind pkg what need_jdk=0 r
    local -a wanted=("${REQUIREMENTS[@]}")
    docker_answers || wanted+=("${DOCKERD_REQUIREMENTS[@]}")
    while IFS=$'\t' read -r pkg what; do
        [[ -n "$pkg" && " ${packages[*]} " != *" $pkg "* ]] && packages+=("$pkg")
    done < <(missing_packages "${wanted[@]}")
    find_jdk >/dev/null 2>&1 || need_jdk=1
    if ((${#packages[@]} > 0 || need_jdk)); then
        apt-get update -q
    fi
    # The JDK last: on bookworm it brings trixie's libc6, and bookworm's libc6-dev must be in before that.
    ((${#packages[@]} == 0)) || apt_install "${packages[@]}"
    ((need_jdk == 0)) || install_jdk
    for r in "${wanted[@]}"; do
        read -r kind what pkg <<<"$r"
        present "$kind" "$what" || die "$what is still missing after installing $pkg"
    done
}

start_dockerd() {
    docker_answers && return
    log "starting dockerd (log: $DOCKERD_LOG; it keeps running)"
    setsid dockerd >"$DOCKERD_LOG" 2>&1 </dev/null &
    local pid=$! deadline=$((SECONDS + DOCKERD_WAIT_S))
    until docker_answers; do
        if ! kill -0 "$pid" 2>/dev/null; then
            tail -n 20 "$DOCKERD_LOG" >&2
            die "dockerd exited during start-up (log: $DOCKERD_LOG)"
        fi
        if ((SECONDS >= deadline)); then
            tail -n 20 "$DOCKERD_LOG" >&2
            die "dockerd did not answer within ${DOCKERD_WAIT_S}s (log: $DOCKERD_LOG)"
        fi
        sleep 0.5
    done
    log "docker daemon up"
}

if root; then
    install_as_root
    start_dockerd
else
    check_as_user
fi
JDK=$(find_jdk) || die "no JDK 22 or newer found"
log "JDK: $JDK"
log "criu images"
integration-tests/criu-image/build.sh
log "the CRI node image (containerd, runc, criu from Debian sid)"
integration-tests/cri/build-image.sh
log "running the build and all tests: JAVA_HOME=$JDK CI=$CI mvn -B install $*"
JAVA_HOME="$JDK" mvn -B install "$@"
log "build and all tests passed against criu 4.2.1 (and 4.1.1 where named)"
# criu 4.3 (Debian experimental): the criu ITs again, on the 4.3 images, but for those that run only on 4.2.1's
# podman, CRI and Debian-package images, 4.1.1's compatibility test, and the layout test (it covers every image
# already); zdtm in its namespace flavour (with and without the plugins, forced 5 times). Reports in
# integration-tests/target/failsafe-reports-criu-4.3.
CRIU43_ITS='*IT,!Criu411CompatIT,!LayoutConformanceIT,!dev/criugpu/it/ship/**,!dev/criugpu/it/cri/**'
log "the criu integration tests against criu 4.3: mvn -B verify -pl integration-tests -Dcriugpu.criu=4.3 $*"
JAVA_HOME="$JDK" mvn -B verify -pl integration-tests -Dcriugpu.criu=4.3 -Dit.reports.suffix=-criu-4.3 \
    -Dzdtm.flavours=ns -Dtest=NONE -Dsurefire.failIfNoSpecifiedTests=false -Dit.test="$CRIU43_ITS" "$@"
log "the criu integration tests passed against criu 4.3"
# a check that could not run here passes silently in Maven's summary: each one gets a line
if command -v python3 >/dev/null; then
    python3 integration-tests/tests-not-run.py . | while read -r line; do log "$line"; done
fi
