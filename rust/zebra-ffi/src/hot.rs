//! In-network aggregation inside a PS-lite process (`ZEBRA_ENABLE=1` with
//! `ZEBRA_SWITCH`), and push traces (`ZEBRA_TRACE`): where the shim's sockets meet `zebra-agent` (the
//! PS-lite-level split and merge) and `zebra-hotpath` (UDP to the switch).
//!
//! - **Worker** (`DMLC_ROLE=worker`): every DEALER is hooked. The parts of a
//!   message are kept until its last part; the whole message then goes
//!   through [`WorkerAgent::on_send_to_recver`]. A split push leaves as its
//!   cold message (with the PUSH trailer), then its hot pairs go to the
//!   switch on the [`WorkerLink`] of the server's job. One thread per link
//!   turns fallbacks and settled rounds into SETTLE messages on the DEALER of
//!   that server.
//! - **Server** (`DMLC_ROLE=server`): the ROUTER is hooked. A pump thread
//!   takes whole messages from the engine through [`ServerAgent::on_recv`];
//!   a thread on the [`ServerLink`] feeds aggregates and applied fallbacks to
//!   the agent and calls its `poll`. What the agent releases waits in an
//!   inbox that the app's `zmq_msg_recv` reads part by part. What the app
//!   sends on the ROUTER (BytePS answers workers there) leaves whole, so
//!   that the agent's own messages to workers never land between its parts.
//! - **Online hot keys** (`ZEBRA_HOT=online`): a server's agent sends its
//!   decision on the ROUTER to each worker's DEALER; the DEALER hook takes
//!   it out of what the app reads (BytePS) and reads what waits before each
//!   push (dmlc and MXNet never read their DEALERs).
//! - **The pull half** (`ZEBRA_PULL=switch`, the default with a switch;
//!   `docs/PULL.md`): after each round a server's agent reads the round's
//!   hot values back from the app with a pull shaped like the workers' own,
//!   takes the app's answer out of what it sends on the ROUTER, and the
//!   [`ServerLink`] sends the values once through the switch to every
//!   worker. A worker's [`PullAgent`] keeps them and answers the app's
//!   pulls of hot keys from them when they are what the server would
//!   return: the answer is put among what the app reads from the DEALER
//!   (BytePS's van reads its DEALERs; dmlc's and MXNet's servers answer on
//!   DEALERs the shim does not see yet, so their pulls go to the servers).
//! - The process learns its PS-lite node id from the identity `ps<id>` it
//!   gives its DEALERs (PS-lite sets it once the scheduler has assigned the
//!   id, before any push): the worker or server side starts then. Messages
//!   before that pass unchanged.
//!
//! - **Trace** (`ZEBRA_TRACE`, with or without a switch): the worker side
//!   also records the keys of every push it sends (`zebra-hotkeys`'s trace
//!   format), the input of `zebra profile`.
//!
//! The job's size comes from PS-lite's own `DMLC_NUM_WORKER` and
//! `DMLC_NUM_SERVER`; the protocol settings from `ZEBRA_HOT_CONFIG` (the file
//! `zebra switch --config` reads), the hot keys from `ZEBRA_HOT_KEYS` (and
//! `ZEBRA_HOT`).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::time::Duration;

use crate::stats::{debug_to_json, json_string};
use bytes::Bytes;
use zebra_agent::values::F32_BYTES;
use zebra_agent::{
    AgentConfig, Aside, Delivery, FromServer, HotSet, Outgoing, PullAgent, PullConfig, PullSend,
    RowUpdate, ServerAgent, SwitchHeard, WorkerAgent,
};
use zebra_config::{Flavor, HotLoss, HotMode};
use zebra_engine::consts::{ZMQ_DEALER, ZMQ_POLLIN, ZMQ_ROUTER};
use zebra_engine::{Error, Part, Socket};
use zebra_hotkeys::TraceWriter;
use zebra_hotpath::{
    Clock, LinkConfig, ServerEvent, ServerLink, Settings, StartError, WorkerEvent, WorkerLink,
};
use zebra_proto::wire::Admission;
use zebra_pslite::{
    node_id, rank_of, role_of, Detector, Format, FormatChoice, Message, Role, Route,
};

fn flavor(f: Flavor) -> FormatChoice {
    match f {
        Flavor::Auto => FormatChoice::Auto,
        Flavor::Byteps => FormatChoice::Fixed(Format::Byteps),
        Flavor::Protobuf => FormatChoice::Fixed(Format::Protobuf),
    }
}

/// How long a link's event thread sleeps at most between checks.
const EVENT_WAIT: Duration = Duration::from_millis(100);

/// The pull half: a worker's first answers from its copy that are checked
/// against the server's instead of given (`PullAgent`).
const PULL_CHECKS: u32 = 8;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// This process's part in a PS-lite job, from `DMLC_ROLE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ProcessRole {
    Worker,
    Server,
    Scheduler,
}

/// What the hot path of this process is started with, checked at start-up.
#[derive(Debug)]
pub struct Plan {
    role: ProcessRole,
    /// In-network aggregation (`ZEBRA_SWITCH`).
    aggregation: Option<Aggregation>,
    /// `ZEBRA_TRACE` (`%r` not yet replaced) and its bound in bytes.
    trace: Option<(String, u64)>,
}

/// The switch, the hot keys and the protocol settings every party shares.
#[derive(Debug)]
struct Aggregation {
    switch: SocketAddr,
    hot: Arc<HotSet>,
    agent: AgentConfig,
    proto: zebra_proto::Config,
    loss: Option<HotLoss>,
    /// `online_out`: where a server writes its online decision (`%r`: rank).
    online_out: Option<String>,
    /// Nothing sized the jobs: servers ask the switch to admit theirs
    /// (REGISTER with admission), and step aside if it does not.
    zero_config: bool,
    /// `register_wait_ms`: a server whose REGISTER the switch leaves
    /// unanswered this long steps aside.
    register_wait: Duration,
}

/// PS-lite's count `name`, and its value as typed; 0 when it is missing
/// or not a positive number (a problem is pushed).
fn env_count(name: &str, problems: &mut Vec<String>) -> (u16, String) {
    match std::env::var(name) {
        Ok(v) => match v.trim().parse::<u16>() {
            Ok(n) if n > 0 => (n, v),
            _ => {
                problems.push(format!(
                    "{name}={v:?}: expected a positive number (ZEBRA_SWITCH needs the job's size)"
                ));
                (0, v)
            }
        },
        Err(_) => {
            problems.push(format!(
                "ZEBRA_SWITCH is set but {name} is not: the hot path needs PS-lite's job size \
                 (every PS-lite launcher sets DMLC_NUM_WORKER and DMLC_NUM_SERVER)"
            ));
            (0, String::new())
        }
    }
}

