"""TIGRE's demo d03 ported to glrecon: generate sample data and add realistic CT noise to it. Each TIGRE line is the
comment above its glrecon line; nothing but a parameter mapping changes. TIGRE's original:
https://github.com/CERN/TIGRE/blob/master/Python/demos/d03_generateData.py

TIGRE is not needed: _tigre_stand_ins.py rebuilds geometry_default, the head phantom (glrecon's Shepp-Logan stands in)
and CTnoise.add. Run: python3 tigre_d03_generate_data.py [--size N] [--backend B] [--output DIR]. Prints two checks:
the projections' correlation with the phantom's exact (analytic) line integrals, and the added noise's rms relative to
the largest line integral, which CTnoise's model fixes (see the end).
"""
import numpy as np

import glrecon
from _tigre_stand_ins import arguments, correlation, ctnoise_add, geometry_default, load_head_phantom

args = arguments(__doc__)
# geo = tigre.geometry_default(high_resolution=False)
geo = geometry_default(args.size)

# angles = np.linspace(0, 2 * np.pi, 50)
angles = np.linspace(0, 2 * np.pi, 50)
g = glrecon.from_tigre(geo, angles)
# head = sample_loader.load_head_phantom(geo.nVoxel)
head = load_head_phantom(geo.nVoxel)

# projections = tigre.Ax(head, geo, angles)
projections = glrecon.project(glrecon.from_tigre_order(head, "volume"), g, backend=args.backend)  # (angles, v, u) as TIGRE's
# noise_projections = CTnoise.add(projections, Poisson=1e5, Gaussian=np.array([0, 10]))
noise_projections = ctnoise_add(projections, Poisson=1e5, Gaussian=np.array([0, 10]))

# tigre.plotproj(projections); tigre.plotproj(projections - noise_projections)
if args.output:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        plt.imsave(f"{args.output}/projections.png", np.concatenate([projections[0], projections[0] - noise_projections[0]], 1),
                   cmap="gray")
    except ImportError:
        pass

# Checks (not in TIGRE's demo). The voxelized phantom's projections against the analytic phantom's exact line integrals
# through the same geometry: a transposed or mirrored detector, or a wrong angle, would lower the correlation.
exact = glrecon.phantom.project(g)
print(f"projections shape {projections.shape}")
print(f"projections correlation with the phantom {correlation(projections, exact):.4f}")
# CTnoise's noise: counts N = I0 exp(-p / max p) with Poisson noise sqrt(N), so p's noise is max p / sqrt(N), between
# max p / sqrt(I0) (p = 0) and max p sqrt(e / I0) (p = max p): its rms over the projections, relative to max p, lies in
# [1 / sqrt(1e5), sqrt(e / 1e5)] = [0.0032, 0.0052] (the Gaussian's 10 counts add 10 / N <= 3e-4 of it).
print(f"noise rms relative to max {np.sqrt(np.mean((noise_projections - projections) ** 2)) / projections.max():.4f}")
