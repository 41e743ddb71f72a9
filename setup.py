"""pip install . (offline: pip install --no-build-isolation .) builds the Python module with CMake and installs
the glrecon package. It needs what ./quickstart.sh installs (Debian: pybind11-dev, python3-dev, python3-numpy)."""
import os
import shutil
import subprocess
import sys

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeBuild(build_py):
    """Configures and builds the _glrecon target in build/pip (Release, for this interpreter), then copies
    build/pip/python/glrecon into the package being built."""

    def run(self):
        build = os.path.join(ROOT, "build", "pip")
        subprocess.check_call(["cmake", "-S", ROOT, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                               "-DGLRECON_BUILD_TESTS=OFF", "-DGLRECON_PYTHON=ON", f"-DPython_EXECUTABLE={sys.executable}"])
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
    description="Cone-beam CT reconstruction (FDK) through the OpenGL graphics pipeline, from NumPy",
    packages=["glrecon"],
    package_dir={"glrecon": "python/glrecon"},
    install_requires=["numpy"],
    python_requires=">=3.8",
    cmdclass={"build_py": CMakeBuild},
    distclass=BinaryDistribution,
)
