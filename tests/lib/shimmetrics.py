#!/usr/bin/env python3
"""Scrapes the shim's ZEBRA_METRICS endpoints of a running job (docs/METRICS.md, "A process's
endpoint").

    shimmetrics.py check LOGDIR --processes N [--wait 20]

Waits for N lines `zebra: metrics at http://ADDR/metrics` in LOGDIR/*.log (the nodes run
with ZEBRA_METRICS=127.0.0.1:0 and ZEBRA_LOG=info), scrapes every endpoint twice a second
apart while the job runs, and checks each answer is Prometheus text with
zebra_shim_calls_total samples whose sum grew. Prints one problem a line; exits 1 if any.
"""
import argparse
import glob
import re
import sys
import time
import urllib.request

ADDR = re.compile(r"zebra: metrics at (http://[0-9.:]+/metrics)")
SAMPLE = re.compile(r'^zebra_shim_calls_total\{function="(\w+)"\} (\d+)$', re.M)


def endpoints(logdir):
    found = {}
    for log in glob.glob(f"{logdir}/*.log"):
        with open(log, errors="replace") as f:
            for m in ADDR.finditer(f.read()):
                found[m.group(1)] = log
    return found


def calls(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        kind = r.headers.get("Content-Type", "")
        text = r.read().decode()
    if not kind.startswith("text/plain"):
        raise ValueError(f"Content-Type {kind!r}")
    samples = SAMPLE.findall(text)
    if not samples or "# TYPE zebra_shim_calls_total counter" not in text:
        raise ValueError("no zebra_shim_calls_total samples")
    return sum(int(n) for _, n in samples)


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["check"])
    ap.add_argument("logdir")
    ap.add_argument("--processes", type=int, required=True)
    ap.add_argument("--wait", type=float, default=20)
    args = ap.parse_args(argv)
    deadline = time.time() + args.wait
    found = endpoints(args.logdir)
    while len(found) < args.processes and time.time() < deadline:
        time.sleep(0.2)
        found = endpoints(args.logdir)
    problems = []
    if len(found) != args.processes:
        problems.append(f"{len(found)} metrics endpoints logged in {args.logdir}, expected {args.processes}")
    first = {}
    for url, log in found.items():
        try:
            first[url] = calls(url)
        except (OSError, ValueError) as e:
            problems.append(f"{log}: {url}: {e}")
    time.sleep(1)
    for url, n in first.items():
        try:
            m = calls(url)
            if m <= n:
                problems.append(f"{found[url]}: {url}: calls did not grow ({n} then {m})")
        except (OSError, ValueError) as e:
            problems.append(f"{found[url]}: {url}: second scrape: {e}")
    for p in problems:
        print(p)
    if not problems:
        print(f"shimmetrics: {len(found)} endpoints scraped twice while the job ran; their calls grew")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
