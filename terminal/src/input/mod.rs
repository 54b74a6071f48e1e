//! The one way keystrokes reach a pane.
//!
//! Every key that cohort types — a `send`, a `run`, a `key`, a worker's prompt, the
//! answer to a dialog, closing an agent, the dashboard's input, a watcher's action, a
//! playbook's step — goes through an [`InputTurn`], which applies the rules once:
//!
//! 1. names: the caller's owner name is a valid name;
//! 2. the session's lock: a locked session takes input only from its holder, on the
//!    connection that took the lock ([`Caller`]);
//! 3. the input lease: an `flock` per pane, so two cohort processes never interleave
//!    their keystrokes (`lease`);
//! 4. the pane's state, asked once: a pane whose program exited (or whose shell is on
//!    its way out) takes nothing; copy mode is left only when the pane is in it;
//! 5. sanitising: escape sequences and paste markers are removed from text unless the
//!    caller asked for raw input;
//! 6. the tripwire: when Enter submits a line to a shell ([`Purpose::Command`]), the
//!    line is judged first — the text typed with it, and what earlier calls typed
//!    without pressing Enter.
//!
//! Nothing else in cohort calls the backend's text, key or paste methods (the
//! workspace's clippy configuration refuses it outside this module).

// This module is the one caller of the backend's typing methods (clippy.toml).
#![allow(clippy::disallowed_methods)]

mod lease;
mod settle;

use std::sync::Arc;
use std::time::{Duration, Instant};

use cohort_backends::{Guarded, Key, KeyCode, Keystrokes, PaneId, PaneState};
use tokio::sync::watch;

use crate::completion::{handed_mark_suffix, handover_line, handover_ready, mark_suffix, Started};
use crate::echo::Checkpoint;
use crate::names::{self, NameKind};
use crate::runtime::{PaneData, PaneRuntime};
use crate::{sanitize, tripwire, Terminal, TerminalError};

pub use lease::{lock, lock_or, lock_path, Lease};

/// How long to wait for the events a pane sent before a turn to arrive.
const SYNC_WAIT: Duration = Duration::from_secs(2);

/// How long a shell has to run the line that hands it a sentinel's nonce.
const HANDOVER_WAIT: Duration = Duration::from_secs(10);
pub use settle::{
    interrupt_missed, is_interrupt, is_sigint, settle, settle_after_echo, terminal_holder,
    until_command_ends, until_line_taken, TerminalHolder,
};

/// Who is calling: whose read cursor a read moves, and whose lock a keystroke may
/// pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// The connection (an MCP session, a gRPC peer, the dashboard, a watcher, the
    /// command line): reads of new output move its cursor, and a lock taken on it is
    /// held there only.
    pub connection: String,
    /// The name it acts as (an agent); a locked session takes input only from its
    /// holder.
    pub owner: Option<String>,
}

impl Caller {
    /// A caller on `connection`, acting as no one in particular.
    pub fn new(connection: impl Into<String>) -> Caller {
        Caller {
            connection: connection.into(),
            owner: None,
        }
    }

    /// The same caller acting as `owner`.
    pub fn as_owner(mut self, owner: Option<String>) -> Caller {
        self.owner = owner;
        self
    }
}

/// What the keys are for, which decides whether the tripwire judges a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// A line for the shell or the program reading the terminal (a REPL, a nested
    /// shell): what Enter submits is judged by the tripwire.
    Command,
    /// A prompt for an agent CLI's composer, or keys that answer its screen: the text
    /// is read by the agent, not run by a shell, so the tripwire does not judge it.
    Prompt,
}

/// How to send text.
#[derive(Clone, Debug)]
pub struct SendOptions {
    /// Press Enter after the text.
    pub enter: bool,
    /// Send the text exactly as given (no sanitising).
    pub raw: bool,
    /// Pass the tripwire.
    pub force: bool,
    /// Append the exit-status sentinel (the mark layer) with this nonce.
    pub mark: Option<String>,
}

impl Default for SendOptions {
    fn default() -> Self {
        SendOptions {
            enter: true,
            raw: false,
            force: false,
            mark: None,
        }
    }
}

/// What a send did.
#[derive(Clone, Debug)]
pub struct Sent {
    /// Where the command's output starts (when Enter was pressed).
    pub started: Option<Started>,
    /// Bytes typed.
    pub bytes: usize,
    /// Whether it went in as a bracketed paste.
    pub pasted: bool,
    /// Where the journal stood when typing began: a block of lines typed into a
    /// program (a REPL runs each line as it comes) has its output from here on.
    pub typed_from: u64,
    /// Typed into a program other than the pane's shell at its prompt.
    pub into_program: bool,
}

/// The most text one call types (1 MiB): more than any command line or answer, and
/// enough for a pasted file.
pub const TEXT_MAX: usize = 1 << 20;

/// How long a caller waits for another process's keystrokes into the same pane.
const LEASE_WAIT: Duration = Duration::from_secs(10);

