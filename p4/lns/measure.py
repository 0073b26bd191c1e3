#!/usr/bin/env python3
"""Precision of the switch's number modes against the exact f32 sum.

For every aggregated key, precision = 1 - |switch sum - exact sum| / |exact sum|
(clipped to 0..1; keys whose exact sum is 0 are left out), where the exact sum
is what the software switch computes (f32 additions in worker order). Like
Libra's Table 2, the table has the median and mean over all keys of:

  random     N workers each push one f32 uniform in (-1, 1) per key;
  gradients  the sparse gradients of a matrix-factorisation model trained on
             MovieLens-100k (the paper's NCF workload's data), N workers each
             pushing the sum of its mini-batch's per-example gradients; rounds
             are measured after a warm-up, the model is updated with the exact
             sums.

and these modes:

  fixed:F       the Tofino default: workers send round(x * 2^F) (FIXED flag);
  lns:HxL:F     the ZEBRA_LNS build: workers send f32 bits, the switch looks
                them up (gen_tables.py, H hi and L lo mantissa bits).

F is the largest scale at which N values of the largest magnitude seen cannot
saturate the i32 sum. MovieLens-100k comes from the recbole 1.2.1 wheel
(recbole/dataset_example/ml-100k/ml-100k.inter); fetch it with

  python3 -m pip download recbole==1.2.1 --no-deps -d .build/cache

Without it the gradient rows are skipped (said so in the output).
Deterministic: seeded.

  recorded   with --grads FILE..., gradients recorded from a real training job
             (tests/pslite-app/mf_train --dump-grads, one file per worker: raw
             little-endian f32): the i-th values of the N files are one N-way sum.

  python3 p4/lns/measure.py [--wheel .build/cache/recbole-1.2.1-py3-none-any.whl]
  python3 p4/lns/measure.py --grads run/grads.0 run/grads.1 run/grads.2 run/grads.3
"""

import argparse
import array
import math
import os
import random
import sys
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gen_tables import I32_MAX, LnsTables, f32, f32_bits, saturating_sum  # noqa: E402

LNS_GEOMETRIES = [(7, 0), (8, 0), (10, 0), (7, 4), (7, 8)]
REGISTERS = 32


def exact_f32_sum(values):
    """f32 additions in order, as the software switch's exact mode."""
    acc = 0.0
    for v in values:
        acc = f32(acc + v)
    return acc


def fixed_sum(values, frac_bits):
    scale = float(1 << frac_bits)
    raw = []
    for v in values:
        x = round(v * scale)
        raw.append(max(-(1 << 31), min(I32_MAX, x)))
    return saturating_sum(raw) / scale


def lns_sum(values, tables):
    return tables.to_float(saturating_sum(tables.to_fixed(f32_bits(v)) for v in values))


def frac_bits_for(workers, max_abs):
    """Largest F with workers * max_abs * 2^F < 2^31 (no saturation), at most 30."""
    bound = workers * max_abs
    f = 30
    while f > 0 and bound * (1 << f) >= I32_MAX:
        f -= 1
    return f


def precision(approx, exact):
    return max(0.0, 1.0 - abs(approx - exact) / abs(exact))


