//! A job's membership token from its secret key (`docs/SECURITY.md`).
//!
//! Every member of a job with a key (`ZEBRA_JOB_KEY`, `ZEBRA_JOB_KEY_FILE`)
//! and the switch derive the job's token the same way, so the members show
//! it from their first datagram and the switch pins only those that do. The
//! derivation is a MAC (HMAC-SHA-256) of the job id under the key: the token
//! of one job tells nothing about the key or the token of another job, and
//! the key itself never goes on the wire. The P4 controller does not take a
//! key yet (`docs/SECURITY.md`, "Not done yet"); when it does, it should call
//! this derivation rather than write it again.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// What the MAC covers before the job id: names the purpose and version, so
/// the same key used elsewhere yields unrelated values.
const CONTEXT: &[u8] = b"zebra job token v1\0";

/// The token of job `job` under `key`: the first 32 bits (big-endian) of
/// HMAC-SHA-256(key, CONTEXT || job as 2 bytes big-endian), 1 if those are
/// 0 (0 means "no token" on the wire). `key` may be any length, even empty
/// (the configuration refuses an empty one).
pub fn job_token(key: &[u8], job: u16) -> u32 {
    let mac = mac(key, &[CONTEXT, &job.to_be_bytes()]);
    let token = u32::from_be_bytes([mac[0], mac[1], mac[2], mac[3]]);
    token.max(1)
}

fn mac(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    // HMAC takes a key of any length: this cannot fail.
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key).unwrap_or_else(|_| unreachable!());
    for p in parts {
        m.update(p);
    }
    m.finalize().into_bytes().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mac_is_hmac_sha256() {
        // RFC 4231, test case 2.
        let want = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
        let got: String = mac(b"Jefe", &[b"what do ya want ", b"for nothing?"])
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn tokens_depend_on_key_and_job_and_match_the_controller() {
        // A fixed vector: a change of the derivation breaks every deployed key.
        assert_eq!(job_token(b"correct horse battery staple", 7), 0x22ea_1e03);
        let a = job_token(b"k1", 1);
        assert_ne!(a, 0);
        assert_eq!(a, job_token(b"k1", 1));
        assert_ne!(a, job_token(b"k1", 2));
        assert_ne!(a, job_token(b"k2", 1));
    }
}
