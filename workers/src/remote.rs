//! Workers on remote hosts: what cohort keeps on the far side (the hook script, each
//! worker's settings and start signal), and how the agent's hooks reach cohort from
//! there.
//!
//! An agent on another machine can neither run `cohort hook` (nothing of cohort is
//! installed there but what cohort writes itself) nor reach this machine's wake
//! socket. Its hooks run a small POSIX script instead ([`HOOK_SCRIPT`]): it keeps the
//! event's JSON in a file of the worker's directory on the host and writes a note,
//! `hook <worker> <key> <event> <file>`, to the tty of cohort's lobby pane on the
//! host's tmux server, as iTerm2's custom control sequence
//! ([`cohort_terminal::signals::NOTE_IDENTITY`]). The note reaches cohort in that
//! pane's output, over the connection the host's panes already use, one link's
//! latency after the hook ran. The listener (`Workers::hear_hosts`) checks the key
//! (the worker's hook key, in its agent's environment as locally), fetches the file
//! in one ssh round trip, and records the event as `cohort hook` records a local
//! one: sealed into the worker's event file, every serving process woken. From
//! there it is a report like any other, and waits on a remote worker wake on its
//! turn's end without polling.
//!
//! tmux serialises what reaches the lobby's tty, one `write` at a time, so notes of
//! workers firing at once never interleave; the files keep any size of event out of
//! the terminal. A note arriving while no cohort process listens is lost with the
//! moment (its file stays until the worker is closed): the screen still tells the
//! worker's state, as it does for an agent without hooks.

use std::sync::{Arc, Weak};

use cohort_backends::tmux::quote::sh;
use cohort_backends::TerminalBackend;
use cohort_terminal::signals::HostNote;

use crate::error::WorkerError;
use crate::events;
use crate::Workers;

/// cohort's directory for workers on a remote host, as the far side's shell spells it.
const FAR_DIR: &str = "\"${XDG_STATE_HOME:-$HOME/.local/state}/cohort/workers\"";

