"""What the benchmarks (scripts/bench-*.py) share: the pslaunch command of one
configuration, the OA-like workload (`trace_gen`, `profile`), BytePS's test_benchmark
goodput, the metrics every run reports, and small formatting helpers."""

import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = ("libzmq", "off", "on", "on+switch", "on+online", "on+zero")
# "on+online" is on+switch with no hot-keys file: ZEBRA_HOT=online:T (--online-rounds), each
# server's job sized for the profiled hot set's values (online_capacity), its keys found
# during the job; each server writes what it decided to the run's online-<rank>.keys.
# "on+zero" is what a user sets up with zero configuration: ZEBRA_SWITCH alone, and
# `zebra switch --listen` alone (online hot keys, each server's job admitted by the switch
# with an equal share of its memory, the protocol's defaults everywhere).
# A Zebra configuration may run over Zebra's user-level stack instead of the kernel's
# network: "on@dpdk", "on+switch@dpdk" (pslaunch --user-stack; --net netns only).
USER_STACKS = ("dpdk", "raw")
# A configuration with the switch may end in ~P% to drop P % of every hot-path datagram
# sent (ZEBRA_HOT_LOSS on every worker and server, --loss on the switch; seeded with the
# repetition): "on+switch~0.1%", "on+switch@dpdk~1%".
SWITCHED = ("on+switch", "on+online", "on+zero")
# A configuration with the switch may name the workers' synchronization after a slash
# (ZEBRA_SYNC, docs/OSP.md): "on+switch/two-stage", "on+switch/two-stage:2~1%", and after
# a second slash how the census ranks the keys (ZEBRA_SYNC_RANK): "on+online/two-stage/pgp".
LOSS_SUFFIX = re.compile(r"~([0-9]+(?:\.[0-9]+)?)%$")


def split_config(config):
    """"on+switch@dpdk~0.1%" -> ("on+switch", "dpdk", 0.1): the configuration, its
    user-level stack ("" for the kernel's network) and its hot-path loss in percent (None
    without)."""
    m = LOSS_SUFFIX.search(config)
    base, _, stack = (config[:m.start()] if m else config).partition("@")
    return base.partition("/")[0], stack, float(m.group(1)) if m else None


def sync_of(config):
    """"on+switch/two-stage:2~1%" -> "two-stage:2": its ZEBRA_SYNC ("" without; the shim
    checks the value)."""
    return sync_rank_of(config)[0]


def sync_rank_of(config):
    """"on+online/two-stage/pgp~1%" -> ("two-stage", "pgp"): its ZEBRA_SYNC and
    ZEBRA_SYNC_RANK ("" without)."""
    m = LOSS_SUFFIX.search(config)
    sync, _, rank = (config[:m.start()] if m else config).partition("@")[0].partition("/")[2].partition("/")
    return sync, rank


def base_config(config):
    """"on+switch@dpdk~1%" -> "on+switch"; "on+online" is an on+switch configuration too."""
    base = split_config(config)[0]
    return "on+switch" if base in SWITCHED else base


def loss_spec(loss, seed):
    """ZEBRA_HOT_LOSS (and `zebra switch --loss`) dropping `loss` percent of the datagrams."""
    return f"drop={loss / 100:g},seed={seed}"


def hot_keys_of(path):
    """(key, values) of a hot-keys file (`KEY VALUES` or `A-B VALUES` lines), hottest first."""
    with open(path) as f:
        for line in f:
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            first, last = (int(x) for x in fields[0].split("-")) if "-" in fields[0] else (int(fields[0]),) * 2
            values = int(fields[1]) if len(fields) > 1 else 1
            for key in range(first, last + 1):
                yield key, values


