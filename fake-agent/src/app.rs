//! The TUI's event loop: readiness, keys, the composer, dialogs, queued messages,
//! the running turn's timers, and exit.

use std::time::{Duration, Instant};

use crate::agent::{codex_home, Session, StartError};
use crate::cli::{Flavor, Options};
use crate::composer::{Composer, PasteRule};
use crate::hooks;
use crate::keys::{Decoder, Key};
use crate::screen::{self, Dialog, Look, View};
use crate::term;
use crate::turn::{Step, Turn, Waiting};

/// Behaviour switches that are not command-line options (read from the environment
/// by [`Settings::from_env`]).
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// How long after the composer is drawn the input handler is mounted; keys that
    /// arrive earlier are dropped.
    pub ready_delay: Duration,
    /// How Enter behaves around pastes.
    pub paste: PasteRule,
    /// Behave as if hooks were disabled by policy.
    pub no_hooks: bool,
    /// How the frame is drawn.
    pub look: Look,
    /// An answered dialog's text stays on screen, and an interrupt leaves the
    /// spinner line behind (TUIs that append rather than repaint).
    pub leave_behind: bool,
    /// How long after its input is mounted Enter does nothing (a fresh TUI that
    /// draws its composer before it takes prompts).
    pub enter_deaf: Duration,
}

impl Settings {
    /// `FAKE_AGENT_READY_MS` (default 300), `FAKE_AGENT_PASTE_TRAP` (`0` turns the
    /// paste-Enter trap off), `FAKE_AGENT_PASTE_ENTER_MS` (default 20),
    /// `FAKE_AGENT_NO_HOOKS` (`1`: no hook ever runs), `FAKE_AGENT_LOOK`
    /// (`inline`, `one-rule`, `box`, comma-separated), `FAKE_AGENT_LEAVE_BEHIND`
    /// (`1`: answered dialogs and interrupted spinners stay on screen),
    /// `FAKE_AGENT_ENTER_DEAF_MS` (default 0).
    pub fn from_env() -> Settings {
        let ms = |name: &str, default: u64| {
            std::env::var(name)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(default)
        };
        let flag = |name: &str| std::env::var(name).is_ok_and(|v| v.trim() == "1");
        Settings {
            ready_delay: Duration::from_millis(ms("FAKE_AGENT_READY_MS", 300)),
            paste: PasteRule {
                trap: std::env::var("FAKE_AGENT_PASTE_TRAP").map_or(true, |v| v.trim() != "0"),
                window: Duration::from_millis(ms("FAKE_AGENT_PASTE_ENTER_MS", 20)),
            },
            no_hooks: flag("FAKE_AGENT_NO_HOOKS"),
            look: Look::parse(&std::env::var("FAKE_AGENT_LOOK").unwrap_or_default()),
            leave_behind: flag("FAKE_AGENT_LEAVE_BEHIND"),
            enter_deaf: Duration::from_millis(ms("FAKE_AGENT_ENTER_DEAF_MS", 0)),
        }
    }
}

/// How long a "press again to exit" hint stays armed.
const EXIT_ARM: Duration = Duration::from_secs(2);
/// How long a lone ESC waits for the rest of a sequence.
const ESC_WAIT: Duration = Duration::from_millis(25);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Armed {
    CtrlC,
    CtrlD,
}

struct App {
    s: Session,
    settings: Settings,
    composer: Composer,
    decoder: Decoder,
    queued: Vec<String>,
    dialog: Option<Dialog>,
    trust_pending: bool,
    hint: Option<(String, Instant)>,
    armed: Option<(Armed, Instant)>,
    turn: Option<Turn>,
    ready: bool,
    deaf_until: Option<Instant>,
    drawn_secs: Option<u64>,
    initial: Option<String>,
    exit: Option<&'static str>,
    dirty: bool,
}