impl Plan {
    /// The plan for `config`: `None` in mode off or without `ZEBRA_SWITCH`
    /// and `ZEBRA_TRACE`; every problem named.
    pub fn from_config(config: &zebra_config::Config) -> Result<Option<Plan>, Vec<String>> {
        if !config.enable || (config.switch.is_none() && config.trace.is_none()) {
            return Ok(None);
        }
        let what = if config.switch.is_some() {
            "ZEBRA_SWITCH"
        } else {
            "ZEBRA_TRACE"
        };
        let role = match std::env::var("DMLC_ROLE").as_deref() {
            Ok("worker") => ProcessRole::Worker,
            Ok("server") => ProcessRole::Server,
            Ok("scheduler") => ProcessRole::Scheduler,
            Ok(other) => {
                return Err(vec![format!(
                    "DMLC_ROLE={other:?}: expected worker, server or scheduler"
                )])
            }
            Err(_) => {
                return Err(vec![format!(
                    "{what} is set but DMLC_ROLE is not: it is for PS-lite processes"
                )])
            }
        };
        let aggregation = match config.switch.as_deref() {
            Some(switch) => Aggregation::from_config(config, switch)?,
            None => None,
        };
        Ok(Some(Plan {
            role,
            aggregation,
            trace: config
                .trace
                .as_ref()
                .map(|t| (t.clone(), config.trace_max_bytes)),
        }))
    }
}

impl Aggregation {
    /// The aggregation `config` asks for; `None` when its hot-keys file lists
    /// no key (nothing to aggregate: every push goes to its server unchanged).
    fn from_config(
        config: &zebra_config::Config,
        switch: &str,
    ) -> Result<Option<Aggregation>, Vec<String>> {
        let mut problems = Vec::new();
        let (workers, workers_typed) = env_count("DMLC_NUM_WORKER", &mut problems);
        let (servers, servers_typed) = env_count("DMLC_NUM_SERVER", &mut problems);
        let mut settings = match &config.hot_config {
            Some(path) => {
                Settings::load(path).map_err(|e| vec![format!("ZEBRA_HOT_CONFIG: {e}")])?
            }
            None => Settings::new(),
        };
        // Bad values are reported by variable and as typed (`Settings::set_from_env`).
        let mut set = |key: &str, var: &str, typed: &str| {
            if let Err(e) = settings.set_from_env(key, var, typed) {
                problems.push(e.to_string());
            }
        };
        set("switch", "ZEBRA_SWITCH", switch);
        if let Some(path) = &config.hot_keys {
            set("hot_keys", "ZEBRA_HOT_KEYS", &path.display().to_string());
        }
        if workers > 0 && servers > 0 {
            set("workers", "DMLC_NUM_WORKER", &workers_typed);
            set("servers", "DMLC_NUM_SERVER", &servers_typed);
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        if let Some(key) = &config.job_key {
            // The job's token is derived from it (docs/SECURITY.md).
            settings.set_job_key(key.clone(), "ZEBRA_JOB_KEY/ZEBRA_JOB_KEY_FILE");
        }
        let built = settings.build().map_err(|e| e.problems)?;
        if let Some(file) = &built.no_keys {
            log::warn!(
                "zebra: the hot-keys file {file} lists no key (zebra profile found nothing that \
                 aggregation saves; its comments say why): every push goes to its server \
                 unchanged, without the switch"
            );
            return Ok(None);
        }
        let Some(hot) = built.hot_set.clone() else {
            return Err(vec![
                "ZEBRA_SWITCH is set without hot keys: set ZEBRA_HOT_KEYS (or hot_keys in \
                 ZEBRA_HOT_CONFIG)"
                    .into(),
            ]);
        };
        // Nothing sized the jobs: each server asks the switch for its share
        // and finds its keys online, unless the user asked for a file.
        let file = matches!(config.hot_mode, HotMode::File | HotMode::Watched { .. });
        let zero_config = built.zero_config && !file;
        if hot.is_empty() && file {
            return Err(vec![
                "no hot key: the hot-path settings size the jobs (online_capacity) without a \
                 hot-keys file, which only ZEBRA_HOT=online fills; set ZEBRA_HOT=online or \
                 ZEBRA_HOT_KEYS"
                    .into(),
            ]);
        }
        let mut agent = AgentConfig::new(built.job_base, workers, servers);
        agent.delivery = match config.delivery {
            zebra_config::Delivery::PerWorker => Delivery::PerWorker,
            zebra_config::Delivery::Merged => Delivery::Merged,
        };
        agent.format = flavor(config.flavor);
        agent.settle_timeout = built.settle_timeout;
        if config.pull == zebra_config::Pull::Switch {
            // A copy that heard nothing for half the time a server takes to
            // give an update up is dropped (docs/PULL.md).
            let expiry = zebra_proto::update::gap_timeout(&built.proto) / 2;
            agent.pull = Some(PullConfig {
                expiry: expiry.max(Duration::from_millis(100)),
                ..PullConfig::default()
            });
        }
        agent.max_clean_values = u32::from(built.proto.max_seqs);
        let (online_rounds, watched) = match config.hot_mode {
            HotMode::Online { rounds } => (Some(rounds), false),
            HotMode::Watched { rounds } => (Some(rounds), true),
            HotMode::Auto if hot.is_empty() => (Some(None), false),
            HotMode::Auto | HotMode::File => (None, false),
        };
        if let Some(rounds) = online_rounds {
            let mut online = built.online.clone();
            online.rounds = rounds.unwrap_or(online.rounds);
            // The file's watcher (zebra_agent::OnlineConfig::fixed).
            online.fixed = watched;
            agent.online = Some(online);
        }
        agent.validate().map_err(|e| vec![e.to_string()])?;
        let switch = built
            .switch
            .ok_or_else(|| vec![format!("ZEBRA_SWITCH={switch}: no address")])?;
        Ok(Some(Aggregation {
            switch,
            hot,
            agent,
            proto: built.proto,
            loss: config.hot_loss.or(built.loss),
            online_out: built.online_out,
            zero_config,
            register_wait: built.register_wait,
        }))
    }
}

impl Aggregation {
    /// A link of this process: on the process's user-level stack when `ZEBRA_NET` asks for
    /// one (the same stack, port and address as its `tcp://` endpoints).
    fn link(&self, job: u16, rank: u16) -> Result<LinkConfig, StartError> {
        let mut c = LinkConfig::new(self.proto.clone(), job, rank, self.switch);
        c.loss = self.loss;
        c.stack = zebra_engine::process_stack().map_err(|source| StartError::Io {
            what: "start the user-level stack (ZEBRA_NET)".into(),
            source,
        })?;
        Ok(c)
    }
}

/// The hot path of this process.
struct Process {
    plan: &'static Plan,
    clock: Clock,
    worker: OnceLock<Option<Arc<WorkerSide>>>,
    server: OnceLock<Option<Arc<ServerSide>>>,
    router: Mutex<Weak<RouterHook>>,
}

static PROCESS: OnceLock<Option<Process>> = OnceLock::new();

fn process() -> Option<&'static Process> {
    PROCESS
        .get_or_init(|| {
            crate::hot_plan().map(|plan| Process {
                plan,
                clock: Clock::new(),
                worker: OnceLock::new(),
                server: OnceLock::new(),
                router: Mutex::new(Weak::new()),
            })
        })
        .as_ref()
}

impl Process {
    fn worker(&self) -> Option<&Arc<WorkerSide>> {
        self.worker.get().and_then(Option::as_ref)
    }

    fn server(&self) -> Option<&Arc<ServerSide>> {
        self.server.get().and_then(Option::as_ref)
    }

