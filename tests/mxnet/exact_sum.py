"""The server-side optimizer of the dist_sync kvstore test: weight += rescale_grad * grad.

`kv.set_optimizer` pickles the optimizer and sends it to every server, where it is
unpickled by module name: this module must be importable there, which it is because the
servers run the same script (`dist_sync_kvstore.py`, in this directory) as the workers.

MXNet's stock `test` optimizer fails on row_sparse keys (`state[:] = weight` with a
row_sparse weight) inside a ctypes callback, where Python only prints the exception and
the server carries on and exits 0. Here any failure inside `update` prints a traceback
and ends the server process at once with a non-zero code, so the job fails.

On a server this module is imported while `import mxnet` is still running (the server
loop starts from inside it, before aliases such as `mxnet.nd` exist), so it imports the
submodules it uses by their full names.

`STATS` records, per key, what the server saw; `dist_sync_kvstore.py` checks it when the
server loop returns.
"""

import os
import sys
import traceback

from mxnet import optimizer as mx_optimizer
from mxnet.ndarray import sparse as nd_sparse

UPDATER_FAILED_EXIT = 70

STATS = {}


@mx_optimizer.register
class ExactSum(mx_optimizer.Optimizer):
    """Adds the (merged) gradient to the stored weight; dense and row_sparse keys."""

    def create_state(self, index, weight):
        return None

    def update(self, index, weight, grad, state):
        try:
            self._apply(index, weight, grad)
        except BaseException:
            sys.stdout.flush()
            sys.stderr.write("exact_sum: updater failed on key %r\n" % (index,))
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(UPDATER_FAILED_EXIT)

    def _apply(self, index, weight, grad):
        if self.rescale_grad != 1.0:
            grad = grad * self.rescale_grad
        if weight.stype == "default" and grad.stype == "default":
            weight[:] += grad
        elif weight.stype == "row_sparse" and grad.stype == "row_sparse":
            nd_sparse.add(weight, grad).copyto(weight)
        else:
            raise TypeError("exact_sum: unsupported storage types weight=%s grad=%s"
                            % (weight.stype, grad.stype))
        weight.wait_to_read()
        self._record(index, weight, grad)

    @staticmethod
    def _record(index, weight, grad):
        entry = STATS.get(index)
        if entry is None:
            entry = STATS[index] = {"updates": 0, "shape": tuple(weight.shape),
                                    "stype": weight.stype, "grad_rows": 0}
            print("exact_sum: first update of key %r: shape %s, %s"
                  % (index, entry["shape"], entry["stype"]), flush=True)
        entry["updates"] += 1
        if grad.stype == "row_sparse":
            entry["grad_rows"] += int(grad.indices.shape[0])
