//! The pull half on a worker, at the level of PS-lite messages
//! (`docs/PULL.md`): which of the app's pulls are answered from the copy of
//! the servers' hot rows ([`crate::pull`]), and the messages that answer
//! them, byte for byte as the server would have (`zebra_pslite::response`,
//! held to captured answers by `zebra-pslite`'s fixtures).
//!
//! Pure logic: the shim hands [`PullAgent`] every message the worker's
//! DEALER sends ([`PullAgent::on_send`]) and receives
//! ([`PullAgent::on_recv`]); BytePS's PS-lite, whose servers answer
//! through their ROUTER, delivers the answers on that DEALER.
//!
//! The first answers it would give from the copy are checked (`verify`):
//! a sample of the rows the copy would answer (at most [`CHECK_ROWS`],
//! spread over the pull) is asked of the server with the pull's other
//! keys, and the server's rows must equal the copy's byte for byte. One
//! difference turns the pull half off on this worker, logged (a server that
//! changes values by itself breaks the rule the copy relies on), and the
//! rows of that pull that were not checked are asked of the server too: the
//! app gets the server's answer. A sample, not the whole pull: on a link as
//! narrow as the server's, whole checked pulls cost the job the first
//! rounds' gain (eight pulls of a worker's 700 hot rows are 430 KB).

use std::collections::HashMap;

use zebra_proto::Timestamp;
use zebra_pslite::{
    identity, kv_in_place, response, server_answer, server_id, with_kv, DataType, Detector, Format,
    FormatChoice, KvData, KvView, Message, Meta,
};

use crate::hotset::KeyRanges;
use crate::pull::{Fill, PullConfig, PullPlan, RowUpdate, WorkerPulls};
use crate::Frames;

/// What to do with a message the app sends on its DEALER.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PullSend {
    /// Send it as it is.
    Unchanged,
    /// Send these frames instead: the pull without the keys answered here.
    Send(Frames),
    /// Send nothing; give the app this answer (`[server identity, meta,
    /// data...]`, as its DEALER receives a server's answer).
    Answer(Frames),
    /// Ask again when an update arrives, or at this time at the latest
    /// (same `since`).
    Wait(Timestamp),
    /// Send these frames to `server` (the pull without its held hot keys);
    /// the app's answer comes later, from [`PullAgent::on_recv`],
    /// [`PullAgent::on_update`] or [`PullAgent::poll`], once the update of
    /// the worker's round is in (or, if it does not come in time, the
    /// server has answered for those keys too).
    SendHold { server: u16, frames: Frames },
}

/// Timestamps of the pulls the library itself sends (for keys a held pull
/// waited for in vain): far above the counters of PS-lite's customers,
/// below the servers' read-back pulls.
const FOLLOW_TS_BASE: i32 = 0x7D00_0000;
const FOLLOW_TS_SPAN: u32 = 0x0100_0000;

/// The most rows of one pull a check asks the server for.
pub const CHECK_ROWS: usize = 16;

/// Counters of the message level.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PullAgentStats {
    /// Answers given from the copy alone.
    pub answered: u64,
    /// Answers merged from the copy and the server's answer.
    pub merged: u64,
    /// Answers from the copy checked against the server's (`verify`).
    pub verified: u64,
    /// Checks that differed (the pull half then stops on this worker).
    pub mismatches: u64,
    /// Pulls not handled because the server's answer shape is not known
    /// yet (no answer of that server seen).
    pub unknown_shape: u64,
    /// Pulls whose cold part went to the server at once while their hot
    /// part waited for the update.
    pub held: u64,
    /// Of which the update did not come in time (their hot keys were asked
    /// of the server after all).
    pub followed: u64,
}

/// A pull to a server: the server and the app's PS-lite timestamp. PS-lite's
/// worker sends one app request as one message per server, all with the
/// same timestamp, so the timestamp alone does not tell them apart.
type PullId = (u16, i32);

/// A pull sent to a server, waiting for its answer.
#[derive(Debug)]
struct Pending {
    server: u16,
    /// The app's request (for a merged answer).
    request: Meta,
    format: Format,
    /// The app's keys, in order.
    keys: Vec<u64>,
    fill: Option<Fill>,
    /// Values answered here, by position in `keys` (a split pull).
    local: Vec<(usize, Vec<u8>)>,
    /// A check: what the copy would have answered, by position.
    expect: Vec<(usize, Vec<u8>)>,
    /// Its hot part waits for the update (the rest was sent).
    awaiting: Option<Awaiting>,
    /// The request's value type and lens frame (for the pulls made from it).
    request_shape: Option<(DataType, bool)>,
}

/// The hot part of a pull waiting for the update of the worker's round.
#[derive(Debug)]
struct Awaiting {
    /// The keys to answer from the copy, by position.
    held: Vec<(usize, u64)>,
    until: Timestamp,
    /// The server's answer for the rest, once in.
    remote: Option<Vec<(u64, Vec<u8>)>>,
    /// The timestamp of the pull that asked the server for `held` (the
    /// update did not come in time), and its answer once in.
    follow: Option<i32>,
    followed: Option<Vec<(u64, Vec<u8>)>>,
}

