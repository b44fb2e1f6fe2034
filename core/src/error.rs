//! Errors with stable string codes. Defined once here; the JS API maps them to `Error`s once.

use std::fmt;

/// Every failure the scheduler can report, each with a stable `code` string (docs/guide.md).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorCode {
    /// An intent failed validation (a field of the wrong type or shape).
    InvalidIntent,
    /// An intent reused the id of an operation already in the ledger or the same batch.
    DuplicateOperation,
    /// An intent depends on an operation that is neither in the ledger nor in the batch.
    UnknownDependency,
    /// The dependencies of a batch form a cycle.
    DependencyCycle,
    /// The payload is larger than the configured limit.
    PayloadTooLarge,
    /// `concurrency` was not an integer >= 1.
    InvalidConcurrency,
    /// An option given to the scheduler is out of range.
    InvalidOptions,
    /// The scheduler was stopped; it never starts again.
    SchedulerClosed,
    /// The ledger could not be read or written.
    StorageUnavailable,
    /// An explicit sequence was not greater than every sequence in the ledger.
    InvalidSequence,
    /// The operation id is not in the ledger.
    UnknownOperation,
    /// A host action does not apply to the operation in its current state.
    InvalidState,
    /// Two unresolved requests in the recovered ledger claim the same canvas.
    RecoveryClaimConflict,
    /// Another dispatcher holds a newer lease; this one must stop writing.
    LeaseLost,
    /// A record read from storage is corrupt or foreign.
    CorruptRecord,
    /// This instance does not hold the lease.
    NotLeader,
    /// The operation (or the dispatcher's work) belongs to another principal than the
    /// session that asked.
    OtherPrincipal,
    /// Another live tab of this ledger was opened with the same `owner`.
    OwnerInUse,
    /// The host's `coalesce` hook threw or returned what cannot be a payload: the two
    /// intents are both sent, unmerged (an `error` event, never an enqueue's error).
    CoalesceFailed,
}

impl ErrorCode {
    /// An adoption of an inbox entry refused with this code refuses the entry itself (it
    /// is quarantined); any other refusal (storage, a lost lease, a stopped scheduler) leaves
    /// the entry in the inbox for a later pass or the next leader.
    pub fn refuses_inbox_entry(&self) -> bool {
        matches!(
            self,
            ErrorCode::InvalidIntent
                | ErrorCode::DuplicateOperation
                | ErrorCode::UnknownDependency
                | ErrorCode::DependencyCycle
                | ErrorCode::PayloadTooLarge
                | ErrorCode::InvalidSequence
        )
    }

    /// Every code, for checks that each one is declared and documented.
    pub const ALL: [ErrorCode; 19] = [
        ErrorCode::InvalidIntent,
        ErrorCode::DuplicateOperation,
        ErrorCode::UnknownDependency,
        ErrorCode::DependencyCycle,
        ErrorCode::PayloadTooLarge,
        ErrorCode::InvalidConcurrency,
        ErrorCode::InvalidOptions,
        ErrorCode::SchedulerClosed,
        ErrorCode::StorageUnavailable,
        ErrorCode::InvalidSequence,
        ErrorCode::UnknownOperation,
        ErrorCode::InvalidState,
        ErrorCode::RecoveryClaimConflict,
        ErrorCode::LeaseLost,
        ErrorCode::CorruptRecord,
        ErrorCode::NotLeader,
        ErrorCode::OtherPrincipal,
        ErrorCode::OwnerInUse,
        ErrorCode::CoalesceFailed,
    ];

    /// The stable code string that reaches JS as `error.code`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ErrorCode::InvalidIntent => "invalid_intent",
            ErrorCode::DuplicateOperation => "duplicate_operation",
            ErrorCode::UnknownDependency => "unknown_dependency",
            ErrorCode::DependencyCycle => "dependency_cycle",
            ErrorCode::PayloadTooLarge => "payload_too_large",
            ErrorCode::InvalidConcurrency => "invalid_concurrency",
            ErrorCode::InvalidOptions => "invalid_options",
            ErrorCode::SchedulerClosed => "scheduler_closed",
            ErrorCode::StorageUnavailable => "storage_unavailable",
            ErrorCode::InvalidSequence => "invalid_sequence",
            ErrorCode::UnknownOperation => "unknown_operation",
            ErrorCode::InvalidState => "invalid_state",
            ErrorCode::RecoveryClaimConflict => "recovery_claim_conflict",
            ErrorCode::LeaseLost => "lease_lost",
            ErrorCode::CorruptRecord => "corrupt_record",
            ErrorCode::NotLeader => "not_leader",
            ErrorCode::OtherPrincipal => "other_principal",
            ErrorCode::OwnerInUse => "owner_in_use",
            ErrorCode::CoalesceFailed => "coalesce_failed",
        }
    }
}

/// An error with a stable code and a human message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedulerError {
    /// What kind of failure this is.
    pub code: ErrorCode,
    /// A short explanation for people; never contains credentials.
    pub message: String,
    /// The intent of an `enqueue`/`enqueueMany` call it is about: its index in the call
    /// (the JS boundary adds its id); `None` when it is about no one intent.
    intent: Option<usize>,
}

impl SchedulerError {
    /// Builds an error from a code and a message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            intent: None,
        }
    }

    /// The same error, about intent `index` of the call.
    pub fn of_intent(mut self, index: usize) -> Self {
        self.intent = Some(index);
        self
    }

    /// The index in the call of the intent it is about, if any.
    pub fn intent(&self) -> Option<usize> {
        self.intent
    }

    /// The stable code string.
    pub fn code(&self) -> &'static str {
        self.code.as_str()
    }
}

impl fmt::Display for SchedulerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for SchedulerError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable_snake_case() {
        let mut seen = std::collections::BTreeSet::new();
        for code in ErrorCode::ALL {
            let s = code.as_str();
            assert!(s.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "{s}");
            assert!(seen.insert(s), "duplicate code {s}");
        }
        assert_eq!(
            SchedulerError::new(ErrorCode::SchedulerClosed, "stopped").to_string(),
            "scheduler_closed: stopped"
        );
    }

    #[test]
    fn an_error_names_its_intent_at_any_index() {
        let plain = SchedulerError::new(ErrorCode::InvalidIntent, "bad");
        assert_eq!(plain.intent(), None);
        assert_eq!(plain.clone().of_intent(0).intent(), Some(0));
        assert_eq!(plain.of_intent(70_000).intent(), Some(70_000), "past u16");
    }
}
