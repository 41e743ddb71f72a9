"""glrecon from Python: cone-beam CT reconstruction (FDK) on NumPy arrays.

Array conventions (those of ITK, RTK and SimpleITK reading a MetaImage):
  * volumes are NumPy arrays (z, y, x), float32, x varying fastest; world axes are RTK's (the gantry
    turns about y, so an axial slice is ``vol[:, j, :]``);
  * projections are (views, v, u): view index, detector row, detector column;
  * ``spacing`` and ``origin`` are given in (x, y, z) order (for projections (u, v, view)), in mm, as a
    MetaImage header states them; ``origin`` is the world position of the centre of element (0, 0, 0).

Arrays read from files (``read_image``, ``read_projections``) and results (``fdk``, ``phantom.*``) are
``ImageArray``: a plain ndarray subclass carrying ``.spacing`` and ``.origin``.

Work runs in C++ with the GIL released; errors raise ``glrecon.InputError``, ``GeometryError``,
``UsageError`` or ``GlError`` (all ``glrecon.Error``) with the command line's messages.

Adding a method later (forward projection, SART, ...): bind its C++ entry point in python/module.cpp as
``_name`` (array in through ``FloatArray``, result out through ``toNumpy``, GIL released around the call,
progress through the same callback shape ``progress(done, total)``), and add a Python function here that
resolves the geometry and keyword defaults as ``fdk`` does.
"""
from __future__ import annotations

import numpy as _np

from . import _glrecon
from ._glrecon import Error, GeometryError, GlError, InputError, UsageError, read_rtk_geometry as _read_rtk_geometry

__all__ = [
    "Error", "InputError", "GeometryError", "UsageError", "GlError", "ImageArray", "Geometry",
    "read_rtk_geometry", "from_astra_vec", "from_tigre", "read_image", "read_projections", "write_image",
    "fdk", "line_integrals", "backends", "phantom",
]


class ImageArray(_np.ndarray):
    """An ndarray with ``spacing`` and ``origin`` ((x, y, z) order, mm); slicing keeps them as they were."""

    def __new__(cls, array, spacing=(1.0, 1.0, 1.0), origin=(0.0, 0.0, 0.0)):
        obj = _np.asarray(array).view(cls)
        obj.spacing = tuple(float(s) for s in spacing)
        obj.origin = tuple(float(o) for o in origin)
        return obj

    def __array_finalize__(self, obj):
        self.spacing = getattr(obj, "spacing", (1.0, 1.0, 1.0))
        self.origin = getattr(obj, "origin", (0.0, 0.0, 0.0))


def _triple(value, name):
    if _np.isscalar(value):
        return (value, value, value)
    value = tuple(value)
    if len(value) != 3:
        raise InputError(f"{name}: expected one number or three (x, y, z), found {len(value)}")
    return value


# ---- geometry -------------------------------------------------------------------------------------------

