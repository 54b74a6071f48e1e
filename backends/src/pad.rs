//! One-time tokens for prompt marks: what makes a mark the pane's own shell's.
//!
//! A pane's shell signs each prompt mark it prints with a token good for that one
//! mark (`ESC ] 133 ; D ; 0 ; cohort=<token> BEL`). The tokens are the links of a hash
//! chain, handed to the shell in reverse order:
//!
//! - cohort draws a random seed `c₀` and computes `cᵢ₊₁ = H(cᵢ)` up to `cₙ`, the
//!   *anchor*. Only the anchor is kept outside the shell (stamped on the pane, where any
//!   server that adopts the pane reads it); it reveals nothing about the tokens.
//! - The shell gets `cₙ₋₁, cₙ₋₂, …, c₀` (its *pad*) through a file that it reads and
//!   deletes at start, before any startup file of the user runs (see
//!   [`crate::shell`]). It keeps them in an unexported shell variable: nothing is in
//!   its environment, in a tmux option, in a prompt variable or on screen.
//! - A mark's token `t` verifies when `H(t)` is the last token verified (at first the
//!   anchor), which then becomes `t`. A token verifies at most once: a mark replayed
//!   from a recording, a typescript or a terminal log is never taken again, and the
//!   next token cannot be computed from the ones already printed (`H` is one-way).
//!
//! Marks can be lost on the way (output dropped under flow control), so a token a few
//! links further down the chain also verifies ([`Anchor::verify`] walks up to
//! `window` links back to the anchor).
//!
//! `H` is SHA-256 cut to 63 bits, so that a token is a positive 64-bit integer: the
//! POSIX `sh` integration keeps its tokens in numbered variables it can only index with
//! shell arithmetic.
//!
//! What remains: code running inside the shell process itself (the line typed at the
//! prompt, a file it sources) has the shell's own powers and can read the pad, and so
//! can a process allowed to read the shell's memory (a debugger of the same user where
//! the system permits it).

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{BackendError, Result};

/// The environment variable naming the pad file a shell reads at start. It holds a
/// path, not a secret: the shell deletes the file before anything else runs.
pub const PAD_ENV: &str = "COHORT_MARK_PAD";

/// Tokens handed to an interactive shell: a command takes three (`C`, `D`, `A`), an
/// empty line one. When they run out, the shell's marks stop verifying and the pane is
/// read as a shell without marks.
pub const SHELL_PAD_LEN: u32 = 8192;

/// How far down the chain a token may be from the last one verified (marks lost on
/// the way) and still verify.
pub const WINDOW: u32 = 64;

/// Tokens are below 2⁶³, so that they are positive in 64-bit shell arithmetic.
const MASK: u64 = (1 << 63) - 1;

/// The next link of the chain: `H(token)`.
fn step(token: u64) -> u64 {
    let digest = Sha256::digest(token.to_be_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first) & MASK
}

/// A fresh chain: the tokens for the shell and the anchor that verifies them.
#[derive(Clone)]
pub struct MarkChain {
    /// The tokens in the order the shell uses them (`cₙ₋₁` first).
    tokens: Vec<u64>,
    anchor: Anchor,
}

impl fmt::Debug for MarkChain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The tokens are the secret: never in a log.
        f.debug_struct("MarkChain")
            .field("tokens", &self.tokens.len())
            .field("anchor", &self.anchor)
            .finish()
    }
}

impl MarkChain {
    /// Draws a chain of `len` tokens (at least one) from the system's random source.
    pub fn new(len: u32) -> Result<MarkChain> {
        Ok(MarkChain::from_seed(random()?, len))
    }

    /// The chain that starts at `seed`.
    fn from_seed(seed: u64, len: u32) -> MarkChain {
        let len = len.max(1);
        let mut tokens = Vec::with_capacity(len as usize);
        let mut link = (seed & MASK).max(1);
        for _ in 0..len {
            tokens.push(link);
            link = step(link);
        }
        tokens.reverse();
        MarkChain {
            tokens,
            anchor: Anchor {
                last: link,
                left: len,
            },
        }
    }

    /// The anchor to stamp on the pane.
    pub fn anchor(&self) -> Anchor {
        self.anchor
    }

    /// Writes the tokens, space-separated on one line, to a new file in `dir` that only
    /// the user can read, and returns its path. `dir` is created private when missing.
    pub fn write_pad(&self, dir: &Path) -> Result<PathBuf> {
        create_private_dir(dir)?;
        let name = format!("pad-{:016x}{:016x}", random()?, random()?);
        let path = dir.join(name);
        let mut text = String::with_capacity(self.tokens.len() * 20);
        for (i, token) in self.tokens.iter().enumerate() {
            if i > 0 {
                text.push(' ');
            }
            text.push_str(&token.to_string());
        }
        text.push('\n');
        let mut file = private_file(&path)?;
        file.write_all(text.as_bytes())
            .map_err(|e| BackendError::io(format!("writing {}", path.display()), e))?;
        Ok(path)
    }
}

