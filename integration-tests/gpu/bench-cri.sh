#!/usr/bin/env bash
# Checkpoint and restore of one CUDA container through containerd's CRI (the kubelet's way: run-cri.sh, case rounds)
# beside podman's (run-podman.sh, case export: checkpoint --export, rm, restore --import), in one run on one GPU:
# the same counter image (cuda_counter, COUNTER_MIB 256 by default), the same criu 4.2.1 and plugin dir, the GPU
# through the same CDI spec. Both archive the checkpoint and restore it into a new container, so they do the same
# work; CRI's restore also runs a new pod sandbox first (not timed: RunPodSandbox comes before CreateContainer).
# Medians over BENCH_ROUNDS (5) rounds each, into OUT_DIR/cri-vs-podman.md.
#
# usage (repo root, on the GPU host): bash integration-tests/gpu/bench-cri.sh BUNDLE_DIR OUT_DIR
# Needs .cri-bundle (cri-bundle.sh) and .podman-bundle (podman-bundle.sh) beside integration-tests/.
set -uo pipefail
GPU_DIR="$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")"
[[ $# -eq 2 ]] || { echo "usage: bench-cri.sh BUNDLE_DIR OUT_DIR" >&2; exit 2; }
bundle="$1" out="$2" rounds="${BENCH_ROUNDS:-5}" rc=0
mkdir -p "$out"
CRI_CASES=rounds CRI_ROUNDS="$rounds" bash "$GPU_DIR/run-cri.sh" "$bundle" "$out/cri" >"$out/cri.out" 2>&1 || rc=1
PODMAN_CASES="$(printf 'export %.0s' $(seq "$rounds"))" bash "$GPU_DIR/run-podman.sh" "$bundle" "$out/podman" \
    >"$out/podman.out" 2>&1 || rc=1
python3 - "$out" <<'PY'
import re, statistics, sys
out = sys.argv[1]
def times(path, pattern):
    rows = []
    for line in open(path):
        m = re.search(pattern, line)
        if m:
            rows.append((float(m.group(1)), float(m.group(2)), int(m.group(3))))
    return rows
cri = times(f"{out}/cri/summary.txt", r"^TIME cri-rounds round=\d+ checkpoint=([\d.]+) restore=([\d.]+) archive=(\d+)MiB")
pod = times(f"{out}/podman/summary.txt", r"^TIME podman-export(?:-\d+)? checkpoint\+export=([\d.]+) import\+restore=([\d.]+) archive=(\d+)MiB")
gpu = next((l.split(",", 1)[0].split("plugins in /usr/lib/criu, ")[-1] for l in open(f"{out}/cri/summary.txt") if l.startswith("SETUP plugins")), "?")
with open(f"{out}/cri-vs-podman.md", "w") as f:
    f.write(f"| way ({gpu}) | rounds | checkpoint to an archive (median) | restore from it (median) | archive |\n|---|---|---|---|---|\n")
    for name, rows, what in (("CRI: CheckpointContainer; CreateContainer + StartContainer", cri, "cri"),
                             ("podman: checkpoint --export; restore --import", pod, "podman")):
        if rows:
            f.write(f"| {name} | {len(rows)} | {statistics.median(r[0] for r in rows):.2f} s | "
                    f"{statistics.median(r[1] for r in rows):.2f} s | {rows[0][2]} MiB |\n")
        else:
            f.write(f"| {name} | 0 | no result ({what}/summary.txt) | | |\n")
print(open(f"{out}/cri-vs-podman.md").read())
PY
grep -hE '^(PASS|FAIL|NOT RUN)' "$out/cri/summary.txt" "$out/podman/summary.txt"
exit $rc
