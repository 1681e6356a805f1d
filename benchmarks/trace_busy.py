"""Seconds at each level of goroutine demand in a Go runtime trace.

Reads ``go tool trace -d=parsed TRACE`` on stdin and prints how long 0, 1,
2 and 3+ goroutines were running or runnable ("demand"): time at demand 1
on a 2-core machine is a serial section, whatever else loads the machine
(docs/performance.md, "Serial sections around the sparse costs").

Args (command line): BIN, the timeline's bin in seconds (default 0.5); -t
to print each bin's mean running and demand counts.

Example::

    go tool trace -d=parsed t.out | python3 benchmarks/trace_busy.py 0.5 -t
"""
import collections
import re
import sys

GO = re.compile(r"StateTransition Time=(\d+) GoID=(\d+) (\w+)->(\w+)")
LIVE = ("Running", "Runnable")


def main():
    args = [a for a in sys.argv[1:] if a != "-t"]
    width = int(float(args[0]) * 1e9) if args else 500_000_000
    state, running, demand = {}, 0, 0
    t0 = last = None
    by_run, by_demand = collections.Counter(), collections.Counter()
    bins = collections.defaultdict(lambda: [0, 0])
    for line in sys.stdin:
        m = GO.search(line)
        if not m:
            continue
        t, g, new = int(m.group(1)), m.group(2), m.group(4)
        if t0 is None:
            t0 = last = t
        by_run[running] += t - last
        by_demand[min(demand, 3)] += t - last
        a = last
        while a < t:  # spread [last, t) over the bins it crosses
            k = (a - t0) // width
            b = min(t, t0 + (k + 1) * width)
            bins[k][0] += running * (b - a)
            bins[k][1] += min(demand, 2) * (b - a)
            a = b
        last = t
        old = state.get(g)
        state[g] = new
        running += (new == "Running") - (old == "Running")
        demand += (new in LIVE) - (old in LIVE)
    total = sum(by_run.values())
    print(f"total {total / 1e9:.2f} s")
    print("running:", {k: f"{v / 1e9:.2f} s" for k, v in sorted(by_run.items())})
    print("demand (3: 3+):", {k: f"{v / 1e9:.2f} s" for k, v in sorted(by_demand.items())})
    if "-t" in sys.argv:
        for k in sorted(bins):
            r, d = bins[k]
            print(f"{k * width / 1e9:6.1f} run {r / width:.2f} demand {d / width:.2f}")


if __name__ == "__main__":
    main()
