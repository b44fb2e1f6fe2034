//! Retention (docs/guarantees.md, "Retention and known()"): how long settled operations stay whole,
//! and the tombstones that stay once they are compacted.
//!
//! A settled operation leaves the ledger's working stores as soon as it may (an
//! open reads no settled history): it is *compacted* in the batch that records its settlement
//! or within about a second of it — its operation record (or page copy), its request once
//! every operation of that request is compacted, and its blob are deleted, and a
//! [`Tombstone`] is written in their place. It stays *whole* in the archive (the `settled`
//! store, keyed by its tombstone's key, read only by a look-up such as `known(ids)`) while it
//! is both among the newest `settled` settled operations and younger than `settled_ms`; the
//! archive is trimmed by key ranges ([`TombstoneTrim`]). What stays in the ledger past its
//! settlement: an operation an unsettled one depends on (or whose replacement chain is
//! unsettled), the one holding the highest sequence, and one whose page still holds current
//! copies of others while work goes on. Tombstones are bounded too: at most `tombstones` of
//! them, none older than `tombstone_ms`; past that they are deleted and the id is forgotten.
//!
//! The ledger ([`crate::ledger::Ledger`]) picks what to compact in slices of at most
//! [`SLICE_LIMIT`] operations: in a batch of its own while the scheduler is quiet, and with a
//! busy batch at most every `BUSY_SLICE_MS` while work goes on (the scheduler decides when);
//! the store only executes the batch. Tombstone keys grow with time ([`tombstone_key`]), so deleting
//! every tombstone older than a time is one key-range delete.

use super::digest::body_digest;
use super::intent::{into_intent, IntentInput};
use super::model::{Intent, Millis, Operation, Settlement};

/// Most operations compacted in one slice (one transaction).
pub const SLICE_LIMIT: usize = 256;

/// Most settled operations a slice examines (those that may not go yet included), so a slice
/// costs a bounded window of the settled queue however long it is.
pub const SCAN_LIMIT: usize = 4 * SLICE_LIMIT;

/// Most operations a slice rewrites into new pages: the other current copies of the pages it
/// deletes (a page holds at most 256, so one page always fits).
pub const REWRITE_LIMIT: usize = 512;

/// The archive is trimmed (by count and age) once this many operations were archived since
/// the last trim, and with every tombstone trim.
pub const ARCHIVE_TRIM_EVERY: usize = 64;

/// Tombstone keys per millisecond: a key is `time · KEYS_PER_MS`, raised past the last key.
pub const KEYS_PER_MS: u64 = 1024;

/// Most tombstones kept in memory (compacted in this session or looked up); the rest are
/// looked up in storage by id.
pub const MEMORY_LIMIT: usize = 4096;

/// Most rounds of [`unknown_ids`](crate::Scheduler::unknown_ids) a driver looks up
/// before an enqueue: each round may name the next link of a compacted replacement chain (a
/// superseded operation's tombstone names the end of its chain as it was compacted, so one
/// or two rounds are the rule).
pub const LOOKUP_ROUNDS: usize = 4;

/// The retention policy (the `retain` option; a member left out keeps its default).
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(default)]
pub struct RetentionPolicy {
    /// Settled operations kept whole at most (the newest).
    #[serde(rename = "settled")]
    pub settled: usize,
    /// Age (since settlement) past which a settled operation is compacted.
    #[serde(rename = "settledMs")]
    pub settled_ms: Millis,
    /// Tombstones kept at most (the newest).
    #[serde(rename = "tombstones")]
    pub tombstones: usize,
    /// Age (since compaction) past which a tombstone is deleted.
    #[serde(rename = "tombstoneMs")]
    pub tombstone_ms: Millis,
}

/// One day.
const DAY_MS: Millis = 86_400_000;

impl Default for RetentionPolicy {
    fn default() -> Self {
        Self {
            settled: 1_000,
            settled_ms: DAY_MS,
            tombstones: 100_000,
            tombstone_ms: 30 * DAY_MS,
        }
    }
}

impl RetentionPolicy {
    /// Whether a settled operation is compacted as it settles (nothing is kept whole).
    pub fn keeps_nothing(&self) -> bool {
        self.settled == 0 || self.settled_ms == 0
    }
}

