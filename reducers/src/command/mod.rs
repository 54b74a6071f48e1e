//! Reading a shell command line the way a shell would split it, without running anything.
//!
//! [`parse`] splits a line into simple [`Command`]s joined by [`Separator`]s (`|`, `|&`,
//! `&&`, `||`, `;`, `&`, newlines). Each command has its [`Word`]s with quotes and escapes
//! removed (`'…'`, `"…"`, `$'…'`, backslashes) but marked as quoted, so that a caller can
//! tell `grep -r 'DROP TABLE' .` (a grep with a quoted pattern) from SQL; its
//! [`Redirect`]s as items of their own (`> /dev/sda`, `2>&1`, here-documents; `of=/dev/sda`
//! is just a word); and, for `( … )`, `{ …; }` and function definitions, the [`Body`]'s text.
//!
//! [`Command::effective`] sees through wrappers (`sudo`, `env`, `VAR=x`, `nice`, `timeout`,
//! `xargs`, `npx`, `uv run` …; see [`Command::effective`]) to the program that runs, and
//! [`Command::nested`] lists the command text a command hands on to be run: `bash -c '…'`,
//! `eval`, `$( … )`, backticks, bodies, `find -exec … ;`, `watch`. [`walk`] follows all of
//! them down to [`MAX_DEPTH`] and says when input went deeper; [`read_path`] tells whether
//! a path names the root, the home directory, `.`, `..` or everything in one of them.
//!
//! Nothing here recurses on the input: nested constructs are matched with an explicit
//! stack and [`walk`] keeps a work list, so no input can overflow the call stack, and no
//! input makes it panic. Each level is read once, so a line costs time in proportion to
//! its length times the depth it is read to.
//!
//! It reads POSIX shell and bash syntax. It does not expand anything (`$HOME` stays
//! `$HOME`), and it cannot know what an alias, a function or a script will run.
//!
//! ```
//! use cohort_reducers::command::{parse, walk, Separator};
//!
//! let script = parse("sudo -u ci env RUST_LOG=1 cargo test 2>&1 | tail -n 40");
//! let [test, tail] = script.commands.as_slice() else { panic!() };
//! assert_eq!(test.program(), Some("cargo"));
//! assert_eq!(test.then, Separator::Pipe);
//! assert_eq!(test.redirects[0].fd, Some(2));
//! assert_eq!(tail.program(), Some("tail"));
//!
//! let pattern = &parse("grep -r 'DROP TABLE' .").commands[0].words[2];
//! assert_eq!((pattern.text.as_str(), pattern.quoted), ("DROP TABLE", true));
//!
//! let found = walk("find . -name '*.tmp' -exec sh -c 'rm -rf \"$1\"' _ {} \\;");
//! let programs: Vec<_> = found.found.iter().filter_map(|f| f.command.program()).collect();
//! assert_eq!(programs, ["find", "sh", "rm"]);
//! assert!(!found.too_deep);
//! ```

mod lex;
mod path;
mod scan;
mod wrappers;

pub use path::{read_path, PathKind, PathRead};

/// How deep [`walk`] follows nested command text (`bash -c "$(…)"` is two levels).
pub const MAX_DEPTH: usize = 8;

/// Splits `line` into its simple commands. Never fails: unclosed quotes and constructs run
/// to the end of the line, and [`Script::complete`] says so.
pub fn parse(line: &str) -> Script {
    lex::parse(line)
}

/// A command line, split.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Script {
    /// The simple commands in order; each says how it joins the next.
    pub commands: Vec<Command>,
    /// False when a quote, substitution, subshell, group or here-document was not closed.
    pub complete: bool,
}

impl Script {
    /// The pipelines: runs of commands joined by `|` or `|&`, in order. A chain
    /// (`a && b | c`) has one pipeline per link.
    pub fn pipelines(&self) -> impl Iterator<Item = &[Command]> {
        let mut rest = self.commands.as_slice();
        std::iter::from_fn(move || {
            if rest.is_empty() {
                return None;
            }
            let len = rest
                .iter()
                .position(|c| !c.then.joins_pipeline())
                .map_or(rest.len(), |p| p + 1);
            let (pipeline, after) = rest.split_at(len);
            rest = after;
            Some(pipeline)
        })
    }
}

