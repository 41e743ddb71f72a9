"""ASTRA's sample s006 (3-D data objects) ported to glrecon: volumes and projection data made empty, constant or from
an array, in ASTRA's coordinate orders. Each ASTRA line is the comment above its glrecon line; nothing but a parameter
mapping changes. ASTRA's original:
https://github.com/astra-toolbox/astra-toolbox/blob/master/samples/python/s006_3d_data.py

glrecon has no data objects: its data are NumPy arrays (astra.data3d.create is an array, astra.data3d.get the array
itself, astra.data3d.delete nothing), in glrecon's orders: from_astra_order/to_astra_order convert ASTRA's.
ASTRA's projection geometry, 'parallel3d_vec' (two views, along x and along y), is glrecon's parallel beam as it is
(from_astra). ASTRA's sizes (64 rows, 48 columns, 32 slices; a 32 x 64 detector) are N, 3N/4, N/2 and an N/2 x N
detector. ASTRA is not needed: _astra_stand_ins.py builds its dicts.

Run: python3 astra_s006_3d_data.py [--size N] [--backend B]. ASTRA's sample only makes and frees the data; the port
checks the orders (not in ASTRA's sample): it projects v1 (3.0 everywhere) through both views and prints the central
pixels' line integrals: 3.0 times the volume's width along the ray, 3 x 48 = 144 along x and 3 x 64 = 192 along y at
ASTRA's size (3N x 3/4 and 3N at size N); rows and columns swapped would exchange them.
"""
import numpy as np

import glrecon
from _astra_stand_ins import arguments, create_proj_geom, create_vol_geom

args = arguments(__doc__)
rows, cols, slices = args.size, 3 * args.size // 4, args.size // 2
# vol_geom = astra.create_vol_geom(64, 48, 32)   (rows, colums, slices: y, x, z)
vol_geom = create_vol_geom(rows, cols, slices)
grid = glrecon.astra_grid(vol_geom)  # glrecon's grid of it: size (cols, slices, rows), as glrecon's (x, y, z)

# v0 = astra.data3d.create('-vol', vol_geom)          (initialized to zero)
v0 = grid.zeros()  # glrecon's (z, y, x) order
# v1 = astra.data3d.create('-vol', vol_geom, 3.0)     (initialized to 3.0)
v1 = np.full(grid.shape, 3.0, np.float32)
# A = np.zeros((32, 64, 48)); v2 = astra.data3d.create('-vol', vol_geom, A)   (slice, row, column: z, y, x)
A = np.zeros((slices, rows, cols))
v2 = glrecon.from_astra_order(A, "volume")
print(f"volume: ASTRA's (slices, rows, cols) {A.shape}, glrecon's (z, y, x) {v2.shape}, the grid's {grid.shape}")

# V = np.array([[1,0,0, 0,0,0,  0,1,0, 0,0,1], [0,1,0, 0,0,0, -1,0,0, 0,0,1]], dtype=float)
#   (2 projection directions, along x and y axis resp.; ray direction, detector centre, u, v)
V = np.array([[1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1],
              [0, 1, 0, 0, 0, 0, -1, 0, 0, 0, 0, 1]], dtype=float)
# proj_geom = astra.create_proj_geom('parallel3d_vec', 32, 64, V)   (32 rows (v), 64 columns (u))
proj_geom = create_proj_geom("parallel3d_vec", slices, 2 * slices, V)
g = glrecon.from_astra(proj_geom, vol_geom)
print(f"projection geometry: {len(g)} views, parallel beam {g.is_parallel}")

# s0 = astra.data3d.create('-proj3d', proj_geom)     (zero, as a volume)
s0 = np.zeros((len(g),) + tuple(g.detector[::-1]), np.float32)  # glrecon's (views, v, u)
# A = np.zeros((32, 2, 64)); s1 = astra.data3d.create('-proj3d', proj_geom, A)   (row (v), angle, column (u))
A = np.zeros((slices, 2, 2 * slices))
s1 = glrecon.from_astra_order(A, "projections")
print(f"projections: ASTRA's (rows, angles, cols) {A.shape}, glrecon's (views, v, u) {s1.shape}")

# R = astra.data3d.get(v1)
R = glrecon.to_astra_order(v1, "volume")
# astra.data3d.delete(v0); ... astra.data3d.delete(s1)   (NumPy frees them)
del v0, v2, s0, s1

# The check: v1 projected through both views, read in ASTRA's order (rows, angles, cols); the central 2 x 2 pixels.
p = glrecon.to_astra_order(glrecon.project(glrecon.from_astra_order(R, "volume"), g, backend=args.backend),
                           "projections")
centre = p[slices // 2 - 1:slices // 2 + 1, :, slices - 1:slices + 1]
for view, axis, width in ((0, "x", cols), (1, "y", rows)):
    print(f"view {view} along {axis} (3.0 x {width} = {3.0 * width:g}): central line integral {centre[:, view, :].mean():.4f}")