/// A pane's input, held: the rules are checked, the lease is taken, the pane's state
/// is known. Keys go in through its methods; the lease goes when it drops.
#[derive(Debug)]
pub struct InputTurn {
    terminal: Terminal,
    pane: PaneId,
    runtime: Arc<PaneRuntime>,
    state: PaneState,
    session: Option<String>,
    purpose: Purpose,
    raw: bool,
    force: bool,
    /// The state was presumed from an earlier look and the process table, not asked:
    /// keys go in only under the backend's guard (see [`Terminal::presumed_state`]).
    presumed: bool,
    _lease: Lease,
}

impl Terminal {
    /// Takes `pane`'s input for `caller`: checks the owner's name and the session's
    /// lock, takes the pane's input lease (waiting up to 10 s for another process's
    /// keystrokes), asks the pane's state once (refused when its program exited) and
    /// leaves copy mode when the pane is in it.
    pub async fn input(
        &self,
        pane: &PaneId,
        caller: &Caller,
        purpose: Purpose,
    ) -> Result<InputTurn, TerminalError> {
        self.input_with(pane, caller, purpose, Presume::No).await
    }

    /// [`Terminal::input`]; with `presume`, the pane's state is presumed when it can be
    /// (see [`Terminal::presumed_state`]) instead of asked, once the lease is held and
    /// what came before is in (the turn then types only under the backend's guard).
    async fn input_with(
        &self,
        pane: &PaneId,
        caller: &Caller,
        purpose: Purpose,
        presume: Presume,
    ) -> Result<InputTurn, TerminalError> {
        names::check_opt(NameKind::Owner, caller.owner.as_deref())?;
        let session = self.check_lock(pane, caller).await?;
        let path = lock_path(&self.lock_dir, &self.server_key, pane.as_str());
        let lease = lock(path, LEASE_WAIT)
            .await
            .map_err(|e| TerminalError::Busy {
                pane: pane.clone(),
                reason: e.to_string(),
            })?;
        if lease.after_another_process() {
            self.take_in_what_came_before(pane).await;
        }
        let runtime = self.runtimes.get(pane);
        let presumed = match presume {
            Presume::No => None,
            Presume::AtPrompt => self.presumed_state(pane),
            Presume::Alive => self.presumed_alive(pane),
        };
        let is_presumed = presumed.is_some();
        let state = match presumed {
            Some(state) => state,
            None => {
                let state = self.backend.pane_state(pane).await?;
                runtime.lock().last_state = Some(state.clone());
                state
            }
        };
        // The shell's last mark said it is exiting: the pane closes in a moment, and
        // what is typed now would be lost. A pane still alive well after that mark
        // was not exiting (a program printed the mark): what the pane shows wins.
        let exiting = {
            let mut data = runtime.lock();
            if !state.dead
                && data
                    .exiting
                    .is_some_and(|(_, at)| at.elapsed() >= crate::runtime::EXIT_GRACE)
            {
                data.exiting = None;
            }
            data.exiting.map(|(status, _)| status)
        };
        if state.dead || exiting.is_some() {
            return Err(TerminalError::Exited {
                pane: pane.clone(),
                status: state.exit_status.or(exiting.flatten()),
            });
        }
        if state.copy_mode {
            self.backend.cancel_copy_mode(pane).await?;
        }
        Ok(InputTurn {
            terminal: self.clone(),
            pane: pane.clone(),
            runtime,
            state,
            session,
            purpose,
            raw: false,
            force: false,
            presumed: is_presumed,
            _lease: lease,
        })
    }

    /// The state `pane` is presumed in when keys that go to whatever program holds it
    /// are pressed without asking first: the state last asked, when nothing says the
    /// pane went (its shell's last mark was not its exit). The backend's guard checks
    /// the rest (alive, taking input, in no mode, not arriving late) when the keys
    /// arrive.
    fn presumed_alive(&self, pane: &PaneId) -> Option<PaneState> {
        let runtime = self.runtimes.get(pane);
        let data = runtime.lock();
        let mut state = data.last_state.clone()?;
        if data.unguarded || state.dead || data.exiting.is_some() {
            return None;
        }
        state.copy_mode = false;
        Some(state)
    }

    /// The state `pane` is presumed in when a line is typed for its shell, without
    /// asking the terminal first: the state last asked, when the shell is at its prompt
    /// by what is known here without a round trip: the process table says the shell
    /// holds the terminal, and its marks say no command it started is running.
    /// Whatever it would take a question to know (copy mode, a program of the shell's
    /// name, on another machine the program holding the terminal and the line's
    /// expiry) the backend's guard checks when the keys arrive. `None` (ask first)
    /// when nothing was asked yet, or anything says otherwise.
    fn presumed_state(&self, pane: &PaneId) -> Option<PaneState> {
        let mut state = {
            let runtime = self.runtimes.get(pane);
            let data = runtime.lock();
            let state = data.last_state.clone()?;
            if data.unguarded || state.dead || data.exiting.is_some() || data.command_running() {
                return None;
            }
            state
        };
        let asked_at_shell = state.at_shell();
        state.foreground_command = state.shell_command.clone();
        // This machine's process table says who holds the terminal. For a pane whose
        // processes are another machine's (a remote host), the backend's guard checks
        // there the program holding it, and refuses a line that arrives late (a link
        // that went silent delivers what it held when it comes back, after the call
        // was given up).
        match state.shell_pid {
            Some(shell) => {
                let foreground = cohort_backends::process::foreground_pid(shell)?;
                if foreground != shell {
                    return None;
                }
                state.foreground_pid = Some(foreground);
            }
            // Not this machine's: the shell held the terminal when last asked (a
            // program then is asked about again, not refused by the guard each time).
            None if !asked_at_shell => return None,
            None => {}
        }
        state.copy_mode = false;
        state.alternate_screen = false;
        state.at_shell().then_some(state)
    }

