//! [`EventType`]: an Event's `type`, `Normal` or `Warning` (the only two the API accepts).

use std::fmt;

use serde::Serialize;

/// An Event's `type`: [`Normal`](Self::Normal) for what went as expected (`Scheduled`,
/// `Created`), [`Warning`](Self::Warning) for what someone may need to look at (`Failed`,
/// `BackOff`). `kubectl events --types=Warning` selects on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum EventType {
    /// `Normal`.
    Normal,
    /// `Warning`.
    Warning,
}

impl EventType {
    /// `Normal` or `Warning`, as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Normal => "Normal",
            Self::Warning => "Warning",
        }
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
