"""Builds the toroid Python package's extensions with CMake for pip (pyproject.toml).

The extensions (_toroid, and _toroid_c10d where libtorch-dev is installed) and libtoroid are
built by the project's own CMake (TOROID_PYTHON_WHEEL=ON: libtoroid inside the package, found
through $ORIGIN) and copied next to the package's Python files. TOROID_CMAKE_ARGS adds CMake
arguments (e.g. -DTOROID_BUILD_TORCH=OFF).
"""
import glob
import os
import re
import shlex
import shutil
import subprocess

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
# The one version: CMakeLists.txt's project(toroid VERSION ...).
VERSION = re.search(r"project\(toroid VERSION ([0-9.]+)", open(os.path.join(ROOT, "CMakeLists.txt")).read()).group(1)


class CMakeBuild(build_ext):
    def build_extensions(self):
        build = os.path.abspath(os.path.join(self.build_temp, "cmake"))
        args = ["-DCMAKE_BUILD_TYPE=Release", "-DTOROID_BUILD_TESTS=OFF", "-DTOROID_BUILD_BENCHMARKS=OFF",
                "-DTOROID_BUILD_EXAMPLES=OFF", "-DTOROID_BUILD_PYTHON=ON", "-DTOROID_PYTHON_WHEEL=ON",
                *shlex.split(os.environ.get("TOROID_CMAKE_ARGS", ""))]
        subprocess.run(["cmake", "-S", ROOT, "-B", build, *args], check=True)
        subprocess.run(["cmake", "--build", build, "-j", str(os.cpu_count() or 1)], check=True)
        package = os.path.join(os.path.abspath(self.build_lib), "toroid")
        os.makedirs(package, exist_ok=True)
        built = glob.glob(os.path.join(build, "python", "toroid", "*.so")) + \
            glob.glob(os.path.join(build, "lib", "libtoroid.so*"))
        if not any(os.path.basename(f).startswith("_toroid") for f in built):
            raise RuntimeError(f"toroid: CMake built no _toroid extension in {build}")
        for f in built:
            shutil.copy2(f, package, follow_symlinks=False)


setup(version=VERSION, ext_modules=[Extension("toroid._toroid", sources=[])], cmdclass={"build_ext": CMakeBuild})
