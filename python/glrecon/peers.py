"""TIGRE's and ASTRA's geometries and array orders, for their users: ``from_tigre``, ``from_astra``, ``from_astra_vec``,
``from_astra_parallel_vec`` and the array helpers ``to_tigre_order``/``from_tigre_order``, ``to_astra_order``/``from_astra_order``.

One picture relates the three (docs/python.md draws it). glrecon's world is RTK's: the gantry turns about y. TIGRE and
ASTRA turn about z. Their (x, y, z) is glrecon's (x, z, -y): a proper rotation (determinant +1), so a scan keeps its
handedness and turns the same way. ASTRA's source starts on its -y, glrecon's (RTK's) on +z, the same point: ASTRA's angle
t is glrecon's gantry angle t. TIGRE's starts on its +x, a quarter turn on: TIGRE's angle t is gantry angle t + 90
degrees. Arrays, all C order:

                 volume                         projections
  glrecon        (z, y, x)                      (views, v, u)
  TIGRE          (z, y, x) of its own axes      (angles, v, u)  = glrecon's, as from_tigre lays the detector out
  ASTRA          (slices, rows, cols)           (rows, angles, cols)
                 = (z, y, x) of its own axes

so a peer's volume is glrecon's after ``vol.transpose(1, 0, 2)[::-1]`` (their y becomes glrecon's -z, their z glrecon's
y), which ``from_tigre_order(vol, "volume")`` and ``from_astra_order(vol, "volume")`` do, and ASTRA's projections are
glrecon's after ``p.transpose(1, 0, 2)``. Units are whatever the peer's were (give mm to get mm).

Neither peer is imported: a TIGRE ``geo`` is read through its attributes, an ASTRA geometry through its dict keys.
"""
from __future__ import annotations

import numbers as _numbers

import numpy as _np

from . import (Geometry, Grid, InputError, UsageError, _detector_pixels, _real_array, _reals, _several, _shown,
               _number, _whole)

# TIGRE's and ASTRA's (x, y, z) as glrecon's (x, z, -y): rows of the matrix that maps a peer vector to glrecon's.
_PEER_TO_GLRECON = _np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])


def _to_glrecon(*vectors):
    """(views, 3) peer vectors as glrecon's, side by side: the (views, 12) rows of ``Geometry.from_vectors``."""
    return _np.hstack([x @ _PEER_TO_GLRECON.T for x in vectors])


def _angles(values, name):
    """Finite angles in radians as float64, (views,) or (views, k); the index of a bad one named."""
    array = _np.asarray(_real_array(values, name, (0, 1, 2), (1000000, 1000000)), dtype=_np.float64)
    bad = _np.argwhere(~_np.isfinite(array))
    if bad.size:
        # An angle NaN or infinite has no sine (NumPy warned "invalid value encountered in cos", then the geometry's
        # check refused a NaN vector without naming the angle).
        raise InputError(f"{name}: expected finite angles in radians, found {_shown(array[tuple(bad[0])])} at index "
                         f"{tuple(int(i) for i in bad[0]) if array.ndim > 1 else int(bad[0][0])}")
    return array


def _per_view(value, name, views, width, order):
    """A TIGRE field given once or per view: a number ((views,) after this) for ``width`` 0, else ``width`` numbers
    or a (views, width) array, as TIGRE's geometry check repeats them (``__check_and_repmat__``). ``order`` names the
    numbers in the error ("(v, u)")."""
    array = _np.asarray(_real_array(value, name, (0, 1, 2), (1000000, 1000000)), dtype=_np.float64)
    if width == 0:
        if array.ndim == 0 or array.shape == (1,):
            return _np.full(views, float(array.reshape(-1)[0]))
        if array.shape == (views,):
            return array
        raise InputError(f"{name}: shape: expected one number or one per view ({views},), found {array.shape}")
    if array.shape in ((width,), (1, width)):
        return _np.tile(array.reshape(width), (views, 1))
    if array.shape == (views, width):
        return array
    hint = f" (TIGRE takes one row per view: transpose it, {name}.T)" if array.shape == (width, views) else ""
    raise InputError(f"{name}: shape: expected {width} numbers {order} or ({views}, {width}), one row per view, found "
                     f"{array.shape}{hint}")


