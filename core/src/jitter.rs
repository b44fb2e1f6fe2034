//! Jitter that the simulation can replay: a number drawn from the request id and the attempt,
//! not from a random source. Request ids are random (UUIDs), so two requests, two tabs or two
//! users draw different numbers and do not retry in lockstep, while one run of the core under
//! the virtual clock makes the same decisions every time.

/// The scale of [`draw`]: a draw is in `0..SCALE`.
pub(crate) const SCALE: u64 = 1_024;

/// A number in `0..SCALE` for this attempt of this request (FNV-1a over the id and the attempt,
/// finished with SplitMix64's mix so that neighbouring attempts draw unrelated numbers).
pub(crate) fn draw(request_id: &str, attempt: u32) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in request_id.bytes().chain(attempt.to_le_bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash = (hash ^ (hash >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash = (hash ^ (hash >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (hash ^ (hash >> 31)) % SCALE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_reproducible_and_spread() {
        assert_eq!(
            draw("r1", 3),
            draw("r1", 3),
            "the same attempt draws the same"
        );
        let draws: Vec<u64> = (0..1_000).map(|n| draw(&format!("req-{n}"), 1)).collect();
        assert!(draws.iter().all(|d| *d < SCALE));
        // Spread over the range: each quarter holds a fair share of 1 000 draws.
        for quarter in 0..4 {
            let low = quarter * SCALE / 4;
            let count = draws
                .iter()
                .filter(|d| (low..low + SCALE / 4).contains(*d))
                .count();
            assert!((180..=320).contains(&count), "quarter {quarter}: {count}");
        }
        let attempts: Vec<u64> = (0..64).map(|a| draw("one", a)).collect();
        let mut distinct = attempts.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert!(
            distinct.len() > 48,
            "attempts of one request differ: {attempts:?}"
        );
    }
}
