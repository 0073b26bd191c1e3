"""The wheel holds native files (libzmq.so.5, the zebra binary) but no Python extension:
it is platform-specific (installed under platlib, tagged py3-none-<platform>) so that pip
installs it on this platform only."""

from setuptools import setup
from setuptools.dist import Distribution
from wheel.bdist_wheel import bdist_wheel


class NativeDistribution(Distribution):
    def has_ext_modules(self):
        return True


class NativeWheel(bdist_wheel):
    def get_tag(self):
        return ("py3", "none", super().get_tag()[2])


setup(distclass=NativeDistribution, cmdclass={"bdist_wheel": NativeWheel})
