//! What the hot/cold splitter needs: split a push by key, rebuild a valid
//! message around any KV data, synthesise a push, answer a request.

use crate::error::{Error, Result};
use crate::format::Format;
use crate::kv::{KvData, KvView};
use crate::message::Message;
use crate::meta::{Control, Meta};

/// The two parts of a push request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushSplit {
    /// The hot keys with their values (and lens if the push had lens), in
    /// the push's order.
    pub hot: KvData,
    /// The push with only the cold keys: a valid message for the server.
    /// It has no data frames when every key is hot (PS-lite itself never
    /// sends such a push).
    pub cold: Message,
}

/// Splits KV data by a predicate on keys (true: hot), keeping order, lens
/// and the value type in both parts. Fails if the values do not divide
/// among the keys ([`KvView::check_values`]).
pub fn split_kv(
    view: &KvView<'_>,
    mut is_hot: impl FnMut(u64) -> bool,
) -> Result<(KvData, KvData)> {
    let mut hot = KvData::empty(view.val_type(), view.has_lens());
    let mut cold = hot.clone();
    for (key, vals, len) in view.entries()? {
        let part = if is_hot(key) { &mut hot } else { &mut cold };
        part.keys.push(key);
        part.vals.extend_from_slice(vals);
        if let (Some(lens), Some(len)) = (&mut part.lens, len) {
            lens.push(len);
        }
    }
    Ok((hot, cold))
}

fn set_data_size(meta: &mut Meta, size: usize) -> Result<()> {
    if meta.format() != Some(Format::Protobuf) || meta.carries_data_size() {
        meta.data_size = i32::try_from(size).map_err(|_| Error::TooLarge {
            field: "data_size",
            value: size as u64,
        })?;
    }
    Ok(())
}

/// A message with `meta`'s fields and `kv` as its data: data types and
/// `data_size` (where the format carries it) follow the data, and for a
/// push request `val_len` is the number of values, as `KVWorker::Send`
/// sets it. Empty KV data gives no data frames, as PS-lite sends.
pub fn with_kv(meta: &Meta, kv: &KvData) -> Result<Message> {
    let mut meta = meta.clone();
    let data = if kv.is_empty() && kv.vals.is_empty() {
        Vec::new()
    } else {
        kv.frames()
    };
    meta.data_types = if data.is_empty() {
        Vec::new()
    } else {
        kv.data_types()
    };
    set_data_size(&mut meta, data.iter().map(Vec::len).sum())?;
    if meta.request && meta.push {
        meta.val_len = i32::try_from(kv.num_vals()).map_err(|_| Error::TooLarge {
            field: "val_len",
            value: kv.num_vals() as u64,
        })?;
    }
    Ok(Message { meta, data })
}

impl Message {
    /// Splits a push request into its hot KV data and a cold push for the
    /// server.
    pub fn split_push(&self, is_hot: impl FnMut(u64) -> bool) -> Result<PushSplit> {
        if !self.meta.is_push_request() {
            return Err(Error::NotPushRequest);
        }
        let Some(view) = self.kv()? else {
            return Ok(PushSplit {
                hot: KvData::empty(crate::DataType::Other, false),
                cold: self.clone(),
            });
        };
        let (hot, cold) = split_kv(&view, is_hot)?;
        Ok(PushSplit {
            hot,
            cold: with_kv(&self.meta, &cold)?,
        })
    }
}

/// A push request as worker `sender` would have sent it at `timestamp`,
/// carrying `kv`, built from `template` (a push from that job: app,
/// customer, head, and the wire residue of its format).
pub fn synthesize_push(
    template: &Meta,
    sender: i32,
    timestamp: i32,
    kv: &KvData,
) -> Result<Message> {
    let mut meta = template.clone();
    meta.request = true;
    meta.push = true;
    meta.pull = false;
    meta.simple_app = false;
    meta.control = Control::default();
    meta.body.clear();
    meta.sender = sender;
    meta.timestamp = timestamp;
    with_kv(&meta, kv)
}

/// The meta of the response to a request, as `KVServer::Response` builds
/// it: same app, customer, head, timestamp, push and pull; `key`, `addr`,
/// `val_len` and `option` echoed (BytePS); no data; sent back to the
/// request's sender.
pub fn response_meta(request: &Meta) -> Meta {
    let mut meta = request.clone();
    meta.request = false;
    meta.simple_app = false;
    meta.priority = 0;
    meta.sender = request.recver;
    meta.recver = request.sender;
    meta.body.clear();
    meta.control = Control::default();
    meta.data_types.clear();
    meta.data_size = 0;
    meta
}

