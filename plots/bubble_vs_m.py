#!/usr/bin/python3
"""Bubble fraction against the number of micro-batches M, one line per stage count K.

Reads a `gpipe-sim sweep --out` CSV. Markers joined by solid lines are the
simulated bubble fraction; the dashed curve of the same colour is GPipe's
closed form (K-1)/(M+K-1), so where the simulator departs from the paper's
idealised schedule (communication, optimizer step, unequal stages) shows as the
gap between the two.
"""

import numpy as np

import common

PROG = "bubble_vs_m.py"


def parse_args():
    parser = common.make_parser(PROG, __doc__.split("\n")[0])
    parser.add_argument("sweep", metavar="SWEEP.csv", help="CSV written by gpipe-sim sweep --out")
    parser.add_argument("--out", required=True, metavar="PNG", help="image to write")
    parser.add_argument("--schedule", help="schedule to plot (default: the first in the file)")
    parser.add_argument("--recompute", default="never",
                        help="recompute policy to plot (default: never)")
    return parser.parse_args()


def series_by_stages(rows):
    """{K: (sorted M array, bubble fraction array)} over the ok rows; skipped rows drop out."""
    series = {}
    for r in rows:
        if r.status == "ok":
            series.setdefault(r.stages, []).append((r.microbatches, r.metrics["bubble_fraction"]))
    return {k: tuple(np.array(v) for v in zip(*sorted(points)))
            for k, points in sorted(series.items())}


def tick_values(ms):
    """Every M when few; else powers of two, plus the ends where they do not crowd one."""
    if len(ms) <= 10:
        return ms
    ticks = [2 ** e for e in range(int(np.log2(ms[-1])) + 1) if ms[0] <= 2 ** e]
    for end in (ms[0], ms[-1]):
        if all(abs(np.log2(end) - np.log2(t)) >= 0.5 for t in ticks):
            ticks.append(end)
    return sorted(ticks)


def draw(rows, schedule, recompute, path, out):
    series = series_by_stages(rows)
    if not series:
        raise common.InputError(f"{path}: every row of schedule '{schedule}' and recompute "
                                f"'{recompute}' was skipped; nothing to plot")
    fig, ax = common.new_figure(figsize=(9, 5.5))
    all_m = sorted({m for ms, _ in series.values() for m in ms})
    dense_m = np.geomspace(all_m[0], all_m[-1], 200) if len(all_m) > 1 else np.array(all_m, float)
    markers = "osD^vP*"  # 7 markers against 8 colours: no two of 56 lines look alike
    for i, (k, (ms, bubble)) in enumerate(series.items()):
        color = common.PALETTE[i % len(common.PALETTE)]
        ax.plot(ms, bubble, marker=markers[i % len(markers)], color=color, lw=1.6,
                label=f"K = {k}")
        ax.plot(dense_m, common.analytic_bubble(k, dense_m), ls="--", lw=1.2, color=color,
                zorder=3)
    ax.plot([], [], ls="--", color="0.4", label="analytic (K\u22121)/(M+K\u22121)")
    ax.set_xscale("log", base=2)
    ticks = tick_values(all_m)
    ax.set_xticks(ticks)
    ax.set_xticklabels([str(m) for m in ticks])
    ax.minorticks_off()
    ax.set_xlabel("micro-batches per mini-batch, M (log\u2082 scale)")
    ax.set_ylabel("bubble fraction (idle share of rank time)")
    ax.set_ylim(-0.02, 1.0)
    ax.grid(True, which="major", alpha=0.3)
    skipped = sum(r.status == "skipped" for r in rows)
    note = f", {skipped} configuration(s) skipped" if skipped else ""
    ax.set_title(f"Pipeline bubble vs micro-batches: {schedule}, recompute {recompute}{note}")
    if len(series) <= 6:
        ax.legend(title="stages (markers: simulated)", loc="upper right")
    else:  # many lines fill the plot: keep the legend beside it
        ax.legend(title="stages (markers:\nsimulated)", loc="upper left",
                  bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.tight_layout()
    common.save_figure(fig, out)


def main():
    args = parse_args()
    rows = common.load_sweep(args.sweep)
    schedule, chosen = common.select_rows(rows, args.sweep, args.schedule, args.recompute)
    draw(chosen, schedule, args.recompute, args.sweep, args.out)


if __name__ == "__main__":
    common.run_main(PROG, main)
