"""Issue 23: the peers' keywords (TIGRE's ram_lak, lmbda, blocksize, OrderStrategy; ASTRA's Ram-Lak), roi as a NumPy
mask, __version__, backends(available=...), devices() and compare() (the command line's `compare`)."""
import os
import re
import subprocess

import numpy as np
import pytest

import glrecon

CLI = os.environ.get("GLRECON_CLI", "glrecon")
SOURCE = os.environ.get("GLRECON_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


@pytest.fixture(scope="module")
def scan():
    geometry = glrecon.Geometry.circular(24, detector=(32, 32), pixel=(8.0, 8.0))
    return geometry, glrecon.phantom.project(geometry)


@pytest.mark.parametrize("peer, ours", [("ram_lak", "ram-lak"), ("Ram-Lak", "ram-lak"), ("shepp_logan", "shepp-logan"),
                                        ("Shepp Logan", "shepp-logan"), ("Hann", "hann")])
def test_peer_filter_names(scan, peer, ours):
    geometry, p = scan
    np.testing.assert_array_equal(glrecon.fdk(p, geometry, size=8, spacing=16, backend="cpu", filter=peer),
                                  glrecon.fdk(p, geometry, size=8, spacing=16, backend="cpu", filter=ours))
    with pytest.raises(glrecon.UsageError, match="filter: expected ram-lak, shepp-logan, cosine, hamming or hann, found 'tukey'"):
        glrecon.fdk(p, geometry, size=8, spacing=16, backend="cpu", filter="Tukey")


def test_tigre_keywords_lmbda_blocksize_order(scan):
    geometry, p = scan
    common = dict(size=8, spacing=16, iterations=2)
    np.testing.assert_array_equal(glrecon.sart(p, geometry, lmbda=0.5, **common), glrecon.sart(p, geometry, lamb=0.5, **common))
    np.testing.assert_array_equal(glrecon.sirt(p, geometry, lmbda=0.5, **common), glrecon.sirt(p, geometry, lamb=0.5, **common))
    with pytest.raises(glrecon.UsageError, match="lamb, lmbda: give one of them .* found 0.5, 0.6"):
        glrecon.sart(p, geometry, lamb=0.5, lmbda=0.6, **common)
    # TIGRE's blocksize is views per subset: 24 views in blocks of 5 are ceil(24 / 5) = 5 subsets.
    report = {}
    by_block = glrecon.sart(p, geometry, blocksize=5, report=report, **common)
    assert report["subsets"] == 5
    np.testing.assert_array_equal(by_block, glrecon.sart(p, geometry, subsets=5, **common))
    np.testing.assert_array_equal(glrecon.osem(p, geometry, blocksize=24, **common), glrecon.osem(p, geometry, subsets=1, **common))
    np.testing.assert_array_equal(glrecon.sart(p, geometry, blocksize=5, OrderStrategy="angularDistance", **common), by_block)
    with pytest.raises(glrecon.UsageError, match="subsets, blocksize: give one of them"):
        glrecon.sart(p, geometry, subsets=4, blocksize=6, **common)
    with pytest.raises(glrecon.UsageError, match="blocksize: expected a whole number from 1"):
        glrecon.sart(p, geometry, blocksize=0, **common)


def test_tigre_order_strategy(scan):
    """TIGRE's OrderStrategy: "angularDistance" (and None, glrecon's "interleaved") is the default order, bit for bit;
    "ordered" and "random" change the run; random repeats with its order_seed and differs across seeds; anything else
    is refused, as is a seed without "random"; the same orders on the command line's --order."""
    geometry, p = scan
    common = dict(size=8, spacing=16, iterations=2, blocksize=6)  # 24 views: 4 subsets
    default = glrecon.sart(p, geometry, **common)
    for name in ("angularDistance", "interleaved"):
        np.testing.assert_array_equal(glrecon.sart(p, geometry, OrderStrategy=name, **common), default)
    ordered = glrecon.sart(p, geometry, OrderStrategy="ordered", **common)
    assert not np.array_equal(ordered, default)
    random = glrecon.sart(p, geometry, OrderStrategy="random", order_seed=3, **common)
    np.testing.assert_array_equal(glrecon.sart(p, geometry, OrderStrategy="random", order_seed=3, **common), random)
    assert not np.array_equal(random, ordered)
    # Among a few seeds the 4! block orders differ (seed 0 is the default seed).
    runs = [glrecon.sart(p, geometry, OrderStrategy="random", order_seed=seed, **common).tobytes() for seed in range(4)]
    assert len(set(runs)) > 1
    np.testing.assert_array_equal(glrecon.sart(p, geometry, OrderStrategy="random", **common), np.frombuffer(runs[0], np.float32).reshape(random.shape))
    for method in (glrecon.osem, glrecon.asd_pocs):
        a = method(p, geometry, OrderStrategy="random", order_seed=2**64 - 1, **common)
        np.testing.assert_array_equal(method(p, geometry, OrderStrategy="random", order_seed=2**64 - 1, **common), a)
    with pytest.raises(glrecon.UsageError, match="OrderStrategy: expected 'angularDistance', 'ordered' or 'random' .* found 'random2'"):
        glrecon.asd_pocs(p, geometry, OrderStrategy="random2", **common)
    with pytest.raises(glrecon.UsageError, match="order_seed: only with OrderStrategy='random', found OrderStrategy='ordered'"):
        glrecon.osem(p, geometry, OrderStrategy="ordered", order_seed=1, **common)
    with pytest.raises(glrecon.UsageError, match="order_seed: expected a whole number from 0"):
        glrecon.sart(p, geometry, OrderStrategy="random", order_seed=-1, **common)
    # The command line takes the same orders; a bad name is a usage error (exit 2) naming --order.
    bad = subprocess.run([CLI, "sart", "-g", "x.xml", "-p", "x.mha", "-o", "x.mha", "--order", "angularDistance"],
                         capture_output=True, text=True)
    assert bad.returncode == 2, bad.stderr
    assert "--order: expected interleaved, ordered or random, found 'angularDistance'" in bad.stderr


def test_roi_takes_a_numpy_mask(scan):
    geometry, p = scan
    grid = glrecon.Grid(12, 16.0)
    # The box -40 <= x, y, z <= 40 as a spec and as a mask of the voxels whose centre is inside (the library's rule).
    z, y, x = (np.indices(grid.shape) * 16.0 - 88.0)
    mask = (np.abs(x) <= 40) & (np.abs(y) <= 40) & (np.abs(z) <= 40)
    assert 0 < mask.sum() < mask.size
    spec = "box:-40,-40,-40,40,40,40"
    for method in (lambda **k: glrecon.fdk(p, geometry, size=grid, backend="cpu", **k),
                   lambda **k: glrecon.sirt(p, geometry, size=grid, iterations=2, **k)):
        by_mask, by_spec = method(roi=mask), method(roi=spec)
        np.testing.assert_array_equal(by_mask, by_spec)
        assert (by_mask[~mask] == 0).all() and (by_mask[mask] != 0).any()
    np.testing.assert_array_equal(glrecon.fdk(p, geometry, size=grid, backend="cpu", roi=mask.astype(np.uint8)),
                                  glrecon.fdk(p, geometry, size=grid, backend="cpu", roi=spec))  # 0 and 1 as bool
    with pytest.raises(glrecon.InputError, match=r"roi: shape: expected the grid's \(z, y, x\) = \(12, 12, 12\), found \(8, 8, 8\)"):
        glrecon.fdk(p, geometry, size=grid, roi=np.ones((8, 8, 8), bool))
    with pytest.raises(glrecon.InputError, match=r"roi: values: expected 0 and 1 \(or bool\), found 2 at \(z, y, x\) = \(0, 0, 1\)"):
        glrecon.fdk(p, geometry, size=grid, roi=np.pad([[[0, 2]]], ((0, 11), (0, 11), (0, 10))))


def test_version_is_the_projects():
    text = open(os.path.join(SOURCE, "CMakeLists.txt")).read()
    assert glrecon.__version__ == re.search(r"project\(glrecon VERSION ([0-9.]+)", text).group(1)


def test_backends_report_what_can_run():
    built = glrecon.backends()
    why = glrecon.backends(available="why")
    assert list(why) == built and why["cpu"] is None
    assert glrecon.backends(available=True) == [name for name in built if why[name] is None]
    # Where compute is said to run, it runs; where not, it fails with a glrecon.Error (its reason).
    geometry = glrecon.Geometry.circular(8, detector=(8, 8), pixel=(8.0, 8.0))
    try:
        glrecon.fdk(np.zeros((8, 8, 8), np.float32), geometry, size=4, spacing=8, backend="compute", window=8)
        ran = True
    except glrecon.Error:
        ran = False
    assert ran == (why["compute"] is None), why
    for info in glrecon.devices():
        assert info["api"] in ("opengl", "cuda") and isinstance(info["index"], int) and info["name"]
        assert info["free_memory"] is None or info["free_memory"] >= 0
    assert any(d["api"] == "opengl" for d in glrecon.devices()) == ran
    with pytest.raises(glrecon.UsageError, match="available: expected False, True or 'why'"):
        glrecon.backends(available="yes")


def test_compare_gives_the_command_lines_numbers(scan, tmp_path):
    geometry, p = scan
    a = glrecon.fdk(p, geometry, size=12, spacing=16, backend="cpu")
    b = glrecon.fdk(p, geometry, size=12, spacing=16, backend="cpu", filter="hann")
    glrecon.write_image(tmp_path / "a.mha", a)
    glrecon.write_image(tmp_path / "b.mha", b)
    out = subprocess.run([CLI, "compare", str(tmp_path / "a.mha"), str(tmp_path / "b.mha")], capture_output=True, text=True,
                         check=True).stdout
    line = next(l for l in out.splitlines() if l.startswith("whole volume"))
    numbers = [float(x) for x in re.findall(r"(?:max \|diff\||mean \|diff\||RMS diff|max \|first\|,?|mean \|first\|) ([-0-9.e+]+)", line)]
    mine = glrecon.compare(a, b)
    # The command line prints 6 significant digits (%.6g): agreement to half a unit in the sixth.
    np.testing.assert_allclose([mine["max"], mine["mean"], mine["rms"], mine["max_first"], mine["mean_first"]], numbers, rtol=5e-6)
    assert mine["voxels"] == a.size and f"voxels {a.size:10d}" in line
    assert mine["psnr"] == pytest.approx(20 * np.log10((a.max() - a.min()) / mine["rms"]))
    inside = np.zeros(a.shape, bool)
    inside[4:8, 4:8, 4:8] = True
    assert glrecon.compare(a, b, roi=inside)["voxels"] == 64
    assert glrecon.compare(a, a)["psnr"] == float("inf")
    with pytest.raises(glrecon.InputError, match=r"second: spacing: expected \(16.0, 16.0, 16.0\) as first"):
        glrecon.compare(a, glrecon.ImageArray(b, spacing=8.0))
