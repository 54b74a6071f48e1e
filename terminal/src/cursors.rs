//! Where each caller's last read of a pane's new output ended. Callers are
//! connections (an MCP session, a gRPC client), so a server that many clients come
//! and go on would otherwise keep a cursor for every client it ever had: the map is
//! bounded, and past the bound the cursor used least recently is forgotten (that
//! caller's next read of new output starts where a first read would).

use std::collections::HashMap;

/// Cursors kept per pane before the least recently used is forgotten.
pub const MAX_CURSORS: usize = 1024;

/// Read cursors per caller, bounded to [`MAX_CURSORS`].
#[derive(Debug, Default)]
pub struct Cursors {
    /// Each caller's offset, and when it was last used (a counter, not a clock).
    by_caller: HashMap<String, (u64, u64)>,
    uses: u64,
}

impl Cursors {
    /// `caller`'s cursor, if it has one.
    pub fn get(&self, caller: &str) -> Option<u64> {
        self.by_caller.get(caller).map(|&(offset, _)| offset)
    }

    /// Sets `caller`'s cursor to `offset`.
    pub fn set(&mut self, caller: &str, offset: u64) {
        self.uses += 1;
        let used = self.uses;
        if let Some(entry) = self.by_caller.get_mut(caller) {
            *entry = (offset, used);
            return;
        }
        if self.by_caller.len() >= MAX_CURSORS {
            self.forget_least_recent();
        }
        self.by_caller.insert(caller.to_string(), (offset, used));
    }

    /// Moves `caller`'s cursor forward to `offset` (never back).
    pub fn advance(&mut self, caller: &str, offset: u64) {
        let at = self.get(caller).unwrap_or(0);
        self.set(caller, at.max(offset));
    }

    /// How many callers have a cursor.
    pub fn len(&self) -> usize {
        self.by_caller.len()
    }

    /// Whether no caller has a cursor.
    pub fn is_empty(&self) -> bool {
        self.by_caller.is_empty()
    }

    fn forget_least_recent(&mut self) {
        let oldest = self
            .by_caller
            .iter()
            .min_by_key(|(_, &(_, used))| used)
            .map(|(caller, _)| caller.clone());
        if let Some(caller) = oldest {
            self.by_caller.remove(&caller);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_move_forward_and_are_kept_per_caller() {
        let mut cursors = Cursors::default();
        cursors.set("a", 10);
        cursors.advance("a", 5);
        cursors.advance("b", 7);
        assert_eq!(cursors.get("a"), Some(10));
        assert_eq!(cursors.get("b"), Some(7));
        assert_eq!(cursors.get("c"), None);
    }

    #[test]
    fn past_the_bound_the_least_recently_used_cursor_is_forgotten() {
        let mut cursors = Cursors::default();
        for i in 0..MAX_CURSORS {
            cursors.set(&format!("client-{i}"), i as u64);
        }
        // The first client reads again: it is now the most recent.
        cursors.set("client-0", 99);
        cursors.set("newcomer", 1);
        assert_eq!(cursors.len(), MAX_CURSORS);
        assert_eq!(cursors.get("client-0"), Some(99));
        assert_eq!(
            cursors.get("client-1"),
            None,
            "the least recent is forgotten"
        );
        assert_eq!(cursors.get("newcomer"), Some(1));
        for i in 0..10_000 {
            cursors.set(&format!("churn-{i}"), i);
        }
        assert_eq!(cursors.len(), MAX_CURSORS, "stays bounded under churn");
    }
}