    /// Waits until this process has taken in everything the pane sent before now. The
    /// lease came from another process, whose command may have ended a moment ago:
    /// that end, seen there, may still be on its way here, and would be taken for the
    /// end of what this turn types.
    async fn take_in_what_came_before(&self, pane: &PaneId) {
        match self.backend.sync(pane).await {
            Ok(token) => {
                if !self.runtimes.wait_synced(token, SYNC_WAIT).await {
                    tracing::warn!(target: "cohort::engine", pane = %pane, "events from the terminal are slow to arrive: typing without them");
                }
            }
            Err(e) => {
                tracing::debug!(target: "cohort::engine", pane = %pane, error = %e, "no barrier in the event stream")
            }
        }
    }

    /// Refuses when `pane`'s session is locked by someone other than `caller`;
    /// returns the session's persistent id when it is a cohort session.
    pub(crate) async fn check_lock(
        &self,
        pane: &PaneId,
        caller: &Caller,
    ) -> Result<Option<String>, TerminalError> {
        let (server, pane) = (self.server_key.clone(), pane.to_string());
        let found = self
            .db(move |r| match r.session_for_pane(&server, &pane)? {
                Some(session) => Ok(Some((r.lock_of(&session.id)?, session.id))),
                None => Ok(None),
            })
            .await?;
        let token = Some(caller.connection.as_str());
        match found {
            Some((Some(lock), _))
                if !caller
                    .owner
                    .as_deref()
                    .is_some_and(|o| lock.held_by(o, token)) =>
            {
                Err(TerminalError::Locked(lock))
            }
            Some((_, id)) => Ok(Some(id)),
            None => Ok(None),
        }
    }

    /// Types `text` and presses Enter, as cohort itself (no owner).
    pub async fn type_line(&self, pane: &PaneId, text: &str) -> Result<Sent, TerminalError> {
        self.send(pane, text, &SendOptions::default(), &Caller::new("cohort"))
            .await
    }

    /// The send path: text or bracketed paste, settling, Enter; every rule of
    /// [`InputTurn`] on the way.
    pub async fn send(
        &self,
        pane: &PaneId,
        text: &str,
        options: &SendOptions,
        caller: &Caller,
    ) -> Result<Sent, TerminalError> {
        self.type_text(pane, text, options, caller, false).await
    }

    /// [`Terminal::send`]; with `fresh_line`, a shell at its prompt first has its input
    /// line emptied (see [`clear_line_keys`]), so a command is not appended to keys
    /// typed before it.
    pub(crate) async fn type_text(
        &self,
        pane: &PaneId,
        text: &str,
        options: &SendOptions,
        caller: &Caller,
        fresh_line: bool,
    ) -> Result<Sent, TerminalError> {
        if text.len() > TEXT_MAX {
            return Err(TerminalError::InvalidArgument(format!(
                "the text is {} bytes; at most {} MiB is typed in one call: write long content to a file and run a command that reads it",
                text.len(),
                TEXT_MAX >> 20
            )));
        }
        let mut text = if options.raw {
            text.to_string()
        } else {
            sanitize::sanitize_input(text)
        };
        if options.enter {
            // Enter ends the last line: a final newline of the text is that Enter, and
            // the empty lines before it are the text's own (a REPL closes a block on one).
            if text.ends_with('\n') {
                text.pop();
                if text.ends_with('\r') {
                    text.pop();
                }
            }
        }
        if options.mark.is_some() && text.contains('\n') {
            return Err(TerminalError::InvalidArgument(
                "mark works with single-line commands: send the lines one at a time, or use until"
                    .into(),
            ));
        }
        let line = text;
        // Only a line that can go in whole is typed on a presumed state.
        let mut presume = if options.enter
            && options.mark.is_none()
            && !line.contains(['\n', '\t'])
            && line.len() <= 1024
        {
            Presume::AtPrompt
        } else {
            Presume::No
        };
        let mut refused = false;
        loop {
            let mut text = line.clone();
            let mut turn = self
                .input_with(pane, caller, Purpose::Command, presume)
                .await?;
            if refused && turn.at_shell() && !turn.state.copy_mode {
                // The guard refused a pane the state asked now shows at its shell and
                // in no mode: something that lasts (the guard cannot tell this shell
                // by its name, or the pane takes no input) would refuse it every time.
                // A line refused only for arriving late says nothing of the pane.
                let mut data = turn.runtime.lock();
                data.unguarded |= !std::mem::take(&mut data.guard_late);
            }
            turn.raw = true; // sanitised above, before the tripwire saw it
            turn.force = options.force;
            match self
                .type_line_in_turn(turn, &mut text, options, fresh_line)
                .await?
            {
                Some(sent) => return Ok(sent),
                // The pane was not as presumed, and nothing was typed: ask it.
                None => (presume, refused) = (Presume::No, true),
            }
        }
    }

