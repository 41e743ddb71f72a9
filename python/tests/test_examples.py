"""The examples run as a user runs them (headless, matplotlib's Agg), on a small volume."""
import os
import subprocess
import sys

import glrecon

SOURCE = os.environ.get("GLRECON_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


def test_reconstruct_phantom_example(tmp_path):
    script = os.path.join(SOURCE, "examples", "reconstruct_phantom.py")
    r = subprocess.run([sys.executable, script, str(tmp_path), "--size", "32"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (tmp_path / "slices.png").stat().st_size > 1000
    assert glrecon.read_image(tmp_path / "volume.tif").shape == (32, 32, 32)
    # Every backend ran or said why not, and the CPU one is in the table.
    lines = r.stdout.splitlines()
    assert any(line.startswith("cpu ") for line in lines), r.stdout
    for backend in glrecon.backends():
        assert any(line.startswith(backend + " ") for line in lines), (backend, r.stdout)
