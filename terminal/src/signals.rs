//! Signals from programs in panes: a program tells cohort something without a hook
//! by writing iTerm2's custom control sequence,
//! `printf '\033]1337;Custom=id=%s:%s\a' "$COHORT_SIGNAL_ID" 'build done'`.
//!
//! The `id` is the pane's secret: an HMAC of its session's persistent id under a key
//! every cohort process of the state directory shares (`signal.key`, readable by its
//! owner only), handed to the session's programs in `COHORT_SIGNAL_ID` and shown
//! nowhere else (the backends take the sequence out of the output before anything
//! keeps it). A sequence whose `id` is not its pane's secret (another pane's, a
//! `cat` of a log, a guess) is dropped, never published; one that is becomes
//! [`crate::events::EngineEvent::Signal`] on the bus, where watchers, `cohort
//! events` and the gRPC event stream see it. A pane whose session this process has
//! not seen yet (opened by another process since) is looked up first. A pane cohort
//! adopted was not started with the secret, so nothing in it can signal.

use crate::seal::SealKey;

/// The variable a session's programs find their pane's secret in.
pub const SIGNAL_ENV: &str = "COHORT_SIGNAL_ID";

/// The longest payload published; a longer one is cut (on a character boundary).
pub const PAYLOAD_MAX: usize = 1024;

/// The identity of a note left for cohort by a program on a remote host (an agent's
/// hook there, which cannot reach this machine's sockets): it writes
/// `OSC 1337 ; Custom=id=cohort-note:<text>` to the tty of cohort's lobby pane on
/// that host's tmux server. No pane's secret is involved (the lobby is no session):
/// a note is published as [`HostNote`] with the pane it came from, and whoever acts
/// on it checks what it says (a worker's hook key).
pub const NOTE_IDENTITY: &str = "cohort-note";

/// A note from a program on a remote host; see [`NOTE_IDENTITY`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostNote {
    /// The pane whose output carried it (its id names its host).
    pub pane: cohort_backends::PaneId,
    /// What it says.
    pub text: String,
    /// When it arrived (Unix ms): in order with the pane output of the same
    /// connection, which is what its reader times it by.
    pub at_ms: i64,
}

/// The key the secrets of a state directory's panes are derived from.
#[derive(Clone, Debug)]
pub struct SignalKey(SealKey);

impl SignalKey {
    /// The state directory's key, made on first use; `None` (with a warning) when
    /// it can be neither read nor made: then nothing can signal.
    pub fn of_state_dir(state_dir: &std::path::Path) -> Option<SignalKey> {
        match SealKey::load_or_create(&state_dir.join("signal.key")) {
            Ok(key) => Some(SignalKey(key)),
            Err(e) => {
                tracing::warn!(target: "cohort::engine", "programs in panes cannot signal: {e}");
                None
            }
        }
    }

    /// The secret of the session with persistent id `session_id`.
    pub fn secret(&self, session_id: &str) -> String {
        self.0.tag(&message(session_id))
    }

    /// Whether `claimed` is the secret of `session_id` (compared in constant time).
    pub fn verify(&self, session_id: &str, claimed: &str) -> bool {
        self.0.verify(&message(session_id), claimed)
    }
}

fn message(session_id: &str) -> Vec<u8> {
    let mut message = b"cohort signal\0".to_vec();
    message.extend_from_slice(session_id.as_bytes());
    message
}

/// `payload` without control characters, cut to [`PAYLOAD_MAX`] bytes.
pub fn clean_payload(payload: &str) -> String {
    let mut out = String::with_capacity(payload.len().min(PAYLOAD_MAX));
    for c in payload.chars().filter(|c| !c.is_control()) {
        if out.len() + c.len_utf8() > PAYLOAD_MAX {
            break;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_its_sessions_only() {
        let dir = tempfile::tempdir().unwrap();
        let key = SignalKey::of_state_dir(dir.path()).unwrap();
        let secret = key.secret("session-a");
        assert!(key.verify("session-a", &secret));
        assert!(!key.verify("session-b", &secret));
        assert!(!key.verify("session-a", "not-hex"));
        assert!(!key.verify("session-a", &secret[..32]));
        // Another process of the same state directory derives the same secret.
        let again = SignalKey::of_state_dir(dir.path()).unwrap();
        assert_eq!(again.secret("session-a"), secret);
        // Another state directory does not.
        let other = tempfile::tempdir().unwrap();
        assert_ne!(
            SignalKey::of_state_dir(other.path())
                .unwrap()
                .secret("session-a"),
            secret
        );
    }

    #[test]
    fn payloads_lose_control_characters_and_length() {
        assert_eq!(clean_payload("done\u{1b}[2J\tnow"), "done[2Jnow");
        let long = "é".repeat(PAYLOAD_MAX);
        let cut = clean_payload(&long);
        assert!(cut.len() <= PAYLOAD_MAX && cut.chars().all(|c| c == 'é'));
    }
}
