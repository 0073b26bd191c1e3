//! Whole PS-lite messages as ZeroMQ multipart messages: identity frames
//! (depending on the socket and direction), the meta frame, data frames.
//!
//! PS-lite's ZMQ van (`src/zmq_van.h`) names nodes by ZeroMQ identity
//! `"ps" + id` (`GetNodeID`); node ids are 1 for the scheduler, `8 + 2r`
//! for server rank `r` and `9 + 2r` for worker rank `r`
//! (`Postoffice::ServerRankToID`, `WorkerRankToID`). Neither meta format
//! carries sender or receiver.

use crate::error::{Error, Result};
use crate::format::{Detector, Format};
use crate::kv::KvView;
use crate::meta::{Meta, Role, EMPTY};

/// The scheduler's node id.
pub const SCHEDULER_ID: i32 = 1;

/// Node id of server rank `rank`.
pub const fn server_id(rank: i32) -> i32 {
    8 + 2 * rank
}

/// Node id of worker rank `rank`.
pub const fn worker_id(rank: i32) -> i32 {
    9 + 2 * rank
}

/// The role a node id belongs to (`GetRoleFromId`): below 8 the scheduler
/// (and group ids), then even servers and odd workers.
pub fn role_of(id: i32) -> Role {
    if id < 8 {
        Role::Scheduler
    } else if id % 2 == 1 {
        Role::Worker
    } else {
        Role::Server
    }
}

/// Rank of a server or worker id (`IDtoRank`).
pub fn rank_of(id: i32) -> i32 {
    ((id - 8) / 2).max(0)
}

/// The ZeroMQ identity PS-lite gives node `id`.
pub fn identity(id: i32) -> Vec<u8> {
    format!("ps{id}").into_bytes()
}

/// The node id in a ZeroMQ identity `ps<digits>`, like `GetNodeID` (which
/// also answers `kEmpty` for anything else).
pub fn node_id(identity: &[u8]) -> Option<i32> {
    let digits = identity.strip_prefix(b"ps")?;
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    core::str::from_utf8(digits).ok()?.parse().ok()
}

/// The rank of the server whose ZeroMQ identity this is (`None`: not a
/// server's).
fn server_rank(identity: &[u8]) -> Option<u16> {
    node_id(identity)
        .filter(|&id| role_of(id) == Role::Server)
        .and_then(|id| u16::try_from(rank_of(id)).ok())
}

/// A message a worker's DEALER received from a server (BytePS's
/// `[sender identity, meta, data...]`): the server's rank and the message,
/// its format learned by `detector`; `None` for anything else or a message
/// that does not parse.
pub fn server_answer(detector: &mut Detector, frames: &[Vec<u8>]) -> Option<(u16, Envelope)> {
    let server = server_rank(frames.first()?)?;
    let refs: Vec<&[u8]> = frames.iter().map(|f| &f[..]).collect();
    let (format, _) = detector.parse(refs.get(1)?).ok()?;
    let env = Message::parse_frames(format, Route::DealerRecv, &refs).ok()?;
    Some((server, env))
}

/// Where a multipart message is seen, which fixes the identity frames
/// before the meta.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Route {
    /// Sent by a DEALER (every node's per-peer sender socket):
    /// `[meta, data...]`.
    DealerSend,
    /// Received by a ROUTER (every node's receiver socket):
    /// `[sender identity, meta, data...]`.
    RouterRecv,
    /// BytePS only: a server or the scheduler answering a worker's data
    /// request through its ROUTER: `[worker identity, own identity, meta,
    /// data...]`.
    RouterSend,
    /// BytePS only: a worker's DEALER receiving that answer:
    /// `[sender identity, meta, data...]`.
    DealerRecv,
}

impl Route {
    /// Number of identity frames before the meta.
    pub const fn identity_frames(self) -> usize {
        match self {
            Route::DealerSend => 0,
            Route::RouterRecv | Route::DealerRecv => 1,
            Route::RouterSend => 2,
        }
    }
}

/// A parsed PS-lite message: meta and data frames.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The meta, with `sender`/`recver` set from identities where the
    /// route has them.
    pub meta: Meta,
    /// Data frames.
    pub data: Vec<Vec<u8>>,
}

/// A message with the identity frames it came with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// Identity frames, as many as the route has.
    pub identities: Vec<Vec<u8>>,
    /// The message.
    pub message: Message,
}

impl Message {
    /// Parses a meta frame and data frames, checking that there is one data
    /// frame per data type and, where the meta carries `data_size`, that it
    /// matches.
    pub fn parse(format: Format, meta: &[u8], data: &[&[u8]]) -> Result<Message> {
        let meta = format.parse(meta)?;
        Message::check_data(&meta, data)?;
        Ok(Message {
            meta,
            data: data.iter().map(|d| d.to_vec()).collect(),
        })
    }

