//! The worker side of a PS-lite process: its DEALERs' hooks, the split of each push
//! (`zebra-agent`'s [`WorkerAgent`]) into a cold message for the server and hot pairs
//! for the switch (a [`WorkerLink`] per job), one event thread per link, the pull
//! half's copy ([`PullAgent`]), and the trace.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError, Weak};

use bytes::Bytes;
use zebra_agent::{
    EarlyAnswers, FromServer, Outgoing, PullAgent, PullSend, RowUpdate, WorkerAgent,
};
use zebra_engine::{Error, Part, Socket};
use zebra_hotpath::{Clock, WorkerEvent, WorkerLink};

use crate::json::{debug_to_json, json_string};
use crate::parts::{keep_message, AppParts};
use crate::plan::Aggregation;
use crate::process::Process;
use crate::trace::Tracer;
use crate::{lock, send_all, EVENT_WAIT, PULL_CHECKS};

/// Two-stage: the longest a BARRIER request waits for the servers' answers of the
/// pushes answered early (a server's agent forces a push out after its settle timeout,
/// 30 s by default).
const BARRIER_WAIT: std::time::Duration = std::time::Duration::from_secs(60);
/// Two-stage: how often a waiting BARRIER request reads the DEALERs to the servers.
const BARRIER_POLL: std::time::Duration = std::time::Duration::from_micros(500);

/// A worker's DEALER: keeps a message's parts until the last one, and
/// takes a server's online decision (a one-frame Zebra message) out of what
/// it receives.
#[derive(Debug)]
pub struct DealerHook {
    process: &'static Process,
    pub(crate) socket: Socket,
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

impl DealerHook {
    pub(crate) fn new(process: &'static Process, socket: Socket) -> DealerHook {
        DealerHook {
            process,
            socket,
            parts: Mutex::new(Vec::new()),
            recv: Mutex::new(DealerRecv::default()),
        }
    }

