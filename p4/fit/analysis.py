"""PHV, stage and memory estimates of an elaborated program (model.py), and
the check against Tofino 1's limits (tofino.py)."""

import math
import re

from . import tofino as T
from .model import Elaborator, Env, _path_overlap, exclusive, root_of
from .p4parse import P4Error

SIZES = (8, 16, 32)


def containers(width):
    """{size: count} for one field (or byte-aligned run of fields) of `width` bits."""
    out = {8: 0, 16: 0, 32: 0}
    out[32] += width // 32
    r = width % 32
    if r:
        out[8 if r <= 8 else 16 if r <= 16 else 32] += 1
    return out


def _add(a, b, k=1):
    for s in SIZES:
        a[s] += b[s] * k


def _bits(c):
    return sum(s * c[s] for s in SIZES)


class Result:
    def __init__(self):
        self.rows = []          # (resource, used, limit, unit, ok, note)
        self.details = {}

    def add(self, name, used, limit, unit="", note="", ok=None):
        if ok is None:
            ok = used <= limit
        self.rows.append((name, used, limit, unit, ok, note))

    @property
    def fits(self):
        return all(r[4] for r in self.rows)


def analyse(decls, workload=None):
    env = Env(decls)
    gresses = Elaborator(env).pipeline()
    res = Result()
    phv(env, gresses, res)
    stages(env, gresses, res)
    passes(env, res, workload or {})
    return res, gresses


# ---- PHV ------------------------------------------------------------------------

def _header_instances(env, g):
    root = g.hdr_root
    out = {}
    for f, ft in env.fields_of(g.types[root]):
        ft = env.resolve(ft)
        if ft[0] == "stack":
            for i in range(env.const(ft[2])):
                out[f"{root}.{f}[{i}]"] = ft[1]
        elif env.is_header(ft):
            out[f"{root}.{f}"] = ft
        else:
            raise P4Error(f"{root}.{f} is not a header or header stack")
    return out


def _strip(p):
    return p[:-7] if p.endswith(".$valid") else p


def gress_phv(env, g):
    """Container needs of one gress: normal and tagalong, the header part as
    the largest parser path (overlay) and as all headers (no overlay)."""
    inst = _header_instances(env, g)
    mau = {p for p in g.mau_fields if not p.endswith(".$valid")}
    refs = {_strip(p) for p in g.mau_fields | g.parde_fields}
    extracted = set()
    for path in g.paths:
        extracted |= path
    written = {_strip(p) for p in g.mau_fields}
    present = set()
    for h in inst:
        if h in extracted or h in g.valid_set or any(_path_overlap(h, w) and w != h for w in written):
            present.add(h)

    per_header = {}
    for h in present:
        need = {"n": {8: 0, 16: 0, 32: 0}, "t": {8: 0, 16: 0, 32: 0}}
        run, run_normal = 0, False
        for f, ft in env.fields_of(inst[h]):
            w = env.width(ft)
            fp = f"{h}.{f}"
            normal = any(_path_overlap(fp, m) for m in mau)
            if w % 8 == 0 and run == 0:
                _add(need["n" if normal else "t"], containers(w))
                continue
            run += w
            run_normal |= normal
            if run % 8 == 0:
                _add(need["n" if run_normal else "t"], containers(run))
                run, run_normal = 0, False
        if run:
            _add(need["n" if run_normal else "t"], containers(run))
        per_header[h] = need

    def total(hs):
        n, t = {8: 0, 16: 0, 32: 0}, {8: 0, 16: 0, 32: 0}
        for h in hs:
            _add(n, per_header[h]["n"])
            _add(t, per_header[h]["t"])
        return n, t

    best, best_bits, best_path = None, -1, None
    for path in g.paths or [frozenset()]:
        live = (set(path) & present) | (g.valid_set & present)
        n, t = total(live)
        bits = _bits(n) + _bits(t)
        if bits > best_bits:
            best, best_bits, best_path = (n, t), bits, live
    union = total(present)

    # metadata, temporaries, intrinsic metadata: every leaf any block names
    leaves = {}
    for p in refs:
        try:
            root = root_of(g.types, p)
        except P4Error:
            continue
        if root == g.hdr_root:
            continue
        typ = env.resolve(g.types[root])
        if typ[0] == "name" and typ[1] in ("packet_in", "packet_out"):
            continue
        try:
            t = env.type_at(g.types[root], p[len(root):])
        except P4Error:
            continue
        for suffix, w in env.leaves(t, p):
            leaves[suffix] = w
    meta = {8: 0, 16: 0, 32: 0}
    small = []
    for p, w in leaves.items():
        if w >= 8:
            _add(meta, containers(w))
        else:
            small.append(w)
    bins = []
    for w in sorted(small, reverse=True):
        for i, b in enumerate(bins):
            if b + w <= 8:
                bins[i] += w
                break
        else:
            bins.append(w)
    meta[8] += len(bins)
    pov = len(present) + sum(1 for p in refs if p.endswith(".$valid") is False and False)
    return {"headers": best, "headers_all": union, "path": best_path, "meta": meta, "meta_bits": sum(leaves.values()),
            "pov": len(present), "per_header": per_header, "present": present}


