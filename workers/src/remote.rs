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
//! Each note is one `write` to the tty, which the kernel keeps whole against other
//! writers, so notes of workers firing at once never interleave; the files keep any
//! size of event out of the terminal. An event is timed by its note's arrival, in
//! order with the output of the host's panes that came over the same connection;
//! each host's notes are taken in order, those waiting in one round trip, and a
//! host slow to answer holds up only its own. A note written while the link is down
//! comes with the lobby's output read back when cohort connects again (see the tmux
//! backend's `outlog`); one written while no cohort process runs is lost with the
//! moment (its file stays until the worker is closed), and the screen still tells
//! the worker's state, as it does for an agent without hooks. The far side's copy of
//! the lobby's output (kept while a link is down) holds the key, in cohort's private
//! directory there.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use tokio::sync::{broadcast, mpsc};

use cohort_backends::tmux::quote::sh;
use cohort_backends::TerminalBackend;
use cohort_terminal::signals::HostNote;

use crate::error::WorkerError;
use crate::events;
use crate::Workers;

/// How long a small call on a host may take (what ssh itself is given).
pub(crate) const QUICK: std::time::Duration = cohort_backends::tmux::remote::SSH_TIMEOUT;

/// cohort's directory for workers on a remote host, as the far side's shell spells it.
const FAR_DIR: &str = "\"${XDG_STATE_HOME:-$HOME/.local/state}/cohort/workers\"";

/// The script the agent's hooks run on a remote host: `sh hook.sh <Event>`, the
/// event's JSON on standard input (or as the next argument: Codex's `notify`), the
/// worker's id and hook key in the environment. It always succeeds, and prints
/// nothing but a permission request's answer by the worker's policy (a hook's
/// output reaches the agent).
pub const HOOK_SCRIPT: &str = r#"# cohort: hands an agent's hook event to the cohort that started the agent.
# $1: the event. The worker and its key come from the agent's environment, the
# event's JSON on standard input (or as $2: Codex's notify, whose standard input is
# not the event's and is left alone).
event=${1:-}
inline=$#
drain() { [ "$inline" -ge 2 ] || cat >/dev/null; }
id=${COHORT_WORKER_ID:-}
key=${COHORT_HOOK_KEY:-}
dir=${0%/*}/$id
case "$id:$event:$key" in
    *[!A-Za-z0-9:-]* | :* | *::* | *:) drain; exit 0 ;;
esac
if [ ! -d "$dir" ] || [ -z "${TMUX:-}" ]; then drain; exit 0; fi
file=$(mktemp "$dir/event.XXXXXX") || { drain; exit 0; }
if [ "$inline" -ge 2 ]; then printf '%s' "$2" > "$file"; else cat > "$file"; fi
tty=$(tmux display-message -p -t ':=_cohort' '#{pane_tty}' 2>/dev/null)
if [ -z "$tty" ] || [ ! -w "$tty" ]; then rm -f "$file"; exit 0; fi
# A small event goes in the note itself, under its file's name (of several cohort
# processes hearing it, the one that takes the name records it); JSON holds no raw
# control characters, so what is dropped is whitespace between its tokens. A bigger
# one, or a permission request (answered beside its file), is fetched from the file.
# The note reaches the tty in one write (dd, one block): the kernel keeps it whole
# against other hooks' notes.
note="$file.note"
size=$(wc -c < "$file"); size=$((size))
small=
if [ "$event" != PermissionRequest ] && [ "$size" -le 6000 ]; then
    body=$(tr -d '\000-\037' < "$file")
    bytes=$(printf '%s' "$body" | wc -c); bytes=$((bytes))
    [ "$bytes" -le 3000 ] && small=1
fi
if [ -n "$small" ]; then
    rm -f "$file"
    printf '\033]1337;Custom=id=cohort-note:hook %s %s %s inline %s %s\007' "$id" "$key" "$event" "${file##*/}" "$body" > "$note"
else
    printf '\033]1337;Custom=id=cohort-note:hook %s %s %s %s\007' "$id" "$key" "$event" "$file" > "$note"
