"""glrecon from Python against the command line: the same inputs give the same bits, errors the same text.

Run by ctest (python.pytest) with PYTHONPATH=build/python and GLRECON_CLI naming the command-line tool."""
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import glrecon

CLI = os.environ.get("GLRECON_CLI", "glrecon")
# A scan every test reconstructs in well under a second on one core: 24 views of 32 x 32 pixels of 8 mm.
SCAN = ["--projections", "24", "--detector", "32", "--detector-spacing", "8"]
GRID = ["--size", "16", "--spacing", "16"]


def cli(cwd, *args, ok=True):
    r = subprocess.run([CLI, *args], cwd=cwd, capture_output=True, text=True)
    if ok:
        assert r.returncode == 0, r.stderr
    return r


@pytest.fixture(scope="module")
def scan(tmp_path_factory):
    d = tmp_path_factory.mktemp("scan")
    cli(d, "phantom", "-o", "scan", *SCAN, "-q")
    return d


def gl_available():
    try:
        glrecon.fdk(np.zeros((24, 32, 32), np.float32), glrecon.Geometry.circular(24, detector=(32, 32), pixel=(8, 8)),
                    size=4, spacing=16, backend="compute", window=8)
        return True
    except glrecon.GlError:
        return False


# ---- geometry ----

def test_circular_equals_the_rtk_file_the_cli_writes(scan):
    mine = glrecon.Geometry.circular(24, detector=(32, 32), pixel=(8.0, 8.0))
    rtk = glrecon.read_rtk_geometry(scan / "scan" / "geometry.xml")
    assert rtk.detector is None and len(rtk) == 24  # RTK files carry no detector: it comes from the projections
    p = glrecon.read_image(scan / "scan" / "projections.mha")
    bound = rtk.with_detector((32, 32), p.spacing[:2], p.origin[:2])
    np.testing.assert_array_equal(bound.vectors, mine.vectors)  # the XML keeps 17 digits: exact
    np.testing.assert_array_equal(rtk.gantry_angles, np.arange(24) * 15.0)


def test_rtk_geometry_round_trip(tmp_path):
    g = glrecon.Geometry.circular(10, sid=900, sdd=1400, detector=(8, 6), pixel=(1.5, 2.0), arc=200, detector_offset=(3, -2))
    g.write_rtk(tmp_path / "g.xml")
    back = glrecon.read_rtk_geometry(tmp_path / "g.xml").with_detector((8, 6), (1.5, 2.0))
    np.testing.assert_array_equal(back.vectors, g.vectors)
    with pytest.raises(glrecon.InputError, match="existing file"):
        g.write_rtk(tmp_path / "g.xml")


def test_from_astra_vec_by_hand():
    # One ASTRA view: source 1000 mm along -y, detector centre 536 mm along +y, 5 columns along x, 3 rows along z.
    astra = [[0, -1000, 0, 0, 536, 0, 1, 0, 0, 0, 0, 1]]
    g = glrecon.from_astra_vec(astra, det_row_count=3, det_col_count=5)
    # Pixel (0, 0) = d - 2 u - 1 v = (-2, 536, -1); then ASTRA (x, y, z) -> glrecon (x, z, -y).
    expected = [0, 0, 1000, -2, -1, -536, 1, 0, 0, 0, 1, 0]
    np.testing.assert_array_equal(g.vectors, [expected])
    assert g.detector == (5, 3)
    # That is RTK's gantry angle 0 of the same scan; ASTRA's 'cone' geometry at angle t (source
    # (sin t, -cos t, 0) DSO, detector centre (-sin t, cos t, 0) ODD, u (cos t, sin t, 0) du, v (0, 0, dv))
    # is RTK's gantry angle t in general.
    t = np.deg2rad(np.arange(12) * 30.0)
    s, c, z = np.sin(t), np.cos(t), np.zeros_like(t)
    cone = np.stack([s * 1000, -c * 1000, z, -s * 536, c * 536, z, c * 1.5, s * 1.5, z, z, z, z + 2.0], axis=1)
    a = glrecon.from_astra_vec(cone, det_row_count=6, det_col_count=8)
    r = glrecon.Geometry.circular(12, sid=1000, sdd=1536, detector=(8, 6), pixel=(1.5, 2.0))
    # Both sides compute sines of the same angles in double, by different routes (RTK's rotation matrices):
    # a few ulps of 1000 mm.
    np.testing.assert_allclose(a.vectors, r.vectors, rtol=0, atol=1e-9)


