"""pip install . (offline: pip install --no-build-isolation .) builds the Python module with CMake and installs
the glrecon package. It needs what ./quickstart.sh installs (Debian: pybind11-dev, python3-dev, python3-numpy).

Everything is built out of the source tree (which may be read-only, and whose build/ is the developer's CMake tree):
in GLRECON_BUILD_DIR where set, else in the system's temporary folder, one folder per source tree and interpreter
(kept, so a second pip install rebuilds only what changed). CMAKE_BUILD_PARALLEL_LEVEL sets the build's jobs."""
import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))
# The folder for CMake's tree and setuptools' own (build/lib, the wheel's staging): outside ROOT, named after the source
# tree (two checkouts do not share one) and the interpreter (the extension is built for one).
BUILD_ROOT = os.path.abspath(os.environ.get("GLRECON_BUILD_DIR") or os.path.join(
    tempfile.gettempdir(), f"glrecon-pip-{sysconfig.get_config_var('SOABI') or sys.implementation.cache_tag}-"
                           f"{hashlib.sha256(ROOT.encode()).hexdigest()[:10]}"))
if os.path.commonpath([BUILD_ROOT, ROOT]) == ROOT:
    raise SystemExit(f"GLRECON_BUILD_DIR: expected a folder outside the source tree {ROOT}, found {BUILD_ROOT}")


class CMakeBuild(build_py):
    """Configures and builds the _glrecon target in BUILD_ROOT/cmake (Release, for this interpreter), then copies
    its python/glrecon into the package being built."""

    def run(self):
        build = os.path.join(BUILD_ROOT, "cmake")
        subprocess.check_call(["cmake", "-S", ROOT, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                               "-DGLRECON_BUILD_TESTS=OFF", "-DGLRECON_PYTHON=ON",
                               # Python runs one process: the wheel needs no MPI library on the target.
                               "-DGLRECON_MPI=OFF", f"-DPython_EXECUTABLE={sys.executable}"])
        subprocess.check_call(["cmake", "--build", build, "--target", "glrecon-python"])
        target = os.path.join(self.build_lib, "glrecon")
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(os.path.join(build, "python", "glrecon"), target)


class BinaryDistribution(Distribution):
    def has_ext_modules(self):  # the wheel holds a compiled module: tag it for this platform and Python
        return True


setup(
    name="glrecon",
    version="0.1.0",
    description="Cone- and parallel-beam CT reconstruction (FDK, FBP, iterative methods) on OpenGL, CUDA or the CPU, from NumPy",
    packages=["glrecon"],
    package_dir={"glrecon": "python/glrecon"},
    install_requires=["numpy"],
    python_requires=">=3.8",
    cmdclass={"build_py": CMakeBuild},
    distclass=BinaryDistribution,
    # setuptools' build/ (build/lib, bdist.*) and glrecon.egg-info default to the current folder, the source tree.
    options={"build": {"build_base": os.path.join(BUILD_ROOT, "setuptools")},
             "egg_info": {"egg_base": BUILD_ROOT}},
)
