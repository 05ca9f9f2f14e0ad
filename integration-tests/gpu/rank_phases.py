#!/usr/bin/env python3
"""Where a (multi-rank) CUDA job's criu dump goes, from criu's -v4 log timestamps "(SS.ffffff) text"; stdlib only.

Markers (the plugin's and criu's own lines):
  lock end     "CUDA job locked: N tasks [...] in X ms" (several tasks) or "pid N: CUDA locked in X ms" (one task);
               the lock started X ms before (the job stands still from there)
  checkpoints  the last "pid N: CUDA checkpointed in X ms" (each pid's X is kept); its pids are the CUDA tasks
  page dump    first "Dumping task (pid: N comm: ...)" to "cuda_plugin: hook EXIT(stage=0, ret=0)"; per task from its
               "Dumping task (pid: N" line to the next one or the EXIT line ("Dumping task cwd id" starts nothing)
  return       EXIT line to "Unfreezing tasks into S": S=1 the tree runs on (-R, "alive"), S=2 it is killed (plain
               dump, "killed"), 3 stopped (-s); no Unfreezing line: return and stall are "n/a"
  stall        Unfreezing - lock start (with -R the time the job stood still; without, until it was killed)
  total        "Dumping finished successfully" (else the last timestamp, with a warning)

usage: rank_phases.py [--header] [--case LABEL] LOG...   one TSV line per log (seconds, ms where named so)
       rank_phases.py --table TSV...                     markdown table of medians per case
The case label is --case's (for every LOG of the call) or else the log's name without ".dump.log": "X-R<n>" -> X
(dump -R rounds), "X-c<n>" -> "X-c" (the dumps of dump+restore cycles: the tree is killed), otherwise a trailing
"-<n>" is dropped. A missing marker gives "-" in its fields and a warning on stderr; nothing is fatal.
"""
import os
import re
import statistics
import sys
from collections import defaultdict

COLUMNS = ["log", "case", "tasks", "start_lock_s", "lock_ms", "checkpoint_s", "page_dump_s", "page_dump_task_s",
           "return_s", "stall_s", "total_s", "page_dump_rest_s", "ckpt_task_ms", "unfreeze"]

TS = re.compile(r"^\((\d+\.\d+)\)\s?(.*)$")
LOCK_JOB = re.compile(r"CUDA job locked: (\d+) tasks \[[^\]]*\] in (\d+) ms")
LOCK_ONE = re.compile(r"pid (\d+): CUDA locked in (\d+) ms")
CKPT = re.compile(r"pid (\d+): CUDA checkpointed in (\d+) ms")
TASK = re.compile(r"^Dumping task \(pid: (\d+)")
EXIT = re.compile(r"cuda_plugin: hook EXIT\(stage=0, ret=(-?\d+)\)")
UNFREEZE = re.compile(r"^Unfreezing tasks into (\d+)")
DONE = "Dumping finished successfully"
STATES = {"1": "alive", "2": "killed", "3": "stopped"}


def warn(path, what):
    print(f"rank_phases: {os.path.basename(path)}: {what}", file=sys.stderr)


