"""TIGRE's demo d04 ported to glrecon: FDK and OS-SART of a noisy scan. Each TIGRE line is the comment above its
glrecon line; nothing but a parameter mapping changes. TIGRE's original:
https://github.com/CERN/TIGRE/blob/master/Python/demos/d04_SimpleReconstruction.py

TIGRE is not needed: `geo` holds the fields tigre.geometry_default(high_resolution=False) makes. Its head phantom is
TIGRE's data: glrecon's Shepp-Logan stands in, in TIGRE's (z, y, x) order. Run: python3 tigre_d04_simple_reconstruction.py
[N [NITER [OUTPUT_DIR]]]: N voxels a side (TIGRE's 64; the detector 2 N pixels over the same 409.6 mm), NITER OS-SART
iterations (TIGRE's 50); prints the correlation of each result with the phantom; saves slices.png in OUTPUT_DIR where
matplotlib is present.
"""
import sys
import types

import numpy as np

import glrecon

n = int(sys.argv[1]) if len(sys.argv) > 1 else 64
# geo = tigre.geometry_default(high_resolution=False)
geo = types.SimpleNamespace(DSD=1536.0, DSO=1000.0, nDetector=np.array((2 * n, 2 * n)), dDetector=np.array((0.8, 0.8)) * 4 * 64 / n,
                            nVoxel=np.array((n, n, n)), sVoxel=np.array((256, 256, 256)), offOrigin=np.array((0, 0, 0)),
                            offDetector=np.array((0, 0)), rotDetector=np.array((0, 0, 0)), accuracy=0.5, mode="cone")
geo.sDetector = geo.nDetector * geo.dDetector
geo.dVoxel = geo.sVoxel / geo.nVoxel
# angles = np.linspace(0, 2 * np.pi, 100)
angles = np.linspace(0, 2 * np.pi, 100)
g = glrecon.from_tigre(geo, angles)  # the scan and the grid (g.grid) as TIGRE lays them out

# head = sample_loader.load_head_phantom(geo.nVoxel)
head = glrecon.to_tigre_order(glrecon.phantom.shepp_logan(size=n, spacing=256.0 / n), "volume")  # TIGRE's (z, y, x)
# projections = tigre.Ax(head, geo, angles)
projections = glrecon.project(glrecon.from_tigre_order(head, "volume"), g)  # (angles, v, u), TIGRE's order too
# noise_projections = CTnoise.add(projections, Poisson=1e5, Gaussian=np.array([0, 10]))
# (CTnoise.add: counts I0 exp(-p / max p) with Poisson and Gaussian noise, back to line integrals times max p)
rng = np.random.default_rng(0)
max_proj = projections.max()
counts = rng.poisson(1e5 * np.exp(-projections / max_proj)) + rng.normal(0, 10, projections.shape)
noise_projections = -np.log(np.clip(counts, 1, None) / 1e5) * max_proj

# imgFDK = algs.fdk(noise_projections, geo, angles)
imgFDK = glrecon.to_tigre_order(glrecon.fdk(noise_projections, g, backend="cpu"), "volume")
# niter = 50; imgOSSART = algs.ossart(noise_projections, geo, angles, niter)   (TIGRE's blocksize default: 20)
niter = int(sys.argv[2]) if len(sys.argv) > 2 else 50
imgOSSART = glrecon.to_tigre_order(glrecon.sart(noise_projections, g, iterations=niter, blocksize=20), "volume")

for name, image in (("fdk", imgFDK), ("ossart", imgOSSART)):
    print(f"{name} correlation with the phantom {np.corrcoef(image.ravel(), head.ravel())[0, 1]:.3f}")
# tigre.plotimg(np.concatenate([imgFDK, imgOSSART], axis=1), dim="z")
if len(sys.argv) > 3:
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit(0)
    plt.imsave(f"{sys.argv[3]}/slices.png", np.concatenate([imgFDK, imgOSSART], axis=1)[n // 2], cmap="gray")