def test_from_tigre_by_hand():
    # TIGRE at angle 0: source (DSO, 0, 0), detector centre (DSO - DSD, 0, 0) = (-536, 0, 0); nv = 3 rows of 2 mm,
    # nu = 5 columns of 1 mm; u along +y, v along +z; pixel (0, 0) = centre - 2 u - 1 v = (-536, -2, -2).
    g = glrecon.from_tigre(DSO=1000, DSD=1536, angles=[0.0, np.pi / 2], n_detector=(3, 5), d_detector=(2.0, 1.0))
    # TIGRE (x, y, z) -> glrecon (x, z, -y).
    view0 = [1000, 0, 0, -536, -2, 2, 0, 0, -1, 0, 2, 0]
    # At pi/2 the source is at TIGRE (0, 1000, 0) -> glrecon (0, 0, -1000); u along TIGRE -x.
    view1 = [0, 0, -1000, 2, -2, 536, -1, 0, 0, 0, 2, 0]
    np.testing.assert_allclose(g.vectors, [view0, view1], rtol=0, atol=1e-12)
    # Offsets: the detector moves in its own u and v, the scan by minus the volume's offset, (z, y, x) in TIGRE Python.
    h = glrecon.from_tigre(1000, 1536, [0.0], (3, 5), (2.0, 1.0), off_detector=(4.0, 3.0), off_origin=(0, 0, 10.0))
    np.testing.assert_allclose(h.vectors, [[990, 0, 0, -546, 2, -1, 0, 0, -1, 0, 2, 0]], rtol=0, atol=1e-12)


# ---- files ----

def test_read_image_gives_the_cli_file_with_its_header(scan):
    p = glrecon.read_image(scan / "scan" / "projections.mha")
    assert p.shape == (24, 32, 32) and p.dtype == np.float32 and p.flags.c_contiguous
    assert p.spacing == (8.0, 8.0, 1.0) and p.origin == (-124.0, -124.0, 0.0)
    assert not p.flags.owndata  # glrecon's buffer, handed over without a copy
    raw = open(scan / "scan" / "projections.mha", "rb").read()
    data = np.frombuffer(raw[len(raw) - p.nbytes:], dtype="<f4").reshape(p.shape)
    np.testing.assert_array_equal(p, data)  # (views, v, u) is the file's own order


def test_tiff_and_mha_round_trips(tmp_path):
    rng = np.random.default_rng(1)
    vol = rng.standard_normal((5, 4, 3)).astype(np.float32)
    for name in ("v.mha", "v.tif"):
        glrecon.write_image(tmp_path / name, vol, spacing=(0.5, 0.25, 2.0), origin=(1.0, -2.0, 3.0))
        back = glrecon.read_image(tmp_path / name)
        np.testing.assert_array_equal(back, vol)
        # TIFF's resolution tag comes back through a float (docs/formats.md): 0.5 and 0.25 are exact in it.
        assert back.spacing == (0.5, 0.25, 2.0) and back.origin == (1.0, -2.0, 3.0)
    # 2D arrays are one slice; other dtypes are converted.
    glrecon.write_image(tmp_path / "s.tif", np.arange(6, dtype=np.uint16).reshape(2, 3))
    s = glrecon.read_image(tmp_path / "s.tif")
    assert s.shape == (1, 2, 3) and s.dtype == np.float32 and s[0, 1, 2] == 5
    with pytest.raises(glrecon.InputError, match="existing file"):
        glrecon.write_image(tmp_path / "v.tif", vol)
    with pytest.raises(glrecon.InputError, match="output file name"):
        glrecon.write_image(tmp_path / "v.png", vol)
    assert sorted(os.listdir(tmp_path)) == ["s.tif", "v.mha", "v.tif"]  # no temporary files


