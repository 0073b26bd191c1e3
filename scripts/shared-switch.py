#!/usr/bin/env python3
"""Several jobs on one switch (issue 20): one `zebra switch --listen` that admits jobs as
their servers register, and real PS-lite jobs beside it on one netns testbed.

  scripts/shared-switch.py [admission] [window] [--break room|same-id] [--logdir DIR] ...

Scenario admission (~60 s): four jobs, the switch given room for two.
- job B: MXNet 1.9.1 dist_sync (tests/mxnet/dist_sync_kvstore.py --bigarray-bound 100),
  2 servers, 2 workers, started first (MXNet takes seconds to start);
- job A: BytePS PS-lite tests/pslite-app/exact_sums, 2 servers, 2 workers, started once
  the switch has admitted B's two server jobs, so that both aggregate at once;
- jobs C and D: exact_sums, 1 server, 2 workers each, started once the switch has admitted
  A's too; C short, D long enough (--rounds-d) to outlast A and B.
Every job asks the switch for the default share (R x S / servers hot values per server:
the whole default switch of 1,024 slots per register for each job), and the switch is
given room for two (--slots 2048): C and D must be refused at admission, step aside and
still finish exactly on their servers; D, still running when A or B has ended and been
retired (10-20 s after its last REGISTER), must then be admitted (a refusal is not final:
its server asks every second) and aggregate.

Scenario window (~70 s): two exact_sums jobs P and Q (2 servers, 2 workers, 64 hot keys
of 64 values a push) at once through one switch whose link is shaped (--switch-rate, tc
tbf each way), first with the workers' congestion window, then without it
(`worker_window = false` in the jobs' settings files) and a new switch, in one run:
pairs summed per second of each job, the link's drops; both exact in both halves, and
with the window neither job sums less than --min-share of the other's rate.

Zero configuration (nothing sizes the jobs: each server asks the switch for its share,
the keys are found online, each job's id is derived from its scheduler's address: PS-lite
server s is the switch's job ID + s; `zebra config` with the job's variables tells the
script which) but for each job's ZEBRA_HOT_CONFIG file: `online_min_pace = 0` (no pace rule: on this
unshaped testbed aggregation makes exact_sums' workers slower and its servers would
rightly step aside within a second; this test is about sharing the switch) and the
suites' timeouts for a loaded 2-core machine (tests/suites/hot.conf, which the switch
reads too). A scraper in the switch's namespace reads its Prometheus metrics (per job:
label zebra_job) twice a second while the jobs run.

Checked, each a PASS or FAIL line that scripts/test.sh counts ("SKIP" without root):
  shared-switch A exact_sums    every pulled value exact, nothing forced or lost, the
                                switch summed pairs of jobs 1 and 2, and A's servers
                                received aggregates (their own ZEBRA_STATS)
  shared-switch B mxnet         every pulled value exact (and the servers' OK), nothing
                                forced or lost, the switch summed pairs of jobs 11 and 12,
                                and B's servers received aggregates
  shared-switch A and B at once both jobs' pairs were being summed in one stretch of time
  shared-switch C refused       C refused at admission (switch log and counter), never
                                admitted, no pair summed, no aggregate at its server, which
                                stepped aside; every value exact on its server
  shared-switch D admitted later  D refused at admission and its servers stepped aside, then
                                admitted once there was room, its pairs summed and its server
                                received aggregates; every value exact
  shared-switch window on|off P|Q exact   each job of each half exact, nothing lost
  shared-switch window both progress      with the window, both jobs' pairs per second

The checks can fail: --break room gives the switch room for three jobs (--slots 3072),
and the C line must FAIL; --break same-id gives every job `job = 1` in its settings file,
and the A and C lines must FAIL (A's servers get no aggregate: the switch's jobs 1 and 2
are B's, pinned to B's addresses). Exit code 1 if any check failed. Logs in --logdir.
"""

import argparse
import glob
import ipaddress
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import chaoslib  # noqa: E402
import hotpath  # noqa: E402
import pslaunch  # noqa: E402
from chaoslib import fmt  # noqa: E402

HOT_CONF = os.path.join(ROOT, "tests", "suites", "hot.conf")
SWITCH_PORT = 9950
METRICS_PORT = 9951
EXACT_SUMS = ["--val-len=32", "--keys=64"]  # the chaos suite's exact_sums workload
WINDOW_EXACT_SUMS = ["--val-len=64", "--keys=256"]  # 64 hot keys of 64 values a round
SCENARIOS = ("admission", "window")
SCHEDULER_PORT = 9091  # every job's scheduler, each at its own address on the testbed

