"""The hot-path settings file, read exactly as the software switch reads it.

A re-implementation of rust/zebra-hotpath/src/settings.rs (`Settings::parse`,
`Settings::set`, `Settings::build`): the same keys, defaults, ranges, checks
and error texts, so that one file drives `zebra switch`, the workers, the
servers and this controller. The format (docs/HOTPATH.md):

    # comment
    key = value          # a value may be wrapped in double quotes

An unknown key, a key set twice (except server_addr) or a line without `=` is
an error naming the file and line; a relative hot_keys path is relative to the
file's directory; flags given with `set` override the file. `build` reports
every bad value at once, then checks the combination (config.validate).
"""

import math
import os
import socket
from dataclasses import dataclass, field

from . import consts
from .config import Config, ConfigError, JobConfig
from .hotkeys import HotKeys, HotKeysError, pslite_owners


def rust_debug(s):
    """A string as Rust's `{:?}` prints it."""
    out = ['"']
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append("\\u{%x}" % ord(ch))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


@dataclass(frozen=True)
class Knob:
    key: str
    flag: str
    value: str
    default: str
    help: str
    repeat: bool = False
    env: str = None


KNOBS = [
    Knob("switch", "listen", "HOST:PORT", "(required for zebra switch)", "the switch's UDP address"),
    Knob("job", "job", "ID", "1", "job id carried in every packet"),
    Knob("workers", "workers", "N", "(required)", "workers of the job (ranks 0..N), 1..=64"),
    Knob("servers", "servers", "S", "1", "servers of the job (PS-lite server ranks 0..S)"),
    Knob("hot_keys", "hot-keys", "FILE", "(none)", "hot-keys file: PS-lite keys hottest first"),
    Knob("hot_key_count", "hot-key-count", "K", "(none)", "instead of a file: hot ranks 0..K"),
    Knob("registers", "registers", "R", "32", "register arrays: hot rank r lives in register r mod R"),
    Knob("slots", "slots", "K", "1024", "slots per register array and copy"),
    Knob("copies", "copies", "W", "2", "copies of the slot memory, 1..=4"),
    Knob("packet_size", "packet-size", "BYTES", "192", "UDP payload of every hot-path packet, 64..=1472"),
    Knob("max_seqs", "max-seqs", "N", "4096", "most packets one worker sends for one round"),
    Knob("packing", "packing", "strict|fill|sequential", "strict", "how workers pack pairs"),
    Knob("round_timeout_ms", "round-timeout-ms", "MS", "50", "a round still open this long is flushed"),
    Knob("aggregate_rto_ms", "aggregate-rto-ms", "MS", "2", "switch: first resend timeout of an aggregate part, until round trips are measured"),
    Knob("aggregate_max_retries", "aggregate-max-retries", "N", "50", "switch: resends before a part is given up"),
    Knob("worker_rto_ms", "worker-rto-ms", "MS", "2", "worker: first resend timeout of a hot packet, until round trips are measured"),
    Knob("worker_max_retries", "worker-max-retries", "N", "10", "worker: resends before uncertain fallback"),
    Knob("worker_max_in_flight", "worker-max-in-flight", "N", "256", "worker: hot packets in flight at once"),
    Knob("worker_retain_pairs", "worker-retain-pairs", "N", "1048576", "worker: hot pairs of settled rounds kept for a switch restart; the switch ignores it"),
    Knob("max_round_ahead", "max-round-ahead", "ROUNDS", "1048576", "switch: hot packets more than ROUNDS rounds past the job's newest are refused"),
    Knob("job_key_file", "job-key-file", "FILE", "(none: the switch draws each job's token)", "the job's secret key; the P4 controller does not take one yet (docs/SECURITY.md)"),
    Knob("uncertain_timeout_ms", "uncertain-timeout-ms", "MS", "5000", "server: uncertain fallback wait"),
    Knob("server_history", "server-history", "ROUNDS", "4096", "server: reported rounds remembered"),
    Knob("update_window", "update-window", "N", "8", "server and workers (the pull half): updates of the last N seqs kept; the switch ignores it"),
    Knob("register_wait_ms", "register-wait-ms", "MS", "2000", "server: how long a server waits for the switch's REGISTER_ACK before it steps aside; the switch ignores it"),
    Knob("settle_timeout_ms", "settle-timeout-ms", "MS", "30000", "server (PS-lite level): last-resort delivery of an unsettled push; the switch ignores it"),
    Knob("number", "number", "f32|fixed:BITS", "f32", "value format"),
    Knob("layout", "layout", "heat|random:SEED", "heat", "register layout"),
    Knob("dense_ranks", "dense-ranks", "N", "0", "ranks 0..N travel as dense blocks"),
    Knob("online_rounds", "online-rounds", "T", "10", "ZEBRA_HOT=online: pushes counted per worker; the switch ignores it"),
    Knob("online_tau", "online-tau", "D", "0.05", "ZEBRA_HOT=online: distance that changes the keys; the switch ignores it"),
    Knob("online_max_drift", "online-max-drift", "ROUNDS", "inf", "ZEBRA_HOT=online: step aside beyond this mean drift; the switch ignores it"),
    Knob("online_min_saving", "online-min-saving", "SHARE", "0.05", "ZEBRA_HOT=online: step aside below this saving; the switch ignores it"),
    Knob("online_min_pace", "online-min-pace", "SHARE", "0.95", "ZEBRA_HOT=online: step aside below this share of the counted pace; the switch ignores it"),
    Knob("online_retry_ms", "online-retry-ms", "MS", "30000", "ZEBRA_HOT=online: count again this long after stepping aside; the switch ignores it"),
    Knob("online_wait_ms", "online-wait-ms", "MS", "5000", "ZEBRA_HOT=online: wait for the last counted push; the switch ignores it"),
    Knob("online_capacity", "online-capacity", "VALUES", "(the hot-keys file's)", "hot values each PS-lite server's job holds at least; without a hot-keys file, the job's size"),
    Knob("online_out", "online-out", "FILE", "(none)", "ZEBRA_HOT=online: where servers write their decision; the switch ignores it"),
    Knob("server_addr", "server-addr", "INDEX=HOST:PORT", "(learned from REGISTER)", "fix a server's address", repeat=True),
    Knob("loss", "loss", "SPEC", "(off)", "seeded faults on every send", env="ZEBRA_HOT_LOSS"),
]

