"""Simulate a cone-beam scan of the Shepp-Logan phantom, reconstruct it with every backend this machine runs,
compare them, and plot the central slices.  A notebook in script form: run it, or paste the cells.

    PYTHONPATH=build/python python3 examples/reconstruct_phantom.py [output-dir] [--size N]
"""
# %% Setup: headless plotting (Agg), so it runs on a server or in CI too.
import argparse
import os
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import glrecon  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("output", nargs="?", default="glrecon-example")
parser.add_argument("--size", type=int, default=64, help="volume size in voxels (N^3)")
args = parser.parse_args()
os.makedirs(args.output, exist_ok=True)

# %% The scan: 1000 mm to the isocentre, 1536 mm to the detector, 90 views over a full circle.
n = args.size
voxel = 256.0 / n  # RTK's phantom (scale 128 mm) fits a 256 mm field of view
geo = glrecon.Geometry.circular(projections=90, sid=1000, sdd=1536, detector=(n, n), pixel=(1.536 * voxel,) * 2)
projections = glrecon.phantom.project(geo)  # (views, v, u) line integrals, exact
truth = glrecon.phantom.shepp_logan(size=n, spacing=voxel)  # (z, y, x) ground truth
print(f"{len(geo)} projections of {geo.detector[0]} x {geo.detector[1]} pixels; volume {n}^3 of {voxel:g} mm")

# %% Reconstruct with every backend; a GPU backend without an OpenGL 4.5 device (or CUDA) is skipped, saying why.
volumes, seconds = {}, {}
for backend in glrecon.backends():
    try:
        start = time.perf_counter()
        volumes[backend] = glrecon.fdk(projections, geo, size=n, spacing=voxel, backend=backend,
                                       window="auto" if backend == "cpu" else 8)
        seconds[backend] = time.perf_counter() - start
    except glrecon.Error as e:  # GlError, CudaError, UsageError (a backend not built), ...: every failure of a call
        print(f"{backend:12s} skipped: {str(e).splitlines()[0]}")

# %% Compare: every backend against the CPU reference, and each against the phantom in the central field of view.
reference = volumes["cpu"]
z, y, x = np.mgrid[0:n, 0:n, 0:n]
centre = (x - n / 2 + 0.5) ** 2 + (z - n / 2 + 0.5) ** 2 < (0.4 * n) ** 2  # a cylinder about y, the rotation axis
print(f"{'backend':12s} {'seconds':>8s} {'max |v - cpu|':>14s} {'RMSE vs phantom':>16s}")
for backend, vol in volumes.items():
    diff = float(np.abs(vol - reference).max())
    rmse = float(np.sqrt(np.mean((vol[centre] - truth[centre]) ** 2)))
    print(f"{backend:12s} {seconds[backend]:8.2f} {diff:14.3g} {rmse:16.4f}")

# %% Plot: axial (x-z plane at the centre of y), coronal and sagittal slices of each backend and the phantom.
rows = list(volumes.items()) + [("phantom", truth)]
fig, axes = plt.subplots(len(rows), 3, figsize=(7.5, 2.5 * len(rows)), squeeze=False)
for r, (name, vol) in enumerate(rows):
    for c, (title, image) in enumerate([("axial", vol[:, n // 2, :]), ("coronal", vol[n // 2, :, :]), ("sagittal", vol[:, :, n // 2])]):
        axes[r][c].imshow(image, cmap="gray", vmin=0.95, vmax=1.1, origin="lower")
        axes[r][c].set_title(f"{name} {title}", fontsize=8)
        axes[r][c].axis("off")
fig.tight_layout()
path = os.path.join(args.output, "slices.png")
fig.savefig(path, dpi=80)
glrecon.write_image(os.path.join(args.output, "volume.tif"), reference, overwrite=True)  # opens in Fiji, in mm
print(f"wrote {path} and {os.path.join(args.output, 'volume.tif')}")
