"""Issue 23: TIGRE's and ASTRA's geometries and array orders (from_tigre, from_astra, the order helpers, Grid), errors a
peer user meets (every failure a glrecon.Error), and project()'s progress and Ctrl-C.

The peers are not imported: their conventions are taken from their sources (TIGRE: Python/tigre/utilities/cuda_interface/
_types.pxd for the orders of offOrigin (z, y, x), offDetector (v, u), nDetector (v, u), rotDetector; Common/CUDA/
ray_interpolated_projection.cu computeDeltas for where source and detector go, and pixelV = nV - v - 1 for the rows.
ASTRA: src/GeometryUtil3D.cpp genConeProjections for 'cone', cuda/3d/cone_fp.cu for pixel and voxel centres at
min + (i + 1/2) d, python/astra/creators.py for the dict keys), and restated by hand below, independently of the
converters' code."""
import os
import signal
import threading
import time
import types

import numpy as np
import pytest

import glrecon

# Positions below are sums of a few products of numbers up to 1500 mm with sines and cosines computed in double
# (cos(pi/2) = 6e-17, not 0): a few ulps of 1500 mm, about 1e-12 mm. 1e-9 mm leaves room and still fails any wrong sign,
# order or offset (the smallest value checked is 0.2 mm).
ATOL = 1e-9


def rows(*views):
    """glrecon's vectors (source, pixel (0, 0), u step, v step) per view, as ``Geometry.vectors`` gives them."""
    return np.array([np.concatenate(v) for v in views], dtype=np.float64)


# ---- bug 1: offOrigin is (z, y, x) in TIGRE Python ----------------------------------------------------------------

def test_from_tigre_off_origin_is_z_y_x():
    # The call: TIGRE puts the source at (DSO, 0, 0) - (x, y, z) = (1000 + 11, -7, -5) (computeDeltas subtracts
    # offOrigX = offOrigin[2], offOrigY = offOrigin[1], offOrigZ = offOrigin[0]); glrecon's (x, y, z) is TIGRE's
    # (x, z, -y): (1011, -5, 7).
    g = glrecon.from_tigre(1000, 1536, [0.0], (128, 128), (3.2, 3.2), off_origin=np.array([5.0, 7.0, -11.0]))
    np.testing.assert_allclose(g.vectors[0, 0:3], [1011.0, -5.0, 7.0], rtol=0, atol=ATOL)


# ---- bug 2: per-view fields, Euler angles, rotDetector, COR: three angles with offsets and tilts by hand --------------

def test_from_tigre_by_hand_at_three_angles_with_offsets_and_tilts():
    """DSO 1000, DSD 1500; nDetector (v, u) = (3, 5) of dDetector (2, 1) mm: pixel (row v, column u) at detector-local
    (0, u - 2, 2 (v - 1)) before TIGRE's steps (rows from the bottom). Per view:
      0: angle 0; offDetector (v, u) = (4, 3); rotDetector r2 with cos 0.8, sin 0.6 (Rz about the detector's centre);
      1: angle pi/2; offOrigin (z, y, x) = (1, 2, 3): the scan moves by -(3, 2, 1) in TIGRE's (x, y, z);
      2: angle pi; COR 5: source and detector move by 5 along Rz(pi) (0, 1, 0) = (0, -5, 0); offDetector (-2, 1);
         rotDetector r0 = pi/2: Rx turns the detector in its plane, u to +z, v to -y.
    Each view in TIGRE's (x, y, z), then glrecon's (x, z, -y)."""
    r2 = np.arctan2(0.6, 0.8)
    g = glrecon.from_tigre(1000, 1500, [0.0, np.pi / 2, np.pi], (3, 5), (2.0, 1.0),
                           off_detector=[[4.0, 3.0], [0.0, 0.0], [-2.0, 1.0]],
                           off_origin=[[0.0, 0.0, 0.0], [1.0, 2.0, 3.0], [0.0, 0.0, 0.0]],
                           rot_detector=[[0.0, 0.0, r2], [0.0, 0.0, 0.0], [np.pi / 2, 0.0, 0.0]], COR=[0.0, 0.0, 5.0])
    # View 0: source (1000, 0, 0); centre (DSO - DSD, offU, offV) = (-500, 3, 4); u = Rz(r2) (0, 1, 0) = (-0.6, 0.8, 0),
    # v = (0, 0, 2); pixel (0, 0) = centre + Rz(r2) (0, -2, -2) = (-500 + 1.2, 3 - 1.6, 4 - 2) = (-498.8, 1.4, 2).
    view0 = ([1000, 0, 0], [-498.8, 2, -1.4], [-0.6, 0, -0.8], [0, 2, 0])
    # View 1: Rz(pi/2) (x, y, z) = (-y, x, z); source (0, 1000, 0) - (3, 2, 1) = (-3, 998, -1); centre (0, -500, 0) -
    # (3, 2, 1) = (-3, -502, -1); u = (-1, 0, 0), v = (0, 0, 2); pixel (0, 0) = centre - 2 u - v = (-1, -502, -3).
    view1 = ([-3, -1, -998], [-1, -3, 502], [-1, 0, 0], [0, 2, 0])
    # View 2: Rz(pi) (x, y, z) = (-x, -y, z); source (-1000, 0, 0) + (0, -5, 0); centre Rz(pi) (-500, 1, -2) + (0, -5, 0)
    # = (500, -6, -2); u = Rz(pi) Rx(pi/2) (0, 1, 0) = (0, 0, 1), v = Rz(pi) Rx(pi/2) (0, 0, 2) = (0, 2, 0);
    # pixel (0, 0) = centre - 2 u - v = (500, -8, -4).
    view2 = ([-1000, 0, 5], [500, -4, 8], [0, 1, 0], [0, 0, -2])
    np.testing.assert_allclose(g.vectors, rows(view0, view1, view2), rtol=0, atol=ATOL)
    assert g.detector == (5, 3) and g.grid is None