    /// [`Terminal::type_text`] in a turn taken: `None` when the turn's state was
    /// presumed and the line could not go in as presumed (nothing was typed).
    async fn type_line_in_turn(
        &self,
        mut turn: InputTurn,
        text: &mut String,
        options: &SendOptions,
        fresh_line: bool,
    ) -> Result<Option<Sent>, TerminalError> {
        let into_program = !turn.at_shell();
        if options.enter && into_program && ends_inside_a_block(text) {
            // A REPL keeps an indented block open until an empty line: submit it as
            // the REPL needs, or it waits at `...` for ever.
            text.push('\n');
        }
        let cleared = fresh_line && turn.at_shell() && !turn.runtime.lock().command_running();
        let clear_keys = cleared.then(|| {
            let cooked = turn
                .state
                .foreground_pid
                .and_then(cohort_backends::process::terminal_in_line_mode);
            clear_line_keys(cooked)
        });
        if options.enter {
            // Judged before anything is typed: a refused line never reaches the pane.
            let pending = if cleared {
                String::new()
            } else {
                turn.pending_line()
            };
            turn.judge(&format!("{pending}{text}"))?;
        }
        // A line for the shell at its prompt: nothing has to be seen between emptying
        // the line, typing and Enter, so they go in together.
        let whole_line = options.enter
            && turn.at_shell()
            && options.mark.is_none()
            && !text.contains(['\n', '\t'])
            && text.len() <= 1024;
        if whole_line {
            let command = turn
                .runtime
                .record_command(text, turn.state.foreground_pid, None, false);
            let before_typing = turn.journal_len();
            let at = Instant::now();
            match turn
                .submit_line(clear_keys.as_deref().unwrap_or_default(), text)
                .await
            {
                Ok(true) => {}
                Ok(false) => {
                    turn.runtime.forget_command(&command);
                    return Ok(None);
                }
                Err(e) => {
                    turn.runtime.forget_command(&command);
                    return Err(e);
                }
            }
            self.note_last_command(&turn, text);
            return Ok(Some(Sent {
                started: Some(Started::after(&command, at)),
                bytes: text.len(),
                pasted: false,
                typed_from: before_typing,
                into_program: false,
            }));
        }
        if turn.presumed {
            // Anything but a whole line for the shell is typed on the pane's state
            // as asked.
            return Ok(None);
        }
        if let Some(keys) = &clear_keys {
            turn.keys(keys).await?;
            turn.runtime.lock().pending_line.clear();
        }
        match &options.mark {
            // The shell that runs the line gets the nonce with echo off first: the
            // line names it by variable, and it is never on screen.
            Some(nonce) if options.enter => {
                turn.hand_over_nonce(nonce).await?;
                text.push_str(&handed_mark_suffix());
            }
            Some(nonce) => text.push_str(&mark_suffix(nonce)),
            None => {}
        }
        if text.len() > 1024 {
            // Text typed before the program reads the terminal sits in the kernel's line
            // buffer, which keeps 4095 characters and drops the rest.
            self.wait_reading(&turn.pane, Duration::from_secs(3)).await;
        }
        // Lines go as one paste, and so does a tab: typed, it would ask the shell to
        // complete a word, and a different command would run.
        let pasted = text.contains(['\n', '\t']);
        let before_typing = turn.journal_len();
        if pasted {
            turn.paste(text).await?;
        } else {
            turn.text(text).await?;
        }
        let mut started = None;
        if options.enter {
            let state = turn.state.clone();
            let at_shell = turn.at_shell();
            if !at_shell || pasted {
                // A program drawing what was typed (a REPL, a TUI, a paste) must
                // finish before Enter, or a TUI takes Enter as a newline in its input.
                // Full-screen programs and those that said they redraw in frames (agent
                // TUIs, see `Terminal::redraws_in_frames`) get a longer quiet window
                // than line-mode programs.
                let heavy =
                    state.alternate_screen || self.draws_in_frames(&state.foreground_command);
                let quiet = if heavy {
                    Duration::from_millis(100)
                } else {
                    Duration::from_millis(15)
                };
                settle_after_echo(
                    &turn.runtime,
                    before_typing,
                    quiet,
                    Duration::from_millis(1500),
                )
                .await;
            }
            let command = turn.runtime.record_command(
                text,
                state.foreground_pid,
                options.mark.clone(),
                !at_shell,
            );
            let at = Instant::now();
            // The line was judged above, with the mark's suffix still off it.
            turn.press_enter().await?;
            started = Some(Started::after(&command, at));
            self.note_last_command(&turn, text);
        }
        Ok(Some(Sent {
            started,
            bytes: text.len(),
            pasted,
            typed_from: before_typing,
            into_program,
        }))
    }

    /// Records `text` as the session's last command, in the background after Enter,
    /// so the bookkeeping never delays the keystroke or the verdict.
    fn note_last_command(&self, turn: &InputTurn, text: &str) {
        if let Some(id) = turn.session.clone() {
            let end = crate::runtime::char_floor(text, 4096);
            let (terminal, command) = (self.clone(), text[..end].to_string());
            tokio::spawn(async move {
                let _ = terminal
                    .db(move |r| r.set_last_command(&id, &command))
                    .await;
            });
        }
    }

