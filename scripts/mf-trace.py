#!/usr/bin/env python3
"""Write the push trace of tests/pslite-app/mf_train without running it.

mf_train (matrix factorisation on MovieLens-100k over PS-lite) decides every push from
its seed alone: the train/test split, each worker's shard, each epoch's batch order. This
script replays that logic (the same splitmix64 hashes and Fisher-Yates shuffles) and
writes, for every worker step, the sorted distinct row keys the worker pushes, each with
dim + 1 values, as a Zebra push trace (rust/zebra-hotkeys/TRACE.md): worker = rank,
round = the worker's step. `zebra profile` and `zebra precision` read it.

  scripts/mf-trace.py --data .build/data/ml-100k.inter --workers 2 --servers 1 \\
      --epochs 2 --out mf.trace
  zebra trace stats mf.trace     # pairs per worker = mf_train's pushed_rows

Options default to mf_train's defaults and must match the job's (--seed, --batch, --dim,
--test-frac, --epochs, workers and servers). The trace covers full epochs: a job stopped
early by --target-rmse pushes a prefix of it.
"""

import argparse
import struct
import sys

M64 = (1 << 64) - 1
MAX_KEY = M64  # ps::kMaxKey in BytePS's PS-lite
SPLIT, SHARD, EPOCH = 1, 2, 3


def mix(h):
    h = (h + 0x9E3779B97F4A7C15) & M64
    h = ((h ^ (h >> 30)) * 0xBF58476D1CE4E5B9) & M64
    h = ((h ^ (h >> 27)) * 0x94D049BB133111EB) & M64
    return h ^ (h >> 31)


def hash_of(seed, fields):
    h = mix(seed ^ 0x6D665F747261696E)
    for f in fields:
        h = mix(h ^ f)
    return h


def unit(h):
    return (h >> 11) * (1.0 / 9007199254740992.0)


def shuffle(v, seed, stream):
    h = hash_of(seed, stream)
    for i in range(len(v), 1, -1):
        h = mix(h)
        j = h % i
        v[i - 1], v[j] = v[j], v[i - 1]


def load(path):
    """Users and items numbered densely in token order, as mf_train's loader does."""
    with open(path, encoding="utf-8") as f:
        header = [c.split(":")[0] for c in f.readline().rstrip("\r\n").split("\t")]
        try:
            cu, ci = header.index("user_id"), header.index("item_id")
        except ValueError:
            sys.exit(f"mf-trace: {path}: the header needs user_id and item_id columns")
        pairs = []
        for line in f:
            line = line.rstrip("\r\n")
            if line:
                cols = line.split("\t")
                pairs.append((cols[cu], cols[ci]))
    uid = {t: n for n, t in enumerate(sorted({u for u, _ in pairs}))}
    iid = {t: n for n, t in enumerate(sorted({i for _, i in pairs}))}
    return [(uid[u], iid[i]) for u, i in pairs], len(uid)


def varint(v, out):
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def record(worker, step, keys, width):
    body = bytearray()
    for v in (worker, step, len(keys)):
        varint(v, body)
    prev = 0
    for k in keys:
        d = (k - prev) & M64
        d = d - (1 << 64) if d >> 63 else d  # as a signed 64-bit difference
        varint(((d << 1) ^ (d >> 63)) & M64, body)
        varint(width, body)
        prev = k
    return struct.pack("<I", len(body)) + bytes(body)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, help="ml-100k.inter (RecBole atomic file)")
    p.add_argument("--out", required=True, help="trace file to write")
    p.add_argument("--workers", type=int, required=True)
    p.add_argument("--servers", type=int, required=True)
    p.add_argument("--epochs", type=int, default=15)
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--dim", type=int, default=16)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--test-frac", type=float, default=0.1)
    a = p.parse_args()
    if min(a.workers, a.servers, a.epochs, a.batch, a.dim) < 1:
        sys.exit("mf-trace: --workers, --servers, --epochs, --batch and --dim must be >= 1")
    ratings, users = load(a.data)
    train = [k for k in range(len(ratings)) if not unit(hash_of(a.seed, [SPLIT, k])) < a.test_frac]
    shuffle(train, a.seed, [SHARD])
    begins = [MAX_KEY // a.servers * s for s in range(a.servers)]

    def key_of(row):
        return begins[row % a.servers] + row // a.servers

    pairs = 0
    with open(a.out, "wb") as out:
        out.write(b"ZEBRATRC" + struct.pack("<HHI", 1, 16, 0))
        for rank in range(a.workers):
            shard = train[len(train) * rank // a.workers:len(train) * (rank + 1) // a.workers]
            step = 0
            for epoch in range(1, a.epochs + 1):
                order = list(shard)
                shuffle(order, a.seed, [EPOCH, rank, epoch])
                for at in range(0, len(order), a.batch):
                    rows = set()
                    for k in order[at:at + a.batch]:
                        u, i = ratings[k]
                        rows.add(u)
                        rows.add(users + i)
                    keys = sorted(key_of(r) for r in rows)
                    out.write(record(rank, step, keys, a.dim + 1))
                    pairs += len(keys)
                    step += 1
            print(f"mf-trace: worker {rank}: {step} steps")
    print(f"mf-trace: wrote {a.out}: {pairs} pushed rows of {a.dim + 1} values")


if __name__ == "__main__":
    main()