/// Runs the fake agent until it exits; returns the process exit status.
pub fn run(o: Options, settings: Settings) -> Result<i32, StartError> {
    let flavor = o.flavor;
    let alt = o.alt_screen;
    let bypass_trust = o.bypass_hook_trust;
    let initial = o.prompt.clone();
    let mut s = Session::open(o)?;
    if settings.no_hooks {
        s.disable_hooks();
    }
    let hook_count = s.hook_count();
    let trust_pending = flavor == Flavor::Codex && hook_count > 0 && !bypass_trust && !trusted();
    term::catch_hangup();
    term::catch_resize();
    let raw = term::RawMode::enter();
    term::write(match (flavor, alt) {
        (Flavor::Claude, _) => b"\x1b]0;\xe2\x9c\xb3 Claude Code\x07\x1b[?2004h\x1b[?1004h\x1b[>1u",
        (Flavor::Codex, true) => b"\x1b[?1049h\x1b[?2004h\x1b[?1004h\x1b[>5u",
        (Flavor::Codex, false) => b"\x1b[?2004h\x1b[?1004h\x1b[>5u",
    });
    let mut app = App {
        composer: Composer::new(flavor, settings.paste),
        s,
        settings,
        decoder: Decoder::new(),
        queued: Vec::new(),
        dialog: trust_pending.then_some(Dialog::HookTrust {
            count: hook_count,
            selected: 0,
        }),
        trust_pending,
        hint: None,
        armed: None,
        turn: None,
        ready: false,
        deaf_until: None,
        drawn_secs: None,
        initial,
        exit: None,
        dirty: true,
    };
    app.s.launch();
    let ready_at = Instant::now() + app.settings.ready_delay;
    app.state_report();
    let reason = app.event_loop(ready_at);
    let farewell = app.s.end(reason);
    term::write(match (flavor, alt) {
        (Flavor::Codex, true) => b"\x1b[<u\x1b[?1004l\x1b[?2004l\x1b[?1049l",
        _ => b"\x1b[<u\x1b[?1004l\x1b[?2004l\r\n",
    });
    drop(raw);
    term::write(farewell.as_bytes());
    Ok(0)
}

/// Whether Codex's config records trusted hooks.
fn trusted() -> bool {
    std::fs::read_to_string(codex_home().join("config.toml"))
        .is_ok_and(|t| t.contains("trusted_hash"))
}