def test_from_tigre_euler_angles():
    # (alpha, theta, psi) = (0, pi/2, 0): Ry(pi/2) (x, y, z) = (z, y, -x); the source (1000, 0, 0) goes to (0, 0, -1000),
    # the centre (-500, 0, 0) to (0, 0, 500), u stays (0, 1, 0), v (0, 0, 2) becomes (2, 0, 0); pixel (0, 0) =
    # (0, 0, 500) - 2 u - v = (-2, -2, 500).
    g = glrecon.from_tigre(1000, 1500, [[0.0, np.pi / 2, 0.0]], (3, 5), (2.0, 1.0))
    np.testing.assert_allclose(g.vectors, rows(([0, -1000, 0], [-2, 500, 2], [0, 0, -1], [2, 0, 0])), rtol=0, atol=ATOL)
    # (0, 0, psi) is the rotation Rz(psi), as alpha = psi: the same scan (without COR, which follows alpha alone).
    a = np.array([0.3, 1.1, 2.5])
    euler = glrecon.from_tigre(1000, 1500, np.stack([0 * a, 0 * a, a], axis=1), (3, 5), (2.0, 1.0), off_detector=(1.0, -2.0))
    plain = glrecon.from_tigre(1000, 1500, a, (3, 5), (2.0, 1.0), off_detector=(1.0, -2.0))
    np.testing.assert_allclose(euler.vectors, plain.vectors, rtol=0, atol=ATOL)


def test_angles_relate_to_glrecons_gantry_angle():
    # TIGRE's source starts on its +x (glrecon's +x), ASTRA's on its -y (glrecon's +z, where RTK's gantry angle 0 puts
    # it); both turn as glrecon does: TIGRE's t is gantry angle t + 90 degrees, ASTRA's t is t.
    t = np.deg2rad([0.0, 30.0, 135.0, 250.0])
    tigre = glrecon.from_tigre(1000, 1536, t, (4, 4), (1, 1))
    astra = glrecon.from_astra({"type": "cone", "DetectorSpacingX": 1.0, "DetectorSpacingY": 1.0, "DetectorRowCount": 4,
                                "DetectorColCount": 4, "ProjectionAngles": t, "DistanceOriginSource": 1000.0,
                                "DistanceOriginDetector": 536.0})
    for view, degrees in enumerate(np.rad2deg(t)):
        for geometry, gantry in ((tigre, degrees + 90.0), (astra, degrees)):
            rtk = glrecon.Geometry.circular(1, first_angle=gantry, detector=(4, 4), pixel=(1.0, 1.0))
            np.testing.assert_allclose(geometry.vectors[view, 0:3], rtk.vectors[0, 0:3], rtol=0, atol=ATOL)


def test_from_tigre_reads_a_tigre_geo_object():
    """A TIGRE geometry as its users make it (d01 and d14's field names, per-view arrays after check_geo): the same scan
    as the fields one by one, with the grid from nVoxel (z, y, x) and dVoxel (or sVoxel / nVoxel)."""
    angles = np.linspace(0, 2 * np.pi, 4, endpoint=False)
    geo = types.SimpleNamespace(DSD=1536.0, DSO=1000.0, nDetector=np.array([6, 8]), dDetector=np.array([0.8, 0.4]),
                                nVoxel=np.array([4, 6, 10]), sVoxel=np.array([4.0, 12.0, 5.0]),
                                offOrigin=np.vstack([0 * angles + 1, 0 * angles, 2 * np.sin(angles)]).T,
                                offDetector=np.vstack([np.sin(angles), np.cos(angles)]).T, COR=0.5, mode="cone")
    g = glrecon.from_tigre(geo, angles)
    fields = glrecon.from_tigre(1000.0, 1536.0, angles, (6, 8), (0.8, 0.4), off_detector=geo.offDetector,
                                off_origin=geo.offOrigin, COR=0.5)
    np.testing.assert_array_equal(g.vectors, fields.vectors)
    # nVoxel (z, y, x) = (4, 6, 10) of (1, 2, 0.5) mm: glrecon's (x, y, z) = TIGRE's (x, z, -y), centred.
    assert g.grid == glrecon.Grid((10, 4, 6), (0.5, 1.0, 2.0))
    geo.angles = angles
    np.testing.assert_array_equal(glrecon.from_tigre(geo).vectors, g.vectors)  # geo.angles where none is given
    np.testing.assert_array_equal(glrecon.from_tigre(vars(geo), angles).vectors, g.vectors)  # or a dict of the fields


@pytest.mark.parametrize("call, error, words", [
    (lambda: glrecon.from_tigre(1000, 1536, [0.0, 1.0], (4, 4), (1, 1), off_detector=np.zeros((2, 3))), glrecon.InputError,
     r"off_detector: shape: expected 2 numbers \(v, u\) or \(2, 2\), one row per view, found \(2, 3\)"),
    (lambda: glrecon.from_tigre(1000, 1536, [0.0, 1.0, 2.0], (4, 4), (1, 1), off_origin=np.zeros((3, 3))[:2].T), glrecon.InputError,
     r"off_origin: shape: expected 3 numbers \(z, y, x\) or \(3, 3\).*found \(3, 2\)"),
    (lambda: glrecon.from_tigre(1000, 1536, np.zeros((3, 2)), (4, 4), (1, 1)), glrecon.InputError,
     r"angles: shape: expected \(views,\) angles or \(views, 3\) Euler angles \(alpha, theta, psi\), found \(3, 2\)"),
    (lambda: glrecon.from_tigre(1000, 1536, [0.0, 1.0], (4, 4), (1, 1), COR=[1.0, 2.0, 3.0]), glrecon.InputError,
     r"COR: shape: expected one number or one per view \(2,\), found \(3,\)"),
    (lambda: glrecon.from_tigre(1000, 1536, [0.0, 1.0, 2.0], (4, 4), (1, 1), off_detector=np.zeros((2, 3))), glrecon.InputError,
     r"found \(2, 3\) \(TIGRE takes one row per view: transpose it, off_detector.T\)"),
    (lambda: glrecon.from_tigre(1000, 1536, [0.0, np.nan], (4, 4), (1, 1)), glrecon.InputError,
     r"angles: expected finite angles in radians, found nan at index 1"),
    (lambda: glrecon.from_tigre(types.SimpleNamespace(DSO=1000, DSD=1536, nDetector=(4, 4), dDetector=(1, 1), mode="fan"), [0.0]),
     glrecon.UsageError, r"geo.mode: expected 'cone' or 'parallel', found 'fan'"),
    (lambda: glrecon.from_tigre(1000, 1536, np.array([[0.0, 0.2, 0.0]]), (4, 4), (1, 1), mode="parallel"), glrecon.InputError,
     r"angles: expected one angle per view in TIGRE's parallel mode \(its parallel projector turns about z only\)"),
    (lambda: glrecon.from_tigre(1000, 1536, [0.0], (4, 4), (1, 1), rot_detector=(0.1, 0, 0), mode="parallel"), glrecon.InputError,
     r"rot_detector: expected zeros in TIGRE's parallel mode"),
    (lambda: glrecon.from_tigre(types.SimpleNamespace(DSO=1000, DSD=1536, dDetector=(1, 1)), [0.0]), glrecon.UsageError,
     r"geo.nDetector: expected TIGRE's field, found none"),
])
def test_from_tigre_names_the_field_it_cannot_take(call, error, words):
    with pytest.raises(error, match=words):
        call()


