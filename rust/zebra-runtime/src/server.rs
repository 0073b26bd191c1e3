//! The server side of a PS-lite process: its ROUTER's hook (a pump thread reads the
//! engine, the app reads an inbox), `zebra-agent`'s [`ServerAgent`] holding each split
//! push until its round's aggregate and settle are in, and the event thread on the
//! [`ServerLink`] (aggregates, applied fallbacks, the REGISTER's answer, the agent's
//! timers).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use zebra_agent::{Aside, ServerAgent, SwitchHeard};
use zebra_engine::{Error, Part, Socket};
use zebra_hotpath::{LinkConfig, ServerEvent, ServerLink};
use zebra_proto::wire::Admission;
use zebra_pslite::Route;

use crate::json::debug_to_json;
use crate::parts::AppParts;
use crate::plan::Aggregation;
use crate::process::Process;
use crate::{lock, send_all, EVENT_WAIT};

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
    process: &'static Process,
    inbox: Mutex<Inbox>,
    ready: Condvar,
    pub(crate) received_bytes: AtomicU64,
    /// The engine socket, for the app's messages and Zebra's own to
    /// workers; the lock keeps each message whole.
    socket: Mutex<Socket>,
    /// The app's message being assembled.
    parts: Mutex<Vec<Bytes>>,
}

impl RouterHook {
    pub(crate) fn start(process: &'static Process, socket: Socket) -> Arc<RouterHook> {
        let hook = Arc::new(RouterHook {
            process,
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
            match self.process.server() {
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
        if self
            .process
            .server()
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
pub(crate) struct ServerSide {
    process: &'static Process,
    rank: u16,
    agent: Mutex<ServerAgent>,
    link: Option<ServerLink>,
    online_out: Option<String>,
    decision_written: AtomicBool,
}

impl ServerSide {
    pub(crate) fn start(p: &'static Process, rank: u16) -> Option<Arc<ServerSide>> {
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
            match (agent.job(), &plan.job_from) {
                (Some(job), Some(at)) => format!(
                    "job {job} via {} (the job's id {} derived from the scheduler's address {at})",
                    plan.switch, plan.agent.job_base
                ),
                (Some(job), None) => format!("job {job} via {}", plan.switch),
                (None, _) => "unused (no hot key of this server)".into(),
            }
        );
        let side = Arc::new(ServerSide {
            process: p,
            rank,
            agent: Mutex::new(agent),
            link,
            online_out: plan.settings.online_out.clone(),
            decision_written: AtomicBool::new(false),
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
    fn send_updates(&self, agent: &mut ServerAgent) -> Vec<Vec<Bytes>> {
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
            .map_or(Duration::MAX, |a| a.settings.register_wait);
        let mut started = self.process.clock.now();
        let mut moves = 0;
        let mut heard = SwitchHeard::Waiting;
        lock(&self.agent).on_switch(heard);
        loop {
            // A job the switch refused steps aside; its link asks again
            // every second, and once the switch admits it (its memory
            // free again) the agent hears `Answered` and counts again.
            let granted = link.granted();
            if !refused && granted == Some(0) {
                refused = true;
                lock(&self.agent).step_aside(Aside::NotAdmitted);
            } else if refused && granted.is_some_and(|g| g > 0) {
                refused = false;
                log::info!(
                    "zebra: server {}: the switch admitted the job after all ({} hot values)",
                    self.rank,
                    granted.unwrap_or(0)
                );
            }
            // No keys before the switch answers; a switch that never
            // answers the REGISTER (dead, unreachable, another job key)
            // is stepped around: every hot packet would wait for timeouts.
            // After a failover the wait starts again at the other switch.
            if link.switch_moves() != moves {
                moves = link.switch_moves();
                started = self.process.clock.now();
            }
            let now_heard = if link.is_registered() && !refused {
                SwitchHeard::Answered
            } else if self.process.clock.now().saturating_since(started) >= register_wait {
                SwitchHeard::Silent(register_wait)
            } else {
                SwitchHeard::Waiting
            };
            if now_heard != heard {
                heard = now_heard;
                match (heard, &self.process.plan.aggregation) {
                    (SwitchHeard::Silent(_), Some(a)) if !refused => self.silent_hint(a),
                    _ => {}
                }
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
                Some(ServerEvent::SwitchRestarted { .. } | ServerEvent::SwitchMoved { .. })
                | None => {}
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
                Some(ServerEvent::SwitchMoved { epoch, to }) => {
                    agent.on_switch_moved(epoch, to);
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

    /// A switch that admits jobs leaves a REGISTER unanswered when another
    /// job holds the job id (the server's address is not the one pinned):
    /// says so, and how the id came about.
    fn silent_hint(&self, a: &Aggregation) {
        if !a.zero_config {
            return;
        }
        let job = a.agent.job(self.rank);
        let why = match &a.job_from {
            Some(at) => format!("derived from the scheduler's address {at}"),
            None if a.job_given => "set by `job` in ZEBRA_HOT_CONFIG".to_string(),
            None => "the default (no `job` in ZEBRA_HOT_CONFIG, no DMLC_PS_ROOT_URI and \
                     DMLC_PS_ROOT_PORT to derive one from)"
                .to_string(),
        };
        log::warn!(
            "zebra: server {}: if the switch at {} is running, another job may hold job id \
             {job} there (the switch logs `REGISTER ... for job {job} server 0 refused: the \
             server is pinned to ...`): this job's id {} is {why}. Meanwhile it runs exact \
             without the switch and asks again every second (an ended job's id is free 10-20 s \
             later); give it an id of its own with `job` in ZEBRA_HOT_CONFIG",
            self.rank,
            a.switch,
            a.agent.job_base,
        );
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

    pub(crate) fn json(&self, received: Option<u64>) -> String {
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

    pub(crate) fn report(&self, received: u64) -> String {
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
