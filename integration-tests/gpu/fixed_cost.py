"""Our plugin's fixed cost per command, from bench-phases.sh's criu logs (-v4 timestamps), medians per case and flow
(ours, and base: the plugin dir of another commit):
dump: "cuda_plugin: enabled" to the first lock ("CUDA locked in", or "CUDA job locked:" for a tree); restore: "enabled" to the end of the plugin's init
("JVM threads after init"). A second table splits the dump's span into its steps, each ending at the first line that
marks it: criu's JVM up to init's first line, on to the first PAUSE_DEVICES, the wait there for the CUDA agent (its
"ready" line), the tasks found and watched, the lock. A third table gives, for every flow, the first time criu took a
task's files in a dump ("Sent msg to daemon 71" to "Wait for ack 71", PARASITE_CMD_DRAIN_FDS): with a JVM in criu
that step waited for an RCU grace period whenever it grew criu's fd table (see grow_fd_table in the shim).
usage: python3 fixed_cost.py LOGDIR"""
import pathlib
import re
import statistics
import sys

STAMP = re.compile(r"^\((\d+\.\d+)\)")


def span(log, start, ends):
    t0 = t1 = None
    for line in log.read_text(errors="replace").splitlines():
        m = STAMP.match(line)
        if not m:
            continue
        if t0 is None and start in line:
            t0 = float(m.group(1))
        elif t0 is not None and any(e in line for e in ends):
            t1 = float(m.group(1))
            break
    return None if t0 is None or t1 is None else (t1 - t0) * 1000


# The dump's first-lock path: (step, the line that ends it)
DUMP_STEPS = [
    ("criu's JVM to init", "cuda_plugin: starting the CUDA agent"),
    ("to PAUSE_DEVICES", "hook PAUSE_DEVICES("),
    ("agent wait", "cuda_plugin: using "),
    ("find + watch", "found and watched in"),
    ("lock", ("CUDA locked in", "CUDA job locked:")),
]


def steps(log):
    """Milliseconds of each DUMP_STEPS step after "enabled", or None where a line is missing (another path ran)."""
    marks = []
    lines = log.read_text(errors="replace").splitlines()
    start = next((float(STAMP.match(l).group(1)) for l in lines if STAMP.match(l) and "cuda_plugin: enabled" in l), None)
    if start is None:
        return None
    prev = start
    for _, end in DUMP_STEPS:
        ends = end if isinstance(end, tuple) else (end,)
        t = next((float(STAMP.match(l).group(1)) for l in lines
                  if STAMP.match(l) and float(STAMP.match(l).group(1)) >= prev and any(e in l for e in ends)), None)
        if t is None:
            return None
        marks.append((t - prev) * 1000)
        prev = t
    return marks


def first_drain(log):
    """Milliseconds of the dump's first PARASITE_CMD_DRAIN_FDS (71), or None where the log has none."""
    t0 = None
    for line in log.read_text(errors="replace").splitlines():
        m = STAMP.match(line)
        if not m:
            continue
        if t0 is None and "Sent msg to daemon 71 " in line:
            t0 = float(m.group(1))
        elif t0 is not None and "Wait for ack 71 " in line:
            return (float(m.group(1)) - t0) * 1000
    return None


def drains(logdir):
    """(case, flow) -> first-drain ms of each round, for every flow's dumps but the warm-up cycle's."""
    found = {}
    for log in sorted(pathlib.Path(logdir).glob("ph-*.dump.log")):
        m = re.fullmatch(r"ph-([a-z-]+)-(\d+)-(\d+)-[1-9]\d*", log.name.split(".")[0])
        ms = first_drain(log) if m else None
        if ms is not None:
            flow, mib, children = m.groups()
            found.setdefault((int(mib), int(children), flow), []).append(ms)
    return found


def main(logdir):
    cases = {}
    split = {}
    for log in sorted(pathlib.Path(logdir).glob("ph-*.*.log")):
        m = re.fullmatch(r"ph-(ours|base)-(\d+)-(\d+)-[1-9]\d*", log.name.split(".")[0])
        if m is None:
            continue  # another flow (upstream, manual, ours-seq, ...) or the warm-up cycle
        flow, mib, children = m.group(1), int(m.group(2)), int(m.group(3))
        kind = log.name.split(".")[1]
        ms = span(log, "cuda_plugin: enabled",
                  ("CUDA locked in", "CUDA job locked:") if kind == "dump" else ("JVM threads after init",))
        if ms is not None:
            cases.setdefault((mib, children, flow), {}).setdefault(kind, []).append(ms)
        marks = steps(log) if kind == "dump" else None
        if marks is not None:
            split.setdefault((mib, children, flow), []).append(marks)
    print("| case | flow | rounds | enabled -> first lock (dump) | enabled -> end of init (restore) |")
    print("|---|---|---|---|---|")
    for (mib, children, flow), kinds in sorted(cases.items()):
        name = f"{children + 1} x {mib} MiB" if children else f"1 process, {mib} MiB"
        cell = lambda k: f"{statistics.median(kinds[k]):.0f} ms (min {min(kinds[k]):.0f}, max {max(kinds[k]):.0f})" if k in kinds else "NA"
        print(f"| {name} | {flow} | {len(kinds.get('dump', []))} | {cell('dump')} | {cell('restore')} |")
    print()
    print("| case | flow | rounds | " + " | ".join(step for step, _ in DUMP_STEPS) + " |")
    print("|---|---|---|" + "---|" * len(DUMP_STEPS))
    for (mib, children, flow), rows in sorted(split.items()):
        name = f"{children + 1} x {mib} MiB" if children else f"1 process, {mib} MiB"
        cols = [f"{statistics.median(r[i] for r in rows):.0f} ms" for i in range(len(DUMP_STEPS))]
        print(f"| {name} | {flow} | {len(rows)} | " + " | ".join(cols) + " |")
    print()
    print("| case | flow | rounds | criu's first drain of a task's files (median, max) |")
    print("|---|---|---|---|")
    for (mib, children, flow), ms in sorted(drains(logdir).items()):
        name = f"{children + 1} x {mib} MiB" if children else f"1 process, {mib} MiB"
        print(f"| {name} | {flow} | {len(ms)} | {statistics.median(ms):.1f} ms, {max(ms):.1f} ms |")


if __name__ == "__main__":
    main(sys.argv[1])
