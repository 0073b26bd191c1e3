#!/usr/bin/env python3
"""Plot the hot-key CSVs that `zebra` writes, as PNG.

  plot-hotkeys.py cdf --out fig4.png oa.csv:OA se.csv:SE
      cumulative share of updates against the share of keys in the top k
      (the paper's Figure 4), from `zebra profile --cdf FILE.csv`; with
      --keys N the x axis is k / N (N the job's parameter count)
  plot-hotkeys.py precision --out fig9.png oa.csv:OA se.csv:SE
      precision and Kendall tau distance against the sampling rate
      (the paper's Figure 9), from `zebra precision --csv FILE.csv`

Each input is FILE.csv or FILE.csv:LABEL (default label: the file name).
Needs matplotlib (`pip install matplotlib` if missing).
"""

import argparse
import csv
import os
import sys


def load(spec):
    path, _, label = spec.partition(":")
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"plot-hotkeys: {path}: no rows")
    return label or os.path.basename(path), rows


def plot_cdf(ax, inputs, keys):
    for label, rows in inputs:
        if keys:
            x = [int(r["k"]) * 100 / keys for r in rows]
        else:
            x = [float(r["key_share"]) * 100 for r in rows]
        y = [float(r["update_share"]) * 100 for r in rows]
        ax.plot(x, y, label=label)
    ax.set_xscale("log")
    ax.set_xlabel("top k keys (% of " + (f"{keys} keys)" if keys else "the keys pushed)"))
    ax.set_ylabel("share of updates (%)")
    ax.set_ylim(0, 100)
    ax.grid(True, which="both", alpha=0.3)


def plot_precision(ax, inputs):
    tau_ax = ax.twinx()
    for i, (label, rows) in enumerate(inputs):
        color = f"C{i}"
        x = [float(r["rate_percent"]) for r in rows]
        ax.plot(x, [float(r["precision_mean"]) * 100 for r in rows], "o-",
                color=color, label=f"{label} precision")
        tau_ax.plot(x, [float(r["tau_mean"]) for r in rows], "s--",
                    color=color, label=f"{label} Kendall tau")
    ax.set_xlabel("sampling rate (% of the records)")
    ax.set_ylabel("precision (%)")
    ax.set_ylim(0, 100)
    tau_ax.set_ylabel("Kendall tau distance")
    tau_ax.set_ylim(0, 1)
    ax.grid(True, alpha=0.3)
    lines = ax.get_legend_handles_labels()
    more = tau_ax.get_legend_handles_labels()
    ax.legend(lines[0] + more[0], lines[1] + more[1], loc="center right")


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kind", choices=["cdf", "precision"])
    p.add_argument("inputs", nargs="+", metavar="FILE.csv[:LABEL]")
    p.add_argument("--out", required=True, help="PNG file to write")
    p.add_argument("--title", default=None)
    p.add_argument("--keys", type=int, default=None,
                   help="cdf: x is k over this many keys (the model's or the job's "
                        "parameter count) instead of over the keys pushed")
    a = p.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot-hotkeys: needs matplotlib (pip install matplotlib)")
    inputs = [load(s) for s in a.inputs]
    fig, ax = plt.subplots(figsize=(6, 4))
    if a.kind == "cdf":
        plot_cdf(ax, inputs, a.keys)
        ax.legend()
    else:
        plot_precision(ax, inputs)
    if a.title:
        ax.set_title(a.title)
    fig.tight_layout()
    fig.savefig(a.out, dpi=120)
    print(f"plot-hotkeys: wrote {a.out}")


if __name__ == "__main__":
    main()