    /// Says that these programs redraw their input in frames (an agent CLI's
    /// composer): text typed into them is given a longer quiet window before Enter, or
    /// Enter lands as a newline inside the input box.
    pub fn redraws_in_frames(&self, programs: &[&str]) {
        let mut framed = self
            .framed_programs
            .write()
            .unwrap_or_else(|e| e.into_inner());
        framed.extend(programs.iter().map(|p| p.to_string()));
    }

    fn draws_in_frames(&self, program: &str) -> bool {
        self.framed_programs
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .contains(program)
    }

    /// Presses named keys for `caller`. An Enter among them submits the line the
    /// shell holds, which the tripwire judges first unless `force`.
    pub async fn keys(
        &self,
        pane: &PaneId,
        keys: &[Key],
        caller: &Caller,
        force: bool,
    ) -> Result<(), TerminalError> {
        // Keys that are one control byte each (C-c, Enter, C-d…) go in under the
        // backend's guard without asking the pane first; refused, they are pressed
        // again on the state asked.
        let pasteable =
            cohort_backends::keys::pasteable(&[Keystrokes::Keys(keys.to_vec())]).is_some();
        let mut presume = if pasteable {
            Presume::Alive
        } else {
            Presume::No
        };
        let interrupts = keys.iter().any(is_sigint);
        if interrupts {
            // A line entered a moment ago that the shell has not taken yet: `C-c` now
            // would reach the shell, which drops the line or runs it on regardless,
            // where the caller means to stop the command it started.
            until_line_taken(&self.runtimes.get(pane), LINE_TAKE_WAIT).await;
        }
        let (mut turn, running, holder) = loop {
            let mut turn = self
                .input_with(pane, caller, Purpose::Command, presume)
                .await?;
            turn.force = force;
            let running = turn.runtime.lock().command_running();
            // What the interrupt reaches: if not the command (the shell between
            // starting it and handing it the terminal), it is pressed again below.
            // With the command it was pressed for: the start the shell announced.
            let holder = match interrupts && running {
                true => {
                    let (last, started) = {
                        let data = turn.runtime.lock();
                        (data.last_state.clone(), data.last_command_start())
                    };
                    terminal_holder(pane, last.as_ref()).map(|h| (h, started))
                }
                false => None,
            };
            if turn.press(keys).await? {
                break (turn, running, holder);
            }
            presume = Presume::No;
        };
        if running && keys.iter().any(is_interrupt) {
            // The command takes a moment to stop, and a key typed before it has (the
            // next command's first letter) can still be read by it: hold the pane's
            // input until the shell reports the end, briefly.
            until_command_ends(&turn.runtime, INTERRUPT_WAIT).await;
            // Only for the command it was pressed for: one the keys after it started
            // (`C-c Up Enter` runs the last command again) is not interrupted.
            let missed = match &holder {
                Some((holder, started)) if still_running(&turn.runtime, *started) => {
                    interrupt_missed(self.backend.as_ref(), pane, holder).await
                }
                _ => false,
            };
            if missed {
                // Taken by the shell in the instant before the command had the
                // terminal: pressed once more, for the command. The caller's keys
                // went in; a failure now is only logged.
                tracing::info!(target: "cohort::engine", %pane, "C-c reached the shell, not the command it was starting: pressed again");
                let again = [Key {
                    ctrl: true,
                    ..Key::plain(KeyCode::Char('c'))
                }];
                match turn.press(&again).await {
                    Ok(true) => until_command_ends(&turn.runtime, INTERRUPT_WAIT).await,
                    Ok(false) => {}
                    Err(e) => {
                        tracing::warn!(target: "cohort::engine", %pane, error = %e, "could not press C-c again")
                    }
                }
            }
        }
        Ok(())
    }
}

/// Whether the command the shell announced at `started` still runs: no command
/// started since, none ended.
fn still_running(runtime: &PaneRuntime, started: Option<u64>) -> bool {
    let data = runtime.lock();
    data.command_running() && data.last_command_start() == started
}

/// How long an interrupt waits for a line entered a moment ago to be taken by the
/// shell (see [`until_line_taken`]).
const LINE_TAKE_WAIT: Duration = Duration::from_millis(500);

/// How long the pane's input is held after an interrupt, for the command to stop.
const INTERRUPT_WAIT: Duration = Duration::from_millis(500);

impl InputTurn {
    /// The pane.
    pub fn pane(&self) -> &PaneId {
        &self.pane
    }

    /// The pane's state when the turn was taken.
    pub fn state(&self) -> &PaneState {
        &self.state
    }

    /// Whether the pane's own shell reads what is typed. Where the backend knows no
    /// pids (a remote host), the foreground is told by name, and a nested shell of
    /// the same name (`bash` in `bash`) would pass for the pane's own: there the
    /// shell's marks decide, a command it started and has not ended holds the
    /// terminal.
    fn at_shell(&self) -> bool {
        let pids_known = self.state.foreground_pid.is_some();
        self.state.at_shell() && (pids_known || !self.runtime.lock().command_running())
    }