def server_of(key, servers):
    """PS-lite's default owner of `key` among `servers`."""
    return min(key // ((2**64 - 1) // servers), servers - 1)


def hot_values_per_server(hot_keys, servers):
    """The values a hot-keys file puts in each PS-lite server's job."""
    per = [0] * servers
    for key, values in hot_keys_of(hot_keys):
        per[server_of(key, servers)] += values
    return per


def online_precision(logdir, hot_keys, servers):
    """For an on+online run: per server, the share of `hot_keys`' top k keys of that server
    that its online decision holds (k the decision's size); None where it wrote none."""
    out = []
    for s in range(servers):
        path = os.path.join(logdir, f"online-{s}.keys")
        if not os.path.exists(path):
            out.append(None)
            continue
        decided = [k for k, _ in hot_keys_of(path)]
        top = [k for k, _ in hot_keys_of(hot_keys) if server_of(k, servers) == s][:len(decided)]
        out.append(len(set(top) & set(decided)) / len(top) if top else None)
    return out
# The switch's metrics (docs/METRICS.md) as pslaunch --scrape saved them: one sample a line.
METRIC_SAMPLE = re.compile(r"^([a-z_]+)(?:\{[^}]*\})? (\d+)$", re.M)
# Every configuration with a switch serves its metrics and has them scraped when the job ends,
# on the loopback of the switch's own network (pslaunch scrapes from inside it): the switch's
# testbed address may belong to Zebra's user-level stack, which a kernel socket cannot bind.
SWITCH_METRICS = ("--metrics 127.0.0.1:{port:metrics}",
                  ["--scrape", "switch=http://127.0.0.1:{port:metrics}/metrics"])
GOODPUT = re.compile(r"Application goodput: ([0-9.eE+-]+) Gbps")
# BytePS's benchmarks race at start-up (tests/suites/byteps-pslite.sh): such a run is retried.
STOCK_RACES = r"Check failed: request_handle_|timeout \(5 sec\) to wait App [0-9]+ customer [0-9]+ ready"
# A trace_replay server that ended well (tests/pslite-app/trace_replay).
REPLAY_SERVER_OK = re.compile(r"^trace_replay: server rank \d+ .* no errors$", re.M)


def trace_gen(out, workers, rounds, keys=200_000, keys_per_push=60, values=32):
    """`zebra trace gen` arguments of an OA-like trace (the paper's Figure 4: the top 0.02 %
    of the keys take 50 % of the updates) written to `out`. The defaults are the small
    workload of bench-allocs and bench-online: 60 of 200,000 keys a push, 32 values a key."""
    return ["trace", "gen", "--out", out, "--shape", "oa", "--keys", str(keys), "--keys-per-push",
            str(keys_per_push), "--workers", str(workers), "--rounds", str(rounds), "--values", str(values)]


def profile(out, trace, servers, p=0.5, switch_mem="64K"):
    """`zebra profile` arguments: the hot keys of `trace` written to `out`. The defaults are
    those of bench-allocs and bench-online: about half of the pushed values, a 64 KB switch."""
    return ["profile", "--out", out, "--p", str(p), "--switch-mem", switch_mem, "--servers", str(servers), trace]


def clean_env():
    """This environment without ZEBRA_* (each configuration sets its own)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("ZEBRA_")}


def switch_unavailable(zebra, hot_keys, servers):
    """Why on+switch cannot run with this build, or None."""
    if not os.access(zebra, os.X_OK):
        return f"{zebra} is missing (scripts/setup.sh builds it)"
    res = subprocess.run([zebra, "switch", "--help"], capture_output=True, text=True)
    if res.returncode != 0:
        return f"`zebra switch --help` failed: {(res.stderr or res.stdout).strip()[:200]}"
    env = dict(clean_env(), ZEBRA_ENABLE="1", ZEBRA_SWITCH="127.0.0.1:9", ZEBRA_HOT_KEYS=hot_keys,
               DMLC_NUM_WORKER="2", DMLC_NUM_SERVER=str(servers))
    res = subprocess.run([zebra, "config"], capture_output=True, text=True, env=env)
    if res.returncode != 0:
        return f"`zebra config` refuses ZEBRA_SWITCH/ZEBRA_HOT_KEYS: {(res.stderr or res.stdout).strip()[:300]}"
    return None


def parser(doc, servers):
    """The options both benchmarks take: worker counts, servers and the testbed's."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=doc)
    p.add_argument("--workers", default="2,4,8", help="worker counts, comma-separated (default 2,4,8)")
    p.add_argument("--servers", type=int, default=servers, help=f"PS-lite servers (default {servers})")
    add_testbed_args(p, "4mbit")
    return p


def worker_counts(p, args):
    counts = [int(n) for n in args.workers.split(",") if n]
    if not counts or min(counts) < 1:
        p.error("bad --workers")
    return counts


def add_testbed_args(p, server_rate):
    """The testbed options both benchmarks take."""
    p.add_argument("--configs", default=",".join(CONFIGS),
                   help=f"comma-separated, of {', '.join(CONFIGS)}; on and on+switch may end in "
                   f"@{'|@'.join(USER_STACKS)} to run every process over Zebra's user-level stack (--net netns); a configuration "
                   "with the switch may end in ~P%% to drop P %% of the hot-path datagrams (e.g. on+switch~0.1%%)")
    p.add_argument("--repeats", type=int, default=2, help="repetitions of every configuration (default 2)")
    p.add_argument("--net", choices=("netns", "loopback"), default="netns", help="pslaunch network (default netns)")
    p.add_argument("--subnet", default="10.98.0.0/24", help="testbed addresses (default 10.98.0.0/24)")
    p.add_argument("--server-rate", default=server_rate,
                   help=f"rate limit of the servers' links (default {server_rate}: below what the job pushes "
                   "on this 2-core machine, so the link is the bottleneck; empty: unshaped)")
    p.add_argument("--shape", choices=("both", "ingress"), default="both",
                   help="--server-rate limits both directions of the servers' links (default), or only what "
                   "they receive (ingress: the pushes, as the bound N/(N(1-h)+h) assumes; pulls unshaped)")
    p.add_argument("--link-rate", default=None, help="rate limit of every other link (default: none)")
    p.add_argument("--link-delay", default=None, help="delay of every link (needs sch_netem)")
    p.add_argument("--hot-config", default=os.path.join(ROOT, "scripts/bench-hot.conf"),
                   help="hot-path settings of on+switch for the switch and every process (ZEBRA_HOT_CONFIG; "
                   "default scripts/bench-hot.conf: full-MTU packets and a round timeout longer than the "
                   "workers' spread on a shaped 2-core testbed)")
    p.add_argument("--online-rounds", type=int, default=10,
                   help="on+online: ZEBRA_HOT=online:T, the pushes of each worker counted (default 10)")
    p.add_argument("--timeout", type=float, default=600, help="seconds per run (default 600)")
    p.add_argument("--shim", default=os.path.join(ROOT, "dist/lib/libzmq.so.5"))
    p.add_argument("--zebra", default=os.path.join(ROOT, "target/release/zebra"))


def parse_configs(p, args):
    configs = [c for c in args.configs.split(",") if c]

    def known(c):
        base, net, loss = split_config(c)
        return (base in CONFIGS and (not net or (net in USER_STACKS and base in ("on",) + SWITCHED))
                and (loss is None or (base in SWITCHED and loss <= 100))
                and (not sync_of(c) or base in SWITCHED))

    if not all(map(known, configs)) or not configs or args.repeats < 1:
        p.error(f"bad --configs/--repeats (configs: {', '.join(CONFIGS)}, on@dpdk, on+switch@dpdk, on+switch~1%, "
                "on+switch/two-stage:2)")
    if any("@" in c for c in configs) and args.net != "netns":
        p.error("a configuration on the user-level stack (@dpdk, @raw) needs --net netns")
    if any(c != "libzmq" for c in configs) and not os.path.exists(args.shim):
        p.error(f"{args.shim} is missing; run scripts/setup.sh")
    return configs


def launch_cmd(args, config, workers, logdir, hot_keys, seed=1):
    """pslaunch.py for one run of `config` with `workers` workers, up to the job's own argv.
    A configuration with the switch writes the shim's statistics to LOGDIR/stats; `seed`
    seeds its hot-path loss (~P%)."""
    cmd = [sys.executable, os.path.join(ROOT, "scripts", "pslaunch.py"), "--net", args.net,
           "--servers", str(args.servers), "--workers", str(workers), "--timeout", str(args.timeout),
           "--quiet", "--logdir", logdir, "--subnet", args.subnet]
    server_flag = "--server-ingress-rate" if args.shape == "ingress" else "--server-rate"
    for flag, value in ((server_flag, args.server_rate), ("--link-rate", args.link_rate),
                        ("--link-delay", args.link_delay)):
        cmd += [flag, value] if value else []
    sync, rank = sync_rank_of(config)
    config, user_stack, loss = split_config(config)
    if sync:
        cmd += ["--env", f"ZEBRA_SYNC={sync}"]
    if rank:
        cmd += ["--env", f"ZEBRA_SYNC_RANK={rank}"]
    if user_stack:
        cmd += ["--user-stack", user_stack]
    if config != "libzmq":
        cmd += ["--preload", args.shim, "--env", f"ZEBRA_ENABLE={0 if config == 'off' else 1}"]
    lossy = ""
    if loss is not None:
        cmd += ["--env", f"ZEBRA_HOT_LOSS={loss_spec(loss, seed)}"]
        lossy = f" --loss {loss_spec(loss, seed)}"
    if config in SWITCHED:
        os.makedirs(os.path.join(logdir, "stats"), exist_ok=True)
        cmd += ["--env", f"ZEBRA_STATS={os.path.join(logdir, 'stats', '%p')}"]
    metrics, scrape = SWITCH_METRICS
    if config == "on+zero":
        cmd += ["--service", f"switch={args.zebra} switch --listen {{ip:switch}}:{{port:switch}} {metrics}{lossy}",
                "--env", "ZEBRA_SWITCH={ip:switch}:{port:switch}"] + scrape
    if config in ("on+switch", "on+online"):
        conf, keys = args.hot_config, f" --hot-keys {hot_keys}"
        if config == "on+online":
            conf, keys = online_config(args, hot_keys, logdir), ""
            cmd += ["--env", f"ZEBRA_HOT=online:{args.online_rounds}"]
        else:
            cmd += ["--env", f"ZEBRA_HOT_KEYS={hot_keys}"]
        cmd += ["--service", f"switch={args.zebra} switch --config {conf} --listen {{ip:switch}}:{{port:switch}} "
                f"{metrics} --workers {{workers}} --servers {{servers}}{keys}{lossy}",
                "--env", "ZEBRA_SWITCH={ip:switch}:{port:switch}", "--env", f"ZEBRA_HOT_CONFIG={conf}"] + scrape
    return cmd + ["--"]


def online_config(args, hot_keys, logdir):
    """The hot-path settings of an on+online run: --hot-config, each server's job sized for
    the values `hot_keys` gives the busiest server, the decisions written to the logdir."""
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(logdir, "online.conf")
    with open(args.hot_config) as f, open(path, "w") as out:
        out.write(f.read())
        out.write(f"\nonline_capacity = {max(hot_values_per_server(hot_keys, args.servers))}\n"
                  f"online_out = {json.dumps(f'{logdir}/online-%r.keys')}\n")  # a TOML string
    return path


def alternate(items, rep):
    """The order of `items` in repetition `rep` (from 1): as given, then reversed, so that a
    slow spell of the machine hits every configuration alike."""
    return items if rep % 2 else list(reversed(items))


def test_benchmark_goodput(binary, logdir, size, rounds, launcher_args, log_every=4):
    """BytePS PS-lite's test_benchmark (1 server, 2 workers, PUSH_PULL) through pslaunch with
    `launcher_args` (preload, network, ...), reporting its goodput every `log_every` rounds
    (LOG_DURATION): the workers' mean goodput in Gbps, the first report of each left out
    (warm-up), or None when the job failed; and pslaunch's output."""
    cmd = [sys.executable, os.path.join(ROOT, "scripts/pslaunch.py"), "--servers", "1", "--workers", "2",
           "--timeout", "300", "--quiet", "--logdir", logdir, "--env", f"LOG_DURATION={log_every}",
           "--retry-if", STOCK_RACES] + list(launcher_args) + ["--", binary, str(size), str(rounds), "1"]
    res = subprocess.run(cmd, capture_output=True, text=True, env=clean_env())
    values = []
    if res.returncode == 0:
        for name in sorted(os.listdir(logdir)):
            if name.startswith("worker-"):
                with open(os.path.join(logdir, name), errors="replace") as f:
                    values += [float(m.group(1)) for m in GOODPUT.finditer(f.read())][1:]
    return (statistics.mean(values) if values else None), res.stdout + res.stderr


def run_plan(configs, counts, repeats, out, command, parse, describe, log):
    """Runs every configuration for every worker count, `repeats` times, the order of the
    configurations alternating between repetitions so that a slow spell of the machine
    hits them alike. `command(config, n, logdir, rep)` is the pslaunch argv of one run,
    `parse(logdir, n)` its metrics, `describe(metrics)` a line for the log. Returns the
    runs, each with workers, config and repeat."""
    plan = [(rep, n, c) for rep in range(1, repeats + 1) for n in counts for c in alternate(configs, rep)]
    runs = []
    for i, (rep, n, c) in enumerate(plan, 1):
        logdir = os.path.join(out, "logs", f"N{n}-{c.replace('/', '_')}-{rep}")
        log(f"[{i}/{len(plan)}] N={n} {c} repetition {rep} ...")
        res = subprocess.run(command(c, n, logdir, rep), env=clean_env(), capture_output=True, text=True)
        if res.returncode != 0 or not os.path.exists(os.path.join(logdir, "pslaunch.json")):
            log(f"  failed: {(res.stderr or res.stdout).strip().splitlines()[:3]}")
            runs.append({"workers": n, "config": c, "repeat": rep, "ok": False, "curve": []})
            continue
        r = parse(logdir, n)
        r.update(workers=n, config=c, repeat=rep)
        runs.append(r)
        log(f"  {describe(r)}")
    return runs


def run_report(logdir):
    """What every run reports: success, server ingress and egress bytes (the servers' veth
    counters, which count libzmq's traffic as well as Zebra's) and, beside a switch, its sums."""
    with open(os.path.join(logdir, "pslaunch.json")) as f:
        report = json.load(f)
    ingress = egress = None
    nets = [n["net"] for name, n in report["nodes"].items() if name.startswith("server-")]
    if nets and all(nets):
        ingress = sum(n["rx_bytes"] for n in nets)
        egress = sum(n["tx_bytes"] for n in nets)
    out = {"ok": report["ok"], "server_ingress_bytes": ingress, "server_egress_bytes": egress,
           "elapsed_s": report["elapsed_s"]}
    if os.path.isdir(os.path.join(logdir, "stats")):
        out.update(hot_path_report(logdir))
    metrics = switch_metrics(logdir)
    if metrics:
        out.update(switch_pairs=metrics.get("zebra_switch_pairs_summed_total", 0),
                   rounds_completed=metrics.get("zebra_switch_rounds_completed_total", 0),
                   rounds_flushed=metrics.get("zebra_switch_rounds_flushed_total", 0))
    return out


def switch_metrics(logdir):
    """The switch's metrics scraped as its job ended (LOGDIR/switch.metrics), each summed over
    its labels (every job, and what no job counted): {name: value}; {} without them."""
    path = os.path.join(logdir, "switch.metrics")
    if not os.path.exists(path):
        return {}
    totals = {}
    with open(path, errors="replace") as f:
        for name, value in METRIC_SAMPLE.findall(f.read()):
            totals[name] = totals.get(name, 0) + int(value)
    return totals


def hot_path_report(logdir):
    """From the shim's statistics (LOGDIR/stats) and the switch's log: the workers' hot-path
    packets, how many they resent on a timeout and gave up, their smoothed round-trip
    times, and the datagrams the injectors dropped (every node and the switch)."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))
    import chaoslib  # noqa: E402  (scripts/, beside this file)
    import hotpath  # noqa: E402

    links = []
    for path in glob.glob(os.path.join(logdir, "stats", "*")):
        with open(path, errors="replace") as f:
            links += [l for l in f.read().splitlines() if "WorkerLinkStats" in l]
    worker = [l.split("updates:")[0] for l in links]  # WorkerStats, before the update receiver's
    srtt = sorted(int(v) for l in worker for v in re.findall(r"\bsrtt_us: (\d+)", l))
    faults = chaoslib.faults(logdir)
    return {"hot_packets": sum(hotpath.field(l, "packets") for l in worker),
            "retransmits": sum(hotpath.field(l, "retransmits") for l in worker),
            "given_up": sum(hotpath.field(l, "given_up") for l in worker),
            "srtt_ms": srtt[len(srtt) // 2] / 1000 if srtt else None,
            "hot_dropped": faults["dropped"], "hot_sent": faults["offered"]}


def worker_logs(logdir):
    text = ""
    for name in sorted(os.listdir(logdir)):
        if name.startswith("worker-") and name.endswith(".log"):
            with open(os.path.join(logdir, name), errors="replace") as f:
                text += f.read()
    return text


def medians(rs, **keys):
    """Over the successful runs of `rs`: how many, and per name the median of run[key]
    (runs without it left out)."""
    ok = [r for r in rs if r["ok"]]
    return dict(ok=len(ok), **{name: median([r.get(key) for r in ok]) for name, key in keys.items()})


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def bound(n, h):
    """The speed-up in-network aggregation can give N workers whose pushes hold a share h of
    hot values at a server-bound job: N pushes' hot values arrive once (paper §II)."""
    return None if h is None else n / (n * (1 - h) + h)


def pyplot(log):
    """matplotlib's pyplot with the Agg backend, or None (logged) when it is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib is missing (scripts/setup.sh --clients installs it): no plots")
        return None
    return plt