    /// A DEALER of this process was given identity `ps<id>`.
    fn learn_id(&'static self, id: i32) {
        match (role_of(id), self.plan.role) {
            (Role::Worker, ProcessRole::Worker) => {
                self.worker
                    .get_or_init(|| WorkerSide::start(self, rank_of(id) as u16));
            }
            (Role::Server, ProcessRole::Server) => {
                self.server
                    .get_or_init(|| ServerSide::start(self, rank_of(id) as u16));
            }
            (Role::Scheduler, _) => {}
            (role, mine) => log::warn!(
                "zebra: node id {id} ({role:?}) in a process with DMLC_ROLE {mine:?}: no hot path"
            ),
        }
    }
}

/// What a socket of this process does besides the engine's work.
#[derive(Debug, Default)]
pub enum Hook {
    /// Nothing: the engine alone.
    #[default]
    None,
    /// A worker's DEALER.
    Dealer(Arc<DealerHook>),
    /// A server's ROUTER.
    Router(Arc<RouterHook>),
}

impl Hook {
    /// The hook for a new socket of type `socket_type`.
    pub fn for_socket(socket: &Socket, socket_type: i32) -> Hook {
        let Some(p) = process() else {
            return Hook::None;
        };
        match (socket_type, p.plan.role) {
            (ZMQ_DEALER, ProcessRole::Worker) => Hook::Dealer(Arc::new(DealerHook {
                socket: socket.clone(),
                parts: Mutex::new(Vec::new()),
                recv: Mutex::new(DealerRecv::default()),
            })),
            (ZMQ_ROUTER, ProcessRole::Server) if p.plan.aggregation.is_some() => {
                let hook = RouterHook::start(socket.clone());
                *lock(&p.router) = Arc::downgrade(&hook);
                Hook::Router(hook)
            }
            _ => Hook::None,
        }
    }
}

/// A socket option was set (and taken by the engine): a DEALER's identity
/// `ps<id>` tells this process its PS-lite node id.
pub fn on_option(socket_type: i32, option: i32, value: &[u8]) {
    if socket_type != ZMQ_DEALER || option != zebra_engine::consts::opt::ROUTING_ID {
        return;
    }
    if let (Some(p), Some(id)) = (process(), node_id(value)) {
        p.learn_id(id);
    }
}

/// Sends a whole message on the engine socket, blocking.
fn send_all(socket: &Socket, frames: Vec<Bytes>) -> Result<(), Error> {
    let n = frames.len();
    for (i, f) in frames.into_iter().enumerate() {
        socket.send(f, i + 1 < n, false)?;
    }
    Ok(())
}

/// A worker's DEALER: keeps a message's parts until the last one, and
/// takes a server's online decision (a one-frame Zebra message) out of what
/// it receives.
#[derive(Debug)]
pub struct DealerHook {
    socket: Socket,
    /// The message being assembled; its lock also keeps a SETTLE from
    /// interleaving with a message being sent.
    parts: Mutex<Vec<Bytes>>,
    recv: Mutex<DealerRecv>,
}

/// The receiving side of a worker's DEALER. BytePS's van reads its DEALERs
/// (its servers answer through their ROUTER); dmlc's and MXNet's never do.
/// Either way a HOTSET from the server must be seen: the app's reads filter
/// it out, and before each push Zebra reads whatever waits, keeping the
/// app's parts, in order, for the app's next reads.
#[derive(Debug, Default)]
struct DealerRecv {
    /// Parts of the app's messages read by Zebra, not yet by the app.
    kept: AppParts,
    /// The last part read from the engine had MORE (a message boundary
    /// comes after a part without it).
    in_message: bool,
}

/// Parts waiting for the app, and MORE of the last one it took.
#[derive(Debug, Default)]
struct AppParts {
    parts: VecDeque<Part>,
    more: bool,
}

impl AppParts {
    fn push(&mut self, part: Part) {
        self.parts.push_back(part);
    }

    /// The next part for the app.
    fn pop(&mut self) -> Option<Part> {
        let p = self.parts.pop_front()?;
        self.more = p.more;
        Some(p)
    }

    /// `ZMQ_POLLIN` when a part waits.
    fn events(&self) -> i32 {
        if self.parts.is_empty() {
            0
        } else {
            ZMQ_POLLIN
        }
    }
}

impl DealerHook {
    /// One part of the app's message.
    pub fn send(self: &Arc<Self>, data: Bytes, more: bool) -> Result<(), Error> {
        let mut parts = lock(&self.parts);
        parts.push(data);
        if more {
            return Ok(());
        }
        let frames = std::mem::take(&mut *parts);
        match process().and_then(Process::worker) {
            Some(w) => w.send(self, frames),
            None => send_all(&self.socket, frames),
        }
    }

    /// A message of Zebra's own (SETTLE), between the app's messages.
    fn send_whole(&self, frames: Vec<Vec<u8>>) -> Result<(), Error> {
        let _guard = lock(&self.parts);
        send_all(&self.socket, frames.into_iter().map(Bytes::from).collect())
    }

    /// One part from the engine for `st`: a one-frame Zebra message at a
    /// message boundary is handed to the worker side and skipped.
    fn next_part(&self, st: &mut DealerRecv, dontwait: bool) -> Result<Part, Error> {
        loop {
            let part = self.socket.recv(dontwait)?;
            if !st.in_message && !part.more && zebra_agent::frame::has_magic(&part.data) {
                match process().and_then(Process::worker) {
                    Some(w) => w.on_server_message(&part.data),
                    None => log::error!("zebra: a Zebra message on a DEALER before the worker side started, dropped"),
                }
                continue;
            }
            st.in_message = part.more;
            return Ok(part);
        }
    }

    /// The app's receive.
    pub fn recv(&self, dontwait: bool) -> Result<Part, Error> {
        let mut st = lock(&self.recv);
        if let Some(p) = st.kept.pop() {
            return Ok(p);
        }
        if let Some(s) = pull_splitter() {
            self.read_message(&mut st, dontwait, s)?;
            return st.kept.pop().ok_or(Error::Again);
        }
        let part = self.next_part(&mut st, dontwait)?;
        st.kept.more = part.more;
        Ok(part)
    }

    /// The pull half: reads one whole message from the engine, gives it to
    /// the worker's pull agent (a server's answer to a split pull comes out
    /// whole), and keeps what comes out for the app.
    fn read_message(&self, st: &mut DealerRecv, dontwait: bool, s: &Splitter) -> Result<(), Error> {
        let mut frames = Vec::new();
        let mut more = true;
        while more {
            let part = self.next_part(st, dontwait && frames.is_empty())?;
            more = part.more;
            frames.push(part.data.to_vec());
        }
        if let Some(frames) = s.on_recv(frames) {
            keep_message(&mut st.kept, frames);
        }
        Ok(())
    }

    /// The pull half: an answer made here for the app, among what it reads.
    fn inject(&self, frames: Vec<Vec<u8>>) {
        keep_message(&mut lock(&self.recv).kept, frames);
        zebra_engine::notify_activity();
    }

    /// Before a push: reads what waits (without blocking), so that a
    /// server's decision is seen even if the app never reads this DEALER.
    /// Skipped while the app is in a blocking receive (which sees it).
    fn read_waiting(&self) {
        let Ok(mut st) = self.recv.try_lock() else {
            return;
        };
        if let Some(s) = pull_splitter() {
            while self.read_message(&mut st, true, s).is_ok() {}
            return;
        }
        loop {
            match self.next_part(&mut st, true) {
                Ok(part) => st.kept.push(part),
                Err(Error::Again) if st.in_message => std::thread::yield_now(),
                Err(_) => return,
            }
        }
    }