_BY_KEY = {k.key: k for k in KNOBS}


def knob_by_key(key):
    return _BY_KEY.get(key)


class SettingsError(Exception):
    """Every problem found, one line each."""

    def __init__(self, problems):
        self.problems = list(problems)
        super().__init__(str(self))

    def __str__(self):
        return "invalid hot-path configuration:" + "".join(f"\n  - {p}" for p in self.problems)


@dataclass
class _Entry:
    knob: Knob
    value: str
    path: str = None
    line: int = None

    @property
    def origin(self):
        if self.path is not None:
            return f"{self.path}:{self.line}"
        return f"--{self.knob.flag}"

    def bad(self, expected):
        return f"{self.origin}: {self.knob.key} = {rust_debug(self.value)}: {expected}"

    def base_dir(self):
        return os.path.dirname(self.path) if self.path is not None else None


@dataclass
class HotLoss:
    drop_ppm: int = 0
    duplicate_ppm: int = 0
    delay_ppm: int = 0
    max_delay_us: int = 1000
    seed: int = 1

    EXPECTED = (
        "expected a drop probability (e.g. 0.05) or comma-separated drop=P, dup=P, delay=P "
        "(P in 0..=1), delay_ms=MS (> 0, at most 10000), seed=N"
    )

    def is_active(self):
        return self.drop_ppm > 0 or self.duplicate_ppm > 0 or self.delay_ppm > 0

    @classmethod
    def parse(cls, spec):
        def ppm(v):
            p = _rust_f64(v.strip())
            if p is None or not 0.0 <= p <= 1.0:
                return None
            return _round_half_away(p * 1e6)

        loss = cls()
        p = ppm(spec)
        if p is not None:
            loss.drop_ppm = p
            return loss
        for item in spec.split(","):
            if "=" not in item:
                raise ValueError(cls.EXPECTED)
            k, v = item.split("=", 1)
            k = k.strip()
            if k in ("drop", "dup", "delay"):
                p = ppm(v)
                if p is None:
                    raise ValueError(cls.EXPECTED)
                setattr(loss, {"drop": "drop_ppm", "dup": "duplicate_ppm", "delay": "delay_ppm"}[k], p)
            elif k == "delay_ms":
                ms = _rust_f64(v.strip())
                if ms is None or not (ms > 0.0 and ms <= 10_000.0):
                    raise ValueError(cls.EXPECTED)
                loss.max_delay_us = max(1, _round_half_away(ms * 1000.0))
            elif k == "seed":
                seed = _rust_uint(v.strip(), 64)
                if seed is None:
                    raise ValueError(cls.EXPECTED)
                loss.seed = seed
            else:
                raise ValueError(cls.EXPECTED)
        return loss