def _rotation_z(a):
    """Rotations by angles ``a`` (views,) about z: (views, 3, 3)."""
    c, s, zero, one = _np.cos(a), _np.sin(a), _np.zeros_like(a), _np.ones_like(a)
    return _np.stack([_np.stack([c, -s, zero], -1), _np.stack([s, c, zero], -1), _np.stack([zero, zero, one], -1)], -2)


def _rotation_y(a):
    c, s, zero, one = _np.cos(a), _np.sin(a), _np.zeros_like(a), _np.ones_like(a)
    return _np.stack([_np.stack([c, zero, s], -1), _np.stack([zero, one, zero], -1), _np.stack([-s, zero, c], -1)], -2)


def _rotation_x(a):
    c, s, zero, one = _np.cos(a), _np.sin(a), _np.zeros_like(a), _np.ones_like(a)
    return _np.stack([_np.stack([one, zero, zero], -1), _np.stack([zero, c, -s], -1), _np.stack([zero, s, c], -1)], -2)


def _field(geo, name, default=None):
    """A TIGRE geometry field by attribute (a ``tigre.geometry`` or any object with its names) or key (a dict)."""
    if isinstance(geo, dict):
        return geo.get(name, default)
    return getattr(geo, name, default)


def _is_tigre_geo(value):
    return (isinstance(value, dict) and "DSO" in value) or (not isinstance(value, (_numbers.Number, _np.ndarray, list, tuple))
                                                             and hasattr(value, "DSO"))