def test_errors_carry_the_cli_messages(scan, tmp_path):
    whole = open(scan / "scan" / "projections.mha", "rb").read()
    (tmp_path / "cut.mha").write_bytes(whole[:-1000])
    (tmp_path / "cut.tif").write_bytes(b"II*\x00" + b"\x00" * 3)
    for bad in ("cut.mha", "cut.tif"):
        with pytest.raises(glrecon.InputError) as e:
            glrecon.read_image(tmp_path / bad)
        r = cli(tmp_path, "fdk", "-g", str(scan / "scan" / "geometry.xml"), "-p", str(tmp_path / bad), "-o", "v.mha", *GRID,
                ok=False)
        assert r.returncode == 1
        assert r.stderr.strip() == "glrecon: error: " + str(e.value), (r.stderr, str(e.value))
        assert isinstance(e.value, glrecon.Error) and isinstance(e.value, RuntimeError)
    assert not (tmp_path / "v.mha").exists()
    with pytest.raises(glrecon.InputError, match="found no such file"):
        glrecon.read_image(tmp_path / "none.mha")
    geo = glrecon.read_rtk_geometry(scan / "scan" / "geometry.xml")
    p = glrecon.read_image(scan / "scan" / "projections.mha")
    with pytest.raises(glrecon.InputError, match="number of projections: expected 24 as in the geometry, found 23"):
        glrecon.fdk(p[:23], geo, size=8, spacing=16)
    with pytest.raises(glrecon.InputError, match="detector layout"):
        glrecon.fdk(np.asarray(p), geo, size=8, spacing=16)  # a plain array: no spacing, and RTK has none
    bad = p.copy()
    bad[3, 2, 1] = np.nan
    with pytest.raises(glrecon.InputError, match=r"projection 3 pixel \(1, 2\): expected a finite value, found NaN"):
        glrecon.fdk(bad, geo, size=8, spacing=16, backend="cpu")
    with pytest.raises(glrecon.UsageError, match="nope"):
        glrecon.fdk(p, geo, size=8, spacing=16, backend="nope")
    with pytest.raises(glrecon.GeometryError):
        glrecon.fdk(p, geo, size=64, spacing=40, backend="cpu")  # reaches behind the source


# ---- reconstruction ----

def test_fdk_equals_the_cli_bit_for_bit(scan, tmp_path):
    geo = glrecon.read_rtk_geometry(scan / "scan" / "geometry.xml")
    p = glrecon.read_image(scan / "scan" / "projections.mha")
    vol = glrecon.fdk(p, geo, size=16, spacing=16, backend="cpu")
    cli(scan, "fdk", "-g", "scan/geometry.xml", "-p", "scan/projections.mha", "-o", str(tmp_path / "cli.mha"), *GRID,
        "--backend", "cpu", "-q")
    ref = glrecon.read_image(tmp_path / "cli.mha")
    assert vol.shape == (16, 16, 16) and vol.dtype == np.float32
    np.testing.assert_array_equal(vol, ref)
    assert vol.spacing == ref.spacing and vol.origin == ref.origin
    assert 0.9 < vol[8, 8, 8] < 1.15  # the phantom's brain (1.02), blurred by 24 views of 8 mm
    # TIFF out: the same file, byte for byte.
    cli(scan, "fdk", "-g", "scan/geometry.xml", "-p", "scan/projections.mha", "-o", str(tmp_path / "cli.tif"), *GRID,
        "--backend", "cpu", "-q")
    glrecon.write_image(tmp_path / "py.tif", vol)
    assert (tmp_path / "py.tif").read_bytes() == (tmp_path / "cli.tif").read_bytes()
    # Other filters and options go through as on the command line.
    hann = glrecon.fdk(p, geo, size=16, spacing=16, backend="cpu", filter="hann", cutoff=0.8, origin=(0, 0, 0))
    cli(scan, "fdk", "-g", "scan/geometry.xml", "-p", "scan/projections.mha", "-o", str(tmp_path / "hann.mha"), *GRID,
        "--origin", "0,0,0", "--filter", "hann", "--cutoff", "0.8", "--backend", "cpu", "-q")
    np.testing.assert_array_equal(hann, glrecon.read_image(tmp_path / "hann.mha"))
    # A region of interest: zeros outside, the same bits inside.
    fov = glrecon.fdk(p, geo, size=16, spacing=16, backend="cpu", roi="fov")
    cli(scan, "fdk", "-g", "scan/geometry.xml", "-p", "scan/projections.mha", "-o", str(tmp_path / "fov.mha"), *GRID,
        "--roi", "fov", "--backend", "cpu", "-q")
    np.testing.assert_array_equal(fov, glrecon.read_image(tmp_path / "fov.mha"))
    assert (fov == 0).any() and (fov != 0).any()


