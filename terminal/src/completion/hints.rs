//! What the ladder tells a caller when a command is not complete, and what it reads
//! of a command line or a screen to word it. Names shape hints only: no verdict is
//! decided by a program's name.

use cohort_reducers::command;

/// Shells: in the foreground and waiting, the command they ran is over.
pub const SHELLS: &[&str] = &[
    "bash", "zsh", "fish", "sh", "dash", "ksh", "mksh", "tcsh", "csh", "ash", "busybox",
];

/// Pagers: they wait for a key at the end of every screenful.
pub const PAGERS: &[&str] = &["less", "more", "most", "pg"];

/// The hint of a quiescence verdict from a shell whose prompt hook no longer reports.
pub const LOST_HOOK: &str =
    "the shell is back at its prompt, but it no longer reports exit statuses: \
     its prompt hook was replaced (PROMPT_COMMAND set, `exec bash`); open a new session to \
     get them back, or pass mark: true";

/// The timeout hint when the pane's shell never showed a prompt.
pub const STILL_STARTING: &str = "the shell has not shown its first prompt yet: its startup files \
     (~/.bashrc, ~/.zshrc, ...) are still running, and what was typed runs when they finish; \
     wait again (read with wait: true), or read the screen to see what the shell is doing";

/// The hint of a line the shell ran nothing of.
pub const REJECTED: &str = "the shell ran nothing: it refused the line (a syntax error, a \
     history expansion such as `!'` that failed) or found only a comment; its message is the \
     output, and no exit status was reported";

/// The hint of a line an interrupt dropped before the shell read it.
pub const DROPPED: &str = "the shell ran nothing: the interrupt (C-c) reached it before it had \
     read the line, and the line was dropped with it; no exit status was reported: send the \
     command again to run it";

/// The hint of a line that ended with no report, where the shell has not shown yet
/// whether it reports the start of commands.
pub const UNREPORTED: &str = "the shell is back at its prompt without reporting a status: \
     it ran nothing of the line (a syntax error, a failed history expansion such as `!'`; its \
     message is the output), or its prompt hook was replaced (PROMPT_COMMAND set, `exec \
     bash`), and then mark: true gets statuses back";

/// The hint when the shell waits at its continuation prompt.
pub const CONTINUATION: &str =
    "the shell is waiting for the rest of the command (an unclosed quote, \
     bracket or here-document, or a trailing backslash): send the rest, or send the key C-c to \
     drop the line";

/// The hint when the shell itself reads input inside the command.
pub const SHELL_READS: &str = "the shell is waiting for input inside the command (a `read` or a \
     question): answer it with send, or send the key C-c to stop it";

/// The hint when the session went away.
pub const CLOSED: &str = "the session was closed while the command ran: its output up to then \
     is here; open a new session to go on";

/// The timeout hints, by what was waited for.
pub fn timeout(until: bool, mark: bool) -> &'static str {
    match (until, mark) {
        (true, _) => "the pattern did not appear: read the output, or wait again (read with wait: true and a longer timeout_ms)",
        (_, true) => "the sentinel did not come back; the command may still be running: wait again (read with wait: true) or read",
        _ => "still running: wait again (read with wait: true and a longer timeout_ms), or read what it printed so far",
    }
}

/// What to do about `name`, a program in the foreground that waits for input, whose
/// screen shows `cursor_line` before the cursor.
pub fn waiting(name: &str, full_screen: bool, cursor_line: &str) -> String {
    if PAGERS.contains(&name) {
        format!(
            "`{name}`, a pager, is waiting for a key and will not finish by itself: send the key q \
             to leave it, and pass env PAGER=cat (or GIT_PAGER=cat) where a pager was set back on"
        )
    } else if SHELLS.contains(&name) {
        format!(
            "`{name}` is running a script that waits for input (a `read` or a question) and will \
             not finish by itself: answer it with send, or send the key C-c to stop it"
        )
    } else if full_screen {
        format!(
            "`{name}` is a full-screen program waiting for keys and will not finish by itself: \
             read with mode: screen to see it, and drive it with key and send"
        )
    } else if let Some(prompt) = prompt_at_cursor(cursor_line) {
        format!(
            "`{name}` is in the foreground waiting for input at its prompt `{prompt}` and will not \
             finish by itself: send what it asks with until: {until:?} to wait for its next \
             prompt, or pass mark: true when it is a shell (ssh, docker exec)",
            until = prompt,
        )
    } else {
        format!(
            "`{name}` is in the foreground reading keys and will not finish by itself: read with \
             mode: screen to see what it shows, then answer it with send or key"
        )
    }
}