# ---- ASTRA ---------------------------------------------------------------------------------------------------------

def test_from_astra_cone_by_hand_at_three_angles():
    """ASTRA's 'cone' (genConeProjections): at angle t the source is at (sin t, -cos t, 0) DSO, the detector centre at
    (-sin t, cos t, 0) ODD, u = (cos t, sin t, 0) DetectorSpacingX, v = (0, 0, DetectorSpacingY). 3 rows, 5 columns:
    pixel (0, 0) = centre - 2 u - v."""
    proj_geom = {"type": "cone", "DetectorSpacingX": 1.0, "DetectorSpacingY": 2.0, "DetectorRowCount": 3, "DetectorColCount": 5,
                 "ProjectionAngles": np.array([0.0, np.pi / 2, np.pi]), "DistanceOriginSource": 1000.0, "DistanceOriginDetector": 500.0}
    g = glrecon.from_astra(proj_geom)
    # t = 0: source (0, -1000, 0), pixel (0, 0) = (0, 500, 0) - (2, 0, 0) - (0, 0, 2); glrecon (x, z, -y).
    view0 = ([0, 0, 1000], [-2, -2, -500], [1, 0, 0], [0, 2, 0])
    # t = pi/2: source (1000, 0, 0), centre (-500, 0, 0), u (0, 1, 0): pixel (0, 0) = (-500, -2, -2).
    view1 = ([1000, 0, 0], [-500, -2, 2], [0, 0, -1], [0, 2, 0])
    # t = pi: source (0, 1000, 0), centre (0, -500, 0), u (-1, 0, 0): pixel (0, 0) = (2, -500, -2).
    view2 = ([0, 0, -1000], [2, -2, 500], [-1, 0, 0], [0, 2, 0])
    np.testing.assert_allclose(g.vectors, rows(view0, view1, view2), rtol=0, atol=ATOL)
    assert g.detector == (5, 3)


def test_from_astra_cone_vec_with_offsets_and_a_tilted_detector():
    # Source off the axis, the detector centre shifted, u tilted out of the x-y plane (0.8, 0, 0.6) and v = 2 (-0.6, 0,
    # 0.8) perpendicular to it: pixel (0, 0) = d - 2 u - v = (3 - 1.6 + 1.2, 500, -4 - 1.2 - 1.6) = (2.6, 500, -6.8).
    vectors = np.array([[10, -1000, 5, 3, 500, -4, 0.8, 0, 0.6, -1.2, 0, 1.6]])
    g = glrecon.from_astra({"type": "cone_vec", "DetectorRowCount": 3, "DetectorColCount": 5, "Vectors": vectors})
    np.testing.assert_allclose(g.vectors, rows(([10, 5, 1000], [2.6, -6.8, -500], [0.8, 0.6, 0], [-1.2, 1.6, 0])), rtol=0, atol=ATOL)
    np.testing.assert_array_equal(g.vectors, glrecon.from_astra_vec(vectors, 3, 5).vectors)


def test_astra_vol_geom_is_a_grid():
    # create_vol_geom(rows 4, cols 6, slices 2, x in [-3, 3], y in [-4, 4], z in [10, 11]): voxels of (1, 2, 0.5) in
    # ASTRA's (x, y, z), centres at min + (i + 1/2) d. glrecon's voxel (0, 0, 0) is ASTRA's (col 0, last row, slice 0):
    # ASTRA (-2.5, 3, 10.25), glrecon (x, z, -y) = (-2.5, 10.25, -3).
    vol_geom = {"GridRowCount": 4, "GridColCount": 6, "GridSliceCount": 2,
                "option": {"WindowMinX": -3, "WindowMaxX": 3, "WindowMinY": -4, "WindowMaxY": 4, "WindowMinZ": 10, "WindowMaxZ": 11}}
    assert glrecon.astra_grid(vol_geom) == glrecon.Grid((6, 2, 4), (1.0, 0.5, 2.0), (-2.5, 10.25, -3.0))
    # Without windows: one unit per voxel, centred (create_vol_geom's defaults).
    assert glrecon.astra_grid({"GridRowCount": 4, "GridColCount": 6, "GridSliceCount": 2}) == glrecon.Grid((6, 2, 4), 1.0)


