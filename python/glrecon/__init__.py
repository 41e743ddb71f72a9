"""glrecon from Python: cone-beam CT reconstruction (FDK, SART, SIRT, CGLS, OS-EM) and forward projection on NumPy arrays.

Array conventions (those of ITK, RTK and SimpleITK reading a MetaImage):
  * volumes are NumPy arrays (z, y, x), float32, x varying fastest; world axes are RTK's (the gantry
    turns about y, so an axial slice is ``vol[:, j, :]``);
  * projections are (views, v, u): view index, detector row, detector column;
  * ``spacing`` and ``origin`` are given in (x, y, z) order (for projections (u, v, view)), in mm, as a
    MetaImage header states them; ``origin`` is the world position of the centre of element (0, 0, 0).

Arrays read from files (``read_image``, ``read_projections``) and results (``fdk``, ``project``, ``sart``, ...,
``phantom.*``) are
``ImageArray``: a plain ndarray subclass carrying ``.spacing`` and ``.origin``.

Work runs in C++ with the GIL released; errors raise ``glrecon.InputError``, ``GeometryError``, ``UsageError`` or
``DeviceError`` (its kinds ``GlError`` and ``CudaError``), all ``glrecon.Error``, with the command line's messages
in this module's words (``iterations``, not ``--iterations``).

Adding a method: bind its C++ entry point in python/module.cpp as
``_name`` (array in through ``FloatArray``, result out through ``toNumpy``, GIL released around the call,
progress through the same callback shape ``progress(done, total)``), and add a Python function here that
resolves the geometry and keyword defaults as ``fdk`` does.
"""
from __future__ import annotations

import math as _math
import numbers as _numbers
import os as _os

import numpy as _np

from . import _glrecon
from ._glrecon import (CudaError, DeviceError, Error, GeometryError, GlError, InputError, UsageError,
                       read_rtk_geometry as _read_rtk_geometry)

__all__ = [
    "Error", "InputError", "GeometryError", "UsageError", "DeviceError", "GlError", "CudaError", "ImageArray", "Geometry",
    "read_rtk_geometry", "from_astra_vec", "from_tigre", "read_image", "read_projections", "write_image",
    "fdk", "project", "sart", "sirt", "cgls", "osem", "asd_pocs", "pdhg_tv", "Operator", "line_integrals", "backends", "projectors",
    "phantom",
]


class ImageArray(_np.ndarray):
    """An ndarray with ``spacing`` and ``origin`` ((x, y, z) order, mm; one number or three, checked as the functions'
    own ``spacing`` and ``origin`` are); slicing keeps them as they were."""

    def __new__(cls, array, spacing=(1.0, 1.0, 1.0), origin=(0.0, 0.0, 0.0)):
        # Through _triple (below), as every function's spacing and origin: spacing=2.0 gave Python's "'float' object is
        # not iterable" and spacing="1,1,1" a ValueError from float(",").
        spacing, origin = _triple(spacing, "spacing"), _triple(origin, "origin")
        obj = _np.asarray(array).view(cls)
        obj.spacing, obj.origin = spacing, origin
        return obj

    def __array_finalize__(self, obj):
        self.spacing = getattr(obj, "spacing", (1.0, 1.0, 1.0))
        self.origin = getattr(obj, "origin", (0.0, 0.0, 0.0))


# ---- arguments ------------------------------------------------------------------------------------------
# Every argument is converted here before it reaches the extension, so that a value the library cannot take is refused
# naming the argument: pybind11 alone answers a Python int beyond C's int (threads=2**40) with an opaque "incompatible
# function arguments" TypeError, and int() truncated threads=2.5 and size=8.5 silently. The rule:
#   * a number outside what the argument takes (out of the library's bounds, glrecon/limits.h, as the command line
#     bounds its options; beyond C's int; NaN, infinite, or not whole where a count is expected) is a UsageError
#     naming the argument, the range and the value;
#   * a value that is not a number at all (a string, None, a list, a complex number, a bool) where a number is expected
#     is a TypeError naming the argument, as Python's own functions answer a wrong type;
#   * an array that cannot be read as real numbers (complex, object, strings, ragged lists), has the wrong number of
#     dimensions or too many elements is an InputError naming the argument; the library checks its values.

_INT_MIN, _INT_MAX = -2 ** 31, 2 ** 31 - 1


def _shown(value):
    text = repr(float(value)) if isinstance(value, (float, _np.floating)) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _number(value, name, field=None, whole=False, lowest=None, highest=None):
    """``value`` as the float (or, with ``whole``, the int) the extension takes; ``field`` names the library's bounds
    (glrecon/limits.h's table, the command line's), else ``lowest``..``highest`` (whole numbers: C's int by default)."""
    if isinstance(value, _np.ndarray) and value.ndim == 0:
        value = value[()]
    # bool is an int to Python, but True as a count or a length is a mistake, not a 1.
    if isinstance(value, (bool, _np.bool_)) or not isinstance(value, _numbers.Real):
        raise TypeError(f"{name}: expected a {'whole ' if whole else ''}number, found {type(value).__name__}")
    bounds = _glrecon._value_bounds(field) if field else None
    if bounds is not None:
        lowest, highest, lowest_included, whole, expected = bounds
    else:
        lowest_included = True
        if whole:
            lowest = _INT_MIN if lowest is None else lowest
            highest = _INT_MAX if highest is None else highest
            expected = f"a whole number from {lowest} to {highest}"
        else:
            expected = "a finite number" if lowest is None and highest is None else f"a number from {lowest} to {highest}"
    # Python compares ints and floats exactly, so 2**63 is not mistaken for 2**63 - 1 (a float conversion would).
    if isinstance(value, _numbers.Integral):
        number = int(value)
        ok = True
        if not whole:
            try:
                number = float(number)
            except OverflowError:  # an int beyond double
                ok = False
    else:
        number = float(value)
        ok = _math.isfinite(number) and (not whole or number == _math.floor(number))
    if ok and lowest is not None:
        ok = number >= lowest if lowest_included else number > lowest
    if ok and highest is not None:
        ok = number <= highest
    if not ok:
        raise UsageError(f"{name}: expected {expected}, found {_shown(value)}")
    return int(number) if whole else float(number)