def from_tigre(DSO, DSD=None, angles=None, n_detector=None, d_detector=None, off_detector=(0.0, 0.0),
               off_origin=(0.0, 0.0, 0.0), rot_detector=(0.0, 0.0, 0.0), COR=0.0, n_voxel=None, d_voxel=None, mode="cone"):
    """A glrecon ``Geometry`` (with its ``grid`` where the volume is given) from TIGRE's Python geometry.

    Two forms:
      * ``from_tigre(geo, angles)``: a TIGRE ``geo`` (``tigre.geometry(...)``, or any object or dict with its field
        names), with the angles as TIGRE's ``Ax(img, geo, angles)`` takes them (default: ``geo.angles``);
      * ``from_tigre(DSO, DSD, angles, n_detector, d_detector, ...)``: the fields one by one, in TIGRE's orders.

    How TIGRE's fields map (TIGRE Python's orders, as its CUDA interface ``_types.pxd`` reads them):
      DSO, DSD            source to origin, source to detector (mm); one number or one per view.
      angles              (views,) rotation angles in radians about TIGRE's z; or (views, 3) Euler angles
                          (alpha, theta, psi), the rotation Rz(alpha) Ry(theta) Rz(psi) of source and detector.
      nDetector           (v, u) = (rows, columns) pixels: glrecon's ``detector`` is (u, v).
      dDetector           (v, u) pixel size (mm) (default sDetector / nDetector).
      offDetector         (v, u) detector offset (mm) in the detector's own plane; or (views, 2).
      offOrigin           (z, y, x) offset of the volume from the origin (mm); or (views, 3). TIGRE moves the
                          scan by minus it; so does this (the grid stays centred), which allows a per-view offset.
      rotDetector         (r0, r1, r2) radians; or (views, 3): the detector turned about its centre by
                          Rz(r2) Ry(r1) Rx(r0) (TIGRE's rollPitchYaw with roll = r2, pitch = r1, yaw = r0).
      COR                 centre-of-rotation shift (mm) along the detector's u direction at each angle (source and
                          detector move together); one number or one per view.
      nVoxel, dVoxel      (z, y, x) voxels and voxel size (mm) (dVoxel defaults to sVoxel / nVoxel): the ``grid``
                          (glrecon's size is (nx, nz, ny), spacing (dx, dz, dy); it is centred).
      mode                "cone", or "parallel": TIGRE's parallel projector (computeDeltas_parallel and its kernel) turns
                          about z only and never turns the detector, and each pixel's ray starts on the plane x = DSO at
                          the pixel's own (u, v) without the detector's offset, so the rays run along (-DSD, offU, offV)
                          turned by the angle: tilted where the detector is offset. The same here (a parallel-beam
                          Geometry, whole lines through the volume); Euler angles with theta or psi and rotDetector are
                          refused in this mode, as TIGRE would ignore them.
      accuracy            not read: glrecon's ``step`` (default half a voxel, TIGRE's accuracy 0.5) sets it.

    Arrays: TIGRE's projections (angles, v, u) are glrecon's (views, v, u) as they are (the detector is laid out so:
    row 0 at the bottom, as TIGRE's kernels read ``pixelV = nV - v - 1``); its volume (z, y, x) is glrecon's after
    ``from_tigre_order(vol, "volume")`` (TIGRE's z up is glrecon's y, TIGRE's y glrecon's -z).

    World: TIGRE's (x, y, z) is glrecon's (x, z, -y); TIGRE's source starts on its +x, so TIGRE's angle t is
    glrecon's (RTK's) gantry angle t + 90 degrees.
    """
    if _is_tigre_geo(DSO):
        geo = DSO
        angles = DSD if angles is None else angles  # from_tigre(geo, angles): the second argument is the angles
        if DSD is not None and angles is not DSD:
            raise UsageError("from_tigre(geo, angles): expected the angles once, found them as DSD and angles")
        if angles is None:
            angles = _field(geo, "angles")
        if angles is None:
            raise UsageError("angles: expected TIGRE's angles (from_tigre(geo, angles)) or geo.angles, found neither")
        mode = _field(geo, "mode", "cone")
        mode = "cone" if mode is None else str(mode)
        if mode not in ("cone", "parallel"):
            raise UsageError(f"geo.mode: expected 'cone' or 'parallel', found {mode!r}")
        n_det = _field(geo, "nDetector")
        d_det = _field(geo, "dDetector")
        if d_det is None and n_det is not None and _field(geo, "sDetector") is not None:
            d_det = _np.asarray(_field(geo, "sDetector"), dtype=_np.float64) / _np.asarray(n_det, dtype=_np.float64)
        n_vox, d_vox = _field(geo, "nVoxel"), _field(geo, "dVoxel")
        if d_vox is None and n_vox is not None and _field(geo, "sVoxel") is not None:
            d_vox = _np.asarray(_field(geo, "sVoxel"), dtype=_np.float64) / _np.asarray(n_vox, dtype=_np.float64)
        fields = dict(DSO=_field(geo, "DSO"), DSD=_field(geo, "DSD"), n_detector=n_det, d_detector=d_det,
                      off_detector=_field(geo, "offDetector", (0.0, 0.0)), off_origin=_field(geo, "offOrigin", (0.0, 0.0, 0.0)),
                      rot_detector=_field(geo, "rotDetector", (0.0, 0.0, 0.0)), COR=_field(geo, "COR", 0.0), n_voxel=n_vox,
                      d_voxel=d_vox, mode=mode)
        for key, tigre_name in (("DSO", "DSO"), ("DSD", "DSD"), ("n_detector", "nDetector"), ("d_detector", "dDetector")):
            if fields[key] is None:
                raise UsageError(f"geo.{tigre_name}: expected TIGRE's field, found none")
        return from_tigre(angles=angles, **fields)

    for value, name in ((DSD, "DSD"), (angles, "angles"), (n_detector, "n_detector"), (d_detector, "d_detector")):
        if value is None:
            raise UsageError(f"{name}: expected a value (from_tigre(DSO, DSD, angles, n_detector, d_detector) or "
                             f"from_tigre(geo, angles)), found none")
    if str(mode) not in ("cone", "parallel"):
        raise UsageError(f"mode: expected 'cone' or 'parallel', found {str(mode)!r}")
    parallel = str(mode) == "parallel"
    angles = _angles(angles, "angles")
    if angles.ndim == 0:
        angles = angles.reshape(1)
    if angles.ndim == 2 and angles.shape[1] != 3:
        raise InputError(f"angles: shape: expected (views,) angles or (views, 3) Euler angles (alpha, theta, psi), found "
                         f"{angles.shape}")
    views = angles.shape[0]
    if views == 0:
        raise InputError("angles: expected at least one angle, found none")
    euler = angles if angles.ndim == 2 else _np.stack([angles, _np.zeros(views), _np.zeros(views)], axis=1)
    dso = _per_view(DSO, "DSO", views, 0, "")
    dsd = _per_view(DSD, "DSD", views, 0, "")
    for value, name, field in ((dso, "DSO", "sid"), (dsd, "DSD", "sdd")):  # the command line's bounds on --sid/--sdd
        for x in _np.unique(value):
            _number(float(x), name, field)
    nv, nu = _several(n_detector, "n_detector", 2, _detector_pixels, False)
    dv, du = _reals(d_detector, "d_detector", 2, False)
    off_det = _per_view(off_detector, "off_detector", views, 2, "(v, u)")
    off_orig = _per_view(off_origin, "off_origin", views, 3, "(z, y, x)")
    rot = _per_view(rot_detector, "rot_detector", views, 3, "(r0, r1, r2)")
    cor = _per_view(COR, "COR", views, 0, "")
    if parallel and _np.any(euler[:, 1:] != 0):
        raise InputError("angles: expected one angle per view in TIGRE's parallel mode (its parallel projector turns about z "
                         f"only), found Euler angles with theta or psi, e.g. {euler[_np.argmax(_np.any(euler[:, 1:] != 0, axis=1))]}")
    if parallel and _np.any(rot != 0):
        raise InputError("rot_detector: expected zeros in TIGRE's parallel mode (its parallel projector does not turn the "
                         f"detector), found {rot[_np.argmax(_np.any(rot != 0, axis=1))]}")

    with _np.errstate(over="ignore", invalid="ignore"):  # 1e300 mm pixels overflow here; the geometry's checks refuse them
        E = _rotation_z(euler[:, 0]) @ _rotation_y(euler[:, 1]) @ _rotation_z(euler[:, 2])
        R = _rotation_z(rot[:, 2]) @ _rotation_y(rot[:, 1]) @ _rotation_x(rot[:, 0])
        # TIGRE's computeDeltas: the detector turned about its centre, put at x = DSO - DSD, moved by (offU, offV), the
        # whole scan turned by E, shifted by COR along Rz(alpha)'s y, and moved by minus the volume's offset (z, y, x).
        u = _np.einsum("nij,j->ni", E @ R, [0.0, du, 0.0])
        v = _np.einsum("nij,j->ni", E @ R, [0.0, 0.0, dv])
        centre_local = _np.stack([dso - dsd, off_det[:, 1], off_det[:, 0]], axis=1)
        shift = cor[:, None] * _np.stack([-_np.sin(euler[:, 0]), _np.cos(euler[:, 0]), _np.zeros(views)], axis=1)
        shift -= off_orig[:, ::-1]
        centre = _np.einsum("nij,nj->ni", E, centre_local) + shift
        source = _np.einsum("nij,j->ni", E, [1.0, 0.0, 0.0]) * dso[:, None] + shift
        # Array row 0 at the bottom (TIGRE's kernels: pixelV = nV - v - 1 from the top row), column 0 at -u.
        pixel00 = centre - 0.5 * (nu - 1) * u - 0.5 * (nv - 1) * v
        if parallel:
            # TIGRE's parallel rays: from (DSO, u, v) to the detector's pixel (DSO - DSD, u + offU, v + offV), turned.
            ray = _np.einsum("nij,nj->ni", E, _np.stack([-dsd, off_det[:, 1], off_det[:, 0]], axis=1))
            rows = _to_glrecon(ray, pixel00, u, v)
        else:
            rows = _to_glrecon(source, pixel00, u, v)
    geometry = Geometry.from_vectors(rows, (nu, nv), parallel=parallel)
    if n_voxel is not None:
        nz, ny, nx = _several(n_voxel, "n_voxel", 3, lambda n, name: _whole(n, name, "size"), False)
        if d_voxel is None:
            raise UsageError("d_voxel: expected TIGRE's (z, y, x) voxel size beside n_voxel, found none")
        dz, dy, dx = _reals(d_voxel, "d_voxel", 3, False)
        geometry = geometry.with_grid(Grid((nx, nz, ny), (dx, dz, dy)))
    return geometry


