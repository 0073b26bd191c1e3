//! Messages of 64 MiB and more, moved in pieces as a transport would.

mod common;

use bytes::Bytes;
use common::{connected, events};
use zebra_zmtp::{Connection, Event, SocketType};

/// A body whose every 4 KiB block is tagged with its index, so a misplaced
/// or lost piece cannot go unnoticed.
fn tagged(len: usize, salt: u8) -> Bytes {
    let mut v = vec![salt; len];
    for (i, block) in v.chunks_mut(4096).enumerate() {
        let tag = (i as u64).to_le_bytes();
        let n = tag.len().min(block.len());
        block[..n].copy_from_slice(&tag[..n]);
    }
    Bytes::from(v)
}

/// Moves all of `from`'s output into `to` in reads of `read` bytes,
/// checking that large bodies leave `from` without being copied.
fn transfer(from: &mut Connection, to: &mut Connection, read: usize, shared: &[&Bytes]) {
    let mut seen = vec![false; shared.len()];
    while let Some(chunk) = from.poll_output() {
        for (i, b) in shared.iter().enumerate() {
            if chunk.as_ptr() == b.as_ptr() && chunk.len() == b.len() {
                seen[i] = true;
            }
        }
        for piece in chunk.chunks(read) {
            to.handle_input(piece).unwrap();
        }
    }
    assert!(
        seen.iter().all(|&s| s),
        "large bodies must be queued by reference"
    );
}

#[test]
fn sixty_four_mib_message_in_pieces() {
    let (mut a, mut b) = connected(SocketType::Dealer, SocketType::Router);
    let big = tagged((64 << 20) + 1, 0xA5);
    let parts = vec![
        Bytes::from_static(b"meta"),
        big.clone(),
        Bytes::from_static(b"tail"),
    ];
    a.send_message(parts.clone()).unwrap();
    assert_eq!(a.pending_output(), 2 + 4 + 9 + big.len() + 2 + 4);
    transfer(&mut a, &mut b, (1 << 20) + 7, &[&big]);
    assert_eq!(a.pending_output(), 0);
    let ev = events(&mut b);
    assert_eq!(ev.len(), 1);
    assert!(ev[0] == Event::Message(parts), "64 MiB message corrupted");
}

#[test]
fn several_large_parts_and_small_reads() {
    let (mut a, mut b) = connected(SocketType::Router, SocketType::Router);
    let p1 = tagged(24 << 20, 1);
    let p2 = tagged((24 << 20) + 4095, 2);
    let p3 = tagged(20 << 20, 3);
    let parts = vec![p1.clone(), Bytes::new(), p2.clone(), p3.clone()];
    a.send_message(parts.clone()).unwrap();
    transfer(&mut a, &mut b, 65_536, &[&p1, &p2, &p3]);
    let ev = events(&mut b);
    assert_eq!(ev.len(), 1);
    assert!(ev[0] == Event::Message(parts), "large multipart corrupted");
}

#[test]
fn large_message_at_the_size_limit() {
    let n = 16 << 20;
    let mut a =
        Connection::new(zebra_zmtp::Config::new(SocketType::Pair).with_zmq_maxmsgsize(n as i64))
            .unwrap();
    let mut b = common::conn(SocketType::Pair, b"");
    common::pump(&mut a, &mut b).unwrap();
    events(&mut a);
    let body = tagged(n, 9);
    b.send_message([body.clone()]).unwrap();
    transfer(&mut b, &mut a, 1 << 20, &[&body]);
    assert!(events(&mut a) == vec![Event::Message(vec![body])]);
    b.send_message([tagged(n + 1, 9)]).unwrap();
    let first = b.poll_output().unwrap();
    assert_eq!(
        a.handle_input(&first),
        Err(zebra_zmtp::Error::FrameTooLarge {
            size: n as u64 + 1,
            limit: n as u64
        })
    );
}