def _whole(value, name, field=None, lowest=None, highest=None):
    return _number(value, name, field, True, lowest, highest)


def _several(value, name, count, convert, scalar_ok=True):
    """One number for all ``count`` (where ``scalar_ok``) or ``count`` numbers, each through ``convert(item, name)``."""
    if isinstance(value, _np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (_numbers.Number, _np.bool_)) or isinstance(value, (str, bytes)) or value is None:
        if not scalar_ok or isinstance(value, (str, bytes)) or value is None:
            raise TypeError(f"{name}: expected {count} numbers, found {type(value).__name__}")
        value = (value,) * count
    try:
        items = tuple(value)
    except TypeError:
        raise TypeError(f"{name}: expected {'one number or ' if scalar_ok else ''}{count} numbers, found "
                        f"{type(value).__name__}") from None
    if len(items) != count:
        raise InputError(f"{name}: expected {'one number or ' if scalar_ok else ''}{count} numbers, found {len(items)}")
    return tuple(convert(item, name) for item in items)


def _float(value, name):
    """``value`` as a float, its type checked and nothing else: the library checks its range and finiteness where it
    can name the component (write_image's "spacing y", a grid's "origin z")."""
    if isinstance(value, _np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, (bool, _np.bool_)) or not isinstance(value, _numbers.Real):
        raise TypeError(f"{name}: expected a number, found {type(value).__name__}")
    try:
        return float(value)
    except OverflowError:  # an int beyond double
        raise UsageError(f"{name}: expected a finite number, found {_shown(value)}") from None


def _triple(value, name, convert=None):
    """One number or three ((x, y, z)), converted (by default by _float: the library checks the range)."""
    return _several(value, name, 3, convert or _float)


def _reals(value, name, count, scalar_ok=True):
    return _several(value, name, count, _number, scalar_ok)


def _text(value, name):
    """A string argument (backend, filter, roi, variant) as UTF-8 bytes: a lone surrogate does not fail the conversion
    (pybind11 refuses it with an opaque TypeError); the library quotes what it does not know."""
    if isinstance(value, bytes):
        return value
    if not isinstance(value, str):
        raise TypeError(f"{name}: expected a string, found {type(value).__name__}")
    return value.encode("utf-8", "surrogateescape")


def _path(value, name):
    """A file name as the bytes the file system sees (os.fsencode); a NUL would cut the name short in C."""
    try:
        path = _os.fsencode(value)
    except TypeError:
        raise TypeError(f"{name}: expected a path (str, bytes or os.PathLike), found {type(value).__name__}") from None
    if b"\0" in path:
        raise InputError(f"{name}: expected a file name without NUL characters, found {_shown(path)}")
    return path


def _bool(value, name):
    if isinstance(value, _np.ndarray) and value.ndim == 0:
        value = value[()]
    if not isinstance(value, (bool, _np.bool_, _numbers.Integral)):
        raise TypeError(f"{name}: expected True or False, found {type(value).__name__}")
    return bool(value)


_FLOAT32_MAX = float(_np.finfo(_np.float32).max)


def _real_array(value, name, ndims, limits):
    """``value`` as an ndarray of real numbers (its own dtype, not copied where it is one). ``ndims``: the numbers of
    dimensions taken; ``limits``: the largest length of each axis, last axis last (a shorter array's axes take the
    last ones)."""
    try:
        array = _np.asarray(value)
    except (TypeError, ValueError, OverflowError) as e:  # ragged lists, objects that refuse __array__, ints beyond int64
        raise InputError(f"{name}: expected an array of real numbers, found {type(value).__name__} ({e})") from None
    if array.dtype.kind not in "biuf":
        raise InputError(f"{name}: dtype: expected real numbers (bool, integer or float), found {array.dtype}")
    if array.ndim not in ndims:
        raise InputError(f"{name}: shape: expected {' or '.join(str(n) for n in ndims)} dimensions, found {array.ndim} "
                         f"{array.shape}")
    for n, limit in zip(array.shape[::-1], limits[::-1]):
        if n > limit:
            raise InputError(f"{name}: shape: expected at most {limit} along each axis of "
                             f"{tuple(limits[-array.ndim:])}, found {array.shape}")
    return array


