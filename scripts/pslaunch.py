#!/usr/bin/env python3
"""Launch one PS-lite job on this host: a scheduler, servers and workers of one command.

Unlike PS-lite's tests/local.sh, every process is timed out and every exit code is
checked: one failed process would otherwise leave the others waiting in the shutdown
barrier forever. On the first failure (or the timeout, or Ctrl-C) the whole job is
killed and the launcher exits non-zero, naming the process and showing its log tail.
"""

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import time


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parse_env(pairs):
    env = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"pslaunch: --env takes KEY=VALUE, got {pair!r}")
        env[key] = value
    return env


def tail(path, lines=15):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return "(no log)\n"


class Job:
    def __init__(self, args):
        self.args = args
        self.procs = []  # (name, Popen, log path)
        os.makedirs(args.logdir, exist_ok=True)

    def base_env(self):
        env = dict(os.environ)
        env.pop("PORT", None)  # PS-lite reads a stray PORT as its own port
        env.update(
            DMLC_PS_ROOT_URI="127.0.0.1",
            DMLC_PS_ROOT_PORT=str(self.args.port or free_port()),
            DMLC_NUM_SERVER=str(self.args.servers),
            DMLC_NUM_WORKER=str(self.args.workers),
            DMLC_NODE_HOST="127.0.0.1",
        )
        env.update(parse_env(self.args.env))
        return env

    def start(self):
        env = self.base_env()
        roles = [("scheduler", "scheduler")]
        roles += [("server", f"server-{i}") for i in range(self.args.servers)]
        roles += [("worker", f"worker-{i}") for i in range(self.args.workers)]
        for role, name in roles:
            log = os.path.join(self.args.logdir, f"{name}.log")
            penv = dict(env, DMLC_ROLE=role, PSLAUNCH_NAME=name)
            if self.args.preload and (not self.args.preload_names or name in self.args.preload_names):
                penv["LD_PRELOAD"] = self.args.preload
            with open(log, "wb") as out:
                proc = subprocess.Popen(
                    self.args.command,
                    env=penv,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )
            self.procs.append((name, proc, log))

    def logs_match(self, pattern):
        regex = re.compile(pattern)
        for _, _, log in self.procs:
            with open(log, errors="replace") as f:
                if regex.search(f.read()):
                    return True
        return False

    def kill_all(self):
        for _, proc, _ in self.procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for _, proc, _ in self.procs:
            proc.wait()

    def run(self):
        started = time.monotonic()
        deadline = started + self.args.timeout
        self.start()
        failure = None
        while failure is None:
            running = 0
            for name, proc, log in self.procs:
                code = proc.poll()
                if code is None:
                    running += 1
                elif code != 0:
                    failure = (name, f"exited with {describe(code)}", log)
                    break
            if failure or running == 0:
                break
            if time.monotonic() > deadline:
                stuck = [n for n, p, _ in self.procs if p.poll() is None]
                failure = (stuck[0], f"timed out after {self.args.timeout}s (still running: {', '.join(stuck)})",
                           os.path.join(self.args.logdir, f"{stuck[0]}.log"))
                break
            time.sleep(0.05)
        self.kill_all()
        elapsed = time.monotonic() - started
        if failure:
            name, why, log = failure
            print(f"pslaunch: FAIL {name} {why}; logs in {self.args.logdir}", file=sys.stderr)
            print(f"---- tail of {log}\n{tail(log)}----", file=sys.stderr)
            return 1
        if not self.args.quiet:
            print(f"pslaunch: ok {len(self.procs)} processes in {elapsed:.1f}s; logs in {self.args.logdir}")
        return 0


def describe(code):
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"code {code}"


def main():
    p = argparse.ArgumentParser(
        description="Run a PS-lite job (scheduler + servers + workers of one command) on 127.0.0.1, "
        "with a timeout and every exit code checked.",
        usage="%(prog)s [options] -- CMD [ARGS...]",
    )
    p.add_argument("--servers", type=int, default=1, help="number of servers (default 1)")
    p.add_argument("--workers", type=int, default=2, help="number of workers (default 2)")
    p.add_argument("--timeout", type=float, default=120, help="seconds before the whole job is killed (default 120)")
    p.add_argument("--logdir", default=None, help="directory for scheduler.log, server-I.log, worker-I.log")
    p.add_argument("--preload", default="", help="library to LD_PRELOAD into every node (empty: none)")
    p.add_argument("--preload-names", default=os.environ.get("PSLAUNCH_PRELOAD_NAMES", ""),
                   help="comma-separated node names (scheduler, server-0, worker-1, ...) that get --preload; "
                   "default: every node (env PSLAUNCH_PRELOAD_NAMES)")
    p.add_argument("--port", type=int, default=0, help="scheduler port (default: a free one)")
    p.add_argument("--env", action="append", default=[], metavar="K=V", help="extra environment for every node")
    p.add_argument("--quiet", action="store_true", help="print nothing on success")
    p.add_argument("--retry-if", default=None, metavar="REGEX",
                   help="when the job fails and a log matches REGEX (a known race of the client, "
                   "not ours), run it again, up to --attempts times in all")
    p.add_argument("--attempts", type=int, default=3, help="attempts with --retry-if (default 3)")
    p.add_argument("command", nargs=argparse.REMAINDER)
    args = p.parse_args()
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    if not args.command:
        p.error("missing the command to run (after --)")
    args.preload_names = {n for n in args.preload_names.split(",") if n}
    if args.servers < 1 or args.workers < 1:
        p.error("--servers and --workers must be at least 1")
    if args.logdir is None:
        import tempfile

        args.logdir = tempfile.mkdtemp(prefix="pslaunch.")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(130))
    for attempt in range(1, args.attempts + 1):
        job = Job(args)
        try:
            code = job.run()
        except (KeyboardInterrupt, SystemExit):
            job.kill_all()
            print("pslaunch: interrupted; job killed", file=sys.stderr)
            return 130
        if code == 0 or not args.retry_if or attempt == args.attempts or not job.logs_match(args.retry_if):
            return code
        print(f"pslaunch: known race ({args.retry_if!r}) in attempt {attempt}; running the job again",
              file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
