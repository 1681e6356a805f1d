"""How often and how much does Python cross into the Go core?

Times psda.match, building a PairedBatchSampler (its own matching plus the
schedule) and iterating one epoch, and counts the calls into the library
(gopy functions and C ABI functions through ctypes) made by one match, one
sampler and one epoch. The library holds one Go runtime per process, so two
builds are compared by running this script alternately with each on
PYTHONPATH:

    for i in 1 2 3; do for tree in /path/to/base /path/to/branch; do
        PYTHONPATH=$tree/python python benchmarks/boundary.py --n 4000 --d 512; done; done

The fingerprint shows that the matchings agree.
"""

from __future__ import annotations

import argparse
import collections
import time

import numpy as np

import psda
from psda import _native


class _Counting:
    """Forwards attribute access to inner, counting the calls made through it."""

    def __init__(self, inner, tag, counts):
        self._inner, self._tag, self._counts = inner, tag, counts

    def __getattr__(self, name):
        v = getattr(self._inner, name)
        if not callable(v) or name.startswith("__"):
            return v

        def call(*a, **k):
            self._counts[self._tag + name] += 1
            return v(*a, **k)

        return call


def once(s, t, k):
    t0 = time.perf_counter()
    m = psda.match(s, t, batch_size=k, progress=False)
    t1 = time.perf_counter()
    sampler = psda.PairedBatchSampler(s, t, k)
    t2 = time.perf_counter()
    batches = sum(1 for _ in sampler)
    t3 = time.perf_counter()
    return m, (t1 - t0, t2 - t1, t3 - t2), batches


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=4000)
    ap.add_argument("--d", type=int, default=512)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--reps", type=int, default=2)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    s = rng.normal(size=(a.n, a.d)).astype(np.float32)
    t = (rng.normal(size=(a.n, a.d)) + 0.5).astype(np.float32)

    counts: collections.Counter = collections.Counter()
    gopy, lib = _native._gopy, _native._lib
    _native._gopy, _native._lib = _Counting(gopy, "gopy:", counts), _Counting(lib, "capi:", counts)
    try:
        m, _, batches = once(s, t, a.batch_size)
    finally:
        _native._gopy, _native._lib = gopy, lib
    times = np.median([once(s, t, a.batch_size)[1] for _ in range(a.reps)], axis=0)
    print(f"n={a.n} d={a.d} match {times[0]:.3f} s, sampler {times[1]:.3f} s, epoch of {batches} batches "
          f"{times[2] * 1e3:.2f} ms; {sum(counts.values())} calls into the library; fingerprint {m.fingerprint[:12]}")
    for name, c in sorted(counts.items()):
        print(f"  {c:5d} {name}")


if __name__ == "__main__":
    main()
