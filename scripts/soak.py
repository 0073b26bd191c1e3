#!/usr/bin/env python3
"""Soak: one real PS-lite training job run long on the netns testbed beside `zebra switch`,
every process's memory and file descriptors sampled while it runs, then the leak checks.

The job is tests/pslite-app/mf_train (synchronous SGD on MovieLens-100k, --servers 2
servers, --workers workers, the 1000 hottest rows summed by the switch; one training step is
one aggregation round of each server's job) on Zebra (scripts/pslaunch.py --net netns): every
process, the switch included, on Zebra's user-level stack over DPDK's af_packet PMD or a raw
socket (--net dpdk|raw), or on the kernel's network (--net kernel). A reference job run first,
in the same run, is the same job on the kernel's network with the same build (--reference
kernel, the default for dpdk and raw) or on the real libzmq without a switch (--reference
libzmq, the default for kernel). The soak runs --rounds training steps, --epochs epochs, or as
many epochs as fill --minutes (a one-epoch run first measures an epoch).

Every process of both jobs is sampled every --sample-s seconds: resident memory (VmRSS), the
bytes its malloc heap holds (tests/lib/heapstat.c, preloaded into every node and the switch:
glibc's mallinfo2, every live allocation of the process, the client's, libzmq's, the shim's
and its Rust code's alike), its open file descriptors and how many are sockets
(/proc/PID/fd); each sample carries the job's training step at that moment (the evaluation
lines of worker rank 0, every --eval-every steps); each job's samples are kept in its
samples.json. The samples before step --warmup-rounds are the warm-up. The soak passes when:

  - the job ends on its own, every process exits 0 (pslaunch);
  - dpdk, raw: every process's stack closed cleanly at exit (the shim's `net ok` line in
    ZEBRA_STATS: no mbuf in use, EAL cleaned up; the switch's "user-level stack closed" with
    no mbuf in use);
  - the switch (only Zebra's code) grew after the warm-up by at most --max-growth-mb, in
    RSS and in heap;
  - every PS-lite process (scheduler, servers, workers) grew after the warm-up, in RSS and
    in heap, by at most what its role grew per step in the reference job, times the soak's
    steps, plus --slack-mb. PS-lite's own growth is not ours to judge: BytePS's PS-lite
    with mf_train keeps memory as it trains, on the real libzmq as on Zebra; what Zebra
    adds beyond that is the shim's;
  - no process, the switch included, holds more file descriptors, or more sockets, at its
    last sample than at its first sample after the warm-up (plus --fd-slack).

--inject-leak makes every process of the soaked job (switch included) leak on purpose,
through heapstat: 1 MB of heap and one socket twice a second; the soak must then
fail on every check of memory and descriptors (tests/testbed/test_soak.py).

  scripts/soak.py [--net dpdk|raw|kernel] [--workers 2] [--rounds N | --epochs N | --minutes 10] [--out DIR]
  scripts/soak.py --net kernel --workers 8 --batch 128 --rounds 2000     # issue 18, part 3
"""

import argparse
import glob
import json
import math
import os
import re
import subprocess
import sys
import time
from types import SimpleNamespace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from benchlib import clean_env, launch_cmd  # noqa: E402

NET_LINE = re.compile(r"^net (ok|error) (.*)$", re.M)
MBUFS = re.compile(r"mbufs_in_use (\d+)")
SWITCH_CLOSED = re.compile(r"^user-level stack closed: (.*)$", re.M)
TRAINED = re.compile(r"^mf: worker rank=\d+ steps=(\d+) epochs=(\d+) .* time_s=([0-9.]+)", re.M)
EPOCH = re.compile(r"^mf: epoch=(\d+) step=(\d+) time_s=([0-9.]+) test_rmse=([0-9.]+)", re.M)
SWITCH_ROUNDS = re.compile(r"^\s*rounds\s+(\d+) completed, (\d+) flushed", re.M)
MB = 1024 * 1024
LEAK = {"HEAPSTAT_LEAK_KB": "4096", "HEAPSTAT_LEAK_FDS": "1"}  # at each heapstat line, twice a second:
# 8 MB/s, far above the short soak's reference growth (up to 10 MB) plus its 8 MB slack


def log(msg):
    print(f"soak: {msg}", flush=True)


# -- the jobs ------------------------------------------------------------------------------