def test_from_astra_parallel3d_by_hand_at_three_angles():
    """ASTRA's 'parallel3d' (geom_2vec): at angle t the rays run along (sin t, -cos t, 0), the detector centre at the
    origin, u = (cos t, sin t, 0) DetectorSpacingX, v = (0, 0, DetectorSpacingY). 3 rows, 5 columns: pixel (0, 0) =
    -2 u - v. glrecon's rows: ray, pixel (0, 0), u, v in its (x, z, -y)."""
    proj_geom = {"type": "parallel3d", "DetectorSpacingX": 1.0, "DetectorSpacingY": 2.0, "DetectorRowCount": 3, "DetectorColCount": 5,
                 "ProjectionAngles": np.array([0.0, np.pi / 2, np.pi])}
    g = glrecon.from_astra(proj_geom)
    assert g.is_parallel and not g.is_circular
    # t = 0: ray (0, -1, 0) -> (0, 0, 1); pixel (0, 0) = (-2, 0, -2) -> (-2, -2, 0); u (1, 0, 0); v (0, 0, 2) -> (0, 2, 0).
    view0 = ([0, 0, 1], [-2, -2, 0], [1, 0, 0], [0, 2, 0])
    # t = pi/2: ray (1, 0, 0); u (0, 1, 0) -> (0, 0, -1): pixel (0, 0) = -2 u - v = (0, -2, 2).
    view1 = ([1, 0, 0], [0, -2, 2], [0, 0, -1], [0, 2, 0])
    # t = pi: ray (0, 1, 0) -> (0, 0, -1); u (-1, 0, 0): pixel (0, 0) = (2, -2, 0).
    view2 = ([0, 0, -1], [2, -2, 0], [-1, 0, 0], [0, 2, 0])
    np.testing.assert_allclose(g.vectors, rows(view0, view1, view2), rtol=0, atol=ATOL)
    assert g.detector == (5, 3)
    # parallel3d_vec of the same rows; glrecon's own circular parallel scan at gantry angle t is ASTRA's t, the same lines
    # and detector: its rays run along Ry(t) (0, 0, -1) (a cone's central ray), ASTRA's the other way (either sense).
    vec = {"type": "parallel3d_vec", "DetectorRowCount": 3, "DetectorColCount": 5,
           "Vectors": np.array([[0, -1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 2.0]])}
    np.testing.assert_allclose(glrecon.from_astra(vec).vectors, rows(view0), rtol=0, atol=ATOL)
    own = glrecon.Geometry.parallel(projections=2, detector=(5, 3), pixel=(1.0, 2.0), arc=180.0)
    np.testing.assert_allclose(own.vectors, rows(([0, 0, -1], *view0[1:]), ([-1, 0, 0], *view1[1:])), rtol=0, atol=ATOL)


def test_from_astra_2d_parallel_and_fanflat_are_one_row_and_one_slice():
    """ASTRA's 2-D geometries in the plane z = 0: 'parallel' (ray (sin t, -cos t), centre 0, u (cos t, sin t) DetectorWidth),
    'fanflat' (source (sin t, -cos t) DSO, centre (-sin t, cos t) ODD), one detector row DetectorWidth thick; a 2-D vol_geom
    a volume one voxel thick about z = 0."""
    vol_geom = {"GridRowCount": 4, "GridColCount": 6, "option": {"WindowMinX": -3, "WindowMaxX": 3, "WindowMinY": -4, "WindowMaxY": 4}}
    assert glrecon.astra_grid(vol_geom) == glrecon.Grid((6, 1, 4), (1.0, 1.0, 2.0), (-2.5, 0.0, -3.0))
    par = glrecon.from_astra({"type": "parallel", "DetectorWidth": 1.5, "DetectorCount": 5, "ProjectionAngles": [0.0]}, vol_geom)
    assert par.is_parallel and par.detector == (5, 1) and par.grid == glrecon.Grid((6, 1, 4), (1.0, 1.0, 2.0), (-2.5, 0.0, -3.0))
    np.testing.assert_allclose(par.vectors, rows(([0, 0, 1], [-3, 0, 0], [1.5, 0, 0], [0, 1.5, 0])), rtol=0, atol=ATOL)
    fan = glrecon.from_astra({"type": "fanflat", "DetectorWidth": 1.5, "DetectorCount": 5, "ProjectionAngles": [np.pi / 2],
                              "DistanceOriginSource": 100.0, "DistanceOriginDetector": 50.0})
    assert not fan.is_parallel and fan.detector == (5, 1)
    # t = pi/2: source (100, 0), centre (-50, 0), u (0, 1.5) -> glrecon (0, 0, -1.5): pixel (0, 0) = (-50, 0, 3).
    np.testing.assert_allclose(fan.vectors, rows(([100, 0, 0], [-50, 0, 3], [0, 0, -1.5], [0, 1.5, 0])), rtol=0, atol=ATOL)
    vec = glrecon.from_astra({"type": "fanflat_vec", "DetectorCount": 5, "Vectors": np.array([[100.0, 0, -50, 0, 0, 1.5]])})
    np.testing.assert_allclose(vec.vectors, fan.vectors, rtol=0, atol=ATOL)
    pvec = glrecon.from_astra({"type": "parallel_vec", "DetectorCount": 5, "Vectors": np.array([[0, -1.0, 0, 0, 1.5, 0]])})
    np.testing.assert_allclose(pvec.vectors, par.vectors, rtol=0, atol=ATOL)
    # ASTRA's 2-D arrays: a slice (rows, cols) is the volume (rows, 1, cols), a sinogram (angles, count) (views, 1, u).
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    assert glrecon.from_astra_order(a, "volume").shape == (4, 1, 6)
    np.testing.assert_array_equal(glrecon.to_astra_order(glrecon.from_astra_order(a, "volume"), "volume", two_d=True), a)
    np.testing.assert_array_equal(glrecon.to_astra_order(glrecon.from_astra_order(a, "projections"), "projections", two_d=True), a)


def test_a_cylindrical_detector_is_refused_saying_so():
    with pytest.raises(glrecon.UsageError, match=r"proj_geom\['type'\]: expected 'cone', .* found 'cyl_cone_vec': a cylindrical "
                                                 r"detector is not supported yet"):
        glrecon.from_astra({"type": "cyl_cone_vec", "DetectorRowCount": 3, "DetectorColCount": 5})