/// The script the agent's hooks run on a remote host: `sh hook.sh <Event>`, the
/// event's JSON on standard input, the worker's id and hook key in the environment.
/// It prints nothing and always succeeds (a hook's output would reach the agent).
pub const HOOK_SCRIPT: &str = r#"# cohort: hands an agent's hook event to the cohort that started the agent.
# $1: the event. The worker and its key come from the agent's environment, the
# event's JSON on standard input.
event=${1:-}
id=${COHORT_WORKER_ID:-}
key=${COHORT_HOOK_KEY:-}
dir=${0%/*}/$id
case "$id:$event:$key" in
    *[!A-Za-z0-9:-]* | :* | *::* | *:) cat >/dev/null; exit 0 ;;
esac
if [ ! -d "$dir" ] || [ -z "${TMUX:-}" ]; then cat >/dev/null; exit 0; fi
file=$(mktemp "$dir/event.XXXXXX") || { cat >/dev/null; exit 0; }
cat > "$file"
tty=$(tmux display-message -p -t ':=_cohort' '#{pane_tty}' 2>/dev/null)
if [ -n "$tty" ] && [ -w "$tty" ]; then
    printf '\033]1337;Custom=id=cohort-note:hook %s %s %s %s\007' "$id" "$key" "$event" "$file" > "$tty"
else
    rm -f "$file"
fi
exit 0
"#;

/// A worker's place on a remote host.
#[derive(Clone, Debug)]
pub(crate) struct FarWorker {
    /// The host.
    pub host: String,
    /// cohort's workers directory there (absolute).
    pub dir: String,
    /// The worker's own directory there.
    pub own: String,
}

impl FarWorker {
    /// The hook command for `event`, as the agent's settings name it.
    pub fn hook_command(&self, event: &str) -> String {
        format!("sh {} {event}", sh(&format!("{}/hook.sh", self.dir)))
    }

    /// The start signal's file (see the spawn's gate).
    pub fn gate(&self) -> String {
        format!("{}/go", self.own)
    }
}

/// Makes worker `id`'s directory on `host` (private) and writes the hook script
/// beside it; where they are.
pub(crate) async fn prepare(
    backend: &Arc<dyn TerminalBackend>,
    host: &str,
    id: &str,
) -> Result<FarWorker, WorkerError> {
    check_id(id)?;
    let script = format!(
        "set -e; umask 077; d={FAR_DIR}; mkdir -p \"$d/{id}\"; \
         cat > \"$d/hook.sh.$$\"; mv -f \"$d/hook.sh.$$\" \"$d/hook.sh\"; printf '%s\\n' \"$d\""
    );
    let out = backend
        .run_on_host(host, &script, HOOK_SCRIPT.as_bytes())
        .await
        .map_err(|e| far_error(host, "could not prepare the worker's directory", e))?;
    let dir = String::from_utf8_lossy(&out).trim().to_string();
    if !dir.starts_with('/') || dir.contains('\n') {
        return Err(WorkerError::Invalid(format!(
            "host {host}: cohort's directory there came back as {dir:?}, not an absolute path"
        )));
    }
    Ok(FarWorker {
        host: host.to_string(),
        own: format!("{dir}/{id}"),
        dir,
    })
}

/// Writes `text` to `name` in the worker's directory on its host.
pub(crate) async fn write(
    backend: &Arc<dyn TerminalBackend>,
    far: &FarWorker,
    name: &str,
    text: &str,
) -> Result<String, WorkerError> {
    let path = format!("{}/{name}", far.own);
    let script = format!("umask 077; cat > {}", sh(&path));
    backend
        .run_on_host(&far.host, &script, text.as_bytes())
        .await
        .map_err(|e| far_error(&far.host, "could not write the worker's files", e))?;
    Ok(path)
}

/// Gives the start signal to the workers of `gates` on `host` (their gate files).
pub(crate) async fn open_gates(
    backend: &Arc<dyn TerminalBackend>,
    host: &str,
    gates: &[String],
) -> Result<(), WorkerError> {
    let files: Vec<String> = gates.iter().map(|g| sh(g)).collect();
    backend
        .run_on_host(host, &format!("touch {}", files.join(" ")), b"")
        .await
        .map_err(|e| far_error(host, "could not give the start signal", e))?;
    Ok(())
}

/// Removes worker `id`'s directory on `host` (its settings, its events not taken).
pub(crate) async fn forget(backend: &Arc<dyn TerminalBackend>, host: &str, id: &str) {
    if check_id(id).is_err() {
        return;
    }
    let script = format!("d={FAR_DIR}; rm -rf \"$d/{id}\"");
    if let Err(e) = backend.run_on_host(host, &script, b"").await {
        tracing::debug!(target: "cohort::workers", host, worker = id, "its directory on the host stays: {e}");
    }
}

fn far_error(host: &str, what: &str, e: cohort_backends::BackendError) -> WorkerError {
    WorkerError::Invalid(format!("host {host}: {what}: {e}"))
}

/// A worker id as cohort makes them (a UUID): safe in a path and a note.
fn check_id(id: &str) -> Result<(), WorkerError> {
    if !id.is_empty() && id.len() <= 64 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
    {
        Ok(())
    } else {
        Err(WorkerError::Invalid(format!("{id:?} is not a worker id")))
    }
}

/// A hook's note, as [`HOOK_SCRIPT`] writes it.
#[derive(Debug, PartialEq, Eq)]
struct HookNote<'a> {
    worker: &'a str,
    key: &'a str,
    event: &'a str,
    file: &'a str,
}

impl<'a> HookNote<'a> {
    /// The note, when `text` is a hook's whose file lies in its worker's directory.
    fn parse(text: &'a str) -> Option<HookNote<'a>> {
        let mut words = text.strip_prefix("hook ")?.splitn(4, ' ');
        let (worker, key, event, file) =
            (words.next()?, words.next()?, words.next()?, words.next()?);
        check_id(worker).ok()?;
        let valid_event = !event.is_empty()
            && event.len() <= 64
            && event.chars().all(|c| c.is_ascii_alphanumeric());
        let in_place = file.starts_with('/')
            && file.contains(&format!("/cohort/workers/{worker}/event."))
            && !file.contains("/../")
            && !file.contains('\n');
        (valid_event && in_place && key.len() <= 128).then_some(HookNote {
            worker,
            key,
            event,
            file,
        })
    }
}

/// Compares two secrets in time that does not depend on where they differ.
fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// What the listener needs, none of it keeping the engine alive.
struct Listener {
    state_dir: std::path::PathBuf,
    backend: Weak<dyn TerminalBackend>,
}

impl Listener {
    /// Takes one note: checks it, fetches the event's file, records the event.
    async fn take(&self, note: &HostNote) {
        let Some(hook) = HookNote::parse(&note.text) else {
            tracing::debug!(target: "cohort::workers", pane = %note.pane, "a note that is no hook's was dropped");
            return;
        };
        let Some(host) = cohort_backends::hosts::split(note.pane.as_str()).0 else {
            return;
        };
        // A worker of this state directory has its key here; any other note is not
        // for us (another cohort's, on the same host) or forged.
        let key_file = events::hook_key_path(&self.state_dir, hook.worker);
        let Ok(Some(key)) = cohort_terminal::seal::SealKey::load(&key_file) else {
            return;
        };
        if !same_secret(&key.to_hex(), hook.key) {
            tracing::warn!(target: "cohort::workers", host, worker = hook.worker, "a hook note with the wrong key was dropped");
            return;
        }
        let Some(backend) = self.backend.upgrade() else {
            return;
        };
        // Taken by a rename first: of two processes serving this state directory
        // (each hears the note), one records the event.
        let script = format!(
            "f={}; t=\"$f.taken.$$\"; mv \"$f\" \"$t\" 2>/dev/null || exit 3; cat \"$t\"; rm -f \"$t\"",
            sh(hook.file)
        );
        let payload = match backend.run_on_host(host, &script, b"").await {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) => {
                // Another process serving the same state directory took it first.
                tracing::debug!(target: "cohort::workers", host, worker = hook.worker, "a hook's event was not fetched: {e}");
                return;
            }
        };
        let state_dir = self.state_dir.clone();
        let (worker, event) = (hook.worker.to_string(), hook.event.to_string());
        let _ = tokio::task::spawn_blocking(move || {
            events::record(&state_dir, &worker, &event, &payload, Some(&key));
        })
        .await;
    }
}

impl Workers {
    /// Listens for the notes of hooks on remote hosts, once per engine (see the
    /// module docs). Called wherever remote workers may report: spawning one,
    /// observing one, waiting.
    pub(crate) fn hear_hosts(&self) {
        if self
            .hub
            .hearing_hosts
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.hub
                .hearing_hosts
                .store(false, std::sync::atomic::Ordering::SeqCst);
            return;
        };
        let mut notes = self.terminal.host_notes();
        let listener = Listener {
            state_dir: self.hub.state_dir.clone(),
            backend: Arc::downgrade(self.terminal.backend()),
        };
        runtime.spawn(async move {
            loop {
                match notes.recv().await {
                    // One at a time, in order: a worker's events keep theirs.
                    Ok(note) => listener.take(&note).await,
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                        tracing::warn!(target: "cohort::workers", "{n} notes from remote hosts were missed");
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hook_notes_name_a_worker_an_event_and_a_file_of_its_own() {
        let id = "0b6c1f8e-2f6d-4f55-9a43-1c9e4c1d2a77";
        let text =
            format!("hook {id} abc123 Stop /home/u/.local/state/cohort/workers/{id}/event.Xy12ab");
        let note = HookNote::parse(&text).expect("a hook's note");
        assert_eq!(note.worker, id);
        assert_eq!(note.event, "Stop");
        assert_eq!(note.key, "abc123");
        for bad in [
            format!("hook {id} k Stop /etc/passwd"),
            format!("hook {id} k Stop /x/cohort/workers/{id}/event.a/../../../etc/passwd"),
            format!("hook {id} k St;op /x/cohort/workers/{id}/event.a"),
            "hook ../x k Stop /x/cohort/workers/../x/event.a".to_string(),
            format!("hook {id} k Stop relative/cohort/workers/{id}/event.a"),
            "ping".to_string(),
            format!("hook {id} k Stop"),
        ] {
            assert_eq!(HookNote::parse(&bad), None, "{bad}");
        }
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("abcd", "abcd"));
        assert!(!same_secret("abcd", "abce"));
        assert!(!same_secret("abcd", "abc"));
        assert!(!same_secret("", "a"));
    }

    #[test]
    fn the_hook_script_refuses_odd_names_and_writes_one_control_sequence() {
        assert!(HOOK_SCRIPT.contains("Custom=id=cohort-note:hook"));
        assert!(HOOK_SCRIPT.contains(cohort_terminal::signals::NOTE_IDENTITY));
        assert!(HOOK_SCRIPT.contains(&format!(":={}", cohort_backends::tmux::LOBBY_WINDOW)));
    }
}