    /// `ZMQ_POLLIN` when kept parts wait.
    pub fn events(&self) -> i32 {
        lock(&self.recv).kept.events()
    }

    /// `ZMQ_RCVMORE` of the last part the app took.
    pub fn more(&self) -> bool {
        lock(&self.recv).kept.more
    }
}

/// Appends a whole message's parts to what the app reads.
fn keep_message(kept: &mut AppParts, frames: Vec<Vec<u8>>) {
    let n = frames.len();
    for (i, f) in frames.into_iter().enumerate() {
        kept.push(Part {
            data: Bytes::from(f),
            more: i + 1 < n,
        });
    }
}

/// The worker's splitter when the pull half is on.
fn pull_splitter() -> Option<&'static Splitter> {
    let s = process()?.worker()?.splitter.as_deref()?;
    s.pulls.as_ref().map(|_| s)
}

/// The worker side of this process: the split (with a switch) and the trace.
struct WorkerSide {
    rank: u16,
    splitter: Option<Arc<Splitter>>,
    tracer: Option<Mutex<Tracer>>,
}

impl WorkerSide {
    fn start(p: &'static Process, rank: u16) -> Option<Arc<WorkerSide>> {
        let splitter = p
            .plan
            .aggregation
            .as_ref()
            .and_then(|a| Splitter::start(a, rank, &p.clock));
        let tracer = p
            .plan
            .trace
            .as_ref()
            .and_then(|(path, max)| Tracer::create(path, *max, rank))
            .map(Mutex::new);
        Some(Arc::new(WorkerSide {
            rank,
            splitter,
            tracer,
        }))
    }

    /// A server's message to this worker (its online decision).
    fn on_server_message(&self, frame: &[u8]) {
        let Some(s) = &self.splitter else {
            log::error!(
                "zebra: worker {}: a server's Zebra message without a hot path, dropped",
                self.rank
            );
            return;
        };
        let mut agent = lock(&s.agent);
        match agent.on_recv(&[frame]) {
            Ok(FromServer::HotSet { server }) => {
                if let Some(p) = &s.pulls {
                    lock(p).reset(server);
                }
                log::info!(
                    "zebra: worker {}: online hot-key decision {} of {} taken",
                    self.rank,
                    agent.stats().hotsets,
                    s.links.len()
                )
            }
            Ok(FromServer::Restart {
                server,
                job,
                through,
                resend_from,
                epoch,
            }) => {
                drop(agent);
                log::warn!(
                    "zebra: worker {}: server {server} saw the switch start again (epoch \
                     {epoch:#010x}): resending what it held, rounds up to {through} to the server",
                    self.rank
                );
                match s.links.get(&job) {
                    Some(link) => link.restart(through, resend_from),
                    None => log::error!(
                        "zebra: worker {}: RESTART for job {job}, not mine",
                        self.rank
                    ),
                }
            }
            Err(e) => log::error!("zebra: worker {}: {e}", self.rank),
        }
    }

    fn send(&self, dealer: &Arc<DealerHook>, frames: Vec<Bytes>) -> Result<(), Error> {
        if let Some(t) = &self.tracer {
            lock(t).record(self.rank, &frames);
        }
        match &self.splitter {
            Some(s) => s.send(dealer, frames),
            None => send_all(&dealer.socket, frames),
        }
    }

    fn report(&self) -> String {
        let mut out = String::new();
        if let Some(s) = &self.splitter {
            out.push_str(&s.report());
        }
        if let Some(t) = &self.tracer {
            out.push_str(&lock(t).report());
        }
        out
    }

    /// The same counters as JSON members (`"worker":{..}` and `"trace":{..}`, each
    /// when there is one), for `ZEBRA_STATS_INTERVAL`.
    fn json(&self, members: &mut Vec<String>) {
        if let Some(s) = &self.splitter {
            members.push(format!("\"worker\":{}", s.json()));
        }
        if let Some(t) = &self.tracer {
            members.push(format!("\"trace\":{}", lock(t).json()));
        }
    }
}

/// `ZEBRA_TRACE`: the keys of every push this worker sends, each with its
/// number of `f32` values (its bytes / 4: what a hot-keys file's `VALUES`
/// counts).
struct Tracer {
    writer: TraceWriter,
    path: String,
    detector: Detector,
    pushes: u32,
    unparsed: u64,
}

impl Tracer {
    fn create(path: &str, max_bytes: u64, rank: u16) -> Option<Tracer> {
        let path = path.replace("%r", &rank.to_string());
        match TraceWriter::create(std::path::Path::new(&path), max_bytes) {
            Ok(writer) => {
                log::info!("zebra: worker {rank}: recording pushes to {path}");
                Some(Tracer {
                    writer,
                    path,
                    detector: Detector::new(FormatChoice::Auto),
                    pushes: 0,
                    unparsed: 0,
                })
            }
            Err(e) => {
                log::error!("zebra: ZEBRA_TRACE {path}: {e}; no trace is recorded");
                None
            }
        }
    }

    /// Records the message if it is a push request with data.
    fn record(&mut self, rank: u16, frames: &[Bytes]) {
        let Some((meta, data)) = frames.split_first() else {
            return;
        };
        let Ok((format, m)) = self.detector.parse(meta) else {
            self.unparsed += 1;
            return;
        };
        if !m.is_push_request() {
            return;
        }
        let data: Vec<&[u8]> = data.iter().map(|b| &b[..]).collect();
        let keys: Option<Vec<(u64, u32)>> =
            Message::parse(format, meta, &data).ok().and_then(|msg| {
                let view = msg.kv().ok()??;
                let keys = view
                    .entries()
                    .ok()?
                    .map(|(k, v, _)| (k, (v.len() / F32_BYTES) as u32))
                    .collect();
                Some(keys)
            });
        let Some(keys) = keys else {
            self.unparsed += 1;
            return;
        };
        self.pushes += 1;
        // Flushed per push: the writer lives until the process exits, and
        // nothing runs at exit that could flush it.
        let written = self
            .writer
            .record(u32::from(rank), self.pushes, &keys)
            .and_then(|_| self.writer.flush());
        if let Err(e) = written {
            log::error!("zebra: trace {}: {e}", self.path);
        }
    }

    fn json(&self) -> String {
        format!(
            "{{\"pushes\":{},\"path\":{},\"bytes\":{},\"not_recorded\":{},\"unparsed\":{}}}",
            self.pushes,
            json_string(&self.path),
            self.writer.bytes_written(),
            self.writer.dropped(),
            self.unparsed
        )
    }

    fn report(&mut self) -> String {
        if let Err(e) = self.writer.flush() {
            log::error!("zebra: trace {}: {e}", self.path);
        }
        format!(
            "trace: {} pushes recorded to {} ({} bytes, {} not recorded, {} unparsed messages)\n",
            self.pushes,
            self.path,
            self.writer.bytes_written(),
            self.writer.dropped(),
            self.unparsed
        )
    }
}