/// What stays of a compacted operation.
#[derive(serde::Serialize, serde::Deserialize, Clone, Debug, Default, PartialEq)]
pub struct Tombstone {
    /// Its key in the tombstone store (see [`tombstone_key`]).
    #[serde(rename = "key")]
    pub key: u64,
    /// The operation id.
    #[serde(rename = "id")]
    pub id: String,
    /// The principal the operation was recorded under, as the operation had it.
    #[serde(rename = "principal", default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// [`intent_digest`] of its intent.
    #[serde(rename = "digest")]
    pub digest: String,
    /// Its sequence.
    #[serde(rename = "sequence")]
    pub sequence: u64,
    /// How it settled.
    #[serde(rename = "outcome")]
    pub settlement: Settlement,
    /// When it settled.
    #[serde(rename = "settledAt")]
    pub settled_at: Millis,
    /// For an operation a coalesced intent superseded: the operation that replaced it, as its
    /// outcome named it (`known(ids)` answers it). A dependency on it is that operation's (it
    /// never reached the server), so its `discarded` is not the host's discard. Earlier
    /// builds wrote the end of the replacement chain here, with no `chainEnd`.
    #[serde(
        rename = "replacedBy",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub replaced_by: Option<String>,
    /// The end of its replacement chain when it was compacted, when that is not `replaced_by`
    /// itself: a dependency follows it in one step, where a drag's chain is as long as the drag
    /// and each link compacted is a look-up.
    #[serde(rename = "chainEnd", default, skip_serializing_if = "Option::is_none")]
    pub chain_end: Option<String>,
    /// The operation whole, while the archive keeps it (the newest `settled` settled
    /// operations younger than `settled_ms`): written to the `settled` store under `key` by
    /// the batch that compacts it, read back by a look-up. Not part of the tombstone's record.
    #[serde(skip)]
    pub whole: Option<Box<Operation>>,
}

impl Tombstone {
    /// The tombstone of a settled operation, under `key`; `None` when it is not settled.
    pub fn of(op: &Operation, key: u64) -> Option<Self> {
        let outcome = op.outcome.as_ref()?;
        Some(Self {
            key,
            id: op.intent.id.clone(),
            principal: op.intent.principal.clone(),
            digest: op
                .given_digest
                .clone()
                .unwrap_or_else(|| intent_digest(&op.intent)),
            sequence: op.intent.sequence,
            settlement: outcome.settlement,
            settled_at: outcome.at,
            replaced_by: None,
            chain_end: None,
            whole: None,
        })
    }

    /// Where a dependency on it goes next: the end of its replacement chain as compacted, or
    /// the operation that replaced it (`None`: it was not replaced).
    pub fn chain_end(&self) -> Option<&str> {
        self.chain_end.as_deref().or(self.replaced_by.as_deref())
    }

    /// Whether `input` is the same intent again: compared as
    /// [`same_intent`](crate::intent::same_intent) compares it with a stored one.
    pub fn matches(&self, input: &IntentInput) -> bool {
        matches_digest(input, &self.digest, self.sequence)
    }
}

/// Whether `input` is the intent whose [`intent_digest`] is `digest`, stored at `sequence`.
pub fn matches_digest(input: &IntentInput, digest: &str, sequence: u64) -> bool {
    input_digest(input) == digest && input.sequence.is_none_or(|s| s == sequence)
}

/// The digest of what [`same_intent`](crate::intent::same_intent) compares: the
/// intent's JSON without id, sequence, revision and principal.
pub fn intent_digest(intent: &Intent) -> String {
    let mut bare = intent.clone();
    bare.id = String::new();
    bare.sequence = 0;
    bare.revision = 0;
    bare.principal = None;
    body_digest(&serde_json::to_string(&bare).unwrap_or_default())
}

/// [`intent_digest`] of an input as it would be stored.
pub fn input_digest(input: &IntentInput) -> String {
    intent_digest(&into_intent(input.clone(), 0, None))
}

/// The key of a tombstone written at `now` after one keyed `last`: above `last`, and at least
/// `now · KEYS_PER_MS`, so a key range by time is a range of keys.
pub fn tombstone_key(now: Millis, last: u64) -> u64 {
    now.saturating_mul(KEYS_PER_MS).max(last.saturating_add(1))
}

/// Tombstone deletions a batch asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TombstoneTrim {
    /// Delete every tombstone keyed below this (older than the age limit).
    pub below: u64,
    /// Then keep at most this many, the highest keys.
    pub keep: usize,
}

impl TombstoneTrim {
    /// The trim `policy` asks for at `now`.
    pub fn at(now: Millis, policy: &RetentionPolicy) -> Self {
        Self {
            below: now
                .saturating_sub(policy.tombstone_ms)
                .saturating_mul(KEYS_PER_MS),
            keep: policy.tombstones,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_ignores_id_sequence_and_principal_and_sees_content() {
        let op = crate::test_support::pending_upsert("a", 7, "c");
        let mut other = op.intent.clone();
        other.id = "b".into();
        other.sequence = 9;
        other.principal = Some("p".into());
        assert_eq!(intent_digest(&op.intent), intent_digest(&other));
        other.canvas_ids.push("d".into());
        assert_ne!(intent_digest(&op.intent), intent_digest(&other));
    }

    #[test]
    fn keys_grow_with_time_and_never_repeat() {
        assert_eq!(tombstone_key(10, 0), 10 * KEYS_PER_MS);
        assert_eq!(tombstone_key(10, 10 * KEYS_PER_MS), 10 * KEYS_PER_MS + 1);
        assert_eq!(tombstone_key(5, 10 * KEYS_PER_MS), 10 * KEYS_PER_MS + 1);
        let trim = TombstoneTrim::at(
            100,
            &RetentionPolicy {
                tombstone_ms: 40,
                ..RetentionPolicy::default()
            },
        );
        assert_eq!(trim.below, 60 * KEYS_PER_MS);
    }
}