class Geometry:
    """A cone-beam scan: per view the source, the centre of detector pixel (0, 0), and the steps along a
    row (u) and a column (v), in world mm (see include/glrecon/geometry.h).

    Make one with ``Geometry.circular(...)``, ``read_rtk_geometry(path)``, ``Geometry.from_vectors(...)``,
    ``from_astra_vec(...)`` or ``from_tigre(...)``. An RTK file holds no detector layout: as on the command
    line, ``fdk`` takes it from the projections' ``spacing``/``origin`` (``read_image`` gives them), or set
    it with ``with_detector``.
    """

    def __init__(self, core):
        self._core = core

    @classmethod
    def circular(cls, projections=360, sid=1000.0, sdd=1536.0, detector=(256, 256), pixel=(2.0, 2.0), first_angle=0.0,
                 arc=360.0, detector_offset=(0.0, 0.0), source_offset=(0.0, 0.0), out_of_plane=0.0, in_plane=0.0):
        """A circular scan as ``glrecon phantom`` makes it: ``projections`` views over ``arc`` degrees from
        ``first_angle``, ``detector`` = (nu, nv) pixels of ``pixel`` = (su, sv) mm, centred plus the offsets."""
        det = tuple(int(d) for d in (detector if not _np.isscalar(detector) else (detector, detector)))
        pix = tuple(float(p) for p in (pixel if not _np.isscalar(pixel) else (pixel, pixel)))
        return cls(_glrecon.Geometry._circular(int(projections), float(sid), float(sdd), det, pix, float(first_angle), float(arc),
                                              tuple(detector_offset), tuple(source_offset), float(out_of_plane), float(in_plane)))

    @classmethod
    def from_vectors(cls, vectors, detector):
        """Views given as rows of 12 numbers, glrecon's own form: source (3), centre of pixel (0, 0) (3),
        u step (3), v step (3), world mm; ``detector`` = (nu, nv)."""
        return cls(_glrecon.Geometry._from_vectors(_np.asarray(vectors, dtype=_np.float64), tuple(int(d) for d in detector)))

    def with_detector(self, detector, pixel, origin=None):
        """This RTK geometry on a detector of ``detector`` = (nu, nv) pixels of ``pixel`` = (su, sv) mm, its
        pixel (0, 0) at ``origin`` = (u, v) detector mm (default: centred), as a projection header gives it."""
        return Geometry(self._core._with_detector(tuple(int(d) for d in detector), tuple(float(p) for p in pixel),
                                                  None if origin is None else tuple(float(o) for o in origin)))

    def __len__(self):
        return len(self._core)

    @property
    def detector(self):
        """(nu, nv) pixels, or None for an RTK file not yet bound to projections."""
        return self._core.detector

    @property
    def pixel(self):
        return self._core.pixel

    @property
    def detector_origin(self):
        return self._core.detector_origin

    @property
    def is_circular(self):
        return self._core.is_circular

    @property
    def gantry_angles(self):
        """RTK gantry angles in degrees (circular geometries)."""
        return _np.array(self._core.gantry_angles)

    @property
    def vectors(self):
        """(views, 12) float64: source, centre of pixel (0, 0), u step, v step (world mm)."""
        return self._core._vectors()

    def write_rtk(self, path, overwrite=False):
        """Writes RTK's geometry XML (circular geometries only), atomically."""
        self._core._write_rtk(str(path), overwrite)

    def __repr__(self):
        kind = "circular" if self.is_circular else "vectors"
        return f"glrecon.Geometry({len(self)} views, {kind}, detector={self.detector}, pixel={self.pixel})"


def read_rtk_geometry(path):
    """RTK's geometry XML (RTKThreeDCircularGeometry); the detector layout comes from the projections."""
    return Geometry(_read_rtk_geometry(str(path)))


# glrecon's world is RTK's: the rotation axis is y. ASTRA and TIGRE turn about z. Their (x, y, z) maps to
# glrecon's (x, z, -y): a proper rotation (determinant +1), so the scan keeps its handedness and glrecon's
# rotation axis is theirs.
_ASTRA_TO_GLRECON = _np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])


def from_astra_vec(vectors, det_row_count, det_col_count):
    """A glrecon Geometry from ASTRA's ``cone_vec`` rows (srcX, srcY, srcZ, dX, dY, dZ, uX, uY, uZ, vX, vY, vZ):
    source, *centre of the detector*, and the steps from one pixel to the next along a row (u) and a column (v).

    glrecon anchors the vectors at the centre of pixel (0, 0): d0 = d - (cols - 1)/2 u - (rows - 1)/2 v.
    World axes: ASTRA's (x, y, z) become glrecon's (x, z, -y) (ASTRA turns about z, glrecon about y).
    Projections: ASTRA's array is (rows, angles, cols); glrecon's is (views, v, u) = ``p.transpose(1, 0, 2)``.
    Units are whatever ASTRA's were (give mm to get mm)."""
    vec = _np.asarray(vectors, dtype=_np.float64)
    if vec.ndim != 2 or vec.shape[1] != 12:
        raise InputError(f"vectors: shape: expected (views, 12) ASTRA cone_vec rows, found {vec.shape}")
    src, d, u, v = vec[:, 0:3], vec[:, 3:6], vec[:, 6:9], vec[:, 9:12]
    d0 = d - 0.5 * (det_col_count - 1) * u - 0.5 * (det_row_count - 1) * v
    rows = _np.hstack([x @ _ASTRA_TO_GLRECON.T for x in (src, d0, u, v)])
    return Geometry.from_vectors(rows, (int(det_col_count), int(det_row_count)))