/// The shape of a server's pull answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shape {
    val_type: DataType,
    lens: bool,
}

/// The pull half of one worker at the message level.
#[derive(Debug)]
pub struct PullAgent {
    pulls: WorkerPulls,
    detector: Detector,
    ranges: KeyRanges,
    app_id: i32,
    customer_id: i32,
    pending: HashMap<PullId, Pending>,
    shapes: HashMap<u16, Shape>,
    verify: u32,
    off: Option<String>,
    /// Follow-up pulls sent: their server and timestamp → the app's pull
    /// they serve.
    follows: HashMap<PullId, PullId>,
    next_follow: u32,
    stats: PullAgentStats,
}

impl PullAgent {
    /// The pull half of a worker of a job whose servers own `ranges`; pulls
    /// of application `app_id`, customer `customer_id` are handled; the
    /// first `verify` answers from the copy are checked against the
    /// server's.
    pub fn new(
        config: PullConfig,
        format: FormatChoice,
        ranges: KeyRanges,
        (app_id, customer_id): (i32, i32),
        verify: u32,
    ) -> PullAgent {
        PullAgent {
            pulls: WorkerPulls::new(config),
            detector: Detector::new(format),
            ranges,
            app_id,
            customer_id,
            pending: HashMap::new(),
            shapes: HashMap::new(),
            verify,
            off: None,
            follows: HashMap::new(),
            next_follow: 0,
            stats: PullAgentStats::default(),
        }
    }

    /// The copy's counters.
    pub fn pulls(&self) -> &WorkerPulls {
        &self.pulls
    }

    /// The message level's counters.
    pub fn stats(&self) -> &PullAgentStats {
        &self.stats
    }

    /// Why the pull half stopped on this worker, if it did.
    pub fn off(&self) -> Option<&str> {
        self.off.as_deref()
    }

    /// An update of `server` (in chain order): the answers of held pulls
    /// it completes, for the app (`[server identity, meta, data...]`).
    pub fn on_update(&mut self, now: Timestamp, server: u16, update: RowUpdate) -> Vec<Frames> {
        self.pulls.on_update(now, server, update);
        let ready: Vec<PullId> = self
            .pending
            .iter()
            .filter(|(_, p)| p.server == server && p.awaiting.is_some())
            .map(|(&id, _)| id)
            .collect();
        ready
            .into_iter()
            .filter_map(|id| self.complete(id))
            .collect()
    }

    /// When [`poll`](Self::poll) next has work, if ever.
    pub fn poll_at(&self) -> Option<Timestamp> {
        self.pending
            .values()
            .filter_map(|p| p.awaiting.as_ref())
            .filter(|a| a.follow.is_none())
            .map(|a| a.until)
            .min()
    }

    /// Held pulls whose update did not come in time: the pulls that ask
    /// their servers for the held keys, `(server, [meta, data...])`.
    pub fn poll(&mut self, now: Timestamp) -> Vec<(u16, Frames)> {
        let due: Vec<PullId> = self
            .pending
            .iter()
            .filter(|(_, p)| {
                p.awaiting
                    .as_ref()
                    .is_some_and(|a| a.follow.is_none() && a.until <= now)
            })
            .map(|(&id, _)| id)
            .collect();
        let mut out = Vec::new();
        for id in due {
            let follow = FOLLOW_TS_BASE + (self.next_follow % FOLLOW_TS_SPAN) as i32;
            self.next_follow = self.next_follow.wrapping_add(1);
            let Some(p) = self.pending.get_mut(&id) else {
                continue;
            };
            let Some(a) = &mut p.awaiting else {
                continue;
            };
            let positions: Vec<usize> = a.held.iter().map(|&(i, _)| i).collect();
            let mut request = p.request.clone();
            request.timestamp = follow;
            let Some(frames) = reduced(&request, p.format, &p.keys, &positions, p.request_shape)
            else {
                continue;
            };
            a.follow = Some(follow);
            self.pulls.gave_up(positions.len() as u64);
            self.stats.followed += 1;
            self.follows.insert((p.server, follow), id);
            out.push((p.server, frames));
        }
        out
    }

    /// The app's answer to held pull `id` if everything it needs is in.
    fn complete(&mut self, id: PullId) -> Option<Frames> {
        let p = self.pending.get(&id)?;
        let a = p.awaiting.as_ref()?;
        a.remote.as_ref()?;
        let local = match &a.followed {
            Some(entries) => a
                .held
                .iter()
                .map(|&(i, k)| entries.iter().find(|e| e.0 == k).map(|e| (i, e.1.clone())))
                .collect::<Option<Vec<_>>>()?,
            // Once the copy was found wrong, held rows wait for the server's.
            None if a.follow.is_none() && self.off.is_none() => {
                let (server, held) = (p.server, a.held.clone());
                self.pulls.current_rows(server, &held)?
            }
            None => return None,
        };
        let p = self.pending.remove(&id)?;
        let shape = self.shapes.get(&p.server).copied()?;
        let remote: Vec<(u64, &[u8])> = p
            .awaiting
            .as_ref()?
            .remote
            .as_ref()?
            .iter()
            .map(|(k, b)| (*k, &b[..]))
            .collect();
        let mut local = local;
        local.sort_by_key(|e| e.0);
        self.stats.merged += 1;
        answer(&p, shape, &local, Some(&remote))
    }

