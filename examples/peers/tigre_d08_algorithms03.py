"""TIGRE's demo d08 (Algorithms03) ported to glrecon: the Krylov subspace family, CGLS against SIRT. Each TIGRE line is
the comment above its glrecon line; nothing but a parameter mapping changes, except the methods glrecon lacks (below).
TIGRE's original: https://github.com/CERN/TIGRE/blob/master/Python/demos/d08_Algorithms03.py

What glrecon lacks, and the nearest it has:
  * lsqr, lsmr (lmbda=0 and 30), hybrid_lsqr, ab_gmres, ba_gmres (with and without the FDK backprojector): glrecon has
    CGLS only. LSQR is CGLS in exact arithmetic (the same iterates, Paige & Saunders 1982), so `cgls` stands in for it
    and for LSMR with lmbda=0; the others have no glrecon equivalent and are left out. Where SciPy is installed,
    glrecon.Operator(g, projector="matched").as_linear_operator() runs scipy.sparse.linalg.lsqr / lsmr (damp=lmbda).
  * computel2=True: glrecon's report gives ||A x - b|| per iteration.
CGLS runs with projector="matched" (B = A^T), as TIGRE's CGLS assumes; SIRT with glrecon's default pair.

TIGRE is not needed: _tigre_stand_ins.py rebuilds geometry_default, the head phantom (glrecon's Shepp-Logan stands in)
and CTnoise.add. Run: python3 tigre_d08_algorithms03.py [--size N] [--niter K] [--backend B] [--output DIR]: K CGLS
iterations (TIGRE's 30) and 2 K of SIRT; prints each result's correlation with the phantom, its final residual, and the
first CGLS iteration whose residual is below SIRT's last (TIGRE's demo: "CGLS gets to the same L2 error in less amount
of iterations").
"""
import numpy as np

import glrecon
from _tigre_stand_ins import arguments, correlation, ctnoise_add, geometry_default, load_head_phantom, save_slices

args = arguments(__doc__, niter=30, niter_help="CGLS iterations (TIGRE's 30); SIRT runs twice as many")
# geo = tigre.geometry_default(high_resolution=False)
geo = geometry_default(args.size)
# angles = np.linspace(0, 2 * np.pi, 100)
angles = np.linspace(0, 2 * np.pi, 100)
g = glrecon.from_tigre(geo, angles)
# head = sample_loader.load_head_phantom(geo.nVoxel)
head = load_head_phantom(geo.nVoxel)
# projections = tigre.Ax(head, geo, angles)
projections = glrecon.project(glrecon.from_tigre_order(head, "volume"), g, backend=args.backend)
# noise_projections = CTnoise.add(projections, Poisson=1e5, Gaussian=np.array([0, 10]))
noise_projections = ctnoise_add(projections, Poisson=1e5, Gaussian=np.array([0, 10]))

# imgCGLS, normL2CGLS = algs.cgls(noise_projections, geo, angles, 30, computel2=True)
normL2CGLS = {}
imgCGLS = glrecon.to_tigre_order(glrecon.cgls(noise_projections, g, iterations=args.niter, projector="matched",
                                              backend=args.backend, report=normL2CGLS), "volume")
# imgLSQR, ... = algs.lsqr(...); algs.lsmr(..., lmbda=0 / 30); algs.hybrid_lsqr(...); algs.ab_gmres / ba_gmres(...)
# (not in glrecon: see above)

# imgSIRT, normL2SIRT = algs.sirt(noise_projections, geo, angles, 60, computel2=True)
normL2SIRT = {}
imgSIRT = glrecon.to_tigre_order(glrecon.sirt(noise_projections, g, iterations=2 * args.niter, backend=args.backend,
                                              report=normL2SIRT), "volume")

# plt.plot(np.vstack((normL2CGLS[0, :], normL2SIRT[0, 0:30], ...)).T); plt.title("L2 error") ...
if args.output:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        plt.plot(normL2CGLS["residuals"], label="CGLS")
        plt.plot(normL2SIRT["residuals"][:args.niter], label="SIRT")
        plt.title("L2 error"), plt.xlabel("Iteration"), plt.ylabel("$ |Ax-b| $"), plt.legend()
        plt.savefig(f"{args.output}/l2.png")
    except ImportError:
        pass
# tigre.plotimg(np.concatenate([... imgCGLS, imgSIRT ...], axis=1), dim="z", step=2, clims=[0, 2]); and head - img
save_slices(args.output, "krylov", [imgCGLS, imgSIRT])
save_slices(args.output, "errors", [head - imgCGLS, head - imgSIRT])

for name, image, report in (("cgls", imgCGLS, normL2CGLS), ("sirt", imgSIRT, normL2SIRT)):
    print(f"{name} correlation with the phantom {correlation(image, head):.3f}")
    print(f"{name} residual {report['final_residual']:.6g}")
below = [i + 1 for i, r in enumerate(normL2CGLS["residuals"]) if r <= normL2SIRT["final_residual"]]
print(f"cgls reaches sirt's residual after {below[0] if below else 'more than ' + str(args.niter)} iterations "
      f"(sirt: {2 * args.niter})")
