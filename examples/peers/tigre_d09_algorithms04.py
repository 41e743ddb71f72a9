"""TIGRE's demo d09 (Algorithms04) ported to glrecon: total-variation regularised methods, ASD-POCS and its
ordered-subset form, beside OS-SART. Each TIGRE line is the comment above its glrecon line; nothing but a parameter
mapping changes, except the methods glrecon lacks (below). TIGRE's original:
https://github.com/CERN/TIGRE/blob/master/Python/demos/d09_Algorithms04.py

How TIGRE's asd_pocs keywords map: tviter = tv_steps, alpha = tv_alpha, alpha_red = tv_reduction, rmax = tv_ratio,
lmbda = lmbda, lmbda_red = lambda_reduction, maxl2err = stop_residual * ||b|| (glrecon's rule is relative to the data's
norm), blocksize = blocksize (TIGRE's asd_pocs forces 1; os_asd_pocs takes it).

What glrecon lacks, and the nearest it has:
  * piccs (TV of the image and of its difference from a prior) and awasd_pocs (adaptive-weighted TV): not in glrecon;
    left out.
  * irn_tv_cgls (least squares + TV by iteratively reweighted CGLS): glrecon's pdhg_tv minimises the same objective,
    1/2 |A x - b|^2 + lambda TV(x), by Chambolle & Pock's primal-dual method (with x >= 0); it stands in. TIGRE's
    lmbda=5 is in its own units; pdhg_tv's tv_weight is unitless (relative to the data's scale): its default, 0.001.

TIGRE is not needed: _tigre_stand_ins.py rebuilds geometry_default, the head phantom (glrecon's Shepp-Logan stands in)
and CTnoise.add. Run: python3 tigre_d09_algorithms04.py [--size N] [--niter K] [--backend B] [--output DIR]; prints each
result's correlation with the phantom.
"""
import numpy as np

import glrecon
from _tigre_stand_ins import arguments, correlation, ctnoise_add, geometry_default, load_head_phantom, save_slices

args = arguments(__doc__, niter=10, niter_help="iterations of each method (TIGRE's 10)")
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
niter = args.niter

# imgOSSART = algs.ossart(noise_projections, geo, angles, 10)   (TIGRE's blocksize default: 20)
imgOSSART = glrecon.to_tigre_order(glrecon.sart(noise_projections, g, iterations=niter, blocksize=20, backend=args.backend),
                                   "volume")
# epsilon = im3DNORM(tigre.Ax(algs.fdk(noise_projections, geo, angles), geo, angles) - noise_projections, 2) * 0.15
fdk = glrecon.fdk(noise_projections, g, backend=args.backend)
epsilon = np.linalg.norm(glrecon.project(fdk, g, backend=args.backend) - noise_projections) * 0.15
stop_residual = epsilon / np.linalg.norm(noise_projections)  # maxl2err as glrecon's fraction of ||b||
# alpha = 0.002; ng = 25; lmbda = 1; lambdared = 0.9999; alpha_red = 0.95; ratio = 0.94; verb = True
alpha, ng, lmbda, lambdared, alpha_red, ratio = 0.002, 25, 1, 0.9999, 0.95, 0.94

# imgASDPOCS = algs.asd_pocs(noise_projections, geo, angles, 10, tviter=ng, maxl2err=epsilon, alpha=alpha, lmbda=lmbda,
#                            lmbda_red=lambdared, rmax=ratio, verbose=verb)   (alpha_red: its default, 0.95)
imgASDPOCS = glrecon.to_tigre_order(glrecon.asd_pocs(noise_projections, g, iterations=niter, tv_steps=ng, stop_residual=stop_residual,
                                                     tv_alpha=alpha, lmbda=lmbda, lambda_reduction=lambdared, tv_ratio=ratio,
                                                     tv_reduction=alpha_red, blocksize=1, backend=args.backend), "volume")
# imgPICCS = algs.piccs(...)   (not in glrecon: see above)
# imgOSASDPOCS = algs.os_asd_pocs(noise_projections, geo, angles, 10, tviter=ng, maxl2err=epsilon, alpha=alpha,
#                                 lmbda=lmbda, lmbda_red=lambdared, rmax=ratio, verbose=verb, blocksize=10)
imgOSASDPOCS = glrecon.to_tigre_order(glrecon.asd_pocs(noise_projections, g, iterations=niter, tv_steps=ng,
                                                       stop_residual=stop_residual, tv_alpha=alpha, lmbda=lmbda,
                                                       lambda_reduction=lambdared, tv_ratio=ratio, tv_reduction=alpha_red,
                                                       blocksize=10, backend=args.backend), "volume")
# imgAWASDPOCS = algs.awasd_pocs(...)   (not in glrecon: see above)
# imgCGLSTV = algs.irn_tv_cgls(noise_projections, geo, angles, 10, lmbda=5, niter_outer=2)   (pdhg_tv stands in, with
# 10 niter iterations: its default is 300; one PDHG iteration is one A and one A^T, as one CGLS step)
imgCGLSTV = glrecon.to_tigre_order(glrecon.pdhg_tv(noise_projections, g, iterations=10 * niter, backend=args.backend),
                                   "volume")

# tigre.plotimg(np.concatenate([imgAWASDPOCS, imgOSASDPOCS, imgASDPOCS, imgOSSART, imgCGLSTV, imgPICCS], axis=1), dim="z")
save_slices(args.output, "tv", [imgOSASDPOCS, imgASDPOCS, imgOSSART, imgCGLSTV])

for name, image in (("ossart", imgOSSART), ("asd_pocs", imgASDPOCS), ("os_asd_pocs", imgOSASDPOCS), ("pdhg_tv", imgCGLSTV)):
    print(f"{name} correlation with the phantom {correlation(image, head):.3f}")