def _float_array(value, name, ndims, limits):
    """``value`` as a C-contiguous float32 ndarray (``_real_array``'s checks), without copying where it is one already.
    A conversion's memory is checked first (a broadcast array of 2**62 elements holds no memory; its float32 copy
    would need exabytes), and a value float32 cannot hold (1e300 in float64) is refused rather than made infinite."""
    array = _real_array(value, name, ndims, limits)
    # Aligned too: an array at an odd address (a view into a bytes buffer) is C-contiguous float32 all the same, and
    # pybind11 handed its address to the library, whose float reads there are undefined behaviour (UBSan aborted;
    # vectorized loops may assume the alignment).
    if array.dtype == _np.float32 and array.flags.c_contiguous and array.flags.aligned:
        return array
    _glrecon._check_memory(name, f"a float32 copy of the {array.dtype} array {array.shape}", 4 * array.size)
    try:
        with _np.errstate(over="raise", invalid="ignore"):
            return _np.require(array, _np.float32, ["C", "A"])
    except FloatingPointError:
        big = _np.abs(array[_np.isfinite(array)]).max()
        raise InputError(f"{name}: values: expected values float32 can hold (within {_FLOAT32_MAX:.7g} in magnitude), "
                         f"found {big!r}") from None


# The lengths of axes the library takes: volumes up to 65536 voxels a side (glrecon/limits.h's "size"), detectors up to
# 65536 pixels a side ("detector") and 1000000 views ("projections"); other images up to C's int.
_VOLUME_AXES = (65536, 65536, 65536)
_PROJECTION_AXES = (1000000, 65536, 65536)
_IMAGE_AXES = (_INT_MAX, _INT_MAX, _INT_MAX)


def _layout_numbers(value, name):
    """An ``ImageArray``'s spacing or origin as a detector layout reads it: (u, v[, view]), each a finite number, or one
    number for all, as ImageArray() and line_integrals take it (the attributes can hold anything: a number alone gave
    Python's "'float' object is not iterable")."""
    if value is None:
        return None
    if isinstance(value, _np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, _numbers.Number) and not isinstance(value, bool):
        value = (value,) * 3
    if isinstance(value, (_numbers.Number, _np.bool_, str, bytes)):
        raise TypeError(f"{name}: expected (u, v[, view]) numbers, found {type(value).__name__}")
    try:
        items = tuple(value)
    except TypeError:
        raise TypeError(f"{name}: expected (u, v[, view]) numbers, found {type(value).__name__}") from None
    if len(items) not in (2, 3):
        raise InputError(f"{name}: expected (u, v[, view]) numbers, found {len(items)}")
    return tuple(_number(x, name) for x in items)


def _layout(array):
    """The detector layout an array carries (an ``ImageArray``'s ``spacing`` and ``origin``), checked as numbers."""
    return (_layout_numbers(getattr(array, "spacing", None), "projections.spacing"),
            _layout_numbers(getattr(array, "origin", None), "projections.origin"))


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
        return cls(_glrecon.Geometry._circular(
            _whole(projections, "projections", "projections"), _number(sid, "sid", "sid"), _number(sdd, "sdd", "sdd"),
            _several(detector, "detector", 2, lambda d, name: _whole(d, name, "detector")), _reals(pixel, "pixel", 2),
            _number(first_angle, "first_angle", "firstAngle"), _number(arc, "arc", "arc"),
            _reals(detector_offset, "detector_offset", 2, False), _reals(source_offset, "source_offset", 2, False),
            _number(out_of_plane, "out_of_plane", "outOfPlane"), _number(in_plane, "in_plane", "inPlane")))

    @classmethod
    def from_vectors(cls, vectors, detector):
        """Views given as rows of 12 numbers, glrecon's own form: source (3), centre of pixel (0, 0) (3),
        u step (3), v step (3), world mm; ``detector`` = (nu, nv)."""
        rows = _real_array(vectors, "vectors", (2,), (1000000, 12))
        # Aligned as well as C-contiguous: pybind11 takes an array at an odd address as it is, and reading its doubles
        # there is undefined behaviour (UBSan: "reference binding to misaligned address").
        return cls(_glrecon.Geometry._from_vectors(_np.require(rows, _np.float64, ["C", "A"]),
                                                   _several(detector, "detector", 2, _detector_pixels, False)))

    def with_detector(self, detector, pixel, origin=None):
        """This RTK geometry on a detector of ``detector`` = (nu, nv) pixels of ``pixel`` = (su, sv) mm, its
        pixel (0, 0) at ``origin`` = (u, v) detector mm (default: centred), as a projection header gives it."""
        return Geometry(self._core._with_detector(_several(detector, "detector", 2, _detector_pixels), _reals(pixel, "pixel", 2),
                                                  None if origin is None else _reals(origin, "origin", 2, False)))

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
        self._core._write_rtk(_path(path, "path"), _bool(overwrite, "overwrite"))

    def __repr__(self):
        kind = "circular" if self.is_circular else "vectors"
        return f"glrecon.Geometry({len(self)} views, {kind}, detector={self.detector}, pixel={self.pixel})"


def _detector_pixels(value, name):
    return _whole(value, name, "detector")