def summarize(ps):
    ps = sorted(ps)
    n = len(ps)
    median = ps[n // 2] if n % 2 else (ps[n // 2 - 1] + ps[n // 2]) / 2
    return median, sum(ps) / n, ps[n // 100]


def random_rounds(rng, workers, keys):
    """One round: per key, one f32 in (-1, 1) from each worker."""
    return [[f32(rng.uniform(-1.0, 1.0)) for _ in range(workers)] for _ in range(keys)]


def load_ml100k(wheel):
    with zipfile.ZipFile(wheel) as z:
        text = z.read("recbole/dataset_example/ml-100k/ml-100k.inter").decode()
    rows = []
    for line in text.splitlines()[1:]:
        u, i, r, _ = line.split("\t")
        rows.append((int(u), int(i), float(r)))
    return rows


def mf_gradient_rounds(rng, rows, workers, batch, dim, warmup, rounds):
    """Per measured round and key: the workers' gradient contributions (only
    workers that touched the key), from a biased matrix factorisation trained
    with SGD on the exact sums."""
    users = 1 + max(u for u, _, _ in rows)
    items = 1 + max(i for _, i, _ in rows)
    mean = sum(r for _, _, r in rows) / len(rows)
    P = [[rng.gauss(0, 0.1) for _ in range(dim)] for _ in range(users)]
    Q = [[rng.gauss(0, 0.1) for _ in range(dim)] for _ in range(items)]
    bu = [0.0] * users
    bi = [0.0] * items
    lr = 0.02
    shards = [rows[w::workers] for w in range(workers)]
    out = []
    for step in range(warmup + rounds):
        per_key = {}
        for w in range(workers):
            grads = {}
            for u, i, r in rng.sample(shards[w], batch):
                err = mean + bu[u] + bi[i] + sum(a * b for a, b in zip(P[u], Q[i])) - r
                for d in range(dim):
                    ku, ki = ("P", u, d), ("Q", i, d)
                    grads[ku] = grads.get(ku, 0.0) + err * Q[i][d]
                    grads[ki] = grads.get(ki, 0.0) + err * P[u][d]
                grads[("bu", u)] = grads.get(("bu", u), 0.0) + err
                grads[("bi", i)] = grads.get(("bi", i), 0.0) + err
            for k, g in grads.items():
                per_key.setdefault(k, []).append(f32(g / batch))
        if step >= warmup:
            out.append(per_key)
        for k, vs in per_key.items():
            g = exact_f32_sum(vs) / workers
            if k[0] == "P":
                P[k[1]][k[2]] -= lr * g
            elif k[0] == "Q":
                Q[k[1]][k[2]] -= lr * g
            elif k[0] == "bu":
                bu[k[1]] -= lr * g
            else:
                bi[k[1]] -= lr * g
    return [vs for per_key in out for vs in per_key.values()]


def evaluate(name, key_values, workers, out):
    exact = [exact_f32_sum(vs) for vs in key_values]
    max_abs = max(abs(v) for vs in key_values for v in vs)
    fb = frac_bits_for(workers, max_abs)
    keys = [(vs, e) for vs, e in zip(key_values, exact) if e != 0.0]
    print(f"\n{name}: {len(key_values)} keys ({len(key_values) - len(keys)} with exact sum 0 left out), "
          f"{workers} workers, max |value| {max_abs:.3g}, F = {fb}", file=out)
    print(f"{'mode':<14} {'median':>10} {'mean':>10} {'1st pct':>10} {'tables/register':>16} {'32 registers':>13}", file=out)
    ps = [precision(fixed_sum(vs, fb), e) for vs, e in keys]
    med, mean, p1 = summarize(ps)
    print(f"{'fixed:' + str(fb):<14} {100 * med:>9.4f}% {100 * mean:>9.4f}% {100 * p1:>9.4f}% {'-':>16} {'-':>13}", file=out)
    for hi, lo in LNS_GEOMETRIES:
        t = LnsTables(fb, hi, lo)
        ps = [precision(lns_sum(vs, t), e) for vs, e in keys]
        med, mean, p1 = summarize(ps)
        label = f"lns:{hi}x{lo}:{fb}"
        per_reg = f"{t.memory_bytes() / 1024:.1f} KiB"
        total = f"{t.memory_bytes(REGISTERS) / 1024:.0f} KiB"
        print(f"{label:<14} {100 * med:>9.4f}% {100 * mean:>9.4f}% {100 * p1:>9.4f}% {per_reg:>16} {total:>13}", file=out)


def recorded_rounds(paths):
    """N-way sums of recorded gradients: value i of every file, as long as all have one."""
    columns = []
    for path in paths:
        a = array.array("f")
        with open(path, "rb") as f:
            data = f.read()
        if len(data) % 4:
            raise ValueError(f"{path}: {len(data)} bytes is not a whole number of f32 values")
        a.frombytes(data)
        if sys.byteorder != "little":
            a.byteswap()
        columns.append(a)
    n = min(len(c) for c in columns)
    return [[c[i] for c in columns] for i in range(n)]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    default_wheel = os.path.join(here, "..", "..", ".build", "cache", "recbole-1.2.1-py3-none-any.whl")
    p.add_argument("--wheel", default=default_wheel, help="the recbole 1.2.1 wheel (MovieLens-100k)")
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--keys", type=int, default=20000, help="keys of the random workload")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--grads", nargs="+", metavar="FILE",
                   help="recorded gradients, one raw little-endian f32 file per worker (mf_train --dump-grads)")
    args = p.parse_args(argv)
    rng = random.Random(args.seed)
    out = sys.stdout
    print("precision vs the exact f32 sum (1 - relative error), memory: 4-byte entries", file=out)
    if args.grads:
        try:
            kv = recorded_rounds(args.grads)
        except (OSError, ValueError) as e:
            print(f"measure.py: {e}", file=sys.stderr)
            return 2
        if not kv:
            print("measure.py: the gradient files hold no values", file=sys.stderr)
            return 2
        evaluate(f"recorded gradients ({len(args.grads)} workers' files)", kv, len(args.grads), out)
        return 0
    evaluate("random floats in (-1, 1)", random_rounds(rng, args.workers, args.keys), args.workers, out)
    if os.path.exists(args.wheel):
        rows = load_ml100k(args.wheel)
        kv = mf_gradient_rounds(rng, rows, args.workers, batch=128, dim=16, warmup=300, rounds=40)
        evaluate("MovieLens-100k matrix-factorisation gradients", kv, args.workers, out)
    else:
        print(f"\ngradients: skipped, {os.path.normpath(args.wheel)} not found "
              "(python3 -m pip download recbole==1.2.1 --no-deps -d .build/cache)", file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
