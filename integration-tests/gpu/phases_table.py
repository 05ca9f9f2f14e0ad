"""Turns bench-phases.sh's phases.tsv into the markdown table of BENCHMARKS.md: medians per case and flow, and ratios.

phases.tsv columns (tab-separated): flow, MiB per process, children, round, criu dump seconds, helper seconds before
the dump (manual flow), dump phases "init freeze device pages rest", criu restore seconds, helper seconds after the
restore, restore phases "init memory device", "status|pid:thp-mib ...".

usage: python3 phases_table.py phases.tsv
"""
import statistics
import sys
from collections import defaultdict


def num(text):
    try:
        return float(text)
    except ValueError:
        return None


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(v):
    return "–" if v is None else f"{v:.2f}"


def ratio(a, b):
    return "–" if a is None or b in (None, 0) else f"{a / b:.2f}"


def main():
    rows = defaultdict(list)
    order = []
    for line in open(sys.argv[1]):
        f = line.rstrip("\n").split("\t")
        if len(f) != 11:
            continue
        flow, mib, children, round_no, dump_s, helper_d, dphases, restore_s, helper_r, rphases, status = f
        if round_no == "0":
            continue  # the untimed warm-up cycle
        case = f"{int(children) + 1} x {mib} MiB" if children != "0" else f"1 process, {mib} MiB"
        if (case, flow) not in rows:
            order.append((case, flow))
        d = [num(x) for x in dphases.split()]
        r = [num(x) for x in rphases.split()]
        ok, _, thp = status.partition("|")
        dump_total = None if num(dump_s) is None else num(dump_s) + (num(helper_d) or 0)
        restore_total = None if num(restore_s) is None else num(restore_s) + (num(helper_r) or 0)
        rows[(case, flow)].append({
            "dump": dump_total, "d_init": d[0], "d_freeze": d[1], "d_device": d[2] if not flow.startswith("manual") else num(helper_d),
            "d_pages": d[3], "restore": restore_total, "r_init": r[0], "r_memory": r[1],
            "r_device": r[2] if not flow.startswith("manual") else num(helper_r), "ok": ok, "thp": thp.strip(),
        })
    print("| case | flow | rounds | dump | init | freeze+lock | device ckpt | task/page dump | restore | init "
          "| memory+tasks | device restore | THP MiB at page dump | check |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    med = {}
    for key in order:
        rs = rows[key]
        m = {k: median([r[k] for r in rs]) for k in ("dump", "d_init", "d_freeze", "d_device", "d_pages", "restore",
                                                    "r_init", "r_memory", "r_device")}
        med[key] = m
        oks = sorted({r["ok"] for r in rs})
        print(f"| {key[0]} | {key[1]} | {len(rs)} | **{fmt(m['dump'])}** | {fmt(m['d_init'])} | {fmt(m['d_freeze'])} "
              f"| {fmt(m['d_device'])} | {fmt(m['d_pages'])} | **{fmt(m['restore'])}** | {fmt(m['r_init'])} "
              f"| {fmt(m['r_memory'])} | {fmt(m['r_device'])} | {rs[-1]['thp'] or '–'} | {', '.join(oks)} |")
    print()
    print("| case | ours/upstream dump | ours/upstream restore | ours/manual dump | ours/manual restore "
          "| page dump ours/manual |")
    print("|---|---|---|---|---|---|")
    for case in dict.fromkeys(k[0] for k in order):
        o, u, m = med.get((case, "ours")), med.get((case, "upstream")), med.get((case, "manual"))
        if not o:
            continue
        print(f"| {case} | {ratio(o['dump'], u and u['dump'])} | {ratio(o['restore'], u and u['restore'])} "
              f"| {ratio(o['dump'], m and m['dump'])} | {ratio(o['restore'], m and m['restore'])} "
              f"| {ratio(o['d_pages'], m and m['d_pages'])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