def test_astra_errors_name_the_key():
    with pytest.raises(glrecon.InputError, match=r"proj_geom\['DistanceOriginSource'\]: expected ASTRA's field, found none"):
        glrecon.from_astra({"type": "cone", "DetectorSpacingX": 1.0, "DetectorSpacingY": 1.0, "DetectorRowCount": 3,
                            "DetectorColCount": 5, "ProjectionAngles": [0.0], "DistanceOriginDetector": 500.0})
    with pytest.raises(glrecon.InputError, match=r"vol_geom\['GridColCount'\]: expected ASTRA's field"):
        glrecon.astra_grid({"GridRowCount": 4})
    with pytest.raises(glrecon.InputError, match=r"WindowMaxX: expected more than WindowMinX = 3.0, found -3.0"):
        glrecon.astra_grid({"GridRowCount": 4, "GridColCount": 6, "GridSliceCount": 2, "option": {"WindowMinX": 3, "WindowMaxX": -3}})


# ---- array orders -----------------------------------------------------------------------------------------------

def test_order_helpers_are_inverse_views():
    a = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    for to, back in ((glrecon.to_astra_order, glrecon.from_astra_order), (glrecon.to_tigre_order, glrecon.from_tigre_order)):
        for what in ("volume", "projections"):
            np.testing.assert_array_equal(back(to(a, what), what), a)
            assert np.shares_memory(to(a, what), a)  # views, no copies
    # A peer volume (z, y, x) of its own axes: element (k, j, i) is glrecon's (ny - 1 - j, k, i).
    np.testing.assert_array_equal(glrecon.from_tigre_order(a, "volume")[3 - 1 - 1, 0, 2], a[0, 1, 2])
    assert glrecon.from_astra_order(a, "projections").shape == (3, 2, 4)  # (rows, angles, cols) -> (views, v, u)
    with pytest.raises(glrecon.UsageError, match="what: expected 'volume' or 'projections', found 'sinogram'"):
        glrecon.to_astra_order(a, "sinogram")
    with pytest.raises(glrecon.InputError, match="expected a 2-D .ASTRA 2-D. or 3-D volume array, found 1 dimensions"):
        glrecon.from_astra_order(a[0, 0], "volume")


# ---- end to end: a blob placed by each peer's convention projects where the peer says ---------------------------------

def blob(shape, centre_index, positions, sigma):
    """A Gaussian of ``sigma`` mm about the voxel ``centre_index`` of an array of ``shape``; ``positions(index)`` gives a
    voxel's world position (3 arrays) from its array index (3 arrays)."""
    index = np.indices(shape, dtype=np.float64)
    here = positions(index)
    at = positions(np.array(centre_index, dtype=np.float64).reshape(3, 1, 1, 1))
    r2 = sum((h - a) ** 2 for h, a in zip(here, at))
    return np.exp(-r2 / (2 * sigma ** 2)).astype(np.float32)


def centroid(image):
    """(column, row) centroid of a 2-D image."""
    rows_, cols = np.indices(image.shape)
    total = image.sum()
    return float((cols * image).sum() / total), float((rows_ * image).sum() / total)


def hits(source, point, centre, u, v):
    """Where the ray from ``source`` through ``point`` meets the plane through ``centre`` spanned by ``u`` and ``v``:
    (a, b) with the hit at centre + a u + b v."""
    matrix = np.stack([u, v, source - point], axis=1)
    a, b, _ = np.linalg.solve(matrix, source - centre)
    return a, b


# Why 0.1 pixel holds (the bound): the blob is a Gaussian of 1.5 mm centred on a voxel; its shadow is a Gaussian
# about the centre's projection, widened by the magnification (1.5: sigma about 2 pixels), and its centroid sits there up
# to (a) perspective: the near half is magnified more, a shift of about offset * (sigma / distance)^2 = 40 mm *
# (1.5 / 500)^2 = 4e-4 mm; (b) sampling a Gaussian of sigma >= 2 pixels at pixel centres: of order exp(-2 pi^2 sigma^2),
# nil; (c) the blob cut by the volume's faces 3.3 sigma away: about 1e-3 of its mass, a shift of 1e-3 pixel or less;
# (d) the projector's trilinear interpolation of a blob only 1.2 to 2 voxels wide: the rays cross the voxel lattice at
# points not symmetric about the centre, so the interpolated blob is not quite symmetric: measured at 0.003 to 0.010
# pixel here. Each convention the test checks moves the shadow further than 0.1 pixel: half a pixel for ASTRA's pixel
# edge taken for its centre, a pixel for COR (0.7 mm magnified 1.5 times), a voxel or more for an axis, a sign or an
# offset.
BOUND = 0.1