def _round_half_away(x):
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


def _rust_uint(text, bits):
    """Rust's `uN::from_str`: optional '+', ASCII digits only, in range."""
    t = text[1:] if text.startswith("+") else text
    if not t or not all("0" <= c <= "9" for c in t):
        return None
    v = int(t)
    return v if v < (1 << bits) else None


def _rust_f64(text):
    """Rust's `f64::from_str`: no spaces or underscores; inf and NaN allowed."""
    if not text or any(c.isspace() or c == "_" for c in text):
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _int(e, lo, hi, bits):
    v = _rust_uint(e.value, bits)
    if v is None or not lo <= v <= hi:
        raise _Bad(e.bad(f"expected an integer in {lo}..={hi}"))
    return v


def _millis(e):
    expected = "expected milliseconds, more than 0 and at most 3600000 (fractions allowed: 0.5)"
    ms = _rust_f64(e.value)
    if ms is None or not (ms > 0.0 and ms <= 3_600_000.0):
        raise _Bad(e.bad(expected))
    us = _round_half_away(ms * 1000.0)
    if us == 0:
        raise _Bad(e.bad(expected))
    return us


@dataclass(frozen=True)
class SocketAddr:
    host: str
    port: int

    def __str__(self):
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def parse_socket_addr(text):
    """HOST:PORT, where HOST is an IP address or a name that resolves
    (Rust's `ToSocketAddrs`); the first address found. None if not."""
    if text.startswith("["):
        close = text.find("]")
        if close < 0 or not text[close + 1:].startswith(":"):
            return None
        host, port = text[1:close], text[close + 2:]
    else:
        if ":" not in text:
            return None
        host, port = text.rsplit(":", 1)
        if ":" in host:
            return None
    p = _rust_uint(port, 16)
    if p is None or not host:
        return None
    try:
        infos = socket.getaddrinfo(host, p, type=socket.SOCK_DGRAM)
    except (socket.gaierror, UnicodeError, OSError):
        return None
    if not infos:
        return None
    return SocketAddr(infos[0][4][0], p)


def _address(e, text):
    a = parse_socket_addr(text)
    if a is None:
        raise _Bad(e.bad("expected HOST:PORT (an IP address or a name that resolves, and a port)"))
    return a


class _Bad(Exception):
    pass


@dataclass
class HotpathConfig:
    """A loaded and checked configuration, as `HotpathConfig` in Rust: with hot
    keys (a file, or online_capacity) one job per PS-lite server that owns one
    (`job + s`, one server); with hot_key_count one job of every server."""

    switch: SocketAddr
    proto: Config
    hot_keys: HotKeys
    server_addrs: dict = field(default_factory=dict)
    loss: HotLoss = None
    job_base: int = 1
    per_server: bool = False

    @property
    def job(self):
        """The first job."""
        return self.proto.jobs[0]

    def server_member(self, server):
        """(job id, server index) of PS-lite server `server` (Rust's server_member)."""
        return (self.job_base + server, 0) if self.per_server else (self.job.id, server)


