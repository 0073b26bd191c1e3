//! Every constant the P4 program must agree with, in one place.
//!
//! A conformance test (`tests/p4_conformance.rs`) compares these numbers with
//! the P4 sources in `p4/`, so they cannot drift. Sizes are in bytes unless named
//! otherwise. All multi-byte wire fields are big endian.

/// First two bytes of every Zebra hot-path datagram ("ZB").
pub const MAGIC: u16 = 0x5A42;
/// Wire format version carried in byte 2 (2: a job token in every packet a
/// member sends and in the switch's answers; version 1 had none).
pub const VERSION: u8 = 2;

/// Default UDP port of the aggregator (switch) and of the hot-path sockets.
pub const DEFAULT_UDP_PORT: u16 = 9950;

/// Packet type codes (byte 3 of every datagram).
pub mod packet_type {
    /// Worker → switch: sparse `(hot index, value)` pairs.
    pub const HOT: u8 = 1;
    /// Worker → switch: a dense block of consecutive hot indices.
    pub const HOT_DENSE: u8 = 2;
    /// Switch → worker: the packet was added (or had been added before).
    pub const ACK: u8 = 3;
    /// Switch → worker: the packet was not added; send its pairs to the servers.
    pub const FALLBACK: u8 = 4;
    /// Switch → server: part of a round's aggregate (summed pairs).
    pub const AGGREGATE: u8 = 5;
    /// Switch → server: part of a round's coverage (which worker packets the sum holds).
    pub const COVERAGE: u8 = 6;
    /// Server → switch: one aggregate or coverage part arrived.
    pub const AGGREGATE_ACK: u8 = 7;
    /// Server → switch CPU: aggregates for this (job, server) go to my address.
    pub const REGISTER: u8 = 8;
    /// Switch CPU → server: the registration is recorded.
    pub const REGISTER_ACK: u8 = 9;
    /// Server → switch → workers: one part of the server's updated hot
    /// values (the switch copies it to every worker of the job, or to one).
    pub const UPDATE: u8 = 10;
    /// Worker → switch → server: one update part arrived.
    pub const UPDATE_ACK: u8 = 11;
}

/// A job's membership token (`docs/SECURITY.md`): a nonzero u32 the switch
/// hands its members (in REGISTER_ACK, ACK and FALLBACK) and they show in
/// every HOT, HOT_DENSE, AGGREGATE_ACK and REGISTER; 0 in a member's packet:
/// it has none yet.
pub const TOKEN_LEN: usize = 4;
/// Header length of a sparse hot packet (its token at 16..20); pairs follow.
pub const HOT_HEADER_LEN: usize = 20;
/// Header length of a dense hot packet (token, then the base); values follow.
pub const HOT_DENSE_HEADER_LEN: usize = 24;
/// Length of an ACK or FALLBACK datagram (the job's token at 16..20).
pub const RESPONSE_LEN: usize = 20;
/// Header length of an aggregate part; pairs follow.
pub const AGGREGATE_HEADER_LEN: usize = 40;
/// Header length of a coverage part; bitmap bytes follow.
pub const COVERAGE_HEADER_LEN: usize = 24;
/// Length of an aggregate ACK datagram (the server's token at 16..20).
pub const AGGREGATE_ACK_LEN: usize = 20;
/// Length of a REGISTER datagram, its token last (a REGISTER_ACK adds
/// [`EPOCH_LEN`]).
pub const REGISTER_LEN: usize = 12;
/// Length of a REGISTER that asks the switch to admit its job (the job's
/// size follows the header, then the token; its REGISTER_ACK adds
/// [`EPOCH_LEN`]).
pub const REGISTER_ADMIT_LEN: usize = 20;
/// The switch's incarnation (a nonzero u32 chosen at start) at the end of
/// every REGISTER_ACK: a server that sees it change knows the switch lost
/// its state (`docs/RELIABILITY.md`, "The switch killed and started again").
pub const EPOCH_LEN: usize = 4;
/// Header length of an update part; entries follow.
pub const UPDATE_HEADER_LEN: usize = 28;
/// Header of one update entry (`key u64`, `offset u32`, `len u16`); `len`
/// value bytes follow.
pub const UPDATE_ENTRY_HEADER_LEN: usize = 14;
/// Length of an update ACK datagram.
pub const UPDATE_ACK_LEN: usize = 20;
/// The target of an update part that goes to every worker of the job (the
/// switch's multicast); any other target is one worker's rank.
pub const UPDATE_TARGET_ALL: u16 = 0xFFFF;
/// One `(index u32, value u32)` pair.
pub const PAIR_LEN: usize = 8;
/// One value (f32 bits or i32 fixed point).
pub const VALUE_LEN: usize = 4;

/// The paper's packet size: the UDP payload of one hot packet.
pub const DEFAULT_PACKET_SIZE: usize = 192;
/// Smallest packet size a configuration may ask for (an aggregate header and one pair fit).
pub const MIN_PACKET_SIZE: usize = 64;
/// Largest packet size (UDP payload in a 1500-byte MTU).
pub const MAX_PACKET_SIZE: usize = 1472;

/// Depth of the P4 parser's pair header stack: at most this many pairs per packet.
pub const MAX_PAIRS_PER_PACKET: usize = 64;
/// Header of one run of consecutive hot indices in an aggregate part
/// (`base u32`, `len u16`); `len` values follow.
pub const RUN_HEADER_LEN: usize = 6;
/// Most values in one aggregate part (built by the switch CPU, not parsed by
/// the pipeline, so only the packet size limits it): one run fills it.
pub const MAX_AGGREGATE_VALUES: usize =
    (MAX_PACKET_SIZE - AGGREGATE_HEADER_LEN - RUN_HEADER_LEN) / VALUE_LEN;
/// Width of the worker bitmaps (one bit per worker rank).
pub const MAX_WORKERS: usize = 64;
/// Register arrays the pipeline can give to accumulators (stateful ALUs left
/// after round state, records, counters and coverage take theirs).
pub const MAX_REGISTERS: usize = 40;
/// Entries in one register array (copies × slots).
pub const MAX_REGISTER_ENTRIES: usize = 65536;
/// Copies of the slot memory (rounds in flight per job; SwitchML keeps two).
pub const MAX_COPIES: usize = 4;
/// Largest per-round packet count of one worker (sequence numbers are u16).
pub const MAX_SEQS: usize = 65535;
/// Sequence numbers covered by one coverage register word.
pub const COVER_WORD_BITS: usize = 32;

/// Default register arrays (R).
pub const DEFAULT_REGISTERS: u16 = 32;
/// Default slots per register array and copy (S).
pub const DEFAULT_SLOTS: u32 = 1024;
/// Default copies (W).
pub const DEFAULT_COPIES: u8 = 2;
/// Default per-worker, per-round packet limit.
pub const DEFAULT_MAX_SEQS: u16 = 4096;
/// Default of how far ahead of a job's newest round a hot packet's round may
/// be (16 PS-lite barrier epochs of 65,536 rounds); a packet further ahead is
/// refused (FALLBACK `FarAhead`), not remembered.
pub const DEFAULT_MAX_ROUND_AHEAD: u32 = 1 << 20;
