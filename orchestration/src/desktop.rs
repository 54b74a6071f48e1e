//! Notifications on this machine's desktop: the ones that need someone (the same
//! kinds the webhook posts) shown by the desktop's own notifier, `notify-send` on a
//! Linux desktop or `osascript` on macOS, when `COHORT_DESKTOP_NOTIFY` asks for it.
//!
//! The text goes to the notifier as arguments, never through a shell or into a
//! script's source: `osascript` gets a fixed script that reads its arguments.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// The desktop's notifier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notifier {
    /// libnotify's `notify-send`.
    NotifySend(PathBuf),
    /// macOS's `osascript` (`display notification`).
    Osascript(PathBuf),
}

/// Desktop notifications: which notifier, and which kinds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Desktop {
    /// The notifier found.
    pub notifier: Notifier,
    /// Notification kinds shown; empty: the ones that need a person.
    pub kinds: Vec<String>,
}

/// The longest text shown (a notification is a glance, not a log).
const SHOWN_MAX: usize = 300;

/// The AppleScript that shows its arguments: the message, then the title.
const SHOW_ARGUMENTS: [&str; 3] = [
    "on run argv",
    "display notification (item 1 of argv) with title (item 2 of argv)",
    "end run",
];

impl Desktop {
    /// Desktop notifications as the environment asks: `COHORT_DESKTOP_NOTIFY=1`
    /// (or `on`), with `COHORT_DESKTOP_KINDS` (comma-separated notification kinds);
    /// refused with why when no notifier is found on `PATH`.
    pub fn from_env() -> Option<Result<Desktop, String>> {
        let asked = std::env::var("COHORT_DESKTOP_NOTIFY").ok()?;
        match asked.trim() {
            "" | "0" | "off" | "no" | "false" => return None,
            "1" | "on" | "yes" | "true" => {}
            other => {
                return Some(Err(format!(
                    "COHORT_DESKTOP_NOTIFY={other:?}: set it to 1 to show notifications on this desktop, 0 not to"
                )))
            }
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        let kinds = std::env::var("COHORT_DESKTOP_KINDS").unwrap_or_default();
        Some(Desktop::find(&path, &kinds))
    }

    /// The notifier on `path` (a `PATH` value): `notify-send`, else `osascript`.
    pub fn find(path: &std::ffi::OsStr, kinds: &str) -> Result<Desktop, String> {
        let on_path = |name: &str| {
            std::env::split_paths(path)
                .map(|dir| dir.join(name))
                .find(|p| is_executable(p))
        };
        let notifier = on_path("notify-send")
            .map(Notifier::NotifySend)
            .or_else(|| on_path("osascript").map(Notifier::Osascript))
            .ok_or_else(|| {
                "COHORT_DESKTOP_NOTIFY is set, but no desktop notifier is on PATH: install notify-send (libnotify-bin on Debian and Ubuntu) on Linux; macOS has osascript".to_string()
            })?;
        Ok(Desktop {
            notifier,
            kinds: crate::webhook::kinds_list(kinds),
        })
    }

    /// Whether a notification of `kind` from `from` saying `message` is shown.
    pub fn wants(&self, kind: &str, from: &str, message: &str) -> bool {
        crate::webhook::needs_a_person(&self.kinds, kind, from, message)
    }

    /// Shows one notification; says why when it could not be.
    pub async fn show(&self, kind: &str, from: &str, message: &str) -> Result<(), String> {
        let title = shown(&format!("cohort: {kind} from {from}"));
        let message = shown(message);
        let mut cmd = match &self.notifier {
            Notifier::NotifySend(program) => {
                let mut cmd = tokio::process::Command::new(program);
                cmd.args(["--app-name=cohort", "--"])
                    .arg(&title)
                    .arg(&message);
                cmd
            }
            Notifier::Osascript(program) => {
                let mut cmd = tokio::process::Command::new(program);
                for line in SHOW_ARGUMENTS {
                    cmd.arg("-e").arg(line);
                }
                cmd.arg(&message).arg(&title);
                cmd
            }
        };
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let out = tokio::time::timeout(Duration::from_secs(10), cmd.output())
            .await
            .map_err(|_| "the desktop notifier did not finish in 10 s".to_string())?
            .map_err(|e| format!("the desktop notifier could not be run: {e}"))?;
        if out.status.success() {
            return Ok(());
        }
        Err(format!(
            "the desktop notifier failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// `text` as a notification shows it: control characters as spaces, at most
/// [`SHOWN_MAX`] characters.
fn shown(text: &str) -> String {
    let mut out: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(SHOWN_MAX)
        .collect();
    if text.chars().count() > SHOWN_MAX {
        out.push('…');
    }
    out
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_notifier_is_found_on_path_or_its_absence_said() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().as_os_str();
        let e = Desktop::find(empty, "").unwrap_err();
        assert!(e.contains("notify-send"), "{e}");
        let osa = dir.path().join("osascript");
        std::fs::write(&osa, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&osa, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let found = Desktop::find(empty, "watch, budget_reached").unwrap();
        assert_eq!(found.notifier, Notifier::Osascript(osa));
        assert_eq!(found.kinds, ["watch", "budget_reached"]);
        assert!(found.wants("watch", "w", "hit") && !found.wants("agent_state", "a", "a is idle"));
    }

    #[test]
    fn what_is_shown_is_one_short_line() {
        assert_eq!(shown("a\nb\tc"), "a b c");
        assert_eq!(shown(&"x".repeat(400)).chars().count(), SHOWN_MAX + 1);
    }
}