def job_cmd(args, logdir, hot_keys, epochs, config, heapstat, leak=False):
    """The benchmarks' job of `config` (benchlib.launch_cmd: "on+switch@dpdk", "on+switch"
    or "libzmq") with the shim's statistics and heapstat in every node and the switch."""
    testbed = SimpleNamespace(
        net="netns", subnet=args.subnet, servers=args.servers, timeout=args.timeout, shape="both",
        server_rate=None, link_rate=None, link_delay=None, shim=args.shim, zebra=args.zebra,
        hot_config=os.path.join(ROOT, "scripts/bench-hot.conf"))
    cmd = launch_cmd(testbed, config, args.workers, logdir, hot_keys)
    extra = ["--env", f"HEAPSTAT_DIR={os.path.join(logdir, 'heap')}"]
    extra += [x for k, v in LEAK.items() for x in ("--env", f"{k}={v}")] if leak else []
    if "--preload" in cmd:
        i = cmd.index("--preload") + 1
        cmd[i] = f"{cmd[i]}:{heapstat}"
    else:
        extra += ["--preload", heapstat]
    # The switch is a service, which pslaunch does not preload.
    cmd = [a.replace("switch=", f"switch=env LD_PRELOAD={heapstat} ", 1) if a.startswith("switch=") else a
           for a in cmd]
    cmd[-1:-1] = extra
    return cmd + [args.binary, f"--data={args.data}", f"--epochs={epochs}", "--sync=1", f"--batch={args.batch}",
                  f"--eval-every={args.eval_every}"]


def build_heapstat(out):
    path = os.path.join(out, "heapstat.so")
    res = subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-pthread", "-o", path,
                          os.path.join(ROOT, "tests/lib/heapstat.c")], capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"soak: building tests/lib/heapstat.c failed: {res.stderr.strip()[:500]}")
    return path


# -- sampling ------------------------------------------------------------------------------


def descendants(root):
    """Every process below `root` (the job's pslaunch): its nodes and services."""
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(d))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def node_name(pid):
    """The pslaunch node or service a process is (PSLAUNCH_NAME), or None."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            for var in f.read().split(b"\0"):
                if var.startswith(b"PSLAUNCH_NAME="):
                    return var.split(b"=", 1)[1].decode()
    except OSError:
        pass
    return None


def probe(pid, heapdir):
    """One sample of a process: RSS and heap in bytes, open descriptors, sockets; None if
    it is gone or not yet the job's program (heapstat has not written its line)."""
    try:
        with open(os.path.join(heapdir, f"heap.{pid}")) as f:
            heap = int(f.read().split()[0])
        rss = None
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) * 1024
        fds = os.listdir(f"/proc/{pid}/fd")
        socks = 0
        for fd in fds:
            try:
                socks += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
            except OSError:
                pass
    except (OSError, IndexError, ValueError):
        return None
    return None if rss is None else {"rss": rss, "heap": heap, "fds": len(fds), "socks": socks}


def current_step(logdir):
    """The training step of worker rank 0's latest evaluation line (0 before any)."""
    step = 0
    for path in glob.glob(os.path.join(logdir, "worker-*.log")):
        with open(path, errors="replace") as f:
            for m in EPOCH.finditer(f.read()):
                step = max(step, int(m.group(2)))
    return step


