//! Seeing through wrappers to the program that runs, and finding the command text a
//! command hands on to be run (`bash -c`, `eval`, `find -exec`, substitutions, bodies).

use super::lex::is_keyword;
use super::{program_name, Body, BodyKind, Command, Nested, Origin, Word};

/// Options of each wrapper that take the next word as their value.
const SUDO: &[&str] = &[
    "-u",
    "-g",
    "-h",
    "-p",
    "-C",
    "-D",
    "-r",
    "-t",
    "-U",
    "-T",
    "--user",
    "--group",
    "--host",
    "--prompt",
    "--close-from",
    "--chdir",
    "--role",
    "--type",
    "--other-user",
    "--command-timeout",
];
const DOAS: &[&str] = &["-u", "-C"];
const ENV: &[&str] = &["-u", "-C", "-S", "--unset", "--chdir", "--split-string"];
const EXEC: &[&str] = &["-a"];
const NICE: &[&str] = &["-n", "--adjustment"];
const TIME: &[&str] = &["-f", "--format", "-o", "--output"];
const TIMEOUT: &[&str] = &["-s", "--signal", "-k", "--kill-after"];
const STDBUF: &[&str] = &["-i", "-o", "-e", "--input", "--output", "--error"];
const IONICE: &[&str] = &["-c", "-n", "-p", "-P", "-u", "--class", "--classdata"];
const XARGS: &[&str] = &[
    "-n",
    "-I",
    "-P",
    "-L",
    "-d",
    "-E",
    "-s",
    "-a",
    "--max-args",
    "--max-procs",
    "--max-lines",
    "--delimiter",
    "--eof",
    "--max-chars",
    "--arg-file",
    "--process-slot-var",
];
const NPX: &[&str] = &["-p", "--package", "-c", "--call"];
const UV_RUN: &[&str] = &[
    "--with",
    "--python",
    "-p",
    "--project",
    "--directory",
    "--package",
    "--extra",
    "--group",
    "--env-file",
    "--from",
    "--with-requirements",
    "--index-url",
];
const PIPX_RUN: &[&str] = &["--spec", "--python"];
/// Options of `watch` that take a value.
const WATCH: &[&str] = &["-n", "--interval", "-q", "--equexit"];

/// Whether `word` is an assignment (`NAME=value`, `NAME+=value`) by its unquoted name.
pub(super) fn is_assignment(word: &Word) -> bool {
    let Some((name, _)) = word.raw.split_once('=') else {
        return false;
    };
    let name = name.strip_suffix('+').unwrap_or(name);
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The index after the options that start at `i`; `valued` lists those that take the next
/// word. `--` ends the options and is skipped.
fn skip_options(words: &[Word], mut i: usize, valued: &[&str]) -> usize {
    while let Some(w) = words.get(i) {
        let t = w.text.as_str();
        if t == "--" {
            return i + 1;
        }
        if !t.starts_with('-') || t == "-" {
            break;
        }
        i += if valued.contains(&t) { 2 } else { 1 };
    }
    i
}

/// Where the wrapped command starts when `words[i]` is a wrapper, `None` when it is not one.
fn after_wrapper(words: &[Word], i: usize) -> Option<usize> {
    let name = program_name(&words[i].text);
    let next = words.get(i + 1).map(|w| w.text.as_str());
    let third = words.get(i + 2).map(|w| w.text.as_str());
    let skip = |from: usize, valued: &[&str]| skip_options(words, from, valued);
    Some(match (name, next) {
        ("sudo", _) => skip(i + 1, SUDO),
        ("doas", _) => skip(i + 1, DOAS),
        ("env", _) => skip(i + 1, ENV),
        ("command", Some("-v" | "-V")) => return None,
        ("command" | "builtin" | "nohup", _) => skip(i + 1, &[]),
        ("exec", _) => skip(i + 1, EXEC),
        ("nice", _) => skip(i + 1, NICE),
        ("time", _) => skip(i + 1, TIME),
        ("timeout", _) => skip(i + 1, TIMEOUT) + 1,
        ("stdbuf", _) => skip(i + 1, STDBUF),
        ("ionice", _) => skip(i + 1, IONICE),
        ("xargs", _) => skip(i + 1, XARGS),
        ("npx" | "bunx", _) => skip(i + 1, NPX),
        ("bun", Some("x")) => skip(i + 2, NPX),
        ("pnpm" | "yarn" | "npm", Some("exec" | "dlx" | "x")) => skip(i + 2, NPX),
        ("uvx", _) => skip(i + 1, UV_RUN),
        ("uv", Some("run")) => skip(i + 2, UV_RUN),
        ("uv", Some("tool")) if third == Some("run") => skip(i + 3, UV_RUN),
        ("pipx", Some("run")) => skip(i + 2, PIPX_RUN),
        ("poetry" | "pdm" | "pipenv" | "hatch" | "rye", Some("run")) => skip(i + 2, &[]),
        _ => return None,
    })
}

/// See [`Command::effective`](super::Command::effective).
pub(super) fn effective<'w>(words: &'w [Word], body: Option<&Body>) -> &'w [Word] {
    if body.is_some_and(|b| b.kind == BodyKind::Function) {
        return &[];
    }
    let mut i = 0;
    // Every turn moves past at least one word, so this ends within `words.len()` turns.
    loop {
        // `time` is a keyword too, but its options are skipped as a wrapper's.
        let keyword = |w: &Word| !w.quoted && is_keyword(&w.text) && w.text != "time";
        while words.get(i).is_some_and(|w| keyword(w) || is_assignment(w)) {
            i += 1;
        }
        if i >= words.len() {
            return &[];
        }
        match after_wrapper(words, i) {
            Some(j) if j < words.len() => i = j,
            // A wrapper with nothing to run is the program itself (`sudo -l`, `env`).
            _ => break,
        }
    }
    let first = &words[i];
    let header = !first.quoted
        && matches!(
            first.text.as_str(),
            "for" | "select" | "case" | "function" | "fi" | "done" | "esac" | "}"
        );
    if header {
        &[]
    } else {
        &words[i..]
    }
}

