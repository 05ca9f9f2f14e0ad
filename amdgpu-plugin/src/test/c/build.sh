#!/bin/sh
# Builds the module's test-side C programs into $1 (called by Maven in generate-test-resources), and the shim's
# restore-plan executor alone (native/'s Makefile), which the simulator tests run in forked tasks.
# The libdrm probe is built only where libdrm-dev's amdgpu.h is installed.
set -eu
out=$1
here=$(dirname "$0")
native="$here/../../../../native"
mkdir -p "$out"
CC=${CC:-gcc}
CFLAGS="-std=gnu11 -O1 -Wall -Werror"
make -s -C "$native" OUT="$(cd "$out" && pwd)" plan-executor
$CC $CFLAGS -I"$here/include" -o "$out/kfd_layout_probe" "$here/kfd_layout_probe.c"
if [ -f /usr/include/libdrm/amdgpu.h ]; then
	$CC $CFLAGS -I/usr/include/libdrm -o "$out/drm_layout_probe" "$here/drm_layout_probe.c"
else
	rm -f "$out/drm_layout_probe"
fi
$CC $CFLAGS -fPIC -shared -pthread -I"$here/include" -o "$out/libkfdsim.so" "$here/kfd_sim.c" "$here/drm_sim.c" "$here/restored_task.c" \
	"$here/plan_fuzz.c"
$CC $CFLAGS -I"$native/plan" -o "$out/plan_layout_probe" "$here/plan_layout_probe.c"
$CC $CFLAGS -o "$out/socket_layout_probe" "$here/socket_layout_probe.c"
# Stands in for criu around upstream's own amdgpu plugin (UpstreamCompatibilityTest); the plugin itself is built at
# test time from Debian's criu source package, never here.
$CC $CFLAGS -rdynamic -pthread -I"$here/include" -o "$out/upstream-host" "$here/upstream_host.c" \
	"$here/kfd_sim.c" "$here/drm_sim.c" "$here/restored_task.c" -ldl \
	-Wl,--defsym=sem_open=kfdsim_sem_open -Wl,--defsym=sem_close=kfdsim_sem_close