@pytest.mark.parametrize("backend", ["graphics", "compute"])
def test_gpu_backends_equal_the_cli_stream_bit_for_bit(scan, tmp_path, backend):
    if not gl_available():
        pytest.skip("no OpenGL 4.5 device (EGL)")
    geo = glrecon.read_rtk_geometry(scan / "scan" / "geometry.xml")
    p = glrecon.read_image(scan / "scan" / "projections.mha")
    vol = glrecon.fdk(p, geo, size=16, spacing=16, backend=backend, window=8)
    # glrecon.fdk runs the streaming pipeline: the command line's --stream, same window, same bits.
    cli(scan, "fdk", "-g", "scan/geometry.xml", "-p", "scan/projections.mha", "-o", str(tmp_path / "s.mha"), *GRID,
        "--backend", backend, "--window", "8", "--stream", "-q")
    np.testing.assert_array_equal(vol, glrecon.read_image(tmp_path / "s.mha"))


def test_projections_are_read_in_place_or_converted_once(scan):
    geo = glrecon.read_rtk_geometry(scan / "scan" / "geometry.xml")
    p = glrecon.read_image(scan / "scan" / "projections.mha")
    report = {}
    a = glrecon.fdk(p, geo, size=8, spacing=32, backend="cpu", report=report)
    assert report["projections_address"] == p.ctypes.data  # the caller's memory, not a copy
    assert report["backend"].startswith("cpu")
    p64 = glrecon.ImageArray(p.astype(np.float64), p.spacing, p.origin)
    b = glrecon.fdk(p64, geo, size=8, spacing=32, backend="cpu", report=report)
    assert report["projections_address"] != p64.ctypes.data  # converted to float32 once
    np.testing.assert_array_equal(a, b)
    strided = glrecon.ImageArray(np.ascontiguousarray(np.swapaxes(p, 1, 2)).swapaxes(1, 2), p.spacing, p.origin)
    assert not strided.flags.c_contiguous
    c = glrecon.fdk(strided, geo, size=8, spacing=32, backend="cpu", report=report)
    assert report["projections_address"] != strided.ctypes.data
    np.testing.assert_array_equal(a, c)
    assert not a.flags.owndata  # the result is glrecon's buffer, handed over


def test_progress_callback_and_its_exceptions(scan):
    geo = glrecon.read_rtk_geometry(scan / "scan" / "geometry.xml")
    p = glrecon.read_image(scan / "scan" / "projections.mha")
    seen = []
    glrecon.fdk(p, geo, size=8, spacing=32, backend="cpu", batch=5, progress=lambda done, total: seen.append((done, total)))
    assert seen and seen[-1] == (24, 24)
    assert all(a[0] < b[0] for a, b in zip(seen, seen[1:])) and all(t == 24 for _, t in seen)

    def stop(done, total):
        raise KeyError("stop here")

    with pytest.raises(KeyError, match="stop here"):
        glrecon.fdk(p, geo, size=8, spacing=32, backend="cpu", batch=5, progress=stop)


