//! Counters of each state machine. Plain numbers, cheap to copy; the I/O
//! layer prints them (`ZEBRA_STATS`) and tests assert on them.

use crate::wire::FallbackReason;

/// Switch counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SwitchStats {
    /// Datagrams handed to the switch.
    pub packets: u64,
    /// Datagrams dropped as malformed or unexpected (never answered).
    pub bad_packets: u64,
    /// Hot packets added to the slots.
    pub added_packets: u64,
    /// Pairs (dense values included) added.
    pub added_pairs: u64,
    /// Pipeline passes spent adding (one per added packet plus recirculations).
    pub passes: u64,
    /// Extra passes because two pairs of one packet shared a register.
    pub recirculations: u64,
    /// Passes spent reading out closed rounds (slots and coverage words).
    pub readout_passes: u64,
    /// Retransmitted or duplicated hot packets answered from the records.
    pub duplicates: u64,
    /// Hot packets older than the worker's record (a stale copy): dropped.
    pub stale: u64,
    /// Fallback notices sent for new packets, by reason code (index = code).
    pub fallbacks: [u64; FallbackReason::ALL.len() + 1],
    /// ACKs sent (duplicates included).
    pub acks: u64,
    /// Rounds closed because every worker finished.
    pub rounds_completed: u64,
    /// Rounds closed by the timeout.
    pub rounds_flushed: u64,
    /// Aggregate and coverage parts sent the first time.
    pub aggregate_parts: u64,
    /// Parts sent again after their timeout, or once shown lost.
    pub aggregate_retransmits: u64,
    /// Of those, parts resent because a part of their flow sent once,
    /// after them, was acknowledged first.
    pub aggregate_lost: u64,
    /// Aggregate parts due for a resend that waited one more timeout because
    /// an older part of the same flow was resent.
    pub aggregate_deferred: u64,
    /// Parts acknowledged by their server.
    pub aggregate_acked: u64,
    /// Parts given up after the retry limit (their data is lost: counted loudly).
    pub aggregate_abandoned: u64,
    /// Fixed-point sums that saturated.
    pub saturations: u64,
    /// UPDATE parts copied to a job's workers (each counted once, however
    /// many workers it goes to).
    pub updates_copied: u64,
    /// UPDATE_ACKs forwarded to their server.
    pub update_acks: u64,
    /// Well-formed UPDATEs and UPDATE_ACKs dropped: a job, server or worker
    /// the switch does not have, or an UPDATE longer than `aggregate_size`.
    pub updates_refused: u64,
    /// Datagrams naming a member of a job (a REGISTER, HOT, AGGREGATE_ACK,
    /// UPDATE or UPDATE_ACK) refused, unanswered, because they came from
    /// another address than the one the member is pinned to
    /// (`docs/SECURITY.md`).
    pub refused_address: u64,
    /// Datagrams from a member's address refused, unanswered, because they
    /// showed another token than the job's once the member had shown the
    /// right one (or, in a job with a key, from the first).
    pub refused_token: u64,
}

impl SwitchStats {
    /// Fallback notices for `reason`.
    pub fn fallback(&self, reason: FallbackReason) -> u64 {
        self.fallbacks[reason as usize]
    }

    /// All fallback notices for new packets.
    pub fn total_fallbacks(&self) -> u64 {
        self.fallbacks.iter().sum()
    }

    /// Recirculations per added packet.
    pub fn recirculations_per_packet(&self) -> f64 {
        if self.added_packets == 0 {
            0.0
        } else {
            self.recirculations as f64 / self.added_packets as f64
        }
    }

    /// Adds what `after` counts beyond `before` (a snapshot of the same
    /// counters taken earlier): how the switch keeps a job's own counters.
    pub fn add_growth(&mut self, before: &SwitchStats, after: &SwitchStats) {
        // Every field named, so that a new counter cannot be left out.
        let SwitchStats {
            packets,
            bad_packets,
            added_packets,
            added_pairs,
            passes,
            recirculations,
            readout_passes,
            duplicates,
            stale,
            fallbacks,
            acks,
            rounds_completed,
            rounds_flushed,
            aggregate_parts,
            aggregate_retransmits,
            aggregate_lost,
            aggregate_deferred,
            aggregate_acked,
            aggregate_abandoned,
            saturations,
            updates_copied,
            update_acks,
            updates_refused,
            refused_address,
            refused_token,
        } = self;
        let grow = |to: &mut u64, b: u64, a: u64| *to += a.saturating_sub(b);
        grow(packets, before.packets, after.packets);
        grow(bad_packets, before.bad_packets, after.bad_packets);
        grow(added_packets, before.added_packets, after.added_packets);
        grow(added_pairs, before.added_pairs, after.added_pairs);
        grow(passes, before.passes, after.passes);
        grow(recirculations, before.recirculations, after.recirculations);
        grow(readout_passes, before.readout_passes, after.readout_passes);
        grow(duplicates, before.duplicates, after.duplicates);
        grow(stale, before.stale, after.stale);
        for (i, f) in fallbacks.iter_mut().enumerate() {
            grow(f, before.fallbacks[i], after.fallbacks[i]);
        }
        grow(acks, before.acks, after.acks);
        grow(
            rounds_completed,
            before.rounds_completed,
            after.rounds_completed,
        );
        grow(rounds_flushed, before.rounds_flushed, after.rounds_flushed);
        grow(
            aggregate_parts,
            before.aggregate_parts,
            after.aggregate_parts,
        );
        grow(
            aggregate_retransmits,
            before.aggregate_retransmits,
            after.aggregate_retransmits,
        );
        grow(aggregate_lost, before.aggregate_lost, after.aggregate_lost);
        grow(
            aggregate_deferred,
            before.aggregate_deferred,
            after.aggregate_deferred,
        );
        grow(
            aggregate_acked,
            before.aggregate_acked,
            after.aggregate_acked,
        );
        grow(
            aggregate_abandoned,
            before.aggregate_abandoned,
            after.aggregate_abandoned,
        );
        grow(saturations, before.saturations, after.saturations);
        grow(updates_copied, before.updates_copied, after.updates_copied);
        grow(update_acks, before.update_acks, after.update_acks);
        grow(
            updates_refused,
            before.updates_refused,
            after.updates_refused,
        );
        grow(
            refused_address,
            before.refused_address,
            after.refused_address,
        );
        grow(refused_token, before.refused_token, after.refused_token);
    }