@pytest.mark.parametrize("mode", ["cone", "parallel"])
def test_a_blob_placed_by_tigre_projects_where_tigre_says(mode):
    # Cone: each ray from the source through the blob. Parallel (TIGRE's parallel projector, computeDeltas_parallel):
    # each pixel's ray from (DSO, u, v) to the detector's (DSO - DSD, u + offU, v + offV), turned by the angle, moved by
    # COR and minus offOrigin: tilted where the detector is offset (offset further here so that the tilt shows). The same
    # 0.1 pixel for both (BOUND above; no perspective in parallel beam).
    angles = np.array([0.3, 1.9, 4.0])
    n_voxel, d_voxel = (16, 20, 24), (1.0, 1.25, 0.75)  # TIGRE (z, y, x)
    off_detector = np.array([1.5, -2.0]) if mode == "cone" else np.array([15.0, -20.0])  # (v, u) mm
    off_origin, cor = np.array([2.0, -3.0, 4.0]), 0.7  # (z, y, x), mm
    geo = dict(DSO=500.0, DSD=750.0, nDetector=np.array([48, 64]), dDetector=np.array([1.2, 1.0]), nVoxel=np.array(n_voxel),
               dVoxel=np.array(d_voxel), offOrigin=off_origin, offDetector=off_detector, COR=cor, mode=mode)

    def tigre_position(index):  # TIGRE: voxel (k, j, i) of its (z, y, x) array at ((i - (nx - 1)/2) dx, ...) + offOrigin
        k, j, i = index
        return ((i - (n_voxel[2] - 1) / 2) * d_voxel[2] + off_origin[2], (j - (n_voxel[1] - 1) / 2) * d_voxel[1] + off_origin[1],
                (k - (n_voxel[0] - 1) / 2) * d_voxel[0] + off_origin[0])

    where = (5, 13, 8)
    volume = blob(n_voxel, where, tigre_position, 1.5)
    geometry = glrecon.from_tigre(geo, angles)
    assert geometry.is_parallel == (mode == "parallel")
    p = glrecon.project(glrecon.from_tigre_order(volume, "volume"), geometry)
    projections = glrecon.to_tigre_order(p, "projections")  # TIGRE's (angles, v, u)
    point = np.array(tigre_position(np.array(where, dtype=np.float64)))
    for view, alpha in enumerate(angles):
        c, s = np.cos(alpha), np.sin(alpha)
        rz = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
        shift = rz @ [0, cor, 0]  # COR: source and detector along the rotated y
        centre = rz @ [500.0 - 750.0, off_detector[1], off_detector[0]] + shift
        u, v = rz @ [0, 1.0, 0], np.array([0, 0, 1.0])
        if mode == "cone":
            a, b = hits(rz @ [500.0, 0, 0] + shift, point, centre, u, v)
        else:
            a, b = parallel_hits(rz @ [-750.0, off_detector[1], off_detector[0]], point, centre, u, v)
            # The rays' tilt matters: along the detector's normal instead, the blob would land more than a pixel away.
            a0, b0 = parallel_hits(rz @ [-1.0, 0, 0], point, centre, u, v)
            assert np.hypot(a0 / 1.0 - a / 1.0, b0 / 1.2 - b / 1.2) > 10 * BOUND
        # Column u at (u - (nU - 1)/2) dU from the centre; row v at (v - (nV - 1)/2) dV upward (row 0 at the bottom).
        expected = (a / 1.0 + (64 - 1) / 2, b / 1.2 + (48 - 1) / 2)
        found = centroid(projections[view])
        assert np.hypot(found[0] - expected[0], found[1] - expected[1]) < BOUND, (view, found, expected)


def test_a_blob_placed_by_astra_projects_where_astra_says():
    # A windowed volume (not centred) and a cone_vec scan with a shifted, tilted detector.
    vol_geom = {"GridRowCount": 20, "GridColCount": 24, "GridSliceCount": 16,
                "option": {"WindowMinX": -14.0, "WindowMaxX": 10.0, "WindowMinY": -8.0, "WindowMaxY": 17.0, "WindowMinZ": -6.0,
                           "WindowMaxZ": 10.0}}
    n = (16, 20, 24)  # ASTRA's array (slices, rows, cols)
    d = ((10.0 - -14.0) / 24, (17.0 - -8.0) / 20, (10.0 - -6.0) / 16)  # (x, y, z) voxel sizes: 1, 1.25, 1

    def astra_position(index):  # ASTRA: voxel (slice k, row j, col i) at min + (index + 1/2) d
        k, j, i = index
        return (-14.0 + (i + 0.5) * d[0], -8.0 + (j + 0.5) * d[1], -6.0 + (k + 0.5) * d[2])

    vectors = []
    for t in (0.3, 1.9, 4.0):
        c, s = np.cos(t), np.sin(t)
        tilt_u = np.array([c, s, 0.0]) * np.cos(0.1) + np.array([0, 0, 1.0]) * np.sin(0.1)  # u tilted 0.1 rad out of plane
        v = np.cross(tilt_u, [-s, c, 0.0])  # perpendicular to u, in the detector plane
        vectors.append(np.concatenate([[500 * s, -500 * c, 3.0], [-250 * s + 2 * c, 250 * c + 2 * s, -1.5], tilt_u * 1.0, v * 1.2]))
    vectors = np.array(vectors)
    proj_geom = {"type": "cone_vec", "DetectorRowCount": 48, "DetectorColCount": 64, "Vectors": vectors}
    where = (5, 13, 8)
    volume = blob(n, where, astra_position, 1.5)
    geometry = glrecon.from_astra(proj_geom, vol_geom)
    sinogram = glrecon.to_astra_order(glrecon.project(glrecon.from_astra_order(volume, "volume"), geometry), "projections")
    point = np.array(astra_position(np.array(where, dtype=np.float64)))
    for view, row in enumerate(vectors):
        source, centre, u, v = row[0:3], row[3:6], row[6:9], row[9:12]
        a, b = hits(source, point, centre, u, v)
        # ASTRA: pixel (row r, col q) centred at d + (q - cols/2 + 1/2) u + (r - rows/2 + 1/2) v.
        expected = (a + 64 / 2 - 0.5, b + 48 / 2 - 0.5)
        found = centroid(sinogram[:, view, :])
        assert np.hypot(found[0] - expected[0], found[1] - expected[1]) < BOUND, (view, found, expected)


def parallel_hits(ray, point, centre, u, v):
    """Where the line through ``point`` along ``ray`` meets the plane through ``centre`` spanned by ``u`` and ``v``: (a, b)
    with the hit at centre + a u + b v."""
    a, b, _ = np.linalg.solve(np.stack([u, v, -ray], axis=1), point - centre)
    return a, b