    /// The checks of [`parse`](Self::parse) on a meta already parsed: one
    /// data frame per data type and, where the meta carries `data_size`,
    /// that it matches.
    pub fn check_data(meta: &Meta, data: &[&[u8]]) -> Result<()> {
        if data.len() != meta.data_types.len() {
            return Err(Error::FrameCountMismatch {
                frames: data.len(),
                types: meta.data_types.len(),
            });
        }
        let total: usize = data.iter().map(|d| d.len()).sum();
        if meta.carries_data_size() && i64::from(meta.data_size) != total as i64 {
            return Err(Error::DataSizeMismatch {
                meta: i64::from(meta.data_size),
                frames: total,
            });
        }
        Ok(())
    }

    /// Parses all frames of a multipart message seen on `route`, and sets
    /// `sender`/`recver` from the identities (`recver` is only known for
    /// [`Route::RouterSend`]).
    pub fn parse_frames(format: Format, route: Route, frames: &[&[u8]]) -> Result<Envelope> {
        let ids = route.identity_frames();
        if frames.len() <= ids {
            return Err(Error::MissingFrames {
                frames: frames.len(),
                needed: ids + 1,
            });
        }
        let mut message = Message::parse(format, frames[ids], &frames[ids + 1..])?;
        let id = |i: usize| node_id(frames[i]).unwrap_or(EMPTY);
        match route {
            Route::DealerSend => {}
            Route::RouterRecv | Route::DealerRecv => message.meta.sender = id(0),
            Route::RouterSend => {
                message.meta.recver = id(0);
                message.meta.sender = id(1);
            }
        }
        Ok(Envelope {
            identities: frames[..ids].iter().map(|f| f.to_vec()).collect(),
            message,
        })
    }

    /// The frames after the identities: meta, then data.
    pub fn to_frames(&self, format: Format) -> Result<Vec<Vec<u8>>> {
        let mut frames = Vec::with_capacity(1 + self.data.len());
        frames.push(format.emit(&self.meta)?);
        frames.extend(self.data.iter().cloned());
        Ok(frames)
    }

    /// The KV data, `None` for a data message without data frames (a push
    /// response, an empty request); [`Error::NotKv`] for control and
    /// SimpleApp messages.
    pub fn kv(&self) -> Result<Option<KvView<'_>>> {
        let refs: Vec<&[u8]> = self.data.iter().map(|d| &d[..]).collect();
        kv_of(&self.meta, &refs)
    }
}

/// The KV data of a message whose meta is parsed, read in place from its
/// data frames: what [`Message::parse`] then [`Message::kv`] give, without
/// copying the frames.
pub fn kv_in_place<'a>(meta: &Meta, data: &[&'a [u8]]) -> Result<Option<KvView<'a>>> {
    Message::check_data(meta, data)?;
    kv_of(meta, data)
}

fn kv_of<'a>(meta: &Meta, data: &[&'a [u8]]) -> Result<Option<KvView<'a>>> {
    if !meta.is_data() {
        return Err(Error::NotKv);
    }
    if data.is_empty() {
        return Ok(None);
    }
    KvView::parse(&meta.data_types, data).map(Some)
}

impl Envelope {
    /// All frames: identities, meta, data.
    pub fn to_frames(&self, format: Format) -> Result<Vec<Vec<u8>>> {
        let mut frames = self.identities.clone();
        frames.extend(self.message.to_frames(format)?);
        Ok(frames)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities() {
        assert_eq!(node_id(b"ps9"), Some(9));
        assert_eq!(node_id(b"ps11"), Some(11));
        assert_eq!(node_id(b"ps"), None);
        assert_eq!(node_id(b"ps1x"), None);
        assert_eq!(node_id(b"\0k\x8bEg"), None);
        assert_eq!(node_id(b"ps99999999999"), None);
        assert_eq!(identity(8), b"ps8");
        assert_eq!((server_id(0), worker_id(1)), (8, 11));
        assert_eq!(role_of(1), Role::Scheduler);
        assert_eq!(role_of(8), Role::Server);
        assert_eq!(role_of(11), Role::Worker);
        assert_eq!(rank_of(11), 1);
    }

    #[test]
    fn frame_checks() {
        let meta = Format::Byteps.emit(&Meta::new()).unwrap();
        assert_eq!(
            Message::parse_frames(Format::Byteps, Route::RouterSend, &[b"ps9", b"ps8"]),
            Err(Error::MissingFrames {
                frames: 2,
                needed: 3
            })
        );
        let e = Message::parse_frames(Format::Byteps, Route::RouterSend, &[b"ps9", b"ps8", &meta])
            .unwrap();
        assert_eq!((e.message.meta.sender, e.message.meta.recver), (8, 9));
        assert_eq!(
            Message::parse(Format::Byteps, &meta, &[b"x"]),
            Err(Error::FrameCountMismatch {
                frames: 1,
                types: 0
            })
        );
        let mut m = Meta::new();
        m.data_types = vec![crate::DataType::Char];
        m.data_size = 2;
        let meta = Format::Byteps.emit(&m).unwrap();
        assert_eq!(
            Message::parse(Format::Byteps, &meta, &[b"x"]),
            Err(Error::DataSizeMismatch { meta: 2, frames: 1 })
        );
    }
}
