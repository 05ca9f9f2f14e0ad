#!/usr/bin/env bash
# run-podman.sh in its CPU mode on the development machine, inside an Ubuntu 24.04 root filesystem (the GPU host's
# userland: glibc 2.39, no podman, criu, JDK or container configuration), in private mount and pid namespaces:
# the podman/runc/criu/plugin-dir wiring of the GPU run, tested without a GPU, the CDI spec included (with
# stand-ins for the NVIDIA device nodes and driver libraries).
# With CPU_LOCAL_RUN=cri it runs run-cri.sh (CRI_CPU_ONLY=1) the same way: containerd, runc and the CRI client of
# cri-bundle.sh on the GPU host's userland.
# usage (as root, after build-bundle.sh and podman-bundle.sh or cri-bundle.sh): integration-tests/gpu/podman-cpu-local.sh [OUT_DIR]
# Env: NOBLE_ROOTFS (default /var/tmp/criu-gpu-noble, made with debootstrap when absent), UBUNTU_MIRROR,
#      PODMAN_CASES, PODMAN_GPU_VIA, CRI_CASES (passed on), CPU_LOCAL_RUN (podman, the default, or cri)
set -euo pipefail
REPO="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
source "$REPO/integration-tests/gpu/lib.sh"   # private_dir, safe_dir
OUT="${1:-/var/tmp/podman-cpu-out}"
mkdir -p "$(dirname "$OUT")"
private_dir "$OUT" || exit 1
OUT="$(cd "$OUT" && pwd)"
ROOTFS="${NOBLE_ROOTFS:-/var/tmp/criu-gpu-noble}"
MIRROR="${UBUNTU_MIRROR:-http://archive.ubuntu.com/ubuntu}"

RUN="${CPU_LOCAL_RUN:-podman}"
[[ "$RUN" == podman || "$RUN" == cri ]] || { echo "podman-cpu-local: CPU_LOCAL_RUN is podman or cri, not '$RUN'" >&2; exit 1; }
for d in .gpu-bundle ".$RUN-bundle"; do
    [[ -d "$REPO/$d" ]] || { echo "podman-cpu-local: $REPO/$d is missing (build-bundle.sh, $RUN-bundle.sh)" >&2; exit 1; }
done
# the root filesystem everything below runs in as root: ours (safe_dir) if it is there, else made here
[[ ! -e "$ROOTFS" && ! -L "$ROOTFS" ]] || safe_dir "$ROOTFS"
if [[ ! -x "$ROOTFS/usr/bin/python3" ]]; then
    command -v debootstrap >/dev/null || { echo "podman-cpu-local: debootstrap is not installed" >&2; exit 1; }
    # debootstrap releases older than noble lack its script; noble is made the way jammy is
    script=/usr/share/debootstrap/scripts/noble
    [[ -e "$script" ]] || script=/usr/share/debootstrap/scripts/jammy
    tmp="$(mktemp -d "$ROOTFS.XXXXXX")"
    echo "podman-cpu-local: debootstrap noble into $ROOTFS"
    debootstrap --variant=minbase --no-check-gpg --include=python3,xz-utils,procps noble "$tmp" "$MIRROR" "$script" \
        >"$OUT/debootstrap.log" 2>&1 || { tail -n 20 "$OUT/debootstrap.log" >&2; rm -rf "$tmp"; exit 1; }
    rm -rf "$ROOTFS"
    mv -T "$tmp" "$ROOTFS"
fi

# Stand-ins for the NVIDIA driver's files, so that the CDI path runs too (PODMAN_CPU_CDI=1): libraries with the
# sonames of libcuda and the PTX JIT (copies of zlib; nothing loads them), and device nodes with the names of the
# NVIDIA ones (null's numbers) on a private /dev below.
lib="$ROOTFS/usr/lib/x86_64-linux-gnu"
for name in libcuda libnvidia-ptxjitcompiler; do
    if [[ ! -e "$lib/$name.so.1" ]]; then
        cp "$(readlink -f "$lib/libz.so.1")" "$lib/$name.so.580.0.0"
        patchelf --set-soname "$name.so.1" "$lib/$name.so.580.0.0"
        ln -s "$name.so.580.0.0" "$lib/$name.so.1"
    fi
done
chroot "$ROOTFS" ldconfig
mkdir -p "$ROOTFS/repo" "$ROOTFS/out"
exec unshare --mount --pid --fork --propagation private env R="$ROOTFS" REPO="$REPO" OUT="$OUT" \
    CASES="${PODMAN_CASES:-checkpoint export no-plugins}" VIA="${PODMAN_GPU_VIA:-cdi}" RUN="$RUN" \
    CRI_CASES="${CRI_CASES:-rounds no-cdi-spec}" bash -euc '
mount --bind "$R" "$R"
mount -t proc proc "$R/proc"
mount -t tmpfs -o mode=755 tmpfs "$R/dev"
for n in null zero full random urandom tty; do touch "$R/dev/$n"; mount --bind "/dev/$n" "$R/dev/$n"; done
mkdir "$R/dev/pts" "$R/dev/shm" "$R/dev/mqueue"
mount --bind /dev/pts "$R/dev/pts"
ln -s pts/ptmx "$R/dev/ptmx"
mkdir "$R/dev/net"; touch "$R/dev/net/tun"; mount --bind /dev/net/tun "$R/dev/net/tun"
mount -t tmpfs -o size=4g tmpfs "$R/dev/shm"
ln -s /proc/self/fd "$R/dev/fd"
ln -s /proc/self/fd/0 "$R/dev/stdin"; ln -s /proc/self/fd/1 "$R/dev/stdout"; ln -s /proc/self/fd/2 "$R/dev/stderr"
for n in nvidiactl nvidia-uvm nvidia-uvm-tools nvidia0; do mknod "$R/dev/$n" c 1 3; done
mount --rbind /sys "$R/sys"
mount -t tmpfs tmpfs "$R/tmp"
mount -t tmpfs tmpfs "$R/run"
mount --bind "$REPO" "$R/repo"
mount --bind "$OUT" "$R/out"
cd "$R"
mkdir -p .old
pivot_root . .old
cd /
umount -l /.old
rmdir /.old
cd /repo
[[ "$RUN" == cri ]] && exec env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
    LANG=C.UTF-8 CRI_CPU_ONLY=1 CRI_CASES="$CRI_CASES" bash integration-tests/gpu/run-cri.sh .gpu-bundle /out
exec env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    PODMAN_CPU_ONLY=1 PODMAN_CPU_CDI=1 PODMAN_GPU_VIA="$VIA" PODMAN_CASES="$CASES" bash integration-tests/gpu/run-podman.sh .gpu-bundle /out'