# What runs in the switch's namespace beside it: one scrape of its metrics every
# INTERVAL s, appended to a file as a JSON line {"t": monotonic seconds, "s": [[name,
# labels, value], ...]}, until SIGTERM. (CLOCK_MONOTONIC is the machine's: comparable
# with this script's.)
SCRAPER = r"""
import json, re, signal, sys, time, urllib.request
url, out, interval = sys.argv[1], sys.argv[2], float(sys.argv[3])
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
sample = re.compile(r'^(zebra_switch_[a-z_]+)(?:\{([^}]*)\})? (\d+(?:\.\d+)?)$', re.M)
with open(out, "a") as f:
    while True:
        t = time.monotonic()
        try:
            text = urllib.request.urlopen(url, timeout=2).read().decode()
            f.write(json.dumps({"t": t, "s": sample.findall(text)}) + "\n")
            f.flush()
        except OSError:
            pass
        time.sleep(max(0.0, interval - (time.monotonic() - t)))
"""


class SharedNet(pslaunch.Netns):
    """One testbed (one bridge) for every job and the switch; nodes named JOB-NODE."""


class JobNet:
    """One job's view of the shared testbed: its nodes are PREFIX-NAME there; other names
    (the switch) are looked up as they are. Set up and torn down with the shared one."""

    kind = "netns"

    def __init__(self, shared, prefix):
        self.shared, self.prefix = shared, prefix

    def _name(self, name):
        return self.prefix + name if self.prefix + name in self.shared.addr else name

    def setup(self, names):
        missing = [n for n in names if self.prefix + n not in self.shared.addr]
        if missing:
            raise pslaunch.NetError(f"nodes {missing} are not on the shared testbed")

    def address(self, name):
        return self.shared.address(self._name(name))

    def wrap(self, name, argv):
        return self.shared.wrap(self._name(name), argv)

    def ns(self, name):
        return self.shared.ns(self._name(name))

    def node_env(self, name):
        return self.shared.node_env(self._name(name))

    def counters(self):
        n = len(self.prefix)
        return {k[n:]: v for k, v in self.shared.counters().items() if k.startswith(self.prefix)}

    def teardown(self):
        pass


class SharedJob(chaoslib.Job):
    """A chaoslib job run on a testbed it shares with others (chaoslib.Job.run makes its own)."""

    def run_on(self, net):
        self.net = net
        self.started = time.monotonic()
        try:
            self.failure = self.start()
            if self.failure is None:
                self._watch(None, False, False)
        except Exception as e:  # noqa: BLE001 (reported as the job's failure)
            self.failure = ("launcher", f"raised {e!r}", None)
        self.stop_services()
        self.kill_all()
        self.elapsed = self.now()
        self.report(self.elapsed, self.failure)
        if self.failure:
            self.failure = f"{self.failure[0]} {self.failure[1]}"
        return self


class Spec:
    """One job of the run: its client, size, settings file, switch job ids (resolve_ids) and
    the pslaunch job."""

    def __init__(self, label, client, servers, workers, logdir, conf, argv):
        self.label, self.client = label, client
        self.servers, self.workers = servers, workers
        self.logdir, self.conf = logdir, conf
        self.job_id, self.switch_jobs = None, []
        self.job = SharedJob(argv, logdir)
        self.prefix = label.lower() + "-"
        self.thread = None

    def resolve_ids(self, args, shared):
        """The switch's job ids of this job's servers, as its processes take them: asked of
        `zebra config` with the job's variables (its scheduler's address on the testbed, its
        settings file): derived from the scheduler's address, or the file's `job`."""
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "ZEBRA_ENABLE": "1",
               "ZEBRA_SWITCH": f"{shared.address('switch')}:{SWITCH_PORT}", "ZEBRA_HOT_CONFIG": self.conf,
               "DMLC_ROLE": "server", "DMLC_NUM_WORKER": str(self.workers), "DMLC_NUM_SERVER": str(self.servers),
               "DMLC_PS_ROOT_URI": shared.address(self.prefix + "scheduler"),
               "DMLC_PS_ROOT_PORT": str(SCHEDULER_PORT)}
        res = subprocess.run([args.zebra, "config"], env=env, capture_output=True, text=True)
        found = re.search(r"switch jobs? (\d+)", res.stdout)
        if res.returncode or not found:
            raise SystemExit(f"shared-switch: zebra config for job {self.label}: {res.stdout}{res.stderr}")
        self.job_id = int(found.group(1))
        self.switch_jobs = [self.job_id + s for s in range(self.servers)]
        how = (f"derived from the scheduler's address {env['DMLC_PS_ROOT_URI']}:{SCHEDULER_PORT}"
               if "derived" in res.stdout else "`job` in its settings file")
        print(f"  job {self.label}: switch jobs {', '.join(map(str, self.switch_jobs))} ({how})", flush=True)

    def node_names(self):
        return [self.prefix + n for _, n in self.job.names()]

    def start(self, shared):
        self.thread = threading.Thread(target=self.job.run_on, args=(JobNet(shared, self.prefix),), daemon=True)
        self.thread.start()


