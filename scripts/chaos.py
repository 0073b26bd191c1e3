#!/usr/bin/env python3
"""The chaos suite (issue 18): real PS-lite jobs on the netns testbed (scripts/pslaunch.py
--net netns), faults injected while they run, every result checked exactly.

  scripts/chaos.py [--list] [--logdir DIR] [SCENARIO...]

Each scenario prints what it injected and what it checked, then one line "PASS chaos
NAME", "FAIL chaos NAME (why)" or "SKIP chaos NAME (why)" that scripts/test.sh counts.
Without root (network namespaces) every scenario is skipped with the reason.

The clients: BytePS's PS-lite with tests/pslite-app/exact_sums (every pulled value checked
against the exact sum) and MXNet 1.9.1 dist_sync (tests/mxnet/dist_sync_kvstore.py, every
pulled value checked). "Zebra" is the shim preloaded with ZEBRA_ENABLE=1 and `zebra switch`
in its own namespace, the suites' hot-path settings (tests/suites/hot.conf).
docs/RELIABILITY.md, "The chaos suite", says what each scenario shows.
"""

import argparse
import os
import re
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
import chaoslib  # noqa: E402
from chaoslib import Job, fmt  # noqa: E402

HOT_CONF = os.path.join(ROOT, "tests", "suites", "hot.conf")
EXACT_SUMS_HOT = ["--val-len=32", "--keys=64"]  # the suite's exact_sums_hot workload
LOSSES = [("0.1 %", "drop=0.001,seed=21"), ("1 %", "drop=0.01,seed=22"), ("5 %", "drop=0.05,seed=23"),
          ("duplication and reordering", "dup=0.05,delay=0.1,delay_ms=3,seed=24")]


