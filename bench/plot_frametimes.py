#!/usr/bin/env python3
"""bench/plot_frametimes.py - the frame-time plot of a flythrough report (hfbench flythrough
calls it; issue 15: matplotlib instead of a hand-written PNG plotter).

usage: plot_frametimes.py --out PNG [--title T] LABEL=RUN.csv...

Each RUN.csv is a flythrough CSV (hfr::writeFlythroughCsv: a `phase` column, fill or flight,
and `frame_ms`); the flight's frames are drawn as one line per run, x = the frame within the
flight. The y axis runs from 0 to the largest run's 99.9th percentile (rounded up), so one stall
of 500 ms does not squash a thousand 16 ms frames into the bottom row; frames above it are drawn
on the top edge and counted in a note. Exit status 0 and the PNG, or 1 and one "Error:" line.
"""
import argparse
import csv
import math
import sys


def flight_ms(path):
    with open(path, newline="") as f:
        rows = csv.DictReader(f)
        if rows.fieldnames is None or "frame_ms" not in rows.fieldnames or "phase" not in rows.fieldnames:
            raise ValueError(f"{path} is not a flythrough CSV (no phase / frame_ms columns)")
        out = []
        for r in rows:
            if r["phase"] != "flight":
                continue
            try:
                v = float(r["frame_ms"])
            except ValueError:
                v = math.nan
            out.append(v if math.isfinite(v) else math.nan)
        return out


def nice_ceiling(v):
    """v rounded up to a round number (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8 times a power of ten)."""
    if not v > 0:
        return 1.0
    p = 10 ** math.floor(math.log10(v))
    for m in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if v <= m * p * (1 + 1e-12):
            return m * p
    return 10 * p


def percentile(values, q):
    s = sorted(v for v in values if not math.isnan(v))
    if not s:
        return math.nan
    return s[min(len(s) - 1, int(math.ceil(q * len(s))) - 1)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--title", default="frame time")
    ap.add_argument("runs", nargs="+", help="LABEL=RUN.csv")
    a = ap.parse_args()
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("Error: python3-matplotlib is not installed (scripts/hf deps installs it)", file=sys.stderr)
        return 1
    series = []
    for spec in a.runs:
        label, sep, path = spec.partition("=")
        if not sep or not path:
            print(f"Error: '{spec}' is not LABEL=RUN.csv", file=sys.stderr)
            return 1
        try:
            series.append((label, flight_ms(path)))
        except (OSError, ValueError, csv.Error) as e:
            print(f"Error: {e}", file=sys.stderr)
            return 1
    tops = [percentile(ys, 0.999) for _, ys in series]
    tops = [t for t in tops if not math.isnan(t)]
    if not tops:
        print("Error: no flight frames to plot", file=sys.stderr)
        return 1
    top = nice_ceiling(max(tops) * 1.05)
    above = sum(1 for _, ys in series for v in ys if v > top)
    fig, ax = plt.subplots(figsize=(12, 6), dpi=100)
    for label, ys in series:
        ax.plot(range(len(ys)), [min(v, top) for v in ys], linewidth=1.2, label=label)
    ax.set_ylim(0, top)
    ax.set_xlim(0, max(1, max(len(ys) for _, ys in series) - 1))
    ax.set_xlabel("frame")
    ax.set_ylabel("frame time (ms)")
    title = a.title + (f"\n{above} frame{'s' if above != 1 else ''} above {top:g} ms drawn at the top" if above else "")
    ax.set_title(title)
    ax.grid(True, color="#dddddd")
    ax.legend(loc="upper right")
    fig.tight_layout()
    try:
        fig.savefig(a.out)
    except OSError as e:
        print(f"Error: cannot write {a.out}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
