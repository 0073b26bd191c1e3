//! The contract on a simulated PS-lite job: workers and servers built from
//! real PS-lite messages (`zebra-pslite`), the agents, zebra-proto's
//! `Worker`, `Switch` and `Server`, on simulated time. ZeroMQ links are
//! reliable and in order (TCP); UDP links have a seeded fault injector
//! (loss, duplication, 50–550 µs delay, so reordering), and the switch
//! can be dead for a while or for good. The server app sums what it gets
//! and counts requests per worker and key, as a PS-lite server that counts
//! pushes would.
//!
//! Every scenario runs twice: vanilla (every push whole to its server) and
//! with Zebra. The app's final sums must be equal exactly (integer-valued
//! floats), the per-worker request counts equal (per-worker delivery), and
//! every pull that follows a push must see that push applied: probe keys
//! carry `64^rank` per push, so the pulled value's base-64 digit `rank`
//! counts the worker's pushes the server has applied.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use zebra_agent::{
    AgentConfig, Delivery, EarlyAnswers, Frames, FromServer, HotSet, KeyRanges, OnlineConfig,
    Outgoing, PullAgent, PullConfig, PullSend, RowUpdate, ServerAgent, SwitchHeard, SyncMode,
    WorkerAgent,
};
use zebra_proto::rng::SplitMix64;
use zebra_proto::{
    Config, Server, ServerAction, Switch, SwitchAction, SwitchChoice, SwitchWatch, Timestamp,
    Worker, WorkerAction,
};
use zebra_pslite::{
    identity, node_id, rank_of, response, server_id, with_kv, worker_id, Command, DataType, Format,
    FormatChoice, KvData, KvView, Message, Meta, Route,
};

const JOB_BASE: u16 = 40;
/// Distinct keys per server; the first `HOT` are hot (hottest first).
const KEYS: u64 = 60;
const HOT: u64 = 16;
/// Key offsets whose values encode who pushed them (two hot, one cold).
const PROBES: [u64; 3] = [0, 1, 30];
const DIGIT: f64 = 64.0;
/// A worker's pushes of one probe key, at most (one base-64 digit).
const PROBE_CAP: u32 = 63;
/// Failover: a server's REGISTER keep-alive, and how long the switch in use
/// may leave it unanswered before the server moves its job (the shim's 1 s
/// and 3 s, scaled as this simulation's other timeouts are).
const KEEPALIVE: u64 = 20_000;
const FAILOVER: Duration = Duration::from_millis(60);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    /// BytePS: FLOAT values, lens frame, raw meta.
    Byteps,
    /// MXNet: OTHER (char) values, lens in bytes, protobuf meta.
    Mxnet,
    /// FLOAT values without lens: every key the same length.
    Uniform,
}

impl Style {
    fn format(self) -> Format {
        match self {
            Style::Mxnet => Format::Protobuf,
            Style::Byteps | Style::Uniform => Format::Byteps,
        }
    }

    fn val_type(self) -> DataType {
        match self {
            Style::Mxnet => DataType::Other,
            Style::Byteps | Style::Uniform => DataType::Float,
        }
    }

    fn lens(self) -> bool {
        self != Style::Uniform
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Vanilla,
    Zebra,
}

#[derive(Debug, Clone)]
struct Scenario {
    seed: u64,
    loss: f64,
    rounds: u32,
    workers: u16,
    servers: u16,
    /// (worker, last push).
    stops: Vec<(u16, u32)>,
    straggler: Option<u16>,
    /// A worker that pushes every 6 ms instead of every 4 (asynchronous
    /// SGD: the others run ahead of it whenever nothing waits for it).
    slow: Option<u16>,
    /// UDP to and from the switch dropped in `[from, to)` µs.
    dead_switch: Option<(u64, u64)>,
    /// Switch → worker UDP dropped in `[from, to)` µs: added, never acknowledged.
    dead_acks: Option<(u64, u64)>,
    /// The switch killed at `.0` µs and started again at `.1` µs (nothing
    /// crosses it in between; the new one has none of the old one's state);
    /// the servers see its new epoch `.2` µs after that (their REGISTER
    /// keep-alive).
    restart: Option<(u64, u64, u64)>,
    /// A standby switch beside the primary, which is killed at this time
    /// (µs) for good: each server watches the switch it uses with a
    /// REGISTER every [`KEEPALIVE`] (`zebra_proto::SwitchWatch`, moving after
    /// [`FAILOVER`] without an answer) and, once the standby answers, tells
    /// its workers (`ServerAgent::on_switch_moved`).
    failover: Option<u64>,
    /// With `failover`: the primary is not killed but cut off from the
    /// servers alone for this long (µs; it goes on answering the workers
    /// until they move, and resending its aggregates, which reach the
    /// servers again after the cut).
    partition: Option<u64>,
    /// Every server learns at `.0` µs that the switch has left its REGISTER
    /// unanswered for `.0` µs (`ServerAgent::on_switch`, what the
    /// shim does after `register_wait_ms`), and, if `.1` is set, at `.1` µs
    /// that it answered.
    silent: Option<(u64, Option<u64>)>,
    style: Style,
    delivery: Delivery,
    /// Pushes may skip a server (its rounds then misalign across workers).
    skip_servers: bool,
    /// Every push carries every hot key of every server (dense hot part).
    dense: bool,
    /// Pushes outstanding per worker.
    window: usize,
    packet_size: usize,
    /// Worker 0 alone first pushes this many times (MXNet's `kv.init`), and
    /// then, if not zero, every worker passes a PS-lite barrier before its
    /// first push of the plan (worker 0 once its init pushes are answered).
    init_pushes: u32,
    /// Online hot keys, starting from the wrong guess: keys `HOT..2 HOT`
    /// (cold ones) instead of `0..HOT`.
    online: Option<OnlineConfig>,
    /// Online hot keys from no key at all, each server's job sized for
    /// `HOT` keys.
    online_from_nothing: bool,
    /// The pull half (`zebra_agent::pull`): after each answered push a
    /// worker pulls every hot key of each server it pushed to (and two cold
    /// ones), and pushes again only once that pull is answered; every
    /// answer's hot values must be the server app's at the time the pull
    /// was sent.
    pull: bool,
    /// `ZEBRA_SYNC` (`zebra_agent::sync`): in two-stage a worker's push
    /// is answered once its hot part settled (its window frees then), and
    /// a probe pull may see up to the staleness fewer of its pushes.
    sync: SyncMode,
    /// A job for `ZEBRA_SYNC_RANK=pgp`: every push carries keys
    /// `0..HOT + HEAVY` (probes as usual), those from `HOT` on with
    /// gradients [`HEAVY_SCALE`] times larger, and the pull after each push
    /// reads every key it carried (a training step's parameters).
    weights: bool,
}

/// Keys past the hot ones that a [`Scenario::weights`] job pushes heavily.
const HEAVY: u64 = 4;
const HEAVY_SCALE: f32 = 1000.0;

impl Scenario {
    fn new(seed: u64, loss: f64) -> Scenario {
        Scenario {
            seed,
            loss,
            rounds: 200,
            workers: 4,
            servers: 2,
            stops: vec![(3, 150)],
            straggler: Some(1),
            slow: None,
            dead_switch: None,
            dead_acks: None,
            restart: None,
            failover: None,
            partition: None,
            silent: None,
            style: Style::Byteps,
            delivery: Delivery::PerWorker,
            skip_servers: false,
            dense: false,
            window: 2,
            packet_size: 192,
            init_pushes: 0,
            online: None,
            online_from_nothing: false,
            pull: false,
            sync: SyncMode::Exact,
            weights: false,
        }
    }

    fn len_of(&self, j: u64) -> u32 {
        match self.style {
            Style::Uniform => 4,
            Style::Byteps | Style::Mxnet => 4 + (j % 5) as u32,
        }
    }

    fn key(&self, server: u16, j: u64) -> u64 {
        KeyRanges::pslite(self.servers)
            .range(server)
            .map_or(0, |r| r.start)
            + 3
            + 7 * j
    }

    fn hot_set(&self) -> HotSet {
        if self.online_from_nothing {
            let capacity = (0..HOT).map(|j| self.len_of(j)).sum();
            return HotSet::new([], KeyRanges::pslite(self.servers))
                .unwrap()
                .with_capacity(capacity)
                .unwrap();
        }
        // Online re-ranking starts from the wrong keys; a hot-keys file's
        // watcher (`OnlineConfig::file`) from the right ones.
        let first = if self.online.as_ref().is_some_and(|o| !o.fixed) {
            HOT
        } else {
            0
        };
        let list = (first..first + HOT).flat_map(|j| (0..self.servers).map(move |s| (s, j)));
        let keys: Vec<(u64, u32)> = list
            .map(|(s, j)| (self.key(s, j), self.len_of(j)))
            .collect();
        HotSet::new(keys, KeyRanges::pslite(self.servers)).unwrap()
    }

    fn agent_config(&self) -> AgentConfig {
        let mut c = AgentConfig::new(JOB_BASE, self.workers, self.servers);
        c.delivery = self.delivery;
        c.settle_timeout = Duration::from_secs(5);
        c.max_clean_values = 64;
        c.online = self.online.clone();
        c.sync = self.sync;
        c.pull = self.pull.then_some(PullConfig {
            gate: Duration::from_millis(200),
            wait: Duration::from_millis(2),
            expiry: Duration::from_secs(1),
        });
        c
    }