/// The worker's split of pushes into cold messages and hot pairs.
struct Splitter {
    agent: Mutex<WorkerAgent>,
    /// The pull half (locked after `agent` when both are).
    pulls: Option<Mutex<PullAgent>>,
    /// Signalled when an update arrives (a pull may wait for one).
    updated: Condvar,
    clock: &'static Clock,
    links: BTreeMap<u16, WorkerLink>,
    /// The DEALER that last carried a split push to each server.
    dealers: Mutex<HashMap<u16, Weak<DealerHook>>>,
    push_errors: AtomicU64,
    settle_errors: AtomicU64,
}

impl Splitter {
    fn start(plan: &Aggregation, rank: u16, clock: &'static Clock) -> Option<Arc<Splitter>> {
        let agent = match WorkerAgent::new(plan.agent.clone(), plan.hot.clone(), rank) {
            Ok(a) => a,
            Err(e) => {
                log::error!(
                    "zebra: worker {rank}: no hot path: {e}; every key goes to the servers"
                );
                return None;
            }
        };
        let mut links = BTreeMap::new();
        for job in &plan.proto.jobs {
            match plan.link(job.id, rank).and_then(WorkerLink::start) {
                Ok(l) => {
                    links.insert(job.id, l);
                }
                Err(e) => {
                    log::error!(
                        "zebra: worker {rank}: hot-path link of job {} failed: {e}; every key \
                         goes to the servers",
                        job.id
                    );
                    return None;
                }
            }
        }
        let pulls = plan.agent.pull.map(|c| {
            Mutex::new(PullAgent::new(
                c,
                plan.agent.format,
                plan.hot.ranges().clone(),
                (plan.agent.app_id, plan.agent.customer_id),
                PULL_CHECKS,
            ))
        });
        let side = Arc::new(Splitter {
            agent: Mutex::new(agent),
            pulls,
            updated: Condvar::new(),
            clock,
            links,
            dealers: Mutex::new(HashMap::new()),
            push_errors: AtomicU64::new(0),
            settle_errors: AtomicU64::new(0),
        });
        for &job in side.links.keys() {
            let server = plan.agent.server_of_job(job).unwrap_or(u16::MAX);
            let s = side.clone();
            let spawned =
                zebra_thread::spawn(format!("zebra-wev-{job}"), move || s.events(job, server));
            if let Err(e) = spawned {
                log::error!("zebra: worker {rank}: cannot start the event thread: {e}");
                return None;
            }
        }
        log::info!(
            "zebra: worker {rank}: hot path to {} for jobs {:?}",
            plan.switch,
            side.links.keys().collect::<Vec<_>>()
        );
        Some(side)
    }

    fn send(&self, dealer: &Arc<DealerHook>, frames: Vec<Bytes>) -> Result<(), Error> {
        dealer.read_waiting();
        let refs: Vec<&[u8]> = frames.iter().map(|b| &b[..]).collect();
        let outgoing = lock(&self.agent).on_send_to_recver(&refs);
        match self.pull(&outgoing, &refs) {
            PullSend::Unchanged => {}
            PullSend::Send(reduced) => {
                return send_all(
                    &dealer.socket,
                    reduced.into_iter().map(Bytes::from).collect(),
                )
            }
            PullSend::Answer(answer) => {
                dealer.inject(answer);
                return Ok(());
            }
            PullSend::SendHold { server, frames } => {
                lock(&self.dealers).insert(server, Arc::downgrade(dealer));
                return send_all(
                    &dealer.socket,
                    frames.into_iter().map(Bytes::from).collect(),
                );
            }
            PullSend::Wait(_) => unreachable!("pull() waits itself"),
        }
        let split = match outgoing {
            Outgoing::Unchanged => return send_all(&dealer.socket, frames),
            Outgoing::Split(sp) => sp,
        };
        lock(&self.dealers).insert(split.server, Arc::downgrade(dealer));
        send_all(
            &dealer.socket,
            split.frames.into_iter().map(Bytes::from).collect(),
        )?;
        let link = self.links.get(&split.job);
        if let Some(l) = link {
            for round in split.closes.into_iter().flatten() {
                if let Err(e) = l.push(round, Vec::new()) {
                    self.push_errors.fetch_add(1, Ordering::Relaxed);
                    log::error!(
                        "zebra: job {} round {round} not closed ({e}); it waits for the \
                         switch's round timeout",
                        split.job
                    );
                }
            }
        }
        if !split.to_switch {
            return Ok(());
        }
        let pushed = link.map(|l| l.push(split.round, split.pairs));
        if !matches!(pushed, Some(Ok(_))) {
            self.push_errors.fetch_add(1, Ordering::Relaxed);
            log::error!(
                "zebra: job {} round {}: hot pairs not sent ({pushed:?}); the server delivers \
                 the push without them after its settle timeout",
                split.job,
                split.round
            );
        }
        Ok(())
    }

