//! What the ladder tells a caller when a command is not complete, and the program
//! names that shape it.

/// Shells: in the foreground and waiting, the command they ran is over.
pub const SHELLS: &[&str] = &[
    "bash", "zsh", "fish", "sh", "dash", "ksh", "mksh", "tcsh", "csh", "ash", "busybox",
];

/// Pagers: they wait for a key at the end of every screenful.
pub const PAGERS: &[&str] = &["less", "more", "most", "pg"];

/// Programs that wait for input when quiet: REPLs, remote shells, editors, pagers.
pub const INTERACTIVE: &[&str] = &[
    "python",
    "python3",
    "python2",
    "ipython",
    "node",
    "deno",
    "bun",
    "irb",
    "pry",
    "ruby",
    "php",
    "ghci",
    "R",
    "julia",
    "lua",
    "erl",
    "iex",
    "scala",
    "sbt",
    "clojure",
    "ssh",
    "mosh",
    "mosh-client",
    "telnet",
    "psql",
    "mysql",
    "mariadb",
    "sqlite3",
    "redis-cli",
    "mongo",
    "mongosh",
    "bash",
    "zsh",
    "sh",
    "dash",
    "fish",
    "ksh",
    "docker",
    "kubectl",
    "claude",
    "codex",
    "aider",
    "gemini",
    "less",
    "more",
    "man",
    "vi",
    "vim",
    "nvim",
    "nano",
    "emacs",
    "top",
    "htop",
    "watch",
    "tail",
    "gdb",
    "lldb",
    "pdb",
    "ftp",
    "sftp",
];

/// The hint of a quiescence verdict from a shell whose prompt hook no longer reports.
pub const LOST_HOOK: &str =
    "the shell is back at its prompt, but it no longer reports exit statuses: \
     its prompt hook was replaced (PROMPT_COMMAND set, `exec bash`); open a new session to \
     get them back, or pass mark: true";

/// The timeout hint when the pane's shell never showed a prompt.
pub const STILL_STARTING: &str = "the shell has not shown its first prompt yet: its startup files \
     (~/.bashrc, ~/.zshrc, ...) are still running, and what was typed runs when they finish; \
     wait again (read with wait: true), or read the screen to see what the shell is doing";

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

/// What to do about `name`, a program in the foreground that waits for input.
pub fn waiting(name: &str, full_screen: bool) -> String {
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
    } else {
        format!(
            "`{name}` is in the foreground waiting for input and will not finish by itself: pass until \
             (e.g. its prompt, \">>> \") to wait for it, answer it with send, or pass mark: true when it \
             is a shell (ssh, docker exec)"
        )
    }
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
    fn continuation_prompts() {
        for text in ["> ", ">", "dquote> ", "heredoc> ", "if then> "] {
            assert!(is_continuation_prompt(text), "{text:?}");
        }
        for text in ["me@host:~> ", "$ ", "", "PS C:\\> ", ">>> "] {
            assert!(!is_continuation_prompt(text), "{text:?}");
        }
    }
}
