"""The analytic Shepp-Logan phantom: voxelized ground truth and exact line-integral projections."""
from __future__ import annotations

from . import _glrecon
from . import ImageArray, Geometry, _number, _text, _triple, _voxels, _whole


def shepp_logan(size=128, spacing=2.0, origin=None, variant="rtk", scale=128.0, density_scale=1.0, supersample=2, threads=0):
    """The 3D Shepp-Logan phantom voxelized on a grid (mean density over each voxel from supersample^3
    points): float32 ``ImageArray`` (z, y, x). ``variant``: rtk (Kak & Slaney's densities, as RTK) or
    modified (the high-contrast one); ``scale``: mm multiplying centres and semi-axes (RTK's 128)."""
    size = _triple(size, "size", _voxels)
    spacing = _triple(spacing, "spacing")
    origin = None if origin is None else _triple(origin, "origin")
    volume, origin = _glrecon._shepp_logan(size, spacing, origin, _text(variant, "variant"), _number(scale, "scale", "phantomScale"),
                                           _number(density_scale, "density_scale", "densityScale"),
                                           _whole(supersample, "supersample", "supersample"), _whole(threads, "threads", "threads"))
    return ImageArray(volume, spacing, origin)


def project(geometry, variant="rtk", scale=128.0, density_scale=1.0, supersample=1, noise_i0=0.0, seed=1, threads=0):
    """Exact line integrals of the phantom for every view of ``geometry`` (which needs its detector):
    float32 ``ImageArray`` (views, v, u) whose spacing/origin carry the detector layout, as ``glrecon phantom``
    writes projections.mha. ``noise_i0`` > 0 adds Poisson noise for that many unattenuated photons."""
    if not isinstance(geometry, Geometry):
        raise TypeError("geometry: expected a glrecon.Geometry")
    # seed: any 64-bit unsigned number, as the command line's --seed.
    p, spacing, origin = _glrecon._project_shepp_logan(geometry._core, _text(variant, "variant"), _number(scale, "scale", "phantomScale"),
                                                       _number(density_scale, "density_scale", "densityScale"),
                                                       _whole(supersample, "supersample", "supersample"),
                                                       _number(noise_i0, "noise_i0", "noiseI0"), _whole(seed, "seed", None, 0, 2 ** 64 - 1),
                                                       _whole(threads, "threads", "threads"))
    return ImageArray(p, spacing, origin)