def write_conf(path, job_id=None, window=True):
    """The job's settings (ZEBRA_HOT_CONFIG): no pace rule, the workers' window
    (`worker_window`), the suites' timeouts for a loaded 2-core machine (HOT_CONF, which the
    switch reads too), and `job` only if given (--break same-id). Nothing sizes the job: it is
    still admitted with the default share, its keys found online, its id derived from its
    scheduler's address."""
    with open(HOT_CONF) as f:
        suite = f.read()
    with open(path, "w") as f:
        f.write(("" if job_id is None else
                 f"# shared-switch.py --break same-id: every job's id by hand, the same\njob = {job_id}\n")
                + "# Here aggregation can make exact_sums slower, and its servers would rightly step aside\n"
                "# within a second (the pace rule): this test is about sharing the switch.\n"
                "online_min_pace = 0\n"
                + ("" if window else "# No congestion window: every hot packet up to worker_max_in_flight at once.\n"
                   "worker_window = false\n")
                + f"# {os.path.relpath(HOT_CONF, ROOT)}:\n" + suite)
    return path


def zebra_env(args, logdir, conf):
    out = ["--preload", args.shim, "--env", "ZEBRA_ENABLE=1",
           "--env", f"ZEBRA_SWITCH={{ip:switch}}:{SWITCH_PORT}", "--env", f"ZEBRA_STATS={logdir}/stats/%p"]
    if conf:
        out += ["--env", f"ZEBRA_HOT_CONFIG={conf}"]
    return out


def logdir_of(args, name):
    path = os.path.join(args.logdir, name)
    chaoslib.fresh_dir(path)
    return path


def base_argv(args, servers, workers):
    return ["--net", "netns", "--subnet", args.subnet, "--timeout", str(args.timeout), "--servers", str(servers),
            "--workers", str(workers), "--port", str(SCHEDULER_PORT)]


def admission_specs(args, py):
    """Jobs A (exact_sums), B (MXNet), C and D (exact_sums, one server; D long)."""
    dirs = [logdir_of(args, n) for n in ("a-exact_sums", "b-mxnet", "c-exact_sums", "d-exact_sums")]
    same = 1 if args.break_ == "same-id" else None
    confs = [write_conf(os.path.join(d, "job.conf"), same) for d in dirs]
    exact = os.path.join(args.pslite_bin, "exact_sums")
    mxnet = [py, os.path.join(ROOT, "tests/mxnet/dist_sync_kvstore.py"), "--bigarray-bound", "100",
             "--rounds", str(args.mxnet_rounds)]
    jobs = [("A", "exact_sums", 2, [exact, *EXACT_SUMS, f"--rounds={args.rounds}"]),
            ("B", "mxnet", 2, mxnet),
            ("C", "exact_sums", 1, [exact, *EXACT_SUMS, f"--rounds={args.rounds_c}"]),
            ("D", "exact_sums", 1, [exact, *EXACT_SUMS, f"--rounds={args.rounds_d}"])]
    return [Spec(label, client, servers, 2, d, conf,
                 base_argv(args, servers, 2) + zebra_env(args, d, conf) + ["--", *argv])
            for (label, client, servers, argv), d, conf in zip(jobs, dirs, confs)]


def window_specs(args, tag, window):
    """Jobs P and Q: the same exact_sums job (more hot values a round than the admission
    scenario's), the workers' congestion window on or off (`window`)."""
    exact = os.path.join(args.pslite_bin, "exact_sums")
    specs = []
    for label in ("P", "Q"):
        d = logdir_of(args, f"window-{tag}-{label.lower()}")
        conf = write_conf(os.path.join(d, "job.conf"), window=window)
        specs.append(Spec(label, "exact_sums", 2, 2, d, conf,
                          base_argv(args, 2, 2)
                          + zebra_env(args, d, conf)
                          + ["--", exact, *WINDOW_EXACT_SUMS, f"--rounds={args.window_rounds}"]))
    return specs


# -- the switch's metrics ----------------------------------------------------------------


def read_samples(path):
    """The scraper's samples: [(t, {(name, zebra_job or None): value})]."""
    out = []
    for line in chaoslib.read(path).splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        values = {}
        for name, labels, value in d["s"]:
            job = re.search(r'zebra_job="([^"]*)"', labels or "")
            key = (name, job.group(1) if job else None)  # fallbacks: summed over their reasons
            values[key] = values.get(key, 0) + float(value)
        out.append((d["t"], values))
    return out


