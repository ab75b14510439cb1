#!/usr/bin/python3
"""Heat maps of a sweep over micro-batches M (x) and stages K (y) for one schedule.

Reads a `gpipe-sim sweep --out` CSV and draws throughput, bubble fraction and
peak memory (or one of them, --metric) for one schedule and recompute policy.
Skipped configurations are grey and hatched; configurations that do not fit
the device's memory (fits = 0) are cross-hatched with a heavy border, so the
best cell that actually fits stands out. Colours run bright for better values.
"""

import numpy as np

import common

PROG = "sweep_heatmap.py"
ANNOTATE_MAX = 12  # write values in cells when the grid is at most this wide and tall

# name -> (CSV column, title, colour map: brighter is better)
METRICS = {
    "throughput": ("throughput_samples_per_s", "throughput (samples/s)", "viridis"),
    "bubble": ("bubble_fraction", "bubble fraction", "viridis_r"),
    "memory": ("peak_memory_bytes", "peak memory per rank", "viridis_r"),
}


def parse_args():
    parser = common.make_parser(PROG, __doc__.split("\n")[0])
    parser.add_argument("sweep", metavar="SWEEP.csv", help="CSV written by gpipe-sim sweep --out")
    parser.add_argument("--out", required=True, metavar="PNG", help="image to write")
    parser.add_argument("--metric", choices=sorted(METRICS),
                        help="draw only this metric (default: all three side by side)")
    parser.add_argument("--schedule", help="schedule to plot (default: the first in the file)")
    parser.add_argument("--recompute", default="never",
                        help="recompute policy to plot (default: never)")
    return parser.parse_args()


class Grid:
    """The rows of one schedule/recompute laid out as K (rows) x M (columns)."""

    def __init__(self, rows):
        self.ks = sorted({r.stages for r in rows})
        self.ms = sorted({r.microbatches for r in rows})
        self.cells = {(self.ks.index(r.stages), self.ms.index(r.microbatches)): r for r in rows}

    def values(self, column, scale=1.0):
        """K x M array of the column over ok rows; NaN where skipped or absent."""
        out = np.full((len(self.ks), len(self.ms)), np.nan)
        for (i, j), r in self.cells.items():
            if r.status == "ok":
                out[i, j] = r.metrics[column] / scale
        return out

    def where(self, predicate):
        return [ij for ij, r in self.cells.items() if predicate(r)]


def memory_unit(values):
    return (1e9, "GB") if np.nanmax(values) >= 1e9 else (1e6, "MB")


def cell_text(metric, value):
    if metric == "bubble":
        return f"{value:.2f}"
    if metric == "throughput" and value >= 1e3:
        return f"{value / 1e3:.0f}k" if value >= 1e4 else f"{value / 1e3:.1f}k"
    return f"{value:.3g}"


def draw_metric(fig, ax, grid, metric):
    from matplotlib.patches import Rectangle
    import matplotlib

    column, title, cmap_name = METRICS[metric]
    values = grid.values(column)
    scale, unit = (1.0, "")
    if metric == "memory":
        scale, unit = memory_unit(values)
        values = values / scale
    cmap = matplotlib.colormaps[cmap_name].copy()
    cmap.set_bad((1, 1, 1, 0))
    image = ax.imshow(np.ma.masked_invalid(values), origin="lower", aspect="auto", cmap=cmap)
    bar = fig.colorbar(image, ax=ax, fraction=0.06, pad=0.03)
    bar.set_label(f"{title}{f' ({unit})' if unit else ''}; brighter is better")
    annotate = len(grid.ks) <= ANNOTATE_MAX and len(grid.ms) <= ANNOTATE_MAX
    size = 8 if max(len(grid.ks), len(grid.ms)) <= 6 else 6.5

    for i, j in grid.where(lambda r: r.status == "skipped"):
        ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, facecolor="#c8c8c8", edgecolor="#7a7a7a",
                               hatch="///", lw=0))
        if annotate:
            ax.text(j, i, "skip", ha="center", va="center", fontsize=size, color="black")
    for i, j in grid.where(lambda r: r.status == "ok"):
        rgba = image.to_rgba(values[i, j])
        fits = grid.cells[(i, j)].fits
        if fits is False and annotate:
            ax.add_patch(Rectangle((j - 0.45, i - 0.45), 0.9, 0.9, fill=False, hatch="xx",
                                   edgecolor=common.contrast(rgba), lw=2.0, alpha=0.9))
        elif fits is False:  # small cells: a heavy border and dense hatch would swamp them
            ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="x",
                                   edgecolor=common.contrast(rgba), lw=0, alpha=0.8))
        if annotate:
            # A value in a cross-hatched cell sits on a patch of the cell's colour to stay legible.
            backing = dict(boxstyle="round,pad=0.15", fc=rgba, ec="none")
            ax.text(j, i, cell_text(metric, values[i, j]), ha="center", va="center",
                    fontsize=size, color=common.contrast(rgba),
                    fontweight="bold" if fits is False else "normal",
                    bbox=backing if fits is False else None)

    ax.set_xticks(range(len(grid.ms)))
    ax.set_xticklabels([str(m) for m in grid.ms])
    ax.set_yticks(range(len(grid.ks)))
    ax.set_yticklabels([str(k) for k in grid.ks])
    ax.set_xlim(-0.5, len(grid.ms) - 0.5)
    ax.set_ylim(-0.5, len(grid.ks) - 0.5)
    ax.set_xlabel("micro-batches M")
    ax.set_ylabel("stages K")
    ax.set_title(f"{title}{f' ({unit})' if unit else ''}")


def draw(rows, schedule, recompute, path, metrics, out):
    from matplotlib.patches import Patch

    if all(r.status == "skipped" for r in rows):
        raise common.InputError(f"{path}: every row of schedule '{schedule}' and recompute "
                                f"'{recompute}' was skipped; nothing to plot")
    grid = Grid(rows)
    width = 9 if len(metrics) == 1 else 5.6 * len(metrics)
    fig, axes = common.new_figure(ncols=len(metrics), figsize=(width, 5.5), squeeze=False)
    for ax, metric in zip(axes[0], metrics):
        draw_metric(fig, ax, grid, metric)
    batches = sorted({r.batch for r in rows})
    batch = f", batch {batches[0]}" if len(batches) == 1 else ""
    fig.suptitle(f"Sweep over stages K \u00d7 micro-batches M: {schedule}, "
                 f"recompute {recompute}{batch}", fontsize=12)
    legend = [Patch(facecolor="#c8c8c8", edgecolor="#7a7a7a", hatch="///",
                    label="skipped configuration"),
              Patch(facecolor="white", edgecolor="black", hatch="xx", lw=2.0,
                    label="does not fit device memory (fits = 0)")]
    fig.legend(handles=legend, loc="lower center", ncol=2, frameon=False)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    common.save_figure(fig, out)


def main():
    args = parse_args()
    rows = common.load_sweep(args.sweep)
    schedule, chosen = common.select_rows(rows, args.sweep, args.schedule, args.recompute)
    metrics = [args.metric] if args.metric else ["throughput", "bubble", "memory"]
    draw(chosen, schedule, args.recompute, args.sweep, metrics, args.out)


if __name__ == "__main__":
    common.run_main(PROG, main)
