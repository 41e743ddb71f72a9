"""ASTRA's sample s014 (FBP_CUDA) ported to glrecon: a Shepp-Logan slice, its sinogram, and its filtered
backprojection with the Ram-Lak filter. Each ASTRA line is the comment above its glrecon line. ASTRA's original:
https://github.com/astra-toolbox/astra-toolbox/blob/master/samples/python/s014_FBP.py

ASTRA's sample is 2-D parallel beam ('parallel', 180 angles over [0, pi)); glrecon reads it as it is: from_astra makes
the 2-D geometry a one-row detector in the plane z = 0 and the 2-D volume one voxel thick, from_astra_order/to_astra_order
(two_d=True) convert ASTRA's 2-D arrays, and fbp (FBP_CUDA) takes [0, pi) as the complete parallel scan it is.
  * ASTRA's data2d.shepp_logan is the modified (high-contrast) Shepp-Logan of the volume's size: glrecon's
    phantom.shepp_logan(variant="modified") scaled to it, its central slice.
ASTRA's sizes (256 voxels, 384 detector pixels) are N and 3N/2. ASTRA is not needed: _astra_stand_ins.py builds its
dicts. Run: python3 astra_s014_fbp.py [--size N] [--backend B]; prints the reconstruction's correlation with the phantom.
"""
import numpy as np

import glrecon
from _astra_stand_ins import arguments, create_proj_geom, create_vol_geom

args = arguments(__doc__, size=64)
n = args.size
# vol_geom = astra.create_vol_geom(256, 256)
vol_geom = create_vol_geom(n, n)
# proj_geom = astra.create_proj_geom('parallel', 1.0, 384, np.linspace(0, np.pi, 180, False))
proj_geom = create_proj_geom("parallel", 1.0, 3 * n // 2, np.linspace(0, np.pi, 180, False))
g = glrecon.from_astra(proj_geom, vol_geom)

# phantom_id, P = astra.data2d.shepp_logan(vol_geom)   (P: (rows, cols))
grid = g.grid
P = glrecon.to_astra_order(glrecon.phantom.shepp_logan(size=grid.size, spacing=grid.spacing, origin=grid.origin,
                                                       variant="modified", scale=n / 2), "volume", two_d=True)
# proj_id = astra.create_projector('cuda', proj_geom, vol_geom); sinogram_id, sinogram = astra.create_sino(P, proj_id)
sinogram = glrecon.to_astra_order(glrecon.project(glrecon.from_astra_order(P, "volume"), g, backend=args.backend),
                                  "projections", two_d=True)  # (angles, cols), ASTRA's sinogram

# rec_id = astra.data2d.create('-vol', vol_geom); cfg = astra.astra_dict('FBP_CUDA'); ...
# cfg['option'] = {'FilterType': 'Ram-Lak'}; alg_id = astra.algorithm.create(cfg); astra.algorithm.run(alg_id)
# rec = astra.data2d.get(rec_id)
rec = glrecon.to_astra_order(glrecon.fbp(glrecon.from_astra_order(sinogram, "projections"), g, filter="Ram-Lak",
                                         backend=args.backend), "volume", two_d=True)

print(f"phantom {P.shape}, sinogram {sinogram.shape}, reconstruction {rec.shape}")
print(f"fbp correlation with the phantom {np.corrcoef(rec.ravel(), P.ravel())[0, 1]:.3f}")
