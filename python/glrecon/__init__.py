"""glrecon from Python: cone-beam CT reconstruction (FDK, SART, SIRT, CGLS, OS-EM) and forward projection on NumPy arrays.

Array conventions (those of ITK, RTK and SimpleITK reading a MetaImage):
  * volumes are NumPy arrays (z, y, x), float32, x varying fastest; world axes are RTK's (the gantry
    turns about y, so an axial slice is ``vol[:, j, :]``);
  * projections are (views, v, u): view index, detector row, detector column;
  * ``spacing`` and ``origin`` are given in (x, y, z) order (for projections (u, v, view)), in mm, as a
    MetaImage header states them; ``origin`` is the world position of the centre of element (0, 0, 0).

Units and orders are glrecon's everywhere (degrees for ``Geometry.circular``, detector (nu, nv), size (nx, ny, nz))
except in the converters, which take TIGRE's and ASTRA's own values: ``from_tigre(geo, angles)``,
``from_astra(proj_geom, vol_geom)``, with ``from/to_tigre_order`` and ``from/to_astra_order`` for their arrays
(glrecon/peers.py and docs/python.md draw the one picture relating the three). A ``Grid`` (size, spacing, origin)
can travel with a ``Geometry`` (``geo.with_grid``; the converters attach the peer's volume).

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

import contextlib as _contextlib
import math as _math
import numbers as _numbers
import os as _os
import tempfile as _tempfile

import numpy as _np

from . import _glrecon

__version__ = _glrecon.__version__
from ._glrecon import (CudaError, DeviceError, Error, GeometryError, GlError, InputError, UsageError,
                       read_rtk_geometry as _read_rtk_geometry)

__all__ = [
    "Error", "InputError", "GeometryError", "UsageError", "DeviceError", "GlError", "CudaError", "ImageArray", "Geometry", "Grid",
    "read_rtk_geometry", "from_astra", "from_astra_vec", "from_astra_parallel_vec", "astra_grid", "from_tigre", "to_astra_order", "from_astra_order",
    "to_tigre_order", "from_tigre_order", "read_image", "read_projections", "write_image",
    "fdk", "fbp", "project", "sart", "sirt", "cgls", "osem", "asd_pocs", "pdhg_tv", "Operator", "line_integrals", "backends", "projectors", "devices", "compare",
    "phantom",
]


class ImageArray(_np.ndarray):
    """An ndarray with ``spacing`` and ``origin``: three numbers each, in mm, in the reverse of the array's axis order
    ((x, y, z) for a (z, y, x) volume, (u, v, view) for projections), as a MetaImage header states them; ``origin`` is
    the world position of the centre of element 0. For an array of fewer than three axes the remaining numbers are
    those of the axes it was cut from (a slice ``v[k]`` keeps its z position as the third number, which
    ``write_image`` writes for its one slice).

    They follow the array, so that ``write_image`` puts a part where it was:
      * basic slicing moves ``origin`` to the new element 0 and scales ``spacing`` by the step (``v[8:]`` starts 8
        slices further; ``v[::2]`` has twice the spacing; ``v[::-1]`` a negative one, which ``write_image`` refuses:
        a MetaImage has no mirrored axes);
      * ``transpose``, ``.T``, ``swapaxes`` and ``np.moveaxis`` permute them;
      * pickling keeps them;
      * a reduction to one number (``v.max()``) is a NumPy scalar; a result of another shape than the array's
        (``v.sum(axis=0)``, indexing by arrays or masks, ``np.newaxis``) is a plain ndarray: no grid describes it.
    The numbers are checked where they are used (by the functions' own ``spacing`` and ``origin`` checks)."""

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

    def __array_wrap__(self, obj, context=None):
        if obj.ndim == 0:  # v.max(), v.sum(): a number (a 0-d ImageArray printed as one but was no float to format)
            return obj[()]
        out = super().__array_wrap__(obj, context)
        if out.shape != self.shape:  # reduced along an axis, or broadcast: this array's grid does not describe it
            return out.view(_np.ndarray)
        return out

    # ---- slicing -----------------------------------------------------------------------------------------------
    def __getitem__(self, key):
        out = super().__getitem__(key)
        if not isinstance(out, ImageArray):
            return out  # one element: a NumPy scalar
        moved = self._sliced(key)
        if moved is None:
            return out.view(_np.ndarray)
        out.spacing, out.origin = moved
        return out

    def _sliced(self, key):
        """(spacing, origin) of ``self[key]`` for basic indexing (integers, slices, Ellipsis), else None. Metadata that
        is not three numbers (anything may be assigned) is passed on unchanged, as before."""
        items = key if isinstance(key, tuple) else (key,)
        resolved = []
        for item in items:
            if item is Ellipsis or isinstance(item, slice):
                resolved.append(item)
            elif isinstance(item, (bool, _np.bool_)) or not isinstance(item, (_numbers.Integral, _np.integer)):
                return None  # arrays, lists, masks, None (new axes): no longer a grid
            else:
                resolved.append(int(item))
        if resolved.count(Ellipsis) > 1:
            return None
        if Ellipsis in resolved:
            at = resolved.index(Ellipsis)
            resolved[at:at + 1] = [slice(None)] * (self.ndim - len(resolved) + 1)
        resolved += [slice(None)] * (self.ndim - len(resolved))
        try:
            spacing, origin = list(self.spacing), list(self.origin)
            if len(spacing) != 3 or len(origin) != 3 or self.ndim > 3:
                return self.spacing, self.origin
            # Array axis i is entry ndim - 1 - i; the entries past ndim - 1 are axes cut before.
            kept, cut = [], []
            for axis, item in enumerate(resolved):
                entry = self.ndim - 1 - axis
                if isinstance(item, slice):
                    start, _, step = item.indices(self.shape[axis])
                else:
                    start, step = item + (self.shape[axis] if item < 0 else 0), 1
                s, o = spacing[entry], origin[entry]
                if start:  # untouched where the start is 0: an infinite spacing times 0 made a NaN origin
                    o = o + start * s
                if step != 1:
                    s = s * step
                (kept if isinstance(item, slice) else cut).append((s, o))
            entries = kept[::-1] + cut + list(zip(spacing, origin))[self.ndim:]
            return tuple(float(s) for s, _ in entries), tuple(float(o) for _, o in entries)
        except (TypeError, ValueError, OverflowError):
            return self.spacing, self.origin

    # ---- axes ----------------------------------------------------------------------------------------------------
    def transpose(self, *axes):
        out = super().transpose(*axes)
        if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], (_numbers.Integral, _np.integer))):
            axes = axes[0]
        order = tuple(range(self.ndim))[::-1] if axes is None or len(axes) == 0 else tuple(int(a) % max(self.ndim, 1) for a in axes)
        try:
            if len(self.spacing) == len(self.origin) == 3 and self.ndim <= 3:
                n = self.ndim
                # New axis i is old axis order[i]; entry n-1-i of the new array is entry n-1-order[i] of the old one.
                pick = [n - 1 - order[n - 1 - e] for e in range(n)] + list(range(n, 3))
                out.spacing = tuple(self.spacing[e] for e in pick)
                out.origin = tuple(self.origin[e] for e in pick)
        except TypeError:
            pass
        return out

    @property
    def T(self):
        return self.transpose()

    def swapaxes(self, axis1, axis2):
        order = list(range(self.ndim))
        a, b = int(axis1) % self.ndim, int(axis2) % self.ndim
        order[a], order[b] = order[b], order[a]
        return self.transpose(order)

    # ---- pickling ------------------------------------------------------------------------------------------------
    def __reduce__(self):
        rebuild, arguments, state = super().__reduce__()
        return rebuild, arguments, (state, self.spacing, self.origin)

    def __setstate__(self, state):
        if isinstance(state, tuple) and len(state) == 3 and isinstance(state[0], tuple):
            state, self.spacing, self.origin = state
        super().__setstate__(state)


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
    """A scan: per view the source, the centre of detector pixel (0, 0), and the steps along a
    row (u) and a column (v), in world mm (see include/glrecon/geometry.h); or, for parallel beam (``is_parallel``),
    the rays' direction in place of the source (the source at infinity).

    Make one with ``Geometry.circular(...)``, ``Geometry.parallel(...)``, ``read_rtk_geometry(path)``,
    ``Geometry.from_vectors(...)``, ``from_astra(...)``, ``from_astra_vec(...)`` or ``from_tigre(...)``. An RTK file holds no detector layout: as on
    the command line, ``fdk`` takes it from the projections' ``spacing``/``origin`` (``read_image`` gives them), or
    set it with ``with_detector``.

    ``grid``: the volume ``Grid`` that travels with the scan (None unless set by ``with_grid`` or a converter that
    read one: ``from_tigre`` with nVoxel, ``from_astra`` with a vol_geom). Every function that takes ``size``,
    ``spacing``, ``origin`` uses it when none of them is given.
    """

    def __init__(self, core, grid=None):
        self._core = core
        if grid is not None and not isinstance(grid, Grid):
            raise TypeError(f"grid: expected a glrecon.Grid or None, found {type(grid).__name__}")
        self.grid = grid

    def with_grid(self, grid):
        """This scan with ``grid`` (a ``Grid``, or None for none) travelling with it."""
        return Geometry(self._core, grid)

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
    def parallel(cls, projections=180, detector=(256, 256), pixel=(1.0, 1.0), first_angle=0.0, arc=180.0,
                 detector_offset=(0.0, 0.0)):
        """A circular parallel-beam scan (ASTRA's ``parallel3d``): ``projections`` views over ``arc`` degrees from
        ``first_angle`` (the default, 180 degrees, is ASTRA's [0, pi) sampling: a complete scan), ``detector`` =
        (nu, nv) pixels of ``pixel`` = (su, sv) mm, its centre on the rotation axis plus ``detector_offset`` (u, v) mm.
        At gantry angle a the rays run along Ry(a) (0, 0, -1) (as a cone's central ray), u along Ry(a) (1, 0, 0), v
        along y. It is RTK's parallel geometry (SourceToDetectorDistance 0, SourceToIsocenterDistance 1000): ``write_rtk``
        writes a file ``glrecon fdk`` reconstructs by FBP."""
        return cls(_glrecon.Geometry._parallel(
            _whole(projections, "projections", "projections"),
            _several(detector, "detector", 2, lambda d, name: _whole(d, name, "detector")), _reals(pixel, "pixel", 2),
            _number(first_angle, "first_angle", "firstAngle"), _number(arc, "arc", "arc"),
            _reals(detector_offset, "detector_offset", 2, False)))

    @classmethod
    def from_vectors(cls, vectors, detector, parallel=False):
        """Views given as rows of 12 numbers, glrecon's own form: source (3), centre of pixel (0, 0) (3),
        u step (3), v step (3), world mm; ``detector`` = (nu, nv). With ``parallel=True`` the first three numbers are
        the rays' direction (towards the detector; the source at infinity): parallel beam."""
        rows = _real_array(vectors, "vectors", (2,), (1000000, 12))
        # Aligned as well as C-contiguous: pybind11 takes an array at an odd address as it is, and reading its doubles
        # there is undefined behaviour (UBSan: "reference binding to misaligned address").
        return cls(_glrecon.Geometry._from_vectors(_np.require(rows, _np.float64, ["C", "A"]),
                                                   _several(detector, "detector", 2, _detector_pixels, False),
                                                   _bool(parallel, "parallel")))

    def with_detector(self, detector, pixel, origin=None):
        """This RTK geometry on a detector of ``detector`` = (nu, nv) pixels of ``pixel`` = (su, sv) mm, its
        pixel (0, 0) at ``origin`` = (u, v) detector mm (default: centred), as a projection header gives it."""
        return Geometry(self._core._with_detector(_several(detector, "detector", 2, _detector_pixels), _reals(pixel, "pixel", 2),
                                                  None if origin is None else _reals(origin, "origin", 2, False)), self.grid)

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
        """True where the scan has RTK's circular parameters (``circular``, ``parallel``, ``read_rtk_geometry``)."""
        return self._core.is_circular

    @property
    def is_parallel(self):
        """True for a parallel-beam scan (``Geometry.parallel``, ``from_vectors(..., parallel=True)``, ASTRA's
        parallel3d, parallel3d_vec, 2-D parallel, an RTK file with SourceToDetectorDistance 0)."""
        return self._core.is_parallel

    @property
    def gantry_angles(self):
        """RTK gantry angles in degrees (circular geometries)."""
        return _np.array(self._core.gantry_angles)

    @property
    def vectors(self):
        """(views, 12) float64: source (parallel beam: the rays' direction), centre of pixel (0, 0), u step, v step
        (world mm)."""
        return self._core._vectors()

    def write_rtk(self, path, overwrite=False):
        """Writes RTK's geometry XML (circular geometries only: ``circular``, ``parallel``, ``read_rtk_geometry``),
        atomically; parallel beam as RTK writes it (no SourceToDetectorDistance: RTK's 0)."""
        self._core._write_rtk(_path(path, "path"), _bool(overwrite, "overwrite"))

    def __repr__(self):
        kind = ("circular" if self.is_circular else "vectors") + (", parallel beam" if self.is_parallel else "")
        grid = "" if self.grid is None else f", grid={self.grid!r}"
        return f"glrecon.Geometry({len(self)} views, {kind}, detector={self.detector}, pixel={self.pixel}{grid})"


