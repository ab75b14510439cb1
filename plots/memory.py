#!/usr/bin/python3
"""Activation memory of each rank over time, from a gpipe Chrome trace.

Reads the trace's "activation memory" counter events (one sample per change,
holding until the next) and draws them as step lines in MB (1e6 bytes) or GB (1e9), one
per rank, with each rank's peak marked and labelled. GPipe's stash of all M
micro-batches on the first rank, 1F1B's cap of K in flight, and what
recomputation saves all show as the height of these curves.
"""

import common

PROG = "memory.py"
LINESTYLES = ["-", "--", "-.", ":"]  # after the eight palette colours, vary the dash too


def parse_args():
    parser = common.make_parser(PROG, __doc__.split("\n")[0])
    parser.add_argument("trace", metavar="TRACE.json", help="Chrome trace written by --trace")
    parser.add_argument("--out", required=True, metavar="PNG", help="image to write")
    return parser.parse_args()


def peak(samples):
    """(time, bytes) of the first sample at the rank's maximum."""
    return max(samples, key=lambda s: (s[1], -s[0]))


def draw(trace, out):
    if not trace.memory:
        raise common.InputError(f"{trace.path}: no '{common.MEMORY_COUNTER}' counter events "
                                f"to plot")
    t0 = min(min(a.start_us for a in trace.actions), *(s[0][0] for s in trace.memory.values()))
    t_end = max(max(a.end_us for a in trace.actions), *(s[-1][0] for s in trace.memory.values()))
    divisor, unit = common.time_unit(t_end - t0)
    # GB (1e9 bytes) once any rank passes 1 GB, else MB (1e6 bytes): labels stay short.
    largest = max(b for samples in trace.memory.values() for _, b in samples)
    scale, size_unit, size_label = (1e9, "GB", "GB, 10\u2079 bytes") if largest >= 1e9 else (
        1e6, "MB", "MB, 10\u2076 bytes")
    fig, ax = common.new_figure(figsize=(9, 5.5))
    n = len(common.PALETTE)
    for i, rank in enumerate(sorted(trace.memory)):
        samples = trace.memory[rank]
        # Hold the last value to the end of the trace so every curve spans the run.
        times = [(t - t0) / divisor for t, _ in samples] + [(t_end - t0) / divisor]
        mb = [b / scale for _, b in samples]
        mb.append(mb[-1])
        color = common.PALETTE[i % n]
        name = trace.rank_names.get(rank, f"rank {rank}")
        ax.step(times, mb, where="post", color=color, ls=LINESTYLES[(i // n) % len(LINESTYLES)],
                lw=1.6, label=name)
        t_peak, b_peak = peak(samples)
        x, y = (t_peak - t0) / divisor, b_peak / scale
        ax.plot([x], [y], marker="v", ms=8, color=color, mec="black", mew=0.6, ls="none",
                zorder=4)
        ax.annotate(f"{y:.3g} {size_unit}", (x, y), xytext=(4, 6), textcoords="offset points",
                    fontsize=8, color=color if color != "#F0E442" else "black")
    ax.plot([], [], marker="v", color="0.4", mec="black", ls="none", label="peak of each rank")
    ax.set_xlim(0, (t_end - t0) / divisor)
    ax.set_ylim(bottom=0, top=ax.get_ylim()[1] * 1.08)
    ax.set_xlabel(f"time since the trace began ({unit})")
    ax.set_ylabel(f"activation memory ({size_label})")
    ax.set_title(f"Activation memory per rank: {trace.describe()}")
    ax.grid(True, alpha=0.3)
    # Outside the axes: the curves fill the plot, and a legend inside would hide a peak.
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0,
              ncol=1 if len(trace.memory) <= 16 else 2)
    fig.tight_layout()
    common.save_figure(fig, out)


def main():
    args = parse_args()
    draw(common.load_trace(args.trace), args.out)


if __name__ == "__main__":
    common.run_main(PROG, main)
