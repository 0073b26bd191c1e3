//! The pull half on a server (`docs/PULL.md`): reading a round's hot values
//! back from the server app, to send them once through the switch.
//!
//! The server's library cannot compute the app's values (the optimizer is
//! the app's), so it asks the app: right after the last request of a round
//! it gives the app a pull of the round's hot keys, shaped like the pulls
//! the app's own workers send (their requests are the templates: the same
//! meta, sender and frames, another timestamp), and takes the app's answer
//! out of what the app sends before it reaches a worker
//! ([`ReadBack::on_app_send`]). The answers become the round's update
//! ([`RoundValues`]), handed out in round order ([`ReadBack::take_ready`]).
//!
//! Pure logic: frames in, frames out.

use std::collections::{BTreeMap, HashMap, VecDeque};

use zebra_pslite::{with_kv, DataType, Format, KvData, Message, Meta, Route};

use crate::Frames;

/// Timestamps of the pulls the library adds: far above the counters of
/// PS-lite's customers (which start at 0 and count requests).
const TS_BASE: i32 = 0x7E00_0000;
/// Timestamps cycle through this many values.
const TS_SPAN: u32 = 0x0100_0000;
/// Updates waiting for the app's answers at most; beyond, the oldest is
/// replaced by a BREAK (an app that does not answer the library's pulls
/// costs nothing but the pull half).
const MAX_WAITING: usize = 64;

/// One update for the workers: the server's values of the round's hot keys
/// after `round`, or a BREAK.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundValues {
    /// The round (0 with a BREAK).
    pub round: u32,
    /// Values changed outside rounds (or could not be read back): workers
    /// drop what they hold of this server.
    pub brk: bool,
    /// The app's answers to the read-back pulls carry a lens frame.
    pub lens: bool,
    /// `(key, value bytes as the app's pull answer holds them)`, keys
    /// ascending.
    pub entries: Vec<(u64, Vec<u8>)>,
}

impl RoundValues {
    fn brk() -> RoundValues {
        RoundValues {
            round: 0,
            brk: true,
            lens: false,
            entries: Vec::new(),
        }
    }
}

/// A worker's pull the app was given: what the library's pulls copy.
#[derive(Debug, Clone)]
struct Template {
    identity: Vec<u8>,
    meta: Meta,
    format: Format,
    val_type: DataType,
    lens: bool,
}

/// Counters of the read-back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadBackStats {
    /// Pull templates learned (or renewed) from workers' pulls.
    pub templates: u64,
    /// Pulls added for the app.
    pub pulls: u64,
    /// Their answers taken out.
    pub answers: u64,
    /// Answers that did not parse or did not match the pull (the update
    /// becomes a BREAK).
    pub bad_answers: u64,
    /// Rounds with a hot key no template covers (their update is a BREAK).
    pub untemplated: u64,
    /// Updates replaced by a BREAK because too many waited.
    pub overflowed: u64,
    /// Updates made (BREAKs included).
    pub updates: u64,
    /// Of which BREAKs.
    pub breaks: u64,
}

#[derive(Debug)]
enum Pending {
    /// Waiting for the answers to these pulls.
    Waiting {
        values: RoundValues,
        pulls: Vec<i32>,
    },
    Ready(RoundValues),
}

/// The read-back of one PS-lite server.
#[derive(Debug, Default)]
pub struct ReadBack {
    /// Per command (`head`), the last multi-key pull seen: an app may
    /// answer a pull by its command (a round's own sums), so a read-back
    /// copies a pull of the round's requests' command.
    multi: HashMap<i32, Template>,
    /// Per command and key, the last single-key pull of it.
    single: HashMap<(i32, u64), Template>,
    next: u32,
    queue: VecDeque<Pending>,
    /// Timestamp of each pull not answered yet → the update it fills.
    asked: BTreeMap<i32, u64>,
    /// Number of the front update (updates are numbered as they are queued).
    front: u64,
    stats: ReadBackStats,
}

impl ReadBack {
    /// A read-back with nothing learned.
    pub fn new() -> ReadBack {
        ReadBack::default()
    }

    /// Counters.
    pub fn stats(&self) -> &ReadBackStats {
        &self.stats
    }

