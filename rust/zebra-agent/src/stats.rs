//! Counters of both agents. Every message that is not split or merged is
//! counted by why; every error is counted (and logged where it happens).

/// Why a worker's message went out unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PassThrough {
    /// The meta fits no PS-lite format (or the message has no frame).
    pub unknown_format: u64,
    /// Not a push request (pull, response, control, SimpleApp).
    pub not_push: u64,
    /// A push of another application or customer.
    pub other_stream: u64,
    /// A push to a server that owns no hot key.
    pub no_hot_keys: u64,
    /// A push to a server that stepped aside (online: aggregation would
    /// not pay; `crate::online::Aside`).
    pub aside: u64,
    /// A push without data frames.
    pub no_data: u64,
    /// A push whose values are not `f32` (`DOUBLE`, integers, opaque `OTHER`).
    pub value_type: u64,
    /// A push that does not parse, or whose values do not divide among its keys.
    pub malformed: u64,
}

/// The worker agent's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WorkerAgentStats {
    /// Messages seen.
    pub messages: u64,
    /// BARRIER requests seen (each starts a new epoch of round numbers).
    pub barriers: u64,
    /// Messages sent unchanged, by why.
    pub passed: PassThrough,
    /// Pushes split (each one round of its server's job).
    pub split: u64,
    /// Hot keys taken out of pushes.
    pub hot_keys: u64,
    /// Hot values handed to the hot path.
    pub hot_values: u64,
    /// Hot keys sent cold because the push repeats the key.
    pub cold_repeated: u64,
    /// Hot keys sent cold because their value count is not the hot set's.
    pub cold_len: u64,
    /// Hot keys sent cold because the push goes to another server than the key's owner.
    pub cold_wrong_server: u64,
    /// Online: hot keys sent cold in a counted push because every value of
    /// theirs was zero (the server counts non-zero updates only).
    pub cold_zero: u64,
    /// Bytes of the split pushes as the app gave them.
    pub bytes_before: u64,
    /// Bytes of the split pushes as sent (cold part and trailer).
    pub bytes_after: u64,
    /// Of which trailer bytes.
    pub trailer_bytes: u64,
    /// SETTLE messages made.
    /// RESTART frames taken (the switch was started again).
    pub restarts: u64,
    /// SETTLE frames with RESEND sent after a restart.
    pub resettles: u64,
    pub settles: u64,
    /// Their bytes.
    pub settle_bytes: u64,
    /// Rounds that listed a hot key and needed no SETTLE: every packet
    /// added, nothing left over (the aggregate's complete bit settles them).
    pub clean_rounds: u64,
    /// Fallback batches (packets) carried by SETTLE messages.
    pub fallback_batches: u64,
    /// Fallback pairs carried.
    pub fallback_pairs: u64,
    /// Online: pushes split whole (every key cold) while waiting for a
    /// server's decision, or after refusing one.
    pub whole_pushes: u64,
    /// Online: HOTSET decisions taken.
    pub hotsets: u64,
    /// Online: rounds closed with an empty DONE on a decision (rounds the
    /// other workers pushed whole that this one never pushes).
    pub closed_rounds: u64,
}