    fn proto_config(&self, hot: &HotSet) -> Config {
        let mut c = Config::new(hot.job_configs(&self.agent_config()));
        c.registers = 8;
        c.slots = 64;
        c.packet_size = self.packet_size;
        c.max_seqs = 64;
        c.round_timeout = Duration::from_millis(20);
        c.aggregate_rto = Duration::from_millis(2);
        c.aggregate_max_retries = 400;
        c.worker_rto = Duration::from_millis(2);
        c.worker_max_retries = 8;
        c.worker_max_in_flight = 16;
        c.uncertain_timeout = Duration::from_millis(50);
        c.server_history = 64;
        c
    }
}

/// One PS-lite push: when it is due and its slice for each server.
#[derive(Debug, Clone)]
struct Push {
    at: u64,
    /// A barrier comes first.
    barrier: bool,
    parts: Vec<(u16, KvData)>,
}

fn plans(s: &Scenario) -> Vec<Vec<Push>> {
    let mut rng = SplitMix64::new(s.seed ^ 0x005E_EDF0_A6E7);
    let mut probe_count: BTreeMap<(u16, u16, u64), u32> = BTreeMap::new();
    let mut all = Vec::new();
    for w in 0..s.workers {
        let last = s.stops.iter().find(|x| x.0 == w).map_or(s.rounds, |x| x.1);
        let init = if w == 0 { s.init_pushes } else { 0 };
        let mut plan = Vec::new();
        for round in 1..=last + init {
            let period = if s.slow == Some(w) { 6_000 } else { 4_000 };
            let mut at = u64::from(round) * period + rng.below(1_000);
            if s.straggler == Some(w) && rng.chance(0.3) {
                at += 10_000 + rng.below(40_000);
            }
            let mut parts = Vec::new();
            for server in 0..s.servers {
                if s.skip_servers && rng.chance(0.2) {
                    continue;
                }
                let mut js: BTreeMap<u64, bool> = BTreeMap::new();
                if s.dense {
                    js.extend((0..HOT).map(|j| (j, false)));
                }
                if s.weights {
                    js.extend((0..HOT + HEAVY).map(|j| (j, false)));
                }
                for _ in 0..3 + rng.below(6) {
                    let u = rng.unit();
                    js.insert(((u * u * u) * KEYS as f64) as u64, false);
                }
                for _ in 0..1 + rng.below(4) {
                    js.insert(HOT + rng.below(KEYS - HOT), false);
                }
                for p in PROBES {
                    js.remove(&p);
                    let n = probe_count.entry((w, server, p)).or_default();
                    if *n < PROBE_CAP && rng.chance(0.3) {
                        *n += 1;
                        js.insert(p, true);
                    }
                }
                let mut kv = KvData::empty(s.style.val_type(), s.style.lens());
                for (&j, &probe) in &js {
                    let vals: Vec<f32> = (0..s.len_of(j))
                        .map(|_| {
                            if probe {
                                DIGIT.powi(i32::from(w)) as f32
                            } else if s.weights && j >= HOT {
                                (rng.below(17) as f32 - 8.0) * HEAVY_SCALE
                            } else {
                                rng.below(17) as f32 - 8.0
                            }
                        })
                        .collect();
                    kv.push_entry(s.key(server, j), &zebra_agent::values::encode(&vals));
                }
                parts.push((server, kv));
            }
            plan.push(Push {
                at,
                barrier: s.init_pushes > 0 && round == init + 1,
                parts,
            });
        }
        all.push(plan);
    }
    all
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Node {
    Switch,
    /// The standby switch (`Scenario::failover`).
    Standby,
    Worker(u16),
    Server(u16),
}

#[derive(Debug)]
enum Event {
    /// A datagram reaching `.0`, sent by `.1`.
    Udp(Node, Node, Vec<u8>),
    /// A message a ROUTER receives (sender identity first).
    Zmq(Node, Frames),
    /// A message worker `w`'s DEALER receives from a server's ROUTER.
    Dealer(u16, Frames),
    /// Pull half: server `1`'s update reaching worker `0`.
    Update(u16, u16, RowUpdate),
    /// Pull half: server `i`'s last BREAK reached every worker.
    BreakSettled(u16),
    /// The switch is started again: a new one, with nothing of the old.
    SwitchStart,
    /// Server `i` sees the switch's new epoch.
    Epoch(u16),
    /// Failover: server `i` sends a REGISTER keep-alive to the switch it uses.
    Keepalive(u16),
    /// Failover: switch `.1` answers server `.0`'s REGISTER.
    Registered(u16, SwitchChoice),
    /// Server `i` learns the switch is silent (`Some(waited)`) or answered.
    Silent(u16, Option<std::time::Duration>),
    /// Two-stage: worker `w`'s library answers one of its pushes.
    Answer(u16, Frames),
}

/// A worker's BARRIER request to the scheduler (group: workers).
fn barrier_request(format: Format) -> Frames {
    let mut m = Meta::new();
    m.request = true;
    m.control.cmd = Command::Barrier;
    m.control.barrier_group = 4;
    Message {
        meta: m,
        data: Vec::new(),
    }
    .to_frames(format)
    .unwrap()
}

fn meta(ts: i32, push: bool) -> Meta {
    let mut m = Meta::new();
    (m.head, m.app_id, m.customer_id, m.timestamp) = (0, 0, 0, ts);
    (m.request, m.push, m.pull) = (true, push, !push);
    m
}

/// The node of switch `choice`.
fn switch_node(choice: SwitchChoice) -> Node {
    match choice {
        SwitchChoice::Primary => Node::Switch,
        SwitchChoice::Standby => Node::Standby,
    }
}

fn floats(bytes: &[u8]) -> Vec<f32> {
    zebra_agent::values::decode(bytes).collect()
}

fn kv_entries(msg: &Message) -> Vec<(u64, Vec<f32>)> {
    let Some(view) = msg.kv().unwrap() else {
        return Vec::new();
    };
    view.entries()
        .unwrap()
        .map(|(k, b, _)| (k, floats(b)))
        .collect()
}

/// The PS-lite server app: adds pushes into its store, counts requests per
/// worker and key, answers pulls from the store.
#[derive(Debug, Default)]
struct App {
    store: BTreeMap<u64, Vec<f32>>,
    /// Pull half: every value each key held, and from when (µs).
    history: BTreeMap<u64, Vec<(u64, Vec<f32>)>>,
    counts: BTreeMap<(u16, u64), u32>,
}

struct WorkerNode {
    agent: Option<WorkerAgent>,
    hot: BTreeMap<u16, Worker>,
    /// Failover: the switch each job's hot packets go to (absent: the
    /// primary), as the job's server last said.
    on: BTreeMap<u16, SwitchChoice>,
    plan: VecDeque<Push>,
    ts: i32,
    /// Push timestamp → responses still awaited.
    outstanding: BTreeMap<i32, usize>,
    /// (pull timestamp, server) → (key, pushes of it this worker sent).
    checks: BTreeMap<(i32, u16), Vec<(u64, u32)>>,
    sent: BTreeMap<(u16, u64), u32>,
    /// Sent its BARRIER request.
    at_barrier: bool,
    /// Pull half.
    pulls: Option<PullAgent>,
    /// Hot pulls not sent yet: (first offered, server, request).
    waiting: Vec<(Timestamp, u16, Frames)>,
    /// Hot pulls sent or answered, by timestamp and server.
    hot_pending: BTreeMap<(i32, u16), HotPull>,
    /// Two-stage: the worker's early answers.
    early: Option<EarlyAnswers>,
}

/// The pull after a push, to one server: the keys pulled, and the probe
/// keys among them with the worker's pushes of each so far.
type ProbePull = (u16, Vec<u64>, Vec<(u64, u32)>);

/// A hot pull sent or answered: how, and the server app's hot values when
/// it was sent.
type HotPull = (&'static str, BTreeMap<u64, Vec<f32>>, u64);

impl WorkerNode {
    /// Whether the worker waits for its hot pulls before pushing again.
    fn pulling(&self) -> bool {
        !self.waiting.is_empty() || !self.hot_pending.is_empty()
    }
}

struct ServerNode {
    agent: Option<ServerAgent>,
    hot: Option<Server>,
    /// Failover: the server link's watch on the switch it uses, and whether
    /// it moved and waits for the other switch's first answer.
    watch: Option<SwitchWatch>,
    moving: bool,
    app: App,
    /// Pull half: updates sent, and when the last one reaches each worker
    /// (updates of one server arrive in order).
    update_seq: u32,
    update_at: BTreeMap<u16, u64>,
    zmq_bytes: u64,
    udp_bytes: u64,
}

#[derive(Debug, Default)]
struct Outcome {
    store: BTreeMap<u64, Vec<f32>>,
    counts: BTreeMap<(u16, u16, u64), u32>,
    checks: u64,
    zmq_bytes: u64,
    udp_bytes: u64,
    trailer_bytes: u64,
    settle_bytes: u64,
    hot_entry_bytes: u64,
    fallback_pairs: u64,
    flushed: u64,
    completed: u64,
    late: u64,
    /// Hot packets the switch refused because the copy of their round
    /// still held an older open round (FALLBACK `WindowFull`).
    window_full: u64,
    uncertain_covered: u64,
    /// Restarts: SETTLEs with RESEND the servers took, and dropped as not
    /// needed; rounds the workers sent to the servers only.
    resettles: u64,
    resettles_late: u64,
    bypassed_rounds: u64,
    /// When the last answer reached a worker (the job's end; the agents'
    /// timers may go on).
    end_ms: u64,
    /// Online: servers that changed their hot keys, pushes sent whole.
    online_changed: u64,
    /// Online: servers that stepped aside, times they counted again.
    online_aside: u64,
    online_recounts: u64,
    /// Pull half: servers whose pull half stood aside, pushes its gate
    /// held to the timeout.
    pull_aside: u64,
    pull_gate_timeouts: u64,
    whole_pushes: u64,
    closed_rounds: u64,
    /// Online: each server's hot keys at the end, hottest first.
    final_keys: Vec<Vec<u64>>,
    /// Pull half: hot pulls checked against the server app, answered by
    /// the worker alone, merged with the server's answer.
    hot_checks: u64,
    pull_local: u64,
    pull_merged: u64,
    /// Two-stage: pushes answered early, answers checked against the
    /// servers'; pulls the servers let pass held pushes, and the pushes
    /// (of a probe key) the probe pulls did not see in all.
    early: u64,
    early_verified: u64,
    /// When the last answer the app read reached it.
    app_end_ms: u64,
    stale_pulls: u64,
    stale_most: u64,
    stale_digits: u64,
    /// Failover: moves the servers told their workers of, and the rounds
    /// whose aggregate each server took from the primary and the standby.
    moves: u64,
    standby_rounds: u64,
    aggregated_at: BTreeMap<(u16, u32), Vec<Node>>,
}

struct Sim {
    s: Scenario,
    mode: Mode,
    hot: Arc<HotSet>,
    now: u64,
    seq: u64,
    queue: BinaryHeap<Reverse<(u64, u64)>>,
    items: BTreeMap<u64, Event>,
    udp_links: BTreeMap<(Node, Node), SplitMix64>,
    zmq_links: BTreeMap<(Node, Node), (SplitMix64, u64)>,
    switch: Option<Switch>,
    standby: Option<Switch>,
    workers: Vec<WorkerNode>,
    servers: Vec<ServerNode>,
    out: Outcome,
    /// Pushes of each (worker, server, key) sent before the last barrier.
    before_barrier: BTreeMap<(u16, u16, u64), u32>,
}

impl Sim {
    fn new(s: &Scenario, mode: Mode) -> Sim {
        let hot = Arc::new(s.hot_set());
        let cfg = s.agent_config();
        let proto = s.proto_config(&hot);
        let zebra = mode == Mode::Zebra;
        let workers = plans(s)
            .into_iter()
            .enumerate()
            .map(|(w, plan)| {
                let w = w as u16;
                WorkerNode {
                    agent: zebra.then(|| WorkerAgent::new(cfg.clone(), hot.clone(), w).unwrap()),
                    on: BTreeMap::new(),
                    hot: proto
                        .jobs
                        .iter()
                        .filter(|_| zebra)
                        .map(|j| (j.id, Worker::new(&proto, j.id, w).unwrap()))
                        .collect(),
                    plan: plan.into(),
                    ts: 0,
                    outstanding: BTreeMap::new(),
                    checks: BTreeMap::new(),
                    sent: BTreeMap::new(),
                    at_barrier: false,
                    pulls: cfg.pull.filter(|_| zebra).map(|c| {
                        PullAgent::new(
                            c,
                            FormatChoice::Auto,
                            KeyRanges::pslite(s.servers),
                            (0, 0),
                            4,
                        )
                    }),
                    waiting: Vec::new(),
                    hot_pending: BTreeMap::new(),
                    early: (zebra && s.sync.two_stage())
                        .then(|| EarlyAnswers::new(w, FormatChoice::Auto, (0, 0), 4)),
                }
            })
            .collect();
        let servers = (0..s.servers)
            .map(|i| {
                let agent = zebra.then(|| ServerAgent::new(cfg.clone(), hot.clone(), i).unwrap());
                let job = agent.as_ref().and_then(ServerAgent::job);
                ServerNode {
                    hot: job.map(|j| Server::new(&proto, j, 0).unwrap()),
                    watch: (job.is_some() && s.failover.is_some())
                        .then(|| SwitchWatch::new(Timestamp::ZERO, true, FAILOVER)),
                    moving: false,
                    agent,
                    app: App::default(),
                    update_seq: 0,
                    update_at: BTreeMap::new(),
                    zmq_bytes: 0,
                    udp_bytes: 0,
                }
            })
            .collect();
        Sim {
            s: s.clone(),
            mode,
            hot,
            now: 0,
            seq: 0,
            queue: BinaryHeap::new(),
            items: BTreeMap::new(),
            udp_links: BTreeMap::new(),
            zmq_links: BTreeMap::new(),
            switch: zebra.then(|| Switch::new(proto.clone()).unwrap()),
            standby: (zebra && s.failover.is_some()).then(|| Switch::new(proto.clone()).unwrap()),
            workers,
            servers,
            out: Outcome::default(),
            before_barrier: BTreeMap::new(),
        }
    }

    fn enqueue(&mut self, at: u64, e: Event) {
        self.seq += 1;
        self.queue.push(Reverse((at, self.seq)));
        self.items.insert(self.seq, e);
    }

    fn link_rng(&self, from: Node, to: Node, salt: u64) -> SplitMix64 {
        let h = format!("{from:?}->{to:?}")
            .bytes()
            .fold(self.s.seed ^ salt, |a, b| {
                a.wrapping_mul(31).wrapping_add(u64::from(b))
            });
        SplitMix64::new(h)
    }

    /// A datagram: dropped with `loss`, duplicated with `loss / 2`, delayed
    /// 50..=550 µs; nothing crosses a dead switch.
    fn udp(&mut self, from: Node, to: Node, bytes: Vec<u8>) {
        let within = |w: Option<(u64, u64)>, t: u64| w.is_some_and(|(a, b)| (a..b).contains(&t));
        let killed = self.primary_killed() && (from == Node::Switch || to == Node::Switch)
            || self.partitioned()
                && matches!(
                    (from, to),
                    (Node::Switch, Node::Server(_)) | (Node::Server(_), Node::Switch)
                );
        if killed
            || within(self.s.restart.map(|r| (r.0, r.1)), self.now)
            || within(self.s.dead_switch, self.now)
            || (from == Node::Switch
                && matches!(to, Node::Worker(_))
                && within(self.s.dead_acks, self.now))
        {
            return;
        }
        if !self.udp_links.contains_key(&(from, to)) {
            let rng = self.link_rng(from, to, 0xD1);
            self.udp_links.insert((from, to), rng);
        }
        let loss = self.s.loss;
        let Some(rng) = self.udp_links.get_mut(&(from, to)) else {
            return;
        };
        if rng.chance(loss) {
            return;
        }
        let copies = if rng.chance(loss / 2.0) { 2 } else { 1 };
        let delays: Vec<u64> = (0..copies).map(|_| 50 + rng.below(501)).collect();
        for d in delays {
            self.enqueue(self.now + d, Event::Udp(to, from, bytes.clone()));
        }
    }

    /// A ZeroMQ message on a TCP connection: reliable and in order,
    /// 80–120 µs plus 1 µs per 100 bytes.
    fn zmq(&mut self, from: Node, to: Node, frames: Frames) {
        let bytes: usize = frames.iter().map(Vec::len).sum();
        if !self.zmq_links.contains_key(&(from, to)) {
            let rng = self.link_rng(from, to, 0x2E);
            self.zmq_links.insert((from, to), (rng, 0));
        }
        let now = self.now;
        let Some((rng, last)) = self.zmq_links.get_mut(&(from, to)) else {
            return;
        };
        let at = (now + 80 + rng.below(41) + bytes as u64 / 100).max(*last);
        *last = at;
        self.enqueue(at, Event::Zmq(to, frames));
    }

    /// What server `i`'s agent sends on its ROUTER (online decisions), to
    /// the DEALER of the worker each is addressed to.
    fn server_control(&mut self, i: u16) {
        let msgs = match &mut self.servers[i as usize].agent {
            Some(agent) => agent.take_control(),
            None => return,
        };
        for m in msgs {
            let w = rank_of(node_id(&m[0]).expect("a worker identity")) as u16;
            let at = self.now + 100;
            self.enqueue(at, Event::Dealer(w, m[1..].to_vec()));
        }
    }

    fn send_push(&mut self, w: u16) {
        let now = Timestamp(self.now);
        let format = self.s.style.format();
        let node = &mut self.workers[w as usize];
        let Some(push) = node.plan.pop_front() else {
            return;
        };
        if push.barrier {
            // Past a barrier, every push any worker sent before it is
            // applied (as on libzmq: each was answered before its worker
            // entered the barrier; two-stage holds the BARRIER request until
            // the servers' answers are in).
            for (&(v, server, key), &n) in &self.before_barrier {
                let applied = self.servers[server as usize].app.counts.get(&(v, key));
                assert!(
                    applied.is_some_and(|&a| a >= n),
                    "worker {w} left the barrier: worker {v}'s {n} pushes of key {key:#x} to \
                     server {server} before it, {applied:?} applied"
                );
            }
        }
        let node = &mut self.workers[w as usize];
        node.ts += 1;
        let ts = node.ts;
        if !push.parts.is_empty() {
            node.outstanding.insert(ts, push.parts.len());
        }
        let id = identity(worker_id(i32::from(w)));
        // (server, keys pulled, the probe keys among them with their pushes).
        let mut probes: Vec<ProbePull> = Vec::new();
        for (server, kv) in push.parts {
            let frames = with_kv(&meta(ts, true), &kv)
                .unwrap()
                .to_frames(format)
                .unwrap();
            let lens_bytes = if kv.lens.is_some() { 4 } else { 0 };
            for &key in &kv.keys {
                if let Some(h) = self.hot.get(key) {
                    self.out.hot_entry_bytes += 8 + 4 * u64::from(h.len) + lens_bytes;
                }
            }
            let node = &mut self.workers[w as usize];
            let mut mine = Vec::new();
            for &key in &kv.keys {
                let n = node.sent.entry((server, key)).or_default();
                *n += 1;
                if PROBES.iter().any(|&p| self.s.key(server, p) == key) {
                    mine.push((key, *n));
                }
            }
            if self.s.weights {
                probes.push((server, kv.keys.clone(), mine));
            } else if !mine.is_empty() {
                probes.push((server, mine.iter().map(|k| k.0).collect(), mine));
            }
            let refs: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
            let outgoing = match &mut node.agent {
                Some(agent) => agent.on_send(server, &refs),
                None => Outgoing::Unchanged,
            };
            if let (Some(e), Outgoing::Split(sp)) = (&mut node.early, &outgoing) {
                e.on_split(&refs, sp);
            }
            if let (Some(pulls), Some(agent)) = (&mut node.pulls, &node.agent) {
                let split = match &outgoing {
                    Outgoing::Split(sp) if sp.to_switch => Some((sp.server, sp.round)),
                    _ => None,
                };
                let sent = pulls.on_send(now, now, &refs, split, |s, k| agent.hot_key(s, k));
                assert_eq!(sent, PullSend::Unchanged, "a push goes as it is");
            }
            let (job, acts, frames) = match outgoing {
                Outgoing::Unchanged => (0, Vec::new(), frames),
                Outgoing::Split(sp) => {
                    let hot = node.hot.get_mut(&sp.job).expect("a worker per job");
                    let mut acts = Vec::new();
                    for round in sp.closes.into_iter().flatten() {
                        acts.extend(hot.push(now, round, Vec::new()).unwrap());
                    }
                    if sp.to_switch {
                        acts.extend(hot.push(now, sp.round, sp.pairs).unwrap());
                    }
                    (sp.job, acts, sp.frames)
                }
            };
            let mut msg = vec![id.clone()];
            msg.extend(frames);
            self.zmq(Node::Worker(w), Node::Server(server), msg);
            self.worker_acts(w, job, acts);
        }
        let node = &mut self.workers[w as usize];
        node.ts += 1;
        let pull_ts = node.ts;
        let mut pulls = Vec::new();
        for (server, keys, mine) in probes {
            let mut kv = KvData::empty(self.s.style.val_type(), false);
            kv.keys = keys;
            node.checks.insert((pull_ts, server), mine);
            let mut msg = vec![id.clone()];
            msg.extend(
                with_kv(&meta(pull_ts, false), &kv)
                    .unwrap()
                    .to_frames(format)
                    .unwrap(),
            );
            pulls.push((server, msg));
        }
        for (server, msg) in pulls {
            let node = &mut self.workers[w as usize];
            if let (Some(pulls), Some(agent)) = (&mut node.pulls, &node.agent) {
                let refs: Vec<&[u8]> = msg[1..].iter().map(Vec::as_slice).collect();
                let sent = pulls.on_send(now, now, &refs, None, |s, k| agent.hot_key(s, k));
                assert_eq!(
                    sent,
                    PullSend::Unchanged,
                    "a pull right after a push goes to the server"
                );
            }
            self.zmq(Node::Worker(w), Node::Server(server), msg);
        }
    }

    /// Pull half: after its push is answered, worker `w` pulls every hot
    /// key of each server and two cold ones: one app pull, sent as one
    /// message per server with the same timestamp (as PS-lite's worker
    /// slices it).
    fn hot_pulls(&mut self, w: u16) {
        let format = self.s.style.format();
        let now = Timestamp(self.now);
        self.workers[w as usize].ts += 1;
        for server in 0..self.s.servers {
            let node = &mut self.workers[w as usize];
            let mut kv = KvData::empty(self.s.style.val_type(), false);
            // Every other pull holds hot keys only (answered by the worker alone).
            let cold = if node.ts % 2 == 0 {
                vec![HOT + 1, HOT + 5]
            } else {
                vec![]
            };
            let mut js: Vec<u64> = (0..HOT).chain(cold).collect();
            js.sort_unstable();
            kv.keys = js.iter().map(|&j| self.s.key(server, j)).collect();
            let frames = with_kv(&meta(node.ts, false), &kv)
                .unwrap()
                .to_frames(format)
                .unwrap();
            node.waiting.push((now, server, frames));
        }
        self.retry_pulls(w);
    }

    /// Pull half: offers worker `w`'s waiting hot pulls to its pull agent
    /// again; checks what it answers alone against the server app.
    fn retry_pulls(&mut self, w: u16) {
        let now = Timestamp(self.now);
        let waiting = std::mem::take(&mut self.workers[w as usize].waiting);
        for (since, server, frames) in waiting {
            let node = &mut self.workers[w as usize];
            let (Some(pulls), Some(agent)) = (&mut node.pulls, &node.agent) else {
                return;
            };
            let refs: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
            let sent = pulls.on_send(now, since, &refs, None, |s, k| agent.hot_key(s, k));
            let hot: Vec<u64> = (0..HOT).map(|j| self.s.key(server, j)).collect();
            let store = &self.servers[server as usize].app.store;
            let snapshot: BTreeMap<u64, Vec<f32>> = hot
                .iter()
                .filter_map(|k| store.get(k).map(|v| (*k, v.clone())))
                .collect();
            let ts = Message::parse(self.s.style.format(), &frames[0], &refs[1..])
                .unwrap()
                .meta
                .timestamp;
            let id = identity(worker_id(i32::from(w)));
            let node = &mut self.workers[w as usize];
            match sent {
                PullSend::Wait(_) => node.waiting.push((since, server, frames)),
                PullSend::Answer(answer) => {
                    node.hot_pending
                        .insert((ts, server), ("answered by the worker", snapshot, self.now));
                    self.out.pull_local += 1;
                    self.enqueue(self.now, Event::Zmq(Node::Worker(w), answer));
                }
                PullSend::Send(reduced)
                | PullSend::SendHold {
                    frames: reduced, ..
                } => {
                    // The keys the worker answers itself: those it does not ask for.
                    let refs: Vec<&[u8]> = reduced[1..].iter().map(Vec::as_slice).collect();
                    let asked: Vec<u64> = Message::parse(self.s.style.format(), &reduced[0], &refs)
                        .unwrap()
                        .kv()
                        .unwrap()
                        .map(|v| v.keys().collect())
                        .unwrap_or_default();
                    let local = snapshot
                        .into_iter()
                        .filter(|(k, _)| !asked.contains(k))
                        .collect();
                    node.hot_pending
                        .insert((ts, server), ("split", local, self.now));
                    let mut msg = vec![id];
                    msg.extend(reduced);
                    self.zmq(Node::Worker(w), Node::Server(server), msg);
                }
                PullSend::Unchanged => {
                    // The server answers: nothing of the worker's to check.
                    node.hot_pending
                        .insert((ts, server), ("sent whole", BTreeMap::new(), self.now));
                    let mut msg = vec![id];
                    msg.extend(frames);
                    self.zmq(Node::Worker(w), Node::Server(server), msg);
                }
            }
        }
    }

    /// Pull half: server `i`'s updates, each to every worker (in order per
    /// worker, UDP's delay and loss: a lost one is a gap the worker sees);
    /// a BREAK settles once it reached them all.
    fn server_updates(&mut self, i: u16) {
        let updates = match &mut self.servers[i as usize].agent {
            Some(agent) => agent.take_updates(),
            None => return,
        };
        for v in updates {
            let node = &mut self.servers[i as usize];
            node.update_seq += 1;
            let seq = node.update_seq;
            let mut last = self.now;
            for w in 0..self.s.workers {
                let rng = self
                    .udp_links
                    .entry((Node::Server(i), Node::Worker(w)))
                    .or_insert_with(|| SplitMix64::new(self.s.seed ^ 0x0B0B ^ u64::from(w)));
                if rng.chance(self.s.loss) {
                    continue;
                }
                let delay = 50 + rng.below(501);
                let node = &mut self.servers[i as usize];
                let at = node.update_at.entry(w).or_default();
                *at = (*at).max(self.now + delay);
                let at = *at;
                last = last.max(at);
                let u = RowUpdate {
                    seq,
                    round: v.round,
                    brk: v.brk,
                    entries: v.entries.clone(),
                };
                self.enqueue(at, Event::Update(w, i, u));
            }
            if v.brk {
                self.enqueue(last + 1, Event::BreakSettled(i));
            }
        }
    }

    fn worker_acts(&mut self, w: u16, job: u16, acts: Vec<WorkerAction>) {
        for a in acts {
            match a {
                WorkerAction::Send(b) => {
                    let on = self.workers[w as usize].on.get(&job).copied();
                    let to = switch_node(on.unwrap_or(SwitchChoice::Primary));
                    self.udp(Node::Worker(w), to, b)
                }
                WorkerAction::Fallback(f) => {
                    self.out.fallback_pairs += f.pairs.len() as u64;
                    let agent = self.workers[w as usize].agent.as_mut().unwrap();
                    agent.on_fallback(f).unwrap();
                }
                WorkerAction::RoundDone(summary) => {
                    let agent = self.workers[w as usize].agent.as_mut().unwrap();
                    if let Some(m) = agent.on_round_done(job, &summary).unwrap() {
                        let mut msg = vec![identity(worker_id(i32::from(w)))];
                        msg.extend(m.frames);
                        self.zmq(Node::Worker(w), Node::Server(m.server), msg);
                    }
                    let node = &mut self.workers[w as usize];
                    let early = node.early.as_mut();
                    if let Some(a) = early.and_then(|e| e.on_round_done(job, summary.round)) {
                        if let Some(p) = &mut node.pulls {
                            p.push_settled(Timestamp(self.now), a.server, a.timestamp);
                        }
                        self.enqueue(self.now, Event::Answer(w, a.frames));
                    }
                }
                WorkerAction::Resettle { round, batches } => {
                    let agent = self.workers[w as usize].agent.as_mut().unwrap();
                    if let Some(m) = agent.on_resettle(job, round, batches).unwrap() {
                        let mut msg = vec![identity(worker_id(i32::from(w)))];
                        msg.extend(m.frames);
                        self.zmq(Node::Worker(w), Node::Server(m.server), msg);
                    }
                }
            }
        }
    }

    fn server_acts(&mut self, i: u16, acts: Vec<ServerAction>) {
        for a in acts {
            match a {
                ServerAction::Send(b) => {
                    let to = self.server_switch(i);
                    self.udp(Node::Server(i), to, b)
                }
                other => {
                    if let ServerAction::Round(r) = &other {
                        self.out.flushed += u64::from(r.flushed);
                        self.out.completed += u64::from(!r.flushed);
                    }
                    let agent = self.servers[i as usize].agent.as_mut().unwrap();
                    let d = agent.on_action(other);
                    self.app_recv(i, d);
                }
            }
        }
    }

    /// The switch server `i` uses.
    fn server_switch(&self, i: u16) -> Node {
        let watch = self.servers[i as usize].watch.as_ref();
        switch_node(watch.map_or(SwitchChoice::Primary, SwitchWatch::current))
    }

    /// Whether a datagram from `from` to worker `w`'s link of `job` (or to
    /// server `i`'s) comes from a switch the job left: dropped, as the
    /// links do.
    fn sent_by_left_switch(&self, from: Node, to: Node, job: u16) -> bool {
        if !matches!(from, Node::Switch | Node::Standby) {
            return false;
        }
        let in_use = match to {
            Node::Worker(w) => switch_node(
                self.workers[w as usize]
                    .on
                    .get(&job)
                    .copied()
                    .unwrap_or(SwitchChoice::Primary),
            ),
            Node::Server(i) => self.server_switch(i),
            Node::Switch | Node::Standby => return false,
        };
        from != in_use
    }

    /// Failover: whether the primary is killed by now.
    fn primary_killed(&self) -> bool {
        self.s.partition.is_none() && self.primary_cut()
    }

    /// Failover: whether the primary is cut off from the servers now.
    fn partitioned(&self) -> bool {
        let (Some(at), Some(len)) = (self.s.failover, self.s.partition) else {
            return false;
        };
        (at..at + len).contains(&self.now)
    }

    /// Failover: whether the servers have lost the primary by now (killed,
    /// or cut off from them).
    fn primary_cut(&self) -> bool {
        self.s.failover.is_some_and(|at| self.now >= at)
    }

    /// Whether any worker still has pushes to send or answers to wait for.
    fn job_running(&self) -> bool {
        self.workers
            .iter()
            .any(|n| !n.plan.is_empty() || !n.outstanding.is_empty())
    }

    /// Failover: server `i` sends a REGISTER to the switch it uses; an
    /// alive switch answers it (lossy each way, 0.1–1.1 ms there and back).
    fn register(&mut self, i: u16) {
        let Some(choice) = self.servers[i as usize]
            .watch
            .as_ref()
            .map(SwitchWatch::current)
        else {
            return;
        };
        let to = switch_node(choice);
        if to == Node::Switch && (self.primary_killed() || self.partitioned()) {
            return;
        }
        if !self.udp_links.contains_key(&(Node::Server(i), to)) {
            let rng = self.link_rng(Node::Server(i), to, 0x4B);
            self.udp_links.insert((Node::Server(i), to), rng);
        }
        let loss = self.s.loss;
        let Some(rng) = self.udp_links.get_mut(&(Node::Server(i), to)) else {
            return;
        };
        if rng.chance(loss) || rng.chance(loss) {
            return;
        }
        let at = self.now + 100 + rng.below(1001);
        self.enqueue(at, Event::Registered(i, choice));
    }

    fn switch_acts(&mut self, from: Node, acts: Vec<SwitchAction>) {
        for a in acts {
            let to = match a {
                SwitchAction::Ack { worker, .. } | SwitchAction::Fallback { worker, .. } => {
                    Node::Worker(worker)
                }
                SwitchAction::Aggregate { job, server, .. } => {
                    assert_eq!(server, 0, "one server per job");
                    Node::Server(job - JOB_BASE)
                }
                SwitchAction::Update { .. } | SwitchAction::UpdateAck { .. } => {
                    unreachable!("updates go from the servers' agents to the workers directly")
                }
            };
            self.udp(from, to, a.payload().to_vec());
        }
    }

    /// Messages the server app receives: it must be able to parse every one.
    fn app_recv<F: AsRef<[u8]>>(&mut self, i: u16, msgs: Vec<Vec<F>>) {
        let format = self.s.style.format();
        for frames in msgs {
            let refs: Vec<&[u8]> = frames.iter().map(AsRef::as_ref).collect();
            let env = Message::parse_frames(format, Route::RouterRecv, &refs)
                .unwrap_or_else(|e| panic!("server {i}: the app got a bad message: {e}"));
            let worker = node_id(refs[0]).map(rank_of).unwrap() as u16;
            let msg = env.message;
            let app = &mut self.servers[i as usize].app;
            let reply = if msg.meta.push {
                for (key, vals) in kv_entries(&msg) {
                    *app.counts.entry((worker, key)).or_default() += 1;
                    let acc = app
                        .store
                        .entry(key)
                        .or_insert_with(|| vec![0.0; vals.len()]);
                    assert_eq!(acc.len(), vals.len(), "key {key:#x} changed length");
                    for (a, v) in acc.iter_mut().zip(vals) {
                        *a += v;
                    }
                    if self.s.pull {
                        let held = (self.now, acc.clone());
                        app.history.entry(key).or_default().push(held);
                    }
                }
                response(&msg.meta, None).unwrap()
            } else {
                let mut kv = KvData::empty(self.s.style.val_type(), self.s.style.lens());
                for key in msg
                    .kv()
                    .unwrap()
                    .map(|v| v.keys().collect::<Vec<_>>())
                    .unwrap_or_default()
                {
                    let vals = app.store.get(&key).cloned().unwrap_or_default();
                    kv.push_entry(key, &zebra_agent::values::encode(&vals));
                }
                response(&msg.meta, Some(&kv)).unwrap()
            };
            let mut out = vec![identity(server_id(i32::from(i)))];
            out.extend(reply.to_frames(format).unwrap());
            if let Some(agent) = &mut self.servers[i as usize].agent {
                let mut sent = vec![refs[0]];
                sent.extend(out.iter().map(Vec::as_slice));
                if agent.on_app_send(Route::RouterSend, &sent) {
                    continue;
                }
            }
            self.zmq(Node::Server(i), Node::Worker(worker), out);
        }
        self.server_updates(i);
    }

    /// A response reaching worker `w`'s ROUTER.
    fn worker_recv(&mut self, w: u16, frames: Frames) {
        self.out.end_ms = self.now / 1000;
        let now = Timestamp(self.now);
        let node = &mut self.workers[w as usize];
        let frames = match (&mut node.pulls, &node.agent) {
            (Some(pulls), Some(agent)) => {
                match pulls.on_recv(now, frames, |s, k| agent.hot_key(s, k)) {
                    Some(f) => f,
                    None => return,
                }
            }
            _ => frames,
        };
        if let Some(e) = &mut node.early {
            if !e.on_recv(&frames) {
                return;
            }
        }
        self.worker_app_recv(w, frames);
    }

    /// A response the app of worker `w` reads.
    fn worker_app_recv(&mut self, w: u16, frames: Frames) {
        self.out.app_end_ms = self.now / 1000;
        let format = self.s.style.format();
        let refs: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
        let env = Message::parse_frames(format, Route::RouterRecv, &refs).unwrap();
        let server = rank_of(env.message.meta.sender) as u16;
        let ts = env.message.meta.timestamp;
        let node = &mut self.workers[w as usize];
        if env.message.meta.push {
            let left = node
                .outstanding
                .get_mut(&ts)
                .expect("a push awaiting responses");
            *left -= 1;
            if *left == 0 {
                node.outstanding.remove(&ts);
                if node.pulls.is_some() {
                    self.hot_pulls(w);
                }
            }
            return;
        }
        if let Some((how, snapshot, sent_at)) = node.hot_pending.remove(&(ts, server)) {
            // A value the server held at some moment between the pull's
            // send and its answer (its hot values move only at rounds, and
            // at most the rest of the worker's own round can land between).
            let store = &self.servers[server as usize].app.store;
            for (key, vals) in kv_entries(&env.message) {
                if let Some(sent) = snapshot.get(&key) {
                    let now_held = store.get(&key);
                    // Two-stage: a pull sent before its push was applied (its
                    // hot part waited for the update of the push's round) gets
                    // the value after that round, which the server held in
                    // between.
                    let between = self.s.sync.two_stage()
                        && self.servers[server as usize]
                            .app
                            .history
                            .get(&key)
                            .is_some_and(|h| h.iter().any(|(t, v)| *t >= sent_at && *v == vals));
                    assert!(
                        &vals == sent || Some(&vals) == now_held || between,
                        "worker {w}: hot key {key:#x} of server {server} pulled ({how}) at {} µs: \
                         {vals:?}, but the server held {sent:?} when the pull was sent and \
                         {now_held:?} when it was answered",
                        self.now
                    );
                    self.out.hot_checks += 1;
                }
            }
            return;
        }
        let want = node.checks.remove(&(ts, server)).expect("a pull awaited");
        let staleness = self.s.sync.staleness();
        let got: BTreeMap<u64, Vec<f32>> = kv_entries(&env.message).into_iter().collect();
        for (key, pushed) in want {
            let vals = &got[&key];
            assert!(
                !vals.is_empty() || pushed <= staleness,
                "worker {w}: key {key:#x} pulled before any push"
            );
            let unseen = [0.0];
            let vals = if vals.is_empty() { &unseen[..] } else { vals };
            for &v in vals {
                let digit = ((f64::from(v) / DIGIT.powi(i32::from(w))) as u64) % DIGIT as u64;
                assert!(
                    digit <= u64::from(pushed)
                        && digit + u64::from(staleness) >= u64::from(pushed),
                    "worker {w} pulled key {key:#x} from server {server} after its push #{pushed}: \
                     the server had applied {digit} of its pushes (conservative ordering, \
                     staleness {staleness})"
                );
                self.out.stale_digits += u64::from(pushed) - digit;
            }
            self.out.checks += 1;
        }
    }

    /// Whether worker `w` waits at the barrier before its next push: for
    /// its earlier pushes' answers before it sends the BARRIER request, or
    /// for the other workers' requests after.
    fn at_barrier(&self, w: u16) -> bool {
        let node = &self.workers[w as usize];
        if !node.plan.front().is_some_and(|p| p.barrier) {
            return false;
        }
        if node.at_barrier {
            !self.workers.iter().all(|n| n.at_barrier)
        } else {
            // Two-stage: the BARRIER request waits for the servers' answers
            // of the pushes answered early.
            !node.outstanding.is_empty() || node.early.as_ref().is_some_and(|e| e.swallowing() > 0)
        }
    }

    /// Worker `w` sends its BARRIER request to the scheduler (a DEALER
    /// whose peer the agent does not know).
    fn enter_barrier(&mut self, w: u16) {
        let frames = barrier_request(self.s.style.format());
        let node = &mut self.workers[w as usize];
        node.at_barrier = true;
        if self.workers.iter().all(|n| n.at_barrier) {
            // Every push sent before the barrier, as the workers leave it.
            self.before_barrier = self
                .workers
                .iter()
                .enumerate()
                .flat_map(|(w, n)| {
                    n.sent
                        .iter()
                        .map(move |(&(s, k), &c)| ((w as u16, s, k), c))
                })
                .collect();
        }
        let node = &mut self.workers[w as usize];
        if let Some(agent) = &mut node.agent {
            let refs: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
            assert_eq!(agent.on_send_to_recver(&refs), Outgoing::Unchanged);
        }
    }

    fn next_time(&self) -> Option<u64> {
        let mut next = self.queue.peek().map(|Reverse((t, _))| *t);
        let mut consider = |t: Option<u64>| {
            if let Some(t) = t {
                next = Some(next.map_or(t, |n: u64| n.min(t)));
            }
        };
        for (w, node) in self.workers.iter().enumerate() {
            if node.outstanding.len() < self.s.window
                && !self.at_barrier(w as u16)
                && !node.pulling()
            {
                consider(node.plan.front().map(|p| p.at.max(self.now)));
            }
            if !node.waiting.is_empty() {
                consider(Some(self.now + 500));
            }
            consider(
                node.pulls
                    .as_ref()
                    .and_then(PullAgent::poll_at)
                    .map(Timestamp::micros),
            );
            for hot in node.hot.values() {
                consider(hot.poll_at().map(Timestamp::micros));
            }
        }
        // A primary cut off from the servers resends its aggregates to them
        // until it gives up: not waited for once the job has ended.
        let running = self.job_running();
        let alive = self
            .switch
            .as_ref()
            .filter(|_| !self.primary_killed() && (running || !self.primary_cut()));
        for sw in alive.iter().copied().chain(&self.standby) {
            consider(sw.poll_at().map(Timestamp::micros));
        }
        for node in &self.servers {
            if running {
                consider(
                    node.watch
                        .as_ref()
                        .and_then(SwitchWatch::poll_at)
                        .map(Timestamp::micros),
                );
            }
            consider(
                node.hot
                    .as_ref()
                    .and_then(Server::poll_at)
                    .map(Timestamp::micros),
            );
            consider(
                node.agent
                    .as_ref()
                    .and_then(ServerAgent::poll_at)
                    .map(Timestamp::micros),
            );
        }
        next
    }

    fn run(mut self) -> Outcome {
        if let (Some((_, at, _)), Some(_)) = (self.s.restart, &self.switch) {
            self.enqueue(at, Event::SwitchStart);
        }
        if self.s.failover.is_some() && self.mode == Mode::Zebra {
            for i in 0..self.s.servers {
                self.enqueue(0, Event::Keepalive(i));
            }
        }
        if let Some((at, answered)) = self.s.silent {
            for i in 0..self.s.servers {
                let waited = std::time::Duration::from_micros(at);
                self.enqueue(at, Event::Silent(i, Some(waited)));
                if let Some(later) = answered {
                    self.enqueue(later, Event::Silent(i, None));
                }
            }
        }
        while let Some(t) = self.next_time() {
            assert!(t < 120_000_000, "{:?}: no end by 120 s", self.s);
            self.now = self.now.max(t);
            let now = Timestamp(self.now);
            while let Some(&Reverse((at, id))) = self.queue.peek() {
                if at > self.now {
                    break;
                }
                self.queue.pop();
                match self.items.remove(&id).unwrap() {
                    Event::Udp(Node::Switch, _, _) if self.primary_killed() => {}
                    Event::Udp(Node::Switch, _, b) => {
                        let acts = self.switch.as_mut().unwrap().handle_packet(now, &b);
                        self.switch_acts(Node::Switch, acts);
                    }
                    Event::Udp(Node::Standby, _, b) => {
                        let acts = self.standby.as_mut().unwrap().handle_packet(now, &b);
                        self.switch_acts(Node::Standby, acts);
                    }
                    Event::Udp(Node::Worker(w), from, b) => {
                        let job = u16::from_be_bytes([b[4], b[5]]);
                        if self.sent_by_left_switch(from, Node::Worker(w), job) {
                            continue;
                        }
                        let hot = self.workers[w as usize].hot.get_mut(&job).unwrap();
                        let acts = hot.handle_packet(now, &b);
                        self.worker_acts(w, job, acts);
                    }
                    Event::Udp(Node::Server(i), from, b) => {
                        if self.sent_by_left_switch(from, Node::Server(i), 0) {
                            continue;
                        }
                        let node = &mut self.servers[i as usize];
                        node.udp_bytes += b.len() as u64;
                        let acts = node.hot.as_mut().unwrap().handle_packet(now, &b);
                        for a in &acts {
                            if let ServerAction::Round(r) = a {
                                let at = self.out.aggregated_at.entry((i, r.round));
                                at.or_default().push(from);
                                self.out.standby_rounds += u64::from(from == Node::Standby);
                            }
                        }
                        self.server_acts(i, acts);
                    }
                    Event::Zmq(Node::Server(i), frames) => {
                        let node = &mut self.servers[i as usize];
                        node.zmq_bytes += frames.iter().map(|f| f.len() as u64).sum::<u64>();
                        match &mut node.agent {
                            None => self.app_recv(i, vec![frames]),
                            Some(agent) => {
                                let out = agent.on_recv(now, frames);
                                self.app_recv(i, out.deliver);
                                self.server_control(i);
                                for f in out.fallbacks {
                                    let hot = self.servers[i as usize].hot.as_mut().unwrap();
                                    let acts = hot.add_fallback(now, f).unwrap();
                                    self.server_acts(i, acts);
                                }
                            }
                        }
                    }
                    Event::Zmq(Node::Worker(w), frames) => self.worker_recv(w, frames),
                    Event::Answer(w, frames) => self.worker_app_recv(w, frames),
                    Event::Dealer(w, frames) => {
                        let refs: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
                        let node = &mut self.workers[w as usize];
                        match node.agent.as_mut().unwrap().on_recv(&refs).unwrap() {
                            FromServer::HotSet { server } => {
                                if let Some(pulls) = &mut node.pulls {
                                    pulls.reset(server);
                                }
                            }
                            FromServer::Restart {
                                job,
                                through,
                                resend_from,
                                switch,
                                ..
                            } => {
                                node.on.insert(job, switch);
                                let hot = node.hot.get_mut(&job).unwrap();
                                let acts = hot.restart(now, through, resend_from);
                                self.worker_acts(w, job, acts);
                            }
                        }
                    }
                    Event::SwitchStart => {
                        let proto = self.switch.as_ref().unwrap().config().clone();
                        self.switch = Some(Switch::new(proto).unwrap());
                        let (_, _, detect) = self.s.restart.unwrap();
                        for i in 0..self.s.servers {
                            self.enqueue(self.now + detect, Event::Epoch(i));
                        }
                    }
                    Event::Silent(i, waited) => {
                        if let Some(agent) = self.servers[i as usize].agent.as_mut() {
                            agent.on_switch(
                                waited.map_or(SwitchHeard::Answered, SwitchHeard::Silent),
                            );
                            self.server_control(i);
                        }
                    }
                    Event::Epoch(i) => {
                        if let Some(agent) = self.servers[i as usize].agent.as_mut() {
                            agent.on_switch_restarted(0xE2);
                            self.server_control(i);
                        }
                    }
                    Event::Keepalive(i) => {
                        self.register(i);
                        if self.job_running() {
                            self.enqueue(self.now + KEEPALIVE, Event::Keepalive(i));
                        }
                    }
                    Event::Registered(i, choice) => {
                        let node = &mut self.servers[i as usize];
                        let Some(watch) = node.watch.as_mut() else {
                            continue;
                        };
                        if watch.current() != choice {
                            continue;
                        }
                        watch.on_heard(now);
                        if std::mem::take(&mut node.moving) {
                            let epoch = 0xE3 + watch.moves() as u32;
                            node.agent.as_mut().unwrap().on_switch_moved(epoch, choice);
                            self.server_control(i);
                        }
                    }
                    Event::Update(w, i, u) => {
                        if let Some(pulls) = &mut self.workers[w as usize].pulls {
                            for answer in pulls.on_update(now, i, u) {
                                self.enqueue(self.now, Event::Zmq(Node::Worker(w), answer));
                            }
                        }
                        self.retry_pulls(w);
                    }
                    Event::BreakSettled(i) => {
                        let agent = self.servers[i as usize].agent.as_mut().unwrap();
                        let d = agent.on_break_settled(now);
                        self.app_recv(i, d);
                        self.server_control(i);
                    }
                    Event::Zmq(Node::Switch | Node::Standby, _) => {
                        unreachable!("no ZeroMQ to a switch")
                    }
                }
            }
            for w in 0..self.s.workers {
                if !self.workers[w as usize].waiting.is_empty() {
                    self.retry_pulls(w);
                }
                let follow = match &mut self.workers[w as usize].pulls {
                    Some(p) if p.poll_at().is_some_and(|x| x <= now) => p.poll(now),
                    _ => Vec::new(),
                };
                for (server, frames) in follow {
                    let mut msg = vec![identity(worker_id(i32::from(w)))];
                    msg.extend(frames);
                    self.zmq(Node::Worker(w), Node::Server(server), msg);
                }
                loop {
                    let node = &self.workers[w as usize];
                    let Some(next) = node.plan.front() else {
                        break;
                    };
                    if next.at > self.now
                        || node.outstanding.len() >= self.s.window
                        || node.pulling()
                    {
                        break;
                    }
                    if self.at_barrier(w) {
                        break;
                    }
                    if next.barrier && !node.at_barrier {
                        self.enter_barrier(w);
                        continue;
                    }
                    self.send_push(w);
                }
            }
            let killed = self.primary_killed();
            for node in [Node::Switch, Node::Standby] {
                let sw = match node {
                    Node::Switch if !killed => self.switch.as_mut(),
                    Node::Standby => self.standby.as_mut(),
                    _ => None,
                };
                let acts = match sw {
                    Some(sw) if sw.poll_at().is_some_and(|x| x <= now) => sw.poll(now),
                    _ => continue,
                };
                self.switch_acts(node, acts);
            }
            let running = self.job_running();
            for i in 0..self.s.servers {
                let node = &mut self.servers[i as usize];
                let moved = node
                    .watch
                    .as_mut()
                    .filter(|_| running)
                    .and_then(|w| w.poll(now));
                if moved.is_some() {
                    node.moving = true;
                    self.register(i);
                }
            }
            for w in 0..self.s.workers {
                let jobs: Vec<u16> = self.workers[w as usize].hot.keys().copied().collect();
                for job in jobs {
                    let hot = self.workers[w as usize].hot.get_mut(&job).unwrap();
                    if hot.poll_at().is_some_and(|x| x <= now) {
                        let acts = hot.poll(now);
                        self.worker_acts(w, job, acts);
                    }
                }
            }
            for i in 0..self.s.servers {
                let node = &mut self.servers[i as usize];
                if let Some(hot) = &mut node.hot {
                    if hot.poll_at().is_some_and(|x| x <= now) {
                        let acts = hot.poll(now);
                        self.server_acts(i, acts);
                    }
                }
                let node = &mut self.servers[i as usize];
                if let Some(agent) = &mut node.agent {
                    if agent.poll_at().is_some_and(|x| x <= now) {
                        let d = agent.poll(now);
                        self.app_recv(i, d);
                        self.server_control(i);
                    }
                }
            }
        }
        self.finish()
    }

    fn finish(mut self) -> Outcome {
        let ctx = format!("{:?} {:?}", self.mode, self.s);
        for (w, node) in self.workers.iter().enumerate() {
            assert!(
                node.plan.is_empty() && node.outstanding.is_empty(),
                "{ctx}: worker {w}"
            );
            assert!(node.checks.is_empty(), "{ctx}: worker {w} awaits pulls");
            assert!(!node.pulling(), "{ctx}: worker {w} awaits hot pulls");
            if let Some(p) = &node.pulls {
                assert_eq!(
                    p.stats().mismatches,
                    0,
                    "{ctx}: worker {w}: {:?}",
                    p.stats()
                );
                self.out.pull_merged += p.stats().merged;
            }
            assert!(
                node.hot.values().all(Worker::is_idle),
                "{ctx}: worker {w} hot path"
            );
            self.out.bypassed_rounds += node
                .hot
                .values()
                .map(|h| h.stats().bypassed_rounds)
                .sum::<u64>();
            if let Some(e) = &node.early {
                assert_eq!(
                    (e.pending(), e.swallowing(), e.off()),
                    (0, 0, None),
                    "{ctx}: worker {w}: every server answer in, each early one dropped: {:?}",
                    e.stats()
                );
                assert_eq!(e.stats().early, e.stats().swallowed, "{ctx}: worker {w}");
                self.out.early += e.stats().early;
                self.out.early_verified += e.stats().verified;
            }
            if let Some(a) = &node.agent {
                assert_eq!(a.open_rounds(), 0, "{ctx}: worker {w} open rounds");
                self.out.whole_pushes += a.stats().whole_pushes;
                self.out.closed_rounds += a.stats().closed_rounds;
            }
        }
        // A killed primary keeps what it held: the standby must not.
        let live = match self.s.failover {
            Some(_) => &self.standby,
            None => &self.switch,
        };
        if let Some(sw) = live {
            assert_eq!(sw.pending_parts(), 0, "{ctx}");
            assert_eq!(sw.stats().aggregate_abandoned, 0, "{ctx}");
            self.out.late = sw.stats().fallback(zebra_proto::wire::FallbackReason::Late);
            self.out.window_full = sw
                .stats()
                .fallback(zebra_proto::wire::FallbackReason::WindowFull);
        }
        for (i, node) in self.servers.iter().enumerate() {
            let i = i as u16;
            self.out.zmq_bytes += node.zmq_bytes;
            self.out.udp_bytes += node.udp_bytes;
            for (&(w, key), &n) in &node.app.counts {
                self.out.counts.insert((i, w, key), n);
            }
            self.out.store.extend(node.app.store.clone());
            if let Some(hot) = &node.hot {
                assert_eq!(hot.held_fallbacks(), 0, "{ctx}");
                self.out.uncertain_covered += hot.stats().uncertain_covered;
            }
            if let Some(a) = &node.agent {
                let st = a.stats();
                assert_eq!(a.held(), 0, "{ctx}: server {i} holds pushes");
                assert_eq!(st.forced, 0, "{ctx}: server {i}: {st:?}");
                assert_eq!(st.lost_values, 0, "{ctx}: server {i}: {st:?}");
                assert_eq!(st.duplicate_aggregates, 0, "{ctx}: server {i}: {st:?}");
                assert_eq!(st.duplicate_settles, 0, "{ctx}: server {i}: {st:?}");
                assert_eq!(
                    st.bad_frames + st.bad_keys + st.round_gaps,
                    0,
                    "{ctx}: {st:?}"
                );
                self.out.resettles += st.resettles;
                self.out.moves += st.switch_moves;
                self.out.resettles_late += st.resettles_late;
                self.out.trailer_bytes += st.trailer_bytes;
                self.out.settle_bytes += st.settle_bytes;
                self.out.online_changed += st.online_changed;
                self.out.online_aside += st.online_aside;
                self.out.online_recounts += st.online_recounts;
                self.out.pull_aside += st.pull_aside;
                self.out.pull_gate_timeouts += st.pull_gate_timeouts;
                self.out.stale_pulls += st.stale_pulls;
                self.out.stale_most = self.out.stale_most.max(st.stale_most);
                self.out
                    .final_keys
                    .push(a.hot_keys_now().iter().map(|k| k.key).collect());
            }
        }
        self.out
    }
}

/// What a server that adds every push gets, from the plans alone.
fn expected(s: &Scenario) -> BTreeMap<u64, Vec<f32>> {
    let mut store: BTreeMap<u64, Vec<f32>> = BTreeMap::new();
    for plan in plans(s) {
        for push in plan {
            for (_, kv) in push.parts {
                let frames = kv.frames();
                let refs: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
                let view = KvView::parse(&kv.data_types(), &refs).unwrap();
                for (key, b, _) in view.entries().unwrap() {
                    let vals = floats(b);
                    let acc = store.entry(key).or_insert_with(|| vec![0.0; vals.len()]);
                    for (a, v) in acc.iter_mut().zip(vals) {
                        *a += v;
                    }
                }
            }
        }
    }
    store
}

fn check(name: &str, s: &Scenario) -> (Outcome, Outcome) {
    let vanilla = Sim::new(s, Mode::Vanilla).run();
    assert_eq!(
        vanilla.store,
        expected(s),
        "{name}: the vanilla run is a plain sum"
    );
    let zebra = Sim::new(s, Mode::Zebra).run();
    assert_eq!(
        zebra.store, vanilla.store,
        "{name}: final sums equal vanilla's exactly"
    );
    if s.delivery == Delivery::PerWorker {
        assert_eq!(
            zebra.counts, vanilla.counts,
            "{name}: per-worker request counts"
        );
    }
    assert!(
        zebra.checks > 100 && zebra.checks == vanilla.checks,
        "{name}: pulls checked"
    );
    println!(
        "{name:>8} seed {} loss {:>4}: {:>5} ms (vanilla {:>5}) | fallback pairs {:>5}, late {:>4}, \
         flushed {:>3}, covered {:>3} | server bytes zmq+udp {:>8} vs {:>8} ({:.2}); hot {:>7} vs {:>7} ({:.2})",
        s.seed,
        s.loss,
        zebra.end_ms,
        vanilla.end_ms,
        zebra.fallback_pairs,
        zebra.late,
        zebra.flushed,
        zebra.uncertain_covered,
        zebra.zmq_bytes + zebra.udp_bytes,
        vanilla.zmq_bytes,
        (zebra.zmq_bytes + zebra.udp_bytes) as f64 / vanilla.zmq_bytes as f64,
        hot_bytes(&zebra),
        vanilla.hot_entry_bytes,
        hot_bytes(&zebra) as f64 / vanilla.hot_entry_bytes as f64,
    );
    (vanilla, zebra)
}

/// What the hot keys cost the servers' links with Zebra: the aggregates
/// (and coverage), the trailers and the SETTLE messages.
fn hot_bytes(o: &Outcome) -> u64 {
    o.udp_bytes + o.trailer_bytes + o.settle_bytes
}

#[test]
fn exact_with_loss_stragglers_and_uneven_pushes() {
    for (seed, loss) in [(0, 0.0), (0, 0.01), (1, 0.01)] {
        let (_, z) = check("byteps", &Scenario::new(seed, loss));
        assert!(z.late > 0, "the straggler's late packets fell back");
    }
}

#[test]
fn exact_with_mxnet_char_values_and_uniform_lengths() {
    for loss in [0.0, 0.01] {
        check(
            "mxnet",
            &Scenario {
                style: Style::Mxnet,
                ..Scenario::new(7, loss)
            },
        );
    }
    check(
        "uniform",
        &Scenario {
            style: Style::Uniform,
            ..Scenario::new(8, 0.01)
        },
    );
}

#[test]
fn exact_when_the_switch_is_dead() {
    let (_, z) = check(
        "dead",
        &Scenario {
            dead_switch: Some((0, u64::MAX)),
            rounds: 60,
            stops: vec![(3, 50)],
            ..Scenario::new(3, 0.01)
        },
    );
    assert!(z.fallback_pairs > 0 && z.udp_bytes == 0);
}

#[test]
fn exact_when_the_switch_dies_and_when_acks_are_lost() {
    check(
        "outage",
        &Scenario {
            dead_switch: Some((100_000, 250_000)),
            ..Scenario::new(4, 0.01)
        },
    );
    let (_, z) = check(
        "noacks",
        &Scenario {
            dead_acks: Some((100_000, 900_000)),
            ..Scenario::new(5, 0.0)
        },
    );
    assert!(
        z.uncertain_covered > 0,
        "given-up packets the switch had added"
    );
}

#[test]
fn exact_when_the_switch_is_killed_and_started_again() {
    // Killed while rounds are open at it (worker 1 straggles: the others'
    // packets of its rounds are added and acknowledged, then lost with the
    // switch), started again 30 ms later, seen by the servers 40 ms after
    // that; with loss, and around a stopped worker.
    let mut resent = 0;
    for (seed, loss, at) in [(6, 0.0, 120_000), (7, 0.01, 300_000), (8, 0.0, 600_000)] {
        let (_, z) = check(
            "restart",
            &Scenario {
                restart: Some((at, at + 30_000, 40_000)),
                ..Scenario::new(seed, loss)
            },
        );
        println!(
            "  restart at {} ms: {} resends taken, {} not needed, {} rounds bypassed the new switch",
            at / 1000,
            z.resettles,
            z.resettles_late,
            z.bypassed_rounds
        );
        resent += z.resettles;
    }
    assert!(resent > 0, "what the lost switch held was sent again");
}

/// A standby switch (`ZEBRA_SWITCH_STANDBY`): the primary killed for good at
/// a seeded random moment of the job, with loss (in one of two seeds) and a
/// straggling worker, so that rounds are open at it; each server moves its
/// job once the primary has left its REGISTER unanswered for `FAILOVER`, and
/// tells its workers when the standby answers. Every sum exact against
/// vanilla PS-lite, each server moved once, and the rounds after the move
/// aggregated at the standby.
#[test]
fn a_standby_takes_over_when_the_primary_is_killed() {
    let mut rng = SplitMix64::new(0x5EED_F417);
    for (seed, loss) in [(61, 0.0), (62, 0.01), (63, 0.0), (64, 0.01)] {
        let at = 100_000 + rng.below(500_000);
        let s = failover_scenario(seed, at, loss);
        let (v, z) = check("failover", &s);
        println!(
            "  primary killed at {} ms: {} rounds aggregated at the standby, {} resends taken, \
             {} fallback pairs; {} ms against {} ms without Zebra",
            at / 1000,
            z.standby_rounds,
            z.resettles,
            z.fallback_pairs,
            z.end_ms,
            v.end_ms
        );
        assert_eq!(
            z.moves,
            u64::from(s.servers),
            "seed {seed}: each server moved once"
        );
        for i in 0..s.servers {
            let from = |node| {
                z.aggregated_at
                    .iter()
                    .filter(move |((j, _), at)| *j == i && at.contains(&node))
                    .map(|((_, r), _)| *r)
            };
            let primary_last = from(Node::Switch).max().unwrap_or(0);
            let standby: Vec<u32> = from(Node::Standby).collect();
            // Each round by one switch; every round from shortly after the
            // primary's last one to the job's end by the standby (the rounds
            // going at the move go to the servers).
            for (&(j, r), at) in &z.aggregated_at {
                assert_eq!(at.len(), 1, "seed {seed}: server {j} round {r}: {at:?}");
            }
            let later = (primary_last + 5..=s.rounds).collect::<Vec<_>>();
            assert!(
                later.len() > 20 && later.iter().all(|r| standby.contains(r)),
                "seed {seed} server {i}: the primary's last round {primary_last}, the standby's \
                 {standby:?}"
            );
        }
    }
}

/// The primary alive but cut off from the servers for 300 ms (a partition):
/// it goes on answering the workers, and adding their packets, until each
/// server has moved its job and told them, and resends its aggregates, which
/// reach the servers again after the cut: the servers' links (and the
/// workers', once moved) drop what it sends; the workers hand what it added
/// over as after a restart. Exact, each round by one switch, the later ones
/// at the standby.
#[test]
fn a_standby_takes_over_when_the_primary_is_cut_off_from_the_servers() {
    for (seed, loss, at) in [(65, 0.0, 300_000), (66, 0.01, 450_000)] {
        let s = Scenario {
            partition: Some(300_000),
            ..failover_scenario(seed, at, loss)
        };
        let (_, z) = check("partition", &s);
        assert_eq!(
            z.moves,
            u64::from(s.servers),
            "seed {seed}: each server moved once"
        );
        for (&(j, r), by) in &z.aggregated_at {
            assert_eq!(by.len(), 1, "seed {seed}: server {j} round {r}: {by:?}");
        }
        assert!(z.standby_rounds > 20, "seed {seed}: {}", z.standby_rounds);
        println!(
            "  primary cut off at {} ms: {} rounds aggregated at the standby, {} resends taken",
            at / 1000,
            z.standby_rounds,
            z.resettles
        );
    }
}

#[test]
fn exact_when_pushes_skip_servers_and_in_merged_delivery() {
    check(
        "skip",
        &Scenario {
            skip_servers: true,
            ..Scenario::new(6, 0.01)
        },
    );
    check(
        "merged",
        &Scenario {
            delivery: Delivery::Merged,
            ..Scenario::new(9, 0.01)
        },
    );
}

/// Server ingress: every push carries every hot key (a dense hot part, as
/// in data-parallel training): the servers get one aggregate instead of
/// four copies.
#[test]
fn server_bytes_against_vanilla() {
    let s = Scenario {
        dense: true,
        straggler: None,
        stops: vec![],
        packet_size: 1472,
        ..Scenario::new(11, 0.0)
    };
    let (v, z) = check("dense", &s);
    assert!(
        hot_bytes(&z) * 2 < v.hot_entry_bytes,
        "hot bytes fall by half or more (one aggregate of 4-byte values for four pushes)"
    );
    assert!(z.zmq_bytes + z.udp_bytes < v.zmq_bytes);
}

/// Worker 0 alone pushes 5 times (MXNet's `kv.init`), then every worker
/// passes a barrier and pushes 100 dense rounds of MXNet-style values.
fn barrier_scenario(seed: u64, loss: f64) -> Scenario {
    Scenario {
        init_pushes: 5,
        style: Style::Mxnet,
        straggler: None,
        stops: vec![],
        rounds: 100,
        dense: true,
        packet_size: 1472,
        ..Scenario::new(seed, loss)
    }
}

/// MXNet's worker 0 alone pushes every key's initial value, then every
/// worker passes a barrier: the round numbers start again after it, so the
/// workers' pushes of the plan aggregate instead of meeting rounds that
/// worker 0 passed long ago.
#[test]
fn rounds_line_up_after_a_barrier() {
    for loss in [0.0, 0.01] {
        let s = barrier_scenario(12, loss);
        let (v, z) = check("barrier", &s);
        let rounds = u64::from(s.rounds) * u64::from(s.servers);
        assert!(
            z.completed * 10 >= rounds * 9,
            "loss {loss}: {} of {rounds} rounds after the barrier completed",
            z.completed
        );
        assert_eq!(
            (z.late, z.flushed),
            (0, u64::from(s.init_pushes) * u64::from(s.servers)),
            "loss {loss}: no packet meets a round that closed, and only worker 0's \
             init rounds, its own, are flushed (without the barrier's new numbering \
             worker 0 pushes its i-th push of the plan as others push their (i+5)-th)"
        );
        assert!(
            hot_bytes(&z) * 2 < v.hot_entry_bytes,
            "hot bytes fall by half or more"
        );
    }
}

/// Online settings for the tests of the change-over itself: `t` counted
/// pushes, and no rule to step aside (these scenarios' stragglers and slow
/// workers drift more than `max_drift`, so by default their servers would step
/// aside: `online_steps_aside_when_workers_drift`).
fn change_over(t: u32) -> OnlineConfig {
    OnlineConfig {
        max_drift: f64::INFINITY,
        min_saving: 0.0,
        min_pace: 0.0,
        ..OnlineConfig::new(t)
    }
}

/// Online hot keys (`zebra_agent::online`): every worker starts with the
/// wrong hot set (cold keys), or none, each server counts its keys over the first
/// 30 pushes of every worker, finds the truly hot ones, and every worker
/// switches at one round boundary, with loss, duplication and reordering
/// on the hot path, a straggler and a worker that stops early: the sums
/// equal vanilla's exactly and every pull sees its pushes applied. This
/// plan's key counts have a flat tail, so of the keys found only the four
/// hottest are asserted (precision on skewed traces: `docs/HOTKEYS.md`).
#[test]
fn online_change_over_is_exact_under_loss() {
    for (seed, loss, from_nothing) in [
        (21, 0.0, false),
        (22, 0.01, false),
        (23, 0.02, false),
        (25, 0.01, true),
    ] {
        let s = Scenario {
            online: Some(change_over(30)),
            online_from_nothing: from_nothing,
            ..Scenario::new(seed, loss)
        };
        let (_, z) = check("online", &s);
        assert_eq!(
            z.online_changed,
            u64::from(s.servers),
            "every server changed its keys"
        );
        for (i, keys) in z.final_keys.iter().enumerate() {
            let full = full_data_ranking(&s, i as u16);
            let start: Vec<u64> = if from_nothing {
                Vec::new()
            } else {
                (HOT..2 * HOT).map(|j| s.key(i as u16, j)).collect()
            };
            let p = zebra_hotkeys::precision(&full[..keys.len()], keys);
            let p0 = zebra_hotkeys::precision(&full[..keys.len()], &start);
            println!(
                "  server {i}: precision after 30 pushes of each worker {:.1} % of {} keys \
                 (the starting set: {:.1} %)",
                100.0 * p,
                keys.len(),
                100.0 * p0
            );
            assert!(
                zebra_hotkeys::precision(&full[..4], keys) == 1.0,
                "seed {seed}: server {i}: {keys:x?} against the full data's {full:x?} (the \
                 tail of this plan's key counts is flat: only the hottest four are certain)"
            );
        }
    }
}

/// Online hot keys around a PS-lite barrier: worker 0 pushes alone before
/// it (MXNet's `kv.init`), so its counted pushes straddle the barrier and
/// the decision reaches the workers at different barrier counts; every
/// worker skips one barrier epoch at the decision, whenever it arrives:
/// exact, and the rounds after it still meet (most complete at the switch).
#[test]
fn online_change_over_around_a_barrier() {
    for loss in [0.0, 0.01] {
        let s = Scenario {
            online: Some(change_over(8)),
            ..barrier_scenario(27, loss)
        };
        let (_, z) = check("barrier", &s);
        assert_eq!(z.online_changed, u64::from(s.servers), "loss {loss}");
        let rounds = u64::from(s.rounds) * u64::from(s.servers);
        assert!(
            z.completed * 10 >= rounds * 8,
            "loss {loss}: {} of {rounds} rounds completed",
            z.completed
        );
    }
}

/// Server `i`'s keys by how many pushes of the whole job carry them
/// (ties: smaller key first), as `zebra profile` ranks a full trace.
fn full_data_ranking(s: &Scenario, i: u16) -> Vec<u64> {
    let mut counts: BTreeMap<u64, u64> = BTreeMap::new();
    for plan in plans(s) {
        for push in plan {
            for (server, kv) in push.parts {
                if server == i {
                    for key in kv.keys {
                        *counts.entry(key).or_default() += 1;
                    }
                }
            }
        }
    }
    let mut order: Vec<(u64, u64)> = counts.into_iter().collect();
    order.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    order.into_iter().map(|(k, _)| k).collect()
}

/// A worker that never reaches the counted pushes (it stops after 10): the
/// servers wait for it, then keep the starting set (a worker may still
/// aggregate with it), or, starting from none, take the counted keys (nobody
/// aggregated before); nothing is lost either way.
#[test]
fn online_when_a_worker_stops_early() {
    for (seed, from_nothing) in [(24, false), (26, true)] {
        let s = Scenario {
            online: Some(OnlineConfig {
                wait: Duration::from_millis(100),
                ..change_over(30)
            }),
            online_from_nothing: from_nothing,
            stops: vec![(3, 10)],
            ..Scenario::new(seed, 0.01)
        };
        let (_, z) = check("online", &s);
        let changed = if from_nothing {
            u64::from(s.servers)
        } else {
            0
        };
        assert_eq!(z.online_changed, changed, "from nothing: {from_nothing}");
        assert!(z.whole_pushes > 0, "the others waited, pushing whole");
    }
}

/// Online hot keys, asynchronous workers drifting apart: worker 1 pushes
/// at two thirds of the others' pace, so while they wait for the decision
/// their whole pushes run ahead of it (16 pushes in flight). At the
/// decision each worker closes the rounds it will never push (an empty
/// DONE each) and every worker's next push is the decision's round: exact,
/// and at most a tenth of the rounds wait for the switch's round timeout
/// (seed 28: 29 of 400, the slow worker's last rounds once the others ended;
/// 2 with the right hot-keys file from the start; 47 without closing. Until
/// 2026-11-26 workers kept their distance past the decision's round, 10 here,
/// but in a real job with workers a dozen rounds apart every round then
/// waited past any timeout: `crate::worker`'s `Closing`).
#[test]
fn online_closes_the_rounds_drifting_workers_pushed() {
    for (seed, loss) in [(28, 0.0), (30, 0.0), (29, 0.01)] {
        let file = Scenario {
            straggler: None,
            stops: Vec::new(),
            slow: Some(1),
            window: 16,
            ..Scenario::new(seed, loss)
        };
        let (_, f) = check("file", &file);
        let s = Scenario {
            online: Some(change_over(30)),
            ..file
        };
        let (_, z) = check("drift", &s);
        println!(
            "  {} rounds closed at the decision, {} pushes whole",
            z.closed_rounds, z.whole_pushes
        );
        assert_eq!(z.online_changed, u64::from(s.servers));
        assert!(z.closed_rounds > 0, "the workers closed rounds");
        // (With loss, flushes come and go with the lost packets as well.)
        let rounds = u64::from(s.rounds) * u64::from(s.servers);
        assert!(
            loss > 0.0 || z.flushed * 10 <= rounds,
            "{} of {rounds} rounds flushed online, {} with the file",
            z.flushed,
            f.flushed
        );
    }
}

/// Online hot keys with everything at once: drifting asynchronous workers
/// (one slow, 16 pushes in flight), pushes that skip servers (rounds
/// misaligned across workers), a straggler, a worker that stops early, 2 %
/// loss with duplication and reordering; and drift around a PS-lite
/// barrier with worker 0's init pushes (MXNet): exact.
#[test]
fn online_exact_with_drift_skipped_servers_and_loss() {
    for seed in [31, 32, 33] {
        let base = if seed == 33 {
            barrier_scenario(seed, 0.01)
        } else {
            Scenario {
                skip_servers: true,
                ..Scenario::new(seed, 0.02)
            }
        };
        let s = Scenario {
            online: Some(change_over(20)),
            slow: Some(2),
            window: 16,
            ..base
        };
        let (_, z) = check("mixed", &s);
        println!(
            "  {} rounds closed, {} pushes whole, {} servers changed",
            z.closed_rounds, z.whole_pushes, z.online_changed
        );
    }
}

/// Checks `s` (exact, as [`check`] does) and that every server stepped
/// aside once, after changing its keys `changed` times each, and the job ended
/// within `1 / slack` of vanilla's time.
fn steps_aside(name: &str, s: &Scenario, changed: u64, slack: u64) {
    let (v, z) = check(name, s);
    let servers = u64::from(s.servers);
    assert_eq!(
        z.online_changed,
        changed * servers,
        "{name}: keys installed"
    );
    assert_eq!(
        z.online_aside, servers,
        "{name}: every server stepped aside"
    );
    assert!(
        z.end_ms <= v.end_ms + v.end_ms / slack,
        "{name}: {} ms against vanilla's {} ms",
        z.end_ms,
        v.end_ms
    );
}

/// Online hot keys where aggregation cannot pay: asynchronous workers
/// drifting apart (one slow, 16 pushes in flight). With the default rules
/// every server installs keys, sees its workers slow down (or its rounds wait
/// for the round timeout) and steps aside; with the drift rule
/// (`max_drift` 2) it steps aside at its decision, installing nothing. Either
/// way exact, and the job ends when the same job without Zebra does (with the
/// file, or with no rule to step aside, it ends a third later).
#[test]
fn online_steps_aside_when_workers_drift() {
    for (seed, loss) in [(28, 0.0), (29, 0.01)] {
        let s = Scenario {
            straggler: None,
            stops: Vec::new(),
            slow: Some(1),
            window: 16,
            online: Some(OnlineConfig::new(30)),
            online_from_nothing: true,
            ..Scenario::new(seed, loss)
        };
        steps_aside("aside", &s, 1, 50);
        let drift = Scenario {
            online: Some(OnlineConfig {
                max_drift: 2.0,
                ..OnlineConfig::new(30)
            }),
            ..s
        };
        steps_aside("drifted", &drift, 0, 50);
    }
}

/// Online hot keys with the default rules, where the rounds stop meeting
/// after the decision: a worker stops pushing (uneven push counts) while the
/// others go on, so each of their rounds waits for the switch's round
/// timeout. Once most of the last rounds were flushed, every server steps
/// aside: exact, and the job ends about when the same job without Zebra does
/// (with no rule, it ends far later: `online_when_a_worker_stops_early`).
#[test]
fn online_steps_aside_when_rounds_stop_meeting() {
    for (seed, loss) in [(34, 0.0), (35, 0.01)] {
        let s = Scenario {
            straggler: None,
            stops: vec![(3, 60)],
            online: Some(OnlineConfig::new(20)),
            online_from_nothing: true,
            ..Scenario::new(seed, loss)
        };
        steps_aside("stopped", &s, 1, 10);
    }
}

/// The pull half beside online hot keys in a job that aggregation slows
/// down (one push in flight, a worker that stops early): when a server
/// steps aside, its pull half stands aside at once rather than hold the
/// rounds in flight at its gate for workers that will not push them (to the
/// gate's timeout, 500 ms, per server): exact, no push held to the timeout,
/// and the job ends about when the same job without Zebra does.
#[test]
fn the_pull_half_stands_aside_with_aggregation() {
    for (seed, loss) in [(38, 0.0), (39, 0.01)] {
        let s = Scenario {
            straggler: None,
            stops: vec![(3, 60)],
            online: Some(OnlineConfig::new(20)),
            online_from_nothing: true,
            pull: true,
            window: 1,
            ..Scenario::new(seed, loss)
        };
        let (v, z) = check("pull-aside", &s);
        let servers = u64::from(s.servers);
        assert_eq!(z.online_aside, servers, "every server stepped aside");
        assert_eq!(z.pull_aside, servers, "and its pull half with it");
        assert_eq!(
            z.pull_gate_timeouts, 0,
            "no push held to the gate's timeout"
        );
        assert!(
            z.end_ms <= v.end_ms + v.end_ms / 10,
            "{} ms against vanilla's {} ms",
            z.end_ms,
            v.end_ms
        );
    }
}

/// Online hot keys with the default rules, a straggler (worker 1 is late by
/// 10-50 ms on 30 % of its pushes, every 4 ms): the servers install keys; with them every worker waits for
/// the straggler's pushes, the servers see their workers push slower than
/// while they counted (or most rounds wait for the straggler past the round
/// timeout), and step aside: exact, and the job ends about when the
/// same job without Zebra does (with the keys kept, a third later:
/// `online_change_over_is_exact_under_loss`).
#[test]
fn online_steps_aside_when_aggregation_slows_the_workers() {
    for (seed, loss) in [(21, 0.0), (22, 0.01)] {
        let s = Scenario {
            stops: Vec::new(),
            online: Some(OnlineConfig::new(30)),
            online_from_nothing: true,
            ..Scenario::new(seed, loss)
        };
        steps_aside("slower", &s, 1, 10);
    }
}

/// A hot-keys file with its watcher (`OnlineConfig::file`: every worker's
/// first 10 pushes to a server go whole and are timed, then the file's keys
/// are installed and watched with the online rules) in jobs where
/// aggregation costs more than it saves: a worker that stops early (the
/// others' rounds each wait for the switch's round timeout), a slow
/// asynchronous worker the others drift away from (16 pushes in flight), and
/// a straggler with a worker that stops late. With the file alone each ends
/// 1.3x to 2.5x later than without Zebra; watched, every server steps aside
/// (at its decision when the keys would save too little, or after installing
/// them), the job stays exact and ends about when the same job without
/// Zebra does.
#[test]
fn a_watched_file_steps_aside_when_aggregation_does_not_pay() {
    let stopped = |seed, loss| Scenario {
        straggler: None,
        stops: vec![(3, 60)],
        ..Scenario::new(seed, loss)
    };
    let slow = |seed, loss| Scenario {
        straggler: None,
        stops: Vec::new(),
        slow: Some(1),
        window: 16,
        ..Scenario::new(seed, loss)
    };
    for (name, file) in [
        ("stopped", stopped(34, 0.0)),
        ("stopped", stopped(35, 0.01)),
        ("slow", slow(28, 0.0)),
        ("slow", slow(29, 0.01)),
        ("default", Scenario::new(21, 0.0)),
        ("default", Scenario::new(22, 0.01)),
    ] {
        let (v, f) = check(name, &file);
        assert!(
            f.end_ms > v.end_ms + v.end_ms / 4,
            "{name}: the file alone costs: {} ms against vanilla's {} ms",
            f.end_ms,
            v.end_ms
        );
        let s = Scenario {
            online: Some(OnlineConfig::file(10)),
            ..file
        };
        let (v, z) = check(name, &s);
        let servers = u64::from(s.servers);
        assert_eq!(
            z.online_aside, servers,
            "{name}: every server stepped aside"
        );
        assert!(
            z.online_changed <= servers,
            "{name}: the file's keys installed at most once a server"
        );
        assert!(
            z.end_ms <= v.end_ms + v.end_ms / 10,
            "{name}: watched {} ms against vanilla's {} ms",
            z.end_ms,
            v.end_ms
        );
    }
}

/// A watched hot-keys file that steps aside and tries again (as
/// `online_tries_again_after_standing_aside`): drifting asynchronous workers,
/// a retry after 40 ms (doubling); each server installs the file's keys (or
/// steps aside at once when they would save too little), steps aside, counts
/// again (every worker pushing whole), installs them again or steps aside,
/// several times over the job: exact.
#[test]
fn a_watched_file_tries_again_after_standing_aside() {
    for (seed, loss) in [(36, 0.0), (37, 0.01)] {
        let s = Scenario {
            straggler: None,
            stops: Vec::new(),
            slow: Some(1),
            window: 16,
            online: Some(OnlineConfig {
                retry: Duration::from_millis(40),
                ..OnlineConfig::file(10)
            }),
            ..Scenario::new(seed, loss)
        };
        let (_, z) = check("file-retry", &s);
        println!(
            "  {} steps aside, {} recounts, {} installs",
            z.online_aside, z.online_recounts, z.online_changed
        );
        let servers = u64::from(s.servers);
        assert!(z.online_recounts >= servers, "every server tried again");
        assert!(
            z.online_changed > servers && z.online_changed + z.online_aside >= 3 * servers,
            "each decided, stepped aside, counted again and decided again; keys installed \
             after a recount"
        );
    }
}

/// A job that suits aggregation (aligned workers, dense hot part, no loss)
/// with a hot-keys file watched by `online`.
fn suits_aggregation(seed: u64, online: OnlineConfig) -> Scenario {
    Scenario {
        dense: true,
        straggler: None,
        stops: vec![],
        packet_size: 1472,
        online: Some(online),
        ..Scenario::new(seed, 0.0)
    }
}

/// A hot-keys file whose job suits aggregation (aligned workers, dense hot
/// part): the watcher installs the file's keys on every server and never
/// steps aside; the servers' bytes fall as with the file alone.
#[test]
fn a_watched_file_keeps_aggregating_a_job_that_suits_it() {
    for seed in [11, 13] {
        let s = suits_aggregation(seed, OnlineConfig::file(10));
        let (v, z) = check("watched", &s);
        let servers = u64::from(s.servers);
        assert_eq!(z.online_changed, servers, "the file's keys installed");
        assert_eq!(z.online_aside, 0, "no server stepped aside");
        assert!(
            hot_bytes(&z) * 2 < v.hot_entry_bytes,
            "hot bytes fall by half or more"
        );
        assert!(z.zmq_bytes + z.udp_bytes < v.zmq_bytes);
    }
}

/// Online hot keys that step aside and try again: drifting asynchronous
/// workers, 1 % loss, and a retry after 40 ms (doubling): each server steps
/// aside, counts again (every worker told, pushing whole), decides again,
/// several times over the job; every change of state at a round boundary of
/// its own: exact.
#[test]
fn online_tries_again_after_standing_aside() {
    for (seed, loss) in [(36, 0.0), (37, 0.01)] {
        let s = Scenario {
            straggler: None,
            stops: Vec::new(),
            slow: Some(1),
            window: 16,
            online: Some(OnlineConfig {
                retry: Duration::from_millis(40),
                ..OnlineConfig::new(10)
            }),
            online_from_nothing: true,
            ..Scenario::new(seed, loss)
        };
        let (_, z) = check("retry", &s);
        println!(
            "  {} steps aside, {} recounts, {} changes",
            z.online_aside, z.online_recounts, z.online_changed
        );
        assert!(
            z.online_recounts >= u64::from(s.servers),
            "every server tried again"
        );
        assert!(
            z.online_changed + z.online_aside >= 3 * u64::from(s.servers),
            "each decided, stepped aside, counted again and decided again"
        );
    }
}

/// The pull half (`docs/PULL.md`): after each answered push, every worker
/// pulls every hot key and pushes again only once that pull is answered.
/// Every hot value a worker gets, from its copy or from the server, is the
/// server app's value when the pull was sent; the sums equal vanilla's.
/// Aligned workers with loss on the hot path and on the updates (a lost
/// update is a gap: the copy starts again), and then a straggler and a
/// worker that stops early (the server's gate waits for it, then the pull
/// half stands aside, after a BREAK).
#[test]
fn the_pull_half_answers_exactly() {
    for (seed, loss) in [(31, 0.0), (32, 0.01), (33, 0.05)] {
        let s = Scenario {
            pull: true,
            window: 1,
            straggler: None,
            stops: vec![],
            ..Scenario::new(seed, loss)
        };
        let (_, z) = check("pull", &s);
        println!(
            "  pull half: {} hot values checked, {} pulls answered by the worker, {} merged",
            z.hot_checks, z.pull_local, z.pull_merged
        );
        assert!(z.hot_checks > 1000, "hot pulls checked");
        assert!(
            z.pull_local > u64::from(s.rounds) && z.pull_merged > u64::from(s.rounds),
            "loss {loss}: answered from the copies"
        );
    }
    let s = Scenario {
        pull: true,
        window: 1,
        ..Scenario::new(34, 0.01)
    };
    let (_, z) = check("pull-stop", &s);
    assert!(z.hot_checks > 1000);
}

/// Two-stage synchronization (`ZEBRA_SYNC=two-stage`, `docs/OSP.md`): each
/// worker's pushes are answered once their hot part settled (after the
/// first 4, checked against the servers' answers), the servers' answers
/// dropped; seeded loss on every UDP link, a straggler, a worker that
/// stops. Every push is applied exactly once (the final sums and the
/// per-worker request counts equal vanilla's), every push is answered
/// once (a second answer would find no push awaiting it), and every probe
/// pull, sent right after its push, sees every earlier push of its worker
/// applied, as on libzmq.
#[test]
fn two_stage_is_exact_and_pulls_see_every_earlier_push() {
    for (seed, loss) in [(41, 0.0), (42, 0.01), (43, 0.05)] {
        let s = Scenario {
            sync: SyncMode::TwoStage { staleness: 0 },
            ..Scenario::new(seed, loss)
        };
        let (v, z) = check("2-stage", &s);
        let exact = Sim::new(&Scenario::new(seed, loss), Mode::Zebra).run();
        println!(
            "  two-stage: {} pushes answered early ({} checked first), app done at {} ms \
             (exact {} ms, vanilla {} ms), {} stale pulls",
            z.early, z.early_verified, z.app_end_ms, exact.app_end_ms, v.app_end_ms, z.stale_pulls
        );
        println!(
            "  rounds flushed on the round timeout {} (exact {}), completed {} ({}); packets \
             refused WindowFull {} ({}), Late {} ({}); fallback pairs {} ({})",
            z.flushed,
            exact.flushed,
            z.completed,
            exact.completed,
            z.window_full,
            exact.window_full,
            z.late,
            exact.late,
            z.fallback_pairs,
            exact.fallback_pairs
        );
        assert!(z.early > 1000, "answered early");
        assert!(z.early_verified >= 4 * u64::from(s.workers) - 4);
        assert_eq!((z.stale_pulls, z.stale_digits), (0, 0), "no staleness");
    }
    for loss in [0.0, 0.01] {
        let s = Scenario {
            sync: SyncMode::TwoStage { staleness: 0 },
            ..barrier_scenario(45, loss)
        };
        let (_, z) = check("2-st-bar", &s);
        assert!(z.early > 100, "answered early around a barrier");
    }
    let s = Scenario {
        sync: SyncMode::TwoStage { staleness: 0 },
        pull: true,
        window: 1,
        straggler: None,
        stops: vec![],
        ..Scenario::new(44, 0.01)
    };
    let (_, z) = check("2-st-pull", &s);
    println!(
        "  two-stage with the pull half: {} early answers, {} pulls answered by the worker, {} merged",
        z.early, z.pull_local, z.pull_merged
    );
    assert!(z.early > 100 && z.hot_checks > 1000, "with the pull half");
    assert!(
        z.pull_local + z.pull_merged > u64::from(s.rounds),
        "a pull after an early answer waits for its round's update and is answered from it"
    );
}

/// `two-stage:S`: a server may serve a probe pull with up to `S` of its
/// worker's pushes to it still held (their rounds not settled); the pull
/// sees at least `pushed - S` of them and never more than were sent, and
/// every push is still applied exactly once. With a window of 4 pushes
/// and a straggler, pulls do pass held pushes.
#[test]
fn two_stage_staleness_is_bounded_and_exact() {
    for (seed, loss, staleness) in [(51, 0.0, 1), (52, 0.01, 2), (53, 0.05, 3)] {
        let s = Scenario {
            sync: SyncMode::TwoStage { staleness },
            window: 4,
            ..Scenario::new(seed, loss)
        };
        let (v, z) = check("2-st:S", &s);
        println!(
            "  two-stage:{staleness}: {} early answers, {} pulls passed held pushes, {} probe \
             pushes unseen in all, app done at {} ms (vanilla {} ms)",
            z.early, z.stale_pulls, z.stale_digits, z.app_end_ms, v.app_end_ms
        );
        assert!(z.early > 1000, "answered early");
        assert!(z.stale_pulls > 0, "pulls passed held pushes");
        assert!(
            z.stale_most >= 1 && z.stale_most <= u64::from(staleness),
            "at most S held pushes passed: {}",
            z.stale_most
        );
    }
}

/// `ZEBRA_SYNC_RANK=pgp` (`docs/OSP.md`): each server, starting with no key,
/// ranks the keys of every worker's first 10 pushes by Σ|g·p| (`g` pushed,
/// `p` the app's latest answer to a pull of the key) instead of by copies
/// saved. Every push carries keys `0..HOT + HEAVY`, alike in copies saved;
/// those from `HOT` on carry gradients 1000 times larger (so parameters too),
/// and the job's switch memory holds `HOT` keys' values. With pgp every
/// heavy key is chosen, ahead of every light one (the probe keys, whose
/// values encode the worker, weigh much too); by copies saved the smaller
/// keys win the ties and not every heavy key fits. Exact either way, with
/// loss on the hot path, in two-stage and exact mode, a straggler, a worker
/// that stops.
#[test]
fn pgp_ranking_is_exact_and_cuts_by_gradient_times_parameter() {
    use zebra_agent::Rank;
    for (seed, loss, staleness, rank) in [
        (61, 0.01, Some(0), Rank::Pgp),
        (62, 0.0, None, Rank::Pgp),
        (63, 0.02, Some(2), Rank::Pgp),
        (61, 0.01, Some(0), Rank::Saving),
    ] {
        let s = Scenario {
            online: Some(OnlineConfig {
                rank,
                ..change_over(10)
            }),
            online_from_nothing: true,
            weights: true,
            sync: staleness.map_or(SyncMode::Exact, |staleness| SyncMode::TwoStage {
                staleness,
            }),
            ..Scenario::new(seed, loss)
        };
        let (_, z) = check(&format!("rank {rank}"), &s);
        assert_eq!(
            z.online_changed,
            u64::from(s.servers),
            "every server chose keys"
        );
        for (i, keys) in z.final_keys.iter().enumerate() {
            let i = i as u16;
            let heavy: Vec<u64> = (HOT..HOT + HEAVY).map(|j| s.key(i, j)).collect();
            let probes: Vec<u64> = PROBES.iter().map(|&j| s.key(i, j)).collect();
            let at = |k: &u64| keys.iter().position(|x| x == k);
            let chosen = heavy.iter().filter(|k| at(k).is_some()).count();
            println!(
                "  rank {rank}, seed {seed}: server {i}: {} keys, {chosen} of {HEAVY} heavy",
                keys.len()
            );
            if rank == Rank::Pgp {
                let last = heavy
                    .iter()
                    .map(|k| at(k).expect("every heavy key chosen"))
                    .max()
                    .unwrap();
                assert!(
                    keys[..last]
                        .iter()
                        .all(|k| heavy.contains(k) || probes.contains(k)),
                    "seed {seed}: server {i}: a light key ranked above a heavy one: {keys:x?}"
                );
            } else {
                assert!(chosen < heavy.len(), "by copies saved: {keys:x?}");
            }
        }
    }
}

/// A switch that never answers (not running, unreachable, or another job
/// key): once a server learns its REGISTER went unanswered
/// (`register_wait_ms` in the shim), it steps aside before it installs any
/// key, and the job runs at its pace without Zebra; without that notice the
/// same job installs keys and their packets are given up after their
/// timeouts (in this simulation's short timeouts that costs little; in a
/// shim job with the defaults, seconds a round). When
/// the switch answers later, the server counts again at once and the job
/// aggregates from then on. Exact throughout, with and without loss.
#[test]
fn a_silent_switch_is_stepped_around_until_it_answers() {
    for (seed, loss) in [(41, 0.0), (42, 0.01)] {
        let dead = Scenario {
            straggler: None,
            stops: Vec::new(),
            dead_switch: Some((0, u64::MAX)),
            online: Some(OnlineConfig::new(10)),
            online_from_nothing: true,
            ..Scenario::new(seed, loss)
        };
        let servers = u64::from(dead.servers);
        let (v, blind) = check("silent-unnoticed", &dead);
        let noticed = Scenario {
            silent: Some((20_000, None)),
            ..dead.clone()
        };
        let (_, z) = check("silent", &noticed);
        assert_eq!(z.online_changed, 0, "no key installed while silent");
        assert_eq!(z.online_aside, servers, "every server stepped aside");
        assert_eq!(z.fallback_pairs, 0, "no hot packet given up");
        assert!(
            z.end_ms <= v.end_ms + v.end_ms / 10,
            "{} ms against vanilla's {} ms",
            z.end_ms,
            v.end_ms
        );
        assert!(
            blind.online_changed > 0 && blind.fallback_pairs > 0,
            "unnoticed, keys are installed and their packets given up: {} pairs",
            blind.fallback_pairs
        );
        let late = Scenario {
            dead_switch: Some((0, 300_000)),
            silent: Some((20_000, Some(300_000))),
            ..dead.clone()
        };
        let (_, z) = check("silent-then-answers", &late);
        assert_eq!(z.online_changed, servers, "keys installed once it answered");
        assert!(
            z.online_recounts >= servers && z.completed > 0,
            "counted again ({}) and aggregated ({} rounds)",
            z.online_recounts,
            z.completed
        );
    }
}

/// A hot-keys file watched without a probe (`OnlineConfig::watch`, what a
/// file gets by default in the shim): the workers aggregate with the file's
/// keys from their first push, each server keeps them after counting, and
/// steps aside when most rounds wait for the switch's round timeout. A job
/// that suits aggregation keeps aggregating, never stepping aside; one whose
/// worker stops early (the others' rounds then each wait for the timeout,
/// 1.3x the time without Zebra with the file alone) steps aside and ends
/// about when the same job without Zebra does. Exact either way.
#[test]
fn a_file_watched_without_a_probe_aggregates_at_once_and_steps_aside_when_it_costs() {
    for seed in [11, 13] {
        let s = suits_aggregation(seed, OnlineConfig::watch(10));
        let (v, z) = check("watch-suits", &s);
        assert_eq!(
            z.online_changed, 0,
            "the file's keys kept, not installed again"
        );
        assert_eq!(z.online_aside, 0, "no server stepped aside");
        assert_eq!(z.whole_pushes, 0, "no push went whole: no probe");
        assert!(
            hot_bytes(&z) * 2 < v.hot_entry_bytes,
            "hot bytes fall by half or more"
        );
    }
    for (seed, loss) in [(34, 0.0), (35, 0.01)] {
        let file = Scenario {
            straggler: None,
            stops: vec![(3, 60)],
            ..Scenario::new(seed, loss)
        };
        let s = Scenario {
            online: Some(OnlineConfig::watch(10)),
            ..file.clone()
        };
        // Kept (no keys installed), then every server stepped aside, the job
        // within a tenth of vanilla's time.
        steps_aside("watch-stopped", &s, 0, 10);
    }
}

/// A switch restart (killed, started again 30 ms later, the servers told
/// 40 ms after that) with 1 % loss and a straggler (K3, docs/RELIABILITY.md):
/// the seeds that lost or doubled a worker's contribution before the new
/// switch answered `Unopened` and the servers checked that an aggregate holds
/// what a worker had added, then a sweep.
#[test]
fn a_switch_restart_with_loss_and_a_straggler_is_exact() {
    let found = [
        (107, 200),
        (114, 360),
        (124, 360),
        (125, 360),
        (129, 360),
        (142, 280),
        (143, 280),
        (158, 280),
        (181, 360),
        (185, 200),
        (190, 360),
        (208, 200),
        (215, 280),
        (218, 360),
    ];
    let sweep = (600..620).flat_map(|seed| [200, 280, 360].map(|at| (seed, at)));
    for (seed, at) in found.into_iter().chain(sweep) {
        check(
            &format!("restart seed {seed} at {at} ms"),
            &restart_scenario(seed, at, 0),
        );
    }
}

/// The restart scenario of the test above, in variants: 0 as there (no loss
/// for every third seed), 1 with 5 % loss, 2 with the servers told 400 ms
/// late, 3 with the pull half, 4 in MXNet's style.
fn restart_scenario(seed: u64, at_ms: u64, variant: u32) -> Scenario {
    let (loss, told) = match variant {
        1 => (0.05, 40_000),
        2 => (0.01, 400_000),
        _ if seed.is_multiple_of(3) => (0.0, 40_000),
        _ => (0.01, 40_000),
    };
    Scenario {
        restart: Some((at_ms * 1000, at_ms * 1000 + 30_000, told)),
        stops: vec![],
        straggler: Some(1),
        pull: variant == 3,
        style: if variant == 4 {
            Style::Mxnet
        } else {
            Style::Byteps
        },
        ..Scenario::new(seed, loss)
    }
}

/// The failover scenario: the primary killed for good at `at` µs.
fn failover_scenario(seed: u64, at: u64, loss: f64) -> Scenario {
    Scenario {
        failover: Some(at),
        ..Scenario::new(seed, loss)
    }
}

/// A seeded hunt over restart scenarios (seeds `HUNT_LO..HUNT_HI`, default
/// 100..220, restarts at 200, 280 and 360 ms, variant `HUNT_V` of
/// `restart_scenario`; with `HUNT_FAILOVER=1` the failover scenario instead,
/// the primary killed at those moments, 1 % loss for odd seeds): prints
/// every failure, then fails if any did.
#[test]
#[ignore]
fn restart_hunt() {
    let var = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (lo, hi, variant) = (var("HUNT_LO", 100), var("HUNT_HI", 220), var("HUNT_V", 0));
    let failover = var("HUNT_FAILOVER", 0) == 1;
    std::panic::set_hook(Box::new(|_| {}));
    let mut failed = Vec::new();
    let mut n = 0;
    for seed in lo..hi {
        for at in [200, 280, 360] {
            n += 1;
            let s = if failover {
                failover_scenario(seed, at * 1000, if seed % 2 == 1 { 0.01 } else { 0.0 })
            } else {
                restart_scenario(seed, at, variant as u32)
            };
            if let Err(e) = std::panic::catch_unwind(|| check("hunt", &s)) {
                let m = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                failed.push(format!("seed {seed} at {at} ms: {m:.200}"));
            }
        }
    }
    let _ = std::panic::take_hook();
    for f in &failed {
        eprintln!("FAIL {f}");
    }
    eprintln!("{} of {n} scenarios failed", failed.len());
    assert!(failed.is_empty());
}
