#!/usr/bin/env bash
# Runs tests of CRIU's own suite zdtm in the zdtm image (criu-image/build.sh zdtm) against Debian's criu, with criu's
# default plugin directory /usr/lib/criu set up for MODE. ZdtmIT runs it; it also runs by hand in that image.
#
# usage: run-zdtm.sh MODE FLAVOUR REPORT_DIR TEST...    (TEST: a zdtm/static name, e.g. socket_listen)
#   MODE none    /usr/lib/criu absent
#        loaded  /usr/lib/criu is a link to PLUGIN_DIR (our cuda_plugin.so, amdgpu_plugin.so, java/): no GPU here, so
#                the plugins disable themselves
#        forced  the same with CRIU_GPU_PLUGIN_FORCE=1 in criu's environment: the JVM starts inside criu, as on GPU hosts
#   FLAVOUR      zdtm's flavour: h (host), ns (namespaces) or uns (user namespace)
#   REPORT_DIR   zdtm's --report: criu-testreport.tap (ok / not ok per test) and each failed test's criu logs; every
#                test's images and criu logs stay in /zdtm/criu-4.2.1/test/dump until the next run
# Env: PLUGIN_DIR (loaded, forced); ZDTM_PARALLEL (default 1): tests run side by side; CRIU_TIMEOUT_S (default 20):
#      a criu command still running after that long is killed and its test fails with a line "criu-zdtm: ... (hang)"
#      (zdtm's own limit, 60 s, ends the test with a Python traceback instead of criu's log, and takes 3 times longer).
set -euo pipefail

MODE="$1" FLAVOUR="$2" REPORT="$3"
shift 3
ZDTM=/zdtm/criu-4.2.1/test
WRAPPER=/usr/local/sbin/criu-zdtm

case "$MODE" in
    none) rm -rf /usr/lib/criu ;;
    loaded | forced)
        [[ -f "${PLUGIN_DIR:?PLUGIN_DIR names the plugin dir}/cuda_plugin.so" ]] || { echo "run-zdtm: $PLUGIN_DIR has no cuda_plugin.so" >&2; exit 2; }
        rm -rf /usr/lib/criu
        ln -s "$PLUGIN_DIR" /usr/lib/criu ;;
    *) echo "run-zdtm: unknown mode $MODE (none, loaded or forced)" >&2; exit 2 ;;
esac

# zdtm runs criu with CRIU_LIBS_DIR set to its own test/plugins, which replaces criu's default plugin dir: unset, so
# that criu loads /usr/lib/criu as podman's or runc's criu would. A hang is also noted in the images dir, which zdtm
# copies into the report: its own output may fold the line.
force=""
[[ "$MODE" != forced ]] || force="export CRIU_GPU_PLUGIN_FORCE=1"
cat >"$WRAPPER" <<WRAP
#!/bin/sh
unset CRIU_LIBS_DIR
$force
timeout --foreground -s KILL ${CRIU_TIMEOUT_S:-20} /usr/sbin/criu "\$@"
rc=\$?
if [ \$rc = 137 ]; then
    dir=. prev=
    for a in "\$@"; do [ "\$prev" != --images-dir ] || dir=\$a; prev=\$a; done
    echo "criu-zdtm: criu \$1 still running after ${CRIU_TIMEOUT_S:-20} s: killed (hang)" | tee "\$dir/criu-zdtm-hang" >&2
fi
exit \$rc
WRAP
chmod 0755 "$WRAPPER"

# The tests run in a copy of the tree in /zdtm, which should be a volume on the host's filesystem (ZdtmIT mounts one):
# criu dumps inotify and fanotify marks by file handle, which it cannot open again on the image's overlayfs
# (fanotify00, inotify00: "fsnotify: Can't dump that handle") nor, for inotify00's unlinked file, on tmpfs.
[[ -d /zdtm/criu-4.2.1 ]] || { mkdir -p /zdtm && cp -a /opt/criu-4.2.1 /zdtm/; }

# zdtm starts tests not flagged suid under uid 18943, and criu cannot read such a task's rlimits without
# CAP_SYS_RESOURCE, which this sandbox lacks: every dump would fail with "Can't get rlimit 0". Run them all as root.
sed -i "s/^\( *\)if not test_flag(self.__desc, 'suid'):/\1if False:  # run-zdtm.sh: every test as root/" "$ZDTM/zdtm.py"
grep -q "run-zdtm.sh: every test as root" "$ZDTM/zdtm.py" || { echo "run-zdtm: zdtm.py's suid test not found" >&2; exit 1; }

# Before its tests zdtm creates two named cgroup v1 hierarchies (name=zdtmtst...) for its cgroup tests, none of which
# run here. They are global to the machine, outlive the container, and while they existed podman's checkpoint in
# another container froze that whole container and its restore failed (PodmanCheckpointIT): zdtm gets no-ops.
for script in zdtm_mount_cgroups zdtm_umount_cgroups; do printf '#!/bin/sh\nexit 0\n' >"$ZDTM/$script"; done

tests=()
for t in "$@"; do tests+=(-t "zdtm/static/$t"); done
rm -rf "$REPORT" "$ZDTM/dump"
cd "$ZDTM"
# zdtm exits non-zero when a test fails; the report says which.
./zdtm.py run --criu-bin "$WRAPPER" --crit-bin /usr/bin/crit --pycriu-search-path /usr/lib/python3/dist-packages \
    -f "$FLAVOUR" -p "${ZDTM_PARALLEL:-1}" --keep-going --keep-img always --report "$REPORT" "${tests[@]}" || true
[[ -f "$REPORT/criu-testreport.tap" ]] || { echo "run-zdtm: zdtm wrote no report" >&2; exit 1; }