/// The server agent's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ServerAgentStats {
    /// Messages received.
    pub messages: u64,
    /// Messages delivered to the app (released pushes included).
    pub delivered: u64,
    /// Messages without a Zebra frame delivered unchanged.
    pub passed: u64,
    /// Of those, delivered after waiting behind a held push of their sender.
    pub queued: u64,
    /// Two-stage with a staleness (`crate::sync`): pulls delivered ahead
    /// of held pushes of their sender (at most the staleness of them).
    pub stale_pulls: u64,
    /// The most held pushes of its sender one of them passed (at most the
    /// staleness).
    pub stale_most: u64,
    /// Pushes with a trailer held.
    pub held: u64,
    /// Held pushes released (settled).
    pub released: u64,
    /// Held pushes delivered unsettled after `settle_timeout` (their hot
    /// sum may be incomplete).
    pub forced: u64,
    /// Hot values delivered to the app carrying a sum (non-zero or not).
    pub sum_values: u64,
    /// Hot values delivered as zeros (another request carried the sum).
    pub zero_values: u64,
    /// SETTLE messages consumed.
    /// Restarts of the switch seen (its epoch changed), each told to every
    /// worker with RESTART.
    pub switch_restarts: u64,
    /// Moves of the job to the other switch (failover), each told to
    /// every worker with RESTART naming the switch.
    pub switch_moves: u64,
    /// SETTLE frames with RESEND taken (their round's push still held).
    pub resettles: u64,
    /// SETTLE frames with RESEND dropped: the round's push was delivered
    /// before (its hot sum complete without them).
    pub resettles_late: u64,
    /// Batches of RESEND SETTLEs dropped because the round's aggregate
    /// already held their packet.
    pub resettle_covered: u64,
    pub settles: u64,
    /// Fallback batches handed to the caller.
    pub fallback_batches: u64,
    /// Round aggregates taken.
    pub aggregates: u64,
    /// Fallback pair batches applied.
    pub applies: u64,
    /// A second aggregate for a round (zebra-proto dedupes: must stay 0); ignored.
    pub duplicate_aggregates: u64,
    /// A second SETTLE for a worker's round; ignored.
    pub duplicate_settles: u64,
    /// Trailers whose round is not the worker's previous round + 1.
    pub round_gaps: u64,
    /// Malformed or misaddressed Zebra frames (logged).
    pub bad_frames: u64,
    /// Listed hot indices that are not the first value of a hot key of
    /// this server (logged; the key is left out of the request).
    pub bad_keys: u64,
    /// Aggregates and fallbacks with non-zero values, trailers and SETTLEs
    /// for rounds already forgotten.
    pub late: u64,
    /// Aggregates and fallbacks of zeros only for rounds already forgotten
    /// (nothing lost: e.g. a round whose requests listed no hot key).
    pub late_empty: u64,
    /// Aggregates and fallbacks with non-zero values for rounds forgotten
    /// after every push of theirs was delivered complete (none forced):
    /// nothing of them was missing, so they hold values applied already (a
    /// float residue of the uncertain batches subtracted from a late
    /// aggregate, or a copy), not lost ones.
    pub late_applied: u64,
    /// Non-zero hot values that arrived too late to be delivered, or were
    /// left when a round was forgotten (logged; must stay 0).
    pub lost_values: u64,
    /// Bytes of PUSH trailers received.
    pub trailer_bytes: u64,
    /// Bytes of SETTLE frames received.
    pub settle_bytes: u64,
    /// Online: pushes counted for the re-ranking.
    pub online_counted: u64,
    /// Online: 1 once the server decided to change its hot keys.
    pub online_changed: u64,
    /// Online: 1 once the server decided to keep them.
    pub online_kept: u64,
    /// Online: 1 once the server stepped aside (aggregation would cost its
    /// workers more than it saves; the reason is logged).
    pub online_aside: u64,
    /// Online: times the server counted again after standing aside.
    pub online_recounts: u64,
    /// Online: HOTSET messages to workers.
    pub hotset_messages: u64,
    /// `ZEBRA_SYNC_RANK=pgp`, while counting: the app's answers to pulls
    /// read for their parameters.
    pub pgp_answers: u64,
    /// `ZEBRA_SYNC_RANK=pgp`: counted keys of a push weighed (|g·p|), and
    /// those that could not be (no parameter of theirs read yet).
    pub pgp_scored: u64,
    pub pgp_unknown: u64,
    /// Pull half: changes of hot values outside whole rounds that waited
    /// for a BREAK to settle at every worker.
    pub pull_barriers: u64,
    /// Pull half: pushes that reached the server whole with a hot key
    /// (held for a BREAK while workers could hold copies).
    pub pull_gated: u64,
    /// Pull half: 1 once it stood aside on this server (rounds that do not
    /// line up, or aggregation stepped aside; logged).
    pub pull_aside: u64,
    /// Pull half: pushes its gate held to the gate's timeout (each makes it
    /// stand aside).
    pub pull_gate_timeouts: u64,
}