    /// Datagrams refused as not from a member of their job, unanswered.
    pub fn refused(&self) -> u64 {
        self.refused_address + self.refused_token
    }
}

/// Worker counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkerStats {
    /// Rounds pushed.
    pub rounds: u64,
    /// Hot packets sent the first time.
    pub packets: u64,
    /// Hot packets sent again.
    pub retransmits: u64,
    /// Packets acknowledged as added.
    pub acked: u64,
    /// Packets the switch refused (pairs handed back, certain).
    pub fallback_packets: u64,
    /// Packets given up without an answer (pairs handed back, uncertain).
    pub given_up: u64,
    /// Pairs handed back because the round had more packets than `max_seqs`.
    pub overflow_pairs: u64,
    /// Answers for packets already settled or unknown.
    pub stale_responses: u64,
    /// Datagrams that were not a response for this worker.
    pub bad_packets: u64,
    /// Recirculations the packing leaves (what the switch will spend).
    pub planned_recirculations: u64,
    /// WindowFull answers: a packet came before the switch's copy of its
    /// round was free; it waits and is sent again (not a fallback).
    pub busy: u64,
    /// Packets sent again after such a wait.
    pub busy_resends: u64,
    /// Smoothed round trip to the switch in microseconds (0 until measured),
    /// which sets the retransmission timeout (`rto.rs`).
    pub srtt_us: u64,
    /// Restarts of the switch this worker was told of (`Worker::restart`).
    pub restarts: u64,
    /// Settled rounds whose pairs were not kept for a restart (beyond
    /// `worker_retain_pairs`).
    pub unkept_rounds: u64,
    /// Rounds sent to the servers only, after a restart.
    pub bypassed_rounds: u64,
}

/// Server counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Aggregate and coverage parts received (duplicates included).
    pub parts: u64,
    /// Parts received again.
    pub duplicate_parts: u64,
    /// Parts for rounds older than the history (acknowledged, ignored).
    pub stale_parts: u64,
    /// Datagrams dropped as malformed or not for this server.
    pub bad_packets: u64,
    /// Rounds reported.
    pub rounds: u64,
    /// Reported rounds that were flushed by the switch's timeout.
    pub flushed_rounds: u64,
    /// Fallback batches passed through as certain.
    pub certain_fallbacks: u64,
    /// Uncertain batches found in an aggregate (dropped: already summed).
    pub uncertain_covered: u64,
    /// Uncertain batches applied because no aggregate holds them.
    pub uncertain_applied: u64,
    /// Uncertain batches applied on timeout, before their round's aggregate.
    pub uncertain_timed_out: u64,
    /// Uncertain batches applied early and later found in an aggregate (the
    /// aggregate was corrected by subtracting them).
    pub corrections: u64,
    /// Uncertain batches for rounds older than the history (applied unchecked).
    pub uncertain_unverified: u64,
}

/// A server's update sender counters (the pull half).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpdateSenderStats {
    /// Updates sent (BREAKs included).
    pub updates: u64,
    /// Of those, BREAKs.
    pub breaks: u64,
    /// Parts sent the first time (to every worker).
    pub parts: u64,
    /// Bytes of those parts.
    pub bytes: u64,
    /// Datagrams sent again (one per missing worker, or one to every worker).
    pub resends: u64,
    /// Parts due for a resend that waited one more timeout because another
    /// part was resent in the same poll.
    pub deferred: u64,
    /// Parts resent because a part sent after them was acknowledged first
    /// (before their timeout).
    pub lost: u64,
    /// Updates given up for at least one worker (retry limit, or the window
    /// needed their place).
    pub given_up: u64,
    /// Updates every worker acknowledged whole.
    pub completed: u64,
    /// New `(part, worker)` acknowledgements.
    pub acks: u64,
    /// Acknowledgements of parts already acknowledged, or of updates no
    /// longer kept.
    pub duplicate_acks: u64,
    /// Acknowledgements that are not for this sender, name a worker the job
    /// does not have, a part the update does not have, or a part not sent yet.
    pub bad_acks: u64,
}

/// A worker's update receiver counters (the pull half, one server).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpdateReceiverStats {
    /// Well-formed parts for this worker, acknowledged (duplicates included).
    pub parts: u64,
    /// Parts received again.
    pub duplicate_parts: u64,
    /// Parts of updates already delivered (acknowledged, dropped) or
    /// reported in a gap (dropped; not acknowledged while the sender may
    /// still keep them, so that it gives them up).
    pub stale_parts: u64,
    /// Parts that disagree with earlier parts of their update (parts, round
    /// or flags), or longer than `aggregate_size`: not acknowledged.
    pub inconsistent_parts: u64,
    /// Update parts addressed to another worker.
    pub not_addressed: u64,
    /// Datagrams that are not an update part of this job and server.
    pub bad_packets: u64,
    /// Updates delivered, in seq order.
    pub updates: u64,
    /// Complete updates whose fragments did not fit together (reported as a gap).
    pub malformed_updates: u64,
    /// Gaps reported.
    pub gaps: u64,
    /// Updates those gaps skipped.
    pub skipped: u64,
}
