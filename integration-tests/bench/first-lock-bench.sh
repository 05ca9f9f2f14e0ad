#!/usr/bin/env bash
# A CUDA dump's path to its first lock without a GPU: criu dump -R of one process that the fake cuda-checkpoint
# (cuda-plugin's test script) says holds CUDA state, through the CUDA agent's CLI backend, with the plugins forced.
# No driver call costs anything here, so what is left is the plugin's own path: criu's JVM, the agent's start, the
# find of the tree's CUDA tasks (the agent's first calls) and the lock. Flows "ours" (FIRST_LIB) and, with
# FIRST_BASE_LIB, "base" (another commit's plugin dir) take turns, ROUNDS dumps each; prints the medians, from criu's
# -v4 log, of enabled -> PAUSE_DEVICES, PAUSE_DEVICES -> the agent ready, the find, and enabled -> first lock.
#
# usage (root, on a host where criu works): [FIRST_LIB=DIR] [FIRST_BASE_LIB=DIR] [CRIU=PATH]
#        integration-tests/bench/first-lock-bench.sh [ROUNDS]
#        ROUNDS defaults to 7; FIRST_LIB to native/target/criu-lib; CRIU to the criu 4.2.1 that
#        integration-tests/gpu/build-bundle.sh unpacks at /var/tmp/criu-gpu-e2e, else criu on PATH.
set -euo pipefail
ROUNDS="${1:-7}"
REPO="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../.." && pwd)"
source "$REPO/integration-tests/gpu/lib.sh"   # E2E_ROOT, safe_dir
CRIU="${CRIU:-$( [[ -x $E2E_ROOT/criu/criu ]] && safe_dir "$E2E_ROOT" && echo "$E2E_ROOT/criu/criu" || command -v criu)}"
[[ -x "$CRIU" ]] || { echo "first-lock-bench: no criu (set CRIU, or unpack the GPU bundle's criu.tar.xz at /var/tmp/criu-gpu-e2e)" >&2; exit 1; }
declare -A LIBS=([ours]="$(readlink -f "${FIRST_LIB:-$REPO/native/target/criu-lib}")")
FLOWS=(ours)
[[ -n "${FIRST_BASE_LIB:-}" ]] && { LIBS[base]="$(readlink -f "$FIRST_BASE_LIB")"; FLOWS+=(base); }
for f in "${FLOWS[@]}"; do
    [[ -f "${LIBS[$f]}/cuda_plugin.so" ]] || { echo "first-lock-bench: ${LIBS[$f]}/cuda_plugin.so missing" >&2; exit 1; }
done
WORK="$(mktemp -d /var/tmp/first-lock-bench.XXXXXX)"
chmod 755 "$WORK"
trap 'rm -rf "$WORK"' EXIT
install -m 755 "$REPO/cuda-plugin/src/test/resources/fake-cuda-checkpoint.sh" "$WORK/cuda-checkpoint"

for ((r = 1; r <= ROUNDS; r++)); do
    for ((k = 0; k < ${#FLOWS[@]}; k++)); do
        flow="${FLOWS[$(( (r + k) % ${#FLOWS[@]} ))]}"   # the flows take turns at going first
        setsid sleep 600 </dev/null >/dev/null 2>&1 &
        pid=$!
        disown "$pid"
        echo running >"$WORK/state-$pid"
        mkdir "$WORK/img-$flow-$r"
        env PATH="$WORK:/usr/sbin:/usr/bin:/sbin:/bin" CRIU_CUDA_BACKEND=cli FAKE_CUDA_RESTORE_TID=self CRIU_GPU_PLUGIN_FORCE=1 \
            "$CRIU" dump -t "$pid" -D "$WORK/img-$flow-$r" -R --shell-job -v4 -o "$WORK/$flow-$r.log" --lib "${LIBS[$flow]}" \
            >/dev/null 2>&1 || echo "first-lock-bench: $flow round $r: criu dump failed (kept: $WORK/$flow-$r.log)" >&2
        kill -KILL "$pid" 2>/dev/null || true
        rm -rf "$WORK/img-$flow-$r" "$WORK/state-$pid"
    done
done

python3 - "$WORK" "${FLOWS[@]}" <<'PY'
import glob, re, statistics, sys
work, flows = sys.argv[1], sys.argv[2:]
print("| flow | dumps | enabled -> PAUSE_DEVICES | PAUSE_DEVICES -> agent ready | find | enabled -> first lock |")
print("|---|---|---|---|---|---|")
for flow in flows:
    rows = []
    for log in glob.glob(f"{work}/{flow}-*.log"):
        t = {}
        for line in open(log, errors="replace"):
            m = re.match(r"\((\d+\.\d+)\) (.*)", line)
            if not m:
                continue
            at, text = float(m.group(1)), m.group(2)
            for key, pattern in (("enabled", "cuda_plugin: enabled"), ("pause", "hook PAUSE_DEVICES("), ("ready", "was ready"),
                                 ("lock", "CUDA locked in")):
                if pattern in text and key not in t:
                    t[key] = at
            f = re.search(r"found and watched in (\d+) ms", text)
            if f and "find" not in t:
                t["find"] = int(f.group(1)) / 1000
        if len(t) == 5:
            rows.append(((t["pause"] - t["enabled"]), (t["ready"] - t["pause"]), t["find"], (t["lock"] - t["enabled"])))
    if not rows:
        print(f"| {flow} | 0 | – | – | – | – |")
        continue
    med = [statistics.median(r[i] for r in rows) * 1000 for i in range(4)]
    print(f"| {flow} | {len(rows)} | " + " | ".join(f"{v:.0f} ms" for v in med) + " |")
PY
