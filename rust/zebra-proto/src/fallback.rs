//! Pairs that go from a worker to the servers directly instead of through
//! the switch (end-host fallback, as in ATP).

use crate::config::JobConfig;
use crate::wire::FallbackReason;

/// Why a worker hands pairs back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FallbackCause {
    /// The switch answered FALLBACK: it did not add the packet and never will
    /// (certain, except `Unopened`: an earlier incarnation of the switch may
    /// have).
    Switch(FallbackReason),
    /// The round needed more packets than `max_seqs`; these were never sent.
    TooManyPackets,
    /// No answer after every retry: the switch may or may not have added the
    /// packet. The server decides by the round's coverage.
    NoResponse,
    /// The switch added the packet and was then started again
    /// ([`crate::Worker::restart`]): its sum may have reached the server
    /// before, or never will. The server decides by the round's coverage.
    Restarted,
    /// Never sent after the switch was started again: the round is one the
    /// switch before may have closed ([`crate::Worker::restart`]).
    Bypassed,
}

impl FallbackCause {
    /// Whether the switch certainly does not hold these pairs.
    pub fn is_certain(self) -> bool {
        !matches!(
            self,
            FallbackCause::NoResponse
                | FallbackCause::Restarted
                | FallbackCause::Switch(FallbackReason::Unopened)
        )
    }
}

/// One packet's pairs on their way to the servers directly.
#[derive(Debug, Clone, PartialEq)]
pub struct Fallback {
    /// Job id.
    pub job: u16,
    /// Round.
    pub round: u32,
    /// Worker rank.
    pub worker: u16,
    /// Sequence number of the packet (the identity the server reconciles by).
    pub seq: u16,
    /// Why.
    pub cause: FallbackCause,
    /// `(hot rank, value)`.
    pub pairs: Vec<(u32, f32)>,
}

impl Fallback {
    /// Whether the switch certainly does not hold these pairs.
    pub fn is_certain(&self) -> bool {
        self.cause.is_certain()
    }

    /// Splits the pairs by owning server; servers with no pair are left out.
    pub fn split_by_server(&self, job: &JobConfig) -> Vec<(u16, Fallback)> {
        let mut by: std::collections::BTreeMap<u16, Vec<(u32, f32)>> = Default::default();
        for &(r, v) in &self.pairs {
            by.entry(job.owner(r)).or_default().push((r, v));
        }
        by.into_iter()
            .map(|(s, pairs)| {
                (
                    s,
                    Fallback {
                        pairs,
                        ..self.clone()
                    },
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_keeps_identity() {
        let job = JobConfig::new(1, 2, 10, 2);
        let f = Fallback {
            job: 1,
            round: 3,
            worker: 1,
            seq: 4,
            cause: FallbackCause::NoResponse,
            pairs: vec![(0, 1.0), (9, 2.0), (2, 3.0)],
        };
        let parts = f.split_by_server(&job);
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].0, 0);
        assert_eq!(parts[0].1.pairs, vec![(0, 1.0), (2, 3.0)]);
        assert_eq!(parts[1].1.pairs, vec![(9, 2.0)]);
        assert!(!parts[1].1.is_certain() && parts[1].1.seq == 4);
        assert!(FallbackCause::Switch(FallbackReason::Late).is_certain());
    }
}