def from_astra_vec(vectors, det_row_count, det_col_count):
    """A glrecon Geometry from ASTRA's ``cone_vec`` rows (srcX, srcY, srcZ, dX, dY, dZ, uX, uY, uZ, vX, vY, vZ):
    source, *centre of the detector*, and the steps from one pixel to the next along a row (u) and a column (v),
    with ``det_row_count``, ``det_col_count`` in ASTRA's order (``create_proj_geom('cone_vec', rows, cols, V)``).

    glrecon anchors the vectors at the centre of pixel (0, 0): d0 = d - (cols - 1)/2 u - (rows - 1)/2 v.
    World axes: ASTRA's (x, y, z) become glrecon's (x, z, -y) (ASTRA turns about z, glrecon about y).
    Projections: ASTRA's array is (rows, angles, cols); glrecon's is (views, v, u) = ``from_astra_order(p,
    "projections")``. ``from_astra(proj_geom, vol_geom)`` takes ASTRA's dicts and gives the grid too."""
    rows_count, cols_count = _detector_pixels(det_row_count, "det_row_count"), _detector_pixels(det_col_count, "det_col_count")
    vec = _np.asarray(_real_array(vectors, "vectors", (1, 2), (1000000, 12)), dtype=_np.float64)
    if vec.ndim != 2 or vec.shape[1] != 12:
        raise InputError(f"vectors: shape: expected (views, 12) ASTRA cone_vec rows, found {vec.shape}")
    src, d, u, v = vec[:, 0:3], vec[:, 3:6], vec[:, 6:9], vec[:, 9:12]
    with _np.errstate(over="ignore", invalid="ignore"):  # 1e308 rows overflow here; the geometry's checks refuse them
        d0 = d - 0.5 * (cols_count - 1) * u - 0.5 * (rows_count - 1) * v
        rows = _to_glrecon(src, d0, u, v)
    return Geometry.from_vectors(rows, (cols_count, rows_count))