class Settings:
    """Settings as given, before checking: a file's lines, then flags."""

    def __init__(self):
        self._entries = []

    @classmethod
    def load(cls, path):
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise SettingsError([f"{path}: {e.strerror} (os error {e.errno})"])
        return cls.parse(text, path)

    @classmethod
    def parse(cls, text, path):
        s = cls()
        problems = []
        seen = {}
        for i, raw in enumerate(text.split("\n")):
            if raw.endswith("\r"):
                raw = raw[:-1]
            line = i + 1
            content = raw.split("#", 1)[0].strip()
            if not content:
                continue
            at = f"{path}:{line}"
            if "=" not in content:
                problems.append(f"{at}: expected `key = value`, found {rust_debug(content)}")
                continue
            key, value = content.split("=", 1)
            key = key.strip()
            knob = knob_by_key(key)
            if knob is None:
                known = ", ".join(k.key for k in KNOBS)
                problems.append(f"{at}: unknown key {rust_debug(key)} (known: {known})")
                continue
            if not knob.repeat:
                if knob.key in seen:
                    problems.append(f"{at}: {key} is already set on line {seen[knob.key]}")
                    continue
                seen[knob.key] = line
            value = value.strip()
            if len(value) >= 2 and value.startswith('"') and value.endswith('"'):
                value = value[1:-1]
            s._entries.append(_Entry(knob, value, path, line))
        if problems:
            raise SettingsError(problems)
        return s

    def set(self, key, value):
        """A flag: overrides the file for single-valued knobs, adds for repeatable ones."""
        knob = knob_by_key(key)
        if knob is None:
            raise SettingsError([f"unknown setting {rust_debug(key)}"])
        self._entries.append(_Entry(knob, value.strip()))

    def build(self):
        b = _Builder()
        problems = []
        for e in self._entries:
            try:
                b.apply(e)
            except _Bad as bad:
                problems.append(str(bad))
        if problems:
            raise SettingsError(problems)
        return b.finish()


