"""glrecon.project and the iterative methods (sart, sirt, cgls, osem) against the command line: the same inputs
give the same bits on the cpu backend, errors the same text.

Run by ctest (python.pytest) with PYTHONPATH=build/python and GLRECON_CLI naming the command-line tool."""
import os
import re
import subprocess

import numpy as np
import pytest

import glrecon

CLI = os.environ.get("GLRECON_CLI", "glrecon")
# The scan of test_glrecon.py: 24 views of 32 x 32 pixels of 8 mm; a 16^3 grid of 16 mm voxels.
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
    cli(d, "fdk", "-g", "scan/geometry.xml", "-p", "scan/projections.mha", "-o", "fdk.mha", *GRID, "--backend", "cpu", "-q")
    return d


def inputs(scan):
    return glrecon.read_image(scan / "scan" / "projections.mha"), glrecon.read_rtk_geometry(scan / "scan" / "geometry.xml")


def test_project_equals_the_cli_bit_for_bit(scan, tmp_path):
    vol = glrecon.read_image(scan / "fdk.mha")
    geo = glrecon.read_rtk_geometry(scan / "scan" / "geometry.xml").with_detector((32, 32), (8.0, 8.0))
    p = glrecon.project(vol, geo)
    cli(scan, "project", "-i", "fdk.mha", "-g", "scan/geometry.xml", "-o", str(tmp_path / "p.mha"), "--detector", "32",
        "--detector-spacing", "8", "--backend", "cpu", "-q")
    ref = glrecon.read_image(tmp_path / "p.mha")
    assert p.shape == (24, 32, 32) and p.dtype == np.float32
    np.testing.assert_array_equal(p, ref)
    assert p.spacing == ref.spacing and p.origin == ref.origin
    assert p.max() > 0
    # A step, a float64 volume (converted once), a detector of other shape.
    geo2 = glrecon.read_rtk_geometry(scan / "scan" / "geometry.xml").with_detector((20, 12), (10.0, 6.0))
    p2 = glrecon.project(np.asarray(vol, np.float64), geo2, step=3.0, spacing=vol.spacing, origin=vol.origin)
    cli(scan, "project", "-i", "fdk.mha", "-g", "scan/geometry.xml", "-o", str(tmp_path / "p2.mha"), "--detector", "20,12",
        "--detector-spacing", "10,6", "--step", "3", "--backend", "cpu", "-q")
    assert p2.shape == (24, 12, 20)
    np.testing.assert_array_equal(p2, glrecon.read_image(tmp_path / "p2.mha"))
    # The projections of a Geometry.circular scan reconstruct as the scan's own (the same geometry as the file).
    circ = glrecon.Geometry.circular(24, detector=(32, 32), pixel=(8.0, 8.0))
    np.testing.assert_array_equal(glrecon.project(vol, circ), p)
    with pytest.raises(glrecon.InputError, match="detector layout"):
        glrecon.project(vol, glrecon.read_rtk_geometry(scan / "scan" / "geometry.xml"))
    with pytest.raises(glrecon.UsageError, match="nope"):
        glrecon.project(vol, geo, backend="nope")
    assert "cpu" in glrecon.projectors()


@pytest.mark.parametrize("method,args,kwargs", [
    ("sart", [], {}),
    ("sart", ["--subsets", "4", "--lambda", "0.5", "--positivity"], {"subsets": 4, "lamb": 0.5, "positivity": True}),
    ("sart", ["--subsets", "1", "--roi", "fov"], {"subsets": 1, "relaxation": 1.0, "roi": "fov"}),
    ("sirt", ["--lambda", "1.5"], {"lamb": 1.5}),
    ("cgls", [], {}),
    ("osem", ["--subsets", "3"], {"subsets": 3}),
    ("osem", [], {}),
])
def test_iterative_equals_the_cli_bit_for_bit(scan, tmp_path, method, args, kwargs):
    p, geo = inputs(scan)
    report = {}
    vol = getattr(glrecon, method)(p, geo, size=16, spacing=16, iterations=3, backend="cpu", report=report, **kwargs)
    cli(scan, method, "-g", "scan/geometry.xml", "-p", "scan/projections.mha", "-o", str(tmp_path / "v.mha"), *GRID, "-n", "3",
        *args, "--backend", "cpu", "-q")
    ref = glrecon.read_image(tmp_path / "v.mha")
    assert vol.shape == (16, 16, 16) and vol.dtype == np.float32
    np.testing.assert_array_equal(vol, ref)
    assert vol.spacing == ref.spacing and vol.origin == ref.origin
    assert len(report["residuals"]) == 3 and report["final_residual"] < report["data_norm"]
    assert 0.5 < vol[8, 8, 8] < 1.5  # the phantom's brain (1.02)