# The same 0.1 pixel as the cone (BOUND above): no perspective here (a), the rest as there.
def test_a_blob_placed_by_astra_parallel3d_vec_projects_where_astra_says():
    # A windowed volume (not centred) and a parallel3d_vec scan with tilted rays, a shifted, rolled detector.
    vol_geom = {"GridRowCount": 20, "GridColCount": 24, "GridSliceCount": 16,
                "option": {"WindowMinX": -14.0, "WindowMaxX": 10.0, "WindowMinY": -8.0, "WindowMaxY": 17.0, "WindowMinZ": -6.0,
                           "WindowMaxZ": 10.0}}
    n = (16, 20, 24)
    d = ((10.0 - -14.0) / 24, (17.0 - -8.0) / 20, (10.0 - -6.0) / 16)

    def astra_position(index):  # ASTRA 3-D: voxel (slice k, row j, col i) at min + (index + 1/2) d
        k, j, i = index
        return (-14.0 + (i + 0.5) * d[0], -8.0 + (j + 0.5) * d[1], -6.0 + (k + 0.5) * d[2])

    vectors = []
    for t in (0.3, 1.9, 4.0):
        c, s = np.cos(t), np.sin(t)
        ray = np.array([s, -c, 0.15])  # 8.5 degrees out of the axial plane
        u = np.array([c, s, 0.0]) * np.cos(0.1) + np.array([0, 0, 1.0]) * np.sin(0.1)  # rolled 0.1 rad
        v = np.cross(u, [-s, c, 0.0])
        vectors.append(np.concatenate([ray, [2 * c + 30 * s, 2 * s - 30 * c, -1.5], u * 0.9, v * 1.1]))
    vectors = np.array(vectors)
    proj_geom = {"type": "parallel3d_vec", "DetectorRowCount": 40, "DetectorColCount": 56, "Vectors": vectors}
    where = (5, 13, 8)
    volume = blob(n, where, astra_position, 1.5)
    geometry = glrecon.from_astra(proj_geom, vol_geom)
    assert geometry.is_parallel
    sinogram = glrecon.to_astra_order(glrecon.project(glrecon.from_astra_order(volume, "volume"), geometry), "projections")
    point = np.array(astra_position(np.array(where, dtype=np.float64)))
    for view, row in enumerate(vectors):
        ray, centre, u, v = row[0:3], row[3:6], row[6:9], row[9:12]
        a, b = parallel_hits(ray, point, centre, u, v)
        expected = (a + 56 / 2 - 0.5, b + 40 / 2 - 0.5)  # ASTRA's pixel centres, as for the cone
        found = centroid(sinogram[:, view, :])
        assert np.hypot(found[0] - expected[0], found[1] - expected[1]) < BOUND, (view, found, expected)


def test_a_blob_in_an_astra_2d_slice_projects_where_astra_says():
    """ASTRA 2-D parallel beam: pixel (row j, col i) at (minX + (i + 1/2) dx, maxY - (j + 1/2) dy) (rows from the top), the
    detector's bin q at (q - count/2 + 1/2) DetectorWidth along u = (cos t, sin t), rays along (sin t, -cos t)."""
    vol_geom = {"GridRowCount": 40, "GridColCount": 48, "option": {"WindowMinX": -24.0, "WindowMaxX": 24.0, "WindowMinY": -18.0,
                                                                   "WindowMaxY": 22.0}}
    angles = np.array([0.3, 1.9, 2.8])
    proj_geom = {"type": "parallel", "DetectorWidth": 0.8, "DetectorCount": 90, "ProjectionAngles": angles}
    j0, i0 = 12, 30
    jj, ii = np.indices((40, 48), dtype=np.float64)
    x, y = -24.0 + (ii + 0.5), 22.0 - (jj + 0.5)
    px, py = -24.0 + (i0 + 0.5), 22.0 - (j0 + 0.5)
    slice_ = np.exp(-((x - px) ** 2 + (y - py) ** 2) / (2 * 1.5 ** 2)).astype(np.float32)
    geometry = glrecon.from_astra(proj_geom, vol_geom)
    sinogram = glrecon.to_astra_order(glrecon.project(glrecon.from_astra_order(slice_, "volume"), geometry), "projections",
                                      two_d=True)
    assert sinogram.shape == (3, 90)
    for view, t in enumerate(angles):
        a = px * np.cos(t) + py * np.sin(t)  # the offset along u (rays along (sin t, -cos t) keep it)
        expected = a / 0.8 + 90 / 2 - 0.5
        bins = np.arange(90)
        found = float((bins * sinogram[view]).sum() / sinogram[view].sum())
        assert abs(found - expected) < BOUND, (view, found, expected)


def test_parallel_fbp_of_an_astra_2d_slice_over_half_a_turn():
    """ASTRA s014's shape: a 2-D slice, 'parallel' over [0, pi) (np.linspace(0, pi, 180, False)), FBP: the disc comes back
    (its density 1 within 2% at its centre, 0 well outside), with ASTRA's [0, pi) taken as a complete scan."""
    vol_geom = {"GridRowCount": 64, "GridColCount": 64}
    angles = np.linspace(0, np.pi, 180, False)
    proj_geom = {"type": "parallel", "DetectorWidth": 1.0, "DetectorCount": 96, "ProjectionAngles": angles}
    jj, ii = np.indices((64, 64), dtype=np.float64)
    disc = (((ii - 31.5) ** 2 + (jj - 31.5) ** 2) <= 20 ** 2).astype(np.float32)
    g = glrecon.from_astra(proj_geom, vol_geom)
    sino = glrecon.project(glrecon.from_astra_order(disc, "volume"), g)
    report = {}
    rec = glrecon.to_astra_order(glrecon.fbp(sino, g, backend="cpu", report=report), "volume", two_d=True)
    assert rec.shape == (64, 64)
    assert abs(float(rec[24:40, 24:40].mean()) - 1.0) < 0.02
    assert abs(float(rec[:4, :4].mean())) < 0.02
    # Short of 180 degrees: refused, naming the range; short_scan=False reconstructs the limited angle.
    short = np.linspace(0, 0.75 * np.pi, 120, False)
    gs = glrecon.from_astra({**proj_geom, "ProjectionAngles": short}, vol_geom)
    with pytest.raises(glrecon.GeometryError, match="at least 180 degrees for a parallel-beam scan"):
        glrecon.fbp(glrecon.project(glrecon.from_astra_order(disc, "volume"), gs), gs, backend="cpu")
    glrecon.fbp(glrecon.project(glrecon.from_astra_order(disc, "volume"), gs), gs, backend="cpu", short_scan=False)


# ---- Grid ----------------------------------------------------------------------------------------------------------

