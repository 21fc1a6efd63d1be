#!/usr/bin/env python3
"""bench/compression_report.py - merges `hfbench flythrough --json` files (bench/compression.sh)
into one results file (bench/results/compression/<device>.json: device, commit, command, runs)
and a Markdown table per DEM and I/O condition with issue 13's ratios and target verdicts.

usage: compression_report.py [--note TEXT] [--commit C] [--command TEXT] -o RESULTS.json
                             [--table TABLE.md] RUN.json...
"""
import argparse
import json
import sys


def load(paths):
    runs, device, commands = [], None, []
    for p in paths:
        try:
            with open(p) as f:
                d = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(f"Error: {p}: {e}")
        if d.get("benchmark") != "flythrough" or not isinstance(d.get("runs"), list):
            sys.exit(f"Error: {p}: not an hfbench flythrough --json file")
        device = device or d.get("device")
        commands.append(d.get("command", ""))
        runs.extend(d["runs"])
    return runs, device, commands


def verdict(ok):
    return "met" if ok else "**missed**"


def fmt(v, digits=2):
    return "-" if v is None else f"{v:.{digits}f}"


def table(runs):
    """One block per DEM: a row per (io, strategy) with ratios against raw in the same condition."""
    out = []
    dems = []
    for r in runs:
        if r["dem"] not in dems:
            dems.append(r["dem"])
    for dem in dems:
        rs = [r for r in runs if r["dem"] == dem]
        ios = []
        for r in rs:
            if r["io"] not in ios:
                ios.append(r["io"])
        out.append(f"### {dem}\n")
        out.append("| io | run | ratio | first view ms | / raw | target (1.2 / ratio) | fill ms | / raw | "
                   "missing tiles / frame | h2d / payload | render p99 ms | median frame ms | max after first ms | "
                   "triangles / pixel |")
        out.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for io in ios:
            cond = [r for r in rs if r["io"] == io]
            raw = next((r for r in cond if r["strategy"] == "raw"), None)
            for r in cond:
                fv = r["first_view_ms"] / raw["first_view_ms"] if raw and raw["first_view_ms"] > 0 else None
                fl = r["fill_ms"] / raw["fill_ms"] if raw and raw["fill_ms"] > 0 else None
                target = 1.2 / r["ratio"] if r["ratio"] > 0 else None
                h2d = r["h2d_bytes"] / r["payload_bytes"] if r["payload_bytes"] > 0 else None
                out.append(f"| {io} | {r['strategy']} | {fmt(r['ratio'])} | {r['first_view_ms']:.1f} | {fmt(fv)} | "
                           f"{fmt(target)} | {r['fill_ms']:.1f} | {fmt(fl)} | {r['missing_tiles_per_frame']:.2f} | "
                           f"{fmt(h2d)} | {r['render_thread_p99_ms']:.3f} | {r['median_frame_ms']:.3f} | "
                           f"{r['max_frame_ms_after_first']:.2f} | {r['triangles_per_pixel']:.2f} |")
        out.append("")
        out.extend(targets(dem, rs, ios))
    return "\n".join(out) + "\n"


def targets(dem, rs, ios):
    """Issue 13's targets for the best cuda run of each condition."""
    lines = [f"| target ({dem}) | measured | |", "|---|---|---|"]
    for io in ios:
        cond = [r for r in rs if r["io"] == io]
        raw = next((r for r in cond if r["strategy"] == "raw"), None)
        cuda = [r for r in cond if r["strategy"].startswith("cuda") and r.get("strategy_run") == "cuda"
                and "imagery" not in r["strategy"]]
        if not raw or not cuda:
            continue
        best = min(cuda, key=lambda r: r["first_view_ms"])
        if io != "warm":
            lim = 1.2 / best["ratio"] * raw["first_view_ms"]
            lines.append(f"| io {io}: {best['strategy']} first complete view <= 1.2 / ratio x raw's | "
                         f"{best['first_view_ms']:.1f} vs {lim:.1f} ms | {verdict(best['first_view_ms'] <= lim)} |")
            lines.append(f"| io {io}: fewer missing tiles per frame than raw | {best['missing_tiles_per_frame']:.2f} "
                         f"vs {raw['missing_tiles_per_frame']:.2f} | "
                         f"{verdict(best['missing_tiles_per_frame'] < raw['missing_tiles_per_frame'] or raw['missing_tiles_per_frame'] == 0 == best['missing_tiles_per_frame'])} |")
        if best["payload_bytes"] > 0:
            q = best["h2d_bytes"] / best["payload_bytes"]
            lines.append(f"| io {io}: host->device <= 1.05x payload | {q:.3f} | {verdict(q <= 1.05)} |")
        lines.append(f"| io {io}: render-thread p99 < 0.5 ms | {best['render_thread_p99_ms']:.3f} ms | "
                     f"{verdict(best['render_thread_p99_ms'] < 0.5)} |")
        lines.append(f"| io {io}: no frame over 8 ms after the first | {best['max_frame_ms_after_first']:.2f} ms | "
                     f"{verdict(best['max_frame_ms_after_first'] <= 8)} |")
        lines.append(f"| io {io}: median frame < 2 ms (triangles / pixel {best['triangles_per_pixel']:.1f}) | "
                     f"{best['median_frame_ms']:.3f} ms | {verdict(best['median_frame_ms'] < 2)} |")
    lines.append("")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--note", default="")
    ap.add_argument("--commit", default="")
    ap.add_argument("--command", default="")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--table")
    ap.add_argument("runs", nargs="+")
    a = ap.parse_args()
    runs, device, commands = load(a.runs)
    result = {"device": device, "commit": a.commit, "command": a.command, "note": a.note,
              "commands": commands, "runs": runs}
    with open(a.output, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    if a.table:
        with open(a.table, "w") as f:
            f.write(table(runs))


if __name__ == "__main__":
    main()