    /// Updates of `server` lost for good.
    pub fn on_gap(&mut self, server: u16) {
        self.pulls.on_gap(server);
    }

    /// `server`'s hot set changed or it stepped aside.
    pub fn reset(&mut self, server: u16) {
        self.pulls.reset(server);
    }

    /// A message the app's DEALER is about to send (`[meta, data...]`),
    /// first offered at `since`. `split`: the push's server and round when
    /// the worker's agent aggregated it. `is_hot(server, key)`: the
    /// server's hot keys for this worker's next push.
    pub fn on_send(
        &mut self,
        now: Timestamp,
        since: Timestamp,
        frames: &[&[u8]],
        split: Option<(u16, u32)>,
        is_hot: impl Fn(u16, u64) -> bool,
    ) -> PullSend {
        let Some((&meta_frame, data)) = frames.split_first() else {
            return PullSend::Unchanged;
        };
        let Ok((format, meta)) = self.detector.parse(meta_frame) else {
            return PullSend::Unchanged;
        };
        if !meta.is_data()
            || !meta.request
            || (meta.app_id, meta.customer_id) != (self.app_id, self.customer_id)
        {
            return PullSend::Unchanged;
        }
        // The data frames are read in place: a push's values are not copied.
        let keys: Vec<u64> = match KvView::parse(&meta.data_types, data) {
            Ok(kv) => kv.keys().collect(),
            Err(_) => return PullSend::Unchanged,
        };
        let Some(server) = keys.first().and_then(|&k| self.ranges.server_of(k)) else {
            return PullSend::Unchanged;
        };
        if meta.push {
            self.pulls
                .push_sent(server, meta.timestamp, split.map(|(_, round)| round));
            return PullSend::Unchanged;
        }
        if Message::check_data(&meta, data).is_err() {
            return PullSend::Unchanged;
        }
        if self.off.is_some() {
            return PullSend::Unchanged;
        }
        let Some(shape) = self.shapes.get(&server).copied() else {
            if keys.iter().any(|&k| is_hot(server, k)) {
                self.stats.unknown_shape += 1;
                self.pending.insert(
                    (server, meta.timestamp),
                    Pending::new(server, meta.clone(), format, keys, None),
                );
            }
            return PullSend::Unchanged;
        };
        let plan = self
            .pulls
            .plan(now, since, server, &keys, |k| is_hot(server, k));
        let mut pending = Pending::new(server, meta.clone(), format, keys, None);
        pending.request_shape = kv_in_place(&meta, data)
            .ok()
            .flatten()
            .map(|v| (v.val_type(), v.has_lens()));
        match plan {
            PullPlan::Wait { until, held } => {
                let rest: Vec<usize> = (0..pending.keys.len())
                    .filter(|i| !held.contains(i))
                    .collect();
                if held.is_empty() || rest.is_empty() || self.verify > 0 {
                    return PullSend::Wait(until);
                }
                let Some(frames) =
                    reduced(&meta, format, &pending.keys, &rest, pending.request_shape)
                else {
                    return PullSend::Wait(until);
                };
                pending.awaiting = Some(Awaiting {
                    held: held.iter().map(|&i| (i, pending.keys[i])).collect(),
                    until,
                    remote: None,
                    follow: None,
                    followed: None,
                });
                self.stats.held += 1;
                self.pending.insert((server, meta.timestamp), pending);
                PullSend::SendHold { server, frames }
            }
            PullPlan::Server { fill, .. } => {
                pending.fill = fill;
                self.pending.insert((server, meta.timestamp), pending);
                PullSend::Unchanged
            }
            PullPlan::Local(values) if self.verify > 0 => {
                let local = values.into_iter().enumerate().collect();
                self.send_split(pending, &meta, local, Vec::new())
            }
            PullPlan::Local(values) => {
                let rows: Vec<(usize, Vec<u8>)> = values.into_iter().enumerate().collect();
                match answer(&pending, shape, &rows, None) {
                    Some(frames) => {
                        self.stats.answered += 1;
                        PullSend::Answer(frames)
                    }
                    None => PullSend::Unchanged,
                }
            }
            PullPlan::Split {
                local,
                remote,
                fill,
            } => {
                pending.fill = Some(fill);
                self.send_split(pending, &meta, local, remote)
            }
        }
    }

    /// A pull answered partly here (`local`, by position) and partly by its
    /// server (`remote` positions): the reduced pull to send. While checks
    /// are left, a sample of `local` is asked of the server as well, to be
    /// compared with the copy when the answer comes.
    fn send_split(
        &mut self,
        mut pending: Pending,
        request: &Meta,
        mut local: Vec<(usize, Vec<u8>)>,
        mut remote: Vec<usize>,
    ) -> PullSend {
        if self.verify > 0 {
            pending.expect = sample(&mut local, self.stats.verified);
            remote.extend(pending.expect.iter().map(|e| e.0));
            remote.sort_unstable();
        }
        let Some(frames) = reduced(
            request,
            pending.format,
            &pending.keys,
            &remote,
            pending.request_shape,
        ) else {
            return PullSend::Unchanged;
        };
        pending.local = local;
        self.pending
            .insert((pending.server, pending.request.timestamp), pending);
        PullSend::Send(frames)
    }