    /// A request given to the app: a worker's pull that holds a hot key
    /// (`is_hot`) becomes a template.
    pub fn learn(
        &mut self,
        identity: &[u8],
        message: &Message,
        format: Format,
        is_hot: impl Fn(u64) -> bool,
    ) {
        let m = &message.meta;
        if !(m.is_data() && m.request && !m.push) {
            return;
        }
        let Ok(Some(kv)) = message.kv() else {
            return;
        };
        if !kv.vals().is_empty() || !kv.keys().any(&is_hot) {
            return;
        }
        let t = Template {
            identity: identity.to_vec(),
            meta: m.clone(),
            format,
            val_type: kv.val_type(),
            lens: kv.has_lens(),
        };
        self.stats.templates += 1;
        if kv.num_keys() == 1 {
            self.single.insert((m.head, kv.key(0)), t);
        } else {
            self.multi.insert(m.head, t);
        }
    }

    /// Every request of `round` has been given to the app; `keys` are the
    /// hot keys they held, `head` their command (`None`: they differ, and
    /// no read-back can stand for all of them: a BREAK). Returns the pulls to give the app right after
    /// them (`[identity, meta, data...]` as the ROUTER would give them);
    /// none when the round held no hot key (its update, empty, is ready) or
    /// when no template covers its keys (its update is a BREAK).
    pub fn after_round(
        &mut self,
        round: u32,
        head: Option<i32>,
        mut keys: Vec<u64>,
    ) -> Vec<Frames> {
        keys.sort_unstable();
        keys.dedup();
        if keys.is_empty() {
            self.queue_ready(RoundValues {
                round,
                brk: false,
                lens: false,
                entries: Vec::new(),
            });
            return Vec::new();
        }
        let Some(head) = head else {
            self.stats.untemplated += 1;
            self.break_chain();
            return Vec::new();
        };
        let mut asks: Vec<(Template, Vec<u64>)> = Vec::new();
        if let Some(t) = self.multi.get(&head) {
            asks.push((t.clone(), keys));
        } else {
            for k in keys {
                match self.single.get(&(head, k)) {
                    Some(t) => asks.push((t.clone(), vec![k])),
                    None => {
                        self.stats.untemplated += 1;
                        self.break_chain();
                        return Vec::new();
                    }
                }
            }
        }
        let mut out = Vec::with_capacity(asks.len());
        let mut pulls = Vec::with_capacity(asks.len());
        let id = self.front + self.queue.len() as u64;
        for (t, keys) in asks {
            let ts = TS_BASE + (self.next % TS_SPAN) as i32;
            self.next = self.next.wrapping_add(1);
            let mut meta = t.meta.clone();
            meta.timestamp = ts;
            let kv = KvData {
                keys,
                vals: Vec::new(),
                lens: t.lens.then(Vec::new),
                val_type: t.val_type,
            };
            let Ok(frames) = with_kv(&meta, &kv).and_then(|m| m.to_frames(t.format)) else {
                self.stats.bad_answers += 1;
                self.break_chain();
                return Vec::new();
            };
            let mut f = Vec::with_capacity(frames.len() + 1);
            f.push(t.identity.clone());
            f.extend(frames);
            out.push(f);
            pulls.push(ts);
            self.asked.insert(ts, id);
        }
        self.stats.pulls += out.len() as u64;
        self.queue.push_back(Pending::Waiting {
            values: RoundValues {
                round,
                brk: false,
                lens: false,
                entries: Vec::new(),
            },
            pulls,
        });
        self.bound();
        out
    }

    /// The server's hot values change outside rounds: a BREAK goes out
    /// after the updates before it.
    pub fn break_chain(&mut self) {
        self.queue_ready(RoundValues::brk());
    }

    fn queue_ready(&mut self, v: RoundValues) {
        self.queue.push_back(Pending::Ready(v));
        self.bound();
    }

    /// Too many updates waiting: the oldest waiting one becomes a BREAK.
    fn bound(&mut self) {
        if self.queue.len() <= MAX_WAITING {
            return;
        }
        if let Some(p) = self
            .queue
            .iter_mut()
            .find(|p| matches!(p, Pending::Waiting { .. }))
        {
            if let Pending::Waiting { pulls, .. } = p {
                for ts in pulls.iter() {
                    self.asked.remove(ts);
                }
            }
            *p = Pending::Ready(RoundValues::brk());
            self.stats.overflowed += 1;
        }
    }

    /// Whether any update waits to be taken (its answers, or its turn).
    pub fn queued(&self) -> bool {
        !self.queue.is_empty()
    }

    /// Whether a read-back pull is waiting for its answer (when none is,
    /// [`on_app_send`](Self::on_app_send) has nothing to look for).
    pub fn waiting(&self) -> bool {
        !self.asked.is_empty()
    }