def case_of(name):
    base = os.path.basename(name)
    for suffix in (".dump.log", ".log"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
            break
    m = re.match(r"^(.*)-R\d+$", base)
    if m:
        return m.group(1)
    m = re.match(r"^(.*)-c\d+$", base)
    if m:
        return m.group(1) + "-c"
    return re.sub(r"-\d+$", "", base)


def s(v):
    return "-" if v is None else f"{v:.3f}"


def parse(path, case=None):
    """One TSV row (a list of strings in COLUMNS order) for one criu dump log."""
    lock_end = lock_start = lock_ms = exit_ts = unfreeze_ts = done_ts = last_ts = None
    unfreeze = None
    ckpt_ts = None
    ckpt_ms = {}            # pid -> ms
    tasks = []              # (pid, ts) of "Dumping task (pid:" lines, in order
    try:
        with open(path, errors="replace") as f:
            for line in f:
                m = TS.match(line)
                if not m:
                    continue
                ts, text = float(m.group(1)), m.group(2)
                last_ts = ts
                if "cuda_plugin" in text or "CUDA" in text:
                    lm = LOCK_JOB.search(text) or LOCK_ONE.search(text)
                    if lm:
                        ms = int(lm.group(2))
                        lock_end, lock_ms = ts, (lock_ms or 0) + ms
                        start = ts - ms / 1000.0
                        lock_start = start if lock_start is None else min(lock_start, start)
                        continue
                    cm = CKPT.search(text)
                    if cm:
                        ckpt_ts = ts
                        ckpt_ms[int(cm.group(1))] = int(cm.group(2))
                        continue
                    em = EXIT.search(text)
                    if em and exit_ts is None:
                        exit_ts = ts
                        if em.group(1) != "0":
                            warn(path, f"hook EXIT with ret={em.group(1)} (a failed dump)")
                        continue
                tm = TASK.match(text)
                if tm and exit_ts is None:
                    tasks.append((int(tm.group(1)), ts))
                    continue
                um = UNFREEZE.match(text)
                if um and unfreeze_ts is None:
                    unfreeze_ts, unfreeze = ts, STATES.get(um.group(1), "state " + um.group(1))
                    continue
                if text.startswith(DONE):
                    done_ts = ts
    except OSError as e:
        warn(path, f"cannot read: {e}")
    markers = (("CUDA job locked / CUDA locked in", lock_end), ("CUDA checkpointed", ckpt_ts),
               ("Dumping task (pid:", tasks or None), ("hook EXIT(stage=0, ret=0)", exit_ts))
    if last_ts is None:
        warn(path, "no timestamped lines")
    else:
        for name, v in markers:
            if v is None:
                warn(path, f"no '{name}' line")
    if done_ts is None and last_ts is not None:
        warn(path, f"no '{DONE}' line: total is the last timestamp")
    ret = stall = None
    if unfreeze_ts is None:
        if last_ts is not None:
            warn(path, "no 'Unfreezing tasks' line: return and stall n/a")
        ret_txt = stall_txt = "n/a"
    else:
        ret = unfreeze_ts - exit_ts if exit_ts is not None else None
        stall = unfreeze_ts - lock_start if lock_start is not None else None
        ret_txt, stall_txt = s(ret), s(stall)
    per_task, rest, order = [], None, []
    if tasks and exit_ts is not None:
        rest = 0.0
        for i, (pid, t0) in enumerate(tasks):
            d = (tasks[i + 1][1] if i + 1 < len(tasks) else exit_ts) - t0
            if pid in ckpt_ms:
                per_task.append(d)
                order.append(pid)
            else:
                rest += d
    order += [p for p in ckpt_ms if p not in order]   # CUDA tasks never dumped (a failed dump)
    checkpoint = ckpt_ts - lock_end if ckpt_ts is not None and lock_end is not None else None
    page = exit_ts - tasks[0][1] if tasks and exit_ts is not None else None
    total = done_ts if done_ts is not None else last_ts
    return [os.path.basename(path), case or case_of(path), str(len(ckpt_ms)) if ckpt_ms else "-",
            s(lock_end), "-" if lock_ms is None else str(lock_ms), s(checkpoint), s(page),
            ",".join(f"{d:.3f}" for d in per_task) or "-", ret_txt, stall_txt, s(total), s(rest),
            ",".join(str(ckpt_ms[p]) for p in order) or "-", unfreeze or "-"]


def nums(text):
    out = []
    for x in text.split(","):
        try:
            out.append(float(x))
        except ValueError:
            pass
    return out


def table(paths):
    rows, order = defaultdict(list), []
    for path in paths:
        try:
            lines = open(path, errors="replace").read().splitlines()
        except OSError as e:
            warn(path, f"cannot read: {e}")
            continue
        for line in lines:
            f = line.split("\t")
            if len(f) != len(COLUMNS) or f[0] == COLUMNS[0]:
                continue
            r = dict(zip(COLUMNS, f))
            if r["case"] not in rows:
                order.append(r["case"])
            rows[r["case"]].append(r)

    def med(rs, col, fmt="{:.2f}"):
        v = [x for r in rs for x in nums(r[col])]
        return fmt.format(statistics.median(v)) if v else "-"

    print("| case | runs | tasks | start→lock s | lock ms | checkpoint s | page dump s | page dump per rank s "
          "| return s | stall s | total s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for c in order:
        rs = rows[c]
        tasks = sorted({r["tasks"] for r in rs})
        print(f"| {c} | {len(rs)} | {'/'.join(tasks)} | {med(rs, 'start_lock_s')} | {med(rs, 'lock_ms', '{:.0f}')} "
              f"| {med(rs, 'checkpoint_s')} | {med(rs, 'page_dump_s')} | {med(rs, 'page_dump_task_s')} "
              f"| {med(rs, 'return_s')} | {med(rs, 'stall_s')} | {med(rs, 'total_s')} |")


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    if argv[0] == "--table":
        table(argv[1:])
        return 0
    header, case, logs = False, None, []
    i = 0
    while i < len(argv):
        if argv[i] == "--header":
            header = True
        elif argv[i] == "--case" and i + 1 < len(argv):
            i += 1
            case = argv[i]
        else:
            logs.append(argv[i])
        i += 1
    if header:
        print("\t".join(COLUMNS))
    for path in logs:
        print("\t".join(parse(path, case)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
