//! Who takes part in a job: its members' pinned addresses and its token
//! (`docs/SECURITY.md`).
//!
//! Every datagram that names a member of a job — a worker's HOT, HOT_DENSE
//! and UPDATE_ACK, a server's REGISTER, AGGREGATE_ACK and UPDATE — is
//! checked here before it touches anything:
//!
//! - **The address.** The first datagram accepted for a member slot
//!   `(job, role, rank)` pins the slot to its source address (or the
//!   configuration pins it beforehand, `server_addr`); a datagram for the
//!   slot from any other address is refused ([`Refusal::Address`]).
//! - **The token.** Each job has a nonzero token: drawn by the switch when
//!   it takes the job on, or, for a job with a key, derived from the key by
//!   every member alike. The switch hands it out only to pinned members (in
//!   REGISTER_ACK, ACK and FALLBACK), and members show it in every datagram
//!   with a token field. A member that has shown the right token once must
//!   always show it; before that (a member that has not heard from the
//!   switch yet, or holds the token of a switch started again), its own
//!   address is its proof. In a job with a key the token is required from
//!   the first datagram, so a slot is pinned only by someone who knows it
//!   ([`Refusal::Token`]).
//!
//! A refused datagram changes nothing and is not answered. On a Tofino the
//! same checks are a table lookup by `(job, role, rank)` returning the pinned
//! address and the job's token, and one register bit per member for "has
//! shown the token" (`docs/SECURITY.md`; the control plane does the servers'
//! part, `p4/worker_check.p4`'s `MemberCheck` the workers', never compiled).

use std::net::SocketAddr;

/// Where a datagram came from: its source address, or `None` for a
/// transport that names no addresses (in-memory simulations: every datagram
/// then comes from the same unnamed place, and only tokens tell members
/// apart).
pub type Source = Option<SocketAddr>;

/// The two kinds of member of a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// A worker (ranks `0..workers`).
    Worker,
    /// A server (indices `0..servers`).
    Server,
}

/// Why a datagram naming a member was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// It came from another address than the member's pinned one.
    Address,
    /// It showed another token than the job's, from a member that has shown
    /// the right one before or in a job with a key.
    Token,
}

#[derive(Debug, Clone, Copy)]
struct Pin {
    source: Source,
    /// The member has shown the job's token.
    proven: bool,
}

/// A job's members as the switch admitted them.
#[derive(Debug, Clone)]
pub(crate) struct Members {
    token: u32,
    /// The token comes from the job's key: required from the first datagram.
    keyed: bool,
    workers: Vec<Option<Pin>>,
    servers: Vec<Option<Pin>>,
}

impl Members {
    /// A job of `workers` workers and `servers` servers, none pinned yet,
    /// with `token` (nonzero); `keyed` when every member knows it from the
    /// job's key.
    pub(crate) fn new(token: u32, keyed: bool, workers: u16, servers: u16) -> Members {
        debug_assert!(token != 0);
        Members {
            token,
            keyed,
            workers: vec![None; workers as usize],
            servers: vec![None; servers as usize],
        }
    }

    /// The job's token.
    pub(crate) fn token(&self) -> u32 {
        self.token
    }

    /// Whether the token came from the job's key.
    pub(crate) fn keyed(&self) -> bool {
        self.keyed
    }

    /// Whether any member is pinned yet.
    pub(crate) fn any_pinned(&self) -> bool {
        self.workers
            .iter()
            .chain(&self.servers)
            .any(Option::is_some)
    }

    /// Replaces the token while no member is pinned (the switch's own
    /// random draw replacing its placeholder).
    pub(crate) fn redraw(&mut self, token: u32) {
        if !self.keyed && !self.any_pinned() && token != 0 {
            self.token = token;
        }
    }

    fn slots(&mut self, role: Role) -> &mut Vec<Option<Pin>> {
        match role {
            Role::Worker => &mut self.workers,
            Role::Server => &mut self.servers,
        }
    }

    /// Pins `(role, rank)` to `source` in advance (an address fixed in the
    /// configuration). `false` when the job has no such member.
    pub(crate) fn pin(&mut self, role: Role, rank: u16, source: SocketAddr) -> bool {
        match self.slots(role).get_mut(rank as usize) {
            Some(slot) => {
                *slot = Some(Pin {
                    source: Some(source),
                    proven: false,
                });
                true
            }
            None => false,
        }
    }

