#!/usr/bin/env python3
"""Writes a VRT that repeats a DEM nx x ny times (default: the sierra mosaic 3 x 7 = 32403 x
33607 samples), to check that hfpack packs a >32k x 32k input in bounded memory.

usage: bench/big_vrt.py OUT.vrt [SOURCE.vrt] [--nx 3] [--ny 7]
The source's size is read with gdalinfo -json; the output references it, nothing is copied.
"""
import argparse
import json
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("source", nargs="?", default="../shared/data/dem/srtm3-sierra/sierra.vrt")
    ap.add_argument("--nx", type=int, default=3)
    ap.add_argument("--ny", type=int, default=7)
    a = ap.parse_args()
    try:
        info = json.loads(subprocess.run(["gdalinfo", "-json", a.source], check=True,
                                         capture_output=True, text=True).stdout)
    except (OSError, subprocess.CalledProcessError, ValueError) as e:
        sys.exit(f"Error: cannot read {a.source}: {e}")
    w, h = info["size"]
    band = info["bands"][0]
    sources = []
    for j in range(a.ny):
        for i in range(a.nx):
            sources.append(
                f'    <SimpleSource><SourceFilename relativeToVRT="0">{a.source}</SourceFilename>'
                f'<SourceBand>1</SourceBand><SrcRect xOff="0" yOff="0" xSize="{w}" ySize="{h}"/>'
                f'<DstRect xOff="{i * w}" yOff="{j * h}" xSize="{w}" ySize="{h}"/></SimpleSource>')
    nodata = f"    <NoDataValue>{band['noDataValue']}</NoDataValue>\n" if "noDataValue" in band else ""
    gt = ", ".join(str(v) for v in info.get("geoTransform", [0, 1, 0, 0, 0, -1]))
    with open(a.out, "w") as f:
        f.write(f'<VRTDataset rasterXSize="{w * a.nx}" rasterYSize="{h * a.ny}">\n'
                f'  <GeoTransform>{gt}</GeoTransform>\n'
                f'  <VRTRasterBand dataType="{band["type"]}" band="1">\n{nodata}'
                + "\n".join(sources) + "\n  </VRTRasterBand>\n</VRTDataset>\n")
    print(f"{a.out}: {w * a.nx} x {h * a.ny} samples")


if __name__ == "__main__":
    main()