def from_astra_parallel_vec(vectors, det_row_count, det_col_count):
    """A parallel-beam glrecon Geometry from ASTRA's ``parallel3d_vec`` rows (rayX, rayY, rayZ, dX, dY, dZ, uX, uY, uZ, vX,
    vY, vZ): the rays' direction, the *centre of the detector*, and the steps from one pixel to the next along a row (u)
    and a column (v), with ``det_row_count``, ``det_col_count`` in ASTRA's order (``create_proj_geom('parallel3d_vec',
    rows, cols, V)``). As ``from_astra_vec``: anchored at pixel (0, 0), ASTRA's (x, y, z) as glrecon's (x, z, -y)."""
    rows_count, cols_count = _detector_pixels(det_row_count, "det_row_count"), _detector_pixels(det_col_count, "det_col_count")
    vec = _np.asarray(_real_array(vectors, "vectors", (1, 2), (1000000, 12)), dtype=_np.float64)
    if vec.ndim != 2 or vec.shape[1] != 12:
        raise InputError(f"vectors: shape: expected (views, 12) ASTRA parallel3d_vec rows, found {vec.shape}")
    ray, d, u, v = vec[:, 0:3], vec[:, 3:6], vec[:, 6:9], vec[:, 9:12]
    with _np.errstate(over="ignore", invalid="ignore"):
        d0 = d - 0.5 * (cols_count - 1) * u - 0.5 * (rows_count - 1) * v
        rows = _to_glrecon(ray, d0, u, v)
    return Geometry.from_vectors(rows, (cols_count, rows_count), parallel=True)


def _two_d_to_three_d(kind, vec, thickness):
    """ASTRA's 2-D vector rows (parallel_vec: rayX, rayY, dX, dY, uX, uY; fanflat_vec: srcX, srcY, dX, dY, uX, uY) as 3-D
    ones (parallel3d_vec, cone_vec) in the plane z = 0, with one detector row of ``thickness`` along z."""
    views = vec.shape[0]
    z = _np.zeros((views, 1))
    return _np.hstack([vec[:, 0:2], z, vec[:, 2:4], z, vec[:, 4:6], z, z, z, _np.full((views, 1), thickness)])


_ASTRA_LATER = {"cyl_cone_vec": "a cylindrical detector"}
_ASTRA_KINDS = "'cone', 'cone_vec', 'parallel3d', 'parallel3d_vec', 'parallel', 'parallel_vec', 'fanflat' or 'fanflat_vec'"


def _key(geom, key, where):
    if key not in geom:
        raise InputError(f"{where}['{key}']: expected ASTRA's field, found none (keys: {', '.join(sorted(map(str, geom)))})")
    return geom[key]


