//! Hot-key identification (paper §III-C): which PS-lite keys carry most of
//! the pushed updates, found offline from a recorded trace of pushes.
//!
//! - [`trace`]: the push trace format ([`TRACE.md`](../TRACE.md)), the
//!   bounded [`TraceWriter`] a worker process records with, and the checked
//!   [`TraceReader`].
//! - [`synth`]: a seeded synthetic trace whose top keys take a given share
//!   of the updates, like the paper's Figure 4 ("OA"- and "SE"-like).
//! - [`saving`]: what aggregation saves — a key saves one copy for every
//!   worker but one that pushes it in the same round — and the trace's
//!   rounds numbered per PS-lite server as the hot path numbers them.
//! - [`profile`]: update counts and copies saved from traces (optionally a
//!   seeded sample of the records or of the rounds), the rankings, `k` by
//!   Principle 1, the hot-keys file and the cumulative-share curve.
//! - [`precision`]: a sampled hot set against the full-data one: the share
//!   of the full set found and the Kendall tau distance of the rankings.
//!
//! Pure logic and file I/O; no network, no clock.

#![deny(unsafe_code)]

pub mod precision;
pub mod profile;
pub mod saving;
pub mod synth;
pub mod trace;

pub use precision::{kendall_tau_distance, kendall_tau_topk, precision, sweep, SamplingPoint};
pub use profile::{
    BytePrediction, Choice, Counts, Limit, Principle1, ProfileError, Ranking, Sample,
};
pub use saving::{saving_order, RoundCount, RoundNumbers, RECENT_ROUNDS};
pub use synth::{Model, Shape, SynthError, SynthSpec};
pub use trace::{Record, TraceError, TraceReader, TraceWriter};