def from_tigre(DSO, DSD, angles, n_detector, d_detector, off_detector=(0.0, 0.0), off_origin=(0.0, 0.0, 0.0)):
    """A glrecon Geometry from TIGRE's circular description: distances ``DSO`` (source to origin) and ``DSD``
    (source to detector), ``angles`` (radians, about TIGRE's z axis), ``n_detector`` = (nv, nu) pixels and
    ``d_detector`` = (dv, du) mm as TIGRE orders them, ``off_detector`` = (v, u) mm and ``off_origin`` =
    (x, y, z) mm (the volume's offset: the scan is moved by minus it).

    The frame taken for TIGRE is the diagram in its documentation (demo 01; TIGRE itself is not a dependency):
    at angle a, with R(a) the rotation by a about z, the source sits at R(a) (DSO, 0, 0) and the detector
    centre at R(a) (DSO - DSD, off_u, off_v); seen from the source, columns (u) step along R(a) (0, du, 0) and
    rows (v) up z, (0, 0, dv), from pixel (0, 0) at the bottom left. World axes then map as in
    ``from_astra_vec``: TIGRE's (x, y, z) is glrecon's (x, z, -y). Check the orientation of a result against
    one TIGRE reconstruction before trusting a new setup."""
    angles = _np.atleast_1d(_np.asarray(angles, dtype=_np.float64))
    nv, nu = (int(n) for n in n_detector)
    dv, du = (float(x) for x in d_detector)
    off_v, off_u = (float(x) for x in off_detector)
    off = _np.asarray(off_origin, dtype=_np.float64)
    c, s = _np.cos(angles), _np.sin(angles)

    def rot(x, y, z):  # R(a) (x, y, z) for every angle: (views, 3)
        return _np.stack([c * x - s * y, s * x + c * y, _np.full_like(c, z)], axis=1)

    src = rot(DSO, 0.0, 0.0) - off
    centre = rot(DSO - DSD, off_u, off_v) - off
    u = rot(0.0, du, 0.0)
    v = _np.tile([0.0, 0.0, dv], (len(angles), 1))
    d0 = centre - 0.5 * (nu - 1) * u - 0.5 * (nv - 1) * v
    rows = _np.hstack([x @ _ASTRA_TO_GLRECON.T for x in (src, d0, u, v)])
    return Geometry.from_vectors(rows, (nu, nv))


# ---- files ----------------------------------------------------------------------------------------------

def read_image(path):
    """A MetaImage (.mha/.mhd) or TIFF (.tif/.tiff) as float32 ``ImageArray`` (z, y, x), with ``spacing`` and
    ``origin`` (x, y, z). A projection stack comes out as (views, v, u). No copy: NumPy owns glrecon's buffer."""
    array, spacing, origin = _glrecon._read_image(str(path))
    return ImageArray(array, spacing, origin)


def read_projections(spec):
    """Projections as ``fdk --projections`` takes them: one stack, a directory (natural name order) or a
    glob such as ``"scan/*.tif"``; every file must agree with the first. (views, v, u) float32."""
    array, spacing, origin = _glrecon._read_projections(str(spec))
    return ImageArray(array, spacing, origin)


def write_image(path, array, spacing=None, origin=None, overwrite=False):
    """Writes a (z, y, x) or (y, x) array as float32 MetaImage (.mha, .mhd) or multi-page TIFF (.tif: ImageJ
    calibrated in mm), atomically; an existing file is kept unless ``overwrite``. ``spacing`` and ``origin``
    ((x, y, z), mm) default to the array's own (an ``ImageArray``), else 1 mm and centred. The array is copied
    once into the writer's buffer (converted to float32 if it is not)."""
    arr = _np.asarray(array)
    if spacing is None:
        spacing = getattr(array, "spacing", (1.0, 1.0, 1.0))
    spacing = tuple(float(s) for s in _triple(spacing, "spacing"))
    if origin is None:
        origin = getattr(array, "origin", None)
    if origin is None:
        shape = arr.shape[::-1] + (1,) * (3 - arr.ndim)
        origin = tuple(-0.5 * (n - 1) * s for n, s in zip(shape, spacing))
    _glrecon._write_image(str(path), arr, spacing, tuple(float(o) for o in _triple(origin, "origin")), bool(overwrite))


