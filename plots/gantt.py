#!/usr/bin/python3
"""Gantt timeline of one training step from gpipe Chrome traces, one row per rank.

Each rank's compute stream is the tall bar, coloured by action kind (F, B, R,
I, W, STEP) with the micro-batch number written in boxes wide enough for it;
the backward of an overlapped F&B pair that ran beside its forward
(`gpipe-sim run --overlap-f-b`) is a hatched bar right below it; the send and
receive lanes are the thin bars below. Several traces (say the
simulator's prediction and a measured run) are stacked with a shared time
axis, each measured from the start of its own step, so their shapes compare
directly.
"""

import common

PROG = "gantt.py"

# Kind -> (colour, legend text). F/B keep the usual light-blue/orange pairing.
KIND_STYLE = {
    "F": ("#56B4E9", "F forward"),
    "B": ("#E69F00", "B backward"),
    "R": ("#CC79A7", "R recompute"),
    "I": ("#D55E00", "I input gradient"),
    "W": ("#F0E442", "W weight gradient"),
    "STEP": ("#009E73", "STEP optimizer"),
    "OTHER": ("#000000", "send waits, FSDP/DP housekeeping"),
    "SEND": ("#0072B2", "send"),
    "RECV": ("#999999", "receive"),
}
COMPUTE_H = 0.6  # height of a compute row, in rank-band units
OVERLAP_TID = common.OVERLAP_TID
LANE_H, LANE_GAP = 0.13, 0.04
RANK_GAP = 0.45
FIG_WIDTH = 12.0


def parse_args():
    parser = common.make_parser(PROG, __doc__.split("\n")[0])
    parser.add_argument("traces", nargs="+", metavar="TRACE.json",
                        help="Chrome trace written by --trace (several: stacked top to bottom)")
    parser.add_argument("--out", required=True, metavar="PNG", help="image to write")
    parser.add_argument("--labels", help="comma-separated name per trace, e.g. pred,meas")
    parser.add_argument("--step", type=int, default=-1,
                        help="which step of a multi-step trace, from 0 (default: the last)")
    return parser.parse_args()


def style_key(kind):
    if kind.startswith(("SEND", "RECV")):
        return kind[:4]
    return kind if kind in KIND_STYLE else "OTHER"  # WAIT_SEND_*, UNSHARD, REDUCE_GRAD, ...


class Layout:
    """Where each (rank, tid) row sits: compute on top, send lanes, then receive lanes."""

    def __init__(self, trace, actions):
        sends = sorted({a.tid for a in actions if a.tid % 2 == 1})
        recvs = sorted({a.tid for a in actions if a.tid >= 2 and a.tid % 2 == 0 and a.tid != OVERLAP_TID})
        self.lanes = sends + recvs
        self.overlap = any(a.tid == OVERLAP_TID for a in actions)
        self.top = COMPUTE_H + (LANE_GAP + COMPUTE_H if self.overlap else 0)  # compute rows
        self.band = self.top + LANE_GAP + len(self.lanes) * (LANE_H + LANE_GAP) + RANK_GAP
        self.num_ranks = trace.num_ranks
        self.height = self.num_ranks * self.band

    def row(self, rank, tid):
        """(y, height) of the row: y grows downwards (the axis is inverted)."""
        base = rank * self.band
        if tid == 0:
            return base, COMPUTE_H
        if tid == OVERLAP_TID:
            return base + COMPUTE_H + LANE_GAP, COMPUTE_H
        index = self.lanes.index(tid)
        return base + self.top + LANE_GAP + index * (LANE_H + LANE_GAP), LANE_H