    /// Two-stage (`crate::sync`): the push with timestamp `ts` to `server`
    /// was answered early at `now` (its hot part settled). The server applies
    /// it before any later request of this worker, so the push counts as
    /// answered: a later pull of hot keys waits for the update of its round
    /// (as after a server's answer) and is answered from it. The server's
    /// own answer, later, changes nothing.
    pub fn push_settled(&mut self, now: Timestamp, server: u16, ts: i32) {
        self.pulls.push_answered(now, server, ts);
    }

    /// A message the app's DEALER received (`[sender identity, meta,
    /// data...]`): what the app gets instead (the same message, or for a
    /// split pull the whole answer).
    pub fn on_recv(
        &mut self,
        now: Timestamp,
        frames: Frames,
        is_hot: impl Fn(u16, u64) -> bool,
    ) -> Option<Frames> {
        let Some((server, env)) = server_answer(&mut self.detector, &frames) else {
            return Some(frames);
        };
        let meta = &env.message.meta;
        if meta.request || !meta.is_data() {
            return Some(frames);
        }
        if meta.push {
            self.pulls.push_answered(now, server, meta.timestamp);
            return Some(frames);
        }
        let id = (server, meta.timestamp);
        if let Some(orig) = self.follows.remove(&id) {
            let entries = owned_entries(&env.message)?;
            let a = self.pending.get_mut(&orig)?.awaiting.as_mut()?;
            a.followed = Some(entries);
            return self.complete(orig);
        }
        if let Some(a) = self.pending.get_mut(&id).and_then(|p| p.awaiting.as_mut()) {
            a.remote = Some(owned_entries(&env.message)?);
            return self.complete(id);
        }
        let Some(p) = self.pending.remove(&id) else {
            return Some(frames);
        };
        let Ok(Some(kv)) = env.message.kv() else {
            return Some(frames);
        };
        let Ok(entries) = kv
            .answer_entries()
            .map(|e| e.map(|(k, b, _)| (k, b)).collect::<Vec<_>>())
        else {
            return Some(frames);
        };
        let shape = Shape {
            val_type: kv.val_type(),
            lens: kv.has_lens(),
        };
        self.shapes.insert(server, shape);
        if let Some(fill) = p.fill {
            let rows = entries
                .iter()
                .filter(|(k, _)| is_hot(server, *k))
                .map(|&(k, b)| (k, b));
            self.pulls.fill(fill, rows);
        }
        if !p.expect.is_empty() && !self.check(server, &p, &entries) && !p.local.is_empty() {
            // The copy is wrong: its rows this pull has not checked are asked
            // of the server too (`poll`), and the app gets the server's rows.
            let remote = entries.iter().map(|&(k, b)| (k, b.to_vec())).collect();
            let held = p.local.iter().map(|&(i, _)| (i, p.keys[i])).collect();
            let mut p = p;
            p.awaiting = Some(Awaiting {
                held,
                until: now,
                remote: Some(remote),
                follow: None,
                followed: None,
            });
            self.pending.insert(id, p);
            return None;
        }
        if p.local.is_empty() && p.expect.is_empty() {
            return Some(frames);
        }
        match answer(&p, shape, &p.local, Some(&entries)) {
            Some(whole) => {
                self.stats.merged += 1;
                Some(whole)
            }
            None => {
                log::error!(
                    "zebra: server {server}'s answer to a split pull does not hold the keys \
                     asked; the pull half stops on this worker"
                );
                self.off = Some(format!(
                    "server {server} answered a split pull with other keys"
                ));
                Some(frames)
            }
        }
    }

    /// A check of the copy against the server's answer: whether they agree.
    fn check(&mut self, server: u16, p: &Pending, entries: &[(u64, &[u8])]) -> bool {
        let differs = p.expect.iter().find(|(i, bytes)| {
            entries
                .iter()
                .find(|(k, _)| *k == p.keys[*i])
                .is_none_or(|(_, b)| *b != &bytes[..])
        });
        match differs {
            None => {
                self.stats.verified += 1;
                self.verify = self.verify.saturating_sub(1);
                true
            }
            Some((i, _)) => {
                self.stats.mismatches += 1;
                let why = format!(
                    "server {server} answered key {} with other values than its updates say \
                     (a server that changes values outside pushes: set ZEBRA_PULL=server)",
                    p.keys[*i]
                );
                log::error!("zebra: the pull half stops on this worker: {why}");
                self.off = Some(why);
                false
            }
        }
    }
}

impl Pending {
    fn new(
        server: u16,
        request: Meta,
        format: Format,
        keys: Vec<u64>,
        fill: Option<Fill>,
    ) -> Pending {
        Pending {
            server,
            request,
            format,
            keys,
            fill,
            local: Vec::new(),
            expect: Vec::new(),
            awaiting: None,
            request_shape: None,
        }
    }
}