class Suite:
    def __init__(self, args):
        self.args = args
        self.failed = 0
        self.keys = None  # exact_sums hot keys (2 servers)

    def line(self, verdict, name, why=""):
        print(f"{verdict} chaos {name}" + (f" ({why})" if why else ""), flush=True)
        self.failed += verdict == "FAIL"

    def logdir(self, *parts):
        path = os.path.join(self.args.logdir, *parts)
        chaoslib.fresh_dir(path)
        return path

    # -- the jobs --------------------------------------------------------------------

    def exact_sums_keys(self):
        if self.keys is None:
            self.keys = os.path.join(self.args.logdir, "exact_sums.keys")
            os.makedirs(self.args.logdir, exist_ok=True)
            with open(self.keys, "w") as f:
                subprocess.run([sys.executable, os.path.join(ROOT, "tests/lib/hotpath.py"), "exact-sums",
                                "--servers", "2", "--keys", "64", "--val-len", "32"], stdout=f, check=True)
        return self.keys

    def zebra(self, logdir, keys, loss="0", conf=HOT_CONF, standby=False):
        """pslaunch options of Zebra with the switch (the suites' on+switch); with `standby`,
        a second switch, service `standby`, the same command at its own address, named by
        ZEBRA_SWITCH_STANDBY (unless --no-standby)."""
        a = self.args
        switch = (f"{a.zebra} switch --config {conf} --listen {{ip:NAME}}:{{port:NAME}} "
                  f"--workers {{workers}} --servers {{servers}} --hot-keys {keys} --loss {loss}")
        opts = ["--preload", a.shim, "--env", "ZEBRA_ENABLE=1", "--env", "ZEBRA_SWITCH={ip:switch}:{port:switch}",
                "--env", f"ZEBRA_HOT_KEYS={keys}", "--env", f"ZEBRA_HOT_CONFIG={conf}",
                "--env", f"ZEBRA_HOT_LOSS={loss}", "--env", f"ZEBRA_STATS={logdir}/stats/%p",
                "--service", "switch=" + switch.replace("NAME", "switch")]
        if standby:
            opts += ["--service", "standby=" + switch.replace("NAME", "standby")]
            if not a.no_standby:
                opts += ["--env", "ZEBRA_SWITCH_STANDBY={ip:standby}:{port:standby}"]
        return opts

    def exact_sums_job(self, logdir, rounds, workers=4, zebra=True, loss="0", extra=(), conf=HOT_CONF,
                       standby=False):
        net = ["--net", "netns", "--subnet", self.args.subnet, "--servers", "2", "--workers", str(workers),
               "--timeout", str(self.args.timeout)]
        opts = self.zebra(logdir, self.exact_sums_keys(), loss, conf, standby) if zebra else []
        return Job(net + opts + ["--", self.args.pslite_bin + "/exact_sums", *EXACT_SUMS_HOT, f"--rounds={rounds}",
                                 *extra], logdir)

    # -- the checks ------------------------------------------------------------------

    def exact(self, job, workers=4, servers=2):
        """exact_sums: every worker checked every pulled value, every server saw no error."""
        return chaoslib.exact_sums_ok(job.logdir, workers, servers)

    # -- the scenarios ---------------------------------------------------------------

    def switch_stop(self, name, seconds=5):
        """SIGSTOP to the switch for 5 s in the middle of the job, then SIGCONT: within the
        workers' retries (worker_max_retries resends, their waits doubling from
        worker_rto_ms)."""
        job = self.exact_sums_job(self.logdir(name), rounds=100)
        seen = {}

        def inject(job):
            yield from job.until_switch_added(60000)
            seen["before"] = job.switch_pairs()
            job.signal("switch", signal.SIGSTOP)
            job.note(f"SIGSTOP to the switch at {job.now():.1f} s (it had added {fmt(seen['before'])} pairs)")
            yield seconds
            job.signal("switch", signal.SIGCONT)
            job.note(f"SIGCONT at {job.now():.1f} s")

        job.run(inject)
        problems, checked = self.exact(job)
        hot_problems, hot = chaoslib.hot_ok(job.logdir)
        problems += hot_problems
        if not problems and hot["pairs"] <= seen.get("before", 0):
            problems.append("the switch added nothing after SIGCONT")
        counters = chaoslib.server_counters(job.logdir)
        self.report(name, job, problems, checked + [
            chaoslib.NOTHING_LOST if not hot_problems else
            f"the servers' own account: {counters['forced']} forced deliveries, {counters['lost_values']} lost values",
            f"the switch added {fmt(hot['pairs'])} pairs in all, {fmt(hot['pairs'] - seen.get('before', 0))} "
            "after SIGCONT"])

    def switch_stop_long(self, name):
        """SIGSTOP to the switch for 15 s, longer than the workers' retries: their pairs go
        to the servers as uncertain fallbacks, applied after uncertain_timeout_ms, and the
        switch's late aggregates are corrected by subtraction (K2, fixed: what is left of
        them is counted applied, not lost); the sums must be exact and no value counted lost."""
        self.switch_stop(name, seconds=15)

    def switch_kill(self, name):
        """SIGKILL to the switch in the middle of the job, a new switch at the same address
        1 s later. Checked: the job finishes, the new switch is used again (the servers see its
        new epoch and the workers resend what the old one held), and the sums are exact."""
        job = self.exact_sums_job(self.logdir(name), rounds=100, conf=self.settle_conf(name))

        def inject(job):
            yield from job.until_switch_added(60000)
            job.ask_switch_stats()
            yield 0.2
            job.kill_service("switch")
            job.note(f"SIGKILL to the switch at {job.now():.1f} s (it had added {fmt(job.switch_pairs())} pairs)")
            yield 1
            job.restart_service("switch", "restarted")
            job.note(f"a new switch at the same address at {job.now():.1f} s")

        job.run(inject)
        self.check_restart(name, job)

    def switch_kill_open_round(self, name):
        """SIGKILL to the switch while it holds acknowledged pairs of open rounds (worker 3
        stopped in exact_sums' phase without barriers, the others' pushes acknowledged), a new
        switch 1 s later; the sums must be exact (the workers resend what the old one held)."""
        rounds = 100
        job = self.exact_sums_job(self.logdir(name), rounds=rounds, conf=self.settle_conf(name))

        def inject(job):
            # Phase 3 (pushpull-sync) has no barrier: the other workers run ahead of a stopped one.
            yield from job.until_switch_rounds(2 * 2 * rounds + 20)
            job.signal("worker-3", signal.SIGSTOP)
            job.note(f"SIGSTOP to worker 3 at {job.now():.1f} s, in exact_sums' phase 3")
            yield 0.5
            job.ask_switch_stats()
            yield 0.3
            job.note(f"the switch: {job.switch_line('rounds')}")
            job.kill_service("switch")
            job.note(f"SIGKILL to the switch at {job.now():.1f} s")
            yield 1
            job.restart_service("switch", "restarted")
            job.signal("worker-3", signal.SIGCONT)
            job.note(f"a new switch at the same address and SIGCONT to worker 3 at {job.now():.1f} s")

        job.run(inject)
        self.check_restart(name, job)

    def settle_conf(self, name, more=""):
        """hot.conf with a shorter settle_timeout_ms: a push whose hot part died with the
        switch is delivered (and reported) after 8 s instead of 30."""
        path = os.path.join(self.args.logdir, name + ".conf")
        with open(HOT_CONF) as f, open(path, "w") as out:
            out.write(f.read() + "settle_timeout_ms = 8000\n" + more)
        return path

    def switch_failover(self, name):
        """A standby switch (ZEBRA_SWITCH_STANDBY, a second `zebra switch` with the job's
        settings): SIGKILL to the primary in the middle of the job, for good. Checked: each
        server moved its job to the standby once (failover_ms 2000 without an answer to its
        REGISTER), the standby had added nothing before the kill and aggregated the later
        rounds, the sums are exact and nothing was forced or lost."""
        logdir = self.logdir(name)
        conf = self.settle_conf(name, "failover_ms = 2000\n")
        job = self.exact_sums_job(logdir, rounds=100, conf=conf, standby=True)
        seen = {}

        def inject(job):
            yield from job.until_switch_added(60000)
            job.ask_switch_stats()
            job.signal("standby", signal.SIGUSR1)
            yield 0.3
            seen["standby"] = chaoslib.switch_stats(job.service_log("standby"))
            job.kill_service("switch")
            job.note(f"SIGKILL to the primary switch at {job.now():.1f} s (it had added {fmt(job.switch_pairs())} "
                     f"pairs; the standby {fmt(seen['standby'].get('pairs', 0))}); no switch started again")

        job.run(inject)
        self.check_failover(name, job, seen.get("standby", {}))

    def check_failover(self, name, job, standby_at_kill):
        """After the primary was killed: the job finished exact, nothing forced or lost, each
        server moved its job once, and the standby aggregated rounds after the kill."""
        problems, checked = self.exact(job)
        hot_problems, _ = chaoslib.hot_ok(job.logdir, require_pairs=False)
        if problems and job.failure and "exited with code 1" in job.failure:
            job.failure = None  # exact_sums' workers exit 1 on wrong values: checked here
        moved, seen = chaoslib.failover_ok(job.logdir, job.service_log("standby"), standby_at_kill, servers=2)
        self.report(name, job, problems + hot_problems + moved, checked + seen)

    def check_restart(self, name, job):
        """After a switch was killed and started again: the job finished (its workers exit
        1 only for wrong values), the new switch was used again, and the sums are exact and
        nothing was forced or lost."""
        problems, checked = self.exact(job)
        hot_problems, _ = chaoslib.hot_ok(job.logdir, require_pairs=False)
        inexact = problems + hot_problems
        if problems and job.failure and "exited with code 1" in job.failure:
            job.failure = None  # exact_sums' workers exit 1 on wrong values: checked here
        counters = chaoslib.server_counters(job.logdir)
        again = chaoslib.switch_stats(os.path.join(job.logdir, "switch-restarted.log"))
        rest = []
        if not again.get("pairs"):
            rest.append("the new switch added no pair: it was not used again")
        if again.get("registrations", 0) < 2:
            rest.append(f"the new switch had {again.get('registrations', 0)} server registrations, not 2")
        checked.append(f"the new switch added {fmt(again.get('pairs', 0))} pairs, {fmt(again.get('completed', 0))} "
                       f"rounds completed, {again.get('flushed', 0)} flushed; the servers registered with it "
                       f"({again.get('registrations', 0)} registrations)")
        checked.append(f"the servers' own account: {counters['forced']} pushes delivered unsettled (forced), "
                       f"{counters['lost_values']} values lost")
        self.report(name, job, inexact + rest, checked)

    def hot_loss(self, name):
        """Seeded loss, duplication and reordering on every hot-path send (workers, servers,
        the switch), BytePS exact_sums."""
        for what, spec in LOSSES:
            tag = name + "-" + re.sub(r"[^a-z0-9.]+", "-", what.lower()).strip("-")
            job = self.exact_sums_job(self.logdir(tag), rounds=15, loss=spec)
            job.note(f"ZEBRA_HOT_LOSS={spec} on every worker, server and the switch ({what})")
            job.run(None)
            self.check_loss(tag, job, spec, *self.exact(job))

    def mxnet_hot_loss(self, name):
        """The same faults in MXNet dist_sync jobs (2 workers, 2 servers), hot keys from a
        traced run of the job, as the MXNet suite's on+switch."""
        py = chaoslib.mxnet_python()
        if py is None:
            self.line("FAIL", name, "scripts/mxnet-env.sh could not set up the MXNet venv")
            return
        test = [py, os.path.join(ROOT, "tests/mxnet/dist_sync_kvstore.py"), "--rounds", "6"]
        base = ["--net", "netns", "--subnet", self.args.subnet, "--servers", "2", "--workers", "2",
                "--timeout", str(self.args.timeout)]
        trace = self.logdir(name + "-trace")
        keys = os.path.join(trace, "hot.keys")
        traced = Job(base + ["--preload", self.args.shim, "--env", "ZEBRA_ENABLE=1",
                             "--env", f"ZEBRA_TRACE={trace}/push.%r", "--"] + test, trace)
        traced.run(None)
        if traced.failure or not chaoslib.profile(self.args.zebra, trace, keys):
            self.line("FAIL", name, f"the traced run or zebra profile failed; logs in {trace}")
            return
        for what, spec in LOSSES:
            tag = name + "-" + re.sub(r"[^a-z0-9.]+", "-", what.lower()).strip("-")
            logdir = self.logdir(tag)
            job = Job(base + self.zebra(logdir, keys, spec) + ["--"] + test, logdir)
            job.note(f"ZEBRA_HOT_LOSS={spec} on every worker, server and the switch ({what})")
            job.run(None)
            self.check_loss(tag, job, spec, *chaoslib.mxnet_ok(logdir, 2, 2))

    def check_loss(self, name, job, spec, problems, checked):
        """After a loss run: the clients' checks, nothing forced or lost, pairs aggregated,
        and the faults `spec` asks for injected."""
        hot_problems, hot = chaoslib.hot_ok(job.logdir)
        faults = chaoslib.faults(job.logdir)
        checked += [chaoslib.NOTHING_LOST, f"the switch added {fmt(hot['pairs'])} pairs; injected: "
                    f"{chaoslib.describe_faults(faults)}"]
        if not chaoslib.injected_enough(spec, faults):
            hot_problems.append(f"fewer faults injected than asked ({chaoslib.describe_faults(faults)})")
        self.report(name, job, problems + hot_problems, checked)

    def server_link_cut(self, name):
        """Server 0's link down for 3 s (`ip link set eth0 down`, then up, in its namespace)."""
        job = self.exact_sums_job(self.logdir(name), rounds=100)

        def inject(job):
            yield from job.until_switch_added(60000)
            job.link("server-0", "down")
            job.note(f"`ip link set eth0 down` in server 0's namespace at {job.now():.1f} s")
            yield 3
            job.link("server-0", "up")
            job.note(f"`ip link set eth0 up` at {job.now():.1f} s")

        job.run(inject)
        problems, checked = self.exact(job)
        hot_problems, hot = chaoslib.hot_ok(job.logdir)
        failed_sends = chaoslib.send_errors(job.logdir)
        checked += [chaoslib.NOTHING_LOST, f"the switch added {fmt(hot['pairs'])} pairs; the cut was felt: "
                    f"{failed_sends} hot-path datagrams could not be sent while the link was down"]
        if not failed_sends:
            hot_problems.append("no hot-path send failed: the link cut had no effect")
        self.report(name, job, problems + hot_problems, checked)

    def worker_kill(self, name):
        """SIGKILL to worker 1 in the middle of the job, on libzmq and on Zebra with the
        switch: what every other process does by itself in the next WINDOW seconds, and
        what pslaunch does."""
        window = self.args.worker_kill_window
        outcome = {}
        for config in ("libzmq", "zebra"):
            logdir = self.logdir(name, config)
            job = self.exact_sums_job(logdir, rounds=400, zebra=config == "zebra")

            def inject(job):
                yield from job.until_received("server-0", 200_000)
                job.kill_node("worker-1")
                job.note(f"{config}: SIGKILL to worker 1 at {job.now():.1f} s (server 0 had received 200 kB)")
                yield window

            job.run(inject, keep_going=True, stop_after_steps=True)
            outcome[config] = job
        problems, checked = chaoslib.compare_after_kill(outcome["libzmq"], outcome["zebra"], "worker-1", window)
        launcher = self.logdir(name, "pslaunch")
        ok, what = chaoslib.pslaunch_reports_kill(
            ["--net", "netns", "--subnet", self.args.subnet, "--servers", "2", "--workers", "4",
             "--timeout", str(self.args.timeout)] + self.zebra(launcher, self.exact_sums_keys())
            + ["--", self.args.pslite_bin + "/exact_sums", *EXACT_SUMS_HOT, "--rounds=400"], launcher, "worker-1")
        checked.append(what)
        if not ok:
            problems.append(what)
        for config in ("libzmq", "zebra"):
            for n in outcome[config].notes:
                print(f"  injected: {n}")
            problems = [f"{config}: {p}" for p in outcome[config].problems] + problems
        self.report(name, None, problems, checked)

    def self_test(self, name):
        """The checks can fail: the 1 % loss job with a wrong expected value must be
        reported wrong by this suite's exact check."""
        job = self.exact_sums_job(self.logdir(name), rounds=4, loss="drop=0.01,seed=22",
                                  extra=["--inject-wrong-expected"])
        job.note("exact_sums --inject-wrong-expected (one expected value off by one), 1 % hot-path loss")
        job.run(None)
        problems, _ = self.exact(job)
        wrong = [p for p in problems if " expected " in p]
        job.failure = None  # the workers exit 1, as they must
        if wrong:
            self.report(name, job, [], [f"the exact check failed as it must: {wrong[0][:160]}"])
        else:
            self.report(name, job, [f"the exact check did not catch the wrong value ({problems or 'it passed'})"], [])

    def report(self, name, job, problems, checked):
        if job is not None:
            for n in job.notes:
                print(f"  injected: {n}")
            problems = job.problems + problems
            if job.failure:
                problems = [f"the job failed: {job.failure}"] + problems
        for c in checked:
            print(f"  checked: {c}")
        took = f"{job.elapsed:.1f} s" if job is not None and job.elapsed is not None else ""
        if problems:
            for p in problems[1:]:
                print(f"  problem: {p}")
            logs = f"; logs in {job.logdir}" if job is not None else ""
            self.line("FAIL", name, problems[0][:300] + logs)
        else:
            self.line("PASS", name, took)


