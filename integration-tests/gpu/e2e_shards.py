"""Splits run-e2e.sh's cases into N shards of about equal running time, each keeping the cases' given order.

usage: python3 e2e_shards.py N CASE...   (prints N lines, one shard's cases each, space-separated)
Seconds per case: from run-e2e.sh's TIME lines on one H200 (session 13); a case not listed counts DEFAULT_S.
"""
import sys

SECONDS = {
    "pair-quiesce": 150, "torch": 45, "dataloader-persistent": 60, "dataloader-4": 60, "late-restore-failure": 45,
    "sigint": 45, "sigterm": 45, "killed-during-checkpoint": 40, "killed-during-pagedump": 40,
    "killed-after-exit": 40, "killed-after-pause": 30, "pair-sequential-fails": 40,
}
AGENT_KILL_S = 40
DEFAULT_S = 15


def seconds(case):
    if case in SECONDS:
        return SECONDS[case]
    return AGENT_KILL_S if case.startswith("agent-kill-") else DEFAULT_S


def main():
    if len(sys.argv) < 2 or not sys.argv[1].isdigit() or int(sys.argv[1]) < 1:
        print("usage: e2e_shards.py N CASE...", file=sys.stderr)
        return 2
    n, cases = int(sys.argv[1]), sys.argv[2:]
    load, shards = [0] * n, [[] for _ in range(n)]
    for case in sorted(cases, key=seconds, reverse=True):   # longest first, each onto the least loaded shard
        i = load.index(min(load))
        shards[i].append(case)
        load[i] += seconds(case)
    for shard in shards:
        print(" ".join(sorted(shard, key=cases.index)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
