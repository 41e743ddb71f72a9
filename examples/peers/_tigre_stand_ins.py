"""What TIGRE's demos take from TIGRE itself, rebuilt without it, for the ported demos beside this file:
tigre.geometry_default(high_resolution=False) scaled to N voxels, sample_loader.load_head_phantom (glrecon's Shepp-Logan
stands in: the head is TIGRE's data) and CTnoise.add. A demo imports it as TIGRE's demos import tigre.utilities.
"""
import argparse
import types

import numpy as np

import glrecon


def arguments(doc, size=32, niter=None, niter_help=""):
    """The demos' command line: --size N (voxels a side), --niter where the demo iterates, --backend, --output."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=size,
                        help=f"voxels a side (default {size}; TIGRE's geometry_default(high_resolution=False) is 64)")
    if niter is not None:
        parser.add_argument("--niter", type=int, default=niter, help=niter_help)
    # glrecon's projector backends: every call of a demo (project, fdk, the iterative methods) runs on the one named.
    parser.add_argument("--backend", default="cpu", choices=glrecon.projectors(), help="glrecon backend (default cpu)")
    parser.add_argument("--output", help="a folder for the demo's pictures (where matplotlib is installed)")
    args = parser.parse_args()
    if args.size < 4 or args.size % 2:
        parser.error(f"--size: expected an even number of voxels, at least 4, found {args.size}")
    return args


def geometry_default(n):
    """tigre.geometry_default(high_resolution=False) at n voxels a side: the same 256 mm volume and a detector of
    2 n pixels over the same 409.6 mm (TIGRE's 64 voxels and 128 pixels of 3.2 mm at n = 64)."""
    geo = types.SimpleNamespace(DSD=1536.0, DSO=1000.0, nDetector=np.array((2 * n, 2 * n)),
                                dDetector=np.array((0.8, 0.8)) * 4 * 64 / n, nVoxel=np.array((n, n, n)),
                                sVoxel=np.array((256, 256, 256)), offOrigin=np.array((0, 0, 0)), offDetector=np.array((0, 0)),
                                rotDetector=np.array((0, 0, 0)), accuracy=0.5, mode="cone")
    geo.sDetector = geo.nDetector * geo.dDetector
    geo.dVoxel = geo.sVoxel / geo.nVoxel
    return geo


def load_head_phantom(n_voxel):
    """sample_loader.load_head_phantom(geo.nVoxel)'s stand-in: glrecon's Shepp-Logan over TIGRE's 256 mm, in TIGRE's
    (z, y, x) order (the head is TIGRE's data, not glrecon's)."""
    n = int(n_voxel[0])
    return glrecon.to_tigre_order(glrecon.phantom.shepp_logan(size=n, spacing=256.0 / n), "volume")


def ctnoise_add(projections, Poisson=1e5, Gaussian=np.array([0, 10]), seed=0):
    """CTnoise.add(projections, Poisson=..., Gaussian=...): the line integrals as counts Poisson exp(-p / max p), with
    Poisson noise and Gaussian (mean, std) electronic noise, back to line integrals times max p. TIGRE draws unseeded;
    here a seed makes the tests repeatable. Counts below 1 are clipped (TIGRE's log would give inf there; at 1e5 photons
    the fewest counts are 1e5 / e, so this never happens at the demos' settings)."""
    rng = np.random.default_rng(seed)
    max_proj = float(np.max(projections))
    counts = rng.poisson(Poisson * np.exp(-np.asarray(projections, np.float64) / max_proj)) + rng.normal(Gaussian[0], Gaussian[1],
                                                                                                           np.shape(projections))
    return np.float32(-np.log(np.clip(counts, 1, None) / Poisson) * max_proj)


def correlation(a, b):
    return float(np.corrcoef(np.ravel(a), np.ravel(b))[0, 1])


def save_slices(output, name, images):
    """tigre.plotimg(np.concatenate(images, axis=1), dim="z")'s stand-in: the central z slice of each, side by side, as
    OUTPUT/NAME.png; nothing where no --output is given or matplotlib is missing (the demos run headless)."""
    if output is None:
        return
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    plt.imsave(f"{output}/{name}.png", np.concatenate([np.asarray(i)[len(i) // 2] for i in images], axis=1), cmap="gray")
