//! `cohort reduce`: the reducers on their own, for pipes and scripts.
//!
//! - `cohort reduce --command "git log" < file` reduces what arrives on stdin as the
//!   output of that command.
//! - `cohort reduce -- git log -n 30` runs the command (stdout and stderr merged, in
//!   order), prints its output reduced, and exits with the command's exit status.
//!
//! The reduced text goes to stdout. When something was left out (or the input was
//! not clean UTF-8) one meta line (`[shown …]`) follows, saying what and where, so
//! nothing is hidden silently; when nothing was, the line would only cost tokens and
//! is left out (`--meta always` prints it anyway). `--raw` prints everything
//! unreduced.

use std::io::{Read, Write};
use std::process::{ExitCode, Stdio};

use cohort_reducers::{reduce, Options};

/// Arguments of `cohort reduce`.
#[derive(Debug, clap::Args)]
pub struct ReduceArgs {
    /// The command that produced stdin's output (selects the reducer).
    #[arg(long, value_name = "COMMAND LINE", conflicts_with = "run")]
    pub command: Option<String>,
    /// Print the output unreduced.
    #[arg(long)]
    pub raw: bool,
    /// Show at most this many lines before eliding the middle.
    #[arg(long, value_name = "N")]
    pub max_lines: Option<usize>,
    /// When to print the meta line: when something was hidden (auto), always, never.
    #[arg(long, value_enum, default_value_t = MetaLine::Auto)]
    pub meta: MetaLine,
    /// A command to run and reduce (after `--`).
    #[arg(last = true, value_name = "COMMAND")]
    pub run: Vec<String>,
}

/// When `cohort reduce` prints its meta line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MetaLine {
    /// When something was hidden or the reader must be told something.
    Auto,
    /// Every time, with the line and token counts.
    Always,
    /// Never.
    Never,
}

/// Runs `cohort reduce`.
pub fn run(args: &ReduceArgs) -> ExitCode {
    let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let user_rules = match crate::rules::load(&cwd) {
        Ok(rules) => rules,
        Err(e) => {
            eprintln!("cohort reduce: {e}");
            return ExitCode::from(2);
        }
    };
    let options = Options {
        raw: args.raw,
        max_lines: args.max_lines.or(Options::default().max_lines),
        user_rules,
        ..Options::default()
    };
    let (command, raw, status) = if args.run.is_empty() {
        let Some(command) = &args.command else {
            eprintln!("cohort reduce: say which command produced the input (--command \"git log\") or run one (-- git log -n 30)");
            return ExitCode::from(2);
        };
        let mut raw = Vec::new();
        if let Err(e) = std::io::stdin().read_to_end(&mut raw) {
            eprintln!("cohort reduce: reading stdin: {e}");
            return ExitCode::from(2);
        }
        (command.clone(), raw, 0)
    } else {
        match run_merged(&args.run) {
            Ok((raw, status)) => (shell_words(&args.run), raw, status),
            Err(e) => {
                eprintln!("cohort reduce: {e}");
                return ExitCode::from(127);
            }
        }
    };
    let reduced = reduce(&command, &raw, &options);
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(reduced.text.as_bytes());
    if !reduced.text.is_empty() && !reduced.text.ends_with('\n') {
        let _ = out.write_all(b"\n");
    }
    let tell = match args.meta {
        MetaLine::Always => true,
        MetaLine::Never => false,
        MetaLine::Auto => !reduced.hidden.is_empty() || !reduced.notices.is_empty(),
    };
    if tell {
        let _ = writeln!(out, "[{}]", reduced.meta_line());
    }
    ExitCode::from(status.clamp(0, 255) as u8)
}

/// Runs argv with stderr merged into stdout (in order), returning output and status.
fn run_merged(argv: &[String]) -> Result<(Vec<u8>, i32), String> {
    let output = std::process::Command::new("/bin/sh")
        .arg("-c")
        .arg("exec \"$@\" 2>&1")
        .arg("sh")
        .args(argv)
        .stdin(Stdio::inherit())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("could not run {}: {e}", argv[0]))?;
    use std::os::unix::process::ExitStatusExt;
    let status = output
        .status
        .code()
        .or_else(|| output.status.signal().map(|s| 128 + s))
        .unwrap_or(1);
    Ok((output.stdout, status))
}

/// The argv as one command line (for choosing the reducer).
fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|a| cohort_backends::tmux::quote::sh(a))
        .collect::<Vec<_>>()
        .join(" ")
}