def run(cmd, logdir, sample_s=None):
    """Runs the job; with sample_s, samples its processes. Returns (exit code, samples, seconds,
    pslaunch's output), samples being node name -> [{t, step, rss, heap, fds, socks}]."""
    os.makedirs(os.path.join(logdir, "stats"), exist_ok=True)
    heapdir = os.path.join(logdir, "heap")
    os.makedirs(heapdir, exist_ok=True)
    started = time.monotonic()
    proc = subprocess.Popen(cmd, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    samples, names = {}, {}
    while proc.poll() is None:
        time.sleep(sample_s or 1)
        if not sample_s:
            continue
        step = current_step(logdir)
        for pid in descendants(proc.pid):
            name = names.get(pid) or node_name(pid)
            s = probe(pid, heapdir) if name else None
            if s:
                names[pid] = name
                s.update(t=round(time.monotonic() - started, 1), step=step)
                samples.setdefault(name, []).append(s)
    out = proc.stdout.read()
    with open(os.path.join(logdir, "soak-pslaunch.log"), "w") as f:
        f.write(out)
    if sample_s:
        with open(os.path.join(logdir, "samples.json"), "w") as f:
            json.dump(samples, f)
    return proc.returncode, samples, time.monotonic() - started, out


# -- the checks (pure: tests/testbed/test_soak.py runs them on made-up samples) -------------


def role(name):
    return name.split("-")[0]


def after_warmup(samples, warmup):
    return [s for s in samples if s["step"] >= warmup]


def growth(samples, key, warmup):
    """(growth of `key` after the warm-up: its largest value less its first, the steps
    between the first and the last sample after the warm-up), or None without two samples.
    The largest sample, not the last: a process tearing down at exit returns memory."""
    post = after_warmup(samples, warmup)
    if len(post) < 2:
        return None
    return max(s[key] for s in post) - post[0][key], post[-1]["step"] - post[0]["step"]


def reference_rates(reference, warmup):
    """role -> key -> the largest growth per step of the reference job's processes."""
    out = {}
    for name, samples in reference.items():
        for key in ("rss", "heap"):
            g = growth(samples, key, warmup)
            if g and g[1] > 0:
                rates = out.setdefault(role(name), {})
                rates[key] = max(rates.get(key, 0.0), max(g[0], 0) / g[1])
    return out


def memory_problems(soak, warmup, reference, ref_warmup, max_growth_mb, slack_mb):
    """The memory checks: the switch's growth after the warm-up (absolute), every PS-lite
    process's against its role in the reference job. Returns (problems, lines)."""
    problems, lines = [], []
    rates = reference_rates(reference, ref_warmup)
    for name, samples in sorted(soak.items()):
        for key in ("rss", "heap"):
            g = growth(samples, key, warmup)
            if g is None:
                problems.append(f"{name}: fewer than two samples after the warm-up")
                break
            grew, steps = g
            first = after_warmup(samples, warmup)[0][key]
            text = (f"{name} {key}: {first / MB:.1f} MB after the warm-up (step {after_warmup(samples, warmup)[0]['step']}), "
                    f"{grew / MB:+.2f} MB over {steps} steps")
            if name == "switch":
                lines.append(f"{text} (bound {max_growth_mb:g} MB)")
                if grew > max_growth_mb * MB:
                    problems.append(f"the switch's {key} grew by {grew / MB:.1f} MB after the warm-up "
                                    f"(bound {max_growth_mb:g} MB)")
                continue
            rate = rates.get(role(name), {}).get(key)
            if rate is None:
                problems.append(f"{name}: no reference for its role's {key}")
                continue
            allowed = rate * steps + slack_mb * MB
            lines.append(f"{text}; reference {rate * 1000 / MB:.1f} MB per 1000 steps, allowed {allowed / MB:.2f} MB")
            if grew > allowed:
                problems.append(f"{name}'s {key} grew by {grew / MB:.2f} MB over {steps} steps, more than the "
                                f"reference's {rate * steps / MB:.2f} MB plus {slack_mb:g} MB")
    return problems, lines


def fd_problems(soak, warmup, slack):
    """Descriptors and sockets of every process: at its first sample, its first after the
    warm-up and its last; the last must not exceed the one after the warm-up by more than
    `slack`. Returns (problems, lines)."""
    problems, lines = [], []
    for name, samples in sorted(soak.items()):
        post = after_warmup(samples, warmup)
        if len(post) < 2:
            problems.append(f"{name}: fewer than two samples after the warm-up")
            continue
        first, warm, last = samples[0], post[0], post[-1]
        lines.append(f"{name}: fds {first['fds']} at start, {warm['fds']} after the warm-up, {last['fds']} at the "
                     f"end (sockets {first['socks']}, {warm['socks']}, {last['socks']}; "
                     f"at most {max(s['fds'] for s in post)} fds)")
        for key, what in (("fds", "file descriptors"), ("socks", "sockets")):
            if last[key] > warm[key] + slack:
                problems.append(f"{name} held {last[key]} {what} at the end, {warm[key]} after the warm-up")
    return problems, lines


def stack_problems(logdir):
    """dpdk, raw: every process's stack closed cleanly (the shim's net lines, the switch's)."""
    problems, lines = [], []
    stats = sorted(glob.glob(os.path.join(logdir, "stats", "*")))
    for path in stats:
        with open(path, errors="replace") as f:
            m = NET_LINE.search(f.read())
        if not m or m.group(1) != "ok":
            problems.append(f"{path}: {'no net line' if not m else m.group(0)}")
        else:
            lines.append(f"net ok {m.group(2)}")
    try:
        with open(os.path.join(logdir, "switch.log"), errors="replace") as f:
            sw = SWITCH_CLOSED.search(f.read())
    except OSError:
        sw = None
    if not sw or MBUFS.search(sw.group(1)) is None or MBUFS.search(sw.group(1)).group(1) != "0":
        problems.append(f"the switch's stack did not report a clean close: {sw.group(0) if sw else 'no line'}")
    else:
        lines.append(f"switch: {sw.group(1)}")
    if not stats:
        problems.append("no ZEBRA_STATS reports")
    return problems, lines


# -- main ------------------------------------------------------------------------------------


def summary(logdir):
    """Training steps and test RMSE of a finished job, and the switch's rounds."""
    text = ""
    for path in sorted(glob.glob(os.path.join(logdir, "worker-*.log"))):
        with open(path, errors="replace") as f:
            text += f.read()
    evals = EPOCH.findall(text)
    trained = TRAINED.search(text)
    parts = [f"{trained.group(1)} steps, {trained.group(2)} epochs" if trained else "no worker summary"]
    if evals:
        parts.append(f"test RMSE {evals[0][3]} -> {evals[-1][3]}")
    try:
        with open(os.path.join(logdir, "switch.log"), errors="replace") as f:
            rounds = SWITCH_ROUNDS.findall(f.read())
        if rounds:
            parts.append(f"the switch completed {rounds[-1][0]} rounds, flushed {rounds[-1][1]}")
    except OSError:
        pass
    return ", ".join(parts)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--net", choices=("dpdk", "raw", "kernel"), default="dpdk",
                   help="the soaked job's network: Zebra's stack on DPDK or a raw socket, or the kernel's (default dpdk)")
    p.add_argument("--reference", choices=("kernel", "libzmq"), default=None,
                   help="the reference job: the same build on the kernel's network, or the real libzmq "
                   "(default: kernel for dpdk and raw, libzmq for kernel)")
    p.add_argument("--workers", type=int, default=2, help="PS-lite workers (default 2)")
    p.add_argument("--servers", type=int, default=2, help="PS-lite servers (default 2)")
    p.add_argument("--batch", type=int, default=1024, help="mf_train --batch, ratings per worker step (default 1024)")
    length = p.add_mutually_exclusive_group()
    length.add_argument("--minutes", type=float, default=None, help="run as many epochs as fill this (default 10)")
    length.add_argument("--rounds", type=int, default=None, help="run at least this many training steps")
    length.add_argument("--epochs", type=int, default=None, help="run this many epochs (no calibration run)")
    p.add_argument("--reference-epochs", type=int, default=None,
                   help="epochs of the reference job (default: the soak's, at most 40)")
    p.add_argument("--eval-every", type=int, default=10,
                   help="mf_train --eval-every: worker 0's evaluations, which date the samples (default 10)")
    p.add_argument("--sample-s", type=float, default=2, help="seconds between samples (default 2)")
    p.add_argument("--warmup-rounds", type=int, default=None,
                   help="steps of warm-up, left out of the checks (default a tenth of the job's, at least 1)")
    p.add_argument("--max-growth-mb", type=float, default=16,
                   help="largest growth of the switch after the warm-up, RSS and heap (default 16 MB)")
    p.add_argument("--slack-mb", type=float, default=8,
                   help="how much more than the reference's growth over the same steps a PS-lite process may "
                   "grow after the warm-up, RSS and heap (default 8 MB)")
    p.add_argument("--fd-slack", type=int, default=0,
                   help="descriptors or sockets a process may hold at the end beyond those after the warm-up (default 0)")
    p.add_argument("--inject-leak", action="store_true",
                   help="every process of the soaked job leaks heap and descriptors on purpose (the checks must fail)")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds per job (default: 8 times the calibrated estimate plus 300, or 3600)")
    p.add_argument("--subnet", default="10.96.0.0/24")
    p.add_argument("--data", default=os.path.join(ROOT, ".build/data/ml-100k.inter"))
    p.add_argument("--binary", default=os.path.join(ROOT, ".build/byteps-pslite/tests/mf_train"))
    p.add_argument("--shim", default=os.path.join(ROOT, "dist/lib/libzmq.so.5"))
    p.add_argument("--zebra", default=os.path.join(ROOT, "target/release/zebra"))
    p.add_argument("--out", default=None, help="output directory (default results/soak/<time>)")
    args = p.parse_args()
    if args.minutes is None and args.rounds is None and args.epochs is None:
        args.minutes = 10
    reference = args.reference or ("libzmq" if args.net == "kernel" else "kernel")
    if args.net == "kernel" and reference == "kernel":
        p.error("--net kernel needs --reference libzmq")
    if os.geteuid() != 0:
        p.error("needs root (network namespaces, packet sockets)")
    for path in (args.data, args.binary, args.shim, args.zebra):
        if not os.path.exists(path):
            p.error(f"{path} is missing; run scripts/setup.sh --clients")
    out = os.path.abspath(args.out or os.path.join(ROOT, "results", "soak", time.strftime("%Y%m%d-%H%M%S")))
    os.makedirs(out, exist_ok=True)
    heapstat = build_heapstat(out)
    hot_keys = os.path.join(out, "hot.keys")
    subprocess.run([args.binary, f"--data={args.data}", f"--write-hot-keys={hot_keys}", "--hot-count=1000",
                    f"--hot-servers={args.servers}"], check=True, capture_output=True)
    soaked = "on+switch" if args.net == "kernel" else f"on+switch@{args.net}"
    ref_config = "libzmq" if reference == "libzmq" else "on+switch"

    epochs, estimate = args.epochs, None
    if epochs is None:
        log("calibrating: one epoch ...")
        cal = os.path.join(out, "calibrate")
        cal_args = SimpleNamespace(**dict(vars(args), timeout=args.timeout or 900))
        code, _, secs, text = run(job_cmd(cal_args, cal, hot_keys, 1, soaked, heapstat), cal)
        trained = TRAINED.search(open(os.path.join(cal, "worker-0.log"), errors="replace").read()) if code == 0 else None
        if not trained:
            log(f"FAIL: the calibration run failed:\n{text[-2000:]}")
            return 1
        steps, epoch_s = int(trained.group(1)), float(trained.group(3))
        epochs = (math.ceil(args.rounds / steps) if args.rounds else
                  max(1, math.ceil(args.minutes * 60 / max(epoch_s, 0.1))))
        estimate = epochs * epoch_s
        log(f"one epoch: {steps} steps in {epoch_s:.1f} s ({secs:.1f} s with start-up): soaking {epochs} epochs, "
            f"{epochs * steps} steps (~{estimate / 60:.1f} min on Zebra)")
    # The reference may be much slower than Zebra: the real libzmq took 2.4x as long with 8 workers.
    args.timeout = args.timeout or (8 * estimate + 300 if estimate else 3600)
    ref_epochs = args.reference_epochs or min(epochs, 40)

    log(f"reference: the same job on {'the real libzmq' if reference == 'libzmq' else 'the kernel network'}, "
        f"{ref_epochs} epochs ...")
    ref_dir = os.path.join(out, "reference")
    code, ref_samples, ref_secs, text = run(job_cmd(args, ref_dir, hot_keys, ref_epochs, ref_config, heapstat),
                                            ref_dir, args.sample_s)
    if code != 0:
        log(f"FAIL: the reference job failed:\n{text[-2000:]}")
        return 1
    ref_steps = max((s["step"] for ss in ref_samples.values() for s in ss), default=0)
    log(f"reference: {ref_secs:.0f} s, {summary(ref_dir)}")

    label = f"Zebra ({soaked}{', leaking on purpose' if args.inject_leak else ''})"
    log(f"soaked job: {label}, {epochs} epochs ...")
    logdir = os.path.join(out, "job")
    code, samples, secs, text = run(job_cmd(args, logdir, hot_keys, epochs, soaked, heapstat, args.inject_leak),
                                    logdir, args.sample_s)
    steps = max((s["step"] for ss in samples.values() for s in ss), default=0)
    log(f"soaked job: {secs:.0f} s, {summary(logdir)}")
    failures = []
    if code != 0:
        failures.append(f"the job failed: {text.strip()[-1500:]}")
    if args.net != "kernel":
        probs, lines = stack_problems(logdir)
        failures += probs
        for line in lines:
            log(f"  {line}")
    ref_warmup = args.warmup_rounds if args.warmup_rounds is not None else max(1, ref_steps // 10)
    soak_warmup = args.warmup_rounds if args.warmup_rounds is not None else max(1, steps // 10)
    log(f"warm-up: the first {soak_warmup} steps ({ref_warmup} of the reference's)")
    probs, lines = memory_problems(samples, soak_warmup, ref_samples, ref_warmup, args.max_growth_mb, args.slack_mb)
    failures += probs
    for line in lines:
        log(f"  memory: {line}")
    _, lines = fd_problems(ref_samples, ref_warmup, args.fd_slack)
    for line in lines:
        log(f"  reference descriptors: {line}")
    probs, lines = fd_problems(samples, soak_warmup, args.fd_slack)
    failures += probs
    for line in lines:
        log(f"  descriptors: {line}")
    if not samples:
        failures.append("no samples (the job ended before the first)")
    for f in failures:
        log(f"FAIL {f}")
    log(f"{'PASS' if not failures else 'FAIL'}: logs in {out}")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
