#!/usr/bin/env python3
"""MXNet `dist_sync` kvstore test with exact integer sums, for every PS-lite role.

Run it as every process of a PS-lite job (scripts/pslaunch.py sets DMLC_ROLE & co.):

* scheduler and servers run their loop inside `import mxnet` (mxnet/kvstore/kvstore_server.py)
  and leave it through SystemExit; a server then checks what its updater saw (it applied
  updates, dense and row_sparse ones, and with several servers it holds a slice of the big
  key) and prints "mxnet dist_sync server: OK ..." or FAIL and exits non-zero;
* workers init dense and row_sparse keys, and for several rounds push known integer-valued
  gradients, pull (row_sparse_pull for the sparse keys), and compare every pulled value with
  the exact expected sum; each prints "mxnet dist_sync: OK checked N values" or FAIL with the
  first mismatches and exits non-zero.

Server-side failures cannot pass silently: MXNet calls the Python updater and controller
through ctypes callbacks, where an exception is only printed ("Exception ignored on calling
ctypes callback function") and the server exits 0. The updater (exact_sum.py) exits the
process itself on any exception, and for whatever else goes wrong in a callback
(unpickling the optimizer, the Updater wrapper) servers and the scheduler install a
sys.unraisablehook that prints the traceback and exits non-zero.
"""

import argparse
import os
import sys
import traceback

ROLE = os.environ.get("DMLC_ROLE", "worker")
UNRAISABLE_EXIT = 71
SERVER_CHECK_EXIT = 72
DEFAULT_BIGARRAY_BOUND = 1000 * 1000
MAX_SHOWN_MISMATCHES = 10


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=4, help="push/pull rounds (default 4)")
    p.add_argument("--bigarray-bound", type=int, default=None,
                   help="set MXNET_KVSTORE_BIGARRAY_BOUND for every role (default: MXNet's, 1000000)")
    return p.parse_args()


ARGS = parse_args()
if ARGS.bigarray_bound is not None:
    os.environ["MXNET_KVSTORE_BIGARRAY_BOUND"] = str(ARGS.bigarray_bound)
