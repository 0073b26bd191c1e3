"""Zebra for PS-lite, as a wheel: the shim `lib/libzmq.so.5`, the `zebra` binary beside it,
and two console scripts.

- `zebra`: the binary (`zebra run`, `zebra env`, `zebra switch`, ...); `zebra run` and
  `zebra env` find the shim of this package;
- `zebra-mxnet-launch`: `python -m mxnet.tools.launch` with the same arguments, on
  Python 3.9 and later too (MXNet 1.9.1's launcher calls `Thread.isAlive`): it puts
  `launcher_compat/` on PYTHONPATH for the launcher only.
"""

import os
import sys

__version__ = "0.0.0"  # replaced by scripts/build-wheel.sh with the binary's version

HERE = os.path.dirname(os.path.abspath(__file__))
BINARY = os.path.join(HERE, "bin", "zebra")
SHIM = os.path.join(HERE, "lib", "libzmq.so.5")


def zebra():
    """The `zebra` console script: this package's binary, in place of this process."""
    os.execv(BINARY, [BINARY] + sys.argv[1:])


def mxnet_launch():
    """The `zebra-mxnet-launch` console script."""
    env = dict(os.environ)
    compat = os.path.join(HERE, "launcher_compat")
    env["PYTHONPATH"] = os.pathsep.join(p for p in [compat, env.get("PYTHONPATH")] if p)
    argv = [sys.executable, "-m", "mxnet.tools.launch"] + sys.argv[1:]
    os.execve(sys.executable, argv, env)