def phv(env, gresses, res):
    normal, tag = {}, {}
    info = {}
    for g in gresses:
        p = gress_phv(env, g)
        info[g.name] = p
        n = dict(p["headers"][0])
        _add(n, p["meta"])
        n[8] += math.ceil(p["pov"] / 8)
        normal[g.name], tag[g.name] = n, dict(p["headers"][1])
    # tagalong collections (4 x 8, 6 x 16, 4 x 32 bits each), then the rest spills to normal
    per_coll = {8: 4, 16: 6, 32: 4}
    colls = 8
    for g in gresses:
        t = tag[g.name]
        want = max(math.ceil(t[s] / per_coll[s]) for s in SIZES)
        got = min(want, colls)
        colls -= got
        for s in SIZES:
            spill = max(0, t[s] - got * per_coll[s])
            normal[g.name][s] += spill
            t[s] -= spill
    # whole groups per gress, then the two gresses together
    used = {s: 0 for s in SIZES}
    for g in gresses:
        for s in SIZES:
            used[s] += math.ceil(normal[g.name][s] / T.PHV_GROUP[s]) * T.PHV_GROUP[s]
    # a 32-bit need beyond the 32-bit containers takes two 16-bit ones; 16-bit needs may use spare 32s
    cap = dict(T.PHV)
    over32 = max(0, used[32] - cap[32])
    used16 = used[16] + 2 * over32
    over16 = max(0, used16 - cap[16])
    spare32 = max(0, cap[32] - used[32])
    take = min(over16, spare32)
    over16 -= take
    used8 = used[8] + 2 * over16
    over8 = max(0, used8 - cap[8])
    fits = over8 == 0
    bits_needed = sum(s * used[s] for s in SIZES)
    res.details["phv"] = {"info": info, "normal": normal, "tag": tag, "used": used}
    for g in gresses:
        n, t = normal[g.name], tag[g.name]
        res.add(f"PHV {g.name}: normal containers (8/16/32-bit)",
                f"{n[8]}/{n[16]}/{n[32]} = {_bits(n)} b", "-", "", ok=True,
                note=f"headers {_bits(info[g.name]['headers'][0])} b on the largest path, metadata "
                     f"{info[g.name]['meta_bits']} b in {_bits(info[g.name]['meta'])} b of containers, "
                     f"{info[g.name]['pov']} validity bits; no overlay: "
                     f"{_bits(info[g.name]['headers_all'][0]) + _bits(info[g.name]['meta'])} b")
        res.add(f"PHV {g.name}: tagalong containers (8/16/32-bit)", f"{t[8]}/{t[16]}/{t[32]} = {_bits(t)} b", "-",
                "", ok=True)
        res.add(f"PHV {g.name}: validity bits", info[g.name]["pov"], T.POV_BITS)
    res.add("PHV both gresses: 8-bit containers", used[8], T.PHV[8], ok=used8 <= cap[8] and fits or used[8] <= cap[8] and fits)
    res.add("PHV both gresses: 16-bit containers", used[16], T.PHV[16],
            ok=used[16] + 2 * over32 - take <= cap[16] or fits)
    res.add("PHV both gresses: 32-bit containers", used[32], T.PHV[32], ok=used[32] <= cap[32] or fits)
    res.add("PHV both gresses: normal bits", bits_needed, sum(s * c for s, c in T.PHV.items()), "b",
            ok=fits, note="after trading sizes" if fits and any(used[s] > cap[s] for s in SIZES) else "")


