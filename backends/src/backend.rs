//! The [`TerminalBackend`] trait: what cohort needs from a terminal program.
//!
//! Required methods are the primitives every terminal has (create, split, close,
//! list, type, read, events, state). Decorations that only some terminals have are
//! provided methods that answer [`BackendError::Unsupported`] unless a backend
//! overrides them, and [`Capabilities`] says up front which ones work, so callers
//! never have to probe.

use async_trait::async_trait;

use crate::error::{BackendError, Result};
use crate::event::EventStream;
use crate::keys::{Guarded, Key, Keystrokes};
use crate::types::{
    Appearance, AttachHint, BackendKind, Capabilities, Identity, LineRange, Lines, PaneId,
    PaneInfo, PaneState, Screen, SpawnOptions, SplitOptions, WindowId, WindowInfo,
};

/// A terminal program cohort can drive: tmux, iTerm2, and whatever comes next.
///
/// Implementations are cheap to share (`Arc<dyn TerminalBackend>`) and safe to call
/// from many tasks at once.
#[async_trait]
pub trait TerminalBackend: Send + Sync + 'static {
    /// Which implementation this is.
    fn kind(&self) -> BackendKind;

    /// What this backend can do beyond the required primitives.
    fn capabilities(&self) -> Capabilities;

    /// How a human gets to this pane (the exact command, or what to click).
    fn attach_hint(&self, pane: &PaneId) -> AttachHint;

    /// Opens a new window/tab running a shell with cohort's shell integration (or the
    /// given command), and returns its single pane.
    async fn spawn(&self, options: SpawnOptions) -> Result<PaneInfo>;

    /// Splits `pane`, returning the new pane.
    async fn split(&self, pane: &PaneId, options: SplitOptions) -> Result<PaneInfo>;

    /// Closes a pane (its window/tab closes with its last pane).
    async fn close(&self, pane: &PaneId) -> Result<()>;

    /// Every pane this backend manages.
    async fn list_panes(&self) -> Result<Vec<PaneInfo>>;

    /// Every pane, when the terminal's server runs and this backend is connected to
    /// it; `Ok(None)` otherwise. For a watcher that must not start a server by
    /// looking (cohort's tmux server ends with its last session). Provided: the
    /// ordinary listing.
    async fn list_panes_if_running(&self) -> Result<Option<Vec<PaneInfo>>> {
        self.list_panes().await.map(Some)
    }

    /// Every window/tab with its split tree.
    async fn list_windows(&self) -> Result<Vec<WindowInfo>>;

    /// Types `text` literally (no key names are interpreted; control characters are
    /// sent as bytes). Long text is chunked; every chunk is confirmed.
    async fn send_text(&self, pane: &PaneId, text: &str) -> Result<()>;

    /// Presses named keys in order.
    async fn send_keys(&self, pane: &PaneId, keys: &[Key]) -> Result<()>;

    /// Types text and presses keys in the order given, as one input: what
    /// [`Self::send_text`] and [`Self::send_keys`] would do one after the other, for
    /// when nothing has to be seen between the parts (a line for a shell at its
    /// prompt). A backend that can sends it in one round trip. An error may come after
    /// a first part went in.
    async fn send_input(&self, pane: &PaneId, input: &[Keystrokes]) -> Result<()> {
        for part in input {
            match part {
                Keystrokes::Text(text) => self.send_text(pane, text).await?,
                Keystrokes::Keys(keys) => self.send_keys(pane, keys).await?,
            }
        }
        Ok(())
    }

    /// Types `input` into `pane` alone only if, when the terminal comes to it, the pane
    /// is alive, takes input, is in no mode (copy mode would take the keys) and, with
    /// `shell`, its foreground program has that name: the check and the keys in one
    /// round trip, for a caller that presumes the pane's state and would otherwise ask
    /// first. [`Guarded::Refused`], [`Guarded::Late`] and [`Guarded::Unsupported`]
    /// typed nothing.
    /// Default: unsupported.
    async fn send_input_guarded(
        &self,
        pane: &PaneId,
        shell: Option<&str>,
        input: &[Keystrokes],
    ) -> Result<Guarded> {
        let _ = (pane, shell, input);
        Ok(Guarded::Unsupported)
    }

    /// Pastes `text` as one paste: wrapped in bracketed-paste codes when the program
    /// asked for them, so a shell shows it whole and runs nothing until Enter.
    async fn paste(&self, pane: &PaneId, text: &str) -> Result<()>;

    /// Reads lines by absolute position (scrollback, then screen).
    async fn read_lines(&self, pane: &PaneId, range: LineRange) -> Result<Lines>;

    /// Reads the rendered screen (the alternate screen when a TUI is showing).
    async fn read_screen(&self, pane: &PaneId) -> Result<Screen>;

    /// Reads the rendered screen with its colours and attributes: each row carries
    /// SGR escape sequences (`ESC [ … m`) where its style changes, as a terminal would
    /// draw it. Backends that cannot tell styles give the plain screen, which is the
    /// same text without colours.
    async fn read_screen_styled(&self, pane: &PaneId) -> Result<Screen> {
        self.read_screen(pane).await
    }

    /// Starts receiving events for every pane from now on.
    fn subscribe(&self) -> EventStream;

    /// The hub its events are delivered on: a backend beside it (a remote host's
    /// server, [`crate::hosts`]) delivers its own there too, so one subscription sees
    /// them all in each server's order.
    fn event_hub(&self) -> std::sync::Arc<crate::event::EventHub>;

    /// Live state of a pane.
    async fn pane_state(&self, pane: &PaneId) -> Result<PaneState>;

    /// A barrier in the event stream: once every event the terminal sent about `pane`
    /// before this call has been emitted, emits [`crate::BackendEvent::Synced`] with a
    /// new token and returns the token. A subscriber that has seen the token has seen
    /// them all: a process that takes a pane's input right after another process's
    /// command ended has that command's end before it types.
    async fn sync(&self, pane: &PaneId) -> Result<u64>;

    /// Whether [`TerminalBackend::list_panes`] answers for `pane`, connecting what it
    /// needs when it can: a backend that routes between hosts lists a host's panes
    /// only once it reaches the host. A pane that is not listed where the listing
    /// does not answer for it is not gone, only out of reach.
    async fn reach(&self, _pane: &PaneId) -> bool {
        true
    }

    /// The kernel's facts about `pane`'s processes where this machine cannot read them
    /// itself (a pane on a remote host): one snapshot of the far side's `/proc`.
    /// `Ok(None)` where the local kernel answers ([`Capabilities::foreground_process`])
    /// or nothing can.
    ///
    /// [`Capabilities::foreground_process`]: crate::Capabilities::foreground_process
    async fn process_snapshot(
        &self,
        _pane: &PaneId,
    ) -> Result<Option<crate::remote_procs::ProcSnapshot>> {
        Ok(None)
    }

    /// Runs `script` (a POSIX shell line) on the remote host `host`, with `input` on
    /// its standard input, through the connection the host's panes use; its output,
    /// once it ended within `limit`. For what lives on that host besides its panes:
    /// files an agent there reads, messages its programs leave. An error names the
    /// host and what ssh or the script said; a backend without remote hosts cannot.
    async fn run_on_host(
        &self,
        _host: &str,
        _script: &str,
        _input: &[u8],
        _limit: std::time::Duration,
    ) -> Result<Vec<u8>> {
        Err(BackendError::Unsupported {
            backend: self.kind().name(),
            what: "run commands on a remote host",
        })
    }

    /// Stamps cohort's identity on the pane itself, so another cohort process (or this
    /// one after a restart) can find it with [`TerminalBackend::list_panes`].
    async fn stamp_identity(&self, pane: &PaneId, identity: &Identity) -> Result<()>;

    /// Stamps what a server learned of the pane's marks, so that one adopting the pane
    /// later starts from there: the mark anchor ([`Identity::anchor`]) moved to
    /// `anchor`, the last token verified, so it takes no token already spent; and
    /// that the shell announces command starts ([`Identity::announces_start`]). A no-op
    /// for a backend that keeps neither.
    async fn stamp_mark_state(
        &self,
        _pane: &PaneId,
        _anchor: Option<&str>,
        _announces_start: bool,
    ) -> Result<()> {
        Ok(())
    }

    /// Stamps on the pane the file a recording of it goes to (`None` once it ends), so
    /// every cohort process can say it is being recorded. A no-op for a backend that
    /// keeps no such stamp.
    async fn stamp_recording(&self, _pane: &PaneId, _path: Option<&str>) -> Result<()> {
        Ok(())
    }

    /// Raises `message` before the people watching `pane`: in their terminal's own
    /// notifications where it shows them (OSC 9, which iTerm2, kitty, WezTerm and
    /// Ghostty turn into a desktop notification) and in sight (tmux: a message on
    /// each attached client's status line and a bell; iTerm2: the app asks for
    /// attention). `message` is shown as text, never run or expanded. Provided:
    /// Unsupported.
    async fn alert(&self, _pane: &PaneId, _message: &str) -> Result<()> {
        Err(BackendError::Unsupported {
            backend: self.kind().name(),
            what: "raise an alert",
        })
    }

    /// Shows `line` (the state of the pane's team, `web ● 2 working · 1 needs
    /// approval`) where a human watching the pane sees it, or clears it (`None`):
    /// tmux's status line shows the active pane's line (a `@cohort_status` pane
    /// option in cohort's `status-right`); iTerm2 keeps it in the session variable
    /// `user.cohortStatus`, which cohort's own status-bar component ("cohort team",
    /// registered when the backend connects) shows.
    async fn set_status_line(&self, _pane: &PaneId, _line: Option<&str>) -> Result<()> {
        Err(BackendError::Unsupported {
            backend: self.kind().name(),
            what: "show a status line",
        })
    }

    /// The broadcast groups the terminal has: what a person types into one member
    /// reaches the others. Each group lies in one window. Provided: none.
    async fn broadcast_groups(&self) -> Result<Vec<Vec<PaneId>>> {
        Ok(Vec::new())
    }

    /// Makes `groups` the terminal's broadcast groups, each of two panes or more in
    /// one window, no pane in two (iTerm2: its broadcast domains; tmux:
    /// `synchronize-panes` on the members). Keys cohort types are never broadcast:
    /// every typing method reaches the pane it names and no other. Provided:
    /// Unsupported.
    async fn set_broadcast_groups(&self, _groups: &[Vec<PaneId>]) -> Result<()> {
        Err(BackendError::Unsupported {
            backend: self.kind().name(),
            what: "broadcast input",
        })
    }

    /// Whether `pane` is in a broadcast group, asked of the pane itself where the
    /// terminal can tell that way (one request instead of every group listed).
    /// Provided: from [`TerminalBackend::broadcast_groups`].
    async fn in_broadcast_group(&self, pane: &PaneId) -> Result<bool> {
        Ok(self
            .broadcast_groups()
            .await?
            .iter()
            .any(|group| group.contains(pane)))
    }

    /// Hides the pane from the person's view (`hidden`), or shows it again: hidden,
    /// it keeps running and is read, typed into and waited on as before, and listed
    /// with [`crate::PaneInfo::hidden`]. iTerm2 buries the session; tmux gives it a
    /// window of its own, left out of the status line's window list. Shown again, it
    /// goes back where it was when that is still there (its tab or window). Provided:
    /// Unsupported.
    async fn set_hidden(&self, _pane: &PaneId, _hidden: bool) -> Result<()> {
        Err(BackendError::Unsupported {
            backend: self.kind().name(),
            what: "hide a pane",
        })
    }

    /// Makes `profiles` the teams' profiles in the terminal, checked by reading them
    /// back: iTerm2 keeps them as Dynamic Profiles (one JSON file cohort owns in its
    /// DynamicProfiles folder), and a pane spawned with [`SpawnOptions::profile`]
    /// starts from its team's. Provided: Unsupported (see
    /// [`Capabilities::team_profiles`]).
    async fn set_team_profiles(&self, _profiles: &[crate::types::TeamProfile]) -> Result<()> {
        Err(BackendError::Unsupported {
            backend: self.kind().name(),
            what: "keep team profiles",
        })
    }

    /// Saves `windows` as the terminal's own arrangement `name`, replacing one of
    /// that name, for a person to restore from the terminal's menu; answers the
    /// names saved under (iTerm2 keeps whole iTerm2 windows, one per name: `name`,
    /// `name (2)`, …, with any other tabs they hold). Provided: Unsupported (see
    /// [`Capabilities::native_arrangements`]).
    async fn save_native_arrangement(
        &self,
        _windows: &[WindowId],
        _name: &str,
    ) -> Result<Vec<String>> {
        Err(BackendError::Unsupported {
            backend: self.kind().name(),
            what: "save a window as its own arrangement",
        })
    }

    /// The names of the terminal's own saved arrangements, cohort's and the
    /// person's. Provided: Unsupported.
    async fn native_arrangements(&self) -> Result<Vec<String>> {
        Err(BackendError::Unsupported {
            backend: self.kind().name(),
            what: "list its own arrangements",
        })
    }

    /// Sets the pane's title (what `#{pane_title}` or the tab shows).
    async fn set_title(&self, pane: &PaneId, title: &str) -> Result<()>;

    /// Leaves copy/scroll mode so typed keys reach the program. A no-op when the pane
    /// is not in such a mode or the backend has none.
    async fn cancel_copy_mode(&self, _pane: &PaneId) -> Result<()> {
        Ok(())
    }

    /// Sets badge, tab colour, background, cursor colour; see [`Capabilities`] for
    /// which apply. `reset` first undoes what cohort set; `active` makes the pane the
    /// active one of its window.
    async fn set_appearance(&self, pane: &PaneId, appearance: &Appearance) -> Result<()> {
        if appearance.badge.is_some()
            || appearance.tab_color.is_some()
            || appearance.background.is_some()
            || appearance.cursor_color.is_some()
        {
            return Err(BackendError::Unsupported {
                backend: self.kind().name(),
                what: "set a badge, tab, background or cursor colour",
            });
        }
        if let Some(title) = &appearance.title {
            self.set_title(pane, title).await?;
        }
        if appearance.active {
            self.focus(pane).await?;
        }
        Ok(())
    }

    /// The badge and colours cohort set on the pane (title, `active` and `reset`
    /// are not read back).
    async fn appearance(&self, _pane: &PaneId) -> Result<Appearance> {
        Err(BackendError::Unsupported {
            backend: self.kind().name(),
            what: "read a pane's badge and colours",
        })
    }

    /// Brings the pane to the front for a human.
    async fn focus(&self, _pane: &PaneId) -> Result<()> {
        Err(BackendError::Unsupported {
            backend: self.kind().name(),
            what: "focus a pane",
        })
    }
}
