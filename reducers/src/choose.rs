//! Choosing a reducer from the command line that produced the output.
//!
//! The command is split like a shell would (quotes, escapes, operators), wrappers are seen
//! through (`sudo`, `env`, `VAR=x`, `command`, `exec`, `time`, `nice`, `nohup`, `timeout`,
//! `uv run`, `poetry run`, `npx`, `pnpm exec`, `python -m`, `bash -c`, `xargs` …), and the
//! program and its subcommand pick a [`ReducerKind`]. In a pipeline the last stage that
//! shapes the output decides (`cargo test 2>&1 | tail -40` is cargo's output); in a chain
//! (`&&`, `||`, `;`) only a single stage that prints anything can decide, otherwise the
//! output is generic.

/// The built-in reducers. [`ReducerKind::Generic`] means the generic pipeline alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReducerKind {
    /// No command-specific reducer.
    Generic,
    /// `git status` (human, short and porcelain forms).
    GitStatus,
    /// `git log`, `git show`.
    GitLog,
    /// `git diff`.
    GitDiff,
    /// `grep`, `rg`, `ag`, `git grep`.
    Grep,
    /// `pytest`, `python -m pytest`.
    Pytest,
    /// Python programs (`python3 app.py`) and `python -m unittest`: their tracebacks.
    Python,
    /// `cargo build`, `check`, `clippy`, `run`, `doc`, `install`.
    Cargo,
    /// `cargo test`, `cargo nextest run`.
    CargoTest,
    /// `npm`/`pnpm`/`yarn`/`bun` `install`, `add`, `ci`, `update`.
    JsInstall,
    /// `jest`, `vitest`, and `npm test` / `npm run …` scripts (recognised by their output).
    JsTest,
    /// `tsc`, `eslint` and other linters that print one diagnostic per line.
    Lint,
    /// `go test`.
    GoTest,
    /// `go build`, `go vet`, `go run`, `go install`, `go get`, `go mod`.
    GoBuild,
    /// `make`, `gmake`, `cmake --build`.
    Make,
    /// `gcc`, `g++`, `cc`, `c++`, `clang`, `clang++`.
    Cc,
    /// `javac`.
    Javac,
    /// Node.js programs: `node app.js`, `tsx`, `ts-node`, `deno run`.
    Node,
    /// `ls` (long listings are grouped).
    Ls,
    /// `find`, `fd`, `git ls-files`, `locate`.
    Find,
    /// `tree`.
    Tree,
    /// `du`.
    Du,
    /// `df`.
    Df,
    /// `ps`.
    Ps,
    /// `docker ps`, `docker images` and other table-printing docker commands.
    DockerPs,
    /// `docker build`, `docker buildx build`, `docker compose build`.
    DockerBuild,
    /// `pip install`, `uv pip install`.
    Pip,
    /// `journalctl`, `tail -f`/`tail -n` of a file, `docker logs`, `kubectl logs`, `dmesg`.
    Log,
}

impl ReducerKind {
    /// The name reported in [`Reduced::reducer`](crate::Reduced::reducer).
    pub fn name(self) -> &'static str {
        match self {
            ReducerKind::Generic => "generic",
            ReducerKind::GitStatus => "git-status",
            ReducerKind::GitLog => "git-log",
            ReducerKind::GitDiff => "git-diff",
            ReducerKind::Grep => "grep",
            ReducerKind::Pytest => "pytest",
            ReducerKind::Python => "python",
            ReducerKind::Cargo => "cargo",
            ReducerKind::CargoTest => "cargo-test",
            ReducerKind::JsInstall => "js-install",
            ReducerKind::JsTest => "js-test",
            ReducerKind::Lint => "lint",
            ReducerKind::GoTest => "go-test",
            ReducerKind::GoBuild => "go-build",
            ReducerKind::Make => "make",
            ReducerKind::Cc => "cc",
            ReducerKind::Javac => "javac",
            ReducerKind::Node => "node",
            ReducerKind::Ls => "ls",
            ReducerKind::Find => "find",
            ReducerKind::Tree => "tree",
            ReducerKind::Du => "du",
            ReducerKind::Df => "df",
            ReducerKind::Ps => "ps",
            ReducerKind::DockerPs => "docker-ps",
            ReducerKind::DockerBuild => "docker-build",
            ReducerKind::Pip => "pip",
            ReducerKind::Log => "log",
        }
    }
}