def read_rtk_geometry(path):
    """RTK's geometry XML (RTKThreeDCircularGeometry); the detector layout comes from the projections."""
    return Geometry(_read_rtk_geometry(_path(path, "path")))


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
    rows_count, cols_count = _detector_pixels(det_row_count, "det_row_count"), _detector_pixels(det_col_count, "det_col_count")
    vec = _np.asarray(_real_array(vectors, "vectors", (1, 2), (1000000, 12)), dtype=_np.float64)
    if vec.ndim != 2 or vec.shape[1] != 12:
        raise InputError(f"vectors: shape: expected (views, 12) ASTRA cone_vec rows, found {vec.shape}")
    src, d, u, v = vec[:, 0:3], vec[:, 3:6], vec[:, 6:9], vec[:, 9:12]
    with _np.errstate(over="ignore", invalid="ignore"):  # 1e308 rows overflow here; the geometry's checks refuse them
        d0 = d - 0.5 * (cols_count - 1) * u - 0.5 * (rows_count - 1) * v
        rows = _np.hstack([x @ _ASTRA_TO_GLRECON.T for x in (src, d0, u, v)])
    return Geometry.from_vectors(rows, (cols_count, rows_count))


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
    DSO, DSD = _number(DSO, "DSO", "sid"), _number(DSD, "DSD", "sdd")  # TIGRE's names, the command line's bounds
    angles = _np.asarray(_real_array(angles, "angles", (0, 1), (1000000,)), dtype=_np.float64).reshape(-1)
    nv, nu = _several(n_detector, "n_detector", 2, _detector_pixels, False)
    dv, du = _reals(d_detector, "d_detector", 2, False)
    off_v, off_u = _reals(off_detector, "off_detector", 2, False)
    off = _np.asarray(_reals(off_origin, "off_origin", 3, False), dtype=_np.float64)
    # An angle NaN or infinite has no sine (NumPy warned "invalid value encountered in cos", then the geometry's check
    # refused a NaN vector without naming the angle).
    bad = _np.flatnonzero(~_np.isfinite(angles))
    if bad.size:
        raise InputError(f"angles: expected finite angles in radians, found {_shown(angles[bad[0]])} at index {bad[0]}")
    c, s = _np.cos(angles), _np.sin(angles)

    def rot(x, y, z):  # R(a) (x, y, z) for every angle: (views, 3)
        return _np.stack([c * x - s * y, s * x + c * y, _np.full_like(c, z)], axis=1)

    with _np.errstate(over="ignore", invalid="ignore"):  # 1e300 mm pixels overflow here; the geometry's checks refuse them
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
    array, spacing, origin = _glrecon._read_image(_path(path, "path"))
    return ImageArray(array, spacing, origin)


def read_projections(spec):
    """Projections as ``fdk --projections`` takes them: one stack, a directory (natural name order) or a
    glob such as ``"scan/*.tif"``; every file must agree with the first. (views, v, u) float32."""
    array, spacing, origin = _glrecon._read_projections(_path(spec, "spec"))
    return ImageArray(array, spacing, origin)


def write_image(path, array, spacing=None, origin=None, overwrite=False):
    """Writes a (z, y, x) or (y, x) array as float32 MetaImage (.mha, .mhd) or multi-page TIFF (.tif: ImageJ
    calibrated in mm), atomically; an existing file is kept unless ``overwrite``. ``spacing`` and ``origin``
    ((x, y, z), mm) default to the array's own (an ``ImageArray``), else 1 mm and centred. The array is copied
    once into the writer's buffer (converted to float32 if it is not)."""
    path = _path(path, "path")
    arr = _float_array(array, "array", (2, 3), _IMAGE_AXES)
    if spacing is None:
        spacing = getattr(array, "spacing", (1.0, 1.0, 1.0))
    spacing = _triple(spacing, "spacing")
    if origin is None:
        origin = getattr(array, "origin", None)
    if origin is None:
        shape = arr.shape[::-1] + (1,) * (3 - arr.ndim)
        origin = tuple(-0.5 * (n - 1) * s for n, s in zip(shape, spacing))
    _glrecon._write_image(path, arr, spacing, _triple(origin, "origin"), _bool(overwrite, "overwrite"))


def line_integrals(projections, flat=None, dark=None, i0=0.0):
    """Raw intensities to line integrals, as ``fdk --flat/--dark/--i0``: p = -ln((I - dark) / (flat - dark)),
    flat = ``i0`` when no flat field is given. Returns a new float32 array of the input's shape (one projection
    (v, u) stays 2D; the input is not changed)."""
    spacing = getattr(projections, "spacing", (1.0, 1.0, 1.0))
    origin = getattr(projections, "origin", (0.0, 0.0, 0.0))
    spacing, origin = _triple(spacing, "projections.spacing"), _triple(origin, "projections.origin")
    raw = _float_array(projections, "projections", (2, 3), _PROJECTION_AXES)
    flat = None if flat is None else _float_array(flat, "flat", (2, 3), _PROJECTION_AXES)
    dark = None if dark is None else _float_array(dark, "dark", (2, 3), _PROJECTION_AXES)
    # i0 stands in for a missing flat field: then the command line's bounds (--i0); with a flat field it is unused.
    i0 = _number(i0, "i0", "i0" if flat is None else None)
    out, clamped, dead = _glrecon._line_integrals(raw, spacing, origin, flat, dark, i0)
    # The library's Image is 3D: a (v, u) projection came back as (1, v, u).
    return ImageArray(out.reshape(raw.shape), spacing, origin)


# ---- reconstruction -------------------------------------------------------------------------------------

def _window(window):
    if window is None or (isinstance(window, str) and window == "auto"):
        return 0
    if isinstance(window, str) and window == "max":
        return _glrecon.max_window
    if isinstance(window, str):
        raise UsageError(f"window: expected a whole number of projections from 1 to 4096, auto or max, found {_shown(window)!r}")
    # The command line's bounds on --window N (src/app/options.cpp).
    return _whole(window, "window", None, 1, 4096)


