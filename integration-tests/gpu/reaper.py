"""Runs a command as a child subreaper and reaps every process that ends up ours.

Processes restored with `criu restore -d` are reparented to the nearest subreaper when criu exits; a dumped
(killed) task that nobody reaps keeps its pid, and restoring it then fails with "File exists". Running the test
script under this reaper makes every such pid free again as soon as the task ends.

usage: python3 reaper.py CMD [ARG...]   (exit status: CMD's)
"""
import ctypes
import os
import signal
import sys

PR_SET_CHILD_SUBREAPER = 36


def main():
    if len(sys.argv) < 2:
        print("usage: reaper.py CMD [ARG...]", file=sys.stderr)
        return 2
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print(f"reaper: PR_SET_CHILD_SUBREAPER failed: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
        return 1
    main_pid = os.fork()
    if main_pid == 0:
        try:
            os.execvp(sys.argv[1], sys.argv[1:])
        finally:
            os._exit(127)
    # an outer `timeout` signals the whole process group: the script traps the signal to pack its logs, so the
    # reaper passes it on and waits for the script instead of ending first (which would end the run before the logs)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: os.kill(main_pid, signum))
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return 1
        except InterruptedError:
            continue
        if pid == main_pid:
            code = os.waitstatus_to_exitcode(status)
            return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
