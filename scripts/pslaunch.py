#!/usr/bin/env python3
"""Launch one PS-lite job on this host: a scheduler, servers and workers of one command,
optionally with service processes (e.g. the software switch) started before them.

Unlike PS-lite's tests/local.sh, every process is timed out and every exit code is
checked: one failed process would otherwise leave the others waiting in the shutdown
barrier forever. On the first failure (or the timeout, or Ctrl-C) the whole job is
killed and the launcher exits non-zero, naming the process and showing its log tail.

Two networks (--net):
  loopback  every node on 127.0.0.1 (the default);
  netns     an emulated testbed: one network namespace per node, each with one veth
            to a Linux bridge that lives in a namespace of its own, addresses from
            --subnet, optional per-link rate limits (tc tbf) and, where the kernel has
            sch_netem, delay and loss. Needs root; without it (or without namespaces)
            the job runs on loopback and says so. Every namespace, link and process the
            run created is removed on success, failure, the timeout and Ctrl-C.
            With --user-stack dpdk|raw every node and service runs over Zebra's
            user-level stack instead: its veth has no kernel address, the stack owns
            the node's address (ZEBRA_NET, ZEBRA_IP and, for DPDK, ZEBRA_DPDK_ARGS with
            the af_packet PMD on the veth are set per process).

Every run writes LOGDIR/pslaunch.json: each node's role, address, exit code and (netns)
its link's byte and packet counters, read just before teardown.
"""

import argparse
import ipaddress
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time

NAME_PREFIX = "psl"  # namespaces are named psl<pid>-<attempt>-<node>


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse_pairs(pairs, option):
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"pslaunch: {option} takes NAME=VALUE, got {pair!r}")
        out[key] = value
    return out


def tail(path, lines=15):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return "(no log)\n"


def describe(code):
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"code {code}"


def run_ip(args, check=True):
    """Runs `ip`/`tc` quietly; raises with its stderr when check and it fails."""
    res = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and res.returncode != 0:
        raise NetError(f"{' '.join(args)}: {res.stderr.strip() or 'exit ' + str(res.returncode)}")
    return res


class NetError(Exception):
    pass


# ---------------------------------------------------------------------------
# Networks: where each node runs and which address it has.


class Loopback:
    kind = "loopback"

    def setup(self, names):
        pass

    def address(self, name):
        return "127.0.0.1"

    def wrap(self, name, argv):
        return argv

    def node_env(self, name):
        return {}

    def counters(self):
        return {}

    def teardown(self):
        pass


class Shaping:
    """One link's tc settings: rate (tbf), delay and loss (netem)."""

    def __init__(self, rate=None, delay=None, loss=None, ingress_only=False):
        self.rate, self.delay, self.loss = rate, delay, loss
        self.ingress_only = ingress_only

    def merged(self, other):
        return Shaping(other.rate or self.rate, other.delay or self.delay, other.loss or self.loss,
                       other.ingress_only or self.ingress_only)

    def empty(self):
        return not (self.rate or self.delay or self.loss)

    def describe(self):
        parts = [f"{k} {v}" for k, v in (("rate", self.rate), ("delay", self.delay), ("loss", self.loss)) if v]
        return (", ".join(parts) or "unshaped") + (" (what they receive only)" if parts and self.ingress_only else "")


RATE_UNITS = {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "tbit": 1e12,
              "bps": 8, "kbps": 8e3, "mbps": 8e6, "gbps": 8e9}


def rate_bits(rate):
    """'1gbit' -> 1e9 (tc's units; bps means bytes per second, as in tc)."""
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)([a-z]+)", rate.strip().lower())
    if not m or m.group(2) not in RATE_UNITS or float(m.group(1)) <= 0:
        raise SystemExit(f"pslaunch: bad rate {rate!r} (e.g. 100mbit, 1gbit, 50mbps)")
    return float(m.group(1)) * RATE_UNITS[m.group(2)]