def fdk(projections, geometry, size=256, spacing=1.0, origin=None, backend="auto", window="auto", filter="ram-lak",
        cutoff=1.0, short_scan=True, threads=0, batch=32, gpu=0, roi="", progress=None, report=None):
    """FDK reconstruction; returns the volume as float32 ``ImageArray`` (z, y, x) in the phantom's density units.

    projections: (views, v, u) line integrals. Read in place when C-contiguous float32 (no copy of the stack);
        any other dtype or layout is converted once first. Its ``spacing``/``origin`` (an ``ImageArray``) give
        the detector layout for an RTK geometry, as on the command line.
    geometry: a ``Geometry`` with as many views as projections.
    size, spacing, origin: the volume grid: N or (nx, ny, nz) voxels, mm per voxel (one or three), world
        position of voxel (0, 0, 0) (default: centred on the world origin).
    backend: cpu, graphics, graphics-mp, compute, cuda (where built) or auto (the backend measured to finish
        first on this GPU, as ``glrecon fdk --backend auto``; ``report["auto"]`` says why); window: projections per GPU
        pass, a number, "auto" or "max"; filter: ram-lak, shepp-logan, cosine, hamming, hann, with ``cutoff``.
    progress: None, True (a line on stderr, as the command line prints) or a callable ``progress(done, total)``
        called between the reconstruction's steps with the GIL held, e.g. with tqdm::

            bar = tqdm(total=len(geo)); fdk(p, geo, progress=lambda done, total: bar.update(done - bar.n))

        An exception raised by it (or Ctrl-C) stops the reconstruction and propagates.
    report: a dict to fill with the backend's description, ``auto`` (what auto chose and why), timings and
        ``projections_address`` (the address the projections were read from: the input's own when it was not
        converted).

    Runs the command line's plan and scheduler on the array where it is (the filter on the GPU where the backend
    has one, slabs where the volume does not fit the device): the result equals ``glrecon fdk`` bit for bit on the
    cpu backend and on the GPU backends for a fixed window."""
    if not isinstance(geometry, Geometry):
        raise UsageError(f"geometry: expected a glrecon.Geometry, found {type(geometry).__name__}")
    size = _triple(size, "size", _voxels)
    voxel = _triple(spacing, "spacing")
    origin = None if origin is None else _triple(origin, "origin")
    info = _report(report)
    callback = progress if callable(progress) else None
    layout = _layout(projections)
    vol = _glrecon._fdk(_float_array(projections, "projections", (3,), _PROJECTION_AXES), *layout, geometry._core, size, voxel,
                        origin, _text(backend, "backend"), _window(window), _text(filter, "filter"), _number(cutoff, "cutoff", "cutoff"),
                        _bool(short_scan, "short_scan"), _whole(threads, "threads", "threads"), _whole(batch, "batch", "batch"),
                        _whole(gpu, "gpu", "gpu"), _text(roi, "roi"), callback, progress is True, info)
    if origin is None:
        origin = tuple(-0.5 * (n - 1) * s for n, s in zip(size, voxel))
    return ImageArray(vol, voxel, origin)


# ---- forward projection and iterative methods -----------------------------------------------------------

def _voxels(value, name):
    return _whole(value, name, "size")


def _report(report):
    if report is None:
        return {}
    if not isinstance(report, dict):
        raise TypeError(f"report: expected a dict to fill, found {type(report).__name__}")
    return report


def _step(step):
    # None: the projector's default (one sample per voxel plane), which the extension reads as 0.
    return 0.0 if step is None else _number(step, "step")


def _volume_grid(array, shape, spacing, origin):
    if spacing is None:
        spacing = getattr(array, "spacing", (1.0, 1.0, 1.0))
    spacing = _triple(spacing, "spacing")
    if origin is None:
        origin = getattr(array, "origin", None)
    if origin is None:
        origin = tuple(-0.5 * (n - 1) * s for n, s in zip(shape[::-1], spacing))
    return spacing, _triple(origin, "origin")


def project(volume, geometry, backend="cpu", step=None, gpu=0, threads=0, spacing=None, origin=None):
    """Forward projection A (line integrals), as ``glrecon project``: returns float32 ``ImageArray`` (views, v, u)
    with the detector's ``spacing`` (su, sv, 1) and ``origin`` (u, v, 0) as the command line writes them.

    volume: (z, y, x) densities; read in place when C-contiguous float32, else converted once. Its grid is
        ``spacing``/``origin`` ((x, y, z), mm), by default the array's own (an ``ImageArray``), else 1 mm centred.
    geometry: a ``Geometry`` with a detector (``Geometry.circular``, ``from_vectors``, or an RTK file's
        ``with_detector((nu, nv), (su, sv))``; ``glrecon project --detector``/``--detector-spacing`` centre it).
    backend: a name of ``projectors()`` (cpu, graphics, compute, cuda where built); step: ray-marching step in
        mm (None: one sample per voxel plane, Joseph's); threads: cpu threads (0: all); gpu: device index.

    The ray-driven projector of include/glrecon/operator.h (trilinear samples every ``step`` along each ray)."""
    if not isinstance(geometry, Geometry):
        raise UsageError(f"geometry: expected a glrecon.Geometry, found {type(geometry).__name__}")
    array = _float_array(volume, "volume", (3,), _VOLUME_AXES)
    spacing, origin = _volume_grid(volume, array.shape, spacing, origin)
    out, s, o = _glrecon._project(array, spacing, origin, geometry._core, _text(backend, "backend"), _step(step), _whole(gpu, "gpu", "gpu"),
                                  _whole(threads, "threads", "threads"))
    return ImageArray(out, s, o)