impl App {
    fn event_loop(&mut self, ready_at: Instant) -> &'static str {
        loop {
            let now = Instant::now();
            if !self.ready && now >= ready_at {
                self.ready = true;
                self.deaf_until = Some(now + self.settings.enter_deaf);
                if !self.trust_pending {
                    self.submit_initial(now);
                }
            }
            self.advance(Instant::now());
            if let Some(reason) = self.exit {
                return reason;
            }
            if term::hung_up() {
                return "other";
            }
            if term::take_resized() {
                self.dirty = true;
            }
            // The spinner's clock ticks every second of a turn, as the real TUIs'.
            let busy_secs = self.turn.as_ref().map(|t| {
                Instant::now()
                    .saturating_duration_since(t.started)
                    .as_secs()
            });
            if busy_secs != self.drawn_secs {
                self.drawn_secs = busy_secs;
                self.dirty = true;
            }
            if self.dirty {
                self.draw();
            }
            let timeout = self.timeout(ready_at);
            match term::read_input(timeout) {
                Ok(Some(bytes)) if bytes.is_empty() => return "other",
                Ok(Some(bytes)) => {
                    let now = Instant::now();
                    if !self.ready && now < ready_at {
                        // The composer is drawn but its input handler is not mounted.
                        continue;
                    }
                    for key in self.decoder.feed(&bytes) {
                        self.key(key, now);
                    }
                }
                Ok(None) => {
                    if self.decoder.has_pending() {
                        let now = Instant::now();
                        for key in self.decoder.flush_pending() {
                            self.key(key, now);
                        }
                    }
                }
                Err(_) => return "other",
            }
        }
    }

    fn timeout(&self, ready_at: Instant) -> Duration {
        let now = Instant::now();
        let mut t = Duration::from_millis(1000);
        if self.decoder.has_pending() {
            t = t.min(ESC_WAIT);
        }
        if !self.ready {
            t = t.min(ready_at.saturating_duration_since(now));
        }
        if let Some(deadline) = self.turn.as_ref().and_then(|t| t.deadline) {
            t = t.min(deadline.saturating_duration_since(now));
        }
        if let Some((_, until)) = &self.hint {
            t = t.min(until.saturating_duration_since(now));
        }
        t
    }

    fn draw(&mut self) {
        let now = Instant::now();
        if self.hint.as_ref().is_some_and(|(_, until)| now >= *until) {
            self.hint = None;
            self.armed = None;
        }
        let (cols, rows) = term::size();
        let cwd = self.s.cwd.to_string_lossy().into_owned();
        let view = View {
            flavor: self.s.o.flavor,
            model: &self.s.o.model,
            cwd: &cwd,
            history: &self.s.history,
            // A dialog takes the busy line's place, as in the real TUIs.
            busy: self
                .turn
                .as_ref()
                .filter(|_| self.dialog.is_none())
                .map(|t| now.saturating_duration_since(t.started).as_secs()),
            queued: &self.queued,
            composer: self.composer.text(),
            dialog: self.dialog.as_ref(),
            hint: self.hint.as_ref().map(|(h, _)| h.as_str()),
            look: self.settings.look,
        };
        term::write(&screen::render(&view, cols, rows));
        self.dirty = false;
    }

    /// Codex reports its state in an OSC 7501 sequence and a spinner in the title.
    fn state_report(&self) {
        if self.s.o.flavor != Flavor::Codex {
            return;
        }
        let dir = self
            .s
            .cwd
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (state, title) = if self.turn.is_some() {
            ("working", format!("\u{280b} {dir}"))
        } else {
            ("idle", dir)
        };
        term::write(
            format!("\x1b]7501;state={state}:app=codex\x1b\\\x1b]0;{title}\x07").as_bytes(),
        );
    }

    fn submit_initial(&mut self, now: Instant) {
        if let Some(prompt) = self.initial.take() {
            if !prompt.trim().is_empty() {
                self.start_turn(prompt, false, now);
            }
        }
    }

    fn start_turn(&mut self, prompt: String, queued: bool, now: Instant) {
        let turn = self.s.submit(prompt, queued, now);
        self.turn = Some(turn);
        self.dirty = true;
        self.state_report();
    }

    fn end_turn(&mut self, now: Instant) {
        self.turn = None;
        self.dialog = None;
        self.dirty = true;
        if !self.queued.is_empty() {
            let next = self.queued.remove(0);
            self.start_turn(next, true, now);
        } else {
            self.state_report();
        }
    }

    /// Runs the turn's steps whose time has come.
    fn advance(&mut self, now: Instant) {
        loop {
            let Some(turn) = self.turn.as_mut() else {
                return;
            };
            if turn.waiting != Waiting::Nothing {
                return;
            }
            if let Some(deadline) = turn.deadline {
                if now < deadline {
                    return;
                }
                turn.deadline = None;
            }
            let Some(step) = turn.steps.pop_front() else {
                self.end_turn(now);
                return;
            };
            self.dirty = true;
            match step {
                Step::Wait(ms) => {
                    if let Some(t) = self.turn.as_mut() {
                        t.deadline = Some(now + Duration::from_millis(ms));
                    }
                }
                Step::Tool { name, arg } => {
                    if let Some(mut t) = self.turn.take() {
                        self.s.tool(&mut t, name, arg);
                        self.turn = Some(t);
                    }
                }
                Step::Crash => {
                    // The process dies on the spot, as after a fatal error: no hooks,
                    // no transcript entry, the terminal left as it was.
                    // SAFETY: sends SIGKILL to ourselves.
                    unsafe {
                        libc::kill(libc::getpid(), libc::SIGKILL);
                    }
                }
                Step::Hang => {
                    // Stuck for good: nothing drawn, no hook, no key read. Only the
                    // terminal going away ends it.
                    while !term::hung_up() {
                        std::thread::sleep(Duration::from_millis(100));
                    }
                    self.exit = Some("other");
                    return;
                }
                Step::Approval => {
                    if let Some(mut t) = self.turn.take() {
                        if self.s.request_approval(&mut t) {
                            t.waiting = Waiting::Approval;
                            self.dialog = Some(Dialog::Approval {
                                command: crate::turn::APPROVAL_COMMAND.into(),
                                reason: "Create approved.txt".into(),
                                selected: 0,
                            });
                        }
                        self.turn = Some(t);
                    }
                }
                Step::Ask => {
                    if let Some(mut t) = self.turn.take() {
                        let (question, options) = self.s.ask(&t);
                        t.waiting = Waiting::Question;
                        self.dialog = Some(Dialog::Question {
                            question,
                            options,
                            selected: 0,
                        });
                        self.turn = Some(t);
                    }
                }
                Step::ApiError => {
                    if let Some(t) = self.turn.take() {
                        self.s.api_error(&t, now);
                    }
                    self.end_turn(now);
                    return;
                }
                Step::Answer => {
                    if let Some(t) = self.turn.take() {
                        self.s.finish(&t, now);
                    }
                    self.end_turn(now);
                    return;
                }
            }
        }
    }

    fn interrupt(&mut self, now: Instant) {
        if let Some(t) = self.turn.take() {
            if self.settings.leave_behind {
                let secs = now.saturating_duration_since(t.started).as_secs();
                self.s.history.push(match self.s.o.flavor {
                    Flavor::Claude => format!("✻ Working… ({secs}s · esc to interrupt)"),
                    Flavor::Codex => format!("• Working ({secs}s • esc to interrupt)"),
                });
            }
            self.s.interrupt(&t, now);
            if self.s.o.flavor == Flavor::Codex && !self.queued.is_empty() {
                self.s
                    .history
                    .push("• Model interrupted to submit steer instructions.".into());
            }
        }
        self.end_turn(now);
    }

    fn set_hint(&mut self, text: &str, now: Instant) {
        self.hint = Some((text.to_string(), now + EXIT_ARM));
        self.dirty = true;
    }

    fn key(&mut self, key: Key, now: Instant) {
        self.dirty = true;
        if self.dialog.is_some() {
            self.dialog_key(key, now);
            return;
        }
        let flavor = self.s.o.flavor;
        let busy = self.turn.is_some();
        match key {
            Key::Char(c) => self.composer.type_char(c, now),
            Key::Paste(text) => self.composer.paste(&text, now),
            Key::Newline => self.composer.newline(),
            // Drawn, but not taking prompts yet: Enter does nothing.
            Key::Enter if self.deaf_until.is_some_and(|until| now < until) => {}
            Key::Enter if self.composer.enter_is_newline(now) => self.composer.newline(),
            Key::Enter => self.enter(now),
            Key::Backspace => self.composer.backspace(),
            Key::CtrlU => self.composer.clear(),
            Key::Up if self.composer.is_empty() && !self.queued.is_empty() => {
                if let Some(q) = self.queued.pop() {
                    self.composer.set_text(&q);
                }
            }
            Key::Esc if busy => self.interrupt(now),
            Key::CtrlC if busy => self.interrupt(now),
            Key::CtrlC if !self.composer.is_empty() => self.composer.clear(),
            // Codex quits on the first one; Claude asks for a second.
            Key::CtrlC | Key::CtrlD
                if flavor == Flavor::Codex && self.composer.is_empty() && !busy =>
            {
                self.exit = Some("other");
            }
            Key::CtrlC | Key::CtrlD if flavor == Flavor::Claude && self.composer.is_empty() => {
                let which = if key == Key::CtrlC {
                    Armed::CtrlC
                } else {
                    Armed::CtrlD
                };
                let again = self.armed.is_some_and(|(a, at)| {
                    a == which && now.saturating_duration_since(at) < EXIT_ARM
                });
                if again {
                    self.exit = Some("prompt_input_exit");
                } else {
                    self.armed = Some((which, now));
                    let name = if which == Armed::CtrlC {
                        "Ctrl-C"
                    } else {
                        "Ctrl-D"
                    };
                    self.set_hint(&format!("Press {name} again to exit"), now);
                }
            }
            _ => {}
        }
    }

    fn enter(&mut self, now: Instant) {
        let Some(prompt) = self.composer.take() else {
            return;
        };
        let trimmed = prompt.trim();
        if trimmed == "/exit" || trimmed == "/quit" {
            self.exit = Some("prompt_input_exit");
            return;
        }
        if self.turn.is_some() {
            self.queued.push(prompt);
            return;
        }
        if let Some(command) = trimmed.strip_prefix('/') {
            let name = command.split_whitespace().next().unwrap_or("");
            self.s.history.push(match self.s.o.flavor {
                Flavor::Claude => format!("❯ /{name}\n  ⎿  Unknown skill: {name}"),
                Flavor::Codex => format!("■ Unrecognized command '/{name}'"),
            });
            return;
        }
        if let Some(command) = trimmed.strip_prefix('!') {
            self.s.history.push(match self.s.o.flavor {
                Flavor::Claude => format!("! {}\n  ⎿  (shell command, not sent)", command.trim()),
                Flavor::Codex => format!("• Ran {}\n  └ (shell command, not sent)", command.trim()),
            });
            return;
        }
        self.start_turn(prompt, false, now);
    }

    fn dialog_key(&mut self, key: Key, now: Instant) {
        let Some(dialog) = self.dialog.as_mut() else {
            return;
        };
        let flavor = self.s.o.flavor;
        let choice = match (&key, flavor) {
            (Key::Up, _) => {
                dialog.move_selection(-1);
                return;
            }
            (Key::Down | Key::Tab, _) => {
                dialog.move_selection(1);
                return;
            }
            (Key::Enter, _) => Some(dialog.selected()),
            (Key::Esc | Key::CtrlC, _) => None,
            (Key::Char(c @ '1'..='9'), _) => {
                let n = (*c as usize) - ('1' as usize);
                if n >= dialog.choices() {
                    return;
                }
                Some(n)
            }
            (Key::Char('y'), Flavor::Codex) => Some(0),
            (Key::Char('p'), Flavor::Codex) => Some(1),
            (Key::Char('n'), Flavor::Codex) => None,
            _ => return,
        };
        let Some(dialog) = self.dialog.take() else {
            return;
        };
        if self.settings.leave_behind {
            self.s.history.push(left_behind(&dialog, self.s.o.flavor));
        }
        match dialog {
            Dialog::HookTrust { .. } => {
                self.trust_pending = false;
                match choice {
                    Some(0) | Some(1) => trust_hooks(&self.s.cwd),
                    _ => self.s.disable_hooks(),
                }
                self.submit_initial(now);
            }
            Dialog::Approval { .. } => {
                let Some(mut t) = self.turn.take() else {
                    return;
                };
                match choice {
                    Some(0) | Some(1) => {
                        self.s.approve(&mut t, choice == Some(1));
                        t.waiting = Waiting::Nothing;
                        self.turn = Some(t);
                    }
                    _ => {
                        self.turn = Some(t);
                        self.interrupt(now);
                    }
                }
            }
            Dialog::Question { options, .. } => {
                let Some(mut t) = self.turn.take() else {
                    return;
                };
                let answer = choice.and_then(|i| options.get(i)).map(String::as_str);
                self.s.answered(&t, answer);
                t.waiting = Waiting::Nothing;
                self.turn = Some(t);
            }
        }
    }
}

