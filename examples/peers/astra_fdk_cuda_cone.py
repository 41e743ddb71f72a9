"""An ASTRA cone-beam script ported to glrecon: a 'cone' geometry, its projections (create_sino3d_gpu, FP3D_CUDA), and
FDK (FDK_CUDA) and SIRT (SIRT3D_CUDA) of them; the script ASTRA's cone-beam users write, built as ASTRA's samples build
theirs (ASTRA's samples have no FDK_CUDA sample; s007 is the parallel-beam SIRT, astra_s007_3d_reconstruction.py).
Each ASTRA line is the comment above its glrecon line; nothing but a parameter mapping changes. ASTRA's samples:
https://github.com/astra-toolbox/astra-toolbox/tree/master/samples/python

ASTRA's data objects are NumPy arrays here, its algorithm objects calls (glrecon.fdk, glrecon.sirt), in glrecon's orders
(from_astra_order/to_astra_order convert ASTRA's). The script's sizes (64 voxels, a 96 x 96 detector of 1.5 units, the
source 300 and the detector 150 from the centre) are N and 1.5 N pixels. ASTRA is not needed: _astra_stand_ins.py
builds its dicts.

Run: python3 astra_fdk_cuda_cone.py [--size N] [--iterations K] [--backend B]: K iterations of SIRT (150); prints the
correlation of each result with the phantom.
"""
import numpy as np

import glrecon
from _astra_stand_ins import arguments, create_proj_geom, create_vol_geom

args = arguments(__doc__, size=64, iterations=150)
n = args.size
# vol_geom = astra.create_vol_geom(64, 64, 64)
vol_geom = create_vol_geom(n, n, n)
# angles = np.linspace(0, 2 * np.pi, 180, False)
angles = np.linspace(0, 2 * np.pi, 180, False)
# proj_geom = astra.create_proj_geom('cone', 1.5, 1.5, 96, 96, angles, 300, 150)
det = 3 * n // 2
proj_geom = create_proj_geom("cone", 1.5, 1.5, det, det, angles, 300.0, 150.0)
g = glrecon.from_astra(proj_geom, vol_geom)  # the scan and the grid (g.grid)

# A hollow cube, off centre so that a flipped or transposed axis would show (ASTRA's (slices, rows, cols)).
# cube = np.zeros((64, 64, 64)); cube[8:40, 16:56, 20:56] = 1; cube[16:32, 24:48, 28:48] = 0
cube = np.zeros((n, n, n), np.float32)
q = n // 8  # the 64-voxel cube's corners, at any n a multiple of 8
cube[q:5 * q, 2 * q:7 * q, 5 * q // 2:7 * q] = 1
cube[2 * q:4 * q, 3 * q:6 * q, 7 * q // 2:6 * q] = 0
# proj_id, proj_data = astra.create_sino3d_gpu(cube, proj_geom, vol_geom)
proj_data = glrecon.to_astra_order(glrecon.project(glrecon.from_astra_order(cube, "volume"), g, backend=args.backend),
                                   "projections")  # ASTRA's (rows, angles, cols)

# rec_id = astra.data3d.create('-vol', vol_geom)
# cfg = astra.astra_dict('FDK_CUDA'); cfg['ReconstructionDataId'] = rec_id; cfg['ProjectionDataId'] = proj_id
# alg_id = astra.algorithm.create(cfg); astra.algorithm.run(alg_id); rec_fdk = astra.data3d.get(rec_id)
rec_fdk = glrecon.to_astra_order(glrecon.fdk(glrecon.from_astra_order(proj_data, "projections"), g, backend=args.backend),
                                 "volume")
# cfg = astra.astra_dict('SIRT3D_CUDA'); ...; alg_id = astra.algorithm.create(cfg)
# astra.algorithm.run(alg_id, 150); rec_sirt = astra.data3d.get(rec_id)
rec_sirt = glrecon.to_astra_order(glrecon.sirt(glrecon.from_astra_order(proj_data, "projections"), g, iterations=args.iterations,
                                               backend=args.backend), "volume")

for name, image in (("fdk", rec_fdk), ("sirt", rec_sirt)):
    print(f"{name} correlation with the phantom {np.corrcoef(image.ravel(), cube.ravel())[0, 1]:.3f}")