/// What verifies a pane's next mark: the last token verified (the chain's end at
/// first) and how many tokens the shell still has before it. Public: it is stamped on
/// the pane as `<last>:<left>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Anchor {
    last: u64,
    left: u32,
}

impl Anchor {
    /// Takes `token` when it is one of the next `window` links down the chain: it
    /// becomes the anchor, so it never verifies again, nor does any token before it.
    pub fn verify(&mut self, token: &str, window: u32) -> bool {
        let Ok(token) = token.parse::<u64>() else {
            return false;
        };
        if token == 0 || token > MASK {
            return false;
        }
        let mut link = token;
        for steps in 1..=window.min(self.left) {
            link = step(link);
            if link == self.last {
                self.last = token;
                self.left -= steps;
                return true;
            }
        }
        false
    }

    /// An anchor no token verifies (for a stamp that cannot be read).
    pub fn spent() -> Anchor {
        Anchor { last: 0, left: 0 }
    }

    /// How many tokens the shell has left.
    pub fn left(&self) -> u32 {
        self.left
    }
}

impl fmt::Display for Anchor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.last, self.left)
    }
}

impl std::str::FromStr for Anchor {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Anchor, String> {
        let bad = || format!("{s:?} is not a mark anchor (`<token>:<left>`)");
        let (last, left) = s.split_once(':').ok_or_else(bad)?;
        Ok(Anchor {
            last: last.parse().map_err(|_| bad())?,
            left: left.parse().map_err(|_| bad())?,
        })
    }
}

fn random() -> Result<u64> {
    getrandom::u64().map_err(|e| {
        BackendError::io(
            "drawing random numbers for a pane's marks",
            std::io::Error::other(e.to_string()),
        )
    })
}

/// Creates `dir` (mode 0700 on Unix) when it is missing.
fn create_private_dir(dir: &Path) -> Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .map_err(|e| BackendError::io(format!("creating {}", dir.display()), e))
}

/// Creates a new file (mode 0600 on Unix), failing when one is there.
fn private_file(path: &Path) -> Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options
        .open(path)
        .map_err(|e| BackendError::io(format!("creating {}", path.display()), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(chain: &MarkChain) -> Vec<String> {
        chain.tokens.iter().map(u64::to_string).collect()
    }

    #[test]
    fn each_token_verifies_once_in_order() {
        let chain = MarkChain::from_seed(42, 10);
        let mut anchor = chain.anchor();
        let tokens = tokens(&chain);
        for (i, token) in tokens.iter().enumerate() {
            assert!(anchor.verify(token, WINDOW), "token {i}");
            assert!(!anchor.verify(token, WINDOW), "token {i} replayed");
            assert_eq!(anchor.left(), 9 - i as u32);
        }
        // Every earlier token is spent too.
        for token in &tokens {
            assert!(!anchor.verify(token, WINDOW));
        }
    }

    #[test]
    fn lost_marks_are_skipped_within_the_window_only() {
        let chain = MarkChain::from_seed(7, 200);
        let tokens = tokens(&chain);
        let mut anchor = chain.anchor();
        assert!(anchor.verify(&tokens[5], WINDOW));
        assert_eq!(anchor.left(), 194);
        // The ones skipped are spent with it.
        assert!(!anchor.verify(&tokens[3], WINDOW));
        assert!(!anchor.verify(&tokens[6 + WINDOW as usize], WINDOW));
        assert!(anchor.verify(&tokens[6], WINDOW));
    }

    #[test]
    fn what_is_not_a_token_never_verifies() {
        let chain = MarkChain::from_seed(9, 4);
        let mut anchor = chain.anchor();
        for forged in [
            "",
            "0",
            "-1",
            "x",
            "9223372036854775808",
            "18446744073709551615",
        ] {
            assert!(!anchor.verify(forged, WINDOW), "{forged:?}");
        }
        // The anchor itself is public and is not a token.
        let public = anchor.to_string();
        let last = public.split(':').next().unwrap();
        assert!(!anchor.verify(last, WINDOW));
        assert_eq!(anchor.left(), 4);
    }

    #[test]
    fn anchors_round_trip_through_their_stamp() {
        let chain = MarkChain::from_seed(3, 5);
        let anchor = chain.anchor();
        assert_eq!(anchor.to_string().parse::<Anchor>(), Ok(anchor));
        assert!("12".parse::<Anchor>().is_err());
        assert!("a:b".parse::<Anchor>().is_err());
    }

    #[test]
    fn the_pad_is_a_private_file_of_tokens_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let chain = MarkChain::new(3).unwrap();
        let path = chain.write_pad(&dir.path().join("pads")).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, format!("{}\n", tokens(&chain).join(" ")));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&path), 0o600);
            assert_eq!(mode(&dir.path().join("pads")), 0o700);
        }
        assert!(!format!("{chain:?}").contains(&tokens(&chain)[0]));
    }
}