    /// One part of the app's message.
    pub fn send(self: &Arc<Self>, data: Bytes, more: bool) -> Result<(), Error> {
        let mut parts = lock(&self.parts);
        parts.push(data);
        if more {
            return Ok(());
        }
        let frames = std::mem::take(&mut *parts);
        match self.process.worker() {
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
                match self.process.worker() {
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
        if let Some(s) = self.process.pull_splitter() {
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
        if let Some(s) = self.process.pull_splitter() {
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

/// The worker side of this process: the split (with a switch) and the trace.
pub(crate) struct WorkerSide {
    rank: u16,
    pub(crate) splitter: Option<Arc<Splitter>>,
    tracer: Option<Mutex<Tracer>>,
}

impl WorkerSide {
    pub(crate) fn start(p: &'static Process, rank: u16) -> Option<Arc<WorkerSide>> {
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
                switch,
            }) => {
                drop(agent);
                log::warn!(
                    "zebra: worker {}: server {server} saw the switch start again or moved its \
                     job (the {} switch, epoch {epoch:#010x}): resending what it held, rounds up \
                     to {through} to the server",
                    self.rank,
                    if switch.is_standby() {
                        "standby"
                    } else {
                        "primary"
                    }
                );
                match s.links.get(&job) {
                    Some(link) => link.move_to(switch, through, resend_from),
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

    pub(crate) fn report(&self) -> String {
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
    pub(crate) fn json(&self, members: &mut Vec<String>) {
        if let Some(s) = &self.splitter {
            members.push(format!("\"worker\":{}", s.json()));
        }
        if let Some(t) = &self.tracer {
            members.push(format!("\"trace\":{}", lock(t).json()));
        }
    }
}

/// The worker's split of pushes into cold messages and hot pairs.
pub(crate) struct Splitter {
    agent: Mutex<WorkerAgent>,
    /// The pull half (locked after `agent` when both are).
    pub(crate) pulls: Option<Mutex<PullAgent>>,
    /// Two-stage synchronization (`ZEBRA_SYNC`, `zebra_agent::sync`): pushes
    /// answered once their hot part settled (locked after `pulls`).
    pub(crate) early: Option<Mutex<EarlyAnswers>>,
    /// Two-stage: signalled when a server's answer to a push answered early
    /// is dropped (a BARRIER request may wait for them).
    answered: Condvar,
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
        for job in &plan.settings.proto.jobs {
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
        let early = plan.agent.sync.two_stage().then(|| {
            Mutex::new(EarlyAnswers::new(
                rank,
                plan.agent.format,
                (plan.agent.app_id, plan.agent.customer_id),
                PULL_CHECKS,
            ))
        });
        let side = Arc::new(Splitter {
            agent: Mutex::new(agent),
            pulls,
            early,
            answered: Condvar::new(),
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
        // Every reader below gets the app's frames as they are (`refs`, no
        // copy) and parses what it needs of them; the values are read in
        // place by all of them:
        // - two-stage `EarlyAnswers::holds`: the meta only (a BARRIER
        //   request?), and only while answers are swallowed;
        // - the agent's split: meta and KV, once; the cold part is copied
        //   into its own message only when a hot key leaves the push;
        // - two-stage `EarlyAnswers::on_split`: the meta again, for the
        //   answer's timestamp and stream (a small frame; the split could
        //   hand its meta over instead);
        // - the pull agent's `PullAgent::on_send`: meta and keys (a push's
        //   values never copied; a pull's keys into its pending record);
        // - the tracer (`ZEBRA_TRACE`, in `WorkerSide::send`, before this):
        //   meta and KV, for each key's value count.
        let refs: Vec<&[u8]> = frames.iter().map(|b| &b[..]).collect();
        self.hold_barrier(&refs);
        let outgoing = lock(&self.agent).on_send_to_recver(&refs);
        if let (Some(e), Outgoing::Split(sp)) = (&self.early, &outgoing) {
            lock(e).on_split(&refs, sp);
        }
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

    /// Two-stage: a BARRIER request waits until every push answered early has
    /// its server's answer (`zebra_agent::sync`, "Barriers"), at most
    /// `BARRIER_WAIT` (then it goes, logged). The app may read its DEALERs only
    /// under the lock it holds while it sends (BytePS's van does), so the answers
    /// are read here, and what else arrives is kept for the app.
    fn hold_barrier(&self, refs: &[&[u8]]) {
        let Some(early) = &self.early else {
            return;
        };
        let until = self.clock.now() + BARRIER_WAIT;
        loop {
            if !lock(early).holds(refs) {
                return;
            }
            let left = self.clock.until(until);
            if left.is_zero() {
                log::error!(
                    "zebra: a BARRIER request waited {BARRIER_WAIT:?} for the servers' answers of \
                     {} pushes answered early; sent anyway",
                    lock(early).swallowing()
                );
                return;
            }
            let dealers: Vec<Arc<DealerHook>> = lock(&self.dealers)
                .values()
                .filter_map(Weak::upgrade)
                .collect();
            for d in dealers {
                d.read_waiting();
            }
            let mut e = lock(early);
            if e.holds(refs) {
                drop(
                    self.answered
                        .wait_timeout(e, left.min(BARRIER_POLL))
                        .unwrap_or_else(PoisonError::into_inner),
                );
            }
        }
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
    /// Two-stage: the server's answer to a push answered early is dropped.
    fn on_recv(&self, frames: Vec<Vec<u8>>) -> Option<Vec<Vec<u8>>> {
        let frames = match &self.pulls {
            Some(pulls) => {
                let now = self.clock.now();
                let agent = lock(&self.agent);
                let out = lock(pulls).on_recv(now, frames, |s, k| agent.hot_key(s, k));
                out?
            }
            None => frames,
        };
        match &self.early {
            Some(e) if !lock(e).on_recv(&frames) => {
                self.answered.notify_all();
                None
            }
            _ => Some(frames),
        }
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
            let done = match &event {
                WorkerEvent::RoundDone(s) => Some(s.round),
                _ => None,
            };
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
            // Two-stage: the push's hot part is settled (its SETTLE, if
            // any, already follows its cold part): the app has its answer.
            let answer = done
                .zip(self.early.as_ref())
                .and_then(|(round, e)| lock(e).on_round_done(job, round));
            if let Some(a) = answer {
                if let Some(p) = &self.pulls {
                    lock(p).push_settled(self.clock.now(), a.server, a.timestamp);
                }
                self.to_dealer(server, vec![a.frames], DealerHook::inject);
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
        if let Some(e) = &self.early {
            let e = lock(e);
            out.push_str(&format!(
                ",\"two_stage\":{},\"two_stage_off\":{}",
                debug_to_json(&format!("{:?}", e.stats())),
                e.off().map_or("null".into(), json_string)
            ));
        }
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
        if let Some(e) = &self.early {
            let e = lock(e);
            out.push_str(&format!(
                "  two-stage: {:?}{}\n",
                e.stats(),
                e.off()
                    .map_or(String::new(), |why| format!("\n  two-stage off: {why}"))
            ));
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