/// The prompt a program shows at the cursor, when the text there ends like one
/// (`>>> `, `irb(main):001> `, `Password: `, `[y/N]? `): its last word and what follows.
fn prompt_at_cursor(line: &str) -> Option<&str> {
    let trimmed = line.trim_end();
    let last = trimmed.chars().last()?;
    if !matches!(last, '>' | ':' | '$' | '#' | '?' | ']' | ')' | '%') {
        return None;
    }
    let start = trimmed
        .rfind(char::is_whitespace)
        .map_or(0, |i| i + 1)
        .min(trimmed.len());
    let prompt = &line[start..];
    (prompt.trim().chars().count() <= 32).then_some(prompt)
}

/// Whether a command line replaces the shell that reads it (`exec sh`; not `exec`
/// alone or with redirections only, which keeps the shell).
pub fn replaces_shell(line: &str) -> bool {
    command::walk(line).found.iter().any(|found| {
        let words = &found.command.words;
        let at = words
            .iter()
            .position(|w| !is_assignment(&w.raw))
            .unwrap_or(words.len());
        words.get(at).is_some_and(|w| w.text == "exec") && words.len() > at + 1
    })
}

/// Whether a command line sets or removes a shell's prompt hook (bash's
/// `PROMPT_COMMAND`, zsh's `precmd_functions`), which cohort's marks come from.
pub fn replaces_prompt_hook(line: &str) -> bool {
    const HOOKS: &[&str] = &["PROMPT_COMMAND", "precmd_functions", "preexec_functions"];
    let names_hook = |text: &str| {
        HOOKS.iter().any(|hook| {
            text.strip_prefix(hook)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['=', '+', '[']))
        })
    };
    command::walk(line).found.iter().any(|found| {
        let words = &found.command.words;
        // Assignments come before the program: `echo PROMPT_COMMAND=x` sets nothing.
        let assigns = words
            .iter()
            .take_while(|w| is_assignment(&w.raw))
            .any(|w| names_hook(&w.raw));
        let declared = words.first().is_some_and(|w| {
            matches!(
                w.text.as_str(),
                "unset" | "declare" | "typeset" | "export" | "local"
            )
        }) && words.iter().skip(1).any(|w| names_hook(&w.text));
        assigns || declared
    })
}

/// `NAME=value` (a word that assigns, not a command).
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name
                .trim_end_matches('+')
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

/// `>` alone, or words then `>` (zsh's `dquote>`, `if then>`): not a prompt that names a
/// user, host or directory (`me@host:~>`).
pub fn is_continuation_prompt(text: &str) -> bool {
    text.trim_end()
        .strip_suffix('>')
        .is_some_and(|words| words.chars().all(|c| c.is_ascii_lowercase() || c == ' '))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_that_end_the_prompt_hook() {
        for line in [
            "exec sh",
            "exec bash --norc",
            "FOO=1 exec zsh",
            "cd /tmp && exec bash",
        ] {
            assert!(replaces_shell(line), "{line:?}");
        }
        for line in [
            "exec 3>/tmp/log",
            "exec",
            "echo exec sh",
            "bash -c 'echo exec'",
        ] {
            assert!(!replaces_shell(line), "{line:?}");
        }
        for line in [
            "PROMPT_COMMAND='history -a'",
            "export PROMPT_COMMAND=date",
            "unset PROMPT_COMMAND",
            "PROMPT_COMMAND+=(date)",
            "precmd_functions=()",
        ] {
            assert!(replaces_prompt_hook(line), "{line:?}");
        }
        for line in ["echo PROMPT_COMMAND=x", "echo $PROMPT_COMMAND", "read -n1"] {
            assert!(!replaces_prompt_hook(line), "{line:?}");
        }
    }

    #[test]
    fn prompts_at_the_cursor_are_offered_to_until() {
        assert!(waiting("python3", false, ">>> ").contains(r#"until: ">>> ""#));
        assert!(waiting("psql", false, "app=# ").contains(r#"until: "app=# ""#));
        let top = waiting("top", false, "  PID USER      PR  NI");
        assert!(!top.contains("until"), "{top}");
        assert!(waiting("top", true, "").contains("full-screen"));
    }

    #[test]
    fn continuation_prompts() {
        for text in ["> ", ">", "dquote> ", "heredoc> ", "if then> "] {
            assert!(is_continuation_prompt(text), "{text:?}");
        }
        for text in ["me@host:~> ", "$ ", "", "PS C:\\> ", ">>> "] {
            assert!(!is_continuation_prompt(text), "{text:?}");
        }
    }
}