# ---- stages ---------------------------------------------------------------------

def _rams(bits):
    return math.ceil(bits / (T.SRAM_WORDS * T.SRAM_WIDTH))


def table_memory(tb):
    if tb["keys"] == 0:
        return 0, 0
    size = max(1, tb["size"])
    if tb["ternary"]:
        tcam = math.ceil(tb["key_bits"] / T.TCAM_WIDTH) * math.ceil(size / T.TCAM_DEPTH)
        sram = _rams(size * tb["ad_bits"]) if tb["ad_bits"] else 0
        return sram, tcam
    entry = tb["key_bits"] + tb["ad_bits"] + 4
    if entry <= T.SRAM_WIDTH:
        per_word = T.SRAM_WIDTH // entry
        return math.ceil(size / (T.SRAM_WORDS * per_word)), 0
    words = math.ceil(entry / T.SRAM_WIDTH)
    return math.ceil(size / T.SRAM_WORDS) * words, 0


def array_rams(entries, width):
    return _rams(entries * width) + 1


class StageUse:
    KEYS = ("tables", "salu", "stats", "sram", "synth", "tcam", "hash")
    LIMITS = {"tables": T.LOGICAL_TABLES, "salu": T.METER_ALUS, "stats": T.STATS_ALUS, "sram": T.SRAMS,
              "synth": T.SYNTH_SRAMS, "tcam": T.TCAMS, "hash": T.HASH_DIST_SLICES}

    def __init__(self):
        self.u = {}

    def get(self, s):
        return self.u.setdefault(s, {k: 0 for k in self.KEYS})

    def fits(self, s, need):
        cur = self.get(s)
        return all(cur[k] + need[k] <= self.LIMITS[k] for k in self.KEYS)

    def take(self, s, need):
        cur = self.get(s)
        for k in self.KEYS:
            cur[k] += need[k]


def op_need(op, g, placed_regs):
    need = {k: 0 for k in StageUse.KEYS}
    if op.kind == "table":
        need["tables"] = 1
        sram, tcam = table_memory(op.table)
        need["sram"] += sram
        need["tcam"] += tcam
    elif op.kind in ("salu", "stats", "hash"):
        need["tables"] = 1
    for r in dict.fromkeys(op.registers):
        if r in placed_regs:
            continue
        entries, width = g.registers[r]
        n = array_rams(entries, width)
        need["salu"] += 1
        need["sram"] += n
        need["synth"] += n
    for c in dict.fromkeys(op.counters):
        entries, width = g.counters[c]
        n = array_rams(entries, width)
        need["stats"] += 1
        need["sram"] += n
        need["synth"] += n
    need["hash"] += math.ceil(op.hash_bits / T.HASH_DIST_BITS)
    return need


class _Deps:
    """Per field, the ops that wrote or touched it: (stage, branch)."""

    def __init__(self):
        self.fin, self.touch, self.children = {}, {}, {}

    @staticmethod
    def ancestors(p):
        return [p[:m.start()] for m in re.finditer(r"[.\[]", p)]

    def related(self, p, d, branch):
        best = -1
        for q in [p] + self.ancestors(p) + list(self.children.get(p, ())):
            for value, br in d.get(q, ()):
                if value > best and not exclusive(br, branch):
                    best = value
        return best

    def record(self, paths, d, value, branch):
        for p in paths:
            d.setdefault(p, []).append((value, branch))
            for a in self.ancestors(p):
                self.children.setdefault(a, set()).add(p)