@pytest.mark.parametrize("method", ["sirt", "cgls", "pdhg_tv"])
def test_iterative_over_slabs_equals_the_cli_bit_for_bit(scan, tmp_path, method):
    # A grid of 32 rows (two slabs of 16, the slabs' granule) of 8 mm over the same scan.
    p, geo = inputs(scan)
    report = {}
    vol = getattr(glrecon, method)(p, geo, size=32, spacing=8, iterations=2, backend="cpu", slabs=2, report=report)
    cli(scan, method.replace("_", "-"), "-g", "scan/geometry.xml", "-p", "scan/projections.mha", "-o", str(tmp_path / "v.mha"),
        "--size", "32", "--spacing", "8", "-n", "2", "--slabs", "2", "--backend", "cpu", "-q")
    np.testing.assert_array_equal(vol, glrecon.read_image(tmp_path / "v.mha"))
    assert "2 slabs of y rows" in report["backend"]
    assert vol.max() > 0.1
    # Two "devices" of the cpu backend are two slabs too (the command line's --gpu 0,0).
    np.testing.assert_array_equal(getattr(glrecon, method)(p, geo, size=32, spacing=8, iterations=2, backend="cpu", gpu=[0, 0]), vol)


def test_iterative_over_slabs_refuses_what_cannot_split(scan):
    p, geo = inputs(scan)
    with pytest.raises(glrecon.UsageError, match="slabs: expected 1 to 2"):
        glrecon.sirt(p, geo, size=32, spacing=8, iterations=1, backend="cpu", slabs=3)
    with pytest.raises(glrecon.UsageError, match="slabs: expected a whole number from 1"):
        glrecon.sirt(p, geo, size=32, spacing=8, iterations=1, backend="cpu", slabs=0)
    with pytest.raises(glrecon.UsageError, match="gpu: expected at least one device"):
        glrecon.sirt(p, geo, size=32, spacing=8, iterations=1, backend="cpu", gpu=[])
    with pytest.raises(glrecon.UsageError, match="gpu: .all. names the CUDA devices"):
        glrecon.sirt(p, geo, size=32, spacing=8, iterations=1, backend="cpu", gpu="all")
    with pytest.raises(TypeError, match="gpu: expected a device index"):
        glrecon.sirt(p, geo, size=32, spacing=8, iterations=1, backend="cpu", gpu=None)


@pytest.mark.skipif(sum(d["api"] == "cuda" for d in glrecon.devices()) < 2, reason="needs two CUDA devices")
def test_two_gpus_equal_one_gpus_slabs_bit_for_bit(scan):
    # The slabs' sums on the GPUs (peer copies) in the same order as on one GPU: the same bits.
    p, geo = inputs(scan)
    for method in ("sirt", "cgls"):
        two = getattr(glrecon, method)(p, geo, size=32, spacing=8, iterations=2, backend="cuda", gpu=[0, 1])
        one = getattr(glrecon, method)(p, geo, size=32, spacing=8, iterations=2, backend="cuda", gpu=0, slabs=2)
        np.testing.assert_array_equal(two, one)
        assert two.max() > 0.1