def line_integrals(projections, flat=None, dark=None, i0=0.0):
    """Raw intensities to line integrals, as ``fdk --flat/--dark/--i0``: p = -ln((I - dark) / (flat - dark)),
    flat = ``i0`` when no flat field is given. Returns a new float32 array (the input is not changed)."""
    spacing = getattr(projections, "spacing", (1.0, 1.0, 1.0))
    origin = getattr(projections, "origin", (0.0, 0.0, 0.0))
    out, clamped, dead = _glrecon._line_integrals(projections, tuple(spacing), tuple(origin),
                                                  None if flat is None else _np.asarray(flat),
                                                  None if dark is None else _np.asarray(dark), float(i0))
    return ImageArray(out, spacing, origin)


# ---- reconstruction -------------------------------------------------------------------------------------

def _window(window):
    if window in (None, "auto"):
        return 0
    if window == "max":
        return _glrecon.max_window
    w = int(window)
    if w < 1 or w != window:
        raise UsageError(f"window: expected a positive whole number, auto or max, found {window!r}")
    return w


def fdk(projections, geometry, size=256, spacing=1.0, origin=None, backend="auto", window="auto", filter="ram-lak",
        cutoff=1.0, short_scan=True, threads=0, batch=32, gpu=0, roi="", progress=None, report=None):
    """FDK reconstruction; returns the volume as float32 ``ImageArray`` (z, y, x) in the phantom's density units.

    projections: (views, v, u) line integrals. Read in place when C-contiguous float32 (no copy of the stack);
        any other dtype or layout is converted once first. Its ``spacing``/``origin`` (an ``ImageArray``) give
        the detector layout for an RTK geometry, as on the command line.
    geometry: a ``Geometry`` with as many views as projections.
    size, spacing, origin: the volume grid: N or (nx, ny, nz) voxels, mm per voxel (one or three), world
        position of voxel (0, 0, 0) (default: centred on the world origin).
    backend: cpu, graphics, graphics-mp, compute, cuda (where built) or auto; window: projections per GPU
        pass, a number, "auto" or "max"; filter: ram-lak, shepp-logan, cosine, hamming, hann, with ``cutoff``.
    progress: None, True (a line on stderr, as the command line prints) or a callable ``progress(done, total)``
        called after each batch with the GIL held, e.g. with tqdm::

            bar = tqdm(total=len(geo)); fdk(p, geo, progress=lambda done, total: bar.update(done - bar.n))

        An exception raised by it (or Ctrl-C) stops the reconstruction and propagates.
    report: a dict to fill with the backend's description, timings and ``projections_address`` (the address
        the projections were read from: the input's own when it was not converted).

    Runs the streaming pipeline (``glrecon fdk --stream``): its result equals ``glrecon fdk`` without
    ``--stream`` bit for bit on the cpu backend and on the GPU backends for a fixed window."""
    if not isinstance(geometry, Geometry):
        raise UsageError(f"geometry: expected a glrecon.Geometry, found {type(geometry).__name__}")
    size = tuple(int(n) for n in _triple(size, "size"))
    voxel = tuple(float(s) for s in _triple(spacing, "spacing"))
    origin = None if origin is None else tuple(float(o) for o in _triple(origin, "origin"))
    info = {} if report is None else report
    callback = progress if callable(progress) else None
    vol = _glrecon._fdk(projections, getattr(projections, "spacing", None), getattr(projections, "origin", None),
                        geometry._core, size, voxel, origin, str(backend), _window(window), str(filter), float(cutoff),
                        bool(short_scan), int(threads), int(batch), int(gpu), str(roi), callback, progress is True, info)
    if origin is None:
        origin = tuple(-0.5 * (n - 1) * s for n, s in zip(size, voxel))
    return ImageArray(vol, voxel, origin)


def backends():
    """Backend names this build knows: cpu, graphics, graphics-mp, compute, and cuda where it was built.
    (A GPU backend may still fail with GlError where no OpenGL 4.5 device exists.)"""
    return list(_glrecon.backends())


from . import phantom  # noqa: E402  (uses the names above)