class Grid:
    """A volume grid, ITK's way: ``size`` (nx, ny, nz) voxels, ``spacing`` (x, y, z) mm per voxel, ``origin`` the
    world position (x, y, z) in mm of the centre of voxel (0, 0, 0) (None: the grid centred on the world origin).
    The volume on it is the NumPy array ``grid.shape`` = (nz, ny, nx).

    Give it where a function takes ``size``: ``fdk(p, geo, size=grid)``, ``Operator(geo, grid)``, ``project(v, geo,
    grid=grid)``; or let it travel with the scan, ``geo.with_grid(grid)`` (``from_tigre`` and ``from_astra`` attach
    the peer's volume), and leave size, spacing and origin out. Values are checked where the grid is used, as the
    functions' own size, spacing and origin are."""

    def __init__(self, size, spacing=1.0, origin=None):
        self.size = _triple(size, "size", _voxels)
        self.spacing = _triple(spacing, "spacing")
        self._given_origin = None if origin is None else _triple(origin, "origin")
        self.origin = self._given_origin or tuple(-0.5 * (n - 1) * s for n, s in zip(self.size, self.spacing))

    @property
    def shape(self):
        """(nz, ny, nx): the NumPy shape of a volume on this grid."""
        return self.size[::-1]

    def zeros(self):
        """A float32 ``ImageArray`` of zeros on this grid."""
        return ImageArray(_np.zeros(self.shape, _np.float32), self.spacing, self.origin)

    def __eq__(self, other):
        return isinstance(other, Grid) and (self.size, self.spacing, self.origin) == (other.size, other.spacing, other.origin)

    def __repr__(self):
        return f"glrecon.Grid(size={self.size}, spacing={self.spacing}, origin={self.origin})"


