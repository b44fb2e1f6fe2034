//! [`HostAction`]: what the host asks of the dispatching tab, from this tab or another. It
//! becomes text only on the `BroadcastChannel` (`channel.rs`), and a name it does not know
//! there is no message.

/// A host action, run by the dispatching tab (`relay::serve`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostAction {
    /// `flush(id)`.
    Flush,
    /// `retry(id)`.
    Retry,
    /// `discard(id)`.
    Discard,
    /// `resume()`.
    Resume,
    /// `retryAllNow()`.
    RetryAllNow,
    /// `settle()`.
    Settle,
    /// `events({after, limit})`.
    Events,
    /// `whenSaved()`.
    WhenSaved,
}

/// Each action and its name on the channel.
const NAMES: [(HostAction, &str); 8] = [
    (HostAction::Flush, "flush"),
    (HostAction::Retry, "retry"),
    (HostAction::Discard, "discard"),
    (HostAction::Resume, "resume"),
    (HostAction::RetryAllNow, "retryAllNow"),
    (HostAction::Settle, "settle"),
    (HostAction::Events, "events"),
    (HostAction::WhenSaved, "whenSaved"),
];

impl HostAction {
    /// Its name on the `BroadcastChannel` (the JS method's).
    pub fn name(self) -> &'static str {
        NAMES
            .iter()
            .find(|(action, _)| *action == self)
            .map_or("", |(_, name)| name)
    }

    /// The action `name` names, if any.
    pub fn named(name: &str) -> Option<Self> {
        NAMES
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(action, _)| *action)
    }
}
