"""The feature zoo's tick loop, shared by cuda_zoo.py, jax_zoo.py and torch_zoo.py: every tick the program's digest
of its result is compared with the expected one (the first tick's where none is given), one line each:

    [z PID] ready feature=NAME gpus=N ...
    [z PID] tick N ok | tick N BAD digest D (expected E)
    [z PID] exit ticks=N bad=B        (SIGTERM)
"""
import os
import signal
import time


def say(text):
    print(f"[z {os.getpid()}] {text}", flush=True)


def run(ready, digest, tick_ms, expected=None):
    """Prints {@code ready} after the first digest, then ticks until SIGTERM."""
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    first = digest()
    expected = first if expected is None else expected
    say(f"ready {ready}")
    tick, bad = 0, 0
    while not stop:
        d = digest()
        tick += 1
        if d == expected:
            say(f"tick {tick} ok")
        else:
            bad += 1
            say(f"tick {tick} BAD digest {d} (expected {expected})")
        time.sleep(tick_ms / 1000)
    say(f"exit ticks={tick} bad={bad}")
