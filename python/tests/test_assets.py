"""The sample data in assets/: readable in both formats, equal to what the tools make today."""
import os

import numpy as np

import glrecon
from test_glrecon import GRID, cli


def test_assets_scan_in_both_formats(tmp_path):
    assets = os.path.join(os.environ.get("GLRECON_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")),
                          "assets", "phantom-scan")
    geo = glrecon.read_rtk_geometry(os.path.join(assets, "geometry.xml"))
    mha = glrecon.read_image(os.path.join(assets, "projections.mha"))
    tif = glrecon.read_image(os.path.join(assets, "projections.tif"))
    assert len(geo) == 64 and mha.shape == (64, 32, 32)
    np.testing.assert_array_equal(mha, tif)
    assert mha.spacing[:2] == tif.spacing[:2] and mha.origin[:2] == tif.origin[:2]
    # The file is what `glrecon phantom` makes today: a change to the simulation shows up here.
    np.testing.assert_array_equal(mha, glrecon.phantom.project(geo.with_detector((32, 32), (8, 8))))
    vol = glrecon.fdk(tif, geo, size=16, spacing=16, backend="cpu")
    cli(tmp_path, "fdk", "-g", os.path.join(assets, "geometry.xml"), "-p", os.path.join(assets, "projections.tif"),
        "-o", "v.tif", *GRID, "--backend", "cpu", "-q")
    np.testing.assert_array_equal(vol, glrecon.read_image(tmp_path / "v.tif"))
