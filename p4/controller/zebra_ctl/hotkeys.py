"""The hot-keys file (rust/zebra-hotpath/src/hotkeys.rs), read the same way:
one PS-lite key (decimal u64) or inclusive range `a-b` a line, optionally
followed by the key's number of values (default 1), hottest first (line order
= hot rank), `#` comments, blank lines skipped; a key listed
twice, a reversed range, a word that is not a key, an empty file or more
keys than a switch can hold is an error naming the line."""

from . import consts

MAX_HOT_KEYS = consts.MAX_REGISTERS * consts.MAX_REGISTER_ENTRIES
U64_MAX = (1 << 64) - 1


class HotKeysError(Exception):
    pass


def _number(s):
    s = s.strip()
    if not s or not all("0" <= c <= "9" for c in s):
        return None
    v = int(s)
    return v if v <= U64_MAX else None


def _keys_of(entry):
    """`KEY` or `A-B` (spaces allowed around `-`) as (first, last), else None."""
    if "-" in entry:
        a, b = entry.split("-", 1)
        start, end = _number(a), _number(b)
        return None if start is None or end is None else (start, end)
    k = _number(entry)
    return None if k is None else (k, k)


class HotKeys:
    def __init__(self):
        self.keys = []
        self.values = []
        self.lines = []
        self._rank = {}

    @classmethod
    def load(cls, path):
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise HotKeysError(f"{path}: {e.strerror} (os error {e.errno})")
        return cls.parse(text)

    @classmethod
    def parse(cls, text):
        from .settings import rust_debug

        hk = cls()
        for i, raw in enumerate(text.split("\n")):
            if raw.endswith("\r"):
                raw = raw[:-1]
            line = i + 1
            entry = raw.split("#", 1)[0].strip()
            if not entry:
                continue
            syntax = HotKeysError(
                f"line {line}: {rust_debug(entry)} is not a key or an inclusive range a-b of decimal u64 keys"
            )
            keys, values = _keys_of(entry), 1
            if keys is None:
                parts = entry.rsplit(None, 1)
                head, last = (parts[0], parts[1]) if len(parts) == 2 else ("", entry)
                v = _number(last)
                keys = _keys_of(head) if head else None
                if keys is None or v is None or not 0 < v <= 0xFFFFFFFF:
                    raise syntax
                values = v
            start, end = keys
            if end < start:
                raise HotKeysError(f"line {line}: range {start}-{end} ends before it starts")
            room = MAX_HOT_KEYS - len(hk.keys)
            if end - start >= room:
                raise HotKeysError(f"line {line}: more than {MAX_HOT_KEYS} hot keys")
            for key in range(start, end + 1):
                hk._push(key, line)
                hk.values.append(values)
        if not hk.keys:
            raise HotKeysError("no hot key listed")
        return hk

    def _push(self, key, line):
        if key in self._rank:
            first = self._rank[key]
            raise HotKeysError(
                f"line {line}: key {key} is already hot rank {first} (line {self.lines[first]})"
            )
        self._rank[key] = len(self.keys)
        self.keys.append(key)
        self.lines.append(line)

    def __len__(self):
        return len(self.keys)

    def rank(self, key):
        return self._rank.get(key)


def pslite_server_ranges(servers):
    """PS-lite's server key ranges: server i of n owns
    [u64::MAX / n * i, u64::MAX / n * (i + 1))."""
    n = max(servers, 1)
    step = U64_MAX // n
    return [(step * i, step * (i + 1)) for i in range(n)]


def pslite_owners(keys, servers):
    """The owning server of every key; a key in no range goes to the last server
    (JobConfig::owners_from_key_ranges)."""
    ranges = pslite_server_ranges(servers)
    owners = []
    for k in keys:
        owner = next((s for s, (lo, hi) in enumerate(ranges) if lo <= k < hi), len(ranges) - 1)
        owners.append(owner)
    return owners