# The TV parameters' defaults (the library's IterativeOptions): asd_pocs and pdhg_tv pass those they take.
_TV_DEFAULTS = {"tv_steps": 20, "tv_alpha": 0.002, "tv_reduction": 0.95, "tv_ratio": 0.95, "lambda_reduction": 0.99, "tv_weight": 0.001}


def _iterative(method, projections, geometry, size, spacing, origin, iterations, subsets, lamb, positivity, initial, roi,
               backend, gpu, threads, step, progress, report, projector="interpolating", stop_residual=0.0, stop_change=0.0,
               tv=None):
    tv = {**_TV_DEFAULTS, **(tv or {})}
    if not isinstance(geometry, Geometry):
        raise UsageError(f"geometry: expected a glrecon.Geometry, found {type(geometry).__name__}")
    size = _triple(size, "size", _voxels)
    voxel = _triple(spacing, "spacing")
    origin = None if origin is None else _triple(origin, "origin")
    init = None if initial is None else _float_array(initial, "initial", (2, 3), _VOLUME_AXES)
    init_spacing = getattr(initial, "spacing", None)
    init_origin = getattr(initial, "origin", None)
    info = _report(report)
    callback = progress if callable(progress) else None
    layout = _layout(projections)
    vol = _glrecon._iterative(method, _float_array(projections, "projections", (3,), _PROJECTION_AXES), *layout,
                              geometry._core, size, voxel, origin, _whole(iterations, "iterations"),
                              _whole(subsets, "subsets"), _number(lamb, "lamb"), _bool(positivity, "positivity"), init,
                              None if init_spacing is None else _triple(init_spacing, "initial.spacing"),
                              None if init_origin is None else _triple(init_origin, "initial.origin"), _text(roi, "roi"),
                              _text(backend, "backend"), _whole(gpu, "gpu", "gpu"), _whole(threads, "threads", "threads"), _step(step),
                              _text(projector, "projector"), _number(stop_residual, "stop_residual", "stopResidual"),
                              _number(stop_change, "stop_change", "stopChange"), _whole(tv["tv_steps"], "tv_steps", "tvSteps"),
                              _number(tv["tv_alpha"], "tv_alpha", "tvAlpha"), _number(tv["tv_reduction"], "tv_reduction", "tvReduction"),
                              _number(tv["tv_ratio"], "tv_ratio", "tvRatio"),
                              _number(tv["lambda_reduction"], "lambda_reduction", "lambdaReduction"),
                              _number(tv["tv_weight"], "tv_weight", "tvWeight"), callback, progress is True, info)
    if origin is None:
        origin = tuple(-0.5 * (n - 1) * s for n, s in zip(size, voxel))
    return ImageArray(vol, voxel, origin)


def _relaxation(lamb, relaxation):
    if relaxation is not None:
        if lamb is not None and lamb != relaxation:
            raise UsageError(f"lamb, relaxation: give one of them, found {lamb!r} and {relaxation!r}")
        lamb = relaxation
    return 0.0 if lamb is None else lamb


_COMMON_DOC = """
    projections: (views, v, u) line integrals (converted once to float32 if they are not; copied once, as the
        C++ methods take an Image). Their ``spacing``/``origin`` (an ``ImageArray``) give the detector layout
        for an RTK geometry, as on the command line; geometry: a ``Geometry`` with as many views.
    size, spacing, origin: the volume grid: N or (nx, ny, nz) voxels, mm per voxel (one or three), world
        position of voxel (0, 0, 0) (default: centred on the world origin).
    iterations: passes over all projections (at least 1).
    initial: a starting volume (z, y, x) on the grid (its ``spacing``/``origin``, if an ``ImageArray``, must be
        the grid's), e.g. an ``fdk`` result; default 0 (osem: a positive constant).
    roi: "" (the whole volume), fov, fov-cylinder, cylinder:..., box:..., sphere:... or a mask file, as ``--roi``.
    backend: a name of ``projectors()``; gpu: device index; threads: cpu threads (0: all); step: ray-marching
        step in mm (None: one sample per voxel plane, Joseph's).
    projector: "interpolating" (fast; B close to A^T) or "matched" (B = A^T exactly), as ``--projector``.
    stop_residual, stop_change: stopping rules (0: off), as ``--stop-residual`` / ``--stop-change``: stop once the
        residual is at most that fraction of ||b||, or once an iteration lowered it by less than that fraction of it.
    progress: None, True (the command line's line per iteration on stderr) or ``progress(iteration, iterations)``
        called after each iteration with the GIL held; an exception in it (or Ctrl-C) stops and propagates.
    report: a dict to fill: backend, residuals (||b - A x|| per iteration), final_residual, data_norm, subsets,
        lambda, seconds, setup_seconds, restarts (cgls), stop_reason and warning ("" where none).

    Returns float32 ``ImageArray`` (z, y, x); on the cpu backend it equals the command line's output bit for bit.
    Errors carry the command line's messages (option names as there: ``--iterations`` etc.)."""