    /// Sends text exactly as given, without sanitising it.
    pub fn raw(mut self, raw: bool) -> Self {
        self.raw = raw;
        self
    }

    /// Lets Enter submit a line the tripwire would refuse.
    pub fn force(mut self, force: bool) -> Self {
        self.force = force;
        self
    }

    /// How much output the pane has produced so far (a journal offset).
    pub fn journal_len(&self) -> u64 {
        self.runtime.lock().journal.len()
    }

    /// A receiver woken by every change of the pane (output, marks, exits).
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.runtime.watch()
    }

    /// Waits until the pane has produced no output for `quiet` (at most `limit`).
    pub async fn settle(&self, quiet: Duration, limit: Duration) {
        settle(&self.runtime, quiet, limit).await;
    }

    /// Waits until the pane has echoed something after journal offset `before` and
    /// then stayed quiet for `quiet`, at most `limit` in all.
    pub async fn settle_after_echo(&self, before: u64, quiet: Duration, limit: Duration) {
        settle_after_echo(&self.runtime, before, quiet, limit).await;
    }

    /// Types `text` as keystrokes (sanitised unless [`InputTurn::raw`]).
    pub async fn text(&mut self, text: &str) -> Result<(), TerminalError> {
        let text = self.clean(text);
        if text.is_empty() {
            return Ok(());
        }
        let undo = self.note_typed(&text);
        let sent = self.terminal.backend.send_text(&self.pane, &text).await;
        self.undo_unless_sent(sent, undo)
    }

    /// Pastes `text` as one bracketed paste (sanitised unless [`InputTurn::raw`]).
    pub async fn paste(&mut self, text: &str) -> Result<(), TerminalError> {
        let text = self.clean(text);
        if text.is_empty() {
            return Ok(());
        }
        let undo = self.note_typed(&text);
        let sent = self.terminal.backend.paste(&self.pane, &text).await;
        self.undo_unless_sent(sent, undo)
    }

    /// Presses `keys`. An Enter among them submits the line typed so far, which the
    /// tripwire judges first (for [`Purpose::Command`], unless forced); keys that
    /// drop the line (`C-c`, `C-u`) forget it.
    pub async fn keys(&mut self, keys: &[Key]) -> Result<(), TerminalError> {
        if self.presumed {
            return Err(TerminalError::InvalidArgument(
                "internal: keys pressed in a turn whose state was presumed".into(),
            ));
        }
        self.press(keys).await.map(|_| ())
    }

    /// [`Self::keys`]; in a turn whose state was presumed, under the backend's guard:
    /// `false` when the pane was not as presumed and nothing was pressed.
    async fn press(&mut self, keys: &[Key]) -> Result<bool, TerminalError> {
        if keys.is_empty() {
            return Ok(true);
        }
        let mut line = self.pending_line();
        // What the keys do to the line, for its echo (see `crate::echo`): characters
        // typed, and whether a key ended it.
        let mut typed = String::new();
        let mut ends = false;
        for key in keys {
            match line_effect(key) {
                LineEffect::Submit => {
                    self.judge(&line)?;
                    line.clear();
                    ends = true;
                }
                LineEffect::Drop => {
                    line.clear();
                    ends = true;
                }
                LineEffect::Erase => {
                    line.pop();
                }
                LineEffect::Type(c) => {
                    line.push(c);
                    if !ends {
                        typed.push(c);
                    }
                }
                LineEffect::None => {}
            }
        }
        let undo = {
            let mut data = self.runtime.lock();
            let undo = Undo::of(&data);
            let at = data.journal.len();
            data.typed.typed(at, &typed);
            if ends {
                data.typed.ended(at);
            }
            data.pending_line = line;
            undo
        };
        let pressed = if self.presumed {
            let input = [Keystrokes::Keys(keys.to_vec())];
            self.send_guarded(None, &input, undo).await
        } else {
            let sent = self.terminal.backend.send_keys(&self.pane, keys).await;
            self.undo_unless_sent(sent, undo).map(|()| true)
        };
        if matches!(pressed, Ok(true)) && keys.iter().any(is_sigint) {
            // For the verdict of the line typed last, when the shell had not taken it
            // (no mark since its Enter): the interrupt dropped it.
            let mut data = self.runtime.lock();
            let taken_after = data.marks.last().map(|m| m.offset);
            if let Some(last) = data.commands.last_mut() {
                last.interrupted |= taken_after.is_none_or(|at| at <= last.offset);
            }
        }
        pressed
    }

    /// Empties the line with `clear` (none: it is not emptied), types `text` and
    /// presses Enter, in one input (one round trip where the backend can): for a
    /// shell at its prompt, where nothing has to be seen between them. The line is
    /// judged by the caller first, as [`Self::press_enter`]'s is. In a turn whose
    /// state was presumed, the backend types it only if the pane is as presumed;
    /// `false`: it was not, and nothing was typed.
    async fn submit_line(&mut self, clear: &[Key], text: &str) -> Result<bool, TerminalError> {
        let text = self.clean(text);
        let undo = {
            let mut data = self.runtime.lock();
            let undo = Undo::of(&data);
            let at = data.journal.len();
            // Noted before it is sent, as `note_typed` and `press_enter` do: the echo
            // can be read before the send returns. The line ends where typing began:
            // when in doubt, a line is output.
            data.typed.typed(at, &text);
            data.typed.ended(at);
            data.pending_line.clear();
            undo
        };
        let mut input = Vec::with_capacity(3);
        if !clear.is_empty() {
            input.push(Keystrokes::Keys(clear.to_vec()));
        }
        if !text.is_empty() {
            input.push(Keystrokes::Text(text));
        }
        input.push(Keystrokes::Keys(vec![Key::ENTER]));
        if self.presumed {
            let shell = self.state.shell_command.clone();
            return self.send_guarded(Some(&shell), &input, undo).await;
        }
        let sent = self.terminal.backend.send_input(&self.pane, &input).await;
        self.undo_unless_sent(sent, undo).map(|()| true)
    }

    /// Types `input` under the backend's guard, for a turn whose state was presumed:
    /// `false` when the pane was not as presumed (nothing typed, `undo` put back; a
    /// backend that cannot guard is not asked again for this pane).
    async fn send_guarded(
        &self,
        shell: Option<&str>,
        input: &[Keystrokes],
        undo: Undo,
    ) -> Result<bool, TerminalError> {
        let guarded = self
            .terminal
            .backend
            .send_input_guarded(&self.pane, shell, input)
            .await;
        match guarded {
            Ok(Guarded::Typed) => Ok(true),
            Ok(refused) => {
                self.undo(undo);
                let mut data = self.runtime.lock();
                data.unguarded |= refused == Guarded::Unsupported;
                data.guard_late = refused == Guarded::Late;
                Ok(false)
            }
            Err(e) => {
                self.undo(undo);
                Err(e.into())
            }
        }
    }

    /// Hands the sentinel's nonce to the shell that will run the next line, with its
    /// terminal's echo off (see [`handover_line`]): the shell runs the hand-over line,
    /// says it is ready, and reads the nonce typed then, which is never echoed, so no
    /// program can read it from the screen and print the sentinel itself. The nonce is
    /// not noted as typed: it has no echo to tell from output.
    async fn hand_over_nonce(&mut self, nonce: &str) -> Result<(), TerminalError> {
        let id = uuid::Uuid::new_v4().simple().to_string()[..12].to_string();
        let before = self.journal_len();
        self.text(&handover_line(&id)).await?;
        self.press_enter().await?;
        if !settle::until_printed(&self.runtime, before, &handover_ready(&id), HANDOVER_WAIT).await
        {
            // Nothing must read the next line typed here as the nonce.
            let interrupt = Key {
                ctrl: true,
                ..Key::plain(KeyCode::Char('c'))
            };
            let _ = self.keys(&[interrupt]).await;
            return Err(TerminalError::InvalidArgument(format!(
                "mark: the shell did not take the sentinel's nonce within {} s: the line that \
                 hands it over (`stty -echo; … read …`) did not run, so the session is busy or \
                 not at a POSIX shell's prompt; the line was interrupted with C-c. Wait for \
                 the prompt, or run without mark (with until: the shell's prompt)",
                HANDOVER_WAIT.as_secs()
            )));
        }
        self.terminal.backend.send_text(&self.pane, nonce).await?;
        self.terminal
            .backend
            .send_keys(&self.pane, &[Key::ENTER])
            .await?;
        Ok(())
    }

    /// Presses Enter on a line already judged (the send path judges the text before
    /// typing it).
    async fn press_enter(&mut self) -> Result<(), TerminalError> {
        let undo = {
            let mut data = self.runtime.lock();
            let undo = Undo::of(&data);
            let at = data.journal.len();
            data.pending_line.clear();
            data.typed.ended(at);
            undo
        };
        let sent = self
            .terminal
            .backend
            .send_keys(&self.pane, &[Key::ENTER])
            .await;
        self.undo_unless_sent(sent, undo)
    }

    /// Refuses `line` when Enter would make a shell run what the tripwire stops.
    fn judge(&self, line: &str) -> Result<(), TerminalError> {
        if self.purpose == Purpose::Command && !self.force {
            tripwire::check_command(line).map_err(TerminalError::Refused)?;
        }
        Ok(())
    }

    fn clean(&self, text: &str) -> String {
        if self.raw {
            text.to_string()
        } else {
            sanitize::sanitize_input(text)
        }
    }

    /// What cohort typed into the pane since the last Enter (or line kill).
    fn pending_line(&self) -> String {
        self.runtime.lock().pending_line.clone()
    }

    /// Notes `text` as typed from the journal's current end, before it is sent: a
    /// terminal can echo it, and a watcher read the echo, before the send returns.
    fn note_typed(&self, text: &str) -> Undo {
        let mut data = self.runtime.lock();
        let undo = Undo::of(&data);
        let at = data.journal.len();
        data.typed.typed(at, text);
        // A newline inside a paste submits the lines before it to a shell; the last
        // line stays pending. Only the end is kept: the tripwire reads the line Enter
        // will submit.
        match text.rsplit_once('\n') {
            Some((_, last)) => data.pending_line = last.to_string(),
            None => data.pending_line.push_str(text),
        }
        if data.pending_line.len() > PENDING_MAX {
            let cut = data.pending_line.len() - PENDING_MAX;
            let cut = crate::runtime::char_ceil(&data.pending_line, cut);
            data.pending_line.drain(..cut);
        }
        undo
    }

    /// Passes `sent` on; when the keystrokes did not reach the pane, first forgets
    /// what was noted of them.
    fn undo_unless_sent(
        &self,
        sent: cohort_backends::Result<()>,
        undo: Undo,
    ) -> Result<(), TerminalError> {
        if sent.is_err() {
            self.undo(undo);
        }
        Ok(sent?)
    }

    /// Puts back what noting a keystroke changed: it was not sent.
    fn undo(&self, undo: Undo) {
        let mut data = self.runtime.lock();
        data.typed.restore(&undo.typed);
        data.pending_line = undo.pending_line;
    }
}