def astra_grid(vol_geom):
    """The glrecon ``Grid`` of an ASTRA ``vol_geom`` dict (``astra.create_vol_geom(rows, cols, slices, ...)``; a 2-D one,
    ``create_vol_geom(rows, cols)``, is a volume one voxel thick about z = 0, its voxels as thick as they are wide; its
    row 0 at WindowMaxY, as ASTRA's 2-D pixelRowToCenterY, gives the same grid).

    GridColCount, GridRowCount, GridSliceCount are ASTRA's x, y, z voxel counts and ``option``'s WindowMin/Max X, Y, Z
    its extent (default centred, 1 per voxel). ASTRA's volume array (slices, rows, cols) is glrecon's after
    ``from_astra_order(vol, "volume")``: glrecon's size is (cols, slices, rows), its spacing (dx, dz, dy), and its
    voxel (0, 0, 0) is ASTRA's (col 0, last row, slice 0)."""
    if not isinstance(vol_geom, dict):
        raise UsageError(f"vol_geom: expected ASTRA's volume geometry dict (astra.create_vol_geom), found {type(vol_geom).__name__}")
    two_d = "GridSliceCount" not in vol_geom
    counts = [_whole(_key(vol_geom, k, "vol_geom"), f"vol_geom['{k}']", "size")
              for k in (("GridColCount", "GridRowCount") if two_d else ("GridColCount", "GridRowCount", "GridSliceCount"))]
    option = dict(vol_geom.get("option", {}) or {})
    if two_d:
        # A 2-D slice is a volume one voxel thick about z = 0, as thick as its voxels are wide (any thickness gives the
        # same numbers: the slice's rays and voxel centres lie in z = 0).
        counts.append(1)
        nx = counts[0]
        low = _number(option.get("WindowMinX", -nx / 2.0), "vol_geom['option']['WindowMinX']")
        high = _number(option.get("WindowMaxX", nx / 2.0), "vol_geom['option']['WindowMaxX']")
        option["WindowMinZ"], option["WindowMaxZ"] = -(high - low) / nx / 2, (high - low) / nx / 2
    lows, highs = [], []
    for axis, n in zip("XYZ", counts):
        low = option.get(f"WindowMin{axis}", -n / 2.0)
        high = option.get(f"WindowMax{axis}", n / 2.0)
        lows.append(_number(low, f"vol_geom['option']['WindowMin{axis}']"))
        highs.append(_number(high, f"vol_geom['option']['WindowMax{axis}']"))
        if not highs[-1] > lows[-1]:
            raise InputError(f"vol_geom['option']: WindowMax{axis}: expected more than WindowMin{axis} = {lows[-1]!r}, "
                             f"found {highs[-1]!r}")
    (nx, ny, nz), (x0, y0, z0), (x1, y1, z1) = counts, lows, highs
    dx, dy, dz = (x1 - x0) / nx, (y1 - y0) / ny, (z1 - z0) / nz
    # Voxel centres at min + (i + 1/2) d (ASTRA's kernels); glrecon's voxel (0, 0, 0) is ASTRA's (x0, y1, z0) corner's
    # voxel: glrecon (x, y, z) = ASTRA (x, z, -y).
    return Grid((nx, nz, ny), (dx, dz, dy), (x0 + 0.5 * dx, z0 + 0.5 * dz, -(y1 - 0.5 * dy)))