def test_a_grid_travels_with_the_geometry_and_stands_for_size():
    geometry = glrecon.Geometry.circular(24, detector=(32, 32), pixel=(8.0, 8.0))
    p = glrecon.phantom.project(geometry)
    grid = glrecon.Grid(12, 20.0, origin=(-100.0, -110.0, -120.0))
    explicit = glrecon.fdk(p, geometry, size=12, spacing=20.0, origin=(-100.0, -110.0, -120.0), backend="cpu")
    for vol in (glrecon.fdk(p, geometry, size=grid, backend="cpu"), glrecon.fdk(p, geometry.with_grid(grid), backend="cpu")):
        np.testing.assert_array_equal(vol, explicit)
        assert vol.origin == explicit.origin and vol.spacing == explicit.spacing
    with_grid = geometry.with_grid(grid)
    assert with_grid.with_detector((32, 32), (8.0, 8.0)).grid == grid  # kept by with_detector
    np.testing.assert_array_equal(glrecon.sirt(p, with_grid, iterations=1), glrecon.sirt(p, geometry, size=grid, iterations=1))
    # project: the geometry's grid describes a plain array of its shape; a volume of another shape is refused, naming both.
    np.testing.assert_array_equal(glrecon.project(np.asarray(explicit), with_grid), glrecon.project(explicit, geometry))
    with pytest.raises(glrecon.InputError, match=r"volume: shape: expected \(12, 12, 12\) \(z, y, x\), the grid's .*found \(8, 8, 8\)"):
        glrecon.project(np.zeros((8, 8, 8), np.float32), with_grid)
    with pytest.raises(glrecon.UsageError, match="spacing, origin: expected none beside size=Grid"):
        glrecon.fdk(p, geometry, size=grid, spacing=2.0)
    with pytest.raises(glrecon.UsageError, match="size: expected the volume's voxels"):
        glrecon.Operator(geometry)
    assert glrecon.Operator(with_grid).volume_shape == grid.shape == (12, 12, 12)


# ---- bug 3: every failure of a call is a glrecon.Error ----------------------------------------------------------------

@pytest.mark.parametrize("kind", ["runtime_error", "logic_error", "out_of_range", "system_error", "cuda"])
def test_every_cpp_failure_is_a_glrecon_error(kind):
    # What the bindings' translator makes of each kind of C++ exception (a CUDA failure, FFTW's planner, std::thread):
    # pybind11 alone made the standard ones a bare RuntimeError (or IndexError), which escaped `except glrecon.Error`.
    with pytest.raises(glrecon.Error, match="from C\\+\\+|CUDA: cudaMalloc"):
        glrecon._glrecon._throw_for_test(kind)
    with pytest.raises(glrecon.CudaError):
        glrecon._glrecon._throw_for_test("cuda")
    with pytest.raises(MemoryError):
        glrecon._glrecon._throw_for_test("bad_alloc")


def test_the_example_catches_glrecon_error_only():
    source = os.environ.get("GLRECON_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
    text = open(os.path.join(source, "examples", "reconstruct_phantom.py")).read()
    assert "except glrecon.Error" in text and "RuntimeError" not in text


# ---- bug 5: project()'s input checks, progress and Ctrl-C -------------------------------------------------------------

def test_project_input_checks_name_the_volume():
    geometry = glrecon.Geometry.circular(4, detector=(8, 8), pixel=(4.0, 4.0))
    with pytest.raises(glrecon.InputError, match=r"volume: shape: expected 3 dimensions, found 2 \(8, 8\)"):
        glrecon.project(np.zeros((8, 8), np.float32), geometry)  # not the origin blamed
    with pytest.raises(glrecon.InputError, match="volume: dtype: expected real numbers .* found complex128"):
        glrecon.project(np.zeros((8, 8, 8), complex), geometry)  # not silently cast
    listed = glrecon.project(np.ones((8, 8, 8)).tolist(), geometry, spacing=2.0)  # a Python list is an array
    np.testing.assert_array_equal(listed, glrecon.project(np.ones((8, 8, 8), np.float32), geometry, spacing=2.0))
    with pytest.raises(glrecon.UsageError, match="size: expected a whole number of voxels from 1 to 65536, found 32.5"):
        glrecon.fdk(np.zeros((4, 8, 8)), geometry, size=32.5)


def test_project_progress_and_its_exceptions():
    geometry = glrecon.Geometry.circular(40, detector=(16, 16), pixel=(8.0, 8.0))
    volume = glrecon.phantom.shepp_logan(size=16, spacing=8.0)
    seen = []
    p = glrecon.project(volume, geometry, progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1] == (40, 40) and all(t == 40 for _, t in seen)
    assert all(a[0] < b[0] for a, b in zip(seen, seen[1:]))
    np.testing.assert_array_equal(p, glrecon.project(volume, geometry))  # in groups or not: the same projections

    def stop(done, total):
        raise KeyError("stop here")

    with pytest.raises(KeyError, match="stop here"):
        glrecon.project(volume, geometry, progress=stop)


def test_project_stops_at_ctrl_c():
    # 600 views: about 1.6 s on one thread of the development machine (200 took 0.5 s once the forward projection took
    # one sample per voxel plane, under the 0.8 s the check below needs to tell).
    geometry = glrecon.Geometry.circular(600, detector=(64, 64), pixel=(4.0, 4.0))
    volume = glrecon.phantom.shepp_logan(size=64, spacing=3.0)
    start = time.perf_counter()
    glrecon.project(volume, geometry, threads=1)
    whole = time.perf_counter() - start
    # SIGINT after a tenth of the run: the projection must stop within about one group of views (a group grows while it
    # takes under 0.1 s, so at most about 0.2 s), long before the end. Before, the call ran to its end and the
    # KeyboardInterrupt came after. Half the run leaves room for a slow or busy machine; the run (2 s or so here) must be
    # long enough to tell.
    assert whole > 0.8, f"the projection took {whole:.2f} s, too short to tell"
    timer = threading.Timer(0.1 * whole, os.kill, (os.getpid(), signal.SIGINT))
    start = time.perf_counter()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            glrecon.project(volume, geometry, threads=1)
    finally:
        timer.cancel()
    assert time.perf_counter() - start < 0.5 * whole