def sart(projections, geometry, size=256, spacing=1.0, origin=None, iterations=10, subsets=None, lamb=None, positivity=False,
         initial=None, roi="", backend="cpu", gpu=0, threads=0, step=None, progress=None, report=None, relaxation=None,
         projector="interpolating", stop_residual=0.0, stop_change=0.0):
    """SART / OS-SART, as ``glrecon sart``: x += lambda (B_S 1)^-1 B_S [(b_S - A_S x) / (A_S 1)] per ordered subset.

    subsets: 1 to the number of views (None: one view per subset; 1 is SIRT); lamb (or ``relaxation``): in
        (0, 2) (None: 0.8 with one view per subset, else 1); positivity: clamp negative voxels after every update.
    """
    return _iterative("sart", projections, geometry, size, spacing, origin, iterations, 0 if subsets is None else subsets,
                      _relaxation(lamb, relaxation), positivity, initial, roi, backend, gpu, threads, step, progress, report,
                      projector, stop_residual, stop_change)


def sirt(projections, geometry, size=256, spacing=1.0, origin=None, iterations=10, lamb=None, positivity=False, initial=None, roi="",
         backend="cpu", gpu=0, threads=0, step=None, progress=None, report=None, relaxation=None, projector="interpolating",
         stop_residual=0.0, stop_change=0.0):
    """SIRT, as ``glrecon sirt``: SART with one subset holding every view; lamb (or ``relaxation``) in (0, 2)
    (None: 1); positivity: clamp negative voxels after every update.
    """
    return _iterative("sirt", projections, geometry, size, spacing, origin, iterations, 0, _relaxation(lamb, relaxation), positivity,
                      initial, roi, backend, gpu, threads, step, progress, report, projector, stop_residual, stop_change)


def cgls(projections, geometry, size=256, spacing=1.0, origin=None, iterations=10, initial=None, roi="", backend="cpu", gpu=0,
         threads=0, step=None, progress=None, report=None, projector="interpolating", stop_residual=0.0, stop_change=0.0):
    """CGLS, as ``glrecon cgls``: conjugate gradients on the normal equations B A x = B b (no relaxation, no
    positivity: clamping would break the conjugate directions). Steps by exact line search, so the residual never
    rises even with the interpolating pair; ``projector="matched"`` makes it CGLS proper.
    """
    return _iterative("cgls", projections, geometry, size, spacing, origin, iterations, 0, 0.0, False, initial, roi, backend, gpu,
                      threads, step, progress, report, projector, stop_residual, stop_change)


def osem(projections, geometry, size=256, spacing=1.0, origin=None, iterations=10, subsets=None, positivity=False, initial=None,
         roi="", backend="cpu", gpu=0, threads=0, step=None, progress=None, report=None, projector="interpolating",
         stop_residual=0.0, stop_change=0.0):
    """OS-EM / MLEM, as ``glrecon osem``: x *= (B_S 1)^-1 B_S [b_S / (A_S x)]; the data must be finite and
    non-negative with some positive value. subsets: 1 to the number of views (None: 8, or fewer views; 1 is MLEM).
    """
    return _iterative("osem", projections, geometry, size, spacing, origin, iterations, 0 if subsets is None else subsets, 0.0,
                      positivity, initial, roi, backend, gpu, threads, step, progress, report, projector, stop_residual, stop_change)


def asd_pocs(projections, geometry, size=256, spacing=1.0, origin=None, iterations=10, subsets=None, lamb=None, initial=None, roi="",
             backend="cpu", gpu=0, threads=0, step=None, progress=None, report=None, projector="interpolating", stop_residual=0.0,
             stop_change=0.0, tv_steps=20, tv_alpha=0.002, tv_reduction=0.95, tv_ratio=0.95, lambda_reduction=0.99):
    """ASD-POCS (Sidky & Pan 2008), as ``glrecon asd-pocs``: per iteration a SART sweep with x >= 0, then
    ``tv_steps`` steps of steepest descent on the total variation; the TV step starts at ``tv_alpha`` times the
    sweep's change and shrinks by ``tv_reduction`` whenever TV moved the volume more than ``tv_ratio`` times it;
    lamb shrinks by ``lambda_reduction`` per iteration (TIGRE's defaults). For few views.
    """
    return _iterative("asd-pocs", projections, geometry, size, spacing, origin, iterations, 0 if subsets is None else subsets,
                      _relaxation(lamb, None), True, initial, roi, backend, gpu, threads, step, progress, report, projector, stop_residual,
                      stop_change, dict(tv_steps=tv_steps, tv_alpha=tv_alpha, tv_reduction=tv_reduction, tv_ratio=tv_ratio,
                                        lambda_reduction=lambda_reduction))


def pdhg_tv(projections, geometry, size=256, spacing=1.0, origin=None, iterations=300, tv_weight=0.001, initial=None, roi="",
            backend="cpu", gpu=0, threads=0, step=None, progress=None, report=None, projector="matched", stop_residual=0.0,
            stop_change=0.0):
    """PDHG-TV, as ``glrecon pdhg-tv``: min 1/2 |A x - b|^2 + lambda TV(x) over x >= 0 by Chambolle & Pock's
    primal-dual algorithm with diagonal preconditioning (one forward and one back projection per iteration, no step
    to tune). ``tv_weight`` is unitless (lambda = tv_weight times the data's density scale times |A|^2): higher is
    smoother, 0 is least squares with x >= 0. The convergence guarantee holds for ``projector="matched"`` (the
    default here). The residual may rise on the way (the objective holds TV too). For few views and noise.
    """
    return _iterative("pdhg-tv", projections, geometry, size, spacing, origin, iterations, 0, 0.0, False, initial, roi, backend, gpu,
                      threads, step, progress, report, projector, stop_residual, stop_change, dict(tv_weight=tv_weight))