fi
dd if="$note" of="$tty" bs=8192 2>/dev/null
rm -f "$note"
[ -n "$small" ] && exit 0
# A permission request of a worker with a policy waits a moment for it: cohort's
# answer (the decision, or nothing: the agent asks on its dialog) is what the hook
# prints. Whoever takes "$file.claim" first decides: cohort, which then answers, or
# this hook giving up, which cohort then sees (and records a dialog, not a decision).
if [ "$event" = PermissionRequest ] && [ -e "$dir/policy" ]; then
    # cohort takes the event's file within a round trip of the note: a file still
    # there after two seconds means no cohort heard it, and nothing is awaited.
    if sleep 0.1 2>/dev/null; then tick=0.1; n=70; heard=20; else tick=1; n=6; heard=2; fi
    i=0
    while [ ! -e "$file.reply" ] && [ "$i" -lt "$n" ]; do
        if [ "$i" -ge "$heard" ] && [ -e "$file" ]; then break; fi
        sleep $tick
        i=$((i + 1))
    done
    if [ ! -e "$file.reply" ] && ! mkdir "$file.claim" 2>/dev/null; then
        # cohort claimed it: its answer is on its way.
        i=0
        while [ ! -e "$file.reply" ] && [ "$i" -lt 10 ]; do sleep $tick; i=$((i + 1)); done
    fi
    # A claim this hook took stays: an answer coming later is not written.
    if [ -e "$file.reply" ]; then cat "$file.reply"; rm -rf "$file.reply" "$file.claim"; fi
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
/// beside it, and with `policy` says there whether the worker has an approval policy
/// (as [`mark_policy`]), in one round trip; where they are.
pub(crate) async fn prepare(
    backend: &Arc<dyn TerminalBackend>,
    host: &str,
    id: &str,
    policy: Option<bool>,
) -> Result<FarWorker, WorkerError> {
    check_id(id)?;
    let mark = policy.map_or_else(|| ":".to_string(), |set| policy_mark(id, set));
    let script = format!(
        "set -e; umask 077; d={FAR_DIR}; mkdir -p \"$d/{id}\"; \
         cat > \"$d/hook.sh.$$\"; mv -f \"$d/hook.sh.$$\" \"$d/hook.sh\"; {mark}; \
         printf '%s\\n' \"$d\""
    );
    let out = backend
        .run_on_host(host, &script, HOOK_SCRIPT.as_bytes(), QUICK)
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
        .run_on_host(&far.host, &script, text.as_bytes(), QUICK)
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
        .run_on_host(host, &format!("touch {}", files.join(" ")), b"", QUICK)
        .await
        .map_err(|e| far_error(host, "could not give the start signal", e))?;
    Ok(())
}

/// Says on `host` whether worker `id` has an approval policy: its hook waits for
/// an answer to a permission request only then.
pub(crate) async fn mark_policy(
    backend: &Arc<dyn TerminalBackend>,
    host: &str,
    id: &str,
    set: bool,
) -> Result<(), WorkerError> {
    check_id(id)?;
    let script = format!("d={FAR_DIR}; {}", policy_mark(id, set));
    backend
        .run_on_host(host, &script, b"", QUICK)
        .await
        .map_err(|e| far_error(host, "could not mark the worker's policy", e))?;
    Ok(())
}

/// The shell words that say in `$d` whether worker `id` has a policy.
fn policy_mark(id: &str, set: bool) -> String {
    let how = if set { "touch" } else { "rm -f" };
    format!("{how} \"$d/{id}/policy\"")
}

/// Removes worker `id`'s directory on `host` (its settings, its events not taken).
pub(crate) async fn forget(backend: &Arc<dyn TerminalBackend>, host: &str, id: &str) {
    if check_id(id).is_err() {
        return;
    }
    let script = format!("d={FAR_DIR}; rm -rf \"$d/{id}\"");
    if let Err(e) = backend.run_on_host(host, &script, b"", QUICK).await {
        tracing::debug!(target: "cohort::workers", host, worker = id, "its directory on the host stays: {e}");
    }
}

/// A piece of a file on a remote host; see [`read_from`].
#[derive(Debug)]
pub(crate) struct FarRead {
    /// The file's length when read.
    pub len: u64,
    /// Where `bytes` start: where asked, or the file's start when it shrank
    /// (replaced or truncated).
    pub from: u64,
    /// What it holds from there (at most what was asked).
    pub bytes: Vec<u8>,
    /// The host's clock then (Unix seconds): what the file's own times are read by.
    pub host_now_s: i64,
}