/// The text of an answered dialog, as a TUI that appends leaves it on screen.
fn left_behind(dialog: &Dialog, flavor: Flavor) -> String {
    match (dialog, flavor) {
        (Dialog::Approval { command, .. }, Flavor::Claude) => format!(
            " Bash command\n   {command}\n Do you want to proceed?\n ❯ 1. Yes\n   2. Yes, and don't ask again for this command\n   3. No"
        ),
        (Dialog::Approval { command, .. }, Flavor::Codex) => format!(
            "  Would you like to run the following command?\n  $ {command}\n› 1. Yes, proceed (y)"
        ),
        (Dialog::Question { question, options, .. }, Flavor::Claude) => {
            let mut text = format!(" {question}");
            for (i, o) in options.iter().enumerate() {
                text.push_str(&format!("\n {} {}. {o}", if i == 0 { "❯" } else { " " }, i + 1));
            }
            text + "\n Enter to select · Esc to cancel"
        }
        (Dialog::Question { question, options, .. }, Flavor::Codex) => {
            let mut text = format!("  Question 1/1\n  {question}");
            for (i, o) in options.iter().enumerate() {
                text.push_str(&format!("\n{} {}. {o}", if i == 0 { "›" } else { " " }, i + 1));
            }
            text
        }
        (Dialog::HookTrust { .. }, _) => "  Hooks need review".into(),
    }
}

/// Records the hooks as trusted in Codex's config, as "Trust all and continue" does.
fn trust_hooks(cwd: &std::path::Path) {
    use std::io::Write;
    let home = codex_home();
    let mut text = String::new();
    for file in hooks::codex_hook_files(&home, cwd) {
        if file.exists() {
            text.push_str(&format!(
                "\n[hooks.state.\"{}\"]\ntrusted_hash = \"sha256:trusted\"\n",
                file.display()
            ));
        }
    }
    let _ = std::fs::create_dir_all(&home);
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(home.join("config.toml"))
    {
        let _ = f.write_all(text.as_bytes());
    }
}
