#!/usr/bin/env python3
"""Soak of the user-level stack: one real PS-lite training job, every process on Zebra's
stack over DPDK's af_packet PMD (or a raw socket), beside `zebra switch` on its own stack,
for about --minutes, then the leak checks.

The job is tests/pslite-app/mf_train (synchronous SGD on MovieLens-100k, 2 servers, 2
workers, hot rows aggregated by the switch) on the netns testbed (scripts/pslaunch.py
--user-stack). A one-epoch run first measures how long an epoch takes, so the soak runs
as many epochs as fill the time. Passes when:

  - the job ends on its own, every process exits 0 (pslaunch);
  - every process's stack closed cleanly at exit: the shim's `net ok` line in ZEBRA_STATS
    (no mbuf in use, EAL cleaned up), and the switch's "user-level stack closed" with no
    mbuf in use;
  - memory: the switch (only Zebra's code: its stack, the hot path) grew by at most
    --max-growth-mb after the warm-up minute; the PS-lite processes grew per epoch no
    faster than the same job's processes on the kernel's network (a reference run of the
    same build, measured first), plus --slack-mb-per-epoch. PS-lite's own growth is not
    ours to judge: BytePS's PS-lite with mf_train keeps about as many bytes per epoch as a
    worker pushes, on the real libzmq as on Zebra (measured: ~2.8-3.1 MB per epoch on
    both), so a fixed bound would measure the client, not the stack.

  scripts/soak.py [--minutes 10] [--net dpdk|raw] [--out DIR]
"""

import argparse
import glob
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
TRAINED = re.compile(r"^mf: worker rank=\d+ steps=\d+ epochs=(\d+) .* time_s=([0-9.]+)", re.M)
EPOCH = re.compile(r"^mf: epoch=(\d+) step=\d+ time_s=([0-9.]+) test_rmse=([0-9.]+)", re.M)


def log(msg):
    print(f"soak: {msg}", flush=True)


def job_cmd(args, logdir, hot_keys, epochs, user_stack=True):
    """The benchmarks' on+switch job (benchlib.launch_cmd), 2 servers and 2 workers, on the
    user-level stack or (reference) on the kernel's network, with the shim's statistics."""
    testbed = SimpleNamespace(
        net="netns", subnet=args.subnet, servers=2, timeout=args.minutes * 60 * 3 + 300, shape="both",
        server_rate=None, link_rate=None, link_delay=None, shim=os.path.join(ROOT, "dist/lib/libzmq.so.5"),
        zebra=os.path.join(ROOT, "target/release/zebra"), hot_config=os.path.join(ROOT, "scripts/bench-hot.conf"))
    config = f"on+switch@{args.net}" if user_stack else "on+switch"
    cmd = launch_cmd(testbed, config, 2, logdir, hot_keys)
    cmd[-1:-1] = ["--env", f"ZEBRA_STATS={os.path.join(logdir, 'stats', '%p')}"]
    return cmd + [args.binary, f"--data={args.data}", f"--epochs={epochs}", "--sync=1", "--batch=1024"]


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def job_pids():
    """PID -> name of the job's processes (mf_train nodes and the switch)."""
    out = {}
    for exe, name in (("mf_train", "mf_train"), ("zebra", "switch")):
        res = subprocess.run(["pgrep", "-x", exe], capture_output=True, text=True)
        for pid in res.stdout.split():
            out[int(pid)] = name
    return out


def growth_per_epoch(samples, epochs, secs):
    """role -> the largest RSS growth per epoch (MB) of its processes after the warm-up,
    the epochs in a sampled window estimated from the job's epoch rate."""
    rate = epochs / secs if secs > 0 else 0
    out = {}
    for (pid, name), s in samples.items():
        if len(s) < 2 or rate == 0:
            continue
        span = (s[-1][0] - s[0][0]) * rate
        if span <= 0:
            continue
        g = (max(kb for _, kb in s) - s[0][1]) / 1024 / span
        out[name] = max(out.get(name, g), g)
    return out