os.environ.setdefault("OMP_NUM_THREADS", "1")  # several MXNet processes share 2 cores
BIGARRAY_BOUND = int(os.environ.get("MXNET_KVSTORE_BIGARRAY_BOUND", DEFAULT_BIGARRAY_BOUND))
BIG_ELEMS = BIGARRAY_BOUND + 7
RSP_BIG_COLS = 16
RSP_BIG_ROWS = -(-BIGARRAY_BOUND // RSP_BIG_COLS) + 3


def dense_shapes():
    """Dense keys: small ones (below the default bound each lives on one server) and one
    above the bigarray bound, which MXNet slices across all servers."""
    return {
        "dense_a": (37,),
        "dense_b": (5, 7),
        "dense_c": (129,),
        "dense_d": (3,),
        "dense_pp": (11, 4),
        "dense_big": (BIG_ELEMS,),
    }


def rsp_shapes():
    return {
        "rsp_a": (64, 8),
        "rsp_big": (RSP_BIG_ROWS, RSP_BIG_COLS),
    }


PUSHPULL_KEY = "dense_pp"


def slice_sizes(size, num_servers):
    """Sizes of the parts MXNet's KVStoreDist::EncodeDefaultKey cuts a big key into."""
    return [int(size / num_servers * (i + 1)) - int(size / num_servers * i)
            for i in range(num_servers)]


def emit(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def fail_now(code, lines):
    for line in lines:
        emit(line)
    sys.stderr.flush()
    os._exit(code)


def unraisable_hook(info):
    sys.stdout.flush()
    sys.stderr.write("dist_sync_kvstore (%s): %s: %r\n"
                     % (ROLE, info.err_msg or "Exception ignored in", info.object))
    traceback.print_exception(info.exc_type, info.exc_value, info.exc_traceback)
    sys.stderr.flush()
    os._exit(UNRAISABLE_EXIT)


def run_server_or_scheduler():
    sys.unraisablehook = unraisable_hook
    code = None
    try:
        import mxnet  # noqa: F401  the server/scheduler loop runs here
    except SystemExit as stop:
        code = stop.code
    else:
        fail_now(SERVER_CHECK_EXIT, ["mxnet dist_sync %s: FAIL the %s loop did not run on import"
                                     % (ROLE, ROLE)])
    if code not in (None, 0):
        fail_now(code if isinstance(code, int) else 1,
                 ["mxnet dist_sync %s: FAIL the %s loop exited with %r" % (ROLE, ROLE, code)])
    if ROLE == "server":
        check_server_stats()
    sys.exit(0)


def check_server_stats():
    """With one server it holds the big keys whole; with several, one slice of each
    (MXNet cuts dense keys into value ranges and row_sparse keys into row ranges)."""
    module = sys.modules.get("exact_sum")
    stats = getattr(module, "STATS", None)
    if not stats:
        fail_now(SERVER_CHECK_EXIT, ["mxnet dist_sync server: FAIL the exact_sum updater "
                                     "never ran here (optimizer not set, or no pushes)"])
    num_servers = int(os.environ.get("DMLC_NUM_SERVER", "1"))
    shapes = {(e["stype"], e["shape"]) for e in stats.values()}
    big_parts = {("default", (n,)) for n in slice_sizes(BIG_ELEMS, num_servers)}
    rsp_parts = {("row_sparse", (n, RSP_BIG_COLS))
                 for n in slice_sizes(RSP_BIG_ROWS, num_servers)}
    what = "a slice" if num_servers > 1 else "the whole"
    problems = []
    if not shapes & big_parts:
        problems.append("no update of %s of dense_big (%d values, %d servers: parts %s)"
                        % (what, BIG_ELEMS, num_servers, sorted(n for _, (n,) in big_parts)))
    if not shapes & rsp_parts:
        problems.append("no update of %s of rsp_big (%d rows, %d servers: parts %s)"
                        % (what, RSP_BIG_ROWS, num_servers, sorted(n for _, (n, _c) in rsp_parts)))
    if problems:
        fail_now(SERVER_CHECK_EXIT, ["mxnet dist_sync server: FAIL " + p for p in problems]
                 + ["  shapes updated here: %s" % sorted(shapes)])
    updates = sum(e["updates"] for e in stats.values())
    sparse_keys = sum(1 for e in stats.values() if e["stype"] == "row_sparse")
    (_, (big_n,)), = shapes & big_parts
    (_, (rsp_n, _c)), = shapes & rsp_parts
    emit("mxnet dist_sync server: OK applied %d updates on %d keys (%d row_sparse); "
         "holds %d of %d dense_big values and %d of %d rsp_big rows"
         % (updates, len(stats), sparse_keys, big_n, BIG_ELEMS, rsp_n, RSP_BIG_ROWS))


class Plan:
    """Every worker's gradients and pulls, known to every worker, so each can compute
    the exact expected values. All values are small integers: float32 sums are exact."""

    def __init__(self, np, num_workers):
        self.np = np
        self.num_workers = num_workers
        self.dense = dense_shapes()
        self.rsp = rsp_shapes()
        self.key_index = {k: i for i, k in enumerate(sorted(self.dense) + sorted(self.rsp))}

    def init_value(self, key, shape):
        np = self.np
        n = int(np.prod(shape))
        ki = self.key_index[key]
        # every row non-zero: MXNet's server rejects a row_sparse init with no rows
        return ((np.arange(n, dtype=np.int64) * 3 + ki) % 97 + 1).reshape(shape)

    def dense_grad(self, key, worker, rnd):
        np = self.np
        shape = self.dense[key]
        n = int(np.prod(shape))
        ki = self.key_index[key]
        base = np.arange(n, dtype=np.int64)
        return ((base * 7 + 13 * worker + 5 * rnd + 3 * ki) % 61 - 20).reshape(shape)

    def rsp_rows(self, key, worker, rnd):
        """Rows a worker pushes in a round: about three quarters of them, overlapping
        between workers; worker 1 pushes no row at all of rsp_a in round 1."""
        np = self.np
        rows = self.rsp[key][0]
        ki = self.key_index[key]
        if key == "rsp_a" and worker == 1 and rnd == 1:
            return np.zeros((0,), dtype=np.int64)
        i = np.arange(rows, dtype=np.int64)
        return i[(i * 5 + 3 * worker + 7 * rnd + ki) % 4 != 0]

    def rsp_grad_rows(self, key, worker, rnd, rows):
        np = self.np
        cols = self.rsp[key][1]
        ki = self.key_index[key]
        cell = rows[:, None] * cols + np.arange(cols, dtype=np.int64)[None, :]
        return (cell * 3 + 11 * worker + 2 * rnd + ki) % 23 + 1

    def rsp_grad_dense(self, key, worker, rnd):
        np = self.np
        full = np.zeros(self.rsp[key], dtype=np.int64)
        rows = self.rsp_rows(key, worker, rnd)
        full[rows] = self.rsp_grad_rows(key, worker, rnd, rows)
        return full

    def pull_rows(self, key, worker, rnd, last):
        np = self.np
        rows = self.rsp[key][0]
        i = np.arange(rows, dtype=np.int64)
        if last:
            return i
        return i[(i + worker + rnd) % 3 != 1]


class Checker:
    def __init__(self, np):
        self.np = np
        self.checked = 0
        self.mismatches = []
        self.mismatch_count = 0

    def compare(self, what, got, expected, row_ids=None):
        np = self.np
        got = np.asarray(got, dtype=np.float64)
        expected = np.asarray(expected, dtype=np.float64)
        if got.shape != expected.shape:
            self.mismatch_count += 1
            self.mismatches.append("%s: shape %s, expected %s" % (what, got.shape, expected.shape))
            return
        self.checked += got.size
        bad = np.argwhere(got != expected)
        if len(bad):
            self.mismatch_count += len(bad)
            for idx in bad[:max(0, MAX_SHOWN_MISMATCHES - len(self.mismatches))]:
                idx = tuple(int(v) for v in idx)
                shown = list(idx)
                if row_ids is not None:
                    shown[0] = int(row_ids[idx[0]])
                self.mismatches.append("%s%s: got %r, expected %r"
                                       % (what, shown, float(got[idx]), float(expected[idx])))


def run_worker():
    import numpy as np
    import mxnet as mx
    import exact_sum

    kv = mx.kv.create("dist_sync")
    rank, num_workers = kv.rank, kv.num_workers
    num_servers = int(os.environ.get("DMLC_NUM_SERVER", "1"))
    plan = Plan(np, num_workers)
    check = Checker(np)
    kv.set_optimizer(exact_sum.ExactSum())

    dense_keys = sorted(plan.dense)
    rsp_keys = sorted(plan.rsp)
    current = {}
    init_keys, init_vals = [], []
    for key in dense_keys:
        current[key] = plan.init_value(key, plan.dense[key])
        init_keys.append(key)
        init_vals.append(mx.nd.array(current[key], dtype="float32"))
    for key in rsp_keys:
        current[key] = plan.init_value(key, plan.rsp[key])
        init_keys.append(key)
        init_vals.append(mx.nd.array(current[key], dtype="float32").tostype("row_sparse"))
    kv.init(init_keys, init_vals)

    list_keys = [k for k in dense_keys if k != PUSHPULL_KEY]
    for rnd in range(ARGS.rounds):
        last = rnd == ARGS.rounds - 1
        for key in dense_keys:
            for w in range(num_workers):
                current[key] = current[key] + plan.dense_grad(key, w, rnd)
        for key in rsp_keys:
            for w in range(num_workers):
                current[key] = current[key] + plan.rsp_grad_dense(key, w, rnd)

        grads = [mx.nd.array(plan.dense_grad(k, rank, rnd), dtype="float32") for k in list_keys]
        kv.push(list_keys, grads)
        outs = [mx.nd.zeros(plan.dense[k], dtype="float32") for k in list_keys]
        kv.pull(list_keys, out=outs)

        pp_out = mx.nd.zeros(plan.dense[PUSHPULL_KEY], dtype="float32")
        kv.pushpull(PUSHPULL_KEY,
                    mx.nd.array(plan.dense_grad(PUSHPULL_KEY, rank, rnd), dtype="float32"),
                    out=pp_out)

        rsp_outs = {}
        for key in rsp_keys:
            rows = plan.rsp_rows(key, rank, rnd)
            data = plan.rsp_grad_rows(key, rank, rnd, rows).astype(np.float32)
            grad = mx.nd.sparse.row_sparse_array((data, rows), shape=plan.rsp[key], dtype="float32")
            kv.push(key, grad)
            pull_ids = plan.pull_rows(key, rank, rnd, last)
            out = mx.nd.sparse.zeros("row_sparse", plan.rsp[key], dtype="float32")
            kv.row_sparse_pull(key, out=out, row_ids=mx.nd.array(pull_ids, dtype="int64"))
            rsp_outs[key] = (out, pull_ids)

        for key, out in zip(list_keys, outs):
            check.compare("round %d pull %s" % (rnd, key), out.asnumpy(), current[key])
        check.compare("round %d pushpull %s" % (rnd, PUSHPULL_KEY), pp_out.asnumpy(),
                      current[PUSHPULL_KEY])
        for key in rsp_keys:
            out, pull_ids = rsp_outs[key]
            check.compare("round %d row_sparse_pull %s row ids" % (rnd, key),
                          out.indices.asnumpy(), pull_ids)
            check.compare("round %d row_sparse_pull %s" % (rnd, key),
                          out.data.asnumpy(), current[key][pull_ids], row_ids=pull_ids)
        if check.mismatches:
            break

    where = "worker %d of %d, %d server%s" % (rank, num_workers, num_servers,
                                               "" if num_servers == 1 else "s")
    if check.mismatches:
        fail_now(1, ["mxnet dist_sync: FAIL %d mismatches (%s); first ones:"
                     % (check.mismatch_count, where)]
                 + ["  " + m for m in check.mismatches])
    emit("mxnet dist_sync: OK checked %d values (%s, %d rounds, %d dense + %d row_sparse keys, "
         "big key %d values)" % (check.checked, where, ARGS.rounds, len(dense_keys),
                                 len(rsp_keys), BIG_ELEMS))


def main():
    if ROLE in ("server", "scheduler"):
        run_server_or_scheduler()
        return
    try:
        run_worker()
    except BaseException:
        traceback.print_exc()
        fail_now(1, ["mxnet dist_sync: FAIL worker raised (traceback above)"])


if __name__ == "__main__":
    main()