/// Picks the reducer for the output of `command`.
///
/// ```
/// use cohort_reducers::{choose_reducer, ReducerKind};
/// assert_eq!(choose_reducer("sudo -E RUST_LOG=1 cargo test --lib"), ReducerKind::CargoTest);
/// assert_eq!(choose_reducer("cd app && uv run python -m pytest -x"), ReducerKind::Pytest);
/// assert_eq!(choose_reducer("git log --oneline | head -20"), ReducerKind::GitLog);
/// assert_eq!(choose_reducer("make && ./run-tests"), ReducerKind::Generic);
/// ```
pub fn choose_reducer(command: &str) -> ReducerKind {
    match invocation(command) {
        Some(words) => classify(&words),
        None => ReducerKind::Generic,
    }
}

/// The words of the one command whose output is shown, wrappers removed; `None` when no
/// single command can be named (a chain of several printing commands, an empty line).
pub(crate) fn invocation(command: &str) -> Option<Vec<String>> {
    invocation_depth(command, 0)
}

fn invocation_depth(command: &str, depth: usize) -> Option<Vec<String>> {
    let tokens = lex(command);
    // Split into chain segments, each a pipeline of stages.
    let mut segments: Vec<Vec<Vec<String>>> = vec![vec![vec![]]];
    for t in tokens {
        match t {
            Tok::Word(w) => segments.last_mut()?.last_mut()?.push(w),
            Tok::Pipe => segments.last_mut()?.push(vec![]),
            Tok::Chain => segments.push(vec![vec![]]),
        }
    }
    let printing: Vec<Vec<Vec<String>>> = segments
        .into_iter()
        .filter(|pipeline| {
            let first = unwrap(&pipeline[0]);
            !(first.is_empty() || (pipeline.len() == 1 && is_silent(&first)))
        })
        .collect();
    let [pipeline] = printing.as_slice() else {
        return None;
    };
    // The last stage that shapes the output: pass-through filters are skipped.
    let mut chosen = None;
    for (n, stage) in pipeline.iter().enumerate().rev() {
        if n > 0 && is_filter(stage) {
            continue;
        }
        chosen = Some(unwrap(stage));
        break;
    }
    let words = chosen?;
    // `bash -c '…'` and `sh -c '…'`: decide from the inner command.
    if depth < 4 && words.len() >= 3 && matches!(base(&words[0]), "bash" | "sh" | "zsh" | "dash") {
        if let Some(at) = words.iter().position(|w| w == "-c" || w == "-lc") {
            if let Some(inner) = words.get(at + 1) {
                return invocation_depth(inner, depth + 1);
            }
        }
    }
    Some(words)
}

#[derive(Debug, PartialEq)]
enum Tok {
    Word(String),
    Pipe,
    Chain,
}

/// Shell-like splitting: quotes, backslashes, `|`, `|&`, `||`, `&&`, `;`, `&`, newlines.
/// Redirections (`2>&1`, `> file`, `<file`) are dropped with their targets.
fn lex(s: &str) -> Vec<Tok> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = s.chars().peekable();
    let mut skip_next_word = false;
    let finish = |word: &mut String, in_word: &mut bool, skip: &mut bool, out: &mut Vec<Tok>| {
        if *in_word {
            if *skip {
                *skip = false;
            } else {
                out.push(Tok::Word(std::mem::take(word)));
            }
        }
        word.clear();
        *in_word = false;
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    word.push(c);
                }
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => {
                            if let Some(n) = chars.next() {
                                word.push(n);
                            }
                        }
                        _ => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(n) = chars.next() {
                    if n != '\n' {
                        word.push(n);
                    }
                }
            }
            ' ' | '\t' => finish(&mut word, &mut in_word, &mut skip_next_word, &mut out),
            '|' | '&' | ';' | '\n' => {
                finish(&mut word, &mut in_word, &mut skip_next_word, &mut out);
                let doubled = chars.peek() == Some(&c);
                if doubled {
                    chars.next();
                }
                let tok = match (c, doubled) {
                    ('|', false) => {
                        if chars.peek() == Some(&'&') {
                            chars.next();
                        }
                        Tok::Pipe
                    }
                    _ => Tok::Chain,
                };
                out.push(tok);
            }
            '>' | '<' => {
                // A redirection: drop the file descriptor digits before it, and its target.
                let fd_only = in_word && word.chars().all(|c| c.is_ascii_digit());
                if fd_only {
                    word.clear();
                    in_word = false;
                } else {
                    finish(&mut word, &mut in_word, &mut skip_next_word, &mut out);
                }
                while matches!(chars.peek(), Some('>' | '<' | '|')) {
                    chars.next();
                }
                if chars.peek() == Some(&'&') {
                    chars.next();
                    while chars
                        .peek()
                        .is_some_and(|c| c.is_ascii_digit() || *c == '-')
                    {
                        chars.next();
                    }
                } else {
                    while matches!(chars.peek(), Some(' ' | '\t')) {
                        chars.next();
                    }
                    skip_next_word = true;
                }
            }
            _ => {
                in_word = true;
                word.push(c);
            }
        }
    }
    finish(&mut word, &mut in_word, &mut skip_next_word, &mut out);
    out
}