def schedule(g, use):
    deps = _Deps()
    reg_stage = {}
    for op in g.ops:
        lb = 0
        for r in op.reads:
            f = deps.related(r, deps.fin, op.branch)
            if f >= 0:
                lb = max(lb, f + 1)
        for w in op.writes:
            t = deps.related(w, deps.touch, op.branch)
            if t >= 0:
                lb = max(lb, t)
        fixed = [reg_stage[r] for r in op.registers if r in reg_stage]
        need = op_need(op, g, reg_stage)
        s = lb
        if fixed:
            s = max(fixed)
        elif all(need[k] <= StageUse.LIMITS[k] for k in StageUse.KEYS):
            while not use.fits(s, need):
                s += 1
        # else: more than any stage holds; placed anyway, so the per-stage peak shows it
        use.take(s, need)
        op.stage = s
        for r in op.registers:
            reg_stage.setdefault(r, s)
        deps.record(op.writes, deps.fin, s + op.depth - 1, op.branch)
        deps.record(op.reads | op.writes, deps.touch, s, op.branch)
    return max((op.stage + op.depth for op in g.ops), default=0)


def stages(env, gresses, res):
    use = StageUse()
    used = {}
    for g in gresses:
        used[g.name] = schedule(g, use)
    res.details["stages"] = {"use": use.u, "used": used}
    for g in gresses:
        chain = critical_chain(g)
        res.add(f"MAU stages, {g.name}", used[g.name], T.STAGES, note="longest chain: " + " -> ".join(chain))
    tot = {k: sum(u[k] for u in use.u.values()) for k in StageUse.KEYS}
    for k, label, lim in (("salu", "stateful ALUs (registers)", T.METER_ALUS), ("stats", "stats ALUs (counters)", T.STATS_ALUS),
                          ("tables", "logical tables", T.LOGICAL_TABLES), ("sram", "SRAM blocks", T.SRAMS),
                          ("synth", "SRAM blocks for registers and counters", T.SYNTH_SRAMS),
                          ("tcam", "TCAM blocks", T.TCAMS), ("hash", "hash distribution slices", T.HASH_DIST_SLICES)):
        peak = max((u[k] for u in use.u.values()), default=0)
        in_range = sum(u[k] for s, u in use.u.items() if s < T.STAGES)
        res.add(f"{label}: total (peak per stage)", f"{tot[k]} ({peak})", f"{lim * T.STAGES} ({lim})",
                ok=tot[k] == in_range and peak <= lim)
    kib = sum(array_rams(e, w) for g in gresses for e, w in list(g.registers.values()) + list(g.counters.values()))
    res.details["array_rams"] = kib


def critical_chain(g):
    """Names along the ops that end last (a readable hint, not a proof)."""
    if not g.ops:
        return []
    last = max(g.ops, key=lambda o: o.stage + o.depth)
    chain = [last]
    while True:
        cur = chain[-1]
        prev = [o for o in g.ops if o.stage + o.depth - 1 == cur.stage - 1
                and any(_path_overlap(w, r) for w in o.writes for r in cur.reads)]
        if not prev or len(chain) > 24:
            break
        chain.append(prev[0])
    out = []
    for o in reversed(chain):
        name = o.name.split(" =")[0].replace("Ingress.", "").replace("Egress.", "")
        out.append(f"{name}@{o.stage}")
    return out


# ---- recirculation and resubmission ------------------------------------------------

def passes(env, res, workload):
    c = env.consts
    pairs = c.get("PAIRS_PER_PASS")
    regs = c.get("REGISTERS")
    if pairs is None or regs is None:
        res.details["passes"] = None
        return
    keys = workload.get("keys", 30000)
    workers = workload.get("workers", 8)
    pkt = workload.get("packet", 192)
    rows = max(math.ceil(keys / regs), workers)
    # Strict packing (the default) puts at most one pair of each register in
    # a packet: with R below the pairs a pass holds, packets carry R pairs.
    per_packet = min(pairs, regs)
    hot_packets = workers * math.ceil(keys / per_packet)
    row_bytes = 16 + 8 + 4 * regs
    res.details["passes"] = {
        "pairs": pairs, "per_packet": per_packet, "registers": regs, "keys": keys, "workers": workers, "rows": rows,
        "hot_packets": hot_packets, "hot_bytes": hot_packets * pkt, "readout_passes": rows + 1,
        "readout_bytes": (rows + 1) * row_bytes, "conflict_passes": 1 + pairs,
    }
