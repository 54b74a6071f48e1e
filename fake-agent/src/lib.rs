//! Faithful fake agent CLIs for tests: one binary that behaves like Claude Code or
//! the Codex CLI in every way an orchestrator driving them in terminal panes relies
//! on, without accounts or a network.
//!
//! The flavour comes from argv\[0\] (`claude`, `codex`; tests symlink the binary) or
//! `--flavor claude|codex`. It is modelled on the behaviour of Claude Code 2.1.197
//! and Codex CLI 0.169.0 in tmux panes.
//!
//! # Command lines
//!
//! - **claude** `[PROMPT]`, `--session-id <uuid>` (refused if not a UUID, or if that
//!   session already has a transcript), `--settings <file|json>`, `--model <m>`,
//!   `-r/--resume <id>` (refused when no transcript exists), `--permission-mode
//!   <mode>` (checked against the real list), `--dangerously-skip-permissions`, and a
//!   few accepted no-ops (`--add-dir`, `--verbose`…). Unknown options: `error:
//!   unknown option '--x'`, status 1, like the real one.
//! - **codex** `[PROMPT]`, `resume <id> [PROMPT]`, `-m/--model`, `-c key=value`
//!   (`notify`, `model`, `approval_policy`), `-C/--cd`, `-a/--ask-for-approval`,
//!   `--dangerously-bypass-approvals-and-sandbox` (`--yolo`),
//!   `--dangerously-bypass-hook-trust`, `--no-alt-screen`. Unknown arguments get
//!   clap's `error: unexpected argument` and status 2 — including `--full-auto`,
//!   which 0.169 no longer accepts.
//!
//! # Scripted turns
//!
//! A turn is driven by markers anywhere in its prompt:
//!
//! | marker | the turn… |
//! |---|---|
//! | (none) | works 150 ms (two tool calls: a Read, then `Bash(ls)`), then answers |
//! | `[[work N]]` | works N ms instead |
//! | `[[approval]]` | asks to run `touch approved.txt` (dialog; `PermissionRequest`) |
//! | `[[api-error]]` | ends with an API error: `StopFailure` (Claude), never `Stop` |
//! | `[[background]]` | `Stop` carries a non-empty `background_tasks` |
//! | `[[crash]]` | the process kills itself mid-turn (SIGKILL): no hook, no entry |
//! | `[[ask]]` | asks a question (Claude fires `Elicitation`/`ElicitationResult`) |
//! | `[[no-hooks]]` | this turn fires no hook at all (hooks disabled by policy) |
//! | `[[hang]]` | the process hangs mid-turn: alive, silent, taking no keys |
//!
//! Every answer is `Done: received <bytes> bytes, <lines> lines, fnv1a64 <hex>.`,
//! computed over the prompt exactly as submitted ([`script::digest`]), so a test can
//! prove a multi-KB, multi-line prompt arrived byte for byte.
//!
//! A test that drives the binary checks the answer against the prompt it sent:
//!
//! ```
//! use cohort_fake_agent::script::{answer, Script};
//! let prompt = "fix the build [[approval]]\nthen report";
//! assert!(Script::parse(prompt).approval);
//! // What `Stop`'s `last_assistant_message` (or Codex's `task_complete`) will say:
//! assert!(answer(prompt).starts_with("Done: received 38 bytes, 2 lines, fnv1a64 "));
//! ```
//!
//! # Environment
//!
//! `FAKE_AGENT_READY_MS` (default 300): the composer is drawn at once but its input
//! handler mounts this much later; keys arriving before are dropped.
//! `FAKE_AGENT_PASTE_TRAP=0`: Enter always submits. `FAKE_AGENT_PASTE_ENTER_MS`
//! (default 20): how long after a paste an Enter is still a newline.
//! `FAKE_AGENT_NO_HOOKS=1`: no hook or notify ever runs.
//! `FAKE_AGENT_LOOK`: Claude's frame as other releases and terminals draw it,
//! comma-separated: `inline` (drawn from the top without filling the pane, blank
//! rows below), `one-rule` (`>` under a single rule), `box` (`>` in a rounded box).
//! `FAKE_AGENT_LEAVE_BEHIND=1`: an answered dialog's text stays on screen above the
//! composer, and an interrupt leaves its spinner line behind.
//! `FAKE_AGENT_ENTER_DEAF_MS` (default 0): Enter does nothing for this long after the
//! input is mounted (the composer takes text, but no prompt). `FAKE_AGENT_TURN_END`:
//! the `system` subtype Claude's transcript closes a turn with (`turn_duration` by
//! default), as a later release might rename it. `CLAUDE_CONFIG_DIR`,
//! `CODEX_HOME`, `HOME` place transcripts and configuration as for the real CLIs.
//!
//! # Faithful
//!
//! - Screens: Claude draws inline (no alternate screen) with `❯` composer between
//!   two rules, `esc to interrupt` in the footer while busy, the permission dialog
//!   `Do you want to proceed?` with `❯ 1. Yes` / `2. Yes, and don't ask again…` /
//!   `3. No` (a digit answers at once), `Press Ctrl-D again to exit`, and
//!   `Press up to edit queued messages`. Codex uses the alternate screen,
//!   `› Ask Codex to do anything`, `Working (Ns • esc to interrupt)`, `Would you like
//!   to run the following command?` with `(y)`/`(p)`/`(esc)` choices, the queued
//!   message banner, OSC 7501 `state=working|idle` and a spinner title.
//! - Resizes: a SIGWINCH repaints the frame at the new size, as the real TUIs do.
//! - Terminal modes: raw mode (input typed before startup is flushed), bracketed
//!   paste, focus events, kitty keyboard flags (Claude pushes 1, Codex 5); the
//!   decoder reads plain, kitty `CSI u` and modifyOtherKeys keys.
//! - Pastes: Claude collapses a paste over 800 characters or with 3+ line breaks
//!   into `[Pasted text #N +M lines]` (`[Pasted text #N]` without breaks), Codex one
//!   over 1000 characters into `[Pasted Content N chars]`; both expand on submit.
//!   Codex treats an Enter inside a fast typed burst as a newline.
//! - Busy: Enter queues the message; Claude submits it when the turn ends
//!   (`promptSource: "queued"`); Esc/Ctrl-C interrupt (no `Stop`, an
//!   `[Request interrupted by user]` entry / `turn_aborted`), then a queued message
//!   goes at once.
//! - Hooks: Claude reads user, project and `--settings` layers and honours
//!   `disableAllHooks`; every hook gets the real JSON (`session_id`,
//!   `transcript_path`, `cwd`, `hook_event_name`, plus `prompt_id`, `prompt`,
//!   `last_assistant_message`, `background_tasks`, `tool_name`, `tool_input`,
//!   `reason`, `source`, `error`…). `SessionStart` at launch (Claude) or with the
//!   first turn (Codex); `SessionEnd` with `prompt_input_exit` (Claude only; Codex
//!   has none). Codex reads `$CODEX_HOME/hooks.json` and `.codex/hooks.json`, shows
//!   the "Hooks need review" dialog until they are trusted (or
//!   `--dangerously-bypass-hook-trust`), and runs `notify` with one JSON argument
//!   `agent-turn-complete`.
//! - Transcripts: Claude's project JSONL appears with the first prompt at
//!   `<config>/projects/<cwd, non-alphanumerics → '-'>/<session>.jsonl`; Codex's
//!   rollout appears when the first turn starts, with `session_meta`,
//!   `task_started`, `item_completed`, `task_complete`, `turn_aborted` lines.
//! - Exit: `/exit` (both), `/quit` (Codex; accepted by both), Ctrl-D twice (Claude)
//!   or once (Codex) on an empty composer, Ctrl-C twice (Claude) or once (Codex);
//!   the resume hint is printed after the TUI is gone.
//!
//! # Simplified
//!
//! Frames are repainted whole, not diffed; the cursor stays at the end of the
//! composer; no model, so answers are the digest line; tool calls are fixed; hooks of
//! one event run one after another (the real CLIs run them concurrently) and their
//! output is not interpreted except a `PermissionRequest` hook's decision (allow or
//! deny, any deny winning), which answers the request without a dialog; matchers are `|`-separated
//! names, not regular expressions; the hook-trust record is a marker, not a hash;
//! Codex's `[hooks]` tables in `config.toml` are not read; long project directory
//! names get a different hash suffix than the real one; a queued Codex message
//! waits for the turn's end rather than steering mid-turn. The paste-Enter trap
//! (an Enter in the same read as a paste's end, or within the window after it, is a
//! newline) is stricter than the releases modelled, which submit there; it stands
//! for the earlier releases and terminals where that Enter was lost.

#![deny(missing_docs)]

pub mod agent;
pub mod app;
pub mod cli;
pub mod clock;
pub mod composer;
pub mod hooks;
pub mod keys;
pub mod screen;
pub mod script;
pub mod term;
pub mod transcript;
pub mod turn;

/// Parses the command line and runs the fake agent; returns the exit status.
pub fn main_with(argv0: &str, args: &[String]) -> i32 {
    match cli::parse(argv0, args) {
        Ok(cli::Command::Print(text)) => {
            term::write(text.as_bytes());
            0
        }
        Ok(cli::Command::Run(options)) => match app::run(options, app::Settings::from_env()) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("{e}");
                1
            }
        },
        Err(e) => {
            eprintln!("{e}");
            e.code
        }
    }
}