/// The response to a request, with `kv` as data if given (a pull).
pub fn response(request: &Meta, kv: Option<&KvData>) -> Result<Message> {
    let meta = response_meta(request);
    match kv {
        Some(kv) => with_kv(&meta, kv),
        None => Ok(Message {
            meta,
            data: Vec::new(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DataType;

    fn push(format: Format, kv: &KvData) -> Message {
        let mut m = Meta::new();
        m.head = 0;
        m.app_id = 0;
        m.customer_id = 0;
        m.timestamp = 4;
        m.request = true;
        m.push = true;
        let msg = with_kv(&m, kv).unwrap();
        let frames = msg.to_frames(format).unwrap();
        let refs: Vec<&[u8]> = frames[1..].iter().map(|f| &f[..]).collect();
        Message::parse(format, &frames[0], &refs).unwrap()
    }

    fn kv(keys: &[u64], lens: Option<&[i32]>) -> KvData {
        let n: i32 = lens.map_or(keys.len() as i32 * 2, |l| l.iter().sum());
        KvData {
            keys: keys.to_vec(),
            vals: (0..n).flat_map(|i| (i as f32).to_le_bytes()).collect(),
            lens: lens.map(|l| l.to_vec()),
            val_type: DataType::Float,
        }
    }

    #[test]
    fn split_keeps_order_and_lens() {
        for format in [Format::Byteps, Format::Protobuf] {
            let m = push(format, &kv(&[1, 2, 3, 4], Some(&[1, 0, 2, 3])));
            let s = m.split_push(|k| k % 2 == 0).unwrap();
            assert_eq!(s.hot.keys, [2, 4]);
            assert_eq!(s.hot.lens, Some(vec![0, 3]));
            assert_eq!(s.hot.vals.len(), 12);
            let cold = s.cold.kv().unwrap().unwrap().to_owned();
            assert_eq!(cold.keys, [1, 3]);
            assert_eq!(cold.lens, Some(vec![1, 2]));
            assert_eq!(&cold.vals[..4], &0f32.to_le_bytes());
            assert_eq!(&cold.vals[4..8], &1f32.to_le_bytes());
            let frames = s.cold.to_frames(format).unwrap();
            let refs: Vec<&[u8]> = frames[1..].iter().map(|f| &f[..]).collect();
            let back = Message::parse(format, &frames[0], &refs).unwrap();
            assert_eq!(back.meta.data_types.len(), 3);
            assert_eq!(back.meta.data_size, 16 + 12 + 8);
            if format == Format::Byteps {
                assert_eq!(back.meta.val_len, 3);
            }
        }
    }

    #[test]
    fn protobuf_without_data_size_stays_without() {
        let data = kv(&[1, 2], None);
        let mut meta = push(Format::Protobuf, &data).meta;
        meta.extra = crate::meta::MetaExtra::Fresh;
        meta.data_size = 0;
        let bytes = Format::Protobuf.emit(&meta).unwrap();
        let frames = data.frames();
        let refs: Vec<&[u8]> = frames.iter().map(|f| &f[..]).collect();
        let m = Message::parse(Format::Protobuf, &bytes, &refs).unwrap();
        assert!(!m.meta.carries_data_size());
        let s = m.split_push(|k| k == 1).unwrap();
        assert_eq!(s.cold.meta.data_size, 0);
        assert_eq!(Format::Protobuf.emit(&s.cold.meta).unwrap(), bytes);
    }

    #[test]
    fn all_hot_leaves_an_empty_cold_push() {
        let m = push(Format::Byteps, &kv(&[5, 6], None));
        let s = m.split_push(|_| true).unwrap();
        assert_eq!(s.hot.keys, [5, 6]);
        assert!(s.hot.lens.is_none());
        assert!(s.cold.data.is_empty());
        assert!(s.cold.meta.data_types.is_empty());
        assert_eq!(s.cold.meta.data_size, 0);
        assert_eq!(s.cold.meta.val_len, 0);
    }

    #[test]
    fn only_push_requests_split() {
        let m = push(Format::Byteps, &kv(&[5], None));
        let r = response(&m.meta, None).unwrap();
        assert_eq!(r.split_push(|_| true), Err(Error::NotPushRequest));
    }

    #[test]
    fn synthesized_and_zeroed() {
        let m = push(Format::Protobuf, &kv(&[7, 9], None));
        let agg = kv(&[7, 9], None);
        let s = synthesize_push(&m.meta, 11, 5, &agg.zeroed()).unwrap();
        assert_eq!((s.meta.sender, s.meta.timestamp), (11, 5));
        let got = s.kv().unwrap().unwrap().to_owned();
        assert_eq!(got.keys, [7, 9]);
        assert!(got.vals.iter().all(|&b| b == 0));
    }
}