SCENARIOS = [
    ("switch-stop", Suite.switch_stop),
    ("switch-stop-long", Suite.switch_stop_long),
    ("switch-kill", Suite.switch_kill),
    ("switch-kill-open-round", Suite.switch_kill_open_round),
    ("switch-failover", Suite.switch_failover),
    ("hot-loss", Suite.hot_loss),
    ("mxnet-hot-loss", Suite.mxnet_hot_loss),
    ("server-link-cut", Suite.server_link_cut),
    ("worker-kill", Suite.worker_kill),
    ("self-test", Suite.self_test),
]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenarios", nargs="*", help="scenarios to run (default: all)")
    p.add_argument("--list", action="store_true", help="list the scenarios and exit")
    p.add_argument("--logdir", default=os.path.join(ROOT, ".build", "logs", "chaos"))
    p.add_argument("--shim", default=os.environ.get("CHAOS_SHIM") or os.path.join(ROOT, "dist/lib/libzmq.so.5"))
    p.add_argument("--zebra", default=os.environ.get("CHAOS_ZEBRA") or os.path.join(ROOT, "target/release/zebra"))
    p.add_argument("--pslite-bin", default=os.path.join(ROOT, ".build/byteps-pslite/tests"))
    p.add_argument("--subnet", default="10.97.0.0/24")
    p.add_argument("--timeout", type=float, default=120, help="seconds before a job is killed (default 120)")
    p.add_argument("--no-standby", action="store_true",
                   help="switch-failover: start the standby but do not name it (ZEBRA_SWITCH_STANDBY unset): "
                   "the scenario must FAIL, which shows its checks can")
    p.add_argument("--worker-kill-window", type=float, default=10,
                   help="worker-kill: seconds the other processes are watched after the kill (default 10)")
    args = p.parse_args()
    names = [n for n, _ in SCENARIOS]
    if args.list:
        for n, fn in SCENARIOS:
            print(f"{n:24} {' '.join(fn.__doc__.split())}")
        return 0
    unknown = [s for s in args.scenarios if s not in names]
    if unknown:
        p.error(f"unknown scenarios {unknown} (see --list)")
    chosen = [(n, fn) for n, fn in SCENARIOS if not args.scenarios or n in args.scenarios]
    why = chaoslib.unavailable()
    lacking = chaoslib.missing(args)
    suite = Suite(args)
    started = time.monotonic()
    for n, fn in chosen:
        if why:
            suite.line("SKIP", n, why)
            continue
        if lacking:
            suite.line("FAIL", n, f"missing {', '.join(lacking)}: run scripts/setup.sh --clients")
            continue
        print(f"=== chaos {n}: {' '.join(fn.__doc__.split())}", flush=True)
        fn(suite, n)
    print(f"chaos: {len(chosen)} scenarios in {time.monotonic() - started:.0f} s; logs in {args.logdir}")
    return 1 if suite.failed else 0


if __name__ == "__main__":
    sys.exit(main())
