"""An ASTRA cone-beam script (FP3D_CUDA, FDK_CUDA, SIRT3D_CUDA: the shape of ASTRA's samples s005/s006/s007 with a
'cone' geometry) ported to glrecon. Each ASTRA line is the comment above its glrecon line; nothing but a parameter
mapping changes. ASTRA's samples: https://github.com/astra-toolbox/astra-toolbox/tree/master/samples/python
(s007 itself uses 'parallel3d', which glrecon does not support yet: this is its cone twin).

ASTRA is not needed: vol_geom and proj_geom are the dicts astra.create_vol_geom and astra.create_proj_geom return.
Run: python3 astra_fdk_cuda_cone.py [N [ITERATIONS]]: N voxels a side (64; the detector 1.5 N pixels), ITERATIONS of
SIRT (150); prints the correlation of each result with the phantom.
"""
import sys

import numpy as np

import glrecon

n = int(sys.argv[1]) if len(sys.argv) > 1 else 64
iterations = int(sys.argv[2]) if len(sys.argv) > 2 else 150
# vol_geom = astra.create_vol_geom(n, n, n)
vol_geom = {"GridRowCount": n, "GridColCount": n, "GridSliceCount": n,
            "option": {"WindowMinX": -n / 2, "WindowMaxX": n / 2, "WindowMinY": -n / 2, "WindowMaxY": n / 2,
                       "WindowMinZ": -n / 2, "WindowMaxZ": n / 2}}
# angles = np.linspace(0, 2 * np.pi, 180, False)
angles = np.linspace(0, 2 * np.pi, 180, False)
# proj_geom = astra.create_proj_geom('cone', 1.5, 1.5, 96, 96, angles, 300, 150)       (at n = 64)
det = 3 * n // 2
proj_geom = {"type": "cone", "DetectorSpacingX": 1.5, "DetectorSpacingY": 1.5, "DetectorRowCount": det, "DetectorColCount": det,
             "ProjectionAngles": angles, "DistanceOriginSource": 300.0, "DistanceOriginDetector": 150.0}
g = glrecon.from_astra(proj_geom, vol_geom)  # the scan and the grid (g.grid)

# A hollow cube, off centre so that a flipped or transposed axis would show (ASTRA's (slices, rows, cols)).
cube = np.zeros((n, n, n), np.float32)
q = n // 8  # the 64-voxel cube's corners, at any n a multiple of 8
cube[q:5 * q, 2 * q:7 * q, 5 * q // 2:7 * q] = 1
cube[2 * q:4 * q, 3 * q:6 * q, 7 * q // 2:6 * q] = 0
# proj_id, proj_data = astra.create_sino3d_gpu(cube, proj_geom, vol_geom)
proj_data = glrecon.to_astra_order(glrecon.project(glrecon.from_astra_order(cube, "volume"), g), "projections")  # (rows, angles, cols)

# cfg = astra.astra_dict('FDK_CUDA'); ...; astra.algorithm.run(alg_id); rec = astra.data3d.get(rec_id)
rec_fdk = glrecon.to_astra_order(glrecon.fdk(glrecon.from_astra_order(proj_data, "projections"), g, backend="cpu"), "volume")
# cfg = astra.astra_dict('SIRT3D_CUDA'); ...; astra.algorithm.run(alg_id, 150); rec = astra.data3d.get(rec_id)
rec_sirt = glrecon.to_astra_order(glrecon.sirt(glrecon.from_astra_order(proj_data, "projections"), g, iterations=iterations), "volume")

for name, image in (("fdk", rec_fdk), ("sirt", rec_sirt)):
    print(f"{name} correlation with the phantom {np.corrcoef(image.ravel(), cube.ravel())[0, 1]:.3f}")
