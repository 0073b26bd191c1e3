//! Which pipe a message goes to: one policy per socket type, as libzmq's
//! `pair`, `dealer` (load balancing) and `router` (routing by peer id).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::{BufMut, Bytes, BytesMut};
use zebra_zmtp::SocketType;

use crate::pipe::Pipe;

#[derive(Debug)]
enum Policy {
    /// One peer at a time; a second is refused.
    Pair(Option<Arc<Pipe>>),
    /// Round-robin over attached pipes, skipping full ones.
    Dealer { active: Vec<Arc<Pipe>>, next: usize },
    /// Routing id to pipe.
    Router {
        routes: HashMap<Bytes, Arc<Pipe>>,
        next_id: u32,
    },
}

/// Why a pipe could not be attached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// A PAIR socket already has its peer.
    PairTaken,
    /// A ROUTER already routes this id to another peer.
    DuplicateId,
}

impl Refused {
    /// For log lines.
    pub fn reason(self) -> &'static str {
        match self {
            Refused::PairTaken => "PAIR socket already has a peer",
            Refused::DuplicateId => "routing id already in use by another peer",
        }
    }
}

/// A socket's pipes and its send policy.
#[derive(Debug)]
pub(crate) struct Routing {
    /// Every live pipe of the socket, attached or not.
    pub pipes: HashMap<u64, Arc<Pipe>>,
    policy: Policy,
    /// Moves whenever the send targets change, so that a sender may keep
    /// using the sole target it chose (see [`choose`](Self::choose))
    /// without taking the routing lock again.
    changes: Arc<AtomicU64>,
}

impl Routing {
    pub fn new(socket_type: SocketType, seed: u32, changes: Arc<AtomicU64>) -> Routing {
        let policy = match socket_type {
            SocketType::Router => Policy::Router {
                routes: HashMap::new(),
                next_id: seed,
            },
            SocketType::Dealer => Policy::Dealer {
                active: Vec::new(),
                next: 0,
            },
            _ => Policy::Pair(None),
        };
        Routing {
            pipes: HashMap::new(),
            policy,
            changes,
        }
    }

    fn changed(&self) {
        self.changes.fetch_add(1, Ordering::AcqRel);
    }

    /// Records a pipe that is not a send target yet (before its handshake).
    pub fn register(&mut self, pipe: &Arc<Pipe>) {
        self.pipes.insert(pipe.id, pipe.clone());
    }

    /// Makes the pipe a send target. For a ROUTER, the pipe's routing id
    /// becomes `peer_id`, or a generated 5-byte id (0x00 + u32 big-endian,
    /// as libzmq) when the peer sent none.
    pub fn attach(
        &mut self,
        pipe: &Arc<Pipe>,
        peer_id: &Bytes,
        handover: bool,
    ) -> Result<(), Refused> {
        match &mut self.policy {
            Policy::Pair(slot) => match slot {
                Some(p) if !Arc::ptr_eq(p, pipe) => return Err(Refused::PairTaken),
                _ => *slot = Some(pipe.clone()),
            },
            Policy::Dealer { active, .. } => {
                if !active.iter().any(|p| Arc::ptr_eq(p, pipe)) {
                    active.push(pipe.clone());
                }
            }
            Policy::Router { routes, next_id } => {
                let id = pipe.identity.get_or_init(|| {
                    if peer_id.is_empty() {
                        let mut b = BytesMut::with_capacity(5);
                        b.put_u8(0);
                        b.put_u32(*next_id);
                        *next_id = next_id.wrapping_add(1);
                        b.freeze()
                    } else {
                        peer_id.clone()
                    }
                });
                match routes.get(id) {
                    Some(p) if Arc::ptr_eq(p, pipe) => {}
                    Some(_) if !handover => return Err(Refused::DuplicateId),
                    _ => {
                        routes.insert(id.clone(), pipe.clone());
                    }
                }
            }
        }
        self.pipes.insert(pipe.id, pipe.clone());
        self.changed();
        Ok(())
    }

    /// Forgets the pipe entirely.
    pub fn remove(&mut self, pipe: &Pipe) {
        self.pipes.remove(&pipe.id);
        self.detach(pipe);
    }

    /// Takes a pipe out of the send targets, keeping it registered (a
    /// connecting pipe with `ZMQ_IMMEDIATE` whose connection was lost).
    pub fn detach(&mut self, pipe: &Pipe) {
        self.changed();
        match &mut self.policy {
            Policy::Pair(slot) => {
                if slot.as_ref().is_some_and(|p| p.id == pipe.id) {
                    *slot = None;
                }
            }
            Policy::Dealer { active, next } => {
                if let Some(i) = active.iter().position(|p| p.id == pipe.id) {
                    active.remove(i);
                    if *next > i {
                        *next -= 1;
                    }
                }
            }
            Policy::Router { routes, .. } => {
                if let Some(id) = pipe.identity.get() {
                    if routes.get(id).is_some_and(|p| p.id == pipe.id) {
                        routes.remove(id);
                    }
                }
            }
        }
    }

    /// DEALER/PAIR: the next pipe with room, round-robin, and whether it
    /// is the only send target (then it stays the choice until the targets
    /// change).
    pub fn choose(&mut self) -> Option<(Arc<Pipe>, bool)> {
        match &mut self.policy {
            Policy::Pair(slot) => slot
                .as_ref()
                .filter(|p| p.can_write())
                .map(|p| (p.clone(), true)),
            Policy::Dealer { active, next } => {
                let n = active.len();
                for i in 0..n {
                    let k = (*next + i) % n;
                    if active[k].can_write() {
                        *next = (k + 1) % n;
                        return Some((active[k].clone(), n == 1));
                    }
                }
                None
            }
            Policy::Router { .. } => None,
        }
    }

    /// ROUTER: the pipe for a routing id.
    pub fn route(&self, id: &[u8]) -> Option<Arc<Pipe>> {
        match &self.policy {
            Policy::Router { routes, .. } => routes.get(id).cloned(),
            _ => None,
        }
    }

    /// Whether a send could go out now (`ZMQ_POLLOUT`).
    pub fn writable(&self, router_mandatory: bool) -> bool {
        match &self.policy {
            Policy::Pair(slot) => slot.as_ref().is_some_and(|p| p.can_write()),
            Policy::Dealer { active, .. } => active.iter().any(|p| p.can_write()),
            Policy::Router { routes, .. } => {
                !router_mandatory || routes.values().any(|p| p.can_write())
            }
        }
    }

    /// Removes and returns every pipe.
    pub fn take_all(&mut self) -> Vec<Arc<Pipe>> {
        self.changed();
        match &mut self.policy {
            Policy::Pair(slot) => *slot = None,
            Policy::Dealer { active, next } => {
                active.clear();
                *next = 0;
            }
            Policy::Router { routes, .. } => routes.clear(),
        }
        self.pipes.drain().map(|(_, p)| p).collect()
    }
}