    /// A message the app sends, seen on `route` (a DEALER for dmlc and
    /// MXNet servers, the ROUTER for BytePS's): `true` when it is the answer
    /// to a read-back pull, taken (the caller must not send it on).
    pub fn on_app_send(&mut self, route: Route, frames: &[&[u8]], format: Format) -> bool {
        if self.asked.is_empty() {
            return false;
        }
        let Ok(env) = Message::parse_frames(format, route, frames) else {
            return false;
        };
        let m = &env.message.meta;
        if m.request || m.push || !m.is_data() {
            return false;
        }
        let Some(id) = self.asked.remove(&m.timestamp) else {
            return false;
        };
        self.stats.answers += 1;
        let Some(index) = id.checked_sub(self.front).map(|i| i as usize) else {
            return true;
        };
        let kv = env.message.kv().ok().flatten();
        let lens = kv.as_ref().is_some_and(|kv| kv.has_lens());
        let entries: Option<Vec<(u64, Vec<u8>)>> = kv.and_then(|kv| {
            kv.answer_entries()
                .ok()
                .map(|e| e.map(|(k, b, _)| (k, b.to_vec())).collect())
        });
        let Some(Pending::Waiting { values, pulls }) = self.queue.get_mut(index) else {
            return true;
        };
        pulls.retain(|&ts| ts != m.timestamp);
        match entries {
            Some(e) if !e.is_empty() => {
                values.lens |= lens;
                values.entries.extend(e);
            }
            _ => {
                self.stats.bad_answers += 1;
                for ts in pulls.iter() {
                    self.asked.remove(ts);
                }
                self.queue[index] = Pending::Ready(RoundValues::brk());
                return true;
            }
        }
        if pulls.is_empty() {
            let mut v = std::mem::replace(values, RoundValues::brk());
            v.entries.sort_by_key(|e| e.0);
            self.queue[index] = Pending::Ready(v);
        }
        true
    }