def _grid_arguments(geometry, size, spacing, origin, required=False):
    """(size, spacing, origin or None) of a volume: a ``Grid`` given as ``size``; else the values given; else, where
    none of them is given, the geometry's ``grid``; else the defaults (256 voxels of 1 mm, centred)."""
    if isinstance(size, Grid):
        if spacing is not None or origin is not None:
            raise UsageError(f"spacing, origin: expected none beside size=Grid (the grid holds them), found "
                             f"{_shown(spacing)}, {_shown(origin)}")
        return size.size, size.spacing, size._given_origin  # None: centred by the library, as without a grid
    if size is None and spacing is None and origin is None and geometry.grid is not None:
        g = geometry.grid
        return g.size, g.spacing, g._given_origin
    if size is None and required:
        raise UsageError("size: expected the volume's voxels (N, (nx, ny, nz) or a glrecon.Grid), or a geometry with a grid "
                         "(geometry.with_grid), found neither")
    size = _triple(256 if size is None else size, "size", _voxels)
    voxel = _triple(1.0 if spacing is None else spacing, "spacing")
    return size, voxel, None if origin is None else _triple(origin, "origin")


def _detector_pixels(value, name):
    return _whole(value, name, "detector")


def read_rtk_geometry(path):
    """RTK's geometry XML (RTKThreeDCircularGeometry); the detector layout comes from the projections. A file with
    SourceToDetectorDistance 0 (or none) is RTK's parallel geometry: ``is_parallel``, reconstructed by ``fbp``."""
    return Geometry(_read_rtk_geometry(_path(path, "path")))


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


@_contextlib.contextmanager
def _roi(roi, size, spacing, origin):
    """``roi`` as the library's region spec: a string (or path) as it is; a NumPy mask (z, y, x) on the grid (bool,
    or 0 and 1) as a binary MetaImage in a temporary directory (the library's mask file, read and checked as
    ``--roi MASK.mha`` is: the same region, and for fdk the same speed-up), removed after the call."""
    if roi is None:
        roi = ""
    if isinstance(roi, (str, bytes)):
        yield _text(roi, "roi")
        return
    if isinstance(roi, _os.PathLike):
        yield _path(roi, "roi")
        return
    mask = _real_array(roi, "roi", (3,), _VOLUME_AXES)
    shape = tuple(size[::-1])
    if mask.shape != shape:
        raise InputError(f"roi: shape: expected the grid's (z, y, x) = {shape}, found {mask.shape}")
    outside = _np.flatnonzero((mask != 0) & (mask != 1))
    if outside.size:
        index = tuple(int(i) for i in _np.unravel_index(outside[0], mask.shape))
        raise InputError(f"roi: values: expected 0 and 1 (or bool), found {_shown(mask[index])} at (z, y, x) = {index}")
    if origin is None:
        origin = tuple(-0.5 * (n - 1) * s for n, s in zip(size, spacing))
    with _tempfile.TemporaryDirectory(prefix="glrecon-roi-") as directory:
        path = _os.path.join(directory, "roi-mask.mha")
        header = ("ObjectType = Image\nNDims = 3\nBinaryData = True\nBinaryDataByteOrderMSB = False\n"
                  f"ElementSpacing = {' '.join(repr(float(s)) for s in spacing)}\n"
                  f"Offset = {' '.join(repr(float(o)) for o in origin)}\n"
                  f"DimSize = {' '.join(str(n) for n in size)}\nElementType = MET_UCHAR\nElementDataFile = LOCAL\n")
        with open(path, "wb") as f:
            f.write(header.encode("ascii"))
            f.write(_np.ascontiguousarray(mask, dtype=_np.uint8).tobytes())
        yield _os.fsencode(path)