def run(cmd, logdir, sample_s=None, warmup_s=None):
    """Runs the job; with sample_s, samples the processes' RSS. Returns (code, samples) where
    samples is pid -> [(t, kB)]."""
    os.makedirs(os.path.join(logdir, "stats"), exist_ok=True)
    started = time.monotonic()
    proc = subprocess.Popen(cmd, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    samples = {}
    next_sample = started + (warmup_s or 0)
    while proc.poll() is None:
        time.sleep(1)
        now = time.monotonic()
        if sample_s and now >= next_sample:
            for pid, name in job_pids().items():
                kb = rss_kb(pid)
                if kb is not None:
                    samples.setdefault((pid, name), []).append((now - started, kb))
            next_sample = now + sample_s
    out = proc.stdout.read()
    with open(os.path.join(logdir, "soak-pslaunch.log"), "w") as f:
        f.write(out)
    return proc.returncode, samples, time.monotonic() - started, out


def fmt_mb(v):
    return "-" if v is None else f"{v:.2f} MB"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    p.add_argument("--minutes", type=float, default=10, help="how long the soak job runs (default 10)")
    p.add_argument("--net", choices=("dpdk", "raw"), default="dpdk", help="the stack's device (default dpdk)")
    p.add_argument("--sample-s", type=float, default=30, help="seconds between memory samples (default 30)")
    p.add_argument("--max-growth-mb", type=float, default=16,
                   help="largest RSS growth of the switch after the warm-up minute (default 16 MB)")
    p.add_argument("--slack-mb-per-epoch", type=float, default=0.25,
                   help="how much faster per epoch than on the kernel a PS-lite process may grow (default 0.25 MB)")
    p.add_argument("--reference-epochs", type=int, default=40,
                   help="epochs of the reference run on the kernel's network (default 40)")
    p.add_argument("--subnet", default="10.96.0.0/24")
    p.add_argument("--data", default=os.path.join(ROOT, ".build/data/ml-100k.inter"))
    p.add_argument("--binary", default=os.path.join(ROOT, ".build/byteps-pslite/tests/mf_train"))
    p.add_argument("--out", default=None, help="output directory (default results/soak/<time>)")
    args = p.parse_args()
    if os.geteuid() != 0:
        p.error("needs root (network namespaces, packet sockets)")
    for path in (args.data, args.binary, os.path.join(ROOT, "dist/lib/libzmq.so.5")):
        if not os.path.exists(path):
            p.error(f"{path} is missing; run scripts/setup.sh --clients")
    out = os.path.abspath(args.out or os.path.join(ROOT, "results", "soak", time.strftime("%Y%m%d-%H%M%S")))
    os.makedirs(out, exist_ok=True)
    hot_keys = os.path.join(out, "hot.keys")
    subprocess.run([args.binary, f"--data={args.data}", f"--write-hot-keys={hot_keys}", "--hot-count=1000",
                    "--hot-servers=2"], check=True, capture_output=True)

    log("calibrating: one epoch ...")
    code, _, secs, text = run(job_cmd(args, os.path.join(out, "calibrate"), hot_keys, 1), os.path.join(out, "calibrate"))
    if code != 0:
        log(f"FAIL: the calibration run failed:\n{text[-2000:]}")
        return 1
    trained = TRAINED.search(open(os.path.join(out, "calibrate", "worker-0.log"), errors="replace").read())
    epoch_s = float(trained.group(2)) / int(trained.group(1)) if trained else secs
    epochs = max(1, math.ceil(args.minutes * 60 / max(epoch_s, 0.1)))
    log(f"one epoch took {epoch_s:.1f} s ({secs:.1f} s with start-up): soaking {epochs} epochs "
        f"(~{args.minutes:g} min)")

    log(f"reference: the same job on the kernel's network, {args.reference_epochs} epochs ...")
    ref_dir = os.path.join(out, "reference")
    code, ref_samples, ref_secs, text = run(job_cmd(args, ref_dir, hot_keys, args.reference_epochs, False), ref_dir,
                                            sample_s=2, warmup_s=5)
    if code != 0:
        log(f"FAIL: the reference run failed:\n{text[-2000:]}")
        return 1
    reference = growth_per_epoch(ref_samples, args.reference_epochs, ref_secs)
    log("reference growth per epoch: " + ", ".join(f"{k} {v:.2f} MB" for k, v in sorted(reference.items())))

    logdir = os.path.join(out, "job")
    code, samples, secs, text = run(job_cmd(args, logdir, hot_keys, epochs), logdir, args.sample_s,
                                    warmup_s=min(60, args.minutes * 60 / 4))
    failures = []
    if code != 0:
        failures.append(f"the job failed: {text.strip()[-1500:]}")
    stats = sorted(glob.glob(os.path.join(logdir, "stats", "*")))
    lines = []
    for path in stats:
        with open(path, errors="replace") as f:
            m = NET_LINE.search(f.read())
        if not m or m.group(1) != "ok":
            failures.append(f"{path}: {'no net line' if not m else m.group(0)}")
        else:
            lines.append(m.group(2))
    try:
        with open(os.path.join(logdir, "switch.log"), errors="replace") as f:
            sw = SWITCH_CLOSED.search(f.read())
    except OSError:
        sw = None
    if not sw or MBUFS.search(sw.group(1)) is None or MBUFS.search(sw.group(1)).group(1) != "0":
        failures.append(f"the switch's stack did not report a clean close: {sw.group(0) if sw else 'no line'}")
    log(f"job: {secs:.0f} s, {len(stats)} processes on the shim, every stack closed: "
        f"{'yes' if len(lines) == len(stats) and stats else 'no'}")
    for line in lines:
        log(f"  net ok {line}")
    if sw:
        log(f"  switch: {sw.group(1)}")
    evals = EPOCH.findall(open(os.path.join(logdir, "worker-0.log"), errors="replace").read()) \
        if os.path.exists(os.path.join(logdir, "worker-0.log")) else []
    if evals:
        log(f"  training: {len(evals)} epochs, test RMSE {evals[0][2]} -> {evals[-1][2]}")
    for (pid, name), s in sorted(samples.items()):
        if len(s) < 2:
            continue
        # The largest sample, not the last: a process tearing down its EAL at exit
        # returns memory before its last sample.
        growth = (max(kb for _, kb in s) - s[0][1]) / 1024
        log(f"  {name} pid {pid}: RSS {s[0][1] / 1024:.1f} MB at {s[0][0]:.0f} s, at most "
            f"{max(kb for _, kb in s) / 1024:.1f} MB until {s[-1][0]:.0f} s ({growth:+.1f} MB, {len(s)} samples)")
        if name == "switch" and growth > args.max_growth_mb:
            failures.append(f"the switch (pid {pid}) grew by {growth:.1f} MB")
    soak = growth_per_epoch(samples, epochs, secs)
    for name, g in sorted(soak.items()):
        if name == "switch":
            continue
        ref = reference.get(name)
        log(f"  {name}: {g:.2f} MB per epoch on the stack, {fmt_mb(ref)} on the kernel")
        if ref is not None and g > ref + args.slack_mb_per_epoch:
            failures.append(f"{name} grew {g:.2f} MB per epoch on the stack, {ref:.2f} on the kernel")
    if not any(len(s) >= 2 for s in samples.values()):
        failures.append("no memory samples (the job ended before the warm-up)")
    for f in failures:
        log(f"FAIL {f}")
    log(f"{'PASS' if not failures else 'FAIL'}: logs in {out}")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
