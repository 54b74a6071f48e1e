//! The send path: the tripwire, sanitising, the session's lock, the per-pane input
//! turn across processes, text or bracketed paste, settling before Enter, and the
//! record of what was typed.

use std::time::{Duration, Instant};

use cohort_backends::{Key, PaneId};

use super::completion::{mark_suffix, Started};
use super::names::{self, NameKind};
use super::{input, sanitize, tripwire, Engine, EngineError};

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
    /// Who is typing (an agent name); a locked session accepts only its holder.
    pub owner: Option<String>,
    /// The caller's connection: a lock taken on one connection is held there only.
    pub owner_token: Option<String>,
}

impl Default for SendOptions {
    fn default() -> Self {
        SendOptions {
            enter: true,
            raw: false,
            force: false,
            mark: None,
            owner: None,
            owner_token: None,
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
}

/// The most text one call types (1 MiB): more than any command line or answer, and
/// enough for a pasted file.
pub const TEXT_MAX: usize = 1 << 20;

impl Engine {
    /// Refuses when `pane`'s session is locked by someone other than `owner`; returns
    /// the session's persistent id when it is a cohort session.
    async fn check_lock(
        &self,
        pane: &PaneId,
        owner: Option<&str>,
        token: Option<&str>,
    ) -> Result<Option<String>, EngineError> {
        let (server, pane) = (self.server_key.clone(), pane.to_string());
        let found = self
            .db(move |r| match r.session_for_pane(&server, &pane)? {
                Some(session) => Ok(Some((r.lock_of(&session.id)?, session.id))),
                None => Ok(None),
            })
            .await?;
        match found {
            Some((Some(lock), _)) if !owner.is_some_and(|o| lock.held_by(o, token)) => {
                Err(EngineError::Locked(lock))
            }
            Some((_, id)) => Ok(Some(id)),
            None => Ok(None),
        }
    }

    /// Types `text` and presses Enter.
    pub async fn type_line(&self, pane: &PaneId, text: &str) -> Result<Sent, EngineError> {
        self.send(pane, text, &SendOptions::default()).await
    }

    /// The send path: tripwire, sanitising, the per-pane lock, copy mode, text or
    /// bracketed paste, settle, Enter.
    pub async fn send(
        &self,
        pane: &PaneId,
        text: &str,
        options: &SendOptions,
    ) -> Result<Sent, EngineError> {
        self.type_text(pane, text, options, false).await
    }

    /// [`Engine::send`]; with `fresh_line`, a shell at its prompt first has its input
    /// line emptied (see [`clear_line_keys`]), so a command is not appended to keys
    /// typed before it.
    pub(crate) async fn type_text(
        &self,
        pane: &PaneId,
        text: &str,
        options: &SendOptions,
        fresh_line: bool,
    ) -> Result<Sent, EngineError> {
        if text.len() > TEXT_MAX {
            return Err(EngineError::InvalidArgument(format!(
                "the text is {} bytes; at most {} MiB is typed in one call: write long content to a file and run a command that reads it",
                text.len(),
                TEXT_MAX >> 20
            )));
        }
        names::check_opt(NameKind::Owner, options.owner.as_deref())?;
        let session = self
            .check_lock(
                pane,
                options.owner.as_deref(),
                options.owner_token.as_deref(),
            )
            .await?;
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
            if !options.force {
                tripwire::check_command(&text).map_err(EngineError::Refused)?;
            }
        }
        if let Some(nonce) = &options.mark {
            if text.contains('\n') {
                return Err(EngineError::InvalidArgument(
                    "mark works with single-line commands: send the lines one at a time, or use until".into(),
                ));
            }
            text.push_str(&mark_suffix(nonce));
        }
        let (_lock, state) = self.input_turn(pane).await?;
        let runtime = self.runtimes.get(pane);
        if fresh_line && state.at_shell() && !runtime.lock().command_running() {
            let cooked = state
                .foreground_pid
                .and_then(cohort_backends::process::terminal_in_line_mode);
            self.backend
                .send_keys(pane, &clear_line_keys(cooked))
                .await?;
        }
        if text.len() > 1024 {
            // Text typed before the program reads the terminal sits in the kernel's line
            // buffer, which keeps 4095 characters and drops the rest.
            self.wait_reading(pane, Duration::from_secs(3)).await;
        }
        // Lines go as one paste, and so does a tab: typed, it would ask the shell to
        // complete a word, and a different command would run.
        let pasted = text.contains(['\n', '\t']);
        let before_typing = runtime.lock().journal.len();
        if pasted {
            self.backend.paste(pane, &text).await?;
        } else if !text.is_empty() {
            self.backend.send_text(pane, &text).await?;
        }
        let mut started = None;
        if options.enter {
            if !state.at_shell() || pasted {
                // A program drawing what was typed (a REPL, a TUI, a paste) must
                // finish before Enter, or a TUI takes Enter as a newline in its input.
                // Agent TUIs and full-screen programs redraw in frames, so they get a
                // longer quiet window than line-mode programs.
                let heavy =
                    state.alternate_screen || input::is_agent_tui(&state.foreground_command);
                let quiet = if heavy {
                    Duration::from_millis(100)
                } else {
                    Duration::from_millis(15)
                };
                input::settle_after_echo(
                    &runtime,
                    before_typing,
                    quiet,
                    Duration::from_millis(1500),
                )
                .await;
            }
            let command = runtime.record_command(
                &text,
                state.foreground_pid,
                options.mark.clone(),
                !state.at_shell(),
            );
            let at = Instant::now();
            self.backend.send_keys(pane, &[Key::ENTER]).await?;
            started = Some(Started::after(&command, at));
            // Bookkeeping after Enter, in the background, so it never delays the
            // keystroke or the verdict.
            if let Some(id) = session {
                let end = super::runtime::char_floor(&text, 4096);
                let (engine, command) = (self.clone(), text[..end].to_string());
                tokio::spawn(async move {
                    let _ = engine.db(move |r| r.set_last_command(&id, &command)).await;
                });
            }
        }
        Ok(Sent {
            started,
            bytes: text.len(),
            pasted,
        })
    }

    /// Presses named keys.
    pub async fn keys(&self, pane: &PaneId, keys: &[Key]) -> Result<(), EngineError> {
        self.keys_as(pane, keys, None, None).await
    }

    /// Presses named keys on behalf of `owner` on `token`'s connection (checked
    /// against the session's lock).
    pub async fn keys_as(
        &self,
        pane: &PaneId,
        keys: &[Key],
        owner: Option<&str>,
        token: Option<&str>,
    ) -> Result<(), EngineError> {
        names::check_opt(NameKind::Owner, owner)?;
        self.check_lock(pane, owner, token).await?;
        let (_lock, _) = self.input_turn(pane).await?;
        let runtime = self.runtimes.get(pane);
        let running = runtime.lock().command_running();
        self.backend.send_keys(pane, keys).await?;
        if running && keys.iter().any(input::is_interrupt) {
            // The command takes a moment to stop, and a key typed before it has (the
            // next command's first letter) can still be read by it: hold the pane's
            // input until the shell reports the end, briefly.
            input::until_command_ends(&runtime, Duration::from_millis(500)).await;
        }
        Ok(())
    }

    /// The pane's input, held against every other cohort process until the guard drops,
    /// with the pane's state: refused when its program exited, out of copy mode.
    async fn input_turn(
        &self,
        pane: &PaneId,
    ) -> Result<(input::SendLock, cohort_backends::PaneState), EngineError> {
        let path = input::lock_path(&self.lock_dir, &self.server_key, pane.as_str());
        let lock = input::lock(path, Duration::from_secs(10))
            .await
            .map_err(|e| EngineError::Busy {
                pane: pane.clone(),
                reason: e.to_string(),
            })?;
        let state = self.backend.pane_state(pane).await?;
        // The shell's last mark said it is exiting: the pane closes in a moment, and
        // what is typed now would be lost.
        let exiting = self.runtimes.get(pane).lock().exiting;
        if state.dead || exiting.is_some() {
            return Err(EngineError::Exited {
                pane: pane.clone(),
                status: state.exit_status.or(exiting.flatten()),
            });
        }
        self.backend.cancel_copy_mode(pane).await?;
        Ok((lock, state))
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
pub fn parse_keys(names: &[String]) -> Result<Vec<Key>, EngineError> {
    if names.is_empty() {
        return Err(EngineError::InvalidArgument(
            "no keys given: pass e.g. [\"Enter\"] or [\"C-c\"]".into(),
        ));
    }
    names
        .iter()
        .map(|k| {
            k.parse::<Key>()
                .map_err(|e| EngineError::InvalidArgument(e.to_string()))
        })
        .collect()
}