/// One simple command: words, redirections, and for a subshell, group or function
/// definition its body.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Command {
    /// The words, wrappers and assignments included; redirections are not words.
    pub words: Vec<Word>,
    /// The redirections, in order.
    pub redirects: Vec<Redirect>,
    /// The code of `( … )`, `{ …; }` or `name() { …; }`.
    pub body: Option<Body>,
    /// What follows the command.
    pub then: Separator,
}

impl Command {
    /// The program that runs and its arguments, wrappers seen through; empty when the
    /// command runs nothing (assignments alone, `fi`, a `for` header, a function
    /// definition).
    ///
    /// Wrappers seen through, with their options: `sudo`, `doas`, `env` (with `-i`, `-u`,
    /// `VAR=x`), `VAR=x` prefixes, `command` (not `-v`/`-V`), `builtin`, `exec`, `nice`,
    /// `nohup`, `time`, `timeout DURATION`, `stdbuf`, `ionice`, `xargs`, `npx`, `bunx`,
    /// `bun x`, `pnpm`/`yarn`/`npm` `exec`/`dlx`, `uvx`, `uv run`, `uv tool run`, `pipx run`,
    /// `poetry`/`pdm`/`pipenv`/`hatch`/`rye` `run`, and the shell words that may precede a
    /// command (`!`, `if`, `then`, `do` …). A wrapper given no command is itself the
    /// program (`sudo -l`, `env`).
    pub fn effective(&self) -> &[Word] {
        wrappers::effective(&self.words, self.body.as_ref())
    }

    /// The file name of the effective program (`/usr/bin/git` → `git`), if any.
    pub fn program(&self) -> Option<&str> {
        self.effective().first().map(|w| program_name(&w.text))
    }

    /// The command text this command hands on to be run: its body, the substitutions in
    /// its words and redirections, and what its effective program runs (`bash -c`, `eval`,
    /// `su -c`, `watch`, `env -S`, `npx -c`, `find -exec`/`-execdir`/`-ok`/`-okdir`).
    pub fn nested(&self) -> Vec<Nested> {
        wrappers::nested(self)
    }
}

/// The file name part of a program path: `/usr/bin/git` → `git`.
pub fn program_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// A word with its quotes and escapes removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Word {
    /// The word after quote removal. Expansions stay as written: `"$HOME"` is `$HOME`.
    pub text: String,
    /// The word as typed.
    pub raw: String,
    /// Whether any part of it was quoted or escaped.
    pub quoted: bool,
    /// The code of each `$( … )`, `` ` … ` ``, `<( … )` and `>( … )` in it, as typed
    /// (for a here-document body: in the body, when its delimiter is unquoted).
    pub substitutions: Vec<String>,
}

/// What ends a command and joins it to the next.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Separator {
    /// `|`: its standard output feeds the next command.
    Pipe,
    /// `|&`: its standard output and error feed the next command.
    PipeAll,
    /// `&&`.
    And,
    /// `||`.
    Or,
    /// `;`, and the other tokens that end a command without joining it to the next:
    /// `;;`, `;&`, `;;&`, a `case` pattern's `)`.
    Semi,
    /// `&`: it runs in the background.
    Background,
    /// A newline.
    Newline,
    /// The end of the text.
    #[default]
    End,
}

impl Separator {
    /// Whether the next command is in the same pipeline (`|`, `|&`).
    pub fn joins_pipeline(self) -> bool {
        matches!(self, Separator::Pipe | Separator::PipeAll)
    }
}

/// A redirection operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RedirectOp {
    /// `>`.
    Out,
    /// `>>`.
    Append,
    /// `>|`.
    Clobber,
    /// `<`.
    In,
    /// `<>`.
    ReadWrite,
    /// `>&`: a copy of a descriptor (`2>&1`), or with a file name, both outputs to it.
    DupOut,
    /// `<&`.
    DupIn,
    /// `&>`: standard output and error to a file.
    OutErr,
    /// `&>>`.
    AppendOutErr,
    /// `<<`: a here-document.
    HereDoc,
    /// `<<-`: a here-document with leading tabs removed.
    HereDocTabs,
    /// `<<<`: a here-string.
    HereString,
}

