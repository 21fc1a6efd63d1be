#!/usr/bin/env python3
"""Turns `hfbench codec --json` output into the Markdown tables kept in bench/results/.

usage: bench/codec_report.py RESULT.json [--title TEXT] [--command TEXT] [--commit SHA]
Prints Markdown: one row per input (ratios and single-thread decode speeds, each measured
side by side in the same run), the geometric means, and the GPU figures when present.
"""
import argparse
import json
import math
import sys


def geomean(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("json")
    ap.add_argument("--title", default="hfbench codec")
    ap.add_argument("--command", default="")
    ap.add_argument("--commit", default="")
    a = ap.parse_args()
    try:
        with open(a.json) as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"Error: cannot read {a.json}: {e}")
    host = d.get("host", {})
    out = [f"## {a.title}", ""]
    if a.commit:
        out.append(f"- commit: `{a.commit}`")
    out.append(f"- host: {host.get('cpu', '?')}, {host.get('threads', '?')} threads; "
               f"zstd {host.get('zstd', '?')}, LERC {host.get('lerc', '?')}")
    if a.command:
        out.append(f"- command: `{a.command}`")
    out.append("")
    out.append("| input | size | hfpac | +rbuc | zstd-19 | LERC | hfpac / zstd | +rbuc / zstd "
               "| decode Mpt/s | / LERC | / zstd | lossless |")
    out.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    ratios, rratios, vs_lerc, vs_zstd = [], [], [], []
    gpu_rows = []
    for i in d.get("inputs", []):
        name = i["input"].split("/")[-1]
        if "ratio" not in i:
            out.append(f"| {name} | error: {i.get('error', '?')} |" + " |" * 10)
            continue
        z, l = i["anchors"]["zstd"], i["anchors"]["lerc"]
        rb = i.get("hfpac_rbuc", {})
        rr = rb.get("ratio")
        ratios.append(i["ratio_vs_zstd"])
        vs_lerc.append(i["decode_vs_lerc"])
        vs_zstd.append(i["decode_vs_zstd"])
        if rr:
            rratios.append(rr / z["ratio"])
        out.append(
            f"| {name} | {i['width']}x{i['height']} | {i['ratio']:.2f} | "
            f"{rr:.2f} | " if rr else f"| {name} | {i['width']}x{i['height']} | {i['ratio']:.2f} | - | ")
        out[-1] += (f"{z['ratio']:.2f} | {l['ratio']:.2f} | {i['ratio_vs_zstd']:.2f} | "
                    f"{(rr / z['ratio']) if rr else float('nan'):.2f} | "
                    f"{i['decode_pts_per_s'] / 1e6:.0f} | {i['decode_vs_lerc']:.2f} | "
                    f"{i['decode_vs_zstd']:.2f} | {'yes' if i['lossless'] else 'NO'} |")
        if "gpu_decode_pts_per_s" in i:
            gpu_rows.append((name, i))
    out.append(f"| **geomean** | | | | | | **{geomean(ratios):.3f}** | **{geomean(rratios):.3f}** "
               f"| | **{geomean(vs_lerc):.2f}** | **{geomean(vs_zstd):.2f}** | |")
    if gpu_rows:
        out += ["", "GPU (CUDA events; batches replicated to >= 64 M points):", "",
                "| input | decode G pt/s | L1 G pt/s | surface / linear | 16 x 129^2 decode us "
                "| roofline fraction | encode auto G pt/s | encode fixed-b G pt/s | encode identical |",
                "|---|---|---|---|---|---|---|---|---|"]
        for name, i in gpu_rows:
            def g(key, scale=1e9, fmt="{:.1f}"):
                v = i.get(key)
                return fmt.format(v / scale) if isinstance(v, (int, float)) else "-"
            out.append(f"| {name} | {g('gpu_decode_pts_per_s')} | {g('gpu_decode_l1_pts_per_s')} | "
                       f"{g('gpu_surface_vs_linear', 1, '{:.2f}')} | {g('gpu_decode_16_us', 1)} | "
                       f"{g('gpu_roofline_fraction', 1, '{:.3f}')} | {g('gpu_encode_pts_per_s')} | "
                       f"{g('gpu_encode_fixed_b_pts_per_s')} | {i.get('gpu_encode_identical', '-')} |")
    print("\n".join(out))


if __name__ == "__main__":
    main()
