"""What ASTRA's samples take from ASTRA itself, rebuilt without it, for the ported samples beside this file:
astra.create_vol_geom and astra.create_proj_geom make the same dicts as ASTRA's python/astra/creators.py (only the
forms the samples use: the 3-D ones and 2-D 'parallel'), which glrecon.from_astra reads; save_image stands in for
matplotlib's imshow. A sample imports it as ASTRA's samples import astra.
"""
import argparse

import glrecon


def arguments(doc, size=32, iterations=None, output=False):
    """The samples' command line: --size N (voxels a side), --iterations where the sample iterates, --backend, and
    --output where the sample shows pictures."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=size, help=f"voxels a side (default {size})")
    if iterations is not None:
        parser.add_argument("--iterations", type=int, default=iterations, help=f"iterations (default {iterations})")
    # glrecon's projector backends: every call of a sample (project, fdk, the iterative methods) runs on the one named.
    parser.add_argument("--backend", default="cpu", choices=glrecon.projectors(), help="glrecon backend (default cpu)")
    if output:
        parser.add_argument("--output", help="a folder for the sample's pictures (where matplotlib is installed)")
    args = parser.parse_args()
    if args.size < 8 or args.size % 8:
        parser.error(f"--size: expected a multiple of 8, at least 8, found {args.size}")
    return args


def create_vol_geom(rows, cols, slices=None, *window):
    """astra.create_vol_geom(rows, cols, slices[, min_x, max_x, min_y, max_y, min_z, max_z]): rows along y, columns
    along x, slices along z; the window centred, one unit per voxel, where none is given. Without slices: ASTRA's 2-D
    create_vol_geom(rows, cols)."""
    if slices is None:
        return {"GridRowCount": rows, "GridColCount": cols,
                "option": {"WindowMinX": -cols / 2, "WindowMaxX": cols / 2, "WindowMinY": -rows / 2, "WindowMaxY": rows / 2}}
    if window and len(window) != 6:
        raise TypeError("create_vol_geom: expected rows, cols, slices and no window or all six of its bounds")
    x0, x1, y0, y1, z0, z1 = window or (-cols / 2, cols / 2, -rows / 2, rows / 2, -slices / 2, slices / 2)
    return {"GridRowCount": rows, "GridColCount": cols, "GridSliceCount": slices,
            "option": {"WindowMinX": x0, "WindowMaxX": x1, "WindowMinY": y0, "WindowMaxY": y1, "WindowMinZ": z0, "WindowMaxZ": z1}}


def create_proj_geom(kind, *args):
    """astra.create_proj_geom for the 3-D types: 'parallel3d' (spacing x, spacing y, rows, cols, angles), 'cone' (the
    same, distance origin-source, distance origin-detector), 'cone_vec' and 'parallel3d_vec' (rows, cols, vectors)."""
    if kind == "parallel3d":
        return {"type": kind, "DetectorSpacingX": args[0], "DetectorSpacingY": args[1], "DetectorRowCount": args[2],
                "DetectorColCount": args[3], "ProjectionAngles": args[4]}
    if kind == "cone":
        return {"type": kind, "DetectorSpacingX": args[0], "DetectorSpacingY": args[1], "DetectorRowCount": args[2],
                "DetectorColCount": args[3], "ProjectionAngles": args[4], "DistanceOriginSource": args[5],
                "DistanceOriginDetector": args[6]}
    if kind in ("cone_vec", "parallel3d_vec"):
        return {"type": kind, "DetectorRowCount": args[0], "DetectorColCount": args[1], "Vectors": args[2]}
    if kind == "parallel":  # 2-D: detector width, detector count, angles
        return {"type": kind, "DetectorWidth": args[0], "DetectorCount": args[1], "ProjectionAngles": args[2]}
    raise ValueError(f"create_proj_geom: expected parallel3d, cone, cone_vec, parallel3d_vec or (2-D) parallel, found {kind!r}")


def save_image(output, name, image):
    """plt.imshow(image)'s stand-in (plt.gray()): the 2-D array as OUTPUT/NAME.png; nothing where no --output is given or
    matplotlib is missing (the samples run headless)."""
    if output is None:
        return
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    plt.imsave(f"{output}/{name}.png", image, cmap="gray")