/// Whether a turn's state is asked or presumed (see [`Terminal::input_with`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Presume {
    /// Asked.
    No,
    /// Presumed for a line for the shell at its prompt ([`Terminal::presumed_state`]).
    AtPrompt,
    /// Presumed for keys to whatever holds the pane ([`Terminal::presumed_alive`]).
    Alive,
}

/// What noting a keystroke changed, to put back when it was not sent.
struct Undo {
    typed: Checkpoint,
    pending_line: String,
}

impl Undo {
    fn of(data: &PaneData) -> Undo {
        Undo {
            typed: data.typed.checkpoint(),
            pending_line: data.pending_line.clone(),
        }
    }
}

/// The most of a pending line kept for the tripwire (longer lines are judged on
/// their last 64 KiB, where Enter will act).
const PENDING_MAX: usize = 64 << 10;

/// What a key does to the line a shell is editing.
enum LineEffect {
    /// Submits it (Enter, `C-m`, `C-j`).
    Submit,
    /// Drops it (`C-c`, `C-u`, `C-g`).
    Drop,
    /// Erases its last character.
    Erase,
    /// Types a character.
    Type(char),
    /// Moves or does something the line's text does not show.
    None,
}

fn line_effect(key: &Key) -> LineEffect {
    match key.code {
        KeyCode::Enter => LineEffect::Submit,
        KeyCode::Char(c) if key.ctrl => match c.to_ascii_lowercase() {
            'm' | 'j' => LineEffect::Submit,
            'c' | 'u' | 'g' => LineEffect::Drop,
            'h' => LineEffect::Erase,
            _ => LineEffect::None,
        },
        KeyCode::Backspace => LineEffect::Erase,
        KeyCode::Char(c) if !key.alt => LineEffect::Type(c),
        KeyCode::Space if !key.ctrl && !key.alt => LineEffect::Type(' '),
        _ => LineEffect::None,
    }
}

