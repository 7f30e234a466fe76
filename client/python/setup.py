"""Build hook: generate the augmentd.v1 stubs from ../../proto before packaging (never committed)."""
import importlib.util
import os

from setuptools import setup
from setuptools.command.build_py import build_py

_HERE = os.path.dirname(os.path.abspath(__file__))


def _load_stubs_module():
    # Load augmentd/_stubs.py by path: importing the package itself would need the stubs it generates.
    path = os.path.join(_HERE, "src", "augmentd", "_stubs.py")
    spec = importlib.util.spec_from_file_location("_augmentd_stubs", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BuildPyWithProtos(build_py):
    def run(self):
        _load_stubs_module().generate(force=True)
        super().run()


setup(cmdclass={"build_py": BuildPyWithProtos})