def test_parallel_rtk_file_is_geometry_parallel_on_the_cli(tmp_path):
    """RTK's parallel geometry (SourceToDetectorDistance 0): ``glrecon phantom --parallel`` writes it, and it is
    Geometry.parallel's scan: the same file text, the same vectors read back, and fdk (FBP), project and the iterative
    methods on the file equal Python's on Geometry.parallel bit for bit (one geometry, one code path)."""
    cli(tmp_path, "phantom", "-o", "scan", "--parallel", "--projections", "24", "--arc", "180", "--detector", "32",
        "--detector-spacing", "8", "-q")
    p = glrecon.read_image(tmp_path / "scan" / "projections.mha")
    own = glrecon.Geometry.parallel(24, detector=(32, 32), pixel=(8.0, 8.0), arc=180.0)
    assert own.is_parallel and own.is_circular
    own.write_rtk(tmp_path / "own.xml")
    assert (tmp_path / "own.xml").read_text() == (tmp_path / "scan" / "geometry.xml").read_text()
    read = glrecon.read_rtk_geometry(tmp_path / "scan" / "geometry.xml")
    assert read.is_parallel and "parallel beam" in repr(read)
    np.testing.assert_array_equal(read.with_detector((32, 32), (8.0, 8.0)).vectors, own.vectors)
    files = ["-g", "scan/geometry.xml", "-p", "scan/projections.mha", *GRID, "--backend", "cpu", "-q"]
    for method, args in (("fdk", []), ("sart", ["-n", "2"]), ("sirt", ["-n", "2"]), ("cgls", ["-n", "2"])):
        cli(tmp_path, method, *files, *args, "-o", f"{method}.mha")
        kwargs = {} if method == "fdk" else {"iterations": 2}
        vol = (glrecon.fbp if method == "fdk" else getattr(glrecon, method))(p, own, size=16, spacing=16, backend="cpu", **kwargs)
        np.testing.assert_array_equal(vol, glrecon.read_image(tmp_path / f"{method}.mha"), err_msg=method)
    # FBP of 24 views over [0, 180): the phantom's brain (1.02) at the centre, as the cone-beam tests above bound it.
    assert 0.5 < glrecon.read_image(tmp_path / "fdk.mha")[8, 8, 8] < 1.5
    cli(tmp_path, "project", "-i", "fdk.mha", "-g", "scan/geometry.xml", "-o", "p.mha", "--detector", "32",
        "--detector-spacing", "8", "--backend", "cpu", "-q")
    np.testing.assert_array_equal(glrecon.project(glrecon.read_image(tmp_path / "fdk.mha"), own),
                                  glrecon.read_image(tmp_path / "p.mha"))


def test_initial_origin_and_progress(scan, tmp_path):
    p, geo = inputs(scan)
    init = glrecon.read_image(scan / "fdk.mha")
    calls = []
    vol = glrecon.sart(p, geo, size=16, spacing=16, iterations=2, subsets=6, initial=init, backend="cpu",
                       progress=lambda done, total: calls.append((done, total)))
    assert calls == [(1, 2), (2, 2)]
    cli(scan, "sart", "-g", "scan/geometry.xml", "-p", "scan/projections.mha", "-o", str(tmp_path / "v.mha"), *GRID, "-n", "2",
        "--subsets", "6", "--initial", "fdk.mha", "--backend", "cpu", "-q")
    np.testing.assert_array_equal(vol, glrecon.read_image(tmp_path / "v.mha"))
    shifted = glrecon.cgls(p, geo, size=(16, 12, 16), spacing=16, origin=(-120, -80, -100), iterations=2, backend="cpu")
    cli(scan, "cgls", "-g", "scan/geometry.xml", "-p", "scan/projections.mha", "-o", str(tmp_path / "c.mha"), "--size", "16,12,16",
        "--spacing", "16", "--origin", "-120,-80,-100", "-n", "2", "--backend", "cpu", "-q")
    ref = glrecon.read_image(tmp_path / "c.mha")
    np.testing.assert_array_equal(shifted, ref)
    assert shifted.shape == (16, 12, 16) and shifted.origin == ref.origin

    def stop(done, total):
        raise KeyboardInterrupt("enough")

    with pytest.raises(KeyboardInterrupt, match="enough"):
        glrecon.sirt(p, geo, size=16, spacing=16, iterations=5, backend="cpu", progress=stop)


# The library names request fields in its messages; the command line shows them as its options, Python as its keywords.
KEYWORDS = {"--iterations": "iterations", "--subsets": "subsets", "--lambda": "lamb", "--roi": "roi", "--initial": "initial"}


def in_python_words(cli_message):
    return re.sub(r"--[a-z-]+", lambda m: KEYWORDS.get(m.group(0), m.group(0)), cli_message)