class Netns:
    """One namespace per node and one for the bridge; veth pairs between them."""

    kind = "netns"

    def __init__(self, run_id, subnet, shaping_of, mtu, user_stack=None):
        self.run_id = run_id
        self.subnet = subnet
        self.shaping_of = shaping_of  # node name -> Shaping
        self.mtu = mtu
        self.user_stack = user_stack  # None (the kernel's network), "dpdk" or "raw"
        self.created = []  # namespace names, in creation order
        self.addr = {}
        self.port_of = {}  # node name -> the bridge-side interface

    def ns(self, name):
        return f"{NAME_PREFIX}{self.run_id}-{name}"

    def setup(self, names):
        hosts = self.subnet.hosts()
        bridge = self.ns("bridge")
        self._add_ns(bridge)
        run_ip(["ip", "-n", bridge, "link", "add", "br0", "type", "bridge"])
        run_ip(["ip", "-n", bridge, "link", "set", "br0", "up"])
        for i, name in enumerate(names):
            try:
                ip = next(hosts)
            except StopIteration:
                raise NetError(f"--subnet {self.subnet} has too few addresses for {len(names)} nodes")
            ns, port = self.ns(name), f"p{i}"
            self._add_ns(ns)
            run_ip(["ip", "-n", bridge, "link", "add", port, "mtu", str(self.mtu), "type", "veth",
                    "peer", "name", "eth0", "mtu", str(self.mtu), "netns", ns])
            run_ip(["ip", "-n", bridge, "link", "set", port, "master", "br0", "up"])
            if self.user_stack:
                self._user_stack_link(ns, bridge, port)
            else:
                run_ip(["ip", "-n", ns, "addr", "add", f"{ip}/{self.subnet.prefixlen}", "dev", "eth0"])
            run_ip(["ip", "-n", ns, "link", "set", "eth0", "up"])
            run_ip(["ip", "-n", ns, "link", "set", "lo", "up"])
            shaping = self.shaping_of(name)
            if not shaping.empty():
                if not shaping.ingress_only:
                    self._shape(ns, "eth0", shaping)  # what the node sends
                self._shape(bridge, port, shaping)  # what the node receives
            self.addr[name] = str(ip)
            self.port_of[name] = port

    @staticmethod
    def _user_stack_link(ns, bridge, port):
        """The node's veth for a user-level stack: no kernel address, no IPv6 chatter, and
        tx checksum offload off on both ends (a veth otherwise hands partial checksums to
        packet sockets, which the stack drops)."""
        run_ip(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.eth0.disable_ipv6=1"])
        for where, dev in ((ns, "eth0"), (bridge, port)):
            res = run_ip(["ip", "netns", "exec", where, "ethtool", "-K", dev, "tx", "off"], check=False)
            if res.returncode != 0:
                raise NetError(f"ethtool -K {dev} tx off failed ({res.stderr.strip()}): "
                               "--user-stack needs ethtool")

    def node_env(self, name):
        """The user-level stack's settings for one node or service (none without --user-stack)."""
        if not self.user_stack:
            return {}
        env = {"ZEBRA_IP": f"{self.addr[name]}/{self.subnet.prefixlen}"}
        if self.user_stack == "raw":
            env["ZEBRA_NET"] = "raw:eth0"
            return env
        # One EAL per process: its own file prefix, the af_packet PMD with the larger ring
        # (the default one drops under load), and the one lcore free to run on every CPU
        # (plain `-l 0` would pin each process's network thread to CPU 0).
        cpus = os.cpu_count() or 1
        lcores = "0" if cpus == 1 else f"0@(0-{cpus - 1})"
        env["ZEBRA_NET"] = "dpdk"
        env["ZEBRA_DPDK_ARGS"] = (
            f"--no-huge -m 256 --no-pci --no-shconf --file-prefix={self.ns(name)} --lcores={lcores} "
            "--log-level=lib.eal:error --vdev=net_af_packet0,iface=eth0,framecnt=8192,blocksz=65536")
        return env

    def _add_ns(self, ns):
        run_ip(["ip", "netns", "add", ns])
        self.created.append(ns)

    def _shape(self, ns, dev, s):
        if s.delay or s.loss:
            args = ["tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "netem"]
            for param, value in (("delay", s.delay), ("loss", s.loss), ("rate", s.rate)):
                args += [param, value] if value else []
            res = run_ip(args + ["limit", "100000"], check=False)
            if res.returncode != 0:
                raise NetError(f"tc netem failed ({res.stderr.strip()}): this kernel may lack sch_netem, "
                               "so --*-delay and --*-loss are not available here (rates use tbf)")
            return
        # tbf: a burst of 1 ms at the rate, at least 128 KiB so that a GSO super-packet
        # of a veth (up to 64 KiB) always fits; a queue of 50 ms.
        burst = max(131072, int(rate_bits(s.rate) / 8 / 1000))
        run_ip(["tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "tbf", "rate", s.rate,
                "burst", str(burst), "latency", "50ms"])

    def address(self, name):
        return self.addr[name]

    def wrap(self, name, argv):
        return ["ip", "netns", "exec", self.ns(name)] + list(argv)

    def counters(self):
        """Each node's eth0 counters (rx = what reached the node)."""
        out = {}
        for name in self.addr:
            res = run_ip(["ip", "-n", self.ns(name), "-s", "-j", "link", "show", "eth0"], check=False)
            try:
                st = json.loads(res.stdout)[0]["stats64"]
            except (ValueError, IndexError, KeyError):
                continue
            out[name] = {"rx_bytes": st["rx"]["bytes"], "rx_packets": st["rx"]["packets"],
                         "rx_dropped": st["rx"]["dropped"], "tx_bytes": st["tx"]["bytes"],
                         "tx_packets": st["tx"]["packets"], "tx_dropped": st["tx"]["dropped"]}
        return out

    def teardown(self):
        """Deletes every namespace this run created (their veths and the bridge go too)."""
        left = []
        for ns in reversed(self.created):
            if run_ip(["ip", "netns", "del", ns], check=False).returncode != 0:
                left.append(ns)
        self.created = left
        if left:
            print(f"pslaunch: could not delete namespaces {' '.join(left)}", file=sys.stderr)


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_namespaces():
    """Namespaces of earlier runs whose launcher died without teardown (SIGKILL)."""
    res = run_ip(["ip", "netns", "list"], check=False)
    for line in res.stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        m = re.fullmatch(rf"{NAME_PREFIX}(\d+)-\d+-.+", name)
        if m and int(m.group(1)) != os.getpid() and not pid_alive(int(m.group(1))):
            if run_ip(["ip", "netns", "del", name], check=False).returncode == 0:
                print(f"pslaunch: removed stale namespace {name} (its launcher is gone)", file=sys.stderr)


def netns_unavailable():
    """Why netns mode cannot run here, or None."""
    if os.geteuid() != 0:
        return "not root"
    for tool in ("ip", "tc"):
        if not shutil.which(tool):
            return f"no `{tool}` command (Debian package iproute2)"
    probe = f"{NAME_PREFIX}{os.getpid()}-probe"
    res = run_ip(["ip", "netns", "add", probe], check=False)
    if res.returncode != 0:
        return f"`ip netns add` failed: {res.stderr.strip()}"
    run_ip(["ip", "netns", "del", probe], check=False)
    return None


# ---------------------------------------------------------------------------
# The job.


def expand(text, net, ports, counts):
    """{ip:NAME}, {port:NAME} (a free port chosen once per run), {workers}, {servers}."""

    def one(m):
        kind, _, arg = m.group(1).partition(":")
        if kind == "ip" and arg:
            try:
                return net.address(arg)
            except KeyError:
                raise SystemExit(f"pslaunch: {{ip:{arg}}}: no node or service named {arg!r}")
        if kind == "port" and arg:
            return str(ports.setdefault(arg, free_port()))
        if kind in counts and not arg:
            return str(counts[kind])
        raise SystemExit(f"pslaunch: unknown placeholder {{{m.group(1)}}} in {text!r}")

    return re.sub(r"\{([a-z]+(?::[A-Za-z0-9_.-]+)?)\}", one, text)


class Job:
    def __init__(self, args, net):
        self.args = args
        self.net = net
        self.procs = []  # (name, Popen, log path, is_service)
        self.ports = {}
        self.nodes = []  # (role, name)
        os.makedirs(args.logdir, exist_ok=True)

    def names(self):
        roles = [("scheduler", "scheduler")]
        roles += [("server", f"server-{i}") for i in range(self.args.servers)]
        roles += [("worker", f"worker-{i}") for i in range(self.args.workers)]
        return roles

    def counts(self):
        return {"workers": self.args.workers, "servers": self.args.servers}

    def base_env(self):
        env = dict(os.environ)
        env.pop("PORT", None)  # PS-lite reads a stray PORT as its own port
        env.update(
            DMLC_PS_ROOT_URI=self.net.address("scheduler"),
            DMLC_PS_ROOT_PORT=str(self.args.port or free_port()),
            DMLC_NUM_SERVER=str(self.args.servers),
            DMLC_NUM_WORKER=str(self.args.workers),
        )
        for key, value in parse_pairs(self.args.env, "--env").items():
            env[key] = expand(value, self.net, self.ports, self.counts())
        return env

    def spawn(self, name, argv, env, service):
        log = os.path.join(self.args.logdir, f"{name}.log")
        with open(log, "wb") as out:
            proc = subprocess.Popen(self.net.wrap(name, argv), env=env, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        self.procs.append((name, proc, log, service))

    def start(self):
        self.nodes = self.names()
        services = parse_pairs(self.args.service, "--service")
        clash = set(services) & {n for _, n in self.nodes} | (set(services) & {"bridge"})
        if clash:
            raise SystemExit(f"pslaunch: service names {sorted(clash)} clash with node names")
        self.net.setup(list(services) + [n for _, n in self.nodes])
        env = self.base_env()
        for name, cmd in services.items():
            argv = [expand(a, self.net, self.ports, self.counts()) for a in shlex.split(cmd)]
            self.spawn(name, argv, dict(env, PSLAUNCH_NAME=name, **self.net.node_env(name)), service=True)
        if services:
            time.sleep(self.args.service_wait)
            for name, proc, log, _ in self.procs:
                if proc.poll() is not None:
                    return (name, f"service exited early with {describe(proc.returncode)}", log)
        for role, name in self.nodes:
            penv = dict(env, DMLC_ROLE=role, PSLAUNCH_NAME=name, DMLC_NODE_HOST=self.net.address(name),
                        **self.net.node_env(name))
            if self.args.preload and (not self.args.preload_names or name in self.args.preload_names):
                penv["LD_PRELOAD"] = self.args.preload
            self.spawn(name, self.args.command, penv, service=False)
        return None

    def logs_match(self, pattern):
        regex = re.compile(pattern)
        for _, _, log, _ in self.procs:
            with open(log, errors="replace") as f:
                if regex.search(f.read()):
                    return True
        return False

    def kill_all(self):
        for _, proc, _, _ in self.procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for _, proc, _, _ in self.procs:
            proc.wait()

    def scrape(self):
        """--scrape NAME=URL: fetches each URL from inside NAME's network (its namespace on the
        testbed) while the services still run, into LOGDIR/NAME.metrics; a failed fetch is
        reported and leaves no file."""
        fetch = ("import sys, urllib.request; "
                 "sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())")
        for name, url in parse_pairs(self.args.scrape, "--scrape").items():
            url = expand(url, self.net, self.ports, self.counts())
            try:
                res = subprocess.run(self.net.wrap(name, [sys.executable, "-c", fetch, url]),
                                     capture_output=True, text=True, timeout=30)
                why = None if res.returncode == 0 else (res.stderr.strip().splitlines() or ["?"])[-1]
            except subprocess.TimeoutExpired:
                why = "no answer in 30 s"
            if why:
                print(f"pslaunch: --scrape {name}: {url}: {why}", file=sys.stderr)
                continue
            with open(os.path.join(self.args.logdir, f"{name}.metrics"), "w") as f:
                f.write(res.stdout)

    def stop_services(self):
        """Services run until the job ends: SIGTERM, then SIGKILL after a grace period."""
        services = [(n, p) for n, p, _, s in self.procs if s and p.poll() is None]
        for _, proc in services:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 3
        for _, proc in services:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass

    def watch(self, deadline):
        """Waits for the job's nodes; returns (name, why, log) of the first failure, or None.
        Processes found failed at the same look are all named (one killed, another aborting
        at once because it lost its peer, say), the first in start order."""
        while True:
            running, failed = 0, []
            for name, proc, log, service in self.procs:
                code = proc.poll()
                if code is None:
                    running += 0 if service else 1
                elif code != 0 or service:
                    what = "service exited" if service else "exited"
                    failed.append((name, f"{what} with {describe(code)}", log))
            if failed:
                name, why, log = failed[0]
                also = ", ".join(f"{n} {w}" for n, w, _ in failed[1:])
                return (name, why + (f" (also: {also})" if also else ""), log)
            if running == 0:
                return None
            if time.monotonic() > deadline:
                stuck = [n for n, p, _, _ in self.procs if p.poll() is None]
                return (stuck[0], f"timed out after {self.args.timeout}s (still running: {', '.join(stuck)})",
                        os.path.join(self.args.logdir, f"{stuck[0]}.log"))
            time.sleep(0.05)

    def report(self, elapsed, failure):
        """Writes LOGDIR/pslaunch.json: nodes, addresses, exit codes, link counters."""
        counters = self.net.counters()
        nodes = {}
        for name, proc, log, service in self.procs:
            role = "service" if service else next(r for r, n in self.nodes if n == name)
            nodes[name] = {"role": role, "address": self.net.address(name), "exit": proc.returncode,
                           "log": log, "net": counters.get(name)}
        summary = {"net": self.net.kind, "ok": failure is None,
                   "elapsed_s": None if elapsed is None else round(elapsed, 3),
                   "failure": None if failure is None else f"{failure[0]} {failure[1]}", "nodes": nodes}
        with open(os.path.join(self.args.logdir, "pslaunch.json"), "w") as f:
            json.dump(summary, f, indent=1)
        return counters

    def run(self):
        started = time.monotonic()
        failure = self.start()
        if failure is None:
            failure = self.watch(started + self.args.timeout)
        self.scrape()
        self.stop_services()
        self.kill_all()
        elapsed = time.monotonic() - started
        counters = self.report(elapsed, failure)
        if failure:
            name, why, log = failure
            print(f"pslaunch: FAIL {name} {why}; logs in {self.args.logdir}", file=sys.stderr)
            print(f"---- tail of {log}\n{tail(log)}----", file=sys.stderr)
            return 1
        if not self.args.quiet:
            servers = [counters[n]["rx_bytes"] for _, n in self.nodes if n.startswith("server-") and n in counters]
            extra = f"; server ingress {sum(servers)} bytes" if servers else ""
            print(f"pslaunch: ok {len(self.procs)} processes in {elapsed:.1f}s on {self.net.kind}{extra}; "
                  f"logs in {self.args.logdir}")
        return 0


def make_network(args, attempt):
    if args.net == "loopback":
        return Loopback()
    why = netns_unavailable()
    if why and args.user_stack:
        raise SystemExit(f"pslaunch: --user-stack needs --net netns, which is not available here ({why})")
    if why:
        print(f"pslaunch: --net netns is not available ({why}); falling back to loopback (no link shaping)",
              file=sys.stderr)
        return Loopback()
    base = Shaping(args.link_rate, args.link_delay, args.link_loss)
    server = base.merged(Shaping(args.server_rate or args.server_ingress_rate, args.server_delay, args.server_loss,
                                 ingress_only=bool(args.server_ingress_rate)))

    def shaping_of(name):
        return server if name.startswith("server-") else base

    if not args.quiet and attempt == 1:
        print(f"pslaunch: netns testbed on {args.subnet}: servers' links {server.describe()}, "
              f"other links {base.describe()}")
    if not args.quiet and attempt == 1 and args.user_stack:
        print(f"pslaunch: every node and service on Zebra's user-level stack ({args.user_stack})")
    return Netns(f"{os.getpid()}-{attempt}", args.subnet, shaping_of, args.mtu, args.user_stack)


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Run a PS-lite job (scheduler + servers + workers of one command), on 127.0.0.1 or "
        "on an emulated testbed of network namespaces, with a timeout and every exit code checked.",
        usage="%(prog)s [options] -- CMD [ARGS...]",
    )
    p.add_argument("--servers", type=int, default=1, help="number of servers (default 1)")
    p.add_argument("--workers", type=int, default=2, help="number of workers (default 2)")
    p.add_argument("--timeout", type=float, default=120, help="seconds before the whole job is killed (default 120)")
    p.add_argument("--logdir", default=None, help="directory for scheduler.log, server-I.log, worker-I.log, "
                   "<service>.log and pslaunch.json")
    p.add_argument("--preload", default="", help="library to LD_PRELOAD into every node (empty: none)")
    p.add_argument("--preload-names", default=os.environ.get("PSLAUNCH_PRELOAD_NAMES", ""),
                   help="comma-separated node names (scheduler, server-0, worker-1, ...) that get --preload; "
                   "default: every node (env PSLAUNCH_PRELOAD_NAMES)")
    p.add_argument("--port", type=int, default=0, help="scheduler port (default: a free one)")
    p.add_argument("--env", action="append", default=[], metavar="K=V",
                   help="extra environment for every node and service; placeholders as in --service")
    p.add_argument("--service", action="append", default=[], metavar="NAME=CMD",
                   help="a process started before the job (in its own namespace with --net netns) and "
                   "stopped after it; it failing or exiting early fails the job. CMD is split like a shell "
                   "line; {ip:NAME} is a node's or service's address, {port:NAME} a free port chosen once per "
                   "run, {workers} and {servers} the counts, e.g. "
                   "--service 'switch=zebra switch --listen {ip:switch}:{port:switch} --workers {workers}'")
    p.add_argument("--scrape", action="append", default=[], metavar="NAME=URL",
                   help="when the job's nodes have ended, before the services stop: fetch URL from inside "
                   "NAME's network into LOGDIR/NAME.metrics (placeholders as in --service), e.g. "
                   "'switch=http://{ip:switch}:{port:metrics}/metrics' beside `zebra switch --metrics "
                   "{ip:switch}:{port:metrics}`")
    p.add_argument("--service-wait", type=float, default=0.5,
                   help="seconds between starting the services and the job (default 0.5)")
    p.add_argument("--quiet", action="store_true", help="print nothing on success")
    p.add_argument("--retry-if", default=None, metavar="REGEX",
                   help="when the job fails and a log matches REGEX (a known race of the client, "
                   "not ours), run it again, up to --attempts times in all")
    p.add_argument("--attempts", type=int, default=3, help="attempts with --retry-if (default 3)")
    net = p.add_argument_group("network")
    net.add_argument("--net", choices=("loopback", "netns"), default=os.environ.get("PSLAUNCH_NET") or "loopback",
                     help="loopback (default) or netns: one network namespace per node on a bridge")
    net.add_argument("--subnet", default="10.99.0.0/24", type=ipaddress.IPv4Network,
                     help="netns: the nodes' addresses, in order services, scheduler, servers, workers "
                     "(default 10.99.0.0/24; every run has its own bridge, so runs do not clash)")
    net.add_argument("--mtu", type=int, default=1500, help="netns: MTU of every link (default 1500)")
    net.add_argument("--user-stack", choices=("dpdk", "raw"), default=os.environ.get("PSLAUNCH_USER_STACK") or None,
                     help="netns: run every node and service over Zebra's user-level stack (smoltcp) on DPDK's "
                     "af_packet PMD or a raw socket on its veth, which then has no kernel address; the "
                     "processes must use the shim with ZEBRA_ENABLE=1 (or `zebra switch`) "
                     "(env PSLAUNCH_USER_STACK)")
    for who, what in (("link", "every node's link"), ("server", "the servers' links (overrides --link-*)")):
        net.add_argument(f"--{who}-rate", default=None, metavar="RATE",
                         help=f"netns: rate limit of {what}, each direction, tc units (e.g. 1gbit)")
        net.add_argument(f"--{who}-delay", default=None, metavar="TIME",
                         help=f"netns: added delay of {what}, each direction (e.g. 0.1ms; needs sch_netem)")
        net.add_argument(f"--{who}-loss", default=None, metavar="PCT",
                         help=f"netns: random loss of {what}, each direction (e.g. 0.1%%; needs sch_netem)")
    net.add_argument("--server-ingress-rate", default=None, metavar="RATE",
                     help="netns: rate limit of what the servers receive only (pushes), their sending "
                     "unshaped: the push direction as the bottleneck (instead of --server-rate)")
    p.add_argument("command", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    if not args.command:
        p.error("missing the command to run (after --)")
    args.preload_names = {n for n in args.preload_names.split(",") if n}
    if args.servers < 1 or args.workers < 1:
        p.error("--servers and --workers must be at least 1")
    if args.user_stack and args.net != "netns":
        p.error("--user-stack needs --net netns")
    if args.server_rate and args.server_ingress_rate:
        p.error("--server-rate and --server-ingress-rate exclude each other")
    for rate in (args.link_rate, args.server_rate, args.server_ingress_rate):
        if rate:
            rate_bits(rate)
    if args.logdir is None:
        import tempfile

        args.logdir = tempfile.mkdtemp(prefix="pslaunch.")
    return args


def main(argv=None):
    args = parse_args(argv)
    # SIGTERM and SIGHUP unwind like Ctrl-C, so the finally below tears everything down;
    # SIGINT is handled even when our parent ignores it (a background job of a script).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: sys.exit(130))
    if args.net == "netns" and os.geteuid() == 0:
        remove_stale_namespaces()
    code = 1
    for attempt in range(1, args.attempts + 1):
        net = make_network(args, attempt)
        job = Job(args, net)
        try:
            code = job.run()
        except (KeyboardInterrupt, SystemExit) as e:
            job.kill_all()
            if isinstance(e, SystemExit) and e.code not in (130, None):
                raise
            job.report(None, ("pslaunch", "interrupted", None))
            print("pslaunch: interrupted; job killed", file=sys.stderr)
            return 130
        except NetError as e:
            job.kill_all()
            print(f"pslaunch: testbed set-up failed: {e}", file=sys.stderr)
            return 1
        finally:
            net.teardown()
        if code == 0 or not args.retry_if or attempt == args.attempts or not job.logs_match(args.retry_if):
            return code
        print(f"pslaunch: known race ({args.retry_if!r}) in attempt {attempt}; running the job again",
              file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