def from_astra(proj_geom, vol_geom=None):
    """A glrecon ``Geometry`` from ASTRA's projection geometry dict (``astra.create_proj_geom``), with the ``grid`` of
    ``vol_geom`` (``astra.create_vol_geom``) attached where one is given.

    Types: 'cone' (DetectorSpacingX = u pixel size, DetectorSpacingY = v, DetectorRowCount, DetectorColCount,
    ProjectionAngles in radians, DistanceOriginSource, DistanceOriginDetector: at angle t the source is at
    (sin t, -cos t, 0) DistanceOriginSource, as ASTRA's genConeProjections places it) and 'cone_vec' (``Vectors``:
    see ``from_astra_vec``); parallel beam: 'parallel3d' (DetectorSpacingX/Y, DetectorRowCount/ColCount,
    ProjectionAngles: at angle t the rays run along (sin t, -cos t, 0), the detector centre at the origin, u = (cos t,
    sin t, 0) DetectorSpacingX, v = (0, 0, DetectorSpacingY), as ASTRA's geom_2vec) and 'parallel3d_vec' (see
    ``from_astra_parallel_vec``); 2-D: 'parallel' and 'fanflat' (DetectorWidth, DetectorCount, ProjectionAngles;
    fanflat's DistanceOriginSource/Detector) and their '_vec' forms (6 numbers a row) are the same beams in the plane
    z = 0 with one detector row, DetectorWidth thick: a 2-D slice is a volume one voxel thick (``astra_grid`` of a 2-D
    vol_geom), its sinogram (angles, DetectorCount) glrecon's (views, 1, u) (``from_astra_order(sino,
    "projections")``).

    Arrays: ASTRA's projections (rows, angles, cols) are glrecon's (views, v, u) after ``from_astra_order(p,
    "projections")``, its volume (slices, rows, cols) after ``from_astra_order(vol, "volume")``."""
    if not isinstance(proj_geom, dict):
        raise UsageError(f"proj_geom: expected ASTRA's projection geometry dict (astra.create_proj_geom), found "
                         f"{type(proj_geom).__name__}")
    kind = _key(proj_geom, "type", "proj_geom")
    if isinstance(kind, str) and kind in _ASTRA_LATER:
        raise UsageError(f"proj_geom['type']: expected {_ASTRA_KINDS}, found {kind!r}: {_ASTRA_LATER[kind]} is not "
                         f"supported yet")
    if kind in ("parallel", "parallel_vec", "fanflat", "fanflat_vec"):
        geometry = _from_astra_2d(proj_geom, kind)
        return geometry if vol_geom is None else geometry.with_grid(astra_grid(vol_geom))
    if kind not in ("cone", "cone_vec", "parallel3d", "parallel3d_vec"):
        raise UsageError(f"proj_geom['type']: expected {_ASTRA_KINDS}, found {_shown(kind)!r}")
    rows = _key(proj_geom, "DetectorRowCount", "proj_geom")
    cols = _key(proj_geom, "DetectorColCount", "proj_geom")
    if kind == "cone_vec":
        geometry = from_astra_vec(_key(proj_geom, "Vectors", "proj_geom"), rows, cols)
    elif kind == "cone":
        angles = _angles(_key(proj_geom, "ProjectionAngles", "proj_geom"), "proj_geom['ProjectionAngles']").reshape(-1)
        du = _number(_key(proj_geom, "DetectorSpacingX", "proj_geom"), "proj_geom['DetectorSpacingX']")
        dv = _number(_key(proj_geom, "DetectorSpacingY", "proj_geom"), "proj_geom['DetectorSpacingY']")
        dso = _number(_key(proj_geom, "DistanceOriginSource", "proj_geom"), "proj_geom['DistanceOriginSource']")
        dod = _number(_key(proj_geom, "DistanceOriginDetector", "proj_geom"), "proj_geom['DistanceOriginDetector']")
        s, c, z = _np.sin(angles), _np.cos(angles), _np.zeros_like(angles)
        vectors = _np.stack([s * dso, -c * dso, z, -s * dod, c * dod, z, c * du, s * du, z, z, z, z + dv], axis=1)
        geometry = from_astra_vec(vectors, rows, cols)
    elif kind == "parallel3d_vec":
        geometry = from_astra_parallel_vec(_key(proj_geom, "Vectors", "proj_geom"), rows, cols)
    else:  # parallel3d
        angles = _angles(_key(proj_geom, "ProjectionAngles", "proj_geom"), "proj_geom['ProjectionAngles']").reshape(-1)
        du = _number(_key(proj_geom, "DetectorSpacingX", "proj_geom"), "proj_geom['DetectorSpacingX']")
        dv = _number(_key(proj_geom, "DetectorSpacingY", "proj_geom"), "proj_geom['DetectorSpacingY']")
        s, c, z = _np.sin(angles), _np.cos(angles), _np.zeros_like(angles)
        vectors = _np.stack([s, -c, z, z, z, z, c * du, s * du, z, z, z, z + dv], axis=1)
        geometry = from_astra_parallel_vec(vectors, rows, cols)
    return geometry if vol_geom is None else geometry.with_grid(astra_grid(vol_geom))