def _filter_name(name):
    """A ramp window's name as the library spells it: TIGRE's "ram_lak", "shepp_logan" and ASTRA's "Ram-Lak" are
    glrecon's "ram-lak", "shepp-logan" (case, '_' and ' ' do not matter)."""
    if isinstance(name, str):
        name = name.strip().lower().replace("_", "-").replace(" ", "-")
    return _text(name, "filter")


def fdk(projections, geometry, size=None, spacing=None, origin=None, backend="auto", window="auto", filter="ram-lak",
        cutoff=1.0, short_scan=True, threads=0, batch=32, gpu=0, roi="", progress=None, report=None):
    """FDK reconstruction; returns the volume as float32 ``ImageArray`` (z, y, x) in the phantom's density units.

    projections: (views, v, u) line integrals. Read in place when C-contiguous float32 (no copy of the stack);
        any other dtype or layout is converted once first. Its ``spacing``/``origin`` (an ``ImageArray``) give
        the detector layout for an RTK geometry, as on the command line.
    geometry: a ``Geometry`` with as many views as projections.
    size, spacing, origin: the volume grid: N or (nx, ny, nz) voxels, mm per voxel (one or three), world
        position of voxel (0, 0, 0) (default: centred on the world origin); or ``size=Grid``. None of them given:
        the geometry's ``grid`` where it has one, else 256 voxels of 1 mm.
    backend: cpu, graphics, graphics-mp, compute, cuda (where built) or auto (the backend measured to finish
        first on this GPU, as ``glrecon fdk --backend auto``; ``report["auto"]`` says why); window: projections per GPU
        pass, a number, "auto" or "max"; filter: ram-lak, shepp-logan, cosine, hamming, hann, with ``cutoff``
        (TIGRE's "ram_lak", "shepp_logan", ASTRA's FilterType "Ram-Lak" are these names too).
    roi: as ``--roi`` (fov, cylinder:..., a mask file) or a NumPy mask (z, y, x) on the grid: zeros outside.
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
    size, voxel, origin = _grid_arguments(geometry, size, spacing, origin)
    info = _report(report)
    callback = progress if callable(progress) else None
    layout = _layout(projections)
    with _roi(roi, size, voxel, origin) as region:
        vol = _glrecon._fdk(_float_array(projections, "projections", (3,), _PROJECTION_AXES), *layout, geometry._core, size, voxel,
                            origin, _text(backend, "backend"), _window(window), _filter_name(filter), _number(cutoff, "cutoff", "cutoff"),
                            _bool(short_scan, "short_scan"), _whole(threads, "threads", "threads"), _whole(batch, "batch", "batch"),
                            _whole(gpu, "gpu", "gpu"), region, callback, progress is True, info)
    if origin is None:
        origin = tuple(-0.5 * (n - 1) * s for n, s in zip(size, voxel))
    return ImageArray(vol, voxel, origin)


def fbp(projections, geometry, size=None, spacing=None, origin=None, backend="auto", window="auto", filter="ram-lak",
        cutoff=1.0, short_scan=True, threads=0, batch=32, gpu=0, roi="", progress=None, report=None):
    """Filtered backprojection (ASTRA's FBP / FBP_CUDA): ``fdk`` by its parallel-beam name, with the same arguments.

    On a parallel-beam geometry (``Geometry.parallel``, ``from_astra`` of parallel3d, parallel3d_vec or 2-D parallel)
    the filter is the ramp alone (no cone weights); the views' angles count on a circle of 180 degrees, so ASTRA's
    [0, pi) sampling is a complete scan, a whole turn is taken as twice each line, and a scan short of 180 degrees is
    refused unless ``short_scan=False`` (then a limited-angle reconstruction). On a cone-beam geometry this is FDK. A
    2-D slice is a volume one voxel thick (``from_astra`` of 2-D geometries gives it)."""
    return fdk(projections, geometry, size=size, spacing=spacing, origin=origin, backend=backend, window=window, filter=filter,
               cutoff=cutoff, short_scan=short_scan, threads=threads, batch=batch, gpu=gpu, roi=roi, progress=progress,
               report=report)


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


def _volume_grid(array, shape, spacing, origin, grid=None):
    """A volume array's grid: ``spacing``/``origin`` given, else the array's own (an ``ImageArray``), else ``grid`` (the
    geometry's or the one given), else 1 mm and centred."""
    if grid is not None and spacing is None and origin is None and not isinstance(array, ImageArray):
        if tuple(grid.shape) != tuple(shape):
            raise InputError(f"volume: shape: expected {grid.shape} (z, y, x), the grid's {grid!r}, found {tuple(shape)}")
        return grid.spacing, grid.origin
    if spacing is None:
        spacing = getattr(array, "spacing", None)
    if spacing is None:
        spacing = grid.spacing if grid is not None and tuple(grid.shape) == tuple(shape) else (1.0, 1.0, 1.0)
    spacing = _triple(spacing, "spacing")
    if origin is None:
        origin = getattr(array, "origin", None)
    if origin is None:
        origin = tuple(-0.5 * (n - 1) * s for n, s in zip(shape[::-1], spacing))
    return spacing, _triple(origin, "origin")


def project(volume, geometry, backend="cpu", step=None, gpu=0, threads=0, spacing=None, origin=None, grid=None, progress=None):
    """Forward projection A (line integrals), as ``glrecon project``: returns float32 ``ImageArray`` (views, v, u)
    with the detector's ``spacing`` (su, sv, 1) and ``origin`` (u, v, 0) as the command line writes them.

    volume: (z, y, x) densities; read in place when C-contiguous float32, else converted once. Its grid is
        ``spacing``/``origin`` ((x, y, z), mm) where given, else the array's own (an ``ImageArray``), else ``grid``
        (a ``Grid``) or the geometry's ``grid``, else 1 mm centred.
    geometry: a ``Geometry`` with a detector (``Geometry.circular``, ``from_vectors``, or an RTK file's
        ``with_detector((nu, nv), (su, sv))``; ``glrecon project --detector``/``--detector-spacing`` centre it).
    backend: a name of ``projectors()`` (cpu, graphics, compute, cuda where built); step: ray-marching step in
        mm (None: one sample per voxel plane, Joseph's); threads: cpu threads (0: all); gpu: device index.
    progress: None, True (a line on stderr per step) or ``progress(done, total)`` called between groups of views
        with the GIL held; an exception in it, or Ctrl-C, stops the projection and propagates.

    The ray-driven projector of include/glrecon/operator.h (one sample per voxel plane, or trilinear samples every ``step``)."""
    if not isinstance(geometry, Geometry):
        raise UsageError(f"geometry: expected a glrecon.Geometry, found {type(geometry).__name__}")
    if grid is not None and not isinstance(grid, Grid):
        raise TypeError(f"grid: expected a glrecon.Grid, found {type(grid).__name__}")
    array = _float_array(volume, "volume", (3,), _VOLUME_AXES)
    spacing, origin = _volume_grid(volume, array.shape, spacing, origin, grid if grid is not None else geometry.grid)
    callback = progress if callable(progress) else None
    out, s, o = _glrecon._project(array, spacing, origin, geometry._core, _text(backend, "backend"), _step(step), _whole(gpu, "gpu", "gpu"),
                                  _whole(threads, "threads", "threads"), callback, progress is True)
    return ImageArray(out, s, o)


# The TV parameters' defaults (the library's IterativeOptions): asd_pocs and pdhg_tv pass those they take.
_TV_DEFAULTS = {"tv_steps": 20, "tv_alpha": 0.002, "tv_reduction": 0.95, "tv_ratio": 0.95, "lambda_reduction": 0.99, "tv_weight": 0.001}


def _devices(gpu, backend):
    """The iterative methods' ``gpu``: one device index, a sequence of them, or "all" (every CUDA device), as the
    command line's ``--gpu 0``, ``--gpu 0,1`` and ``--gpu all``."""
    if isinstance(gpu, str):
        if gpu != "all":
            raise UsageError(f"gpu: expected a device index, a list of them or \"all\", found {_shown(gpu)}")
        if backend != "cuda":
            raise UsageError(f"gpu: \"all\" names the CUDA devices (backend=\"cuda\"), found backend {_shown(backend)}")
        count = _glrecon._cuda_devices()
        if count < 1:
            raise UsageError("gpu: \"all\" found no CUDA device")
        return list(range(count))
    if isinstance(gpu, (_numbers.Number, _np.ndarray)) and _np.ndim(gpu) == 0:
        return [_whole(gpu, "gpu", "gpu")]
    try:
        devices = [_whole(d, "gpu", "gpu") for d in gpu]
    except TypeError:
        raise TypeError(f"gpu: expected a device index, a list of them or \"all\", found {type(gpu).__name__}") from None
    if not devices:
        raise UsageError("gpu: expected at least one device index, found an empty list")
    return devices


def _iterative(method, projections, geometry, size, spacing, origin, iterations, subsets, lamb, positivity, initial, roi,
               backend, gpu, threads, step, progress, report, projector="interpolating", stop_residual=0.0, stop_change=0.0,
               tv=None, order=("interleaved", 0), slabs=None):
    tv = {**_TV_DEFAULTS, **(tv or {})}
    if not isinstance(geometry, Geometry):
        raise UsageError(f"geometry: expected a glrecon.Geometry, found {type(geometry).__name__}")
    size, voxel, origin = _grid_arguments(geometry, size, spacing, origin)
    init = None if initial is None else _float_array(initial, "initial", (2, 3), _VOLUME_AXES)
    init_spacing = getattr(initial, "spacing", None)
    init_origin = getattr(initial, "origin", None)
    info = _report(report)
    callback = progress if callable(progress) else None
    layout = _layout(projections)
    with _roi(roi, size, voxel, origin) as region:
        vol = _glrecon._iterative(method, _float_array(projections, "projections", (3,), _PROJECTION_AXES), *layout,
                                  geometry._core, size, voxel, origin, _whole(iterations, "iterations"),
                                  _whole(subsets, "subsets"), _number(lamb, "lamb"), _bool(positivity, "positivity"), init,
                                  None if init_spacing is None else _triple(init_spacing, "initial.spacing"),
                                  None if init_origin is None else _triple(init_origin, "initial.origin"), region,
                                  _text(backend, "backend"), _devices(gpu, backend),
                                  0 if slabs is None else _whole(slabs, "slabs", None, 1, 1 << 20), _whole(threads, "threads", "threads"), _step(step),
                                  _text(projector, "projector"), _number(stop_residual, "stop_residual", "stopResidual"),
                                  _number(stop_change, "stop_change", "stopChange"), _whole(tv["tv_steps"], "tv_steps", "tvSteps"),
                                  _number(tv["tv_alpha"], "tv_alpha", "tvAlpha"), _number(tv["tv_reduction"], "tv_reduction", "tvReduction"),
                                  _number(tv["tv_ratio"], "tv_ratio", "tvRatio"),
                                  _number(tv["lambda_reduction"], "lambda_reduction", "lambdaReduction"),
                                  _number(tv["tv_weight"], "tv_weight", "tvWeight"), order[0], order[1], callback,
                                  progress is True, info)
    if origin is None:
        origin = tuple(-0.5 * (n - 1) * s for n, s in zip(size, voxel))
    return ImageArray(vol, voxel, origin)


def _relaxation(lamb, relaxation, lmbda=None):
    """The relaxation from ``lamb`` or its other names: ``relaxation``, TIGRE's ``lmbda``; one of them."""
    given = {name: value for name, value in (("lamb", lamb), ("relaxation", relaxation), ("lmbda", lmbda)) if value is not None}
    if len(set(map(repr, given.values()))) > 1:
        raise UsageError(f"{', '.join(given)}: give one of them (they are one parameter), found "
                         f"{', '.join(repr(v) for v in given.values())}")
    return next(iter(given.values()), 0.0)


# TIGRE's OrderStrategy values and glrecon's orders (the library's SubsetOrder; --order on the command line):
# "angularDistance" is glrecon's interleaved order in aim (view i in subset i mod S, subsets visited in bit-reversed
# order, so consecutive subsets are far apart in angle; TIGRE's greedy angle sort itself is not reproduced);
# "ordered" is blocks of consecutive views in view order; "random" those blocks visited in an order shuffled by
# ``order_seed`` (TIGRE's is unseeded). glrecon's own names are taken too.
_ORDER_STRATEGIES = {"angularDistance": "interleaved", "interleaved": "interleaved", "ordered": "ordered", "random": "random"}


def _order(order_strategy, order_seed):
    """(glrecon's order name, seed) from TIGRE's ``OrderStrategy`` (None: interleaved) and ``order_seed`` (None: 0;
    only with "random")."""
    if order_strategy is None:
        order_strategy = "angularDistance"
    if not isinstance(order_strategy, str) or order_strategy not in _ORDER_STRATEGIES:
        raise UsageError(f"OrderStrategy: expected 'angularDistance', 'ordered' or 'random' (or glrecon's 'interleaved'), "
                         f"found {_shown(order_strategy)!r}")
    order = _ORDER_STRATEGIES[order_strategy]
    if order_seed is None:
        return order, 0
    if order != "random":
        raise UsageError(f"order_seed: only with OrderStrategy='random', found OrderStrategy={order_strategy!r}")
    return order, _whole(order_seed, "order_seed", None, 0, 2**64 - 1)


def _subsets(subsets, blocksize, projections):
    """The number of subsets from ``subsets`` or TIGRE's ``blocksize`` (views per subset: subsets = ceil(views /
    blocksize)); None: the method's default."""
    if blocksize is None:
        return 0 if subsets is None else subsets
    if subsets is not None:
        raise UsageError(f"subsets, blocksize: give one of them (blocksize is TIGRE's views per subset), found {subsets!r} "
                         f"and {blocksize!r}")
    views = _np.shape(projections)[0] if _np.ndim(projections) == 3 else 1
    size = _whole(blocksize, "blocksize", None, 1)
    return -(-views // size)


_COMMON_DOC = """
    projections: (views, v, u) line integrals (converted once to float32 if they are not; copied once, as the
        C++ methods take an Image). Their ``spacing``/``origin`` (an ``ImageArray``) give the detector layout
        for an RTK geometry, as on the command line; geometry: a ``Geometry`` with as many views.
    size, spacing, origin: the volume grid: N or (nx, ny, nz) voxels, mm per voxel (one or three), world
        position of voxel (0, 0, 0) (default: centred on the world origin); or ``size=Grid``. None of them given:
        the geometry's ``grid`` where it has one, else 256 voxels of 1 mm.
    iterations: passes over all projections (at least 1) (TIGRE's ``niter``).
    initial: a starting volume (z, y, x) on the grid (its ``spacing``/``origin``, if an ``ImageArray``, must be
        the grid's), e.g. an ``fdk`` result; default 0 (osem: a positive constant).
    roi: "" (the whole volume), fov, fov-cylinder, cylinder:..., box:..., sphere:..., a mask file, as ``--roi``, or
        a NumPy mask (z, y, x) on the grid (bool, or 0 and 1): voxels outside stay as ``initial`` has them.
    backend: a name of ``projectors()``; gpu: device index; threads: cpu threads (0: all); step: ray-marching
        step in mm (None: one sample per voxel plane, Joseph's).
    gpu, slabs: several devices and slabs (cpu and cuda), as ``--gpu 0,1`` and ``--slabs N``: ``gpu`` a list of
        device indices or "all" (cuda), ``slabs`` the number of slabs of y rows the volume is held in (None: one per
        device), each its own operator on the devices in turn; their projections summed in slab order (on cuda on
        the GPUs), so the result equals ``glrecon sirt ... --slabs N`` bit for bit on cpu.
    projector: "interpolating" (fast; B close to A^T), "matched" (B = A^T exactly) or "distance-driven" (B = A^T,
        modelling the pixels' and voxels' size; a gantry about y), as ``--projector``.
    stop_residual, stop_change: stopping rules (0: off), as ``--stop-residual`` / ``--stop-change``: stop once the
        residual is at most that fraction of ||b||, or once an iteration lowered it by less than that fraction of it.
    progress: None, True (the command line's line per iteration on stderr) or ``progress(iteration, iterations)``
        called after each iteration with the GIL held; an exception in it (or Ctrl-C) stops and propagates.
    report: a dict to fill: backend, residuals (||b - A x|| per iteration), final_residual, data_norm, subsets,
        lambda, seconds, setup_seconds, restarts (cgls), stop_reason and warning ("" where none).

    Returns float32 ``ImageArray`` (z, y, x); on the cpu backend it equals the command line's output bit for bit.
    Errors carry the command line's messages (option names as there: ``--iterations`` etc.)."""


def sart(projections, geometry, size=None, spacing=None, origin=None, iterations=10, subsets=None, lamb=None, positivity=True,
         initial=None, roi="", backend="cpu", gpu=0, threads=0, step=None, progress=None, report=None, relaxation=None,
         projector="interpolating", stop_residual=0.0, stop_change=0.0, lmbda=None, blocksize=None, OrderStrategy=None,
         order_seed=None, slabs=None):
    """SART / OS-SART, as ``glrecon sart``: x += lambda (B_S 1)^-1 B_S [(b_S - A_S x) / (A_S 1)] per ordered subset.

    subsets: 1 to the number of views (None: one view per subset; 1 is SIRT), or TIGRE's ``blocksize`` (views per
        subset: subsets = ceil(views / blocksize)); lamb (or ``relaxation``, TIGRE's ``lmbda``): in (0, 2) (None:
        0.8 with one view per subset, else 1); positivity: clamp negative voxels after every update (TIGRE's
        ``nonneg``, on by default there and here); TIGRE's sart is blocksize=1, os_sart blocksize=N, sirt ``sirt``.
    OrderStrategy (TIGRE's, as ``--order``): how views form subsets and the order they are visited in, the same in
        every iteration. None or "angularDistance": glrecon's interleaved order (view i in subset i mod S, subsets
        visited in bit-reversed order, so consecutive ones are far apart in angle: TIGRE's aim, not its greedy
        sort); "ordered": S blocks of consecutive views in view order (the first views mod S one view longer, where
        TIGRE puts the remainder in a shorter last block); "random": those blocks in an order shuffled once by
        ``order_seed`` (None: 0; the same seed, the same order; TIGRE's shuffle is unseeded). "interleaved" is
        taken too. order_seed: a whole number from 0 to 2**64 - 1, only with "random".
    """
    return _iterative("sart", projections, geometry, size, spacing, origin, iterations,
                      _subsets(subsets, blocksize, projections), _relaxation(lamb, relaxation, lmbda), positivity,
                      initial, roi, backend, gpu, threads, step, progress, report, projector, stop_residual, stop_change,
                      order=_order(OrderStrategy, order_seed), slabs=slabs)


def sirt(projections, geometry, size=None, spacing=None, origin=None, iterations=10, lamb=None, positivity=True, initial=None, roi="",
         backend="cpu", gpu=0, threads=0, step=None, progress=None, report=None, relaxation=None, projector="interpolating",
         stop_residual=0.0, stop_change=0.0, lmbda=None, slabs=None):
    """SIRT, as ``glrecon sirt``: SART with one subset holding every view; lamb (or ``relaxation``, TIGRE's
    ``lmbda``) in (0, 2) (None: 1); positivity: clamp negative voxels after every update (on by default).
    """
    return _iterative("sirt", projections, geometry, size, spacing, origin, iterations, 0, _relaxation(lamb, relaxation, lmbda), positivity,
                      initial, roi, backend, gpu, threads, step, progress, report, projector, stop_residual, stop_change, slabs=slabs)


def cgls(projections, geometry, size=None, spacing=None, origin=None, iterations=10, initial=None, roi="", backend="cpu", gpu=0,
         threads=0, step=None, progress=None, report=None, projector="interpolating", stop_residual=0.0, stop_change=0.0, slabs=None):
    """CGLS, as ``glrecon cgls``: conjugate gradients on the normal equations B A x = B b (no relaxation, no
    positivity: clamping would break the conjugate directions). Steps by exact line search, so the residual never
    rises even with the interpolating pair; ``projector="matched"`` makes it CGLS proper.
    """
    return _iterative("cgls", projections, geometry, size, spacing, origin, iterations, 0, 0.0, False, initial, roi, backend, gpu,
                      threads, step, progress, report, projector, stop_residual, stop_change, slabs=slabs)


def osem(projections, geometry, size=None, spacing=None, origin=None, iterations=10, subsets=None, positivity=False, initial=None,
         roi="", backend="cpu", gpu=0, threads=0, step=None, progress=None, report=None, projector="interpolating",
         stop_residual=0.0, stop_change=0.0, blocksize=None, OrderStrategy=None, order_seed=None, slabs=None):
    """OS-EM / MLEM, as ``glrecon osem``: x *= (B_S 1)^-1 B_S [b_S / (A_S x)]; the data must be finite and
    non-negative with some positive value. subsets: 1 to the number of views (None: 8, or fewer views; 1 is MLEM),
    or TIGRE's ``blocksize`` (views per subset); ``OrderStrategy`` and ``order_seed`` as in ``sart``.
    """
    return _iterative("osem", projections, geometry, size, spacing, origin, iterations, _subsets(subsets, blocksize, projections), 0.0,
                      positivity, initial, roi, backend, gpu, threads, step, progress, report, projector, stop_residual, stop_change,
                      order=_order(OrderStrategy, order_seed), slabs=slabs)


def asd_pocs(projections, geometry, size=None, spacing=None, origin=None, iterations=10, subsets=None, lamb=None, initial=None, roi="",
             backend="cpu", gpu=0, threads=0, step=None, progress=None, report=None, projector="interpolating", stop_residual=0.0,
             stop_change=0.0, tv_steps=20, tv_alpha=0.002, tv_reduction=0.95, tv_ratio=0.95, lambda_reduction=0.99, lmbda=None,
             blocksize=None, OrderStrategy=None, order_seed=None, slabs=None):
    """ASD-POCS (Sidky & Pan 2008), as ``glrecon asd-pocs``: per iteration a SART sweep with x >= 0, then
    ``tv_steps`` steps of steepest descent on the total variation; the TV step starts at ``tv_alpha`` times the
    sweep's change and shrinks by ``tv_reduction`` whenever TV moved the volume more than ``tv_ratio`` times it;
    lamb shrinks by ``lambda_reduction`` per iteration (TIGRE's defaults). For few views.

    TIGRE's asd_pocs keywords: ``lmbda`` is lamb, ``lmbda_red`` lambda_reduction, ``tviter`` tv_steps, ``alpha``
    tv_alpha, ``alpha_red`` tv_reduction, ``rmax`` tv_ratio, ``blocksize`` views per subset (subsets), and
    ``OrderStrategy`` (and ``order_seed``) as in ``sart``.
    """
    return _iterative("asd-pocs", projections, geometry, size, spacing, origin, iterations,
                      _subsets(subsets, blocksize, projections), _relaxation(lamb, None, lmbda), True, initial, roi, backend, gpu, threads, step, progress, report, projector, stop_residual,
                      stop_change, dict(tv_steps=tv_steps, tv_alpha=tv_alpha, tv_reduction=tv_reduction, tv_ratio=tv_ratio,
                                        lambda_reduction=lambda_reduction), _order(OrderStrategy, order_seed), slabs=slabs)


def pdhg_tv(projections, geometry, size=None, spacing=None, origin=None, iterations=300, tv_weight=0.001, initial=None, roi="",
            backend="cpu", gpu=0, threads=0, step=None, progress=None, report=None, projector="matched", stop_residual=0.0,
            stop_change=0.0, slabs=None):
    """PDHG-TV, as ``glrecon pdhg-tv``: min 1/2 |A x - b|^2 + lambda TV(x) over x >= 0 by Chambolle & Pock's
    primal-dual algorithm with diagonal preconditioning (one forward and one back projection per iteration, no step
    to tune). ``tv_weight`` is unitless (lambda = tv_weight times the data's density scale times |A|^2): higher is
    smoother, 0 is least squares with x >= 0. The convergence guarantee holds for ``projector="matched"`` (the
    default here). The residual may rise on the way (the objective holds TV too). For few views and noise.
    """
    return _iterative("pdhg-tv", projections, geometry, size, spacing, origin, iterations, 0, 0.0, False, initial, roi, backend, gpu,
                      threads, step, progress, report, projector, stop_residual, stop_change, dict(tv_weight=tv_weight), slabs=slabs)


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

    def __init__(self, geometry, size=None, spacing=None, origin=None, backend="cpu", projector="interpolating", gpu=0, threads=0, step=None):
        if not isinstance(geometry, Geometry):
            raise UsageError(f"geometry: expected a glrecon.Geometry, found {type(geometry).__name__}")
        size, voxel, origin = _grid_arguments(geometry, size, spacing, origin, required=True)
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


def backends(available=False):
    """Backend names this build knows: cpu, graphics, graphics-mp, compute, and cuda where it was built.

    available: False (the names built), True (those that can run here: an OpenGL 4.5 device for graphics,
        graphics-mp and compute, a CUDA device for cuda), or "why" (a dict of every built name to None where it can
        run, else the reason it cannot, e.g. the error of making an OpenGL 4.5 context). Checking makes a device
        context: a fraction of a second."""
    names = list(_glrecon.backends())
    if available is False:
        return names
    if available not in (True, "why"):
        raise UsageError(f"available: expected False, True or 'why', found {_shown(available)!r}")
    gl = None
    status = {}
    for name in names:
        if name == "cpu":
            status[name] = None
        elif name == "cuda":
            status[name] = None if _glrecon._cuda_devices() > 0 else "no CUDA device (or no driver)"
        else:
            if gl is None:
                gl = _glrecon._gl_status(0) or ""
            status[name] = gl or None
    return status if available == "why" else [name for name, why in status.items() if why is None]


def devices():
    """The GPUs the backends can use, as ``glrecon devices`` lists them: one dict per device with ``api`` ("opengl"
    for graphics, graphics-mp and compute; "cuda"), ``index`` (the ``gpu`` argument), ``name``, ``version``
    (OpenGL's), ``software`` (a CPU rasterizer such as llvmpipe) and ``free_memory`` in bytes (None where the driver
    does not tell it: Mesa)."""
    return list(_glrecon._devices())


def compare(first, second, roi=None):
    """``glrecon compare``'s numbers for two volumes on one grid, as a dict: ``voxels`` compared, ``max``, ``mean``
    and ``rms`` of |first - second|, ``max_first`` and ``mean_first`` of |first| (the scale), and ``psnr`` = 20
    log10((max(first) - min(first)) / rms) in dB (first taken as the reference, as scikit-image's data_range; inf
    where they are equal). roi: None (every voxel) or a NumPy mask of their shape (bool, or 0 and 1).

    Two ``ImageArray`` must share their spacing and origin (within 1e-6, as the command line checks). Sums in
    double; a NaN or infinite voxel is refused, naming the array and the voxel."""
    a = _real_array(first, "first", (1, 2, 3), (_INT_MAX,) * 3)
    b = _real_array(second, "second", (1, 2, 3), (_INT_MAX,) * 3)
    if a.shape != b.shape:
        raise InputError(f"second: shape: expected {a.shape} as first, found {b.shape}")
    for name in ("spacing", "origin"):
        x, y = getattr(first, name, None), getattr(second, name, None)
        if x is not None and y is not None and not _np.allclose(x, y, rtol=1e-6, atol=1e-6):
            raise InputError(f"second: {name}: expected {tuple(x)} as first, found {tuple(y)}")
    a64, b64 = _np.asarray(a, dtype=_np.float64), _np.asarray(b, dtype=_np.float64)
    for array, name in ((a64, "first"), (b64, "second")):
        bad = _np.flatnonzero(~_np.isfinite(array))
        if bad.size:
            index = tuple(int(i) for i in _np.unravel_index(bad[0], array.shape))
            raise InputError(f"{name}: voxel {index}: expected a finite value, found {_shown(array[index])}")
    if roi is not None:
        mask = _real_array(roi, "roi", (a.ndim,), (_INT_MAX,) * 3)
        if mask.shape != a.shape:
            raise InputError(f"roi: shape: expected {a.shape} as first, found {mask.shape}")
        if ((mask != 0) & (mask != 1)).any():
            raise InputError("roi: values: expected 0 and 1 (or bool)")
        inside = mask.astype(bool)
        a64, b64 = a64[inside], b64[inside]
    d = _np.abs(a64 - b64)
    n = d.size
    rms = float(_np.sqrt((d * d).sum() / n)) if n else 0.0
    span = float(a64.max() - a64.min()) if n else 0.0
    return {"voxels": n, "max": float(d.max()) if n else 0.0, "mean": float(d.sum() / n) if n else 0.0, "rms": rms,
            "max_first": float(_np.abs(a64).max()) if n else 0.0, "mean_first": float(_np.abs(a64).sum() / n) if n else 0.0,
            "psnr": float("inf") if rms == 0 else (20 * _math.log10(span / rms) if span > 0 else float("-inf"))}


from . import phantom  # noqa: E402  (uses the names above)
from .peers import (astra_grid, from_astra, from_astra_order, from_astra_parallel_vec, from_astra_vec, from_tigre, from_tigre_order,  # noqa: E402
                    to_astra_order, to_tigre_order)