fn base(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

/// Skips leading options; `with_value` lists the options that take the next word.
fn skip_options(words: &[String], mut i: usize, with_value: &[&str]) -> usize {
    while let Some(w) = words.get(i) {
        if w == "--" {
            return i + 1;
        }
        if !w.starts_with('-') || w == "-" {
            break;
        }
        i += if with_value.contains(&w.as_str()) {
            2
        } else {
            1
        };
    }
    i
}

/// Removes wrappers until the real program comes first.
fn unwrap(stage: &[String]) -> Vec<String> {
    let mut i = 0;
    for _ in 0..16 {
        while stage.get(i).is_some_and(|w| is_assignment(w)) {
            i += 1;
        }
        let Some(first) = stage.get(i) else { break };
        let next = stage.get(i + 1).map(String::as_str);
        i = match (base(first), next) {
            ("sudo" | "doas", _) => skip_options(
                stage,
                i + 1,
                &["-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T"],
            ),
            ("env", _) => {
                let j = skip_options(stage, i + 1, &["-u", "-C", "-S", "--unset", "--chdir"]);
                j + stage[j..].iter().take_while(|w| is_assignment(w)).count()
            }
            ("command" | "builtin" | "nohup" | "time" | "exec", _) => {
                skip_options(stage, i + 1, &["-a"])
            }
            ("nice", _) => skip_options(stage, i + 1, &["-n"]),
            ("ionice", _) => skip_options(stage, i + 1, &["-c", "-n", "-p"]),
            ("stdbuf", _) => skip_options(stage, i + 1, &[]),
            ("timeout", _) => {
                skip_options(stage, i + 1, &["-s", "-k", "--signal", "--kill-after"]) + 1
            }
            ("xargs", _) => skip_options(
                stage,
                i + 1,
                &["-n", "-I", "-P", "-L", "-d", "-E", "-s", "-a"],
            ),
            ("uv", Some("run")) => skip_options(
                stage,
                i + 2,
                &[
                    "--with",
                    "--python",
                    "-p",
                    "--project",
                    "--directory",
                    "--package",
                    "--extra",
                    "--group",
                    "--env-file",
                ],
            ),
            ("uvx" | "pipx", _) => {
                let j = if next == Some("run") { i + 2 } else { i + 1 };
                skip_options(stage, j, &["--from", "--with", "--python", "-p"])
            }
            ("poetry" | "pdm" | "pipenv" | "hatch" | "rye", Some("run")) => {
                skip_options(stage, i + 2, &[])
            }
            ("npx" | "bunx", _) => skip_options(stage, i + 1, &["-p", "--package", "-c"]),
            ("pnpm" | "yarn" | "npm", Some("exec" | "dlx")) => skip_options(stage, i + 2, &["-c"]),
            ("bun", Some("x")) => i + 2,
            (py, Some(_)) if is_python(py) => {
                let mut j = i + 1;
                while stage
                    .get(j)
                    .is_some_and(|w| w.starts_with('-') && !w.starts_with("-m"))
                {
                    j += if matches!(stage[j].as_str(), "-W" | "-X") {
                        2
                    } else {
                        1
                    };
                }
                match stage.get(j).map(String::as_str) {
                    Some("-m") => j + 1,
                    // `-mpytest`
                    Some(m) if m.starts_with("-m") => {
                        return std::iter::once(m[2..].to_owned())
                            .chain(stage[j + 1..].iter().cloned())
                            .collect();
                    }
                    _ => break,
                }
            }
            _ => break,
        };
    }
    stage.get(i..).map(<[String]>::to_vec).unwrap_or_default()
}

fn is_python(word: &str) -> bool {
    word == "py"
        || word
            .strip_prefix("python")
            .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// `gcc-12`, `clang-17`, `x86_64-linux-gnu-gcc`, `aarch64-none-elf-g++`.
fn is_versioned_compiler(word: &str) -> bool {
    let name = word
        .rsplit('-')
        .find(|part| !part.chars().all(|c| c.is_ascii_digit()));
    word.contains('-') && matches!(name, Some("gcc" | "g++" | "clang" | "clang++" | "cc"))
}

/// Commands that print nothing in the normal case, so a chain through them still has one
/// output to reduce (`cd app && cargo test`).
fn is_silent(words: &[String]) -> bool {
    let Some(first) = words.first() else {
        return true;
    };
    matches!(
        base(first),
        "cd" | "export"
            | "set"
            | "unset"
            | "source"
            | "."
            | "true"
            | ":"
            | "alias"
            | "mkdir"
            | "clear"
            | "shopt"
            | "ulimit"
            | "umask"
    ) || (words.len() == 1 && is_assignment(first))
}

/// Pipeline stages that pass the earlier stage's lines through (maybe fewer or reordered).
fn is_filter(words: &[String]) -> bool {
    let Some(first) = words.first() else {
        return true;
    };
    let positionals = words[1..].iter().filter(|w| !w.starts_with('-')).count();
    match base(first) {
        "head" | "tail" => words[1..]
            .iter()
            .all(|w| w.starts_with('-') || w.chars().all(|c| c.is_ascii_digit())),
        "less" | "more" | "cat" | "tee" | "sort" | "uniq" | "most" => {
            base(first) == "tee"
                || positionals == 0
                || words[1..]
                    .iter()
                    .all(|w| w.starts_with('-') || w.chars().all(|c| c.is_ascii_digit()))
        }
        // `grep PATTERN` as a filter keeps the earlier stage's format.
        "grep" | "egrep" | "fgrep" | "rg" => positionals <= 1,
        _ => false,
    }
}

fn classify(words: &[String]) -> ReducerKind {
    use ReducerKind as K;
    let Some(first) = words.first() else {
        return K::Generic;
    };
    let prog = base(first);
    let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
    let sub = |skip_with_value: &[&str]| -> Option<&str> {
        let mut i = 0;
        while let Some(a) = args.get(i) {
            if a.starts_with('+') || a.starts_with('-') {
                i += if skip_with_value.contains(a) { 2 } else { 1 };
            } else {
                return Some(a);
            }
        }
        None
    };
    match prog {
        "git" => match sub(&[
            "-C",
            "-c",
            "--git-dir",
            "--work-tree",
            "--namespace",
            "--exec-path",
        ]) {
            Some("status") => K::GitStatus,
            Some("log" | "show" | "whatchanged") => K::GitLog,
            Some("diff") => K::GitDiff,
            Some("grep") => K::Grep,
            Some("ls-files") => K::Find,
            _ => K::Generic,
        },
        "grep" | "egrep" | "fgrep" | "rg" | "ag" | "ack" => K::Grep,
        "pytest" | "py.test" => K::Pytest,
        "unittest" => K::Python,
        p if is_python(p) => K::Python,
        "cargo" => match sub(&["--color", "-Z", "--config", "-C"]) {
            Some("test" | "t" | "nextest") => K::CargoTest,
            Some(
                "build" | "b" | "check" | "c" | "clippy" | "run" | "r" | "doc" | "d" | "install"
                | "fix" | "rustc" | "bench",
            ) => K::Cargo,
            _ => K::Generic,
        },
        "cargo-nextest" => K::CargoTest,
        "npm" | "pnpm" | "yarn" | "bun" => match sub(&[
            "--prefix",
            "-C",
            "--dir",
            "--filter",
            "-F",
            "-w",
            "--workspace",
            "--cwd",
        ]) {
            None if prog == "yarn" => K::JsInstall,
            Some(
                "install" | "i" | "ci" | "add" | "update" | "up" | "upgrade" | "uninstall"
                | "remove" | "rm" | "un" | "audit",
            ) => K::JsInstall,
            Some(_) => K::JsTest,
            None => K::Generic,
        },
        "jest" | "vitest" => K::JsTest,
        "tsc" | "vue-tsc" | "eslint" | "oxlint" | "biome" | "ruff" | "flake8" | "pylint"
        | "mypy" | "shellcheck" | "golangci-lint" | "stylelint" => K::Lint,
        "go" => match sub(&["-C"]) {
            Some("test") => K::GoTest,
            Some("build" | "vet" | "run" | "install" | "get" | "mod" | "generate") => K::GoBuild,
            _ => K::Generic,
        },
        "make" | "gmake" | "bmake" => K::Make,
        "cmake" if args.contains(&"--build") => K::Make,
        "gcc" | "g++" | "cc" | "c++" | "clang" | "clang++" => K::Cc,
        "javac" => K::Javac,
        "node" | "nodejs" | "tsx" | "ts-node" => K::Node,
        "deno" if args.first() == Some(&"run") => K::Node,
        p if is_versioned_compiler(p) => K::Cc,
        "ls" | "ll" | "dir" | "exa" | "eza" => K::Ls,
        "find" | "fd" | "fdfind" | "locate" => K::Find,
        "tree" => K::Tree,
        "du" | "dust" => K::Du,
        "df" => K::Df,
        "ps" => K::Ps,
        "docker" | "podman" | "nerdctl" => match sub(&[
            "-H",
            "--host",
            "--context",
            "-c",
            "--config",
            "-l",
            "--log-level",
        ]) {
            Some("ps" | "images" | "image" | "container" | "volume" | "network") => {
                if args.contains(&"build") {
                    K::DockerBuild
                } else if args.contains(&"logs") {
                    K::Log
                } else {
                    K::DockerPs
                }
            }
            Some("build" | "buildx") => K::DockerBuild,
            Some("compose") if args.contains(&"build") => K::DockerBuild,
            Some("compose") if args.contains(&"logs") || args.contains(&"up") => K::Log,
            Some("logs") => K::Log,
            _ => K::Generic,
        },
        "docker-compose" if args.contains(&"build") => K::DockerBuild,
        "pip" | "pip3" if args.contains(&"install") => K::Pip,
        "uv" if args.first() == Some(&"pip") && args.contains(&"install") => K::Pip,
        p if p.starts_with("pip") && args.contains(&"install") => K::Pip,
        "journalctl" | "dmesg" => K::Log,
        "kubectl" if args.contains(&"logs") => K::Log,
        "tail" => K::Log,
        _ => K::Generic,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ReducerKind as K;

    #[test]
    fn wrappers_are_seen_through() {
        for (cmd, kind) in [
            ("git status", K::GitStatus),
            ("git -C repo --no-pager log -n 30", K::GitLog),
            (
                "sudo -u build env -i PATH=/bin FOO=1 cargo build --release",
                K::Cargo,
            ),
            ("RUST_BACKTRACE=1 cargo test", K::CargoTest),
            ("command cargo +nightly clippy", K::Cargo),
            ("exec nice -n 10 time -p make -j4", K::Make),
            ("gcc -Wall -o app main.c", K::Cc),
            ("python3 -u app.py --port 80", K::Python),
            ("node --enable-source-maps dist/app.js", K::Node),
            ("javac -d out src/Main.java", K::Javac),
            ("python -m unittest discover -s tests", K::Python),
            ("x86_64-linux-gnu-gcc-12 -c a.c", K::Cc),
            ("clang-17 a.c", K::Cc),
            ("gcc-ar rcs lib.a a.o", K::Generic),
            ("timeout 60 go test ./...", K::GoTest),
            ("uv run --with rich pytest -q", K::Pytest),
            ("poetry run python -m pytest tests", K::Pytest),
            ("python3 -m pytest", K::Pytest),
            ("python -mpytest -x", K::Pytest),
            ("python3 -m pip install -r requirements.txt", K::Pip),
            ("npx --yes vitest run", K::JsTest),
            ("pnpm exec jest", K::JsTest),
            ("npx tsc --noEmit", K::Lint),
            ("/usr/bin/git diff", K::GitDiff),
            ("bash -c 'cd x && git log'", K::GitLog),
            ("cargo nextest run", K::CargoTest),
            ("uv pip install ruff", K::Pip),
            ("docker compose build", K::DockerBuild),
            ("docker container ls -a", K::DockerPs),
            ("find . -name '*.rs' | xargs grep -n unwrap", K::Grep),
        ] {
            assert_eq!(choose_reducer(cmd), kind, "{cmd}");
        }
    }

    #[test]
    fn pipelines_and_chains() {
        for (cmd, kind) in [
            ("cargo test 2>&1 | tail -n 40", K::CargoTest),
            ("git log --oneline | head -20", K::GitLog),
            ("du -sh * | sort -h", K::Du),
            ("ps aux | grep python", K::Ps),
            ("git log | wc -l", K::Generic),
            ("cd app && npm install", K::JsInstall),
            ("export X=1; cargo build 2> err.txt", K::Cargo),
            ("make && make test", K::Generic),
            ("cargo build; cargo test", K::Generic),
            ("tail -f /var/log/syslog", K::Log),
            ("cat notes.txt", K::Generic),
            ("", K::Generic),
        ] {
            assert_eq!(choose_reducer(cmd), kind, "{cmd}");
        }
    }

    #[test]
    fn quotes_keep_operators() {
        assert_eq!(
            lex("grep -rn 'a|b; c' src 2>/dev/null"),
            vec![
                Tok::Word("grep".into()),
                Tok::Word("-rn".into()),
                Tok::Word("a|b; c".into()),
                Tok::Word("src".into())
            ]
        );
    }
}