class _Builder:
    def __init__(self):
        self.config = None
        self.switch = None
        self.job = None
        self.workers = None
        self.servers = None
        self.hot_keys_file = None
        self.hot_key_count = None
        self.number = None
        self.layout = None
        self.dense_ranks = None
        self.server_addrs = {}
        self.loss = None
        self.online_capacity = None

    def cfg(self):
        if self.config is None:
            self.config = Config([])
        return self.config

    def apply(self, e):
        k = e.knob.key
        if k == "switch":
            self.switch = _address(e, e.value)
        elif k == "job":
            self.job = _int(e, 0, 0xFFFF, 16)
        elif k == "workers":
            self.workers = _int(e, 1, 64, 16)
        elif k == "servers":
            self.servers = _int(e, 1, 0xFFFF, 16)
        elif k == "hot_keys":
            if not e.value:
                raise _Bad(e.bad("expected a file path"))
            path = e.value
            base = e.base_dir()
            if base is not None and not os.path.isabs(path):
                path = os.path.join(base, path)
            self.hot_keys_file = path
        elif k == "hot_key_count":
            self.hot_key_count = _int(e, 1, 0xFFFFFFFF, 32)
        elif k == "registers":
            self.cfg().registers = _int(e, 1, consts.MAX_REGISTERS, 16)
        elif k == "slots":
            self.cfg().slots = _int(e, 1, consts.MAX_REGISTER_ENTRIES, 32)
        elif k == "copies":
            self.cfg().copies = _int(e, 1, consts.MAX_COPIES, 8)
        elif k == "packet_size":
            self.cfg().packet_size = _int(e, consts.MIN_PACKET_SIZE, consts.MAX_PACKET_SIZE, 64)
        elif k == "max_seqs":
            self.cfg().max_seqs = _int(e, 1, 0xFFFF, 16)
        elif k == "packing":
            if e.value not in ("strict", "fill", "sequential"):
                raise _Bad(e.bad("expected strict, fill or sequential"))
            self.cfg().packing = e.value
        elif k in ("round_timeout_ms", "aggregate_rto_ms", "worker_rto_ms", "uncertain_timeout_ms"):
            setattr(self.cfg(), k[:-3] + "_us", _millis(e))
        elif k == "settle_timeout_ms":
            self.settle_timeout_us = _millis(e)
        elif k == "register_wait_ms":
            _millis(e)
        elif k in ("aggregate_max_retries", "worker_max_retries", "server_history"):
            setattr(self.cfg(), k, _int(e, 1, 0xFFFFFFFF, 32))
        elif k == "worker_max_in_flight":
            self.cfg().worker_max_in_flight = _int(e, 1, 1 << 20, 64)
        elif k == "worker_retain_pairs":
            self.cfg().worker_retain_pairs = _int(e, 0, 1 << 30, 64)
        elif k == "max_round_ahead":
            self.cfg().max_round_ahead = _int(e, 1, 0xFFFFFFFF, 32)
        elif k == "job_key_file":
            raise _Bad(e.bad("the P4 controller does not derive job tokens from a key yet (docs/SECURITY.md, \"Not done yet\")"))
        elif k == "update_window":
            self.cfg().update_window = _int(e, 1, consts.MAX_UPDATE_WINDOW, 64)
        elif k == "number":
            expected = "expected f32 or fixed:BITS with BITS in 0..=30"
            if e.value == "f32":
                self.number = ("f32", None)
            elif ":" in e.value and e.value.split(":", 1)[0] == "fixed":
                bits = _rust_uint(e.value.split(":", 1)[1], 8)
                if bits is None or bits > consts.MAX_FRAC_BITS:
                    raise _Bad(e.bad(expected))
                self.number = ("fixed", bits)
            else:
                raise _Bad(e.bad(expected))
        elif k == "layout":
            expected = "expected heat or random:SEED (SEED a u64)"
            if e.value == "heat":
                self.layout = ("heat", None)
            elif ":" in e.value and e.value.split(":", 1)[0] == "random":
                seed = _rust_uint(e.value.split(":", 1)[1], 64)
                if seed is None:
                    raise _Bad(e.bad(expected))
                self.layout = ("random", seed)
            else:
                raise _Bad(e.bad(expected))
        elif k == "dense_ranks":
            self.dense_ranks = _int(e, 0, 0xFFFFFFFF, 32)
        elif k == "online_rounds":
            _int(e, 1, 0xFFFFFFFF, 32)
        elif k == "online_tau":
            d = _rust_f64(e.value)
            if d is None or not 0.0 <= d <= 1.0:
                raise _Bad(e.bad("expected a distance in 0..=1"))
        elif k == "online_wait_ms":
            _millis(e)
        elif k == "online_max_drift":
            d = _rust_f64(e.value)
            if d is None or math.isnan(d) or d < 0.0:
                raise _Bad(e.bad("expected a number of rounds, 0 or more, or inf"))
        elif k in ("online_min_saving", "online_min_pace"):
            d = _rust_f64(e.value)
            if d is None or not 0.0 <= d <= 1.0:
                raise _Bad(e.bad("expected a share in 0..=1"))
        elif k == "online_retry_ms":
            if e.value.strip() != "0":
                _millis(e)
        elif k == "online_capacity":
            self.online_capacity = _int(e, 1, 0xFFFFFFFF, 32)
        elif k == "online_out":
            if not e.value:
                raise _Bad(e.bad("expected a file path"))
        elif k == "server_addr":
            expected = "expected INDEX=HOST:PORT"
            if "=" not in e.value:
                raise _Bad(e.bad(expected))
            index, addr = e.value.split("=", 1)
            idx = _rust_uint(index.strip(), 16)
            if idx is None:
                raise _Bad(e.bad(expected))
            self.server_addrs[idx] = (_address(e, addr.strip()), e.origin)
        elif k == "loss":
            if not e.value:
                self.loss = None
            else:
                try:
                    loss = HotLoss.parse(e.value)
                except ValueError as x:
                    raise _Bad(e.bad(str(x)))
                self.loss = loss if loss.is_active() else None
        else:
            raise _Bad(f"{e.origin}: {k}: not handled")

    def finish(self):
        problems = []
        servers = self.servers if self.servers is not None else 1
        sized = self.hot_keys_file is not None or self.hot_key_count is not None or self.online_capacity is not None
        if self.workers is None and not sized:
            # zebra switch admits such jobs as their servers register; this control plane
            # plans its jobs up front (rust/zebra-proto/WIRE.md, "Admission").
            raise SettingsError([
                "workers and hot keys: not set; the P4 control plane does not admit jobs as they "
                "register (zebra switch does): give the job's workers and hot keys"
            ])
        if not sized:
            # Zero configuration, as zebra switch and the shim size it: each PS-lite server's
            # job an equal share of every register's slots (zebra_proto::Config::share).
            cfg = self.config if self.config is not None else Config([])
            self.online_capacity = cfg.registers * (cfg.slots // max(servers, 1))
        if self.workers is None:
            problems.append("workers: not set (--workers N, or `workers = N` in the file)")
        hot_keys = None
        if self.hot_keys_file is not None and self.hot_key_count is not None:
            problems.append(
                "hot keys: give a hot-keys file (hot_keys / --hot-keys) or a count "
                "(hot_key_count / --hot-key-count), not both"
            )
        elif self.hot_keys_file is not None:
            try:
                hot_keys = HotKeys.load(self.hot_keys_file)
            except HotKeysError as e:
                problems.append(f"hot keys: {e}")
        for index in sorted(self.server_addrs):
            _, origin = self.server_addrs[index]
            if index >= servers:
                problems.append(f"{origin}: server_addr names server {index}, the job has {servers} servers")
        if problems:
            raise SettingsError(problems)
        max_indices = consts.MAX_REGISTERS * consts.MAX_REGISTER_ENTRIES
        if self.online_capacity is not None and self.online_capacity > max_indices:
            raise SettingsError([
                f"online_capacity: server 0: {self.online_capacity} hot values, a switch holds at most {max_indices}"
            ])
        job_base = self.job if self.job is not None else 1
        if hot_keys is not None or self.hot_key_count is None:
            # As the shim and zebra switch (rust/zebra-hotpath/src/settings.rs): each PS-lite
            # server that owns a hot key is its own job `job + s` with one server, whose hot
            # indices number its keys' values (a key with L values takes L,
            # rust/zebra-agent/src/hotset.rs); online_capacity makes room for at least that
            # many values a server (with no file, every server's job has exactly that many).
            used = [0] * servers
            if hot_keys is not None:
                for o, n in zip(pslite_owners(hot_keys.keys, servers), hot_keys.values):
                    used[o] += n
            for srv, n in enumerate(used):
                if n > max_indices:
                    raise SettingsError([f"hot keys: server {srv}: {n} hot values, a switch holds at most {max_indices}"])
            indices = [max(n, self.online_capacity or 0) for n in used]
            jobs = [JobConfig(job_base + srv, self.workers, n, 1) for srv, n in enumerate(indices) if n > 0]
        else:
            jobs = [JobConfig(job_base, self.workers, self.hot_key_count, servers)]
        for job in jobs:
            if self.number is not None:
                job.number, job.frac_bits = self.number
            if self.layout is not None:
                job.layout, job.layout_seed = self.layout
            job.dense_ranks = self.dense_ranks if self.dense_ranks is not None else 0
        proto = self.config if self.config is not None else Config([])
        proto.jobs = jobs
        try:
            proto.validate()
        except ConfigError as e:
            raise SettingsError([f"the settings do not fit together: {e}"])
        return HotpathConfig(
            switch=self.switch,
            proto=proto,
            hot_keys=hot_keys,
            server_addrs={i: a for i, (a, _) in sorted(self.server_addrs.items())},
            loss=self.loss,
            job_base=job_base,
            per_server=hot_keys is not None or self.hot_key_count is None,
        )
