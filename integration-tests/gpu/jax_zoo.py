#!/usr/bin/env python3
"""JAX in the feature zoo (cases_zoo.py): on every GPU JAX sees (its default: all of them), a jitted matmul chain on
fixed inputs, and the result moved to the next GPU and back; each tick's digest must equal the first tick's:

    [z PID] ready feature=jax gpus=N
    [z PID] tick N ok | tick N BAD digest D (first F)
    [z PID] exit ticks=N bad=B        (SIGTERM)

--collective: a psum over the GPUs under jax.pmap each tick as well (XLA runs it through NCCL inside the process)

usage: jax_zoo.py [--n 1024] [--tick-ms 50] [--collective]
"""
import argparse
import hashlib

import jax
import jax.numpy as jnp
import numpy as np

import zoo_loop


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--tick-ms", type=int, default=50)
    ap.add_argument("--collective", action="store_true")
    args = ap.parse_args()
    devices = jax.devices()
    rng = np.random.default_rng(7)
    a = rng.standard_normal((args.n, args.n), dtype=np.float32)
    inputs = [jax.device_put(a, d) for d in devices]

    @jax.jit
    def work(x):
        for _ in range(4):
            x = jnp.tanh(x @ x / x.shape[0])
        return x

    summed = jax.pmap(lambda x: jax.lax.psum(x, "i"), axis_name="i")
    stacked = np.stack([a[:64] * (k + 1) for k in range(len(devices))])

    def digest():
        h = hashlib.sha256()
        if args.collective:
            h.update(np.asarray(summed(stacked)).tobytes())
        for k, x in enumerate(inputs):
            y = work(x)
            y = jax.device_put(y, devices[(k + 1) % len(devices)])   # to the next GPU and back
            y = jax.device_put(y, devices[k])
            h.update(np.asarray(y).tobytes())
        return h.hexdigest()[:16]

    zoo_loop.run(f"feature=jax gpus={len(devices)} platform={devices[0].platform} jax={jax.__version__}", digest,
                 args.tick_ms)


if __name__ == "__main__":
    main()