def latest(samples, name, job=None):
    """The largest value of a counter seen in any sample (a retired job's series goes)."""
    return max((v.get((name, job), 0) for _, v in samples), default=0)


def summing_times(samples, jobs):
    """The times of the samples where the pairs summed for `jobs` grew since the last one."""
    times, last = [], 0
    for t, v in samples:
        pairs = sum(v.get(("zebra_switch_pairs_summed_total", str(j)), 0) for j in jobs)
        if pairs > last:
            times.append(t)
        last = max(last, pairs)
    return times


def server_aggregates(logdir):
    """What the job's own servers say they got from the switch (ZEBRA_STATS,
    ServerAgentStats): aggregate parts and the values released as sums."""
    out = {"aggregates": 0, "sum_values": 0}
    for path in glob.glob(os.path.join(logdir, "stats", "*")):
        for line in chaoslib.read(path).splitlines():
            if "ServerAgentStats" in line:
                for key in out:
                    out[key] += hotpath.field(line, key)
    return out


# -- the run -----------------------------------------------------------------------------


class Switch:
    """`zebra switch --listen` in the testbed's namespace "switch", and the scraper of its
    metrics beside it; its log is LOGDIR/switch-TAG.log, the scrapes LOGDIR/switch-TAG.jsonl."""

    def __init__(self, args, shared, tag, slots):
        self.args, self.shared = args, shared
        self.log = os.path.join(args.logdir, f"switch-{tag}.log")
        self.metrics_file = os.path.join(args.logdir, f"switch-{tag}.jsonl")
        for path in (self.log, self.metrics_file):
            if os.path.exists(path):
                os.remove(path)
        ip = shared.address("switch")
        argv = [args.zebra, "switch", "--config", HOT_CONF, "--listen", f"{ip}:{SWITCH_PORT}", "--slots", str(slots),
                "--metrics", f"{ip}:{METRICS_PORT}"]
        print(f"  switch: {' '.join(argv[1:])}", flush=True)
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(shared.wrap("switch", argv), stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        self.scraper = None
        deadline = time.monotonic() + 10
        while "listening on" not in chaoslib.read(self.log):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise SystemExit(f"shared-switch: the switch did not start: {chaoslib.read(self.log)[-500:]}")
            time.sleep(0.1)
        with open(os.path.join(args.logdir, f"scraper-{tag}.log"), "wb") as out:
            self.scraper = subprocess.Popen(
                shared.wrap("switch", [sys.executable, "-c", SCRAPER, f"http://{ip}:{METRICS_PORT}/metrics",
                                       self.metrics_file, str(args.interval)]),
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)

    def samples(self):
        return read_samples(self.metrics_file)

    def text(self):
        return chaoslib.read(self.log)

    def wait_admitted(self, n, timeout):
        """Until the switch has admitted `n` jobs (its metrics), or the timeout."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if latest(self.samples(), "zebra_switch_jobs_admitted_total") >= n:
                return True
            time.sleep(0.3)
        return False

    def stop(self):
        for proc in (self.scraper, self.proc):
            if proc is None or proc.poll() is not None:
                continue
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def job_stats(samples, spec):
    """The switch's counters of one job's server jobs, summed."""
    out = {}
    for name in ("pairs_summed_total", "rounds_completed_total", "rounds_flushed_total", "registrations_total",
                 "job_hot_values", "aggregate_abandoned_total", "fallbacks_total"):
        out[name] = sum(latest(samples, "zebra_switch_" + name, str(j)) for j in spec.switch_jobs)
    out["seen"] = [j for j in spec.switch_jobs
                   if any(("zebra_switch_job_hot_values", str(j)) in v for _, v in samples)]
    return out


def qdisc_drops(shared):
    """Packets the shaped switch link's queues dropped: its eth0 (what the switch sends) and
    its bridge port (what it receives)."""
    out = {}
    for what, ns, dev in (("to the switch", shared.ns("bridge"), shared.port_of["switch"]),
                          ("from the switch", shared.ns("switch"), "eth0")):
        res = pslaunch.run_ip(["tc", "-n", ns, "-s", "-j", "qdisc", "show", "dev", dev], check=False)
        try:
            out[what] = sum(q.get("drops", 0) for q in json.loads(res.stdout))
        except ValueError:
            out[what] = 0
    return out


class Run:
    def __init__(self, args, py):
        self.args, self.py = args, py
        self.failed = 0
        self.run_no = 0

    def line(self, verdict, name, why=""):
        print(f"{verdict} shared-switch {name}" + (f" ({why})" if why else ""), flush=True)
        self.failed += verdict == "FAIL"

    def report(self, name, spec, problems, checked):
        for c in checked:
            print(f"  checked: {c}")
        for p in problems[1:]:
            print(f"  problem: {p}")
        if problems:
            self.line("FAIL", name, f"{problems[0][:300]}; logs in {spec.logdir}")
        else:
            self.line("PASS", name, f"{spec.job.elapsed:.1f} s")

    def testbed(self, specs, shaping=None):
        """One testbed for the switch and every node of `specs` (set up; teardown() it)."""
        self.run_no += 1
        names = ["switch"] + [n for s in specs for n in s.node_names()]
        shaped = shaping or pslaunch.Shaping()
        shared = SharedNet(f"{os.getpid()}-{self.run_no}", ipaddress.IPv4Network(self.args.subnet),
                           lambda name: shaped if name == "switch" else pslaunch.Shaping(), 1500)
        try:
            shared.setup(names)
        except Exception:
            shared.teardown()
            raise
        return shared

    def exact(self, spec):
        if spec.client == "mxnet":
            problems, checked = chaoslib.mxnet_ok(spec.logdir, spec.workers, spec.servers)
        else:
            problems, checked = chaoslib.exact_sums_ok(spec.logdir, spec.workers, spec.servers)
        counters = chaoslib.server_counters(spec.logdir)
        if counters["forced"] or counters["lost_values"]:
            problems.append(f"the servers forced {counters['forced']} requests and lost {counters['lost_values']} "
                            "values (ZEBRA_STATS)")
        else:
            checked.append(chaoslib.NOTHING_LOST)
        if spec.job.failure:
            problems.insert(0, f"the job failed: {spec.job.failure}")
        return problems, checked

    # -- admission: two jobs at once, a third refused ------------------------------------

    def admission(self):
        a = self.args
        specs = admission_specs(a, self.py)
        shared = self.testbed(specs)
        started = time.monotonic()
        notes, switch = [], None
        try:
            for s in specs:
                s.resolve_ids(a, shared)
            switch = Switch(a, shared, "admission", a.slots * 3 // 2 if a.break_ == "room" else a.slots)
            # MXNet takes seconds to start: B first, A once B's servers are admitted (so that
            # both aggregate at once), C once A's are too (the switch is full), D once C ended
            # (so that with --break room C, not D, takes the room).
            a_job, b_job, c_job, d_job = specs
            b_job.start(shared)
            for n, then in ((2, a_job), (4, c_job)):
                ok = switch.wait_admitted(n, a.admit_wait)
                notes.append(f"the switch had {'' if ok else 'NOT '}admitted {n} jobs "
                             f"{time.monotonic() - started:.1f} s after the start: job {then.label} started")
                then.start(shared)
            c_job.thread.join()
            notes.append(f"job C ended {time.monotonic() - started:.1f} s after the start: job D started")
            d_job.start(shared)
            for s in specs:
                s.thread.join()
            time.sleep(a.interval * 2)  # a last scrape
        finally:
            for s in specs:
                if s.thread is not None and s.thread.is_alive():
                    s.job.kill_all()
            if switch:
                switch.stop()
            shared.teardown()
        print(f"  {time.monotonic() - started:.0f} s; {'; '.join(notes)}")
        self.check_admission(specs, switch)

    def check_admission(self, specs, switch):
        samples = switch.samples()
        print(f"  {len(samples)} scrapes of the switch's metrics; per job (label zebra_job):")
        print("    job  client      switch jobs  hot values  pairs summed  rounds completed/flushed  registrations  "
              "ran (s)")
        stats = {}
        for s in specs:
            st = stats[s.label] = job_stats(samples, s)
            ids = ",".join(str(j) for j in s.switch_jobs)
            took = f"{s.job.elapsed:.1f}" if s.job.elapsed is not None else "-"
            print(f"    {s.label}    {s.client:10}  {ids:11}  {fmt(int(st['job_hot_values'])):>10}  "
                  f"{fmt(int(st['pairs_summed_total'])):>12}  "
                  f"{int(st['rounds_completed_total']):>8} / {int(st['rounds_flushed_total']):<14}  "
                  f"{int(st['registrations_total']):>13}  {took:>7}")
        admitted = int(latest(samples, "zebra_switch_jobs_admitted_total"))
        refused = int(latest(samples, "zebra_switch_registrations_refused_total", "none"))
        memory = int(latest(samples, "zebra_switch_memory_bytes"))
        print(f"  the switch: {fmt(memory)} bytes of accumulator memory, {admitted} jobs admitted, "
              f"{refused} REGISTERs refused for jobs it does not have (zebra_job=\"none\")")

        for s in specs[:2]:
            st = stats[s.label]
            problems, checked = self.exact(s)
            if sorted(st["seen"]) != s.switch_jobs:
                problems.append(f"the switch admitted jobs {st['seen']} of {s.switch_jobs}")
            if not st["pairs_summed_total"]:
                problems.append(f"the switch summed no pair of jobs {s.switch_jobs}: not aggregated")
            checked.append(f"the switch summed {fmt(int(st['pairs_summed_total']))} pairs of jobs "
                           f"{', '.join(map(str, s.switch_jobs))} in {int(st['rounds_completed_total'])} completed "
                           f"rounds ({int(st['rounds_flushed_total'])} flushed)")
            own = server_aggregates(s.logdir)
            if not own["aggregates"]:
                problems.append("its servers received no aggregate from the switch (their ZEBRA_STATS)")
            checked.append(f"its servers received {fmt(own['aggregates'])} aggregate parts, {fmt(own['sum_values'])} "
                           "values released as the switch's sums (their ZEBRA_STATS)")
            if st["aggregate_abandoned_total"]:
                problems.append(f"{int(st['aggregate_abandoned_total'])} aggregate parts abandoned")
            self.report(f"{s.label} {s.client}", s, problems, checked)

        a, b = specs[:2]
        ta, tb = summing_times(samples, a.switch_jobs), summing_times(samples, b.switch_jobs)
        if ta and tb:
            lo, hi = max(ta[0], tb[0]), min(ta[-1], tb[-1])
            both = [t for t in ta if lo <= t <= hi and any(abs(t - u) <= self.args.interval * 1.5 for u in tb)]
            t0 = min(ta[0], tb[0])
            what = (f"A summed pairs from {ta[0] - t0:.1f} s to {ta[-1] - t0:.1f} s, B from {tb[0] - t0:.1f} s to "
                    f"{tb[-1] - t0:.1f} s; {len(both)} scrapes saw both jobs' sums grow")
            if hi > lo and both:
                self.line("PASS", "A and B at once", what)
            else:
                self.line("FAIL", "A and B at once", what + ": not at the same time")
        else:
            self.line("FAIL", "A and B at once", "a job's sums never grew on the switch")

        c = specs[2]
        st = stats["C"]
        problems, checked = self.exact(c)
        not_admitted = re.findall(rf"switch: job {c.job_id} \(.*\) from \S+ not admitted: (.*)", switch.text())
        aside = sum("stepping aside" in chaoslib.read(os.path.join(c.logdir, f"server-{i}.log"))
                    for i in range(c.servers))
        if st["seen"]:
            problems.append(f"job C was admitted (the switch has jobs {st['seen']}): not refused")
        if not not_admitted:
            problems.append(f"the switch never refused job {c.job_id} at admission (no 'not admitted' log line)")
        if not refused:
            problems.append("the switch's refused REGISTER counter (zebra_job=\"none\") stayed 0")
        if st["pairs_summed_total"]:
            problems.append(f"the switch summed {int(st['pairs_summed_total'])} pairs of job C")
        own = server_aggregates(c.logdir)
        if own["aggregates"]:
            problems.append(f"its server received {own['aggregates']} aggregate parts from the switch")
        if aside < c.servers:
            problems.append(f"{c.servers - aside} of C's servers did not log 'stepping aside'")
        checked.append(f"the switch refused job {c.job_id}: {not_admitted[0] if not_admitted else '-'} "
                       f"({len(not_admitted)} times); {aside} of {c.servers} servers stepped aside; admitted jobs "
                       f"{admitted}")
        self.report("C refused", c, problems, checked)

        d = specs[3]
        st = stats["D"]
        problems, checked = self.exact(d)
        text = switch.text()
        refusals = len(re.findall(rf"switch: job {d.job_id} \(.*\) from \S+ not admitted: ", text))
        later = re.search(rf"switch: admitted job {d.job_id} ", text)
        aside = sum("stepping aside" in chaoslib.read(os.path.join(d.logdir, f"server-{i}.log"))
                    for i in range(d.servers))
        if not refusals:
            problems.append(f"the switch never refused job {d.job_id}: it was not full when D started")
        elif later and text.index(later.group(0)) < text.index(f"switch: job {d.job_id} ("):
            problems.append(f"the switch admitted job {d.job_id} before it refused it")
        if not later or sorted(st["seen"]) != d.switch_jobs:
            problems.append(f"the switch never admitted job {d.job_id} (a refusal was final; D ran "
                            f"{d.job.elapsed or 0:.1f} s: --rounds-d may be too few to outlast A and B)")
        if not st["pairs_summed_total"]:
            problems.append(f"the switch summed no pair of job {d.job_id} (D ran {d.job.elapsed or 0:.1f} s: "
                            "did it end before its admission and the servers' recount?)")
        own = server_aggregates(d.logdir)
        if not own["aggregates"]:
            problems.append("its server received no aggregate from the switch (its ZEBRA_STATS)")
        if aside < d.servers:
            problems.append(f"{d.servers - aside} of D's servers did not log 'stepping aside'")
        times = summing_times(samples, d.switch_jobs)
        t0 = samples[0][0] if samples else 0
        checked.append(f"the switch refused job {d.job_id} {refusals} times, then admitted it; D ran "
                       f"{d.job.elapsed or 0:.1f} s; it summed "
                       f"{fmt(int(st['pairs_summed_total']))} pairs of it in {int(st['rounds_completed_total'])} "
                       f"completed rounds" + (f", from {times[0] - t0:.1f} s to {times[-1] - t0:.1f} s of the "
                                              "switch's metrics" if times else ""))
        checked.append(f"its server stepped aside, then received {fmt(own['aggregates'])} aggregate parts, "
                       f"{fmt(own['sum_values'])} values released as the switch's sums (its ZEBRA_STATS)")
        self.report("D admitted later", d, problems, checked)

    # -- window: two jobs through one shaped switch link, with and without the window ----

    def window(self):
        a = self.args
        phases = [("on", True), ("off", False)]
        results = {}
        shared = None
        try:
            for tag, window in phases:
                specs = window_specs(a, tag, window)
                if shared is None:
                    shared = self.testbed(specs, pslaunch.Shaping(a.switch_rate))
                    print(f"  the switch's link: {a.switch_rate} each way (tc tbf, a 50 ms queue); the workers' "
                          f"window {tag}", flush=True)
                else:
                    print(f"  the workers' window {tag} (worker_window = false), a new switch", flush=True)
                for s in specs:
                    s.resolve_ids(a, shared)
                before = qdisc_drops(shared)
                switch = Switch(a, shared, f"window-{tag}", a.slots)
                try:
                    for s in specs:
                        s.start(shared)
                    for s in specs:
                        s.thread.join()
                    time.sleep(a.interval * 2)
                finally:
                    for s in specs:
                        if s.thread is not None and s.thread.is_alive():
                            s.job.kill_all()
                    switch.stop()
                after = qdisc_drops(shared)
                results[tag] = (specs, switch, {k: after[k] - before[k] for k in after})
        finally:
            if shared is not None:
                shared.teardown()
        self.check_window(results)

    def check_window(self, results):
        print("  window  job  switch jobs  pairs summed  summing for (s)  pairs/s   rounds completed/flushed  "
              "ran (s)")
        rates = {}
        for tag, (specs, switch, drops) in results.items():
            samples = switch.samples()
            for s in specs:
                st = job_stats(samples, s)
                times = summing_times(samples, s.switch_jobs)
                span = times[-1] - times[0] + self.args.interval if times else 0
                rate = st["pairs_summed_total"] / span if span else 0
                rates[(tag, s.label)] = rate
                print(f"  {tag:6}  {s.label:3}  {','.join(map(str, s.switch_jobs)):11}  "
                      f"{fmt(int(st['pairs_summed_total'])):>12}  {span:15.1f}  {fmt(int(rate)):>8}  "
                      f"{int(st['rounds_completed_total']):>8} / {int(st['rounds_flushed_total']):<14}  "
                      f"{s.job.elapsed or 0:7.1f}")
        for tag, (_, _, drops) in results.items():
            print(f"  window {tag}: the switch link's queues dropped {fmt(drops['to the switch'])} packets on the way "
                  f"to the switch, {fmt(drops['from the switch'])} from it")
        for tag, (specs, _, _) in results.items():
            for s in specs:
                problems, checked = self.exact(s)
                self.report(f"window {tag} {s.label} exact", s, problems, checked)
        on = [rates[("on", s.label)] for s in results["on"][0]]
        off = [rates[("off", s.label)] for s in results["off"][0]]
        what = (f"with the window {fmt(int(on[0]))} and {fmt(int(on[1]))} pairs/s; without it {fmt(int(off[0]))} "
                f"and {fmt(int(off[1]))}")
        if min(on) > 0 and min(on) >= self.args.min_share * max(on):
            self.line("PASS", "window both progress", what)
        else:
            self.line("FAIL", "window both progress",
                      f"{what}: a job starved (below {self.args.min_share:.2f}x the other's rate with the window)")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenarios", nargs="*",
                   help=f"scenarios to run: {', '.join(SCENARIOS)} (default: all)")
    p.add_argument("--break", dest="break_", choices=("room", "same-id"), default=None,
                   help="admission: room: give the switch room for three jobs, so that the C check must FAIL; "
                   "same-id: every job keeps the default job id 1, so that A's and C's checks must FAIL")
    p.add_argument("--logdir", default=os.path.join(ROOT, ".build", "logs", "shared-switch"))
    p.add_argument("--shim", default=os.environ.get("CHAOS_SHIM") or os.path.join(ROOT, "dist/lib/libzmq.so.5"))
    p.add_argument("--zebra", default=os.environ.get("CHAOS_ZEBRA") or os.path.join(ROOT, "target/release/zebra"))
    p.add_argument("--pslite-bin", default=os.path.join(ROOT, ".build/byteps-pslite/tests"))
    p.add_argument("--subnet", default="10.96.0.0/24")
    p.add_argument("--slots", type=int, default=2048,
                   help="the switch's slots per register (default 2048: two jobs' default shares)")
    p.add_argument("--rounds", type=int, default=1000, help="job A: exact_sums rounds per phase (default 1000)")
    p.add_argument("--mxnet-rounds", type=int, default=100, help="job B: MXNet push/pull rounds (default 100)")
    p.add_argument("--rounds-c", type=int, default=50, help="job C: exact_sums rounds per phase (default 50)")
    p.add_argument("--rounds-d", type=int, default=6000,
                   help="job D: exact_sums rounds per phase, enough to outlast A and B and their retirement "
                   "with room for a loaded machine (default 6000: D ran ~40 s after its admission here; with "
                   "4000 it ran 25 s after it here, and summed nothing in a CI run where B took 31 s instead of 24 s)")
    p.add_argument("--admit-wait", type=float, default=60,
                   help="seconds to wait for the switch to admit A's and B's jobs before C starts (default 60)")
    p.add_argument("--switch-rate", default="8mbit", help="window: the switch link's rate each way (default 8mbit)")
    p.add_argument("--window-rounds", type=int, default=150,
                   help="window: exact_sums rounds per phase of jobs P and Q (default 150)")
    p.add_argument("--min-share", type=float, default=0.5,
                   help="window: with the window, each job sums at least this share of the other's pairs a second "
                   "(default 0.5, as rust/zebra-proto/tests/congestion.rs)")
    p.add_argument("--interval", type=float, default=0.5, help="seconds between scrapes (default 0.5)")
    p.add_argument("--timeout", type=float, default=150, help="seconds before a job is killed (default 150)")
    args = p.parse_args()
    unknown = [s for s in args.scenarios if s not in SCENARIOS]
    if unknown:
        p.error(f"unknown scenarios {unknown}: choose from {', '.join(SCENARIOS)}")
    chosen = [s for s in SCENARIOS if not args.scenarios or s in args.scenarios]
    names = {"admission": ["A exact_sums", "B mxnet", "A and B at once", "C refused", "D admitted later"],
             "window": ["window both progress"]}
    why = chaoslib.unavailable()
    if why:
        for n in (n for s in chosen for n in names[s]):
            print(f"SKIP shared-switch {n} ({why})")
        return 0
    chaos_args = argparse.Namespace(shim=args.shim, zebra=args.zebra, pslite_bin=args.pslite_bin)
    lacking = chaoslib.missing(chaos_args)
    py = chaoslib.mxnet_python() if "admission" in chosen else sys.executable
    if lacking or py is None:
        what = ", ".join(lacking + ([] if py else ["the MXNet venv (scripts/mxnet-env.sh)"]))
        for n in (n for s in chosen for n in names[s]):
            print(f"FAIL shared-switch {n} (missing {what}: run scripts/setup.sh --clients)")
        return 1
    os.makedirs(args.logdir, exist_ok=True)
    pslaunch.remove_stale_namespaces()
    run = Run(args, py)
    started = time.monotonic()
    for scenario in chosen:
        if scenario == "admission":
            print(f"=== shared-switch admission: MXNet job B, exact_sums job A once B is admitted, exact_sums job C "
                  f"once A is too, exact_sums job D once C ended{'; --break ' + args.break_ if args.break_ else ''}",
                  flush=True)
            run.admission()
        else:
            print(f"=== shared-switch window: exact_sums jobs P and Q at once through one switch whose link is "
                  f"{args.switch_rate}, the workers' window on, then off", flush=True)
            run.window()
    print(f"shared-switch: {time.monotonic() - started:.0f} s; logs in {args.logdir}")
    return 1 if run.failed else 0


if __name__ == "__main__":
    sys.exit(main())