/// What the file `path` on `host` holds past `offset`, at most `max` bytes; `None`
/// when it cannot be read (not there yet, the host away).
pub(crate) async fn read_from(
    backend: &Arc<dyn TerminalBackend>,
    host: &str,
    path: &str,
    offset: u64,
    max: u64,
) -> Option<FarRead> {
    let script = format!(
        "f={}; n=$(wc -c < \"$f\") || exit 3; n=$((n)); o={offset}; \
         if [ \"$n\" -lt \"$o\" ]; then o=0; fi; printf '%s %s %s\\n' \"$n\" \"$o\" \"$(date +%s)\"; \
         if [ \"$n\" -gt \"$o\" ]; then tail -c +$((o + 1)) \"$f\" | head -c {max}; fi",
        sh(path)
    );
    let out = backend.run_on_host(host, &script, b"", QUICK).await.ok()?;
    let end = out.iter().position(|&b| b == b'\n')?;
    let head = String::from_utf8_lossy(&out[..end]).into_owned();
    let mut fields = head.split(' ');
    Some(FarRead {
        len: fields.next()?.parse().ok()?,
        from: fields.next()?.parse().ok()?,
        host_now_s: fields.next()?.parse().ok()?,
        bytes: out[end + 1..].to_vec(),
    })
}

