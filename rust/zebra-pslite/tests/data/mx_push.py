"""A tiny MXNet 1.9.1 dist_sync job with known values, run to capture the
PS-lite messages in tests/data/mxnet/ (see README.md). Run it as every node
of the job: scripts/pslaunch.py --servers 1 --workers 2 -- python mx_push.py
"""
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
import mxnet as mx  # noqa: E402  (servers and the scheduler stay in here)
import numpy as np  # noqa: E402

kv = mx.kv.create("dist_sync")
r = kv.rank
# Dense key 3: worker r pushes [1, 2, 3] * (r + 1). The engine priority does
# not reach the PS-lite meta (its priority field stays 0).
kv.init(3, mx.nd.zeros((3,)))
kv.push(3, mx.nd.array([1, 2, 3]) * (r + 1), priority=-5)
out = mx.nd.zeros((3,))
kv.pull(3, out=out)
assert (out.asnumpy() == np.array([1, 2, 3]) * 3).all(), out
# row_sparse key 7 (6 x 2, initialised to ones): worker r pushes rows 1 and 4.
kv.init(7, mx.nd.ones((6, 2)).tostype("row_sparse"))
rows = np.array([[1, 2], [3, 4]], dtype=np.float32) * (r + 1)
kv.push(7, mx.nd.sparse.row_sparse_array((rows, [1, 4]), shape=(6, 2)))
rs = mx.nd.sparse.zeros("row_sparse", (6, 2))
kv.row_sparse_pull(7, out=rs, row_ids=mx.nd.array([1, 4]))
print("mx_push: OK", out.asnumpy().tolist(), rs.asnumpy().tolist())
