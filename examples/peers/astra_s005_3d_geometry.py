"""ASTRA's sample s005 (3-D geometries) ported to glrecon: a volume geometry and the four 3-D projection geometries,
circular and free ('vec'), parallel and cone. Each ASTRA line is the comment above its glrecon line; nothing but a
parameter mapping changes. ASTRA's original:
https://github.com/astra-toolbox/astra-toolbox/blob/master/samples/python/s005_3d_geometry.py

ASTRA's sizes (64 voxels, a 32 x 64 detector) are N, N/2 x N. ASTRA is not needed: _astra_stand_ins.py builds its dicts.

Run: python3 astra_s005_3d_geometry.py [--size N] [--backend B]. ASTRA's sample only builds the geometries; the port
checks them (not in ASTRA's sample): the circular and the free geometries built as "the same geometry" (parallel3d and
parallel3d_vec, cone and cone_vec) must be the same glrecon geometry (their vectors' largest difference is printed) and
must project a volume the same (the largest difference of the two projections, relative to the largest value, is
printed).
"""
import numpy as np

import glrecon
from _astra_stand_ins import arguments, create_proj_geom, create_vol_geom

args = arguments(__doc__)
n = args.size
# vol_geom = astra.create_vol_geom(64, 64, 64)
vol_geom = create_vol_geom(n, n, n)

# angles = np.linspace(0, 2*np.pi, 48, False)
angles = np.linspace(0, 2 * np.pi, 48, False)
# proj_geom = astra.create_proj_geom('parallel3d', 1.0, 1.0, 32, 64, angles)
proj_geom = create_proj_geom("parallel3d", 1.0, 1.0, n // 2, n, angles)
parallel = glrecon.from_astra(proj_geom, vol_geom)

# vectors = np.zeros((len(angles), 12)); for i in range(len(angles)): ray direction, centre of detector, u, v
vectors = np.zeros((len(angles), 12))
for i in range(len(angles)):
    vectors[i, 0:3] = np.sin(angles[i]), -np.cos(angles[i]), 0  # ray direction
    vectors[i, 3:6] = 0  # center of detector
    vectors[i, 6:9] = np.cos(angles[i]), np.sin(angles[i]), 0  # vector from detector pixel (0,0) to (0,1)
    vectors[i, 9:12] = 0, 0, 1  # vector from detector pixel (0,0) to (1,0)
# proj_geom = astra.create_proj_geom('parallel3d_vec', 32, 64, vectors)
proj_geom = create_proj_geom("parallel3d_vec", n // 2, n, vectors)
parallel_vec = glrecon.from_astra(proj_geom, vol_geom)

# angles = np.linspace(0, 2 * np.pi, 48, False)
angles = np.linspace(0, 2 * np.pi, 48, False)
# proj_geom = astra.create_proj_geom('cone', 1.0, 1.0, 32, 64, angles, 1000, 0)
proj_geom = create_proj_geom("cone", 1.0, 1.0, n // 2, n, angles, 1000, 0)
cone = glrecon.from_astra(proj_geom, vol_geom)

vectors = np.zeros((len(angles), 12))
for i in range(len(angles)):
    vectors[i, 0:3] = np.sin(angles[i]) * 1000, -np.cos(angles[i]) * 1000, 0  # source
    vectors[i, 3:6] = 0  # center of detector
    vectors[i, 6:9] = np.cos(angles[i]), np.sin(angles[i]), 0  # vector from detector pixel (0,0) to (0,1)
    vectors[i, 9:12] = 0, 0, 1  # vector from detector pixel (0,0) to (1,0)
# proj_geom = astra.create_proj_geom('cone_vec', 32, 64, vectors)
proj_geom = create_proj_geom("cone_vec", n // 2, n, vectors)
cone_vec = glrecon.from_astra(proj_geom, vol_geom)

# The checks. An off-centre block (ASTRA's (slices, rows, cols)) so that a mirrored or swapped axis would show.
block = np.zeros((n, n, n), np.float32)
block[n // 4:n // 2, n // 8:n // 2, n // 2:7 * n // 8] = 1
volume = glrecon.from_astra_order(block, "volume")
for name, circular, free in (("parallel3d and parallel3d_vec", parallel, parallel_vec), ("cone and cone_vec", cone, cone_vec)):
    print(f"{name}: {len(circular)} and {len(free)} views, detector {circular.detector} and {free.detector}")
    print(f"{name} vectors max difference {np.abs(np.asarray(circular.vectors) - np.asarray(free.vectors)).max():.3g}")
    p_circular = glrecon.project(volume, circular, backend=args.backend)
    p_free = glrecon.project(volume, free, backend=args.backend)
    print(f"{name} projections max difference relative {np.abs(p_circular - p_free).max() / p_circular.max():.3g}")