/// Takes a check's sample out of `local` (rows by position, in order): at
/// most [`CHECK_ROWS`] rows spread evenly over it, starting `turn` rows in
/// (modulo the spacing), so that successive checks sample different rows.
fn sample(local: &mut Vec<(usize, Vec<u8>)>, turn: u64) -> Vec<(usize, Vec<u8>)> {
    let n = local.len();
    let take = n.min(CHECK_ROWS);
    if take == 0 {
        return Vec::new();
    }
    let step = n / take;
    let first = (turn % step as u64) as usize;
    let chosen: Vec<bool> = (0..n)
        .map(|i| i >= first && (i - first).is_multiple_of(step) && (i - first) / step < take)
        .collect();
    let (picked, kept): (Vec<_>, Vec<_>) = std::mem::take(local)
        .into_iter()
        .zip(chosen)
        .partition(|(_, c)| *c);
    *local = kept.into_iter().map(|(r, _)| r).collect();
    picked.into_iter().map(|(r, _)| r).collect()
}

/// The entries of a pull answer, owned (`None` if it holds no KV data).
fn owned_entries(m: &Message) -> Option<Vec<(u64, Vec<u8>)>> {
    let kv = m.kv().ok()??;
    let entries = kv.answer_entries().ok()?;
    Some(entries.map(|(k, b, _)| (k, b.to_vec())).collect())
}

/// The app's request reduced to the keys at `positions`, as frames.
fn reduced(
    request: &Meta,
    format: Format,
    keys: &[u64],
    positions: &[usize],
    shape: Option<(DataType, bool)>,
) -> Option<Frames> {
    let (val_type, lens) = shape?;
    let kv = KvData {
        keys: positions.iter().map(|&i| keys[i]).collect(),
        vals: Vec::new(),
        lens: lens.then(Vec::new),
        val_type,
    };
    with_kv(request, &kv).and_then(|m| m.to_frames(format)).ok()
}