    /// Checks a datagram from `source` naming member `(role, rank)` (which
    /// the job has: the caller checked the rank) and showing `token`
    /// (`None`: its format has no token field, the address alone is
    /// checked). Pins the slot when this is its first datagram. `Ok(true)`
    /// when it pinned the slot.
    pub(crate) fn check(
        &mut self,
        role: Role,
        rank: u16,
        source: Source,
        token: Option<u32>,
    ) -> Result<bool, Refusal> {
        let (job_token, keyed) = (self.token, self.keyed);
        let Some(slot) = self.slots(role).get_mut(rank as usize) else {
            return Err(Refusal::Address);
        };
        let right = token == Some(job_token);
        match slot {
            None => {
                if keyed && !right {
                    return Err(Refusal::Token);
                }
                *slot = Some(Pin {
                    source,
                    proven: right,
                });
                Ok(true)
            }
            Some(pin) if pin.source != source => Err(Refusal::Address),
            Some(pin) => {
                if right {
                    pin.proven = true;
                } else if token.is_some() && (pin.proven || keyed) {
                    return Err(Refusal::Token);
                }
                Ok(false)
            }
        }
    }

    /// Where member `(role, rank)` is pinned, if it is (`Some(None)`: pinned
    /// by a datagram from a transport without addresses).
    pub(crate) fn source(&self, role: Role, rank: u16) -> Option<Source> {
        let slots = match role {
            Role::Worker => &self.workers,
            Role::Server => &self.servers,
        };
        slots
            .get(rank as usize)
            .copied()
            .flatten()
            .map(|p| p.source)
    }

    /// Every pinned member of `role` with an address: `(rank, address)`.
    pub(crate) fn addresses(&self, role: Role) -> impl Iterator<Item = (u16, SocketAddr)> + '_ {
        let slots = match role {
            Role::Worker => &self.workers,
            Role::Server => &self.servers,
        };
        slots
            .iter()
            .enumerate()
            .filter_map(|(i, p)| Some((i as u16, p.as_ref()?.source?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(port: u16) -> Source {
        Some(SocketAddr::from(([10, 0, 0, 1], port)))
    }

    #[test]
    fn the_first_datagram_pins_and_others_are_strangers() {
        let mut m = Members::new(77, false, 2, 1);
        assert_eq!(m.check(Role::Worker, 0, at(1), Some(0)), Ok(true));
        assert_eq!(m.check(Role::Worker, 0, at(1), Some(0)), Ok(false));
        assert_eq!(
            m.check(Role::Worker, 0, at(2), Some(77)),
            Err(Refusal::Address),
            "the right token from another address"
        );
        assert_eq!(m.check(Role::Worker, 0, at(2), None), Err(Refusal::Address));
        assert_eq!(m.check(Role::Worker, 1, at(2), Some(5)), Ok(true));
        assert_eq!(m.check(Role::Server, 0, at(3), Some(0)), Ok(true));
        assert_eq!(m.source(Role::Worker, 1), Some(at(2)));
        assert_eq!(m.addresses(Role::Worker).count(), 2);
    }

    #[test]
    fn once_shown_the_token_is_required() {
        let mut m = Members::new(77, false, 1, 1);
        m.check(Role::Worker, 0, at(1), Some(0)).unwrap();
        assert_eq!(
            m.check(Role::Worker, 0, at(1), Some(3)),
            Ok(false),
            "a stale token before the right one"
        );
        assert_eq!(m.check(Role::Worker, 0, at(1), Some(77)), Ok(false));
        assert_eq!(
            m.check(Role::Worker, 0, at(1), Some(0)),
            Err(Refusal::Token)
        );
        assert_eq!(
            m.check(Role::Worker, 0, at(1), Some(3)),
            Err(Refusal::Token)
        );
        assert_eq!(
            m.check(Role::Worker, 0, at(1), None),
            Ok(false),
            "a format without a token: the address"
        );
    }

    #[test]
    fn a_keyed_job_wants_the_token_from_the_first() {
        let mut m = Members::new(77, true, 1, 1);
        assert_eq!(
            m.check(Role::Server, 0, at(1), Some(0)),
            Err(Refusal::Token)
        );
        assert_eq!(m.check(Role::Server, 0, at(1), None), Err(Refusal::Token));
        assert_eq!(m.source(Role::Server, 0), None, "nothing pinned");
        assert_eq!(m.check(Role::Server, 0, at(1), Some(77)), Ok(true));
        assert_eq!(m.check(Role::Server, 0, at(1), None), Ok(false));
        m.redraw(5);
        assert_eq!(m.token(), 77, "a key's token is never redrawn");
    }

    #[test]
    fn a_configured_address_is_pinned_before_anyone_speaks() {
        let mut m = Members::new(77, false, 1, 2);
        assert!(m.pin(Role::Server, 1, at(9).unwrap()));
        assert!(!m.pin(Role::Server, 2, at(9).unwrap()));
        assert_eq!(
            m.check(Role::Server, 1, at(1), Some(0)),
            Err(Refusal::Address)
        );
        assert_eq!(m.check(Role::Server, 1, at(9), Some(0)), Ok(false));
        m.redraw(5);
        assert_eq!(m.token(), 77, "not redrawn once someone is pinned");
    }
}