/// The file `path` on `host`: its length, and its last `max` bytes from a line's
/// start.
pub(crate) async fn read_tail(
    backend: &Arc<dyn TerminalBackend>,
    host: &str,
    path: &str,
    max: u64,
) -> Option<(u64, String)> {
    let script = format!(
        "f={}; n=$(wc -c < \"$f\") || exit 3; n=$((n)); printf '%s\\n' \"$n\"; tail -c {max} \"$f\"",
        sh(path)
    );
    // A whole transcript may take a slow link a while.
    let limit = std::time::Duration::from_secs(120);
    let out = backend.run_on_host(host, &script, b"", limit).await.ok()?;
    let end = out.iter().position(|&b| b == b'\n')?;
    let len: u64 = String::from_utf8_lossy(&out[..end]).trim().parse().ok()?;
    let text = String::from_utf8_lossy(&out[end + 1..]).into_owned();
    if len > max {
        // Cut inside a line: that line is not whole.
        let whole = text
            .split_once('\n')
            .map_or(String::new(), |(_, rest)| rest.to_string());
        return Some((len, whole));
    }
    Some((len, text))
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
#[derive(Clone, Debug, PartialEq, Eq)]
struct HookNote {
    worker: String,
    key: String,
    event: String,
    /// The event's file on the host (empty when the event came in the note).
    file: String,
    /// The event, when small enough to come in the note.
    inline: Option<String>,
}

impl HookNote {
    /// The note, when `text` is a hook's whose file is one the script makes in its
    /// worker's directory (`…/cohort/workers/<worker>/event.XXXXXX`).
    fn parse(text: &str) -> Option<HookNote> {
        let mut words = text.strip_prefix("hook ")?.splitn(4, ' ');
        let (worker, key, event, file) =
            (words.next()?, words.next()?, words.next()?, words.next()?);
        check_id(worker).ok()?;
        let valid_event = !event.is_empty()
            && event.len() <= 64
            && event.chars().all(|c| c.is_ascii_alphanumeric());
        let valid_key = !key.is_empty() && key.len() <= 128;
        if let Some(rest) = file.strip_prefix("inline ") {
            // The event's own name (its file's, never made) comes first.
            let (name, json) = rest.split_once(' ')?;
            return (valid_event && valid_key && event_name(name)).then(|| HookNote {
                worker: worker.into(),
                key: key.into(),
                event: event.into(),
                file: name.into(),
                inline: Some(json.into()),
            });
        }
        let (dir, name) = file.rsplit_once('/')?;
        let in_place = file.starts_with('/')
            && dir.ends_with(&format!("/cohort/workers/{worker}"))
            && !dir.split('/').any(|c| c == ".." || c == ".")
            && event_name(name);
        (valid_event && in_place && valid_key).then(|| HookNote {
            worker: worker.into(),
            key: key.into(),
            event: event.into(),
            file: file.into(),
            inline: None,
        })
    }
}

/// Whether `name` is an event file's name as the script makes it (`event.XXXXXX`).
fn event_name(name: &str) -> bool {
    name.strip_prefix("event.").is_some_and(|x| {
        !x.is_empty() && x.len() <= 32 && x.chars().all(|c| c.is_ascii_alphanumeric())
    })
}

/// Takes an event that came in its note for this process, by its name: of several
/// processes serving one state directory (each hears the note), the first records
/// it. The names taken are kept in the worker's directory (pruned of old ones).
fn take_inline(state_dir: &std::path::Path, worker: &str, name: &str) -> bool {
    let dir = events::worker_dir(state_dir, worker).join("taken");
    if std::fs::create_dir_all(&dir).is_err() {
        return true;
    }
    let taken = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(dir.join(name));
    match taken {
        Ok(_) => {
            // The directory is listed now and then, not at every event.
            static TAKES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            if TAKES
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                .is_multiple_of(PRUNE_EVERY)
            {
                prune_taken(&dir);
            }
            true
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => false,
        // A directory that cannot be written keeps no record: record it.
        Err(_) => true,
    }
}

/// How many names are taken between two looks at whether old ones can go.
const PRUNE_EVERY: usize = 64;

/// Forgets names taken more than ten minutes ago, when there are many: a note is
/// heard by every process within a link's delay.
fn prune_taken(dir: &std::path::Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let entries: Vec<_> = entries.flatten().collect();
    if entries.len() < 256 {
        return;
    }
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(600);
    for e in entries {
        if e.metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t < old)
        {
            let _ = std::fs::remove_file(e.path());
        }
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

/// The largest event taken from a host (a hook's JSON can hold a whole file a tool
/// wrote): as much as `cohort hook` reads locally.
const EVENT_MAX: u64 = 16 << 20;

/// The most notes of one host taken in one round trip.
const BATCH_MAX: usize = 64;

/// A checked note waiting for its file, with its key and arrival time.
struct Pending {
    note: HookNote,
    key: cohort_terminal::seal::SealKey,
    at_ms: i64,
}

/// What the listener needs, none of it keeping the engine alive.
#[derive(Clone)]
struct Listener {
    state_dir: std::path::PathBuf,
    backend: Weak<dyn TerminalBackend>,
}

impl Listener {
    /// Checks a note: a hook's, for a worker of this state directory, with its key.
    fn check(&self, note: &HostNote) -> Option<Pending> {
        let Some(hook) = HookNote::parse(&note.text) else {
            tracing::debug!(target: "cohort::workers", pane = %note.pane, "a note that is no hook's was dropped");
            return None;
        };
        // A worker of this state directory has its key here; any other note is not
        // for us (another cohort's, on the same host) or forged.
        let key_file = events::hook_key_path(&self.state_dir, &hook.worker);
        let Ok(Some(key)) = cohort_terminal::seal::SealKey::load(&key_file) else {
            return None;
        };
        if !same_secret(&key.to_hex(), &hook.key) {
            tracing::warn!(target: "cohort::workers", pane = %note.pane, worker = %hook.worker, "a hook note with the wrong key was dropped");
            return None;
        }
        Some(Pending {
            note: hook,
            key,
            at_ms: note.at_ms,
        })
    }

    /// Takes the files of `batch` from `host` in one round trip (each renamed
    /// first: of two processes serving this state directory, one takes it) and
    /// records their events in order, each at its note's arrival.
    async fn take(&self, host: &str, batch: Vec<Pending>) {
        let Some(backend) = self.backend.upgrade() else {
            return;
        };
        let files: Vec<String> = batch
            .iter()
            .filter(|p| p.note.inline.is_none())
            .map(|p| sh(&p.note.file))
            .collect();
        let mut fetched = if files.is_empty() {
            Vec::new()
        } else {
            let script = format!(
                "for f in {}; do t=\"$f.taken.$$\"; \
                 if mv \"$f\" \"$t\" 2>/dev/null; then n=$(wc -c < \"$t\"); n=$((n)); \
                 if [ \"$n\" -le {EVENT_MAX} ]; then printf '%s\\n' \"$n\"; cat \"$t\"; else echo -; fi; \
                 rm -f \"$t\"; else echo -; fi; done",
                files.join(" ")
            );
            match backend.run_on_host(host, &script, b"", QUICK).await {
                Ok(out) => split_framed(&out, files.len()),
                Err(e) => {
                    tracing::warn!(target: "cohort::workers", host, "{} hook events were not fetched: {e}", files.len());
                    vec![None; files.len()]
                }
            }
        }
        .into_iter();
        // Each note's event, in the notes' order: its own, or its file's.
        let payloads: Vec<Option<Vec<u8>>> = batch
            .iter()
            .map(|p| match &p.note.inline {
                Some(json) => Some(json.clone().into_bytes()),
                None => fetched.next().flatten(),
            })
            .collect();
        let state_dir = self.state_dir.clone();
        // What the events are, permission requests decided by the worker's policy
        // as `cohort hook` decides them locally; each to be recorded in order.
        let (mut taken, replies) = tokio::task::spawn_blocking(move || {
            let mut taken = Vec::new();
            let mut replies = Vec::new();
            for (p, payload) in batch.into_iter().zip(payloads) {
                let Some(payload) = payload else {
                    continue;
                };
                if p.note.inline.is_some() && !take_inline(&state_dir, &p.note.worker, &p.note.file)
                {
                    continue;
                }
                let mut payload = String::from_utf8_lossy(&payload).into_owned();
                let mut decided = None;
                // Only a worker with a policy has its hook wait for an answer.
                let rules = (p.note.event == "PermissionRequest" && p.note.inline.is_none())
                    .then(|| crate::policy::load(&state_dir, &p.note.worker))
                    .flatten()
                    .filter(|policy| policy.has_rules());
                if let Some(policy) = rules {
                    match crate::policy::decide_by_policy(&policy, &payload) {
                        Some(Ok(d)) => decided = Some(d),
                        // The request goes to the dialog with why.
                        Some(Err(explained)) => payload = explained,
                        None => {}
                    }
                    let answer = decided
                        .as_ref()
                        .map(|d| d.answer.clone())
                        .unwrap_or_default();
                    replies.push((p.note.file.clone(), answer));
                }
                taken.push((p, payload, decided));
            }
            (taken, replies)
        })
        .await
        .unwrap_or_default();
        let claimed = write_replies(&backend, host, &replies).await;
        for (p, _, decided) in &mut taken {
            // A decision counts when its answer reached the hook in time (cohort
            // claimed it); else the agent asks on its dialog, which is recorded.
            if decided.is_some() && !claimed.contains(&p.note.file) {
                *decided = None;
            }
        }
        let state_dir = self.state_dir.clone();
        let _ = tokio::task::spawn_blocking(move || {
            for (p, payload, decided) in taken {
                let (event, text) = match &decided {
                    Some(d) => (events::POLICY_DECISION, d.decision.as_str()),
                    None => (p.note.event.as_str(), payload.as_str()),
                };
                events::record_at(
                    &state_dir,
                    &p.note.worker,
                    event,
                    text,
                    Some(&p.key),
                    p.at_ms,
                );
            }
        })
        .await;
    }
}

/// Answers the hooks waiting on permission requests (`(event file, answer)`; an
/// empty answer lets the agent ask on its dialog), in one round trip: each answer
/// is written only when cohort claims the request before its hook gave up. The
/// event files whose answers were claimed.
async fn write_replies(
    backend: &Arc<dyn TerminalBackend>,
    host: &str,
    replies: &[(String, String)],
) -> Vec<String> {
    if replies.is_empty() {
        return Vec::new();
    }
    let mut script = String::from("umask 077; ");
    for (file, answer) in replies {
        script.push_str(&format!(
            "f={}; if [ -e \"${{f%/*}}/policy\" ] && mkdir \"$f.claim\" 2>/dev/null; then \
             printf '%s' {} > \"$f.reply.$$\" && mv -f \"$f.reply.$$\" \"$f.reply\" && echo y || echo n; \
             else echo n; fi; ",
            sh(file),
            sh(answer)
        ));
    }
    match backend.run_on_host(host, &script, b"", QUICK).await {
        Ok(out) => String::from_utf8_lossy(&out)
            .lines()
            .zip(replies)
            .filter(|(said, _)| *said == "y")
            .map(|(_, (file, _))| file.clone())
            .collect(),
        Err(e) => {
            tracing::warn!(target: "cohort::workers", host, "permission requests' answers did not reach their hooks: {e}");
            Vec::new()
        }
    }
}

/// The `count` payloads of the fetch script's output: for each file a line with
/// its length and its bytes, or a line `-` where it was taken by another process
/// (or too big).
fn split_framed(out: &[u8], count: usize) -> Vec<Option<Vec<u8>>> {
    let mut payloads = Vec::with_capacity(count);
    let mut rest = out;
    for _ in 0..count {
        let Some(end) = rest.iter().position(|&b| b == b'\n') else {
            break;
        };
        let head = String::from_utf8_lossy(&rest[..end]).trim().to_string();
        rest = &rest[end + 1..];
        match head.parse::<usize>() {
            Ok(n) if n <= rest.len() => {
                payloads.push(Some(rest[..n].to_vec()));
                rest = &rest[n..];
            }
            Ok(_) => break,
            Err(_) => payloads.push(None),
        }
    }
    payloads.resize(count, None);
    payloads
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
        let spawner = runtime.clone();
        runtime.spawn(async move {
            // One queue per host: a host slow to answer holds up only its own
            // notes, and a host's notes are taken in order, a batch at a time.
            let mut hosts: HashMap<String, mpsc::UnboundedSender<Pending>> = HashMap::new();
            loop {
                let note = match notes.recv().await {
                    Ok(note) => note,
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        tracing::warn!(target: "cohort::workers", "{n} notes from remote hosts were missed");
                        continue;
                    }
                    Err(broadcast::error::RecvError::Closed) => break,
                };
                let Some(host) = cohort_backends::hosts::split(note.pane.as_str()).0 else {
                    continue;
                };
                let Some(pending) = listener.check(&note) else {
                    continue;
                };
                let queue = hosts.entry(host.to_string()).or_insert_with(|| {
                    let (tx, rx) = mpsc::unbounded_channel();
                    spawner.spawn(take_from_host(listener.clone(), host.to_string(), rx));
                    tx
                });
                let _ = queue.send(pending);
            }
        });
    }
}

/// Takes `host`'s notes as they come, those waiting together.
async fn take_from_host(
    listener: Listener,
    host: String,
    mut rx: mpsc::UnboundedReceiver<Pending>,
) {
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        while batch.len() < BATCH_MAX {
            match rx.try_recv() {
                Ok(p) => batch.push(p),
                Err(_) => break,
            }
        }
        listener.take(&host, batch).await;
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
            format!("hook {id} k Stop /tmp/x/cohort/workers/{id}/event.a/sub"),
            format!("hook {id} k Stop /x/../cohort/workers/{id}/event.a"),
            format!("hook {id} k Stop /x/cohort/workers/{id}/event."),
            format!("hook {id} k Stop /x/cohort/workers/{id}/settings.json"),
            format!("hook {id}  Stop /x/cohort/workers/{id}/event.a"),
            format!("hook {id} k St-op inline event.a {{}}"),
            format!("hook {id}  Stop inline event.a {{}}"),
        ] {
            assert_eq!(HookNote::parse(&bad), None, "{bad}");
        }
        let small = HookNote::parse(&format!(
            "hook {id} k Stop inline event.Ab12Cd {{\"a\": \"b c\"}}"
        ))
        .expect("an event in the note");
        assert_eq!(small.inline.as_deref(), Some("{\"a\": \"b c\"}"));
        assert_eq!(small.file, "event.Ab12Cd");
        assert_eq!(
            HookNote::parse(&format!("hook {id} k Stop inline ../x {{}}")),
            None
        );
    }

    #[test]
    fn fetched_events_are_split_by_their_lengths_and_taken_ones_skipped() {
        let out = b"5\nhello-\n3\n\n\nx";
        let got = split_framed(out, 3);
        assert_eq!(
            got,
            vec![Some(b"hello".to_vec()), None, Some(b"\n\nx".to_vec())]
        );
        // Cut short: what is missing is missing, never misread.
        assert_eq!(split_framed(b"9\nabc", 2), vec![None, None]);
        assert_eq!(split_framed(b"", 1), vec![None]);
    }

    #[test]
    fn an_event_in_a_note_is_taken_by_one_process_only() {
        let dir = tempfile::tempdir().unwrap();
        assert!(take_inline(dir.path(), "w-1", "event.aaaaaa"));
        assert!(!take_inline(dir.path(), "w-1", "event.aaaaaa"));
        assert!(take_inline(dir.path(), "w-1", "event.bbbbbb"));
        assert!(take_inline(dir.path(), "w-2", "event.aaaaaa"));
    }

    /// Runs the hook script for `event` with `input` in a directory of its own, with
    /// a stand-in `tmux` naming a plain file as the lobby's tty and a stand-in
    /// `sleep` that only counts: what it printed, what it wrote to the "tty", how
    /// many times it slept, and the worker's directory.
    fn run_hook(
        event: &str,
        input: &str,
        policy: bool,
    ) -> (String, String, usize, tempfile::TempDir) {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let id = "0b6c1f8e-2f6d-4f55-9a43-1c9e4c1d2a77";
        let own = dir.path().join(id);
        std::fs::create_dir_all(&own).unwrap();
        if policy {
            std::fs::write(own.join("policy"), "").unwrap();
        }
        let script = dir.path().join("hook.sh");
        std::fs::write(&script, HOOK_SCRIPT).unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let tty = dir.path().join("tty");
        std::fs::write(&tty, "").unwrap();
        let stub = bin.join("tmux");
        std::fs::write(&stub, format!("#!/bin/sh\necho {}\n", tty.display())).unwrap();
        let slept = dir.path().join("slept");
        let sleep = bin.join("sleep");
        std::fs::write(
            &sleep,
            format!("#!/bin/sh\necho \"$1\" >> {}\n", slept.display()),
        )
        .unwrap();
        for program in [&stub, &sleep] {
            std::process::Command::new("chmod")
                .arg("+x")
                .arg(program)
                .status()
                .unwrap();
        }
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut child = std::process::Command::new("sh")
            .arg(&script)
            .arg(event)
            .env("PATH", path)
            .env("TMUX", "/tmp/x,1,0")
            .env("COHORT_WORKER_ID", id)
            .env("COHORT_HOOK_KEY", "abc123")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let written = std::fs::read_to_string(&tty).unwrap();
        let sleeps = std::fs::read_to_string(&slept)
            .unwrap_or_default()
            .lines()
            .count();
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            written,
            sleeps,
            dir,
        )
    }

    #[test]
    fn a_small_event_goes_in_its_note_in_one_piece_and_leaves_no_file() {
        let (printed, note, _, dir) = run_hook("Stop", "{\"a\":\n \"b\"}\n", false);
        assert_eq!(printed, "");
        let text = note
            .strip_prefix("\u{1b}]1337;Custom=id=")
            .and_then(|n| n.strip_suffix('\u{7}'))
            .expect("one control sequence");
        let parsed = HookNote::parse(text.strip_prefix("cohort-note:").unwrap()).unwrap();
        assert_eq!(parsed.event, "Stop");
        assert_eq!(parsed.inline.as_deref(), Some("{\"a\": \"b\"}"));
        let own = dir.path().join("0b6c1f8e-2f6d-4f55-9a43-1c9e4c1d2a77");
        assert_eq!(std::fs::read_dir(own).unwrap().count(), 0, "a file left");
    }

    #[test]
    fn a_permission_request_nobody_hears_is_given_up_within_seconds() {
        let (printed, note, sleeps, dir) =
            run_hook("PermissionRequest", "{\"tool_name\":\"Bash\"}", true);
        assert_eq!(printed, "", "no answer came: the agent asks on its dialog");
        assert!(note.contains("PermissionRequest /"), "{note}");
        // The probe of a tenth of a second, then two seconds of ticks: its event's
        // file untaken, it stops waiting there (seven seconds would be 70 ticks).
        assert_eq!(sleeps, 1 + 20, "ticks slept");
        // The hook's claim stays: an answer coming later is not written.
        let own = dir.path().join("0b6c1f8e-2f6d-4f55-9a43-1c9e4c1d2a77");
        let names: Vec<String> = std::fs::read_dir(own)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().any(|n| n.ends_with(".claim")), "{names:?}");
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
