//! What a hooked socket keeps for the app: whole messages, read part by part.

use std::collections::VecDeque;

use bytes::Bytes;
use zebra_engine::consts::ZMQ_POLLIN;
use zebra_engine::Part;

/// Parts waiting for the app, and MORE of the last one it took.
#[derive(Debug, Default)]
pub(crate) struct AppParts {
    parts: VecDeque<Part>,
    pub(crate) more: bool,
}

impl AppParts {
    pub(crate) fn push(&mut self, part: Part) {
        self.parts.push_back(part);
    }

    /// The next part for the app.
    pub(crate) fn pop(&mut self) -> Option<Part> {
        let p = self.parts.pop_front()?;
        self.more = p.more;
        Some(p)
    }

    /// `ZMQ_POLLIN` when a part waits.
    pub(crate) fn events(&self) -> i32 {
        if self.parts.is_empty() {
            0
        } else {
            ZMQ_POLLIN
        }
    }
}

/// Appends a whole message's parts to what the app reads.
pub(crate) fn keep_message(kept: &mut AppParts, frames: Vec<Vec<u8>>) {
    let n = frames.len();
    for (i, f) in frames.into_iter().enumerate() {
        kept.push(Part {
            data: Bytes::from(f),
            more: i + 1 < n,
        });
    }
}
