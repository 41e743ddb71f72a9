"""ASTRA's sample s007 (3-D reconstruction) ported to glrecon: a hollow cube, its parallel-beam projections over
[0, pi) ('parallel3d', create_sino3d_gpu) and 150 iterations of SIRT (SIRT3D_CUDA). Each ASTRA line is the comment above
its glrecon line; nothing but a parameter mapping changes. ASTRA's original:
https://github.com/astra-toolbox/astra-toolbox/blob/master/samples/python/s007_3d_reconstruction.py

ASTRA's data objects are NumPy arrays here (astra.data3d.create an array, astra.data3d.get the array itself, delete
nothing); its algorithm object is a call, glrecon.sirt (SIRT3D_CUDA's defaults, relaxation 1 and no MinConstraint, are
glrecon's lamb 1 and no positivity), in glrecon's orders (from_astra_order/to_astra_order convert ASTRA's). ASTRA's sizes (128 voxels, a
128 x 192 detector, the cube's faces at 17, 33, 97 and 113) are N, N x 3N/2 and those faces scaled by N/128.
ASTRA is not needed: _astra_stand_ins.py builds its dicts.

Run: python3 astra_s007_3d_reconstruction.py [--size N] [--iterations K] [--backend B] [--output DIR]: K iterations of
SIRT (ASTRA's 150); --output saves ASTRA's two pictures (projection 20, slice 65 of the result, scaled by N/128) where
matplotlib is installed. Prints the projections' shape, how far each view's total strays from the cube's mass (parallel
beam: every view integrates the whole cube, so ASTRA's unit pixels sum to its voxel count), and the result's
correlation with the cube (not in ASTRA's sample).
"""
import numpy as np

import glrecon
from _astra_stand_ins import arguments, create_proj_geom, create_vol_geom, save_image

args = arguments(__doc__, size=32, iterations=150, output=True)
n = args.size


def at(index):
    """ASTRA's index at 128 voxels a side, at n."""
    return round(index * n / 128)


# vol_geom = astra.create_vol_geom(128, 128, 128)
vol_geom = create_vol_geom(n, n, n)

# angles = np.linspace(0, np.pi, 180, False)
angles = np.linspace(0, np.pi, 180, False)
# proj_geom = astra.create_proj_geom('parallel3d', 1.0, 1.0, 128, 192, angles)
proj_geom = create_proj_geom("parallel3d", 1.0, 1.0, n, 3 * n // 2, angles)
g = glrecon.from_astra(proj_geom, vol_geom)  # the scan (parallel beam) and the grid (g.grid)

# cube = np.zeros((128, 128, 128))
cube = np.zeros((n, n, n))
# cube[17:113, 17:113, 17:113] = 1
cube[at(17):at(113), at(17):at(113), at(17):at(113)] = 1
# cube[33:97, 33:97, 33:97] = 0
cube[at(33):at(97), at(33):at(97), at(33):at(97)] = 0

# proj_id, proj_data = astra.create_sino3d_gpu(cube, proj_geom, vol_geom)
proj_data = glrecon.to_astra_order(glrecon.project(glrecon.from_astra_order(cube, "volume"), g, backend=args.backend),
                                   "projections")  # ASTRA's (rows, angles, cols)

# plt.imshow(proj_data[:, 20, :])
save_image(args.output, "projection_20", proj_data[:, 20, :])

# rec_id = astra.data3d.create('-vol', vol_geom)
# cfg = astra.astra_dict('SIRT3D_CUDA'); cfg['ReconstructionDataId'] = rec_id; cfg['ProjectionDataId'] = proj_id
# alg_id = astra.algorithm.create(cfg)
# astra.algorithm.run(alg_id, 150)
# rec = astra.data3d.get(rec_id)
rec = glrecon.to_astra_order(glrecon.sirt(glrecon.from_astra_order(proj_data, "projections"), g, iterations=args.iterations,
                                          backend=args.backend), "volume")

# plt.figure(); plt.imshow(rec[:, :, 65])
save_image(args.output, "reconstruction_65", rec[:, :, at(65)])
# astra.algorithm.delete(alg_id); astra.data3d.delete(rec_id); astra.data3d.delete(proj_id)   (NumPy frees them)

# The checks (not in ASTRA's sample).
print(f"projections: ASTRA's (rows, angles, cols) {proj_data.shape}")
mass = cube.sum()  # unit voxels
totals = proj_data.sum(axis=(0, 2))  # one per view, unit pixels
print(f"view totals against the cube's mass {mass:g}: largest relative difference {np.abs(totals - mass).max() / mass:.3g}")
print(f"sirt correlation with the phantom {np.corrcoef(rec.ravel(), cube.ravel())[0, 1]:.3f}")
