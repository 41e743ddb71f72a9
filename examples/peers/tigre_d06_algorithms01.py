"""TIGRE's demo d06 (Algorithms01) ported to glrecon: FDK of a noisy scan with two of its filters, 'hann' and
'ram_lak'. Each TIGRE line is the comment above its glrecon line; nothing but a parameter mapping changes. TIGRE's
original: https://github.com/CERN/TIGRE/blob/master/Python/demos/d06_Algorithms01.py

TIGRE is not needed: _tigre_stand_ins.py rebuilds geometry_default, the head phantom (glrecon's Shepp-Logan stands in)
and CTnoise.add. TIGRE's filter names are glrecon's (ram_lak, shepp_logan, cosine, hamming, hann). Run:
python3 tigre_d06_algorithms01.py [--size N] [--backend B] [--output DIR]; prints each result's correlation with the
phantom and its rms error inside and outside the phantom's skull (TIGRE's demo: "one has bigger errors in the whole
image, while the other just in the boundaries").
"""
import numpy as np

import glrecon
from _tigre_stand_ins import arguments, correlation, ctnoise_add, geometry_default, load_head_phantom, save_slices

args = arguments(__doc__)
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

# imgFDK1 = algs.fdk(noise_projections, geo, angles, filter="hann")
imgFDK1 = glrecon.to_tigre_order(glrecon.fdk(noise_projections, g, filter="hann", backend=args.backend), "volume")
# imgFDK2 = algs.fdk(noise_projections, geo, angles, filter="ram_lak")
imgFDK2 = glrecon.to_tigre_order(glrecon.fdk(noise_projections, g, filter="ram_lak", backend=args.backend), "volume")

# tigre.plotimg(np.concatenate([imgFDK1, imgFDK2], axis=1), dim="Z")
save_slices(args.output, "fdk", [imgFDK1, imgFDK2])
# tigre.plotimg(np.concatenate([abs(head - imgFDK1), abs(head - imgFDK2)], axis=1), dim="Z")
save_slices(args.output, "errors", [abs(head - imgFDK1), abs(head - imgFDK2)])

inside = head > 0
for name, image in (("hann", imgFDK1), ("ram_lak", imgFDK2)):
    print(f"{name} correlation with the phantom {correlation(image, head):.3f}")
    print(f"{name} rms error inside {np.sqrt(np.mean((image - head)[inside] ** 2)):.4f} "
          f"outside {np.sqrt(np.mean((image - head)[~inside] ** 2)):.4f}")