def _from_astra_2d(proj_geom, kind):
    """ASTRA's 2-D geometries as 3-D ones in the plane z = 0 with one detector row (see ``from_astra``)."""
    cols = _detector_pixels(_key(proj_geom, "DetectorCount", "proj_geom"), "proj_geom['DetectorCount']")
    if kind.endswith("_vec"):
        vec = _np.asarray(_real_array(_key(proj_geom, "Vectors", "proj_geom"), "proj_geom['Vectors']", (1, 2), (1000000, 6)),
                          dtype=_np.float64)
        if vec.ndim != 2 or vec.shape[1] != 6:
            raise InputError(f"proj_geom['Vectors']: shape: expected (views, 6) ASTRA {kind} rows, found {vec.shape}")
        thickness = float(_np.hypot(vec[0, 4], vec[0, 5]))
    else:
        angles = _angles(_key(proj_geom, "ProjectionAngles", "proj_geom"), "proj_geom['ProjectionAngles']").reshape(-1)
        width = _number(_key(proj_geom, "DetectorWidth", "proj_geom"), "proj_geom['DetectorWidth']")
        s, c = _np.sin(angles), _np.cos(angles)
        if kind == "parallel":  # geom_2vec: ray (sin t, -cos t), centre 0, u (cos t, sin t) DetectorWidth
            vec = _np.stack([s, -c, 0 * s, 0 * s, c * width, s * width], axis=1)
        else:  # fanflat: source (sin t, -cos t) DistanceOriginSource, centre (-sin t, cos t) DistanceOriginDetector
            dso = _number(_key(proj_geom, "DistanceOriginSource", "proj_geom"), "proj_geom['DistanceOriginSource']")
            dod = _number(_key(proj_geom, "DistanceOriginDetector", "proj_geom"), "proj_geom['DistanceOriginDetector']")
            vec = _np.stack([s * dso, -c * dso, -s * dod, c * dod, c * width, s * width], axis=1)
        thickness = width
    rows3 = _two_d_to_three_d(kind, vec, thickness)
    return from_astra_parallel_vec(rows3, 1, cols) if kind.startswith("parallel") else from_astra_vec(rows3, 1, cols)


# ---- array orders ---------------------------------------------------------------------------------------------

_WHAT = ("volume", "projections")


def _three_d(array, name, what, two_d_ok=False):
    if what not in _WHAT:
        raise UsageError(f"what: expected 'volume' or 'projections', found {_shown(what)!r}")
    array = _np.asarray(array)
    if array.ndim != 3 and not (two_d_ok and array.ndim == 2):
        raise InputError(f"{name}: shape: expected a {'2-D (ASTRA 2-D) or ' if two_d_ok else ''}3-D {what} array, found "
                         f"{array.ndim} dimensions {array.shape}")
    return array


def from_tigre_order(array, what):
    """A TIGRE array as glrecon's (a view, no copy): a volume (z, y, x) of TIGRE's axes becomes glrecon's (z, y, x)
    (``vol.transpose(1, 0, 2)[::-1]``); projections (angles, v, u) are glrecon's (views, v, u) as they are, for a
    geometry from ``from_tigre``. ``what``: "volume" or "projections"."""
    array = _three_d(array, "array", what)
    return array.transpose(1, 0, 2)[::-1] if what == "volume" else array


def to_tigre_order(array, what):
    """A glrecon array in TIGRE's order (a view, no copy); the inverse of ``from_tigre_order``."""
    array = _three_d(array, "array", what)
    return array[::-1].transpose(1, 0, 2) if what == "volume" else array


def from_astra_order(array, what):
    """An ASTRA array as glrecon's (a view, no copy): a volume (slices, rows, cols) becomes glrecon's (z, y, x)
    (``vol.transpose(1, 0, 2)[::-1]``), projections (rows, angles, cols) glrecon's (views, v, u)
    (``p.transpose(1, 0, 2)``), for a geometry from ``from_astra``. ``what``: "volume" or "projections".
    ASTRA's 2-D arrays too: a slice (rows, cols) becomes the one-voxel-thick volume (rows, 1, cols) (``vol[:, None]``: ASTRA
    counts 2-D rows from the top, WindowMaxY, where its 3-D rows count from WindowMinY), a sinogram (angles, DetectorCount)
    the projections (views, 1, u) (``sino[:, None]``)."""
    array = _three_d(array, "array", what, two_d_ok=True)
    if array.ndim == 2:
        return array[:, None, :]
    return array.transpose(1, 0, 2)[::-1] if what == "volume" else array.transpose(1, 0, 2)


def to_astra_order(array, what, two_d=False):
    """A glrecon array in ASTRA's order (a view, no copy); the inverse of ``from_astra_order``. With ``two_d=True`` a
    one-voxel-thick volume (z, 1, x) becomes ASTRA's 2-D slice (rows, cols), projections (views, 1, u) its sinogram
    (angles, DetectorCount)."""
    array = _three_d(array, "array", what)
    if two_d:
        if array.shape[1] != 1:
            raise InputError(f"array: shape: expected one {'voxel' if what == 'volume' else 'detector row'} along axis 1 for "
                             f"ASTRA's 2-D order, found {array.shape}")
        return array[:, 0, :]
    return array[::-1].transpose(1, 0, 2) if what == "volume" else array.transpose(1, 0, 2)
