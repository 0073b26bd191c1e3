"""The hot-path settings, as `zebra switch` reads and checks them: this
module runs `zebra switch --plan` and builds the controller's objects from
the JSON it prints. The settings file, its flags and variables
(ZEBRA_HOT_LOSS, ZEBRA_JOB_KEY_FILE, ZEBRA_JOB_KEY), every check and every
message are the binary's (rust/zebra-config/src/settings.rs); nothing here
parses a setting.

    hotpath = load("hot.conf", ["round_timeout_ms=20"])   # as zebra switch --config hot.conf --round-timeout-ms=20

The binary is `zebra` given with `--zebra PATH`, else $ZEBRA_BIN, else
`zebra` on PATH, else `target/release/zebra` of the repository this package
sits in.
"""

import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field

from .config import Config, JobConfig

# <repo>/p4/controller/zebra_ctl -> <repo>/target/release/zebra
_BUILT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                       "target", "release", "zebra"))


class SettingsError(Exception):
    """Bad settings: `message` is what the binary said (or why it could not
    be asked), `code` the exit code to end with (2 for bad settings)."""

    def __init__(self, message, code=2):
        self.message = message.rstrip("\n")
        self.code = code
        super().__init__(self.message)


def find_zebra(explicit=None):
    """The `zebra` binary to ask: `explicit` (--zebra), $ZEBRA_BIN, `zebra`
    on PATH, the repository's target/release/zebra; SettingsError naming
    every place looked at when none is there."""
    if explicit:
        if not _runnable(explicit):
            raise SettingsError(f"zebra_ctl: --zebra {explicit}: not an executable file")
        return explicit
    env = os.environ.get("ZEBRA_BIN")
    if env:
        if not _runnable(env):
            raise SettingsError(f"zebra_ctl: ZEBRA_BIN={env}: not an executable file")
        return env
    on_path = shutil.which("zebra")
    if on_path:
        return on_path
    if _runnable(_BUILT):
        return _BUILT
    raise SettingsError(
        "zebra_ctl: no zebra binary to read the settings with: give --zebra PATH, set ZEBRA_BIN, put zebra "
        f"on PATH, or build {_BUILT} (cargo build --release -p zebra-cli)"
    )


def _runnable(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def flag(setting):
    """`KEY=VALUE` (a key of the settings file) as the `zebra switch` flag
    that sets it, `--KEY=VALUE` with `-` for `_` (`switch` is `--listen`, as
    `zebra switch --help` says)."""
    key, eq, value = setting.partition("=")
    key = key.strip()
    if not eq or not key:
        raise SettingsError(f"zebra_ctl: --set {setting}: expected KEY=VALUE (a key of the settings file)")
    name = "listen" if key == "switch" else key.replace("_", "-")
    return f"--{name}={value}"


def load(config, sets=(), zebra=None):
    """The settings of file `config` with `sets` (`KEY=VALUE`) overriding
    it, as `zebra switch` checks them: a HotpathConfig, or SettingsError
    with the binary's message and exit code."""
    binary = find_zebra(zebra)
    settings = [binary, "switch", "--config", config, *(flag(s) for s in sets)]
    args = settings[:2] + ["--plan"] + settings[2:]
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=60)
    except OSError as e:
        raise SettingsError(f"zebra_ctl: cannot run {binary}: {e}")
    if out.returncode != 0:
        raise SettingsError(out.stderr or f"zebra_ctl: {binary} switch --plan exited {out.returncode}",
                            out.returncode if out.returncode > 0 else 1)
    try:
        doc = json.loads(out.stdout)
    except ValueError as e:
        raise SettingsError(f"zebra_ctl: {binary} switch --plan printed no JSON ({e}): is it older than --plan?", 1)
    hotpath = HotpathConfig.from_plan(doc)
    hotpath.command = settings
    return hotpath


def admit(hotpath, jobs, register):
    """The admission of a REGISTER asking to be admitted, decided by the
    binary with the settings `hotpath` was loaded with (`zebra switch
    --admit`, the software switch's own rule): `jobs` the switch holds,
    [{"id", "workers", "hot_keys", "base"}]; `register` {"job", "server",
    "workers", "capacity", "token"}. Returns {"capacity" (0: refused),
    "base", "job" (a new job, as --plan prints jobs), "reason"}; SettingsError
    when the binary cannot answer."""
    if hotpath.command is None:
        raise SettingsError("zebra_ctl: these settings were not read through zebra switch --plan", 1)
    args = hotpath.command[:2] + ["--admit"] + hotpath.command[2:]
    query = json.dumps({"jobs": jobs, "register": register})
    try:
        out = subprocess.run(args, input=query, capture_output=True, text=True, timeout=60)
    except OSError as e:
        raise SettingsError(f"zebra_ctl: cannot run {args[0]}: {e}", 1)
    if out.returncode != 0:
        raise SettingsError(out.stderr or f"zebra_ctl: {args[0]} switch --admit exited {out.returncode}",
                            out.returncode if out.returncode > 0 else 1)
    try:
        return json.loads(out.stdout)
    except ValueError as e:
        raise SettingsError(f"zebra_ctl: {args[0]} switch --admit printed no JSON ({e}): is it older than --admit?", 1)


@dataclass(frozen=True)
class SocketAddr:
    host: str
    port: int

    @classmethod
    def parse(cls, text):
        """`HOST:PORT` or `[V6]:PORT` as the binary prints an address."""
        host, _, port = text.rpartition(":")
        return cls(host.strip("[]"), int(port))

    def __str__(self):
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


@dataclass(frozen=True)
class PinnedServer:
    """A server whose address the settings fix (`server_addr`): the switch
    job it is a member of and its index there."""

    job: int
    index: int
    addr: SocketAddr


@dataclass
class HotpathConfig:
    """What the controller loads: `zebra switch --plan`'s document. With a
    hot-keys file, online_capacity or zero configuration, one job per PS-lite
    server that owns hot keys (`job_base + s`, one server); with
    hot_key_count one job of every server."""

    switch: SocketAddr
    proto: Config
    server_addrs: dict = field(default_factory=dict)   # PS-lite server rank -> PinnedServer
    loss: dict = None
    job_base: int = 1
    job_per_server: bool = False
    zero_config: bool = False
    admit: JobConfig = None                              # a switch that admits jobs (no job)
    keyed: bool = False                                  # tokens from the job's key
    hot_keys: dict = None                                # {"keys", "values"} of the file read
    settle_timeout_us: int = 30_000_000
    register_wait_us: int = 2_000_000
    job_silence_us: int = None                           # an admitted job silent this long is retired
    command: list = None                                 # zebra switch and the settings' flags (load)

    @classmethod
    def from_plan(cls, doc):
        return cls(
            switch=SocketAddr.parse(doc["switch"]) if doc["switch"] is not None else None,
            proto=Config.from_plan(doc["proto"]),
            server_addrs={
                s["server"]: PinnedServer(s["job"], s["index"], SocketAddr.parse(s["addr"]))
                for s in doc["server_addrs"]
            },
            loss=doc["loss"],
            job_base=doc["job_base"],
            job_per_server=doc["job_per_server"],
            zero_config=doc["zero_config"],
            admit=JobConfig.from_plan(doc["admit"]) if doc["admit"] is not None else None,
            keyed=doc["keyed"],
            hot_keys=doc["hot_keys"],
            settle_timeout_us=doc["settle_timeout_us"],
            register_wait_us=doc["register_wait_us"],
            job_silence_us=doc["job_silence_us"],
        )

    @property
    def job(self):
        """The first job."""
        return self.proto.jobs[0]
