#!/usr/bin/python3
"""Inference throughput against p99 latency, one curve per stage count K.

Reads a `gpipe-sim sweep --workload inference --out` CSV (K x B in flight x
micro-batch size b). Each point is one configuration: its throughput in
samples/s against the 99th percentile of its items' latencies. For each K the
line joins its Pareto front (no other point of that K is both faster and
sooner); the faint points are the rest. Latency is on a log scale. Each K's
label names the B and b of its fastest point (within the limit, if given).
With --latency-limit, a dashed line marks it and a ring marks each K's best
throughput within it, as the sweep's summary chooses.
"""

import math

import common

PROG = "inference_tradeoff.py"
COLUMNS = ["stages", "in_flight", "micro_batch_size", "status", "throughput_samples_per_s", "latency_p99_us"]


def parse_args():
    parser = common.make_parser(PROG, __doc__.split("\n")[0])
    parser.add_argument("sweep", metavar="SWEEP.csv", help="CSV written by gpipe-sim sweep --workload inference --out")
    parser.add_argument("--out", required=True, metavar="PNG", help="image to write")
    parser.add_argument("--latency-limit-us", type=float, metavar="US",
                        help="mark this p99 limit and each K's best throughput within it")
    return parser.parse_args()


def load(path):
    """[(K, B, b, samples/s, p99 us)] of the simulated rows; InputError naming line and column."""
    points = []
    for line, row in common.csv_rows(path, COLUMNS, "an inference sweep CSV"):
        if row["status"] != "ok":
            continue
        try:
            k, b_in_flight, b = int(row["stages"]), int(row["in_flight"]), int(row["micro_batch_size"])
            throughput, p99 = float(row["throughput_samples_per_s"]), float(row["latency_p99_us"])
        except (TypeError, ValueError):
            raise common.InputError(f"{path}:{line}: a number is malformed or missing") from None
        if not (math.isfinite(throughput) and math.isfinite(p99) and throughput >= 0 and p99 >= 0):
            raise common.InputError(f"{path}:{line}: throughput and latency must be finite and >= 0")
        points.append((k, b_in_flight, b, throughput, p99))
    if not points:
        raise common.InputError(f"{path}: no simulated row")
    return points


def pareto_front(points):
    """The points no other beats on both throughput (higher) and latency (lower), by latency."""
    front = []
    for p in sorted(points, key=lambda p: (p[4], -p[3])):
        if not front or p[3] > front[-1][3]:
            front.append(p)
    return front


def main():
    args = parse_args()
    points = load(args.sweep)
    fig, ax = common.new_figure(figsize=(9, 5.5))
    all_us = [p[4] for p in points]
    divisor, unit = common.time_unit(max(all_us))
    for i, k in enumerate(sorted({p[0] for p in points})):
        color = common.PALETTE[i % len(common.PALETTE)]
        mine = [p for p in points if p[0] == k]
        ax.scatter([p[4] / divisor for p in mine], [p[3] for p in mine], s=10, color=color, alpha=0.25, lw=0)
        front = pareto_front(mine)
        ax.plot([p[4] / divisor for p in front], [p[3] for p in front], marker="o", ms=4, lw=1.6, color=color,
                label=f"K = {k}")
        labelled = front[-1]
        if args.latency_limit_us is not None:
            within = [p for p in mine if p[4] <= args.latency_limit_us]
            if within:
                labelled = max(within, key=lambda p: p[3])
                ax.scatter([labelled[4] / divisor], [labelled[3]], s=90, facecolors="none", edgecolors=color, lw=1.6,
                           zorder=4)
        ax.annotate(f"B={labelled[1]}, b={labelled[2]}", (labelled[4] / divisor, labelled[3]),
                    textcoords="offset points", xytext=(-8, 8), ha="right", fontsize=8, color=color)
    if args.latency_limit_us is not None:
        ax.axvline(args.latency_limit_us / divisor, ls="--", lw=1.1, color="0.4",
                   label=f"p99 limit {args.latency_limit_us / divisor:g} {unit} (rings: best within it)")
    ax.set_xscale("log")
    ax.set_xlabel(f"p99 latency of an item ({unit}, log scale)")
    ax.set_ylabel("throughput (samples/s)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.set_title("Inference: throughput against p99 latency (lines: each K's Pareto front over B and b)")
    ax.legend(loc="lower right")
    fig.tight_layout()
    common.save_figure(fig, args.out)


if __name__ == "__main__":
    common.run_main(PROG, main)
