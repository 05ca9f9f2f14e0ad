#!/usr/bin/env python3
"""What else ran on the host while criu dumped pages: waits for criu's first "Dumping task" line in LOG, takes a
snapshot of every thread's CPU time (/proc/*/task/*/stat) and of /proc/vmstat, waits for "Running post-dump", takes
them again and prints the window's length, the threads that used the most CPU in it and the vmstat counters that
moved most. A benchmark diagnostic (bench-phases.sh, BENCH_CPU=1), not a test.

usage: cpu_window.py LOG [TIMEOUT_S]
"""
import os
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


class Tail:
    """Reads only what was appended since the last look: criu's -v4 log grows by megabytes during the page dump,
    and reading it whole every few milliseconds would itself load the host being measured."""

    def __init__(self, path):
        self.path = path
        self.offset = 0
        self.carry = ""

    def wait_line(self, text, deadline):
        while time.monotonic() < deadline:
            try:
                with open(self.path, errors="replace") as f:
                    f.seek(self.offset)
                    chunk = f.read()
                    self.offset = f.tell()
            except FileNotFoundError:
                chunk = ""
            seen = self.carry + chunk
            if text in seen:
                return True
            self.carry = seen[-len(text):]
            time.sleep(0.005)
        return False


def threads():
    seen = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            comm = stat[stat.index("(") + 1:stat.rindex(")")]
            fields = stat[stat.rindex(")") + 2:].split()
            # fields[11], fields[12]: utime, stime (fields 14 and 15 of stat(5))
            seen[(int(pid), int(tid))] = (comm, int(fields[11]) + int(fields[12]))
    return seen


def process_name(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return "?"


def vmstat():
    with open("/proc/vmstat") as f:
        return {k: int(v) for k, v in (line.split() for line in f)}


def main(log, timeout):
    deadline = time.monotonic() + timeout
    tail = Tail(log)
    if not tail.wait_line("Dumping task (pid", deadline):
        print("cpu_window: criu never began dumping tasks")
        return
    t0, cpu0, vm0 = time.monotonic(), threads(), vmstat()
    names = {pid: process_name(pid) for pid, _ in cpu0}
    if not tail.wait_line("Running post-dump", deadline):
        print("cpu_window: criu never finished dumping tasks")
        return
    t1, cpu1, vm1 = time.monotonic(), threads(), vmstat()
    window = t1 - t0
    used = []
    for key, (comm, ticks) in cpu1.items():
        before = cpu0.get(key, (comm, 0))[1]
        if ticks > before:
            used.append(((ticks - before) / TICK, key, comm))
    used.sort(reverse=True)
    print(f"cpu_window: page dump window {window:.2f} s; CPU s of the busiest threads in it:")
    for secs, (pid, tid), comm in used[:15]:
        print(f"  {secs:6.2f} s  pid {pid} ({names.get(pid, process_name(pid))}) tid {tid} ({comm})")
    print(f"  total over all threads: {sum(u[0] for u in used):.2f} s")
    moved = sorted(((vm1[k] - vm0.get(k, 0), k) for k in vm1 if vm1[k] != vm0.get(k, 0)), reverse=True)
    print("cpu_window: vmstat counters that moved most: " + ", ".join(f"{k} {d}" for d, k in moved[:25]))


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 600)