impl RedirectOp {
    /// The operator as written.
    pub fn as_str(self) -> &'static str {
        match self {
            RedirectOp::Out => ">",
            RedirectOp::Append => ">>",
            RedirectOp::Clobber => ">|",
            RedirectOp::In => "<",
            RedirectOp::ReadWrite => "<>",
            RedirectOp::DupOut => ">&",
            RedirectOp::DupIn => "<&",
            RedirectOp::OutErr => "&>",
            RedirectOp::AppendOutErr => "&>>",
            RedirectOp::HereDoc => "<<",
            RedirectOp::HereDocTabs => "<<-",
            RedirectOp::HereString => "<<<",
        }
    }
}

/// A redirection: `2>&1`, `> out.log`, `<<EOF … EOF`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redirect {
    /// The descriptor written before the operator (`2` in `2>&1`), if any.
    pub fd: Option<u32>,
    /// The operator.
    pub op: RedirectOp,
    /// The file, descriptor (`1`, `-`) or here-document delimiter; `None` when the line
    /// ended first.
    pub target: Option<Word>,
    /// For a here-document, its body (without the delimiter line); `quoted` when the
    /// delimiter was quoted (the body is then not expanded).
    pub here_doc: Option<Word>,
}

impl Redirect {
    /// The file this redirection writes to (`> f`, `>> f`, `>| f`, `&> f`, `<> f`, `>& f`
    /// with a file name), as written after quote removal.
    pub fn writes_to(&self) -> Option<&str> {
        let target = self.target.as_ref()?;
        let file = match self.op {
            RedirectOp::Out
            | RedirectOp::Append
            | RedirectOp::Clobber
            | RedirectOp::ReadWrite
            | RedirectOp::OutErr
            | RedirectOp::AppendOutErr => true,
            RedirectOp::DupOut => {
                target.quoted || !target.text.bytes().all(|b| b.is_ascii_digit() || b == b'-')
            }
            _ => false,
        };
        file.then_some(target.text.as_str())
    }
}

/// What kind of code a [`Body`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BodyKind {
    /// `( … )`.
    Subshell,
    /// `{ …; }`.
    Group,
    /// The body of `name() { …; }`: defined here, run when the function is called.
    Function,
}

/// The code inside a subshell, group or function definition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Body {
    /// Which construct it is.
    pub kind: BodyKind,
    /// The code between the brackets, as typed.
    pub text: String,
}

/// Where nested command text comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Origin {
    /// An argument a program runs as shell code: `bash -c`, `eval`, `su -c`, `watch`,
    /// `env -S`, `npx -c`.
    Argument,
    /// `$( … )`, backticks, `<( … )`, `>( … )`.
    Substitution,
    /// A subshell, group or function body.
    Body(BodyKind),
}

/// Command text a command hands on to be run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Nested {
    /// Shell code: read it with [`parse`].
    Script {
        /// Where it comes from.
        origin: Origin,
        /// The code.
        text: String,
    },
    /// A command given as words (`find … -exec rm {} \;`): its effective program runs.
    Command(Command),
}

/// A command found by [`walk`], and how deep it is nested.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// 0 for the line's own commands, 1 inside `bash -c '…'`, and so on.
    pub depth: usize,
    /// The command.
    pub command: Command,
}

/// Every command of a line, nested ones included.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Walk {
    /// The commands, each command before the ones nested in it.
    pub found: Vec<Found>,
    /// Whether some nested text lay deeper than [`MAX_DEPTH`] and was not read.
    pub too_deep: bool,
    /// Whether every level read was complete (see [`Script::complete`]).
    pub complete: bool,
}

/// Every command `line` runs, nested ones included, down to [`MAX_DEPTH`] levels.
pub fn walk(line: &str) -> Walk {
    let mut out = Walk {
        complete: true,
        ..Walk::default()
    };
    // A work list, not recursion: (depth, what to read), the next item last.
    let mut work: Vec<(usize, Nested)> = vec![(
        0,
        Nested::Script {
            origin: Origin::Argument,
            text: line.to_owned(),
        },
    )];
    while let Some((depth, item)) = work.pop() {
        match item {
            Nested::Script { text, .. } => {
                let script = parse(&text);
                out.complete &= script.complete;
                let commands = script.commands.into_iter().rev();
                work.extend(commands.map(|c| (depth, Nested::Command(c))));
            }
            Nested::Command(command) => {
                let nested = command.nested();
                if !nested.is_empty() && depth >= MAX_DEPTH {
                    out.too_deep = true;
                } else {
                    work.extend(nested.into_iter().rev().map(|n| (depth + 1, n)));
                }
                out.found.push(Found { depth, command });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
