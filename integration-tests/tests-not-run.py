"""Names every test class that did not run all its tests (surefire and failsafe reports under each module's target),
one line each with the reason the test gave, so that a passing build does not hide a check that never ran.
usage: python3 integration-tests/tests-not-run.py [REPO]   (prints nothing when every test ran)"""
import pathlib
import sys
import xml.etree.ElementTree as ET


def reasons(suite):
    seen = []
    for case in suite.iter("testcase"):
        for skipped in case.findall("skipped"):
            text = (skipped.get("message") or skipped.text or "").strip().splitlines()
            why = text[0].split("Assumption failed: ", 1)[-1] if text else "no reason given"
            if why not in seen:
                seen.append(why)
    return seen


def main(repo):
    for report in sorted(pathlib.Path(repo).glob("*/target/*-reports*/TEST-*.xml")):
        try:
            suite = ET.parse(report).getroot()
        except ET.ParseError as e:
            print(f"NOT READ: {report}: {e}")
            continue
        tests, skipped = int(suite.get("tests", "0")), int(suite.get("skipped", "0"))
        if tests and not skipped:
            continue
        what = f"{skipped} of {tests} skipped" if tests else "no test ran"
        why = "; ".join(reasons(suite)) or "the class gave no reason"
        where = report.parent.name.split("-reports", 1)[1]   # "-criu-4.3" for test-all.sh's pass against criu 4.3
        print(f"NOT RUN: {suite.get('name')}{where and ' (' + where[1:] + ')'}: {what}: {why}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
