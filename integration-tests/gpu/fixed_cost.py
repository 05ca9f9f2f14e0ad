"""Our plugin's fixed cost per command, from bench-phases.sh's criu logs (-v4 timestamps), medians per case:
dump: "cuda_plugin: enabled" to the first lock ("CUDA locked in", or "CUDA job locked:" for a tree); restore: "enabled" to the end of the plugin's init
("JVM threads after init"). usage: python3 fixed_cost.py LOGDIR"""
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


def main(logdir):
    cases = {}
    for log in sorted(pathlib.Path(logdir).glob("ph-ours-*.*.log")):
        m = re.fullmatch(r"ph-ours-(\d+)-(\d+)-[1-9]\d*", log.name.split(".")[0])
        if m is None:
            continue  # a diagnostic flow (ours-seq, ours-cli, ...) or the warm-up cycle
        mib, children = m.groups()
        kind = log.name.split(".")[1]
        ms = span(log, "cuda_plugin: enabled",
                  ("CUDA locked in", "CUDA job locked:") if kind == "dump" else ("JVM threads after init",))
        if ms is not None:
            cases.setdefault((int(mib), int(children)), {}).setdefault(kind, []).append(ms)
    print("| case | rounds | enabled -> first lock (dump) | enabled -> end of init (restore) |")
    print("|---|---|---|---|")
    for (mib, children), kinds in sorted(cases.items()):
        name = f"{children + 1} x {mib} MiB" if children else f"1 process, {mib} MiB"
        cell = lambda k: f"{statistics.median(kinds[k]):.0f} ms (min {min(kinds[k]):.0f}, max {max(kinds[k]):.0f})" if k in kinds else "NA"
        print(f"| {name} | {len(kinds.get('dump', []))} | {cell('dump')} | {cell('restore')} |")


if __name__ == "__main__":
    main(sys.argv[1])
