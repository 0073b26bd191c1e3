"""Lets MXNet 1.9.1's launcher run on Python 3.9 and later.

`python -m mxnet.tools.launch` (dmlc_tracker, as shipped in the mxnet 1.9.1 wheel) calls
`threading.Thread.isAlive`, which Python 3.9 removed: the launcher dies with AttributeError
as soon as it has started the scheduler. Put this directory on PYTHONPATH for the launcher
only:

    PYTHONPATH=/path/to/launcher-compat python -m mxnet.tools.launch ...

It adds the old name as an alias of `is_alive`, and takes itself off PYTHONPATH so that the
processes the launcher starts (the job's own Python) do not load it. Nothing of Zebra needs
it; the wheel's `zebra-mxnet-launch` uses it the same way.
"""

import os
import threading

if not hasattr(threading.Thread, "isAlive"):
    threading.Thread.isAlive = threading.Thread.is_alive

_here = os.path.dirname(os.path.abspath(__file__))
_rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
         if p and os.path.abspath(p) != _here]
if _rest:
    os.environ["PYTHONPATH"] = os.pathsep.join(_rest)
else:
    os.environ.pop("PYTHONPATH", None)