    /// The pull half's view of a message the app sends: a push is noted,
    /// a pull may be answered here or reduced; a pull that may be answered
    /// here once the update of its round arrives waits for it (at most the
    /// learned wait).
    fn pull(&self, outgoing: &Outgoing, refs: &[&[u8]]) -> PullSend {
        let Some(pulls) = &self.pulls else {
            return PullSend::Unchanged;
        };
        let split = match outgoing {
            Outgoing::Split(sp) if sp.to_switch => Some((sp.server, sp.round)),
            _ => None,
        };
        let since = self.clock.now();
        let agent = lock(&self.agent);
        let mut p = lock(pulls);
        loop {
            let now = self.clock.now();
            match p.on_send(now, since, refs, split, |s, k| agent.hot_key(s, k)) {
                PullSend::Wait(until) => {
                    let left = self.clock.until(until);
                    p = self
                        .updated
                        .wait_timeout(p, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
                other => return other,
            }
        }
    }

    /// The pull half: a message the DEALER received, through the pull
    /// agent (`None`: the answer to a held pull, kept until its hot part is
    /// in).
    fn on_recv(&self, frames: Vec<Vec<u8>>) -> Option<Vec<Vec<u8>>> {
        let Some(pulls) = &self.pulls else {
            return Some(frames);
        };
        let now = self.clock.now();
        let agent = lock(&self.agent);
        let out = lock(pulls).on_recv(now, frames, |s, k| agent.hot_key(s, k));
        out
    }
    /// The pull half: an update, or a gap, of server `server`.
    /// The pull half: an update, or a gap, of the server of `job`.
    fn on_update(&self, server: u16, update: Option<zebra_proto::Update>) {
        let Some(pulls) = &self.pulls else {
            return;
        };
        let mut p = lock(pulls);
        let answers = match update {
            Some(u) => p.on_update(
                self.clock.now(),
                server,
                RowUpdate {
                    seq: u.seq,
                    round: u.round,
                    brk: u.brk,
                    entries: u.entries,
                },
            ),
            None => {
                p.on_gap(server);
                Vec::new()
            }
        };
        drop(p);
        self.updated.notify_all();
        self.to_dealer(server, answers, DealerHook::inject);
    }

    /// The pull half: held pulls whose update did not come in time ask
    /// their servers for the held keys.
    fn poll_pulls(&self) {
        let Some(pulls) = &self.pulls else {
            return;
        };
        let now = self.clock.now();
        let due = {
            let mut p = lock(pulls);
            if p.poll_at().is_none_or(|at| at > now) {
                return;
            }
            p.poll(now)
        };
        for (server, frames) in due {
            self.to_dealer(server, vec![frames], |d, f| {
                if let Err(e) = d.send_whole(f) {
                    log::error!("zebra: a pull to server {server} not sent: {e}");
                }
            });
        }
    }

    /// Hands each message to `f` with the DEALER that carries this
    /// worker's messages to `server`.
    fn to_dealer(
        &self,
        server: u16,
        messages: Vec<Vec<Vec<u8>>>,
        f: impl Fn(&DealerHook, Vec<Vec<u8>>),
    ) {
        if messages.is_empty() {
            return;
        }
        match lock(&self.dealers).get(&server).and_then(Weak::upgrade) {
            Some(d) => messages.into_iter().for_each(|m| f(&d, m)),
            None => log::error!("zebra: no DEALER to server {server} for the pull half's messages"),
        }
    }

    /// `server`: the PS-lite server whose job `job` is.
    fn events(&self, job: u16, server: u16) {
        let Some(link) = self.links.get(&job) else {
            return;
        };
        loop {
            self.poll_pulls();
            let wait = self
                .pulls
                .as_ref()
                .and_then(|p| lock(p).poll_at())
                .map_or(EVENT_WAIT, |at| self.clock.until(at).min(EVENT_WAIT));
            let Some(event) = link.recv_timeout(wait) else {
                continue;
            };
            let event = match event {
                WorkerEvent::Update(u) => {
                    self.on_update(server, Some(u));
                    continue;
                }
                WorkerEvent::UpdateGap => {
                    self.on_update(server, None);
                    continue;
                }
                other => other,
            };
            match &event {
                WorkerEvent::Fallback { fallback: f, .. } => log::debug!(
                    "zebra: job {job} round {}: {} pairs fall back ({:?}, seq {})",
                    f.round,
                    f.pairs.len(),
                    f.cause,
                    f.seq
                ),
                WorkerEvent::RoundDone(s) => log::debug!("zebra: job {job}: {s:?}"),
                WorkerEvent::Resettle { round, batches, .. } => log::debug!(
                    "zebra: job {job} round {round}: {} batches resent after a restart",
                    batches.len()
                ),
                WorkerEvent::Update(_) | WorkerEvent::UpdateGap => {}
            }
            let settle = {
                let mut agent = lock(&self.agent);
                match event {
                    WorkerEvent::Fallback { fallback, .. } => {
                        agent.on_fallback(fallback).map(|()| None)
                    }
                    WorkerEvent::RoundDone(summary) => agent.on_round_done(job, &summary),
                    WorkerEvent::Resettle { round, batches, .. } => {
                        agent.on_resettle(job, round, batches)
                    }
                    WorkerEvent::Update(_) | WorkerEvent::UpdateGap => Ok(None),
                }
            };
            match settle {
                Ok(Some(m)) => {
                    let dealer = lock(&self.dealers).get(&m.server).and_then(Weak::upgrade);
                    let sent = match dealer {
                        Some(d) => d.send_whole(m.frames),
                        None => Err(Error::Invalid("no DEALER to the server".into())),
                    };
                    if let Err(e) = sent {
                        self.settle_errors.fetch_add(1, Ordering::Relaxed);
                        log::error!("zebra: SETTLE for server {} not sent: {e}", m.server);
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    self.settle_errors.fetch_add(1, Ordering::Relaxed);
                    log::error!("zebra: job {job}: {e}");
                }
            }
        }
    }

    fn json(&self) -> String {
        let agent = lock(&self.agent);
        let mut out = format!(
            "{{\"rank\":{},\"agent\":{},\"push_errors\":{},\"settle_errors\":{},\"links\":{{",
            agent.rank(),
            debug_to_json(&format!("{:?}", agent.stats())),
            self.push_errors.load(Ordering::Relaxed),
            self.settle_errors.load(Ordering::Relaxed)
        );
        drop(agent);
        let links: Vec<String> = self
            .links
            .iter()
            .map(|(job, link)| {
                format!(
                    "\"{job}\":{}",
                    debug_to_json(&format!("{:?}", link.stats()))
                )
            })
            .collect();
        out.push_str(&links.join(","));
        out.push('}');
        if let Some(p) = &self.pulls {
            let p = lock(p);
            out.push_str(&format!(
                ",\"pull_half\":{},\"pull_copy\":{},\"pull_half_off\":{}",
                debug_to_json(&format!("{:?}", p.stats())),
                debug_to_json(&format!("{:?}", p.pulls().stats())),
                p.off().map_or("null".into(), json_string)
            ));
        }
        out.push('}');
        out
    }

    fn report(&self) -> String {
        let agent = lock(&self.agent);
        let mut out = format!(
            "hot path: worker {}\n  agent: {:?}\n  push errors: {}, settle errors: {}\n",
            agent.rank(),
            agent.stats(),
            self.push_errors.load(Ordering::Relaxed),
            self.settle_errors.load(Ordering::Relaxed)
        );
        for (job, link) in &self.links {
            out.push_str(&format!("  link job {job}: {:?}\n", link.stats()));
        }
        if let Some(p) = &self.pulls {
            let p = lock(p);
            out.push_str(&format!(
                "  pull half: {:?}\n  pull copy: {:?}{}\n",
                p.stats(),
                p.pulls().stats(),
                p.off()
                    .map_or(String::new(), |why| format!("\n  pull half off: {why}"))
            ));
        }
        out
    }
}

/// Messages released to the server app, part by part.
#[derive(Debug, Default)]
struct Inbox {
    app: AppParts,
    /// The engine socket stopped: its context terminated (else closed).
    stopped: Option<bool>,
}

/// A server's ROUTER: a pump thread reads the engine; the app reads the inbox.
#[derive(Debug)]
pub struct RouterHook {
    inbox: Mutex<Inbox>,
    ready: Condvar,
    received_bytes: AtomicU64,
    /// The engine socket, for the app's messages and Zebra's own to
    /// workers; the lock keeps each message whole.
    socket: Mutex<Socket>,
    /// The app's message being assembled.
    parts: Mutex<Vec<Bytes>>,
}

impl RouterHook {
    fn start(socket: Socket) -> Arc<RouterHook> {
        let hook = Arc::new(RouterHook {
            inbox: Mutex::new(Inbox::default()),
            ready: Condvar::new(),
            received_bytes: AtomicU64::new(0),
            socket: Mutex::new(socket.clone()),
            parts: Mutex::new(Vec::new()),
        });
        let h = hook.clone();
        let spawned = zebra_thread::spawn("zebra-pump", move || h.pump(socket));
        if let Err(e) = spawned {
            log::error!("zebra: cannot start the server's receive thread: {e}");
            lock(&hook.inbox).stopped = Some(false);
        }
        hook
    }

    fn pump(&self, socket: Socket) {
        loop {
            let mut frames = Vec::new();
            loop {
                match socket.recv(false) {
                    Ok(part) => {
                        self.received_bytes
                            .fetch_add(part.data.len() as u64, Ordering::Relaxed);
                        let more = part.more;
                        frames.push(part.data);
                        if !more {
                            break;
                        }
                    }
                    Err(e) => {
                        lock(&self.inbox).stopped = Some(matches!(e, Error::Terminated));
                        self.ready.notify_all();
                        return;
                    }
                }
            }
            match process().and_then(Process::server) {
                Some(s) => s.on_message(frames, self),
                None => self.push(vec![frames]),
            }
        }
    }

    /// One part the app sends (BytePS's servers answer workers through
    /// their ROUTER): kept until the message's last part, then sent whole,
    /// so that Zebra's own messages never land between its parts.
    pub fn send(&self, data: Bytes, more: bool) -> Result<(), Error> {
        let mut parts = lock(&self.parts);
        parts.push(data);
        if more {
            return Ok(());
        }
        let frames = std::mem::take(&mut *parts);
        if process()
            .and_then(Process::server)
            .is_some_and(|s| s.take_answer(&frames))
        {
            return Ok(());
        }
        send_all(&lock(&self.socket), frames)
    }

    /// Sends Zebra's own messages (`[identity, frame]`) to workers.
    fn send_control(&self, messages: Vec<Vec<Vec<u8>>>) {
        if messages.is_empty() {
            return;
        }
        let socket = lock(&self.socket);
        for m in messages {
            let to = String::from_utf8_lossy(&m[0]).into_owned();
            if let Err(e) = send_all(&socket, m.into_iter().map(Bytes::from).collect()) {
                log::error!("zebra: message to {to} not sent: {e}");
            }
        }
    }

    /// Appends whole messages to the inbox.
    fn push<F: Into<Bytes>>(&self, messages: Vec<Vec<F>>) {
        if messages.is_empty() {
            return;
        }
        let mut inbox = lock(&self.inbox);
        for m in messages {
            let n = m.len();
            for (i, f) in m.into_iter().enumerate() {
                inbox.app.push(Part {
                    data: f.into(),
                    more: i + 1 < n,
                });
            }
        }
        drop(inbox);
        self.ready.notify_all();
        zebra_engine::notify_activity();
    }

    /// The next part for the app.
    pub fn recv(&self, dontwait: bool) -> Result<Part, Error> {
        let mut inbox = lock(&self.inbox);
        loop {
            if let Some(p) = inbox.app.pop() {
                return Ok(p);
            }
            match inbox.stopped {
                Some(true) => return Err(Error::Terminated),
                Some(false) => return Err(Error::NotSocket),
                None => {}
            }
            if dontwait {
                return Err(Error::Again);
            }
            inbox = self
                .ready
                .wait(inbox)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// `ZMQ_POLLIN` when a part waits.
    pub fn events(&self) -> i32 {
        lock(&self.inbox).app.events()
    }

    /// `ZMQ_RCVMORE` of the last part the app took.
    pub fn more(&self) -> bool {
        lock(&self.inbox).app.more
    }
}

/// The server side of this process.
struct ServerSide {
    process: &'static Process,
    rank: u16,
    agent: Mutex<ServerAgent>,
    link: Option<ServerLink>,
    online_out: Option<String>,
    decision_written: std::sync::atomic::AtomicBool,
}

impl ServerSide {
    fn start(p: &'static Process, rank: u16) -> Option<Arc<ServerSide>> {
        let plan = p.plan.aggregation.as_ref()?;
        let agent = match ServerAgent::new(plan.agent.clone(), plan.hot.clone(), rank) {
            Ok(a) => a,
            Err(e) => {
                log::error!("zebra: server {rank}: no hot path: {e}");
                return None;
            }
        };
        let admission = plan.zero_config.then(|| Admission {
            workers: plan.agent.workers,
            capacity: plan.hot.indices(rank),
        });
        let link = match agent.job() {
            None => None,
            Some(job) => match plan
                .link(job, 0)
                .and_then(|c| ServerLink::start(LinkConfig { admission, ..c }))
            {
                Ok(l) => Some(l),
                Err(e) => {
                    log::error!(
                        "zebra: server {rank}: hot-path link failed: {e}; pushes that carry \
                         hot keys wait for their settle timeout"
                    );
                    None
                }
            },
        };
        log::info!(
            "zebra: server {rank}: hot path {}",
            match agent.job() {
                Some(job) => format!("job {job} via {}", plan.switch),
                None => "unused (no hot key of this server)".into(),
            }
        );
        let side = Arc::new(ServerSide {
            process: p,
            rank,
            agent: Mutex::new(agent),
            link,
            online_out: plan.online_out.clone(),
            decision_written: std::sync::atomic::AtomicBool::new(false),
        });
        if side.link.is_some() {
            let s = side.clone();
            if let Err(e) = zebra_thread::spawn("zebra-sev", move || s.events()) {
                log::error!("zebra: server {rank}: cannot start the event thread: {e}");
            }
        }
        Some(side)
    }

    /// The pull half: a message the app sends on the ROUTER; `true` when it
    /// answers a read-back pull (taken: its values leave as an update).
    fn take_answer(&self, frames: &[Bytes]) -> bool {
        let refs: Vec<&[u8]> = frames.iter().map(|b| &b[..]).collect();
        let mut agent = lock(&self.agent);
        if !agent.on_app_send(Route::RouterSend, &refs) {
            return false;
        }
        let deliver = self.send_updates(&mut agent);
        drop(agent);
        if let Some(router) = lock(&self.process.router).upgrade() {
            router.push(deliver);
        }
        true
    }

    /// The pull half: sends the agent's updates through the switch; what a
    /// settled BREAK released (without a link, a BREAK has nobody to reach
    /// and settles at once) is returned for the app.
    fn send_updates(&self, agent: &mut ServerAgent) -> Vec<Vec<Vec<u8>>> {
        let mut deliver = Vec::new();
        for v in agent.take_updates() {
            match &self.link {
                Some(link) => {
                    if let Err(e) = link.send_update(v.round, v.entries, v.lens, v.brk) {
                        log::error!(
                            "zebra: server {}: update of round {} not sent: {e}",
                            self.rank,
                            v.round
                        );
                    }
                }
                None if v.brk => {
                    deliver.extend(agent.on_break_settled(self.process.clock.now()));
                }
                None => {}
            }
        }
        deliver
    }

    fn on_message(&self, frames: Vec<Bytes>, router: &RouterHook) {
        let frames = frames.iter().map(|b| b.to_vec()).collect();
        let now = self.process.clock.now();
        let mut agent = lock(&self.agent);
        let mut out = agent.on_recv(now, frames);
        out.deliver.extend(self.send_updates(&mut agent));
        self.send_control(&mut agent, router);
        for f in out.fallbacks {
            let added = match &self.link {
                Some(link) => link.add_fallback(f).map_err(|e| e.to_string()),
                None => Err("no hot-path link".into()),
            };
            if let Err(e) = added {
                log::error!("zebra: fallback pairs not taken: {e}");
            }
        }
        router.push(out.deliver);
    }

    fn events(&self) {
        let Some(link) = &self.link else {
            return;
        };
        let mut refused = false;
        let register_wait = self
            .process
            .plan
            .aggregation
            .as_ref()
            .map_or(Duration::MAX, |a| a.register_wait);
        let started = self.process.clock.now();
        let mut heard = SwitchHeard::Waiting;
        lock(&self.agent).on_switch(heard);
        loop {
            if !refused && link.granted() == Some(0) {
                refused = true;
                lock(&self.agent).step_aside(Aside::NotAdmitted);
            }
            // No keys before the switch answers; a switch that never
            // answers the REGISTER (dead, unreachable, another job key)
            // is stepped around: every hot packet would wait for timeouts.
            let now_heard = if link.is_registered() {
                SwitchHeard::Answered
            } else if self.process.clock.now().saturating_since(started) >= register_wait {
                SwitchHeard::Silent(register_wait)
            } else {
                SwitchHeard::Waiting
            };
            if now_heard != heard {
                heard = now_heard;
                lock(&self.agent).on_switch(heard);
            }
            let wait = lock(&self.agent).poll_at().map_or(EVENT_WAIT, |at| {
                self.process.clock.until(at).min(EVENT_WAIT)
            });
            let event = link.recv_timeout(wait);
            match &event {
                Some(ServerEvent::Round(a)) => log::debug!(
                    "zebra: job {} round {}: aggregate of {} pairs, {} contributed, flushed {}",
                    a.job,
                    a.round,
                    a.pairs.len(),
                    a.contributed,
                    a.flushed
                ),
                Some(ServerEvent::Apply(f)) => log::debug!(
                    "zebra: job {} round {}: apply {} pairs of worker {} ({:?}, seq {})",
                    f.job,
                    f.round,
                    f.pairs.len(),
                    f.worker,
                    f.cause,
                    f.seq
                ),
                Some(ServerEvent::BreakSettled) => {
                    log::debug!("zebra: server {}: a BREAK reached every worker", self.rank)
                }
                Some(ServerEvent::SwitchRestarted { .. }) | None => {}
            }
            let now = self.process.clock.now();
            let mut agent = lock(&self.agent);
            let mut deliver = match event {
                Some(ServerEvent::Round(agg)) => agent.on_round(agg),
                Some(ServerEvent::Apply(f)) => agent.on_apply(f),
                Some(ServerEvent::BreakSettled) => agent.on_break_settled(now),
                Some(ServerEvent::SwitchRestarted { epoch }) => {
                    agent.on_switch_restarted(epoch);
                    Vec::new()
                }
                None => Vec::new(),
            };
            deliver.extend(agent.poll(now));
            deliver.extend(self.send_updates(&mut agent));
            if let Some(router) = lock(&self.process.router).upgrade() {
                self.send_control(&mut agent, &router);
            }
            if !deliver.is_empty() {
                match lock(&self.process.router).upgrade() {
                    Some(router) => router.push(deliver),
                    None => log::error!(
                        "zebra: {} released requests and no ROUTER to deliver them",
                        deliver.len()
                    ),
                }
            }
        }
    }

    /// Sends what the agent has for the workers (its online decision), and
    /// writes the decision to `online_out` the first time.
    fn send_control(&self, agent: &mut ServerAgent, router: &RouterHook) {
        let msgs = agent.take_control();
        if msgs.is_empty() {
            return;
        }
        router.send_control(msgs);
        let (Some(out), Some(d)) = (&self.online_out, agent.online_decision()) else {
            return;
        };
        if self.decision_written.swap(true, Ordering::Relaxed) {
            return;
        }
        let path = out.replace("%r", &self.rank.to_string());
        let mut text = format!(
            "# zebra online hot keys of PS-lite server {}: {} after {} pushes of {} keys, \
             from round {}\n",
            self.rank,
            if d.change { "changed" } else { "kept" },
            d.pushes,
            d.keys_seen,
            d.from_round
        );
        for (key, len) in &d.keys {
            text.push_str(&format!("{key} {len}\n"));
        }
        if let Err(e) = std::fs::write(&path, text) {
            log::error!("zebra: online_out {path}: {e}");
        }
    }

    fn json(&self, received: Option<u64>) -> String {
        let agent = lock(&self.agent);
        let mut out = format!(
            "{{\"rank\":{},\"router_bytes_received\":{},\"agent\":{}",
            self.rank,
            received.map_or("null".into(), |n| n.to_string()),
            debug_to_json(&format!("{:?}", agent.stats()))
        );
        if let Some(link) = &self.link {
            out.push_str(&format!(
                ",\"link\":{}",
                debug_to_json(&format!("{:?}", link.stats()))
            ));
        }
        if let Some((active, readback)) = agent.pull_state() {
            out.push_str(&format!(
                ",\"pull_half\":{{\"on\":{active},\"read_back\":{}}}",
                debug_to_json(&format!("{readback:?}"))
            ));
        }
        out.push('}');
        out
    }

    fn report(&self, received: u64) -> String {
        let agent = lock(&self.agent);
        let mut out = format!(
            "hot path: server\n  ROUTER bytes received: {received}\n  agent: {:?}\n",
            agent.stats()
        );
        if let Some(link) = &self.link {
            out.push_str(&format!("  link: {:?}\n", link.stats()));
        }
        if let Some((active, readback)) = agent.pull_state() {
            out.push_str(&format!(
                "  pull half: {}, read-back {readback:?}\n",
                if active { "on" } else { "stood aside" }
            ));
        }
        out
    }
}

/// The hot path's statistics for the at-exit report (empty without one).
pub fn report() -> String {
    let Some(p) = PROCESS.get().and_then(Option::as_ref) else {
        return String::new();
    };
    let mut out = String::new();
    if let Some(w) = p.worker() {
        out.push_str(&w.report());
    }
    if let Some(s) = p.server() {
        let received = lock(&p.router)
            .upgrade()
            .map_or(0, |r| r.received_bytes.load(Ordering::Relaxed));
        out.push_str(&s.report(received));
    }
    out
}

/// The hot path's statistics as one JSON object (`null` without a hot path): members
/// `worker`, `trace` and `server`, each when this process has one.
pub fn report_json() -> String {
    let Some(p) = PROCESS.get().and_then(Option::as_ref) else {
        return "null".into();
    };
    let mut members = Vec::new();
    if let Some(w) = p.worker() {
        w.json(&mut members);
    }
    if let Some(s) = p.server() {
        // None once the app closed its ROUTER (at exit): not a counter going back to 0.
        let received = lock(&p.router)
            .upgrade()
            .map(|r| r.received_bytes.load(Ordering::Relaxed));
        members.push(format!("\"server\":{}", s.json(received)));
    }
    format!("{{{}}}", members.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bad value in an environment variable is named by the variable and
    /// the value as typed, never by a `zebra switch` flag (the only test of
    /// this binary that sets the environment).
    #[test]
    fn bad_variables_are_named_as_typed() {
        std::env::set_var("DMLC_ROLE", "server");
        std::env::set_var("DMLC_NUM_WORKER", "99");
        std::env::set_var("DMLC_NUM_SERVER", "1");
        let vars = [
            ("ZEBRA_ENABLE", "1"),
            ("ZEBRA_SWITCH", "nowhere.invalid:9950"),
        ];
        let config = zebra_config::Config::from_vars(vars, 1).unwrap();
        let problems = Plan::from_config(&config).err().unwrap().join("\n");
        for want in [
            "ZEBRA_SWITCH=\"nowhere.invalid:9950\":",
            "DMLC_NUM_WORKER=\"99\": expected an integer in 1..=64",
        ] {
            assert!(problems.contains(want), "{want} in {problems}");
        }
        for flag in ["--listen", "--workers", "--servers"] {
            assert!(!problems.contains(flag), "{flag} in {problems}");
        }
    }
}