/// The keys that empty a shell's input line without ringing its bell. A line editor
/// (the terminal in raw mode: readline, zle, fish) gets `C-a C-k`: readline rings the
/// bell for `C-u` on an empty line (`unix-line-discard` at the start of the line),
/// which a human attached to the session hears at every command, while moving to the
/// start and killing to the end is silent on every editor. A shell reading in line
/// mode (`cooked`: sh without an editor) gets `C-u`, the terminal's own line kill,
/// where `C-a`/`C-k` would be typed as characters.
fn clear_line_keys(cooked: Option<bool>) -> Vec<Key> {
    let names: &[&str] = if cooked == Some(true) {
        &["C-u"]
    } else {
        &["C-a", "C-k"]
    };
    names
        .iter()
        .map(|k| k.parse().expect("a known key"))
        .collect()
}

/// Key names as a caller gave them (`Enter`, `C-c`), parsed; unknown names are
/// refused, never typed as text.
pub fn parse_keys(names: &[String]) -> Result<Vec<Key>, TerminalError> {
    if names.is_empty() {
        return Err(TerminalError::InvalidArgument(
            "no keys given: pass e.g. [\"Enter\"] or [\"C-c\"]".into(),
        ));
    }
    names
        .iter()
        .map(|k| {
            k.parse::<Key>()
                .map_err(|e| TerminalError::InvalidArgument(e.to_string()))
        })
        .collect()
}

/// Whether `text`, a block of several lines, ends on an indented line: the body of a
/// compound statement (`for …:` then `    print(i)`) that a REPL closes only on an
/// empty line.
fn ends_inside_a_block(text: &str) -> bool {
    match text.rsplit_once('\n') {
        Some((_, last)) => last.starts_with([' ', '\t']) && !last.trim().is_empty(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::ends_inside_a_block;

    #[test]
    fn a_block_ending_on_an_indented_line_is_still_open() {
        assert!(ends_inside_a_block("for i in range(3):\n    print(i)"));
        assert!(ends_inside_a_block("if x:\n\tpass"));
        assert!(!ends_inside_a_block("for i in range(3):\n    print(i)\n"));
        assert!(!ends_inside_a_block("x = 1\nprint(x)"));
        assert!(
            !ends_inside_a_block("    print(i)"),
            "one line is not a block"
        );
        assert!(!ends_inside_a_block("x = 1\n   "));
    }
}
