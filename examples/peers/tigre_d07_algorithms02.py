"""TIGRE's demo d07 (Algorithms02) ported to glrecon: the SART family, SIRT, SART and OS-SART, 20 iterations each.
Each TIGRE line is the comment above its glrecon line; nothing but a parameter mapping changes, except two options
glrecon lacks (below). TIGRE's original: https://github.com/CERN/TIGRE/blob/master/Python/demos/d07_Algorithms02.py

What glrecon lacks, and the nearest it has:
  * lmbda_red=0.999 (lambda times 0.999 each iteration): glrecon's sart and sirt keep lambda fixed (only asd_pocs has
    lambda_reduction); after 20 iterations TIGRE's lambda is 0.98, 2% from glrecon's.
  * Quameasopts (RMSE, SSD between iterations) and verbose: glrecon's report gives ||A x - b|| per iteration
    (TIGRE's computel2), and progress=True prints a line per iteration.

TIGRE is not needed: _tigre_stand_ins.py rebuilds geometry_default, the head phantom (glrecon's Shepp-Logan stands in)
and CTnoise.add. Run: python3 tigre_d07_algorithms02.py [--size N] [--niter K] [--backend B] [--output DIR]; prints
each result's correlation with the phantom and its final residual ||A x - b||.
"""
import numpy as np

import glrecon
from _tigre_stand_ins import arguments, correlation, ctnoise_add, geometry_default, load_head_phantom, save_slices

args = arguments(__doc__, niter=20, niter_help="iterations of each method (TIGRE's 20)")
# geo = tigre.geometry_default(high_resolution=False)
geo = geometry_default(args.size)
# angles = np.linspace(0, 2 * np.pi, 100)
angles = np.linspace(0, 2 * np.pi, 100)
g = glrecon.from_tigre(geo, angles)
# head = sample_loader.load_head_phantom(geo.nVoxel)
head = load_head_phantom(geo.nVoxel)
# projections = tigre.Ax(head, geo, angles)
projections = glrecon.project(glrecon.from_tigre_order(head, "volume"), g, backend=args.backend)
# noise_projections = CTnoise.add(projections, Poisson=1e5, Gaussian=np.array([0, 10]))   (made, but TIGRE's demo
noise_projections = ctnoise_add(projections, Poisson=1e5, Gaussian=np.array([0, 10]))    # reconstructs `projections`)

# lmbda = 1; lambdared = 0.999 (not in glrecon's sart/sirt: see above); verbose = True; qualmeas = ["RMSE", "SSD"]
lmbda = 1
quality = {}

# imgSIRT, qualitySIRT = algs.sirt(projections, geo, angles, 20, lmbda=lmbda, lmbda_red=lambdared, verbose=verbose,
#                                  Quameasopts=qualmeas, computel2=True)
quality["sirt"] = {}
imgSIRT = glrecon.to_tigre_order(glrecon.sirt(projections, g, iterations=args.niter, lmbda=lmbda, backend=args.backend,
                                              report=quality["sirt"]), "volume")
# imgSART, qualitySART = algs.sart(projections, geo, angles, 20, lmbda=lmbda, lmbda_red=lambdared, ...)   (blocksize 1)
quality["sart"] = {}
imgSART = glrecon.to_tigre_order(glrecon.sart(projections, g, iterations=args.niter, lmbda=lmbda, blocksize=1,
                                              backend=args.backend, report=quality["sart"]), "volume")
# blcks = 10; order = "random"   (glrecon's shuffle is seeded: order_seed, default 0)
blcks = 10
order = "random"
# imgOSSART, qualityOSSART = algs.ossart(projections, geo, angles, 20, lmbda=lmbda, lmbda_red=lambdared, ...,
#                                        blocksize=blcks, OrderStrategy=order, computel2=True)
quality["ossart"] = {}
imgOSSART = glrecon.to_tigre_order(glrecon.sart(projections, g, iterations=args.niter, lmbda=lmbda, blocksize=blcks,
                                                OrderStrategy=order, backend=args.backend, report=quality["ossart"]), "volume")

# plt.plot(np.log10(np.vstack((qualitySIRT[0, :], qualityOSSART[0, :], qualitySART[0, :]))).T) ... "Convergence"
if args.output:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        for name in ("sirt", "ossart", "sart"):
            plt.plot(np.log10(quality[name]["residuals"]), label=name.upper())
        plt.title("Convergence"), plt.xlabel("Iteration"), plt.ylabel("$ log_{10}(|Ax-b|) $"), plt.legend()
        plt.savefig(f"{args.output}/convergence.png")
    except ImportError:
        pass
# tigre.plotimg(np.concatenate([imgSIRT, imgOSSART, imgSART], axis=1), dim="Z", savegif="sarts.gif")
save_slices(args.output, "sarts", [imgSIRT, imgOSSART, imgSART])
# tigre.plotimg(np.abs(np.concatenate([head - imgSIRT, head - imgOSSART, head - imgSART], axis=1)), dim="Z")
save_slices(args.output, "errors", [np.abs(head - imgSIRT), np.abs(head - imgOSSART), np.abs(head - imgSART)])

for name, image in (("sirt", imgSIRT), ("ossart", imgOSSART), ("sart", imgSART)):
    print(f"{name} correlation with the phantom {correlation(image, head):.3f}")
    print(f"{name} residual {quality[name]['final_residual']:.6g}")
