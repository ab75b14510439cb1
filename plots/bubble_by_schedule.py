#!/usr/bin/python3
"""Bubble fraction against micro-batches M, one line per schedule family, at one K.

Reads a `gpipe-sim sweep --out` CSV of several schedules (`--schedule
gpipe,1f1b,interleaved-1f1b,zb-h1,...`, and `--stages-per-rank` lists). Markers
joined by solid lines are the simulated bubble fraction of each schedule (and
V); the dashed line of the same colour is that family's closed form from its
paper, where it has one (the CSV's bubble_fraction_analytic column: GPipe's
(K-1)/(M+K-1), Megatron's (K-1)/(VM+K-1) for interleaved schedules, the
zero-bubble paper's forms for ZB-H1/H2). So the plot shows which schedule
wins at each M, and how far each is from its paper's idealised figure.
"""

import numpy as np

import common

PROG = "bubble_by_schedule.py"


def parse_args():
    parser = common.make_parser(PROG, __doc__.split("\n")[0])
    parser.add_argument("sweep", metavar="SWEEP.csv", help="CSV written by gpipe-sim sweep --out")
    parser.add_argument("--out", required=True, metavar="PNG", help="image to write")
    parser.add_argument("--stages", type=int,
                        help="K to plot (default: the largest K with a simulated row)")
    parser.add_argument("--recompute", default="never",
                        help="recompute policy to plot (default: never)")
    return parser.parse_args()


def series_by_schedule(rows, stages, recompute):
    """{label: (M array, simulated array, analytic array with nan where none)}, file order."""
    series = {}
    for r in rows:
        if r.status != "ok" or r.stages != stages or r.recompute != recompute:
            continue
        v = r.stages_per_rank
        label = r.schedule if v in (None, 1) else f"{r.schedule}, V = {v}"
        analytic = r.metrics["bubble_fraction_analytic"]
        series.setdefault(label, []).append(
            (r.microbatches, r.metrics["bubble_fraction"], np.nan if analytic is None else analytic))
    out = {}
    for label, points in series.items():
        ms = [p[0] for p in points]
        if len(set(ms)) != len(ms):
            raise common.InputError(f"two rows of '{label}' at K={stages} share an M; "
                                    f"plot one batch at a time")
        out[label] = tuple(np.array(v, dtype=float) for v in zip(*sorted(points)))
    return out


def main():
    args = parse_args()
    rows = common.load_sweep(args.sweep)
    ok = [r for r in rows if r.status == "ok" and r.recompute == args.recompute]
    if not ok:
        raise common.InputError(f"{args.sweep}: no simulated row with recompute '{args.recompute}'")
    stages = args.stages if args.stages is not None else max(r.stages for r in ok)
    series = series_by_schedule(rows, stages, args.recompute)
    if not series:
        have = ", ".join(str(k) for k in sorted({r.stages for r in ok}))
        raise common.InputError(f"{args.sweep}: no simulated row at K={stages} (it has K = {have})")
    fig, ax = common.new_figure(figsize=(9, 5.5))
    markers = "osD^vP*X"
    for i, (label, (ms, simulated, analytic)) in enumerate(series.items()):
        color = common.PALETTE[i % len(common.PALETTE)]
        ax.plot(ms, simulated, marker=markers[i % len(markers)], color=color, lw=1.6, label=label)
        if not np.all(np.isnan(analytic)):
            ax.plot(ms, analytic, ls="--", lw=1.1, color=color, zorder=3)
    ax.plot([], [], ls="--", color="0.4", label="closed form of the family's paper")
    ax.set_xscale("log", base=2)
    all_m = sorted({m for ms, _, _ in series.values() for m in ms})
    ax.set_xticks(all_m if len(all_m) <= 10 else [m for m in all_m if (int(m) & (int(m) - 1)) == 0])
    ax.set_xticklabels([str(int(m)) for m in ax.get_xticks()])
    ax.minorticks_off()
    ax.set_xlabel("micro-batches per mini-batch, M (log\u2082 scale)")
    ax.set_ylabel("bubble fraction (idle share of rank time)")
    ax.set_ylim(-0.02, 1.0)
    ax.grid(True, which="major", alpha=0.3)
    ax.set_title(f"Pipeline bubble by schedule, K = {stages} ranks, recompute {args.recompute}")
    ax.legend(loc="upper right", title="schedule (markers: simulated)")
    fig.tight_layout()
    common.save_figure(fig, args.out)


if __name__ == "__main__":
    common.run_main(PROG, main)
