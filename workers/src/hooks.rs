//! The agents' hooks wired to cohort: Claude Code's settings file and Codex's
//! `notify` program and project hooks, each calling `cohort hook` with the event.

use std::path::Path;

use serde_json::json;

use crate::machine::Machine;
use crate::worktree;

/// Claude Code's settings file with cohort's hooks, for one launch.
pub(crate) fn claude_settings(
    program: &Path,
    state_dir: &Path,
    worker_id: &str,
) -> serde_json::Value {
    use cohort_backends::tmux::quote::sh;
    claude_settings_with(|e| {
        format!(
            "{} --state-dir {} hook --worker {} {e}",
            sh(&program.to_string_lossy()),
            sh(&state_dir.to_string_lossy()),
            sh(worker_id)
        )
    })
}

/// Claude Code's settings file with a hook for each event cohort follows, each
/// running `command(event)`.
pub(crate) fn claude_settings_with(command: impl Fn(&str) -> String) -> serde_json::Value {
    let events = [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PermissionRequest",
        "Elicitation",
        "ElicitationResult",
        "Stop",
        "StopFailure",
        "SessionEnd",
    ];
    let mut hooks = serde_json::Map::new();
    for e in events {
        let command = command(e);
        hooks.insert(
            e.into(),
            json!([{"matcher": "", "hooks": [{"type": "command", "command": command, "timeout": 10}]}]),
        );
    }
    json!({ "hooks": hooks })
}

/// Codex's project hooks file with cohort's hooks; the worker comes from the
/// environment (`COHORT_WORKER_ID`), so workers sharing a directory share the file.
/// Codex's `notify` program for a worker: `cohort hook --worker ID notify`, which
/// Codex runs with the event's JSON as its last argument.
pub(crate) fn codex_notify(program: &Path, state_dir: &Path, worker_id: &str) -> Vec<String> {
    vec![
        program.to_string_lossy().into_owned(),
        "--state-dir".into(),
        state_dir.to_string_lossy().into_owned(),
        "hook".into(),
        "--worker".into(),
        worker_id.to_string(),
        "notify".into(),
    ]
}

pub(super) fn codex_hooks(program: &Path, state_dir: &Path) -> serde_json::Value {
    use cohort_backends::tmux::quote::sh;
    codex_hooks_with(|e| {
        format!(
            "{} --state-dir {} hook {e}",
            sh(&program.to_string_lossy()),
            sh(&state_dir.to_string_lossy())
        )
    })
}

/// Codex's project hooks file with a hook for each event cohort follows, each
/// running `command(event)`; the worker comes from the environment.
pub(crate) fn codex_hooks_with(command: impl Fn(&str) -> String) -> serde_json::Value {
    let mut hooks = serde_json::Map::new();
    for e in [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PermissionRequest",
        "Stop",
    ] {
        let command = command(e);
        hooks.insert(
            e.into(),
            json!([{"matcher": "", "hooks": [{"type": "command", "command": command, "timeout": 10}]}]),
        );
    }
    json!({ "hooks": hooks, "cohort": "written by cohort for its workers" })
}

/// Writes Codex's hooks into `cwd/.codex/hooks.json` unless another file is there;
/// true when cohort's hooks are in place.
pub(crate) fn place_codex_hooks(cwd: &Path, program: &Path, state_dir: &Path) -> bool {
    place_codex_hooks_on(&Machine::Local, cwd, &codex_hooks(program, state_dir))
}

/// [`place_codex_hooks`] on machine `m`, with `hooks` as the file's content. Blocks.
pub(crate) fn place_codex_hooks_on(m: &Machine, cwd: &Path, hooks: &serde_json::Value) -> bool {
    let file = cwd.join(".codex").join("hooks.json");
    match m.read_to_string(&file) {
        Ok(Some(text)) => return text.contains("written by cohort"),
        Ok(None) => {}
        Err(_) => return false,
    }
    let text = serde_json::to_string_pretty(hooks).unwrap_or_default();
    if m.write(&file, &text).is_err() {
        return false;
    }
    if worktree::toplevel(m, cwd).is_some() {
        let _ = worktree::exclude(m, cwd, "/.codex/hooks.json");
    }
    true
}