for _f in (sart, sirt, cgls, osem, asd_pocs, pdhg_tv):
    _f.__doc__ += _COMMON_DOC


def _unflattened(v, shape):
    """A flat vector (n,) or column (n, 1), as SciPy hands them, of ``shape``'s size, as an array of ``shape``: a vector
    of another length gave NumPy's "cannot reshape" ValueError, a string NumPy's own."""
    array = _real_array(v, "v", (1, 2), (2 ** 62, 2 ** 62))
    count = int(_np.prod(shape))
    if array.size != count or (array.ndim == 2 and array.shape[1] != 1):
        raise InputError(f"v: shape: expected a flat vector of {count} values (or a column of them) for {tuple(shape)}, "
                         f"found {array.shape}")
    return array.reshape(shape)


class Operator:
    """The projector pair of one backend over a geometry and a volume grid, kept between calls (its device buffers
    made once): ``A.forward(x)`` projects a (z, y, x) volume to (views, v, u) line integrals, ``A.back(y)`` is B,
    ``A.T`` the pair swapped. ``projector="matched"`` makes B = A^T exactly. Usable with SciPy:
    ``A.as_linear_operator()`` (or ``scipy.sparse.linalg.aslinearoperator(A)``), whose matvec and rmatvec take
    flat vectors, for lsqr, cg or your own methods.

    geometry: a ``Geometry`` with a detector layout (``with_detector`` for an RTK file); size, spacing, origin:
    the volume grid as in ``fdk``; backend: a name of ``projectors()``; gpu, threads, step: as in ``project``.
    """

    def __init__(self, geometry, size, spacing=1.0, origin=None, backend="cpu", projector="interpolating", gpu=0, threads=0, step=None):
        if not isinstance(geometry, Geometry):
            raise UsageError(f"geometry: expected a glrecon.Geometry, found {type(geometry).__name__}")
        size = _triple(size, "size", _voxels)
        voxel = _triple(spacing, "spacing")
        origin = None if origin is None else _triple(origin, "origin")
        self._core = _glrecon._Operator(geometry._core, size, voxel, origin, _text(backend, "backend"), _text(projector, "projector"),
                                        _whole(gpu, "gpu", "gpu"), _whole(threads, "threads", "threads"), _step(step))
        self._transposed = False
        self.volume_shape = tuple(self._core.volume_shape)
        self.projection_shape = tuple(self._core.projection_shape)
        self.dtype = _np.dtype(_np.float32)

    @property
    def shape(self):
        """(rows, columns) of the matrix A: (views * v * u, z * y * x); swapped for ``.T``."""
        m, n = int(_np.prod(self.projection_shape)), int(_np.prod(self.volume_shape))
        return (n, m) if self._transposed else (m, n)

    @property
    def T(self):
        t = Operator.__new__(Operator)
        t.__dict__.update(self.__dict__)
        t._transposed = not self._transposed
        return t

    def forward(self, volume):
        """A x: (views, v, u) float32; for ``.T``, B y."""
        if self._transposed:
            return self._back(volume)
        return self._core.forward(_float_array(volume, "volume", (3,), _VOLUME_AXES))

    def back(self, projections):
        """B y: (z, y, x) float32 (A^T y with the matched pair); for ``.T``, A x."""
        if self._transposed:
            return self._core.forward(_float_array(projections, "volume", (3,), _VOLUME_AXES))
        return self._back(projections)

    def _back(self, projections):
        return self._core.back(_float_array(projections, "projections", (3,), _PROJECTION_AXES))

    __call__ = forward

    def matvec(self, v):
        shape = self.projection_shape if self._transposed else self.volume_shape
        return self.forward(_unflattened(v, shape)).reshape(-1)

    def rmatvec(self, v):
        shape = self.volume_shape if self._transposed else self.projection_shape
        return self.back(_unflattened(v, shape)).reshape(-1)

    def as_linear_operator(self):
        """A ``scipy.sparse.linalg.LinearOperator`` (SciPy must be installed)."""
        from scipy.sparse.linalg import LinearOperator
        return LinearOperator(self.shape, matvec=self.matvec, rmatvec=self.rmatvec, dtype=_np.float32)

    def __repr__(self):
        kind = "A^T" if self._transposed else "A"
        return f"glrecon.Operator({kind}: volume {self.volume_shape}, projections {self.projection_shape}, {self._core.description})"


def projectors():
    """Projector backends of ``project`` and the iterative methods: cpu, graphics, compute, and cuda where built."""
    return list(_glrecon.projectors())


def backends():
    """Backend names this build knows: cpu, graphics, graphics-mp, compute, and cuda where it was built.
    (A GPU backend may still fail with GlError where no OpenGL 4.5 device exists.)"""
    return list(_glrecon.backends())


from . import phantom  # noqa: E402  (uses the names above)