def lane_name(tid):
    if tid == OVERLAP_TID:
        return "overlapped"
    kind, n = ("send", (tid + 1) // 2) if tid % 2 else ("recv", tid // 2)
    return kind if n == 1 else f"{kind} {n}"


def box_text(action):
    if action.kind == "STEP":
        return "step"
    return str(action.microbatch)


def draw_trace(ax, trace, actions, title, divisor, px_per_unit):
    """One trace's step on ax, its times in units of `divisor` microseconds from the step start."""
    layout = Layout(trace, actions)
    t0 = min(a.start_us for a in actions)
    groups = {}
    for a in actions:
        span = ((a.start_us - t0) / divisor, a.dur_us / divisor)
        groups.setdefault((style_key(a.kind), a.rank, a.tid), []).append(span)
    for (key, rank, tid), spans in groups.items():
        # White seams part adjacent compute boxes; thin comm bars would vanish under them.
        compute_row = tid in (0, OVERLAP_TID)
        ax.broken_barh(spans, layout.row(rank, tid), facecolors=KIND_STYLE[key][0],
                       edgecolor="white", linewidth=0.6 if compute_row else 0,
                       hatch="///" if tid == OVERLAP_TID else None)
    for a in actions:
        text = box_text(a)
        # Room for the text: about 0.6 em per character plus a margin, at 8 pt.
        if a.tid in (0, OVERLAP_TID) and a.dur_us / divisor * px_per_unit >= len(text) * 8 * 0.6 + 4:
            y, h = layout.row(a.rank, a.tid)
            ax.text((a.start_us - t0 + a.dur_us / 2) / divisor, y + h / 2, text, ha="center",
                    va="center", fontsize=8,
                    color=common.contrast(KIND_STYLE[style_key(a.kind)][0]))
    label_rows(ax, trace, layout)
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    ax.set_title(title, loc="left", fontsize=10)


def label_rows(ax, trace, layout):
    """Rank names on the compute rows, small lane names on the comm rows."""
    ticks, labels, sizes = [], [], []
    for r in range(layout.num_ranks):
        for tid in [0] + ([OVERLAP_TID] if layout.overlap else []) + layout.lanes:
            y, h = layout.row(r, tid)
            ticks.append(y + h / 2)
            labels.append(trace.rank_names.get(r, f"rank {r}") if tid == 0 else lane_name(tid))
            sizes.append(9 if tid == 0 else 6)
    ax.set_yticks(ticks)
    ax.set_yticklabels(labels)
    for label, size in zip(ax.get_yticklabels(), sizes):
        label.set_fontsize(size)
    ax.tick_params(axis="y", length=0)
    ax.set_ylim(layout.height - RANK_GAP / 2, -RANK_GAP / 2)


def main():
    from matplotlib.patches import Patch

    args = parse_args()
    labels = args.labels.split(",") if args.labels else None
    if labels is not None and len(labels) != len(args.traces):
        raise common.InputError(f"--labels has {len(labels)} name(s) for {len(args.traces)} "
                                f"trace(s)")
    traces = [common.load_trace(p) for p in args.traces]
    steps = [common.step_actions(t, args.step) for t in traces]
    spans = [max(a.end_us for a in s) - min(a.start_us for a in s) for s in steps]
    divisor, unit = common.time_unit(max(spans))
    heights = [Layout(t, s).height for t, s in zip(traces, steps)]
    fig, axes = common.new_figure(
        nrows=len(traces), sharex=True, squeeze=False,
        figsize=(FIG_WIDTH, max(5.5, 1.3 + sum(0.9 + 0.55 * h for h in heights))),
        gridspec_kw={"height_ratios": [h + 1.0 for h in heights]})
    px_per_unit = FIG_WIDTH * 0.8 * 72 / (max(spans) / divisor)  # axes: about 80% of the width
    for i, (ax, trace, actions) in enumerate(zip(axes[:, 0], traces, steps)):
        name = f"{labels[i]}: " if labels else ""  # describe() already names the source
        count = common.step_count(trace)
        which = f", step {args.step % count + 1} of {count}" if count > 1 else ""
        draw_trace(ax, trace, actions, f"{name}{trace.describe()}{which}; "
                   f"step time {spans[i] / divisor:.4g} {unit}", divisor, px_per_unit)
    axes[-1, 0].set_xlim(0, max(spans) / divisor * 1.01)
    axes[-1, 0].set_xlabel(f"time since the step began ({unit})")
    present = {style_key(a.kind) for s in steps for a in s}
    handles = [Patch(facecolor=color, label=text) for k, (color, text) in KIND_STYLE.items()
               if k in present]
    fig.suptitle("Pipeline timeline of one step (rows: ranks; thin bars: communication lanes)",
                 fontsize=12)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), frameon=False)
    common.save_figure(fig, args.out)


if __name__ == "__main__":
    common.run_main(PROG, main)