def test_errors_carry_the_cli_messages(scan, tmp_path):
    p, geo = inputs(scan)
    cases = [
        ("sart", {"subsets": 25}, ["--subsets", "25"], glrecon.UsageError),
        ("sirt", {"lamb": 2.0}, ["--lambda", "2"], glrecon.UsageError),
        ("osem", {"subsets": 30}, ["--subsets", "30"], glrecon.UsageError),
        ("sart", {"roi": "sphere:0,0"}, ["--roi", "sphere:0,0"], glrecon.Error),
    ]
    for method, kwargs, args, error in cases:
        with pytest.raises(error) as e:
            getattr(glrecon, method)(p, geo, size=16, spacing=16, backend="cpu", **kwargs)
        r = cli(scan, method, "-g", "scan/geometry.xml", "-p", "scan/projections.mha", "-o", str(tmp_path / "v.mha"), *GRID, *args,
                "--backend", "cpu", ok=False)
        assert r.returncode != 0
        # The command line prefixes "glrecon: error: " or, for option misuse, "glrecon: usage error: ".
        assert re.fullmatch(r"glrecon: (usage )?error: (.*)", r.stderr.strip().splitlines()[-1]), r.stderr
        assert in_python_words(r.stderr.strip().splitlines()[-1].split("error: ", 1)[1]) == str(e.value), (r.stderr, str(e.value))
        assert "--" not in str(e.value), str(e.value)
    assert not (tmp_path / "v.mha").exists()
    # Bounds of glrecon/limits.h: the same words, the command line quoting the text it was given.
    for n in (0, 100001, 2 ** 31 - 1):
        with pytest.raises(glrecon.UsageError, match=f"^iterations: expected a whole number of iterations from 1 to 100000, found {n}$"):
            glrecon.osem(p, geo, size=16, spacing=16, iterations=n)
        r = cli(scan, "osem", "-g", "scan/geometry.xml", "-p", "scan/projections.mha", "-o", str(tmp_path / "v.mha"), *GRID, "-n", str(n),
                ok=False)
        assert r.returncode == 2 and f"glrecon: usage error: --iterations: expected a whole number of iterations from 1 to 100000, found '{n}'" in r.stderr
    with pytest.raises(glrecon.InputError, match="number of projections: expected 24 as in the geometry, found 23"):
        glrecon.sart(p[:23], geo, size=16, spacing=16)
    bad = p.copy()
    bad[3, 2, 1] = np.nan
    # The words of fdk's check (the one validation point), for every method and fdk alike.
    with pytest.raises(glrecon.InputError, match=r"projection 3 pixel \(1, 2\): expected a finite value, found NaN"):
        glrecon.sart(bad, geo, size=16, spacing=16, iterations=1)
    # OS-EM takes negative line integrals (noise in air) as 0 and says so in the report; nothing positive is refused.
    report = {}
    v = glrecon.osem(p - 1.0, geo, size=16, spacing=16, iterations=1, report=report)
    assert np.isfinite(v).all() and (v >= 0).all()
    assert "were negative" in report["warning"] and "taken as 0 (osem is multiplicative)" in report["warning"], report
    assert np.array_equal(v, glrecon.osem(np.maximum(p - 1.0, 0.0), geo, size=16, spacing=16, iterations=1))
    with pytest.raises(glrecon.InputError, match="some positive line integral"):
        glrecon.osem(-np.abs(p), geo, size=16, spacing=16, iterations=1)
    with pytest.raises(glrecon.InputError, match="^initial: DimSize"):
        glrecon.sart(p, geo, size=16, spacing=16, iterations=1, initial=np.zeros((8, 8, 8), np.float32))
    with pytest.raises(glrecon.UsageError, match="lamb, relaxation"):
        glrecon.sart(p, geo, size=16, spacing=16, lamb=0.5, relaxation=0.7)


@pytest.mark.parametrize("backend", ["graphics", "compute"])
def test_gpu_projector_agrees_with_cpu(scan, backend):
    """The GPU projectors through Python: within tests/operators/projector_support.h's bound of the cpu projector (RMS 1e-3 and
    max 1e-2 of the largest value: hardware trilinear weights carry 8 fractional bits). Skipped where no OpenGL
    4.5 device exists."""
    vol = glrecon.read_image(scan / "fdk.mha")
    geo = glrecon.read_rtk_geometry(scan / "scan" / "geometry.xml").with_detector((32, 32), (8.0, 8.0))
    ref = glrecon.project(vol, geo)
    try:
        p = glrecon.project(vol, geo, backend=backend)
    except glrecon.GlError as e:
        pytest.skip(str(e))
    scale = float(np.abs(ref).max())
    d = np.abs(p.astype(np.float64) - ref)
    assert np.sqrt(np.mean(d * d)) < 1e-3 * scale and d.max() < 1e-2 * scale
    vol_gpu = glrecon.sart(*inputs(scan), size=16, spacing=16, iterations=2, backend=backend)
    vol_cpu = glrecon.sart(*inputs(scan), size=16, spacing=16, iterations=2, backend="cpu")
    # Two SART passes compound the projector difference by at most the per-view relaxed update: same bound relative
    # to the largest voxel.
    vmax = float(np.abs(vol_cpu).max())
    assert np.abs(vol_gpu.astype(np.float64) - vol_cpu).max() < 1e-2 * vmax


