//! The hot path of one PS-lite process: its plan, its clock, the worker or server side
//! once the process knows its node id, and the hooks of its sockets.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use zebra_engine::consts::{ZMQ_DEALER, ZMQ_ROUTER};
use zebra_engine::Socket;
use zebra_hotpath::Clock;
use zebra_pslite::{node_id, rank_of, role_of, Role};

use crate::lock;
use crate::plan::{Plan, ProcessRole};
use crate::server::{RouterHook, ServerSide};
use crate::worker::{DealerHook, Splitter, WorkerSide};

/// The hot path of this process. The bridge keeps one per process (its sockets' hooks
/// and the side threads refer to it for the life of the process, hence `&'static`).
pub struct Process {
    pub(crate) plan: &'static Plan,
    pub(crate) clock: Clock,
    worker: OnceLock<Option<Arc<WorkerSide>>>,
    server: OnceLock<Option<Arc<ServerSide>>>,
    pub(crate) router: Mutex<Weak<RouterHook>>,
}

impl Process {
    /// The hot path of a process started with `plan`; `clock` is the process's clock
    /// (every deadline of its links and agents is measured on it).
    pub fn new(plan: &'static Plan, clock: Clock) -> Process {
        Process {
            plan,
            clock,
            worker: OnceLock::new(),
            server: OnceLock::new(),
            router: Mutex::new(Weak::new()),
        }
    }

    pub(crate) fn worker(&self) -> Option<&Arc<WorkerSide>> {
        self.worker.get().and_then(Option::as_ref)
    }

    pub(crate) fn server(&self) -> Option<&Arc<ServerSide>> {
        self.server.get().and_then(Option::as_ref)
    }

    /// The worker's splitter when the pull half or two-stage synchronization is on
    /// (either reads each message the DEALER receives whole).
    pub(crate) fn pull_splitter(&self) -> Option<&Splitter> {
        let s = self.worker()?.splitter.as_deref()?;
        (s.pulls.is_some() || s.early.is_some()).then_some(s)
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

    /// The hook for a new socket of type `socket_type`.
    pub fn hook(&'static self, socket: &Socket, socket_type: i32) -> Hook {
        match (socket_type, self.plan.role) {
            (ZMQ_DEALER, ProcessRole::Worker) => {
                Hook::Dealer(Arc::new(DealerHook::new(self, socket.clone())))
            }
            (ZMQ_ROUTER, ProcessRole::Server) if self.plan.aggregation.is_some() => {
                let hook = RouterHook::start(self, socket.clone());
                *lock(&self.router) = Arc::downgrade(&hook);
                Hook::Router(hook)
            }
            _ => Hook::None,
        }
    }

    /// A socket option was set (and taken by the engine): a DEALER's identity
    /// `ps<id>` tells this process its PS-lite node id.
    pub fn on_option(&'static self, socket_type: i32, option: i32, value: &[u8]) {
        if socket_type != ZMQ_DEALER || option != zebra_engine::consts::opt::ROUTING_ID {
            return;
        }
        if let Some(id) = node_id(value) {
            self.learn_id(id);
        }
    }

    /// The hot path's statistics for the at-exit report.
    pub fn report(&self) -> String {
        let mut out = String::new();
        if let Some(w) = self.worker() {
            out.push_str(&w.report());
        }
        if let Some(s) = self.server() {
            let received = lock(&self.router)
                .upgrade()
                .map_or(0, |r| r.received_bytes.load(Ordering::Relaxed));
            out.push_str(&s.report(received));
        }
        out
    }

    /// The hot path's statistics as one JSON object: members `worker`, `trace` and
    /// `server`, each when this process has one.
    pub fn report_json(&self) -> String {
        let mut members = Vec::new();
        if let Some(w) = self.worker() {
            w.json(&mut members);
        }
        if let Some(s) = self.server() {
            // None once the app closed its ROUTER (at exit): not a counter going back to 0.
            let received = lock(&self.router)
                .upgrade()
                .map(|r| r.received_bytes.load(Ordering::Relaxed));
            members.push(format!("\"server\":{}", s.json(received)));
        }
        format!("{{{}}}", members.join(","))
    }
}

impl std::fmt::Debug for Process {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Process")
            .field("plan", &self.plan)
            .field("worker", &self.worker().is_some())
            .field("server", &self.server().is_some())
            .finish_non_exhaustive()
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
