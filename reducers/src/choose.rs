//! Choosing a reducer from the command line that produced the output.
//!
//! The command is split by [`crate::command`] (quotes, escapes, operators), wrappers are
//! seen through (`sudo`, `env`, `VAR=x`, `time`, `timeout`, `uv run`, `npx`, `xargs` …, and
//! here also `python -m`), `bash -c '…'`, subshells and groups are read inside, and the
//! program and its subcommand pick a [`ReducerKind`]. In a pipeline the last stage that
//! shapes the output decides (`cargo test 2>&1 | tail -40` is cargo's output); in a chain
//! (`&&`, `||`, `;`) only a single stage that prints anything can decide, otherwise the
//! output is generic.

use crate::command::{self, BodyKind, Command, Nested, Origin};

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
    /// `pip list`, `pip freeze`.
    PipList,
    /// `npm ls`, `pnpm ls` and `yarn list`.
    NpmLs,
    /// `curl -v`.
    Curl,
    /// `terraform plan`, `apply`, `destroy` (and `tofu`).
    Terraform,
    /// `kubectl get` and other tables of one row per object.
    KubectlGet,
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
            ReducerKind::PipList => "pip-list",
            ReducerKind::NpmLs => "npm-ls",
            ReducerKind::Curl => "curl",
            ReducerKind::Terraform => "terraform",
            ReducerKind::KubectlGet => "kubectl-get",
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

/// How deep `bash -c '…'`, subshells and groups are followed to find the command.
const MAX_DEPTH: usize = 4;

fn invocation_depth(line: &str, depth: usize) -> Option<Vec<String>> {
    let script = command::parse(line);
    let printing: Vec<&[Command]> = script
        .pipelines()
        .filter(|pipeline| {
            let first = &pipeline[0];
            let words = program_words(first);
            let runs_code = first.body.is_some();
            !((words.is_empty() && !runs_code) || (pipeline.len() == 1 && is_silent(&words)))
        })
        .collect();
    let [pipeline] = printing.as_slice() else {
        return None;
    };
    // The last stage that shapes the output: pass-through filters are skipped.
    for (n, stage) in pipeline.iter().enumerate().rev() {
        // Judged on the stage as written: `xargs grep x` reads file names, not lines.
        let written: Vec<String> = stage.words.iter().map(|w| w.text.clone()).collect();
        if n > 0 && stage.body.is_none() && is_filter(&written) {
            continue;
        }
        let words = program_words(stage);
        // `bash -c '…'`, `( … )`, `{ …; }`: decide from the code inside.
        if depth < MAX_DEPTH {
            if let Some(code) = inner_code(stage) {
                return invocation_depth(&code, depth + 1);
            }
        }
        return Some(words);
    }
    None
}

/// The code a stage runs in place of a program of its own: a subshell's or group's body,
/// or what a shell is given with `-c` (or `eval`, `watch` …).
fn inner_code(stage: &Command) -> Option<String> {
    stage.nested().into_iter().find_map(|nested| match nested {
        Nested::Script {
            origin: Origin::Argument | Origin::Body(BodyKind::Subshell | BodyKind::Group),
            text,
        } => Some(text),
        _ => None,
    })
}

/// The words of the program a stage runs, wrappers removed, and `python -m MODULE` read
/// as the module's own command (`python3 -m pytest -x` → `pytest -x`).
fn program_words(stage: &Command) -> Vec<String> {
    let words: Vec<String> = stage.effective().iter().map(|w| w.text.clone()).collect();
    let Some(first) = words.first() else {
        return words;
    };
    if !is_python(command::program_name(first)) {
        return words;
    }
    let mut j = 1;
    while words
        .get(j)
        .is_some_and(|w| w.starts_with('-') && !w.starts_with("-m"))
    {
        j += if matches!(words[j].as_str(), "-W" | "-X") {
            2
        } else {
            1
        };
    }
    match words.get(j).map(String::as_str) {
        Some("-m") if j + 1 < words.len() => words[j + 1..].to_vec(),
        // `-mpytest`
        Some(m) if m.starts_with("-m") && m.len() > 2 => std::iter::once(m[2..].to_owned())
            .chain(words[j + 1..].iter().cloned())
            .collect(),
        _ => words,
    }
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
        command::program_name(first),
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
    )
}

/// Pipeline stages that pass the earlier stage's lines through (maybe fewer or reordered).
fn is_filter(words: &[String]) -> bool {
    let Some(first) = words.first() else {
        return true;
    };
    let positionals = words[1..].iter().filter(|w| !w.starts_with('-')).count();
    match command::program_name(first) {
        "head" | "tail" => words[1..]
            .iter()
            .all(|w| w.starts_with('-') || w.chars().all(|c| c.is_ascii_digit())),
        "less" | "more" | "cat" | "tee" | "sort" | "uniq" | "most" => {
            command::program_name(first) == "tee"
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
    let prog = command::program_name(first);
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
        "rustc" => K::Cargo,
        "npm" | "pnpm" | "yarn" | "bun"
            if matches!(
                sub(&["--prefix", "-C", "--dir", "--cwd"]),
                Some("ls" | "list" | "la" | "ll")
            ) =>
        {
            K::NpmLs
        }
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
        "node"
            if args
                .iter()
                .any(|a| *a == "--test" || a.starts_with("--test=")) =>
        {
            K::JsTest
        }
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
        p if p.starts_with("pip") && (args.contains(&"list") || args.contains(&"freeze")) => {
            K::PipList
        }
        "curl"
            if args.iter().any(|a| {
                *a == "-v"
                    || *a == "--verbose"
                    || (a.starts_with('-') && !a.starts_with("--") && a.contains('v'))
            }) =>
        {
            K::Curl
        }
        "terraform" | "tofu" => match sub(&["-chdir"]) {
            Some("plan" | "apply" | "destroy") => K::Terraform,
            _ => K::Generic,
        },
        "kubectl" | "oc" if args.first() == Some(&"get") => K::KubectlGet,
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
            ("node --test --test-reporter=spec", K::JsTest),
            ("npm ls --all", K::NpmLs),
            ("pip list --outdated", K::PipList),
            ("python3 -m pip freeze", K::PipList),
            ("curl -sv https://example.invalid/", K::Curl),
            ("terraform -chdir=infra plan", K::Terraform),
            ("kubectl get pods -A", K::KubectlGet),
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
            invocation("grep -rn 'a|b; c' src 2>/dev/null"),
            Some(vec![
                "grep".into(),
                "-rn".into(),
                "a|b; c".into(),
                "src".into()
            ])
        );
    }

    #[test]
    fn subshells_and_groups_are_read_inside() {
        for (cmd, kind) in [
            ("(cd app && cargo test) 2>&1 | tail -n 20", K::CargoTest),
            ("{ git status; } | head", K::GitStatus),
            ("sh -c 'npm ci' | cat", K::JsInstall),
            ("time (make -j4)", K::Make),
        ] {
            assert_eq!(choose_reducer(cmd), kind, "{cmd}");
        }
    }
}
