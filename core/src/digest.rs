//! Request digests: a hash of the exact frozen body, stored at freeze and checked before
//! every resend. It detects corruption and bugs, not adversaries, so FNV-1a is enough.

/// The digest of a frozen body, as stored in the ledger (`fnv1a64:<16 hex digits>`).
pub fn body_digest(body: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in body.as_bytes() {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("fnv1a64:{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn d5_digest_is_stable_and_sensitive() {
        assert_eq!(body_digest(""), "fnv1a64:cbf29ce484222325");
        assert_eq!(body_digest("a"), "fnv1a64:af63dc4c8601ec8c");
        assert_ne!(body_digest("{\"a\":1}"), body_digest("{\"a\":2}"));
    }
}
