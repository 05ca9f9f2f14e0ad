#!/usr/bin/env bash
# Issue 54's levers, measured on the GPU host in one run beside the host's own limits:
#   limits   first writes of fresh memory (4 KiB pages, MADV_HUGEPAGE), a restorer's fill of another task with
#            1..16 threads (process_vm_writev) and criu's way (one thread, pread), from a file in the page cache
#   cycles   an LEVER_GIB (default 8) cuda_counter: the driver's lock + checkpoint (cuda_ckpt suspend), plain criu's
#            dump and restore, the driver's restore; with and without MADV_HUGEPAGE on the big anonymous mappings
#            its libraries make (thp_probe.so, which also logs who makes them), images in /dev/shm and in a tmpfs
#            mounted huge=always. Every cycle is checked: the counter continues and its device memory verifies.
# usage (repo root, on the GPU host): bash integration-tests/gpu/bench-levers.sh BUNDLE_DIR OUT_DIR
set -uo pipefail
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/lib.sh"   # sets GPU_DIR
start_host_script "$@"
source "$GPU_DIR/cases.sh"
GIB="${LEVER_GIB:-8}"
HUGE_DIR=/var/tmp/criu-gpu-huge-images

unpack_bundle "$bundle" || { echo "cannot unpack $bundle" >&2; exit 1; }
build_programs >"$LOGS/build.out" 2>&1 || { echo "building the test programs failed" >&2; exit 1; }
gcc -O2 -pthread -o "$BIN/host_limits" "$GPU_DIR/host_limits.c" >>"$LOGS/build.out" 2>&1 || { echo "host_limits: no build" >&2; exit 1; }
gcc -O2 -shared -fPIC -o "$BIN/thp_probe.so" "$GPU_DIR/thp_probe.c" -ldl >>"$LOGS/build.out" 2>&1 || { echo "thp_probe: no build" >&2; exit 1; }

note "SETUP $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n1); kernel $(uname -r); $(nproc) cpus; THP $(cat /sys/kernel/mm/transparent_hugepage/enabled); criu $("$CRIU" --version | awk '/Version/ {print $2}')"
libcuda=$(ldconfig -p | awk '/libcuda\.so\.1 / {print $NF; exit}')
note "libcuda $libcuda imports: $(nm -D --undefined-only "$libcuda" 2>/dev/null | grep -oE '\b(mmap|mmap64|madvise|munmap|mremap|posix_memalign|malloc)\b' | sort -u | tr '\n' ' ')"

# ------------------------------------------------------------------ limits
src="$IMG_ROOT/source"
dd if=/dev/zero of="$src" bs=64M count=$((GIB * 16)) status=none
"$BIN/host_limits" touch "$GIB" | tee -a "$SUMMARY"
for t in 1 4 8 16; do
    for h in small huge; do "$BIN/host_limits" fill "$GIB" "$t" "$h" "$src" | tee -a "$SUMMARY"; done
done
for h in small huge; do "$BIN/host_limits" pread "$GIB" "$h" "$src" | tee -a "$SUMMARY"; done
rm -f "$src"

if [[ -e "$HUGE_DIR" ]]; then umount "$HUGE_DIR" 2>/dev/null; rmdir "$HUGE_DIR"; fi
mkdir -m 0700 "$HUGE_DIR" && mount -t tmpfs -o "huge=always,size=$((GIB * 2 + 8))g,mode=0700" tmpfs "$HUGE_DIR" \
    || { note "no huge=always tmpfs here"; HUGE_DIR=; }

ts() { grep -E -- "$2" "$1" 2>/dev/null | head -n1 | sed -n 's/^(\([0-9]*\.[0-9]*\)).*/\1/p'; }
span() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "") print "NA"; else printf "%.2f", b - a }'; }
thp_mib() { awk '/AnonHugePages/ {printf "%d", $2 / 1024}' "/proc/$1/smaps_rollup" 2>/dev/null; }

# cycle ADVISE(0|1) DIR_KIND(shm|huge)
cycle() {
    local advise="$1" kind="$2" name="lever-a$1-$2" img ok=yes thp probe
    img="$IMG_ROOT/$name"
    [[ "$kind" == huge ]] && img="$HUGE_DIR/$name"
    probe="$LOGS/$name.probe"
    LD_PRELOAD="$BIN/thp_probe.so" THP_PROBE_LOG="$probe" THP_PROBE_ADVISE="$advise" COUNTER_MIB=$((GIB * 1024)) \
        start_counter "$name" 0 --tick-ms 20 || { note "FAIL $name: $CKPT_WHY"; kill_all "$ROOT"; return; }
    mapfile -t TREE_PIDS < <(tree_pids "$ROOT")
    local before; before=$(wc -l <"$probe" 2>/dev/null || echo 0)
    helper "$name" suspend "$ROOT" || ok=suspend
    local t_ckpt=$HELPER_SECS
    thp=$(thp_mib "$ROOT")
    local made; made=$(tail -n +"$((before + 1))" "$probe" 2>/dev/null | awk '{split($3, m, "="); s += m[2]; n++; f[$NF]++} END {printf "%d maps %d MiB;", n, s; for (k in f) printf " %s x%d", k, f[k]}')
    criu_cmd "$name" dump "$img" -t "$ROOT" --lib "$EMPTY_LIB" || ok=dump
    local d_pages; d_pages=$(span "$(ts "$LOGS/$name.dump.log" 'Dumping task \(pid')" "$(ts "$LOGS/$name.dump.log" 'Running post-dump scripts')")
    local t_dump=$CRIU_SECS t_rst=NA t_resume=NA r_mem=NA
    reap_dumped "$ROOT"
    if [[ "$ok" == yes ]]; then
        wait_gone 60 "$ROOT" || ok=pids-busy
    fi
    if [[ "$ok" == yes ]]; then
        criu_cmd "$name" restore "$img" -d --lib "$EMPTY_LIB" || ok=restore
        t_rst=$CRIU_SECS
        r_mem=$(span "$(ts "$LOGS/$name.restore.log" 'Running pre-restore scripts')" "$(ts "$LOGS/$name.restore.log" 'Run late stage hook')")
        local rthp; rthp=$(thp_mib "$ROOT")
        helper "$name" resume "$ROOT" || ok=resume
        t_resume=$HELPER_SECS
    fi
    [[ "$ok" == yes ]] && { keeps_working "$name" || ok="check: $CKPT_WHY"; }
    note "CYCLE $name: checkpoint ${t_ckpt}s (THP after ${thp} MiB; mappings made: $made) | criu dump ${t_dump}s (pages ${d_pages}s) | criu restore ${t_rst}s (memory+tasks ${r_mem}s, THP ${rthp:-NA} MiB) | driver restore ${t_resume}s | $ok"
    kill_all "$ROOT"
    wait_gone 60 "$ROOT" || true
    rm -rf "$img"
}

for kind in shm huge; do
    [[ "$kind" == huge && -z "$HUGE_DIR" ]] && continue
    for advise in 0 1; do cycle "$advise" "$kind"; done
done
[[ -n "$HUGE_DIR" ]] && { umount "$HUGE_DIR"; rmdir "$HUGE_DIR"; }
pack_logs
