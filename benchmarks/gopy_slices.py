"""What would a gopy slice cost for bulk data, against a buffer address?

pyapi passes NumPy buffers to Go as (address, length) instead of gopy
slices. gopy v0.4.10's Slice_float64 wrapper fills a Go slice with one
Slice_float64_append call per element and reads it with one Slice_float64_elem
call per element; this script times those low-level calls (a lower bound on
the wrapper class, which adds a Python method call per element) against
np.ascontiguousarray plus reading the buffer's address, what pyapi does.

    PYTHONPATH=python python benchmarks/gopy_slices.py --n 100000
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from psda import _psdago as g


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000, help="elements (default 100000)")
    ap.add_argument("--repeats", type=int, default=3, help="timed repeats, the median is printed")
    args = ap.parse_args()
    x = np.random.default_rng(0).standard_normal(args.n)
    values = x.tolist()

    into, out, buf = [], [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        h = g.Slice_float64_CTor()
        for v in values:
            g.Slice_float64_append(h, v)
        t1 = time.perf_counter()
        back = [g.Slice_float64_elem(h, i) for i in range(args.n)]
        t2 = time.perf_counter()
        a = np.ascontiguousarray(x, dtype=np.float64)
        addr, n = a.ctypes.data, a.size
        t3 = time.perf_counter()
        assert back == values and addr and n == args.n
        into.append(t1 - t0)
        out.append(t2 - t1)
        buf.append(t3 - t2)

    def per(ts: list[float]) -> float:
        return 1e6 * sorted(ts)[len(ts) // 2] / args.n

    print(f"n = {args.n}, median of {args.repeats}, microseconds per element:")
    print(f"  gopy slice, Python -> Go (append): {per(into):.3f}")
    print(f"  gopy slice, Go -> Python (elem):   {per(out):.3f}")
    print(f"  NumPy buffer address:              {per(buf):.5f}")


if __name__ == "__main__":
    main()
