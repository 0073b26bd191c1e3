"""What scripts/chaos.py is built from: a pslaunch job whose processes a scenario signals,
kills, starts again and cuts off while it runs (Job), and the checks of its results.

A scenario is a generator: it yields the seconds to wait and acts on the job between
yields (the Job.until_* helpers wait on the switch's statistics or a node's link counters
this way); Job.run drives it while watching the job's processes as pslaunch does (a node
that fails ends the job, the timeout ends it)."""

import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import pslaunch  # noqa: E402
import hotpath  # noqa: E402

STATS_INTERVAL = 0.3  # seconds between the switch's statistics (SIGUSR1) while waiting on them


def fmt(n):
    return f"{n:,}"


def fresh_dir(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(os.path.join(path, "stats"))


class Job(pslaunch.Job):
    """One PS-lite job on the testbed (pslaunch's options in `argv`), run under a scenario."""

    def __init__(self, argv, logdir):
        args = pslaunch.parse_args(["--logdir", logdir, "--quiet"] + list(argv))
        super().__init__(args, None)
        self.logdir = logdir
        self.argv = {}  # name -> (argv, env) as spawned, for restarts
        self.expected = set()  # names whose exit is the scenario's doing
        self.exits = {}  # name -> (exit code, seconds after the start)
        self.kill_times = {}  # name -> seconds after the start when the scenario killed it
        self.notes = []  # what the scenario injected, in order
        self.problems = []  # what the scenario could not do
        self.failure = None
        self.elapsed = None
        self.started = None

    # -- what a scenario does ----------------------------------------------------------

    def now(self):
        return time.monotonic() - self.started

    def note(self, text):
        self.notes.append(text)

    def proc(self, name):
        return [p for n, p, _, _ in self.procs if n == name][-1]

    def signal(self, name, sig):
        """Sends `sig` to the process group of node or service `name`."""
        try:
            os.killpg(self.proc(name).pid, sig)
        except ProcessLookupError:
            self.problems.append(f"{name} was gone before {signal.Signals(sig).name}")

    def expect_exit(self, name):
        self.expected.add(name)

    def kill_node(self, name):
        """SIGKILL to node `name`, which is then expected to exit."""
        self.expect_exit(name)
        self.kill_times[name] = self.now()
        self.signal(name, signal.SIGKILL)

    def kill_service(self, name):
        self.expect_exit(name)
        self.signal(name, signal.SIGKILL)
        try:
            self.proc(name).wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.problems.append(f"{name} still alive 5 s after SIGKILL")

    def restart_service(self, name, tag):
        """Starts service `name` again, with the same command (so the same address and
        port) in the same namespace; its output goes to NAME-TAG.log."""
        argv, env = self.argv[name]
        log = os.path.join(self.logdir, f"{name}-{tag}.log")
        with open(log, "wb") as out:
            proc = subprocess.Popen(self.net.wrap(name, argv), env=env, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        self.procs.append((name, proc, log, True))
        self.expected.discard(name)

    def link(self, name, state):
        """`ip link set eth0 STATE` in node `name`'s namespace."""
        pslaunch.run_ip(["ip", "-n", self.net.ns(name), "link", "set", "eth0", state])

    def switch_log(self):
        return self.service_log("switch")

    def service_log(self, name):
        """The log of service `name` (its latest start)."""
        return [log for n, _, log, _ in self.procs if n == name][-1]

    def ask_switch_stats(self):
        """Asks the running switch for its statistics (SIGUSR1)."""
        self.signal("switch", signal.SIGUSR1)

    def switch_pairs(self):
        return switch_stats(self.switch_log()).get("pairs", 0)

    def switch_line(self, prefix):
        lines = re.findall(rf"^\s*{prefix}\s+(.*)$", read(self.switch_log()), re.M)
        return f"{prefix} {lines[-1]}" if lines else f"no {prefix} line"

    def until_switch(self, test, what, timeout=60):
        """Waits, asking for statistics, until test(the switch's latest statistics)."""
        deadline = time.monotonic() + timeout
        while True:
            self.ask_switch_stats()
            yield STATS_INTERVAL
            if test(switch_stats(self.switch_log())):
                return
            if time.monotonic() > deadline:
                self.problems.append(f"waited {timeout} s in vain for {what}")
                return

    def until_switch_added(self, pairs):
        yield from self.until_switch(lambda s: s.get("pairs", 0) >= pairs, f"the switch to add {pairs} pairs")

    def until_switch_rounds(self, rounds):
        yield from self.until_switch(lambda s: s.get("completed", 0) >= rounds,
                                     f"the switch to complete {rounds} rounds")

    def until_received(self, node, nbytes, timeout=60):
        """Waits until node `name` has received `nbytes` on its link (its eth0 counters):
        the job is under way, with or without a switch."""
        deadline = time.monotonic() + timeout
        while self.net.counters().get(node, {}).get("rx_bytes", 0) < nbytes:
            if time.monotonic() > deadline:
                self.problems.append(f"waited {timeout} s in vain for {node} to receive {nbytes} bytes")
                return
            yield STATS_INTERVAL

    # -- running it --------------------------------------------------------------------

    def spawn(self, name, argv, env, service):
        self.argv[name] = (argv, env)
        super().spawn(name, argv, env, service)

    def run(self, scenario, keep_going=False, stop_after_steps=False):
        """Runs the job while `scenario(self)` injects its faults. keep_going: a node that
        fails does not end the job (every exit is recorded in `exits`); stop_after_steps: the
        job is stopped when the scenario is over (the nodes not in `exits` were still running)."""
        self.net = pslaunch.make_network(self.args, 1)
        if self.net.kind != "netns":
            raise SystemExit("chaos: the netns testbed is not available")
        try:
            self.started = time.monotonic()
            self.failure = self.start()
            if self.failure is None:
                self._watch(scenario(self) if scenario else None, keep_going, stop_after_steps)
            self.stop_services()
            self.kill_all()
            self.elapsed = self.now()
            self.report(self.elapsed, self.failure)
        finally:
            self.net.teardown()
        if self.failure:
            self.failure = f"{self.failure[0]} {self.failure[1]}"
        return self

    def _watch(self, steps, keep_going, stop_after_steps):
        deadline = self.started + self.args.timeout
        waiting = None
        while True:
            if waiting is not None and time.monotonic() >= waiting:
                waiting = None
            while waiting is None and steps is not None:
                try:
                    waiting = time.monotonic() + next(steps)
                except StopIteration:
                    steps = None
                    if stop_after_steps:
                        return
            running = 0
            for name, proc, log, service in self.procs:
                code = proc.poll()
                if proc is not self.proc(name):
                    continue  # a service killed and started again
                if code is None:
                    running += 0 if service else 1
                    continue
                self.exits.setdefault(name, (code, self.now()))
                if name in self.expected or keep_going or (code == 0 and not service):
                    continue
                what = "service exited" if service else "exited"
                self.failure = (name, f"{what} with {pslaunch.describe(code)}", log)
                return
            if running == 0:
                if steps is not None:
                    self.problems.append("the job ended before the scenario had injected everything")
                return
            if time.monotonic() > deadline:
                stuck = [n for n, p, _, s in self.procs if p.poll() is None and not s]
                self.failure = (stuck[0], f"timed out after {self.args.timeout:.0f} s (still running: "
                                f"{', '.join(stuck)})", None)
                return
            time.sleep(0.05)


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


STAT_LINES = {
    "pairs": r"^\s*added\s+\d+ packets, (\d+) pairs",
    "completed": r"^\s*rounds\s+(\d+) completed",
    "flushed": r"^\s*rounds\s+\d+ completed, (\d+) flushed",
    "open": r"^\s*rounds\s+\d+ completed, \d+ flushed, (\d+) open",
    "pending": r"^\s*aggregate parts .* (\d+) pending",
    "registrations": r"^\s*registrations\s+(\d+) accepted",
}


def switch_stats(path):
    """The numbers of the last statistics a switch printed to `path` (SIGUSR1 or exit)."""
    text = read(path)
    out = {}
    for key, pattern in STAT_LINES.items():
        found = re.findall(pattern, text, re.M)
        if found:
            out[key] = int(found[-1])
    return out


# -- checks: each returns (problems, what was checked) -----------------------------------


def exact_sums_ok(logdir, workers, servers):
    """Every exact_sums worker checked every pulled value (OK line), every server saw no
    error; else the first FAIL line of each node that failed."""
    problems, values = [], 0
    for i in range(workers):
        text = read(os.path.join(logdir, f"worker-{i}.log"))
        m = re.search(r"^exact_sums: OK checked (\d+) values", text, re.M)
        if m:
            values += int(m.group(1))
        else:
            bad = re.findall(r"^exact_sums: FAIL .*$", text, re.M)
            problems.append(f"worker {i}: " + (f"{bad[-1]}; first: {bad[0]}" if bad else "no OK line"))
    for i in range(servers):
        text = read(os.path.join(logdir, f"server-{i}.log"))
        if not re.search(r"^exact_sums: server rank \d+ .* no errors$", text, re.M):
            bad = re.findall(r"^exact_sums: FAIL .*$", text, re.M)
            problems.append(f"server {i}: " + (bad[0] if bad else "no 'no errors' line"))
    ok = sum(1 for p in problems if p.startswith("worker"))
    checked = [f"{workers - ok} of {workers} workers found all their pulled values exact ({fmt(values)} checked)"
               + ("" if problems else "; every server: no errors")]
    return problems, checked


MXNET_BAD = re.compile(r"Traceback \(most recent call last\)|Exception ignored|cannot be preloaded|dist_sync.*: FAIL")


def mxnet_ok(logdir, workers, servers):
    """As the MXNet suite checks a job: every worker's and server's OK line, no traceback
    or FAIL line in any log."""
    problems = []
    logs = sorted(glob.glob(os.path.join(logdir, "worker-*.log")))
    oks = [re.search(r"mxnet dist_sync: OK checked (\d+) values", read(p)) for p in logs]
    if sum(1 for m in oks if m) != workers:
        problems.append(f"{sum(1 for m in oks if m)} of {workers} workers printed their OK line")
    server_oks = sum("mxnet dist_sync server: OK" in read(p) for p in glob.glob(os.path.join(logdir, "server-*.log")))
    if server_oks != servers:
        problems.append(f"{server_oks} of {servers} servers printed their OK line")
    for p in sorted(glob.glob(os.path.join(logdir, "*.log"))):
        m = MXNET_BAD.search(read(p))
        if m and not os.path.basename(p).startswith("switch"):
            problems.append(f"{os.path.basename(p)}: {m.group(0)}")
    values = sum(int(m.group(1)) for m in oks if m)
    return problems, [f"{workers} MXNet workers checked {fmt(values)} pulled values against the exact sums"
                      + ("" if problems else ", all exact; every server: OK")]


NOTHING_LOST = "the servers forced no request and lost no value (their ZEBRA_STATS)"


def hot_ok(logdir, require_pairs=True):
    """tests/lib/hotpath.py's check: the switch added pairs (unless not required), no
    server forced a request or lost a value, fewer hot bytes at the servers."""
    b, problems = hotpath.push_bytes(logdir)
    if not require_pairs:
        problems = [p for p in problems if "added no pair" not in p and "no switch log" not in p]
    if b["hot_whole"] and b["hot_switch"] >= b["hot_whole"]:
        problems.append(f"the servers received {b['hot_switch']} hot bytes, not fewer than {b['hot_whole']} whole")
    return problems, b


def failover_ok(logdir, standby_log, standby_at_kill, servers):
    """After the primary switch was killed with a standby named: the standby had added
    nothing at the kill (`standby_at_kill`, its statistics then) and aggregated after it (its
    last statistics in `standby_log`), every server moved its job once and none forced a
    request or lost a value (ZEBRA_STATS)."""
    counters = server_counters(logdir, ("forced", "lost_values", "switch_moves"))
    after = switch_stats(standby_log)
    problems = []
    if "pairs" not in standby_at_kill:
        problems.append("the standby's statistics at the kill were not read")
    elif standby_at_kill["pairs"]:
        problems.append(f"the standby had added {standby_at_kill['pairs']} pairs before the kill")
    if not after.get("pairs") or not after.get("completed"):
        problems.append(f"the standby aggregated nothing after the kill ({after.get('pairs', 0)} pairs, "
                        f"{after.get('completed', 0)} rounds completed)")
    if counters["switch_moves"] != servers:
        problems.append(f"the servers moved their jobs {counters['switch_moves']} times, not once each ({servers})")
    if counters["forced"] or counters["lost_values"]:
        problems.append(f"the servers forced {counters['forced']} requests and lost {counters['lost_values']} values")
    checked = [f"the standby: {fmt(standby_at_kill.get('pairs', 0))} pairs at the kill, then "
               f"{fmt(after.get('pairs', 0))} pairs added, {fmt(after.get('completed', 0))} rounds completed, "
               f"{after.get('flushed', 0)} flushed; {after.get('registrations', 0)} server registrations",
               f"the servers' own account: {counters['switch_moves']} moves to the standby, {counters['forced']} "
               f"pushes delivered unsettled (forced), {counters['lost_values']} values lost"]
    return problems, checked


def send_errors(logdir):
    """Hot-path datagrams the workers' and servers' links failed to send (ZEBRA_STATS)."""
    return sum(int(v) for path in glob.glob(os.path.join(logdir, "stats", "*"))
               for v in re.findall(r"send_errors: (\d+)", read(path)))


def server_counters(logdir, keys=("forced", "lost_values")):
    """The servers' forced deliveries and lost values, or other counters of theirs
    (ZEBRA_STATS, ServerAgentStats), summed."""
    out = {k: 0 for k in keys}
    for path in glob.glob(os.path.join(logdir, "stats", "*")):
        for line in read(path).splitlines():
            if "ServerAgentStats" in line:
                for key in out:
                    out[key] += hotpath.field(line, key)
    return out


FAULTS = re.compile(r"faults: FaultStats \{ offered: (\d+), dropped: (\d+), duplicated: (\d+), delayed: (\d+) \}")
SWITCH_FAULTS = re.compile(r"injected faults\s+(\d+) dropped, (\d+) duplicated, (\d+) delayed of (\d+)")


def faults(logdir):
    """Faults injected on the hot path: every worker's and server's (ZEBRA_STATS) and the
    switch's last statistics."""
    total = {"offered": 0, "dropped": 0, "duplicated": 0, "delayed": 0}
    for path in glob.glob(os.path.join(logdir, "stats", "*")):
        for m in FAULTS.finditer(read(path)):
            for k, v in zip(("offered", "dropped", "duplicated", "delayed"), m.groups()):
                total[k] += int(v)
    found = SWITCH_FAULTS.findall(read(os.path.join(logdir, "switch.log")))
    if found:
        for k, v in zip(("dropped", "duplicated", "delayed", "offered"), found[-1]):
            total[k] += int(v)
    return total


def describe_faults(f):
    return (f"{fmt(f['dropped'])} datagrams dropped, {fmt(f['duplicated'])} duplicated, "
            f"{fmt(f['delayed'])} delayed of {fmt(f['offered'])} sent")


def injected_enough(spec, f):
    """Each kind of fault the spec asks for happened, where the sends make it likely
    (at least 3 expected)."""
    probs = dict(kv.split("=") for kv in spec.split(",") if "=" in kv)
    for key, counter in (("drop", "dropped"), ("dup", "duplicated"), ("delay", "delayed")):
        p = float(probs.get(key, 0))
        if p > 0 and f["offered"] * p >= 3 and f[counter] == 0:
            return False
    return True


CRASHES = {signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE}
PANIC = re.compile(r"zebra: thread \S+ panicked: .*")
CLEAR = re.compile(r"Check failed: .*|zebra: .*|exact_sums: FAIL .*|Traceback .*")


def after_kill(job, victim):
    """Per node other than `victim`: (exit code, seconds after the kill, its clearest last
    message) if it ended by itself, None if it was still running at the end."""
    killed_at = job.kill_times[victim]
    out = {}
    for _, name in job.nodes:
        if name == victim:
            continue
        if name in job.exits:
            code, t = job.exits[name]
            lines = [l.strip() for l in read(os.path.join(job.logdir, f"{name}.log")).splitlines() if l.strip()]
            clear = [m.group(0) for m in map(CLEAR.search, lines) if m]
            out[name] = (code, t - killed_at, (clear[-1] if clear else lines[-1] if lines else "")[:160])
        else:
            out[name] = None
    return out


def compare_after_kill(libzmq, zebra, victim, window):
    """worker-kill: what every other process did by itself after node `victim` was
    killed, on libzmq and on Zebra. Fails when the kill was not in the middle of the job,
    or when a process crashed on Zebra (SIGSEGV and the like, or a panic of Zebra's) or
    ended without a clear message where libzmq's did not; which processes end by themselves
    (PS-lite's van aborts with "Check failed: 0 Host unreachable" when it answers the dead
    node, on libzmq and on Zebra alike) depends on where each one was, and is shown."""
    problems, checked = [], []
    outcome = {}
    for label, job in (("libzmq", libzmq), ("Zebra", zebra)):
        if victim not in job.kill_times:
            problems.append(f"{label}: {victim} was not killed ({job.failure or '; '.join(job.problems) or 'why?'})")
            continue
        o = after_kill(job, victim)
        early = sorted(n for n, v in o.items() if v is not None and v[1] < 0)
        if early:
            problems.append(f"{label}: {', '.join(early)} had ended before the kill: not in the middle of the job")
        outcome[label] = o
        ended = {n: v for n, v in o.items() if v is not None}
        waiting = sorted(n for n, v in o.items() if v is None)
        text = "; ".join(f"{n} exited with {pslaunch.describe(c)} after {max(t, 0):.1f} s ({last!r})"
                         for n, (c, t, last) in sorted(ended.items()))
        checked.append(f"{label}: within {window:.0f} s of the kill "
                       + (f"{text}; " if text else "no other process ended by itself; ")
                       + (f"still waiting: {', '.join(waiting)}" if waiting else "none still waiting"))
        if label == "Zebra":
            for n, v in ended.items():
                if -v[0] in CRASHES or PANIC.search(read(os.path.join(job.logdir, f"{n}.log"))):
                    problems.append(f"{n} crashed on Zebra: {pslaunch.describe(v[0])} ({v[2]!r})")
                elif v[0] != 0 and not CLEAR.search(v[2]):
                    problems.append(f"{n} ended on Zebra with {pslaunch.describe(v[0])} and no clear message "
                                    f"({v[2]!r})")
    if len(outcome) == 2:
        differ = sorted(n for n in outcome["libzmq"] if (outcome["libzmq"][n] is None) != (outcome["Zebra"][n] is None))
        checked.append("the same processes ended by themselves on both" if not differ else
                       f"{', '.join(differ)} ended by themselves on one and not the other: each ends only if it "
                       f"answers {victim} after its death (PS-lite's van then aborts, EHOSTUNREACH), which depends "
                       "on where it was")
    return problems, checked


def pslaunch_reports_kill(argv, logdir, victim, after=3.0, bound=5.0):
    """Runs the job with scripts/pslaunch.py itself, SIGKILLs node `victim`'s processes
    (found in its namespace) `after` s in, and checks that pslaunch ends the whole job
    within `bound` s naming the victim. Returns (ok, what happened)."""
    cmd = [sys.executable, os.path.join(ROOT, "scripts", "pslaunch.py"), "--logdir", logdir] + list(argv)
    out = open(os.path.join(logdir, "pslaunch.out"), "w+")
    launcher = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    ns = f"{pslaunch.NAME_PREFIX}{launcher.pid}-1-{victim}"
    try:
        started, pids = time.monotonic(), []
        while time.monotonic() - started < 30 and launcher.poll() is None:
            res = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
            pids = [int(p) for p in res.stdout.split()]
            if pids and time.monotonic() - started >= after:
                break
            time.sleep(0.1)
        if not pids or launcher.poll() is not None:
            return False, f"pslaunch: could not find {victim}'s process in namespace {ns} while the job ran"
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()
        try:
            code = launcher.wait(timeout=bound + 30)
        except subprocess.TimeoutExpired:
            launcher.send_signal(signal.SIGINT)
            launcher.wait()
            return False, f"pslaunch: the job was still running {bound + 30:.0f} s after {victim} was killed"
        took = time.monotonic() - killed
    finally:
        if launcher.poll() is None:
            launcher.kill()
    out.seek(0)
    text = out.read()
    out.close()
    line = next((l for l in text.splitlines() if l.startswith("pslaunch: FAIL")), "")
    ok = code != 0 and took <= bound and f"{victim} exited with signal SIGKILL" in line
    return ok, (f"pslaunch (Zebra with the switch): {victim} SIGKILLed {after:.0f} s in; pslaunch ended the job "
                f"{took:.1f} s later with exit {code}: {line.split('; logs in')[0] or text.strip()[-200:]!r}")


def mxnet_python():
    """The MXNet venv's python (scripts/mxnet-env.sh sets it up), or None."""
    res = subprocess.run([os.path.join(ROOT, "scripts", "mxnet-env.sh")], capture_output=True, text=True)
    py = res.stdout.strip().splitlines()[-1] if res.returncode == 0 and res.stdout.strip() else ""
    return py if py and os.access(py, os.X_OK) else None


def profile(zebra, trace_dir, keys):
    """zebra profile of a traced run's pushes into a hot-keys file, as the MXNet suite does."""
    traces = sorted(glob.glob(os.path.join(trace_dir, "push.*")))
    res = subprocess.run([zebra, "profile", "--out", keys, "--p", "0.99", "--switch-mem", "64K",
                          "--servers", "2"] + traces, capture_output=True, text=True)
    return res.returncode == 0 and traces


def unavailable():
    """Why the suite cannot run here (every scenario is then skipped), or None."""
    why = pslaunch.netns_unavailable()
    if why:
        return f"the netns testbed needs root and iproute2: {why}"
    return None


def missing(args):
    """What the suite needs and does not find (scripts/setup.sh --clients builds it)."""
    need = [args.shim, args.zebra, os.path.join(args.pslite_bin, "exact_sums")]
    return [p for p in need if not os.path.exists(p)]