/// The value of the first of `names` among the options that start at `from`
/// (`-c VALUE`, `--call=VALUE`, `-cVALUE` for a one-letter name).
fn option_value<'w>(words: &'w [Word], from: usize, names: &[&str]) -> Option<&'w str> {
    let mut i = from;
    while let Some(w) = words.get(i) {
        let t = w.text.as_str();
        if t == "--" || !t.starts_with('-') || t == "-" {
            return None;
        }
        if names.contains(&t) {
            return words.get(i + 1).map(|w| w.text.as_str());
        }
        for name in names {
            if let Some(v) = t.strip_prefix(name) {
                let long = name.starts_with("--");
                if (long && v.starts_with('=')) || (!long && !v.is_empty()) {
                    return Some(v.strip_prefix('=').unwrap_or(v));
                }
            }
        }
        i += 1;
    }
    None
}

/// The shells whose `-c` argument is a command line.
fn is_shell(name: &str) -> bool {
    matches!(
        name,
        "sh" | "bash" | "zsh" | "dash" | "ksh" | "mksh" | "ash" | "yash" | "fish" | "busybox"
    )
}

/// For `bash -c 'code' …`, `sh -ec 'code'`, `bash -o pipefail -c 'code'`: the code.
fn shell_code(args: &[Word]) -> Option<&str> {
    let mut command_mode = false;
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        if t == "--" {
            i += 1;
            break;
        }
        let option = (t.starts_with('-') || t.starts_with('+')) && t.len() > 1;
        if !option {
            break;
        }
        if matches!(t, "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file") {
            i += 2;
            continue;
        }
        if t == "--command" {
            return args.get(i + 1).map(|w| w.text.as_str());
        }
        command_mode |= t.starts_with('-') && !t.starts_with("--") && t.contains('c');
        i += 1;
    }
    if command_mode {
        args.get(i).map(|w| w.text.as_str())
    } else {
        None
    }
}

fn joined(words: &[Word]) -> String {
    let texts: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
    texts.join(" ")
}

/// See [`Command::nested`](super::Command::nested).
pub(super) fn nested(command: &Command) -> Vec<Nested> {
    let mut out = Vec::new();
    let script = |origin: Origin, text: &str| Nested::Script {
        origin,
        text: text.to_owned(),
    };
    if let Some(body) = &command.body {
        out.push(script(Origin::Body(body.kind), &body.text));
    }
    let words = command.words.iter();
    let redirected = command
        .redirects
        .iter()
        .flat_map(|r| r.target.iter().chain(r.here_doc.iter()));
    for w in words.chain(redirected) {
        for code in &w.substitutions {
            out.push(script(Origin::Substitution, code));
        }
    }
    // Wrappers that take code as an option's value: `env -S 'prog args'`, `npx -c 'cmd'`.
    for (i, w) in command.words.iter().enumerate() {
        let next = command.words.get(i + 1).map(|n| n.text.as_str());
        let (from, names): (usize, &[&str]) = match (program_name(&w.text), next) {
            ("env", _) => (i + 1, &["-S", "--split-string"]),
            ("npx", _) => (i + 1, &["-c", "--call"]),
            ("npm" | "pnpm", Some("exec" | "dlx" | "x")) => (i + 2, &["-c", "--call"]),
            _ => continue,
        };
        if let Some(code) = option_value(&command.words, from, names) {
            out.push(script(Origin::Argument, code));
        }
    }
    let run = command.effective();
    let Some(first) = run.first() else {
        return out;
    };
    let args = &run[1..];
    match program_name(&first.text) {
        name if is_shell(name) => {
            if let Some(code) = shell_code(args) {
                out.push(script(Origin::Argument, code));
            }
        }
        "eval" if !args.is_empty() => out.push(script(Origin::Argument, &joined(args))),
        "su" | "runuser" => {
            if let Some(code) = option_value(args, 0, &["-c", "--command"]) {
                out.push(script(Origin::Argument, code));
            }
        }
        "watch" => {
            let start = skip_options(args, 0, WATCH);
            let exec = args[..start.min(args.len())]
                .iter()
                .any(|w| w.text == "-x" || w.text == "--exec");
            if start < args.len() {
                let rest = &args[start..];
                out.push(if exec {
                    Nested::Command(Command {
                        words: rest.to_vec(),
                        ..Command::default()
                    })
                } else {
                    script(Origin::Argument, &joined(rest))
                });
            }
        }
        "find" => {
            let mut i = 0;
            while i < args.len() {
                let exec = matches!(
                    args[i].text.as_str(),
                    "-exec" | "-execdir" | "-ok" | "-okdir"
                );
                i += 1;
                if !exec {
                    continue;
                }
                let from = i;
                while i < args.len()
                    && args[i].text != ";"
                    && !(args[i].text == "+" && args[i - 1].text == "{}")
                {
                    i += 1;
                }
                if i > from {
                    out.push(Nested::Command(Command {
                        words: args[from..i].to_vec(),
                        ..Command::default()
                    }));
                }
                i += 1;
            }
        }
        _ => {}
    }
    out
}