/// The server's answer to `p`'s request, built from `local` values (by
/// position) and, for the other keys, the server's answer `remote`; `None`
/// if a key has no value.
fn answer(
    p: &Pending,
    shape: Shape,
    local: &[(usize, Vec<u8>)],
    remote: Option<&[(u64, &[u8])]>,
) -> Option<Frames> {
    let mut kv = KvData::empty(shape.val_type, shape.lens);
    let mut local = local.iter().peekable();
    let mut remote = remote.unwrap_or(&[]).iter();
    for (i, &key) in p.keys.iter().enumerate() {
        let bytes: &[u8] = match local.peek() {
            Some((at, b)) if *at == i => {
                local.next();
                b
            }
            _ => {
                let &(k, b) = remote.next()?;
                if k != key {
                    return None;
                }
                b
            }
        };
        kv.push_entry(key, bytes);
    }
    let msg = response(&p.request, Some(&kv)).ok()?;
    let mut frames = vec![identity(server_id(i32::from(p.server)))];
    frames.extend(msg.to_frames(p.format).ok()?);
    Some(frames)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const FORMAT: Format = Format::Byteps;

    fn config() -> PullConfig {
        PullConfig {
            gate: Duration::from_millis(500),
            wait: Duration::from_millis(5),
            expiry: Duration::from_secs(10),
        }
    }

    fn agent(verify: u32) -> PullAgent {
        PullAgent::new(
            config(),
            FormatChoice::Fixed(FORMAT),
            KeyRanges::new(vec![0..100, 100..200]),
            (0, 0),
            verify,
        )
    }

    fn hot(_: u16, k: u64) -> bool {
        k % 100 < 10
    }

    fn value(k: u64, round: u32) -> Vec<u8> {
        [k as f32, round as f32]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect()
    }

    /// A worker's request as its DEALER sends it.
    fn request(ts: i32, push: bool, keys: &[u64]) -> Frames {
        let mut meta = Meta::new();
        meta.head = 0;
        meta.app_id = 0;
        meta.customer_id = 0;
        meta.timestamp = ts;
        meta.request = true;
        meta.push = push;
        let mut kv = KvData::empty(DataType::Float, false);
        for &k in keys {
            if push {
                kv.push_entry(k, &value(k, 0));
            } else {
                kv.keys.push(k);
            }
        }
        with_kv(&meta, &kv).unwrap().to_frames(FORMAT).unwrap()
    }

    /// The server's answer (at `round`'s values) as the worker's DEALER
    /// receives it.
    fn server_answer(server: u16, frames: &Frames, round: u32) -> Frames {
        let refs: Vec<&[u8]> = frames[1..].iter().map(|f| &f[..]).collect();
        let req = Message::parse(FORMAT, &frames[0], &refs).unwrap();
        let kv = req.kv().unwrap();
        let reply = if req.meta.push {
            response(&req.meta, None).unwrap()
        } else {
            let mut out = KvData::empty(DataType::Float, false);
            for k in kv.unwrap().keys() {
                out.push_entry(k, &value(k, round));
            }
            response(&req.meta, Some(&out)).unwrap()
        };
        let mut f = vec![identity(server_id(i32::from(server)))];
        f.extend(reply.to_frames(FORMAT).unwrap());
        f
    }

    fn refs(f: &Frames) -> Vec<&[u8]> {
        f.iter().map(|x| &x[..]).collect()
    }

    fn t() -> Timestamp {
        Timestamp::from_millis(1)
    }

    /// Pushes round `round` to server 0 (aggregated) and gets the answer.
    fn push_round(a: &mut PullAgent, ts: i32, round: u32) {
        let push = request(ts, true, &[1, 2, 50]);
        assert_eq!(
            a.on_send(t(), t(), &refs(&push), Some((0, round)), hot),
            PullSend::Unchanged
        );
        let ans = server_answer(0, &push, round);
        assert_eq!(a.on_recv(t(), ans.clone(), hot), Some(ans));
    }

    fn update(seq: u32, round: u32, keys: &[u64]) -> RowUpdate {
        RowUpdate {
            seq,
            round,
            brk: false,
            entries: keys.iter().map(|&k| (k, value(k, round))).collect(),
        }
    }

    /// A worker whose copy holds keys 1 and 2 at round 1, its push of round 1
    /// answered, server 0's answer shape learned from a pull of key 1.
    fn copy_at_round_1(verify: u32) -> PullAgent {
        let mut a = agent(verify);
        push_round(&mut a, 1, 1);
        a.on_update(t(), 0, update(1, 1, &[1, 2]));
        let first = request(2, false, &[1]);
        a.on_send(t(), t(), &refs(&first), None, hot);
        a.on_recv(t(), server_answer(0, &first, 1), hot);
        a
    }

    #[test]
    fn answers_as_the_server_would_after_learning_its_shape() {
        let mut a = agent(0);
        push_round(&mut a, 1, 1);
        a.on_update(t(), 0, update(1, 1, &[1, 2]));
        // No answer of server 0 seen yet: the first pull goes to it.
        let pull = request(2, false, &[1, 2]);
        assert_eq!(
            a.on_send(t(), t(), &refs(&pull), None, hot),
            PullSend::Unchanged
        );
        let ans = server_answer(0, &pull, 1);
        assert_eq!(a.on_recv(t(), ans.clone(), hot), Some(ans));
        let pull = request(3, false, &[1, 2]);
        assert_eq!(
            a.on_send(t(), t(), &refs(&pull), None, hot),
            PullSend::Answer(server_answer(0, &pull, 1))
        );
        assert_eq!(a.stats().answered, 1);
    }

    #[test]
    fn a_split_pull_is_merged_byte_for_byte() {
        let mut a = copy_at_round_1(0);
        let pull = request(3, false, &[1, 2, 50, 60]);
        let PullSend::Send(reduced) = a.on_send(t(), t(), &refs(&pull), None, hot) else {
            panic!("expected a reduced pull");
        };
        let got = a.on_recv(t(), server_answer(0, &reduced, 1), hot);
        assert_eq!(got, Some(server_answer(0, &pull, 1)));
        assert_eq!(a.stats().merged, 1);
    }

    /// Sends `pull` through `a`, which must ask the server for keys `asked`
    /// (a check): the reduced pull.
    fn checked(a: &mut PullAgent, pull: &Frames, asked: &[u64]) -> Frames {
        let PullSend::Send(reduced) = a.on_send(t(), t(), &refs(pull), None, hot) else {
            panic!("expected a checked pull");
        };
        let ts = Message::parse(FORMAT, &pull[0], &refs(pull)[1..])
            .unwrap()
            .meta
            .timestamp;
        assert_eq!(reduced, request(ts, false, asked));
        reduced
    }

    #[test]
    fn a_check_that_differs_turns_the_pull_half_off() {
        let mut a = copy_at_round_1(2);
        // Checked: the server agrees.
        let pull = request(3, false, &[1, 2]);
        let ask = checked(&mut a, &pull, &[1, 2]);
        assert_eq!(
            a.on_recv(t(), server_answer(0, &ask, 1), hot),
            Some(server_answer(0, &pull, 1))
        );
        assert_eq!(a.stats().verified, 1);
        // The server's values moved without an update: caught, and the app
        // gets the server's values.
        let pull = request(4, false, &[1, 2]);
        let ask = checked(&mut a, &pull, &[1, 2]);
        assert_eq!(
            a.on_recv(t(), server_answer(0, &ask, 7), hot),
            Some(server_answer(0, &pull, 7))
        );
        assert_eq!(a.stats().mismatches, 1);
        assert!(a.off().is_some());
        let pull = request(5, false, &[1, 2]);
        assert_eq!(
            a.on_send(t(), t(), &refs(&pull), None, hot),
            PullSend::Unchanged
        );
    }

    #[test]
    fn a_push_in_flight_sends_the_pull_to_the_server() {
        let mut a = copy_at_round_1(0);
        let push = request(3, true, &[1, 2]);
        a.on_send(t(), t(), &refs(&push), Some((0, 2)), hot);
        let pull = request(4, false, &[1, 2]);
        assert_eq!(
            a.on_send(t(), t(), &refs(&pull), None, hot),
            PullSend::Unchanged
        );
        // Its answer comes; the update of round 2 has not: the next pull waits.
        a.on_recv(t(), server_answer(0, &push, 2), hot);
        let pull = request(5, false, &[1, 2]);
        assert!(matches!(
            a.on_send(t(), t(), &refs(&pull), None, hot),
            PullSend::Wait(_)
        ));
        a.on_update(t(), 0, update(2, 2, &[1]));
        assert_eq!(
            a.on_send(t(), t(), &refs(&pull), None, hot),
            PullSend::Answer({
                let mut want = server_answer(0, &pull, 2);
                // Key 2 kept its round-1 value (not in round 2's update).
                let refs2: Vec<&[u8]> = want[2..].iter().map(|f| &f[..]).collect();
                let m = Message::parse(FORMAT, &want[1], &refs2).unwrap();
                let mut kv = KvData::empty(DataType::Float, false);
                kv.push_entry(1, &value(1, 2));
                kv.push_entry(2, &value(2, 1));
                want.truncate(1);
                want.extend(with_kv(&m.meta, &kv).unwrap().to_frames(FORMAT).unwrap());
                want
            })
        );
    }

    /// The answer of server 0 to `pull` with each key's value of its round.
    fn answer_with(pull: &Frames, values: &[(u64, u32)]) -> Frames {
        let refs: Vec<&[u8]> = pull[1..].iter().map(|f| &f[..]).collect();
        let req = Message::parse(FORMAT, &pull[0], &refs).unwrap();
        let mut kv = KvData::empty(DataType::Float, false);
        for &(k, round) in values {
            kv.push_entry(k, &value(k, round));
        }
        let mut f = vec![identity(server_id(0))];
        f.extend(
            response(&req.meta, Some(&kv))
                .unwrap()
                .to_frames(FORMAT)
                .unwrap(),
        );
        f
    }

    /// A worker whose copy is at round 1 and whose push of round 2 is answered.
    fn awaiting_round_2() -> PullAgent {
        let mut a = copy_at_round_1(0);
        push_round(&mut a, 3, 2);
        a
    }

    #[test]
    fn the_cold_part_goes_at_once_and_the_hot_part_waits_for_the_update() {
        let mut a = awaiting_round_2();
        let pull = request(4, false, &[1, 2, 50]);
        let PullSend::SendHold { server: 0, frames } = a.on_send(t(), t(), &refs(&pull), None, hot)
        else {
            panic!("expected the cold part sent, the hot part held");
        };
        assert_eq!(a.on_recv(t(), server_answer(0, &frames, 2), hot), None);
        let done = a.on_update(t(), 0, update(2, 2, &[1]));
        assert_eq!(done, vec![answer_with(&pull, &[(1, 2), (2, 1), (50, 2)])]);
        assert_eq!((a.stats().held, a.stats().followed), (1, 0));
    }

    /// PS-lite's worker sends one app pull (or push) as one message per
    /// server, all with the app's timestamp: each server's answer is
    /// matched with the message sent to that server.
    #[test]
    fn one_timestamp_to_two_servers_is_two_pulls() {
        let mut a = agent(4);
        let (keys0, keys1) = ([1, 2], [101, 102]);
        for (server, keys) in [(0, &keys0), (1, &keys1)] {
            let push = request(1, true, keys);
            a.on_send(t(), t(), &refs(&push), Some((server, 1)), hot);
            a.on_recv(t(), server_answer(server, &push, 1), hot);
            a.on_update(t(), server, update(1, 1, keys));
            // Each server's answer shape, from a pull of its own.
            let first = request(2 + i32::from(server), false, &keys[..1]);
            a.on_send(t(), t(), &refs(&first), None, hot);
            a.on_recv(t(), server_answer(server, &first, 1), hot);
        }
        // Checked, then answered here; server 1 answers first once.
        for (ts, order) in [(4, [0, 1]), (5, [1, 0])] {
            let pulls = [request(ts, false, &keys0), request(ts, false, &keys1)];
            let asks = [
                checked(&mut a, &pulls[0], &keys0),
                checked(&mut a, &pulls[1], &keys1),
            ];
            for server in order {
                let s = usize::from(server);
                let ans = server_answer(server, &asks[s], 1);
                assert_eq!(
                    a.on_recv(t(), ans, hot),
                    Some(server_answer(server, &pulls[s], 1))
                );
            }
        }
        assert_eq!((a.stats().verified, a.stats().mismatches), (2 * 2, 0));
        assert_eq!(a.off(), None);
        for (server, keys) in [(0, &keys0), (1, &keys1)] {
            let pull = request(6, false, keys);
            assert_eq!(
                a.on_send(t(), t(), &refs(&pull), None, hot),
                PullSend::Answer(server_answer(server, &pull, 1))
            );
        }
    }

    #[test]
    fn a_held_pull_whose_update_does_not_come_asks_the_server() {
        let mut a = awaiting_round_2();
        let pull = request(4, false, &[1, 2, 50]);
        let PullSend::SendHold { frames, .. } = a.on_send(t(), t(), &refs(&pull), None, hot) else {
            panic!("expected a held pull");
        };
        let until = a.poll_at().expect("a deadline");
        assert!(a.poll(t()).is_empty() || until <= t());
        let follow = a.poll(until);
        assert_eq!(follow.len(), 1);
        let (server, ask) = &follow[0];
        assert_eq!(*server, 0);
        // The server's answers, in either order; the update comes too late to matter.
        assert_eq!(a.on_recv(t(), server_answer(0, ask, 2), hot), None);
        a.on_update(t(), 0, update(2, 2, &[1]));
        assert_eq!(
            a.on_recv(t(), server_answer(0, &frames, 2), hot),
            Some(answer_with(&pull, &[(1, 2), (2, 2), (50, 2)]))
        );
        assert_eq!(a.stats().followed, 1);
    }

    /// A worker whose copy holds `n` hot keys of server 0 (`0..n`, all hot)
    /// at round 1, `verify` checks left.
    fn wide_copy(n: u64, verify: u32) -> (PullAgent, Vec<u64>) {
        let keys: Vec<u64> = (0..n).collect();
        let mut a = agent(verify);
        let push = request(1, true, &keys);
        a.on_send(t(), t(), &refs(&push), Some((0, 1)), |_, _| true);
        a.on_recv(t(), server_answer(0, &push, 1), |_, _| true);
        a.on_update(t(), 0, update(1, 1, &keys));
        let first = request(2, false, &[0]);
        a.on_send(t(), t(), &refs(&first), None, |_, _| true);
        a.on_recv(t(), server_answer(0, &first, 1), |_, _| true);
        (a, keys)
    }

    #[test]
    fn a_check_asks_the_server_for_a_sample_of_the_rows() {
        let (mut a, keys) = wide_copy(40, 2);
        let mut asked = Vec::new();
        for ts in [3, 4] {
            let pull = request(ts, false, &keys);
            let PullSend::Send(ask) = a.on_send(t(), t(), &refs(&pull), None, |_, _| true) else {
                panic!("expected a checked pull");
            };
            let refs2: Vec<&[u8]> = ask[1..].iter().map(|f| &f[..]).collect();
            let m = Message::parse(FORMAT, &ask[0], &refs2).unwrap();
            let sample: Vec<u64> = m.kv().unwrap().unwrap().keys().collect();
            assert_eq!(sample.len(), CHECK_ROWS);
            asked.push(sample);
            // The merged answer is the server's, byte for byte.
            assert_eq!(
                a.on_recv(t(), server_answer(0, &ask, 1), |_, _| true),
                Some(server_answer(0, &pull, 1))
            );
        }
        assert_ne!(asked[0], asked[1], "successive checks sample other rows");
        assert_eq!((a.stats().verified, a.stats().mismatches), (2, 0));
        // No check left: answered here.
        let pull = request(5, false, &keys);
        assert_eq!(
            a.on_send(t(), t(), &refs(&pull), None, |_, _| true),
            PullSend::Answer(server_answer(0, &pull, 1))
        );
    }

    #[test]
    fn a_sample_that_differs_asks_the_server_for_the_rest_of_the_pull() {
        let (mut a, keys) = wide_copy(40, 1);
        let pull = request(3, false, &keys);
        let PullSend::Send(ask) = a.on_send(t(), t(), &refs(&pull), None, |_, _| true) else {
            panic!("expected a checked pull");
        };
        // The server's values moved without an update: the copy's other
        // rows are not given to the app; the server is asked for them.
        assert_eq!(a.on_recv(t(), server_answer(0, &ask, 7), |_, _| true), None);
        assert!(a.off().is_some());
        let follow = a.poll(t());
        assert_eq!(follow.len(), 1);
        let (server, rest) = &follow[0];
        assert_eq!(*server, 0);
        // An update now changes nothing: the copy is not trusted.
        assert!(a.on_update(t(), 0, update(2, 2, &keys)).is_empty());
        assert_eq!(
            a.on_recv(t(), server_answer(0, rest, 7), |_, _| true),
            Some(server_answer(0, &pull, 7))
        );
    }

    #[test]
    fn a_sample_is_spread_and_turns() {
        let rows =
            |n: usize| -> Vec<(usize, Vec<u8>)> { (0..n).map(|i| (i, vec![i as u8])).collect() };
        for (n, turn) in [
            (0, 0),
            (5, 3),
            (16, 1),
            (17, 0),
            (40, 0),
            (40, 1),
            (1000, 7),
        ] {
            let mut local = rows(n);
            let picked = sample(&mut local, turn);
            assert_eq!(picked.len(), n.min(CHECK_ROWS), "n {n}");
            assert_eq!(picked.len() + local.len(), n);
            let mut all: Vec<usize> = picked.iter().chain(&local).map(|r| r.0).collect();
            all.sort_unstable();
            assert_eq!(all, (0..n).collect::<Vec<_>>(), "every row once");
            assert!(local.windows(2).all(|w| w[0].0 < w[1].0), "order kept");
        }
        let mut a = rows(40);
        let mut b = rows(40);
        assert_ne!(sample(&mut a, 0), sample(&mut b, 1));
    }
}