def test_asd_pocs_and_the_stopping_rules_equal_the_cli(scan, tmp_path):
    """asd_pocs and the keywords projector, stop_residual, stop_change take the command line's meaning: the same bits
    on the cpu backend, the same stop."""
    p, g = inputs(scan)
    for method, kwargs, args in [
        (glrecon.asd_pocs, dict(iterations=3, tv_steps=5), ["asd-pocs", "--iterations", "3", "--tv-steps", "5"]),
        (glrecon.pdhg_tv, dict(iterations=4, tv_weight=0.01), ["pdhg-tv", "--iterations", "4", "--tv-weight", "0.01"]),
        (glrecon.cgls, dict(iterations=6, projector="matched", stop_change=0.2),
         ["cgls", "--iterations", "6", "--projector", "matched", "--stop-change", "0.2"]),
    ]:
        report = {}
        v = method(p, g, size=16, spacing=16, report=report, **kwargs)
        cli(scan, *args, "-g", "scan/geometry.xml", "-p", "scan/projections.mha", "-o", str(tmp_path / "v.mha"), *GRID, "--overwrite", "-q")
        assert np.array_equal(v, glrecon.read_image(tmp_path / "v.mha")), args[0]
        if method in (glrecon.asd_pocs, glrecon.pdhg_tv):
            assert v.min() >= 0.0  # x >= 0: part of both methods
    assert "stop_change 0.2" in report["stop_reason"] and len(report["residuals"]) < 6, report
    with pytest.raises(glrecon.UsageError, match="projector"):
        glrecon.sirt(p, g, size=16, spacing=16, projector="exact")
    with pytest.raises(glrecon.UsageError, match="stop_residual"):
        glrecon.sirt(p, g, size=16, spacing=16, stop_residual=2.0)
    with pytest.raises(glrecon.UsageError, match="tv_weight: expected a weight from 0"):
        glrecon.pdhg_tv(p, g, size=16, spacing=16, tv_weight=-1.0)


def test_operator_forward_back_transpose_and_scipy(scan):
    """glrecon.Operator: forward equals project() bit for bit; with the matched pair <A x, y> = <x, A^T y> to float
    rounding (1e-5 of |A x| |y|, the bound of the C++ adjoint test); .T swaps the two; SciPy's lsqr runs on it."""
    p, g = inputs(scan)
    g = g.with_detector((32, 32), (8.0, 8.0))
    rng = np.random.default_rng(4)
    x = (rng.random((16, 16, 16)) - 0.5).astype(np.float32)
    y = (rng.random((24, 32, 32)) - 0.5).astype(np.float32)
    A = glrecon.Operator(g, 16, 16.0, projector="matched")
    assert A.shape == (24 * 32 * 32, 16 ** 3) and A.T.shape == (16 ** 3, 24 * 32 * 32)
    ax, aty = A.forward(x), A.back(y)
    assert np.array_equal(ax, glrecon.project(x, g, spacing=16.0))
    gap = abs(np.vdot(ax.astype(np.float64), y) - np.vdot(x.astype(np.float64), aty))
    assert gap <= 1e-5 * np.linalg.norm(ax) * np.linalg.norm(y)
    assert np.array_equal(A.T.forward(y), aty) and np.array_equal(A.T.back(x), ax)
    with pytest.raises(glrecon.InputError, match="shape"):
        A.forward(np.zeros((16, 16, 15), np.float32))
    with pytest.raises(glrecon.InputError, match="shape"):
        A.back(np.zeros((23, 32, 32), np.float32))
    with pytest.raises(glrecon.UsageError, match="projector"):
        glrecon.Operator(g, 16, 16.0, projector="exact")
    # The distance-driven pair: its own A (not project()'s), B its exact transpose to the same bound.
    D = glrecon.Operator(g, 16, 16.0, projector="distance-driven")
    dx, dty = D.forward(x), D.back(y)
    assert not np.array_equal(dx, ax)
    gap = abs(np.vdot(dx.astype(np.float64), y) - np.vdot(x.astype(np.float64), dty))
    assert gap <= 1e-5 * np.linalg.norm(dx) * np.linalg.norm(y)
    scipy_linalg = pytest.importorskip("scipy.sparse.linalg")
    b = np.asarray(p, np.float32).reshape(-1)
    result = scipy_linalg.lsqr(A.as_linear_operator(), b, iter_lim=8)
    assert result[3] < 0.5 * np.linalg.norm(b)  # the residual norm falls well below |b| in 8 iterations