    /// The updates ready to send, in order (an update waiting for the app
    /// holds back those after it).
    pub fn take_ready(&mut self) -> Vec<RoundValues> {
        let mut out = Vec::new();
        while matches!(self.queue.front(), Some(Pending::Ready(_))) {
            if let Some(Pending::Ready(v)) = self.queue.pop_front() {
                self.front += 1;
                self.stats.updates += 1;
                self.stats.breaks += u64::from(v.brk);
                out.push(v);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zebra_pslite::{response, Route};

    fn f32s(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    /// A worker's pull of `keys` as the server's ROUTER gives it.
    fn pull(format: Format, keys: &[u64], ts: i32) -> (Vec<u8>, Message) {
        let mut meta = Meta::new();
        meta.head = 0;
        meta.app_id = 0;
        meta.customer_id = 0;
        meta.timestamp = ts;
        meta.request = true;
        meta.push = false;
        meta.pull = true;
        meta.sender = 9;
        let kv = KvData {
            keys: keys.to_vec(),
            vals: Vec::new(),
            lens: None,
            val_type: DataType::Float,
        };
        let m = with_kv(&meta, &kv).unwrap();
        let frames = m.to_frames(format).unwrap();
        let refs: Vec<&[u8]> = frames[1..].iter().map(|f| &f[..]).collect();
        (
            b"ps9".to_vec(),
            Message::parse(format, &frames[0], &refs).unwrap(),
        )
    }

    /// The app's answer to `frames` (a pull as the ROUTER gave it), each
    /// key's values `[key as f32; 2]`, as its DEALER sends it.
    fn answer(format: Format, frames: &Frames) -> Vec<Vec<u8>> {
        let refs: Vec<&[u8]> = frames.iter().map(|f| &f[..]).collect();
        let req = Message::parse_frames(format, Route::RouterRecv, &refs).unwrap();
        let kv = req.message.kv().unwrap().unwrap();
        let mut out = KvData::empty(DataType::Float, false);
        for k in kv.keys() {
            out.push_entry(k, &f32s(&[k as f32, k as f32]));
        }
        response(&req.message.meta, Some(&out))
            .unwrap()
            .to_frames(format)
            .unwrap()
    }

    fn send(rb: &mut ReadBack, format: Format, frames: &[Vec<u8>]) -> bool {
        let refs: Vec<&[u8]> = frames.iter().map(|f| &f[..]).collect();
        rb.on_app_send(Route::DealerSend, &refs, format)
    }

    #[test]
    fn reads_a_round_back_with_a_pull_shaped_like_the_workers() {
        for format in [Format::Protobuf, Format::Byteps] {
            let mut rb = ReadBack::new();
            let (id, m) = pull(format, &[1, 2, 7], 3);
            rb.learn(&id, &m, format, |k| k < 5);
            let pulls = rb.after_round(4, Some(0), vec![2, 1, 2]);
            assert_eq!(pulls.len(), 1);
            assert_eq!(pulls[0][0], b"ps9");
            assert!(rb.take_ready().is_empty(), "waits for the answer");
            // A worker's own answer passes.
            let (_, own) = pull(format, &[1], 3);
            let own_frames = response(&own.meta, None)
                .unwrap()
                .to_frames(format)
                .unwrap();
            assert!(!send(&mut rb, format, &own_frames));
            assert!(send(&mut rb, format, &answer(format, &pulls[0])));
            assert_eq!(
                rb.take_ready(),
                vec![RoundValues {
                    round: 4,
                    brk: false,
                    lens: false,
                    entries: vec![(1, f32s(&[1.0, 1.0])), (2, f32s(&[2.0, 2.0]))],
                }]
            );
            assert!(!rb.waiting());
        }
    }

    #[test]
    fn single_key_pullers_get_one_pull_per_key_and_a_break_without_a_template() {
        let format = Format::Protobuf;
        let mut rb = ReadBack::new();
        for k in [1, 2] {
            let (id, m) = pull(format, &[k], 0);
            rb.learn(&id, &m, format, |_| true);
        }
        let pulls = rb.after_round(1, Some(0), vec![1, 2]);
        assert_eq!(pulls.len(), 2);
        assert!(send(&mut rb, format, &answer(format, &pulls[1])));
        assert!(rb.take_ready().is_empty());
        assert!(send(&mut rb, format, &answer(format, &pulls[0])));
        let ready = rb.take_ready();
        assert_eq!(ready[0].entries.len(), 2);
        assert!(rb.after_round(2, Some(0), vec![1, 3]).is_empty());
        assert!(rb.take_ready()[0].brk, "key 3 has no template");
    }

    #[test]
    fn a_round_of_another_command_or_of_mixed_commands_is_a_break() {
        let format = Format::Protobuf;
        let mut rb = ReadBack::new();
        let (id, m) = pull(format, &[1, 2], 0);
        rb.learn(&id, &m, format, |_| true);
        assert!(rb.after_round(1, Some(7), vec![1]).is_empty());
        assert!(rb.after_round(2, None, vec![1]).is_empty());
        let ready = rb.take_ready();
        assert!(ready.len() == 2 && ready.iter().all(|v| v.brk));
        assert_eq!(rb.stats().untemplated, 2);
    }

    #[test]
    fn updates_leave_in_round_order_and_empty_rounds_need_no_pull() {
        let format = Format::Protobuf;
        let mut rb = ReadBack::new();
        let (id, m) = pull(format, &[1, 2], 0);
        rb.learn(&id, &m, format, |_| true);
        let p1 = rb.after_round(1, Some(0), vec![1]);
        assert!(rb.after_round(2, Some(0), Vec::new()).is_empty());
        assert!(rb.take_ready().is_empty(), "round 2 waits behind round 1");
        assert!(send(&mut rb, format, &answer(format, &p1[0])));
        let rounds: Vec<u32> = rb.take_ready().iter().map(|v| v.round).collect();
        assert_eq!(rounds, vec![1, 2]);
    }

    #[test]
    fn an_app_that_never_answers_costs_a_break_not_memory() {
        let format = Format::Protobuf;
        let mut rb = ReadBack::new();
        let (id, m) = pull(format, &[1, 2], 0);
        rb.learn(&id, &m, format, |_| true);
        for r in 1..=(MAX_WAITING as u32 + 1) {
            rb.after_round(r, Some(0), vec![1]);
        }
        let ready = rb.take_ready();
        assert_eq!(ready.len(), 1);
        assert!(ready[0].brk);
        assert_eq!(rb.stats().overflowed, 1);
    }

    #[test]
    fn a_bad_answer_breaks_the_chain() {
        let format = Format::Protobuf;
        let mut rb = ReadBack::new();
        let (id, m) = pull(format, &[1, 2], 0);
        rb.learn(&id, &m, format, |_| true);
        let p = rb.after_round(1, Some(0), vec![1, 2]);
        let refs: Vec<&[u8]> = p[0].iter().map(|f| &f[..]).collect();
        let req = Message::parse_frames(format, Route::RouterRecv, &refs).unwrap();
        let empty = response(&req.message.meta, None)
            .unwrap()
            .to_frames(format)
            .unwrap();
        assert!(send(&mut rb, format, &empty));
        assert!(rb.take_ready()[0].brk);
        assert_eq!(rb.stats().bad_answers, 1);
    }
}