def test_gil_is_released_during_a_reconstruction():
    geo = glrecon.Geometry.circular(180, detector=(64, 64), pixel=(4.0, 4.0))
    p = glrecon.phantom.project(geo)
    count = [0]
    running = threading.Event()
    done = threading.Event()

    def spin():
        running.set()
        while not done.is_set():
            count[0] += 1

    def rate_while(work):
        start, before = time.perf_counter(), count[0]
        work()
        return (count[0] - before) / (time.perf_counter() - start), time.perf_counter() - start

    t = threading.Thread(target=spin)
    t.start()
    running.wait()
    try:
        free, _ = rate_while(lambda: time.sleep(0.3))  # the counter's pace with the GIL free (sleep releases it)
        during, seconds = rate_while(lambda: glrecon.fdk(p, geo, size=96, spacing=2.5, backend="cpu", threads=1))
    finally:
        done.set()
        t.join()
    # Held for the whole call, the GIL would let the counter run for about one switch interval (5 ms) at most,
    # whatever the call's length. Released, it runs at its free pace less what the reconstruction's own threads
    # take of the cores: at least a fifth of it on two busy cores. The call (96^3 x 180 on one thread, about
    # a second here) lasts long enough for the two to differ tenfold; a very fast machine still needs 0.15 s.
    interval = sys.getswitchinterval()
    assert seconds > 0.15, f"the reconstruction took {seconds:.2f} s, too short to tell"
    assert during * seconds > max(0.2 * free * seconds, 3 * free * interval), (during, free, seconds)


# ---- phantom and preprocessing ----

def test_phantom_equals_the_cli(scan, tmp_path):
    geo = glrecon.Geometry.circular(24, detector=(32, 32), pixel=(8, 8))
    p = glrecon.phantom.project(geo)
    ref = glrecon.read_image(scan / "scan" / "projections.mha")
    np.testing.assert_array_equal(p, ref)
    assert p.spacing == ref.spacing and p.origin == ref.origin
    noisy = glrecon.phantom.project(geo, density_scale=0.01, noise_i0=1e4, seed=3)
    cli(tmp_path, "phantom", "-o", "n", *SCAN, "--density-scale", "0.01", "--noise-i0", "1e4", "--seed", "3",
        "--ground-truth", *GRID, "-q")
    np.testing.assert_array_equal(noisy, glrecon.read_image(tmp_path / "n" / "projections.mha"))
    truth = glrecon.phantom.shepp_logan(size=16, spacing=16, density_scale=0.01)
    np.testing.assert_array_equal(truth, glrecon.read_image(tmp_path / "n" / "phantom.mha"))


def test_line_integrals_equal_the_cli_i0(scan, tmp_path):
    geo = glrecon.read_rtk_geometry(scan / "scan" / "geometry.xml")
    p = glrecon.read_image(scan / "scan" / "projections.mha")
    raw = glrecon.ImageArray((4000.0 * np.exp(-0.01 * p)).astype(np.float32), p.spacing, p.origin)
    glrecon.write_image(tmp_path / "raw.mha", raw)
    flat = np.full((32, 32), 4000.0, np.float32)
    a = glrecon.fdk(glrecon.line_integrals(raw, i0=4000.0), geo, size=16, spacing=16, backend="cpu")
    b = glrecon.fdk(glrecon.line_integrals(raw, flat=flat), geo, size=16, spacing=16, backend="cpu")
    cli(tmp_path, "fdk", "-g", str(scan / "scan" / "geometry.xml"), "-p", "raw.mha", "--i0", "4000", "-o", "i0.mha", *GRID,
        "--backend", "cpu", "-q")
    np.testing.assert_array_equal(a, glrecon.read_image(tmp_path / "i0.mha"))
    np.testing.assert_array_equal(a, b)  # a flat field of 4000 everywhere is i0 = 4000


def test_backends_and_tiff_stacks_from_python(scan, tmp_path):
    names = glrecon.backends()
    assert names[0] == "cpu" and "compute" in names
    p = glrecon.read_image(scan / "scan" / "projections.mha")
    (tmp_path / "tif").mkdir()
    for k in range(len(p)):
        glrecon.write_image(tmp_path / "tif" / f"p_{k}.tif", p[k], spacing=p.spacing, origin=p.origin)
    stack = glrecon.read_projections(str(tmp_path / "tif" / "*.tif"))  # natural order: p_2 before p_10
    np.testing.assert_array_equal(stack, p)
    assert stack.spacing[:2] == p.spacing[:2] and stack.origin[:2] == p.origin[:2]

