//! Per-pane output stream shaping: character-boundary chunks and prompt marks.
//!
//! Terminals deliver output in arbitrary pieces: tmux splits multibyte UTF-8
//! characters and escape sequences across `%output` lines under load. An
//! [`OutputSplitter`] sits on each pane's byte stream and
//!
//! - holds back an incomplete UTF-8 character or OSC 133 sequence at the end of a
//!   piece until the rest arrives, so every emitted chunk can be decoded on its own;
//! - finds OSC 133 prompt marks (`ESC ] 133 ; D ; 0 BEL`) and reports each right after
//!   the bytes that preceded it.
//!
//! - finds iTerm2's custom control sequences (`ESC ] 1337 ; Custom=id=<identity>:<payload>
//!   BEL`), a program's signal to whoever drives the terminal, and reports each as a
//!   [`Piece::Signal`] in its place, taking the sequence out of the bytes: the
//!   identity is a pane's secret, and no journal, read or recording holds it.
//!
//! The marks stay in the byte stream (it is the raw record); readers strip them.
//! cohort's signature does not: [`without_signatures`] takes the `cohort=<key>` field
//! out of every mark before the bytes are kept anywhere, so no journal, read or
//! recording holds a signed mark that could be replayed into a pane.
//!
//! ```
//! use cohort_backends::stream::{OutputSplitter, Piece};
//! use cohort_backends::PromptMark;
//! let mut splitter = OutputSplitter::default();
//! let mut out = Vec::new();
//! splitter.push(b"done\r\n\x1b]133;D;", &mut out);
//! splitter.push(b"1\x07", &mut out);
//! assert_eq!(out[0], Piece::Bytes(b"done\r\n".to_vec()));
//! assert!(matches!(out[2], Piece::Mark(PromptMark::CommandFinished { exit_status: Some(1) }, _)));
//! ```

use crate::event::{MarkParams, PromptMark};

/// How every OSC 133 sequence starts.
const MARK_PREFIX: &[u8] = b"\x1b]133;";

/// The longest OSC 133 sequence we wait for before giving up on it.
const MAX_MARK_LEN: usize = 256;

/// How every custom control sequence starts.
const SIGNAL_PREFIX: &[u8] = b"\x1b]1337;Custom=";

/// The longest custom control sequence waited for; the first this many bytes of a
/// longer one are dropped unreported.
pub const MAX_SIGNAL_LEN: usize = 4096;

/// One piece of shaped output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    /// Output bytes.
    Bytes(Vec<u8>),
    /// A prompt mark that ended right before this point, with what it carried.
    Mark(PromptMark, MarkParams),
    /// A custom control sequence at this point: `identity` (the `id=` parameter)
    /// and the payload after the first `:`.
    Signal {
        /// The sender's identity, as the sequence claims it.
        identity: String,
        /// What it says.
        payload: String,
    },
}

/// Shapes one pane's output stream; see the module docs.
#[derive(Debug, Default)]
pub struct OutputSplitter {
    carry: Vec<u8>,
    /// The stream lost bytes in the middle of a custom control sequence: what
    /// follows, up to its end (or [`MAX_SIGNAL_LEN`] bytes), is the rest of it (its
    /// secret, its payload), not output; this many bytes are left to drop.
    skipping: usize,
}

/// Whether `held` (bytes held back from an ESC on) is the start of a custom
/// control sequence far enough in to carry its `id`.
fn holds_signal(held: &[u8]) -> bool {
    const OSC_1337: &[u8] = b"\x1b]1337;";
    if held.len() <= OSC_1337.len() {
        return false;
    }
    held.starts_with(SIGNAL_PREFIX) || SIGNAL_PREFIX.starts_with(held)
}

impl OutputSplitter {
    /// Feeds the next piece of the stream, appending shaped pieces to `out`.
    pub fn push(&mut self, mut data: &[u8], out: &mut Vec<Piece>) {
        if self.skipping > 0 {
            // The rest of a cut sequence ends at its BEL, or where an ESC starts
            // the next thing (its ST, or another sequence).
            let window = &data[..data.len().min(self.skipping)];
            match window.iter().position(|&b| b == 0x07 || b == 0x1b) {
                Some(at) => {
                    self.skipping = 0;
                    data = &data[at + usize::from(data[at] == 0x07)..];
                }
                None => {
                    self.skipping -= window.len();
                    data = &data[window.len()..];
                    if data.is_empty() {
                        return;
                    }
                }
            }
        }
        let owned;
        let buf: &[u8] = if self.carry.is_empty() {
            data
        } else {
            let mut joined = std::mem::take(&mut self.carry);
            joined.extend_from_slice(data);
            owned = joined;
            &owned
        };
        let mut emitted = 0; // bytes of `buf` already handed out
        let mut pos = 0;
        while let Some(offset) = memchr_esc(&buf[pos..]) {
            let esc = pos + offset;
            match parse_mark(&buf[esc..]) {
                MarkScan::Found { len, mark } => {
                    let end = esc + len;
                    out.push(Piece::Bytes(buf[emitted..end].to_vec()));
                    if let Some((mark, params)) = mark {
                        out.push(Piece::Mark(mark, params));
                    }
                    emitted = end;
                    pos = end;
                }
                MarkScan::NotAMark => match parse_signal(&buf[esc..]) {
                    SignalScan::Found { len, signal } => {
                        if emitted < esc {
                            out.push(Piece::Bytes(buf[emitted..esc].to_vec()));
                        }
                        if let Some((identity, payload)) = signal {
                            out.push(Piece::Signal { identity, payload });
                        }
                        emitted = esc + len;
                        pos = emitted;
                    }
                    SignalScan::NotASignal => pos = esc + 1,
                    SignalScan::Incomplete => {
                        if emitted < esc {
                            out.push(Piece::Bytes(buf[emitted..esc].to_vec()));
                        }
                        self.carry = buf[esc..].to_vec();
                        return;
                    }
                },
                MarkScan::Incomplete => {
                    if emitted < esc {
                        out.push(Piece::Bytes(buf[emitted..esc].to_vec()));
                    }
                    self.carry = buf[esc..].to_vec();
                    return;
                }
            }
        }
        let keep = incomplete_utf8_tail(&buf[emitted..]);
        let cut = buf.len() - keep;
        if emitted < cut {
            out.push(Piece::Bytes(buf[emitted..cut].to_vec()));
        }
        self.carry = buf[cut..].to_vec();
    }

    /// Bytes held back waiting for the rest of a character or mark.
    pub fn pending(&self) -> &[u8] {
        &self.carry
    }

    /// Releases held-back bytes (for example when the pane closed), except a custom
    /// control sequence that never ended: its `id` is a secret, and it is no output.
    pub fn flush(&mut self) -> Option<Vec<u8>> {
        let held = std::mem::take(&mut self.carry);
        (!held.is_empty() && !holds_signal(&held)).then_some(held)
    }

    /// Starts over after the stream lost bytes: what was held back is dropped, and
    /// when it was a custom control sequence, so is the rest of it that follows.
    pub fn reset(&mut self) {
        self.skipping = if holds_signal(&self.carry) {
            MAX_SIGNAL_LEN
        } else {
            0
        };
        self.carry.clear();
    }
}

/// `bytes` with cohort's signature (the `cohort=<key>` field) taken out of every
/// OSC 133 mark in it, the marks themselves kept: `ESC]133;D;0;cohort=k BEL` becomes
/// `ESC]133;D;0 BEL`. Marks are found as [`OutputSplitter`] finds them (only escape
/// bytes are looked at), and the bytes are borrowed unchanged when no mark in them is
/// signed. The splitter never cuts a mark across pieces, so each piece can be cleaned
/// on its own.
pub fn without_signatures(bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    let mut out: Option<Vec<u8>> = None;
    let mut copied = 0; // bytes of `bytes` already in `out`
    let mut pos = 0;
    while let Some(offset) = memchr_esc(&bytes[pos..]) {
        let esc = pos + offset;
        let MarkScan::Found { len, .. } = parse_mark(&bytes[esc..]) else {
            pos = esc + 1;
            continue;
        };
        if let Some(clean) = unsigned_mark(&bytes[esc..esc + len]) {
            let out = out.get_or_insert_with(|| Vec::with_capacity(bytes.len()));
            out.extend_from_slice(&bytes[copied..esc]);
            out.extend_from_slice(&clean);
            copied = esc + len;
        }
        pos = esc + len;
    }
    match out {
        None => std::borrow::Cow::Borrowed(bytes),
        Some(mut out) => {
            out.extend_from_slice(&bytes[copied..]);
            std::borrow::Cow::Owned(out)
        }
    }
}

/// A whole OSC 133 sequence without its `cohort=` field, or `None` when it has none.
fn unsigned_mark(mark: &[u8]) -> Option<Vec<u8>> {
    let terminator = if mark.ends_with(b"\x07") { 1 } else { 2 };
    let body = &mark[MARK_PREFIX.len()..mark.len() - terminator];
    let signed = |field: &&[u8]| field.starts_with(b"cohort=");
    if !body.split(|&b| b == b';').any(|f| signed(&f)) {
        return None;
    }
    let kept: Vec<&[u8]> = body.split(|&b| b == b';').filter(|f| !signed(f)).collect();
    let mut clean = MARK_PREFIX.to_vec();
    clean.extend_from_slice(&kept.join(&b';'));
    clean.extend_from_slice(&mark[mark.len() - terminator..]);
    Some(clean)
}

fn memchr_esc(buf: &[u8]) -> Option<usize> {
    buf.iter().position(|&b| b == 0x1b)
}

enum MarkScan {
    /// An OSC 133 sequence of `len` bytes; `mark` is `None` for kinds we ignore.
    Found {
        len: usize,
        mark: Option<(PromptMark, MarkParams)>,
    },
    NotAMark,
    /// Could be the start of a mark; wait for more bytes.
    Incomplete,
}

/// Looks for `ESC ] 133 ; <kind> [; params] (BEL | ESC \)` at the start of `buf`.
fn parse_mark(buf: &[u8]) -> MarkScan {
    let n = buf.len().min(MARK_PREFIX.len());
    if buf[..n] != MARK_PREFIX[..n] {
        return MarkScan::NotAMark;
    }
    if buf.len() < MARK_PREFIX.len() {
        return MarkScan::Incomplete;
    }
    let body_start = MARK_PREFIX.len();
    let limit = buf.len().min(MAX_MARK_LEN);
    let mut i = body_start;
    while i < limit {
        match buf[i] {
            0x07 => return found(&buf[body_start..i], i + 1),
            0x1b => {
                if i + 1 >= buf.len() {
                    return MarkScan::Incomplete;
                }
                if buf[i + 1] == b'\\' {
                    return found(&buf[body_start..i], i + 2);
                }
                return MarkScan::NotAMark;
            }
            _ => i += 1,
        }
    }
    if buf.len() >= MAX_MARK_LEN {
        MarkScan::NotAMark
    } else {
        MarkScan::Incomplete
    }
}

fn found(body: &[u8], len: usize) -> MarkScan {
    MarkScan::Found {
        len,
        mark: mark_body(body),
    }
}

enum SignalScan {
    /// A custom control sequence of `len` bytes; `signal` unless it names no `id`.
    Found {
        len: usize,
        signal: Option<(String, String)>,
    },
    NotASignal,
    /// Could be the start of one; wait for more bytes.
    Incomplete,
}

/// Looks for `ESC ] 1337 ; Custom=<params>:<payload> (BEL | ESC \)` at the start of
/// `buf`.
fn parse_signal(buf: &[u8]) -> SignalScan {
    let n = buf.len().min(SIGNAL_PREFIX.len());
    if buf[..n] != SIGNAL_PREFIX[..n] {
        return SignalScan::NotASignal;
    }
    if buf.len() < SIGNAL_PREFIX.len() {
        return SignalScan::Incomplete;
    }
    let start = SIGNAL_PREFIX.len();
    let limit = buf.len().min(MAX_SIGNAL_LEN);
    for i in start..limit {
        let len = match buf[i] {
            0x07 => i + 1,
            0x1b if i + 1 >= buf.len() => return SignalScan::Incomplete,
            0x1b if buf[i + 1] == b'\\' => i + 2,
            // Another escape sequence starts: this one was cut short, and is
            // dropped up to it, as a terminal drops it (its `id` never shows).
            0x1b => {
                return SignalScan::Found {
                    len: i,
                    signal: None,
                }
            }
            _ => continue,
        };
        return SignalScan::Found {
            len,
            signal: signal_body(&buf[start..i]),
        };
    }
    if buf.len() >= MAX_SIGNAL_LEN {
        // Too long to wait for: dropped as far as it was waited for, with its `id`.
        SignalScan::Found {
            len: MAX_SIGNAL_LEN,
            signal: None,
        }
    } else {
        SignalScan::Incomplete
    }
}

/// The identity and payload of a custom control sequence's body (after `Custom=`):
/// parameters up to the first `:` (`id=<identity>`, others `;`-separated), then the
/// payload. `None` without an `id`.
pub fn signal_body(body: &[u8]) -> Option<(String, String)> {
    let colon = body.iter().position(|&b| b == b':')?;
    let (params, payload) = (&body[..colon], &body[colon + 1..]);
    let identity = params
        .split(|&b| b == b';')
        .find_map(|p| p.strip_prefix(b"id="))
        .filter(|id| !id.is_empty())?;
    Some((
        String::from_utf8_lossy(identity).into_owned(),
        String::from_utf8_lossy(payload).into_owned(),
    ))
}

/// Reads the body of an OSC 133 sequence (what follows `133;`, as in `D;0;cohort=<key>`):
/// the mark and its parameters, or `None` for a kind cohort does not report.
pub fn mark_body(body: &[u8]) -> Option<(PromptMark, MarkParams)> {
    let mut fields = body.split(|&b| b == b';');
    let kind = fields.next().unwrap_or_default();
    let rest: Vec<&[u8]> = fields.collect();
    let mark = match kind {
        b"A" => PromptMark::PromptStart,
        b"B" => PromptMark::InputStart,
        b"C" => PromptMark::CommandStart,
        b"D" => {
            // The status is the first parameter, when it is not a key=value one.
            let exit_status = rest
                .first()
                .filter(|f| !f.contains(&b'='))
                .and_then(|s| std::str::from_utf8(s).ok())
                .and_then(|s| s.trim().parse::<i32>().ok());
            PromptMark::CommandFinished { exit_status }
        }
        _ => return None,
    };
    let mut params = MarkParams::default();
    for field in rest {
        if let Some(key) = field.strip_prefix(b"cohort=") {
            params.key = std::str::from_utf8(key)
                .ok()
                .filter(|k| !k.is_empty())
                .map(str::to_string);
        } else if field == b"exit" {
            params.exiting = true;
        }
    }
    Some((mark, params))
}

/// How many bytes at the end of `buf` start a UTF-8 character that is not complete yet.
fn incomplete_utf8_tail(buf: &[u8]) -> usize {
    let start = buf.len().saturating_sub(3);
    for i in (start..buf.len()).rev() {
        let b = buf[i];
        if b & 0b1100_0000 == 0b1000_0000 {
            continue; // continuation byte: look further back for the lead
        }
        let need = match b {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => return 0,
        };
        let have = buf.len() - i;
        return if have < need { have } else { 0 };
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(pieces: &[&[u8]]) -> Vec<Piece> {
        let mut splitter = OutputSplitter::default();
        let mut out = Vec::new();
        for p in pieces {
            splitter.push(p, &mut out);
        }
        out
    }

    fn bytes_of(out: &[Piece]) -> Vec<u8> {
        out.iter()
            .filter_map(|p| match p {
                Piece::Bytes(b) => Some(b.clone()),
                Piece::Mark(..) | Piece::Signal { .. } => None,
            })
            .flatten()
            .collect()
    }

    #[test]
    fn signatures_are_taken_out_and_the_marks_kept() {
        let signed = b"ok\r\n\x1b]133;D;0;cohort=k3y\x07\x1b]133;A;cohort=k3y\x1b\\$ \x1b]133;D;2;cohort=k3y;exit\x07";
        let clean = without_signatures(signed);
        assert_eq!(
            clean.as_ref(),
            b"ok\r\n\x1b]133;D;0\x07\x1b]133;A\x1b\\$ \x1b]133;D;2;exit\x07"
        );
        // The cleaned marks still read as the same marks.
        let kinds = |bytes: &[u8]| -> Vec<PromptMark> {
            shape(&[bytes])
                .into_iter()
                .filter_map(|p| match p {
                    Piece::Mark(mark, _) => Some(mark),
                    Piece::Bytes(_) | Piece::Signal { .. } => None,
                })
                .collect()
        };
        assert_eq!(kinds(signed), kinds(&clean));
        // Text outside a mark that only looks like the field is kept.
        let plain = b"echo ;cohort=not-a-mark\r\n\x1b]133;C\x07";
        assert_eq!(without_signatures(plain).as_ref(), plain);
        assert!(matches!(
            without_signatures(b"no marks at all"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn split_utf8_is_held_until_complete() {
        let text = "日本語 🎉".as_bytes();
        for cut in 1..text.len() {
            let out = shape(&[&text[..cut], &text[cut..]]);
            for piece in &out {
                if let Piece::Bytes(b) = piece {
                    assert!(std::str::from_utf8(b).is_ok(), "cut {cut}: {b:?}");
                }
            }
            assert_eq!(bytes_of(&out), text);
        }
    }

    #[test]
    fn marks_are_found_across_any_split() {
        let stream = b"out\r\n\x1b]133;D;127\x07\x1b]133;A\x07$ ";
        for cut in 0..stream.len() {
            let out = shape(&[&stream[..cut], &stream[cut..]]);
            let marks: Vec<_> = out
                .iter()
                .filter_map(|p| match p {
                    Piece::Mark(m, _) => Some(*m),
                    _ => None,
                })
                .collect();
            assert_eq!(
                marks,
                vec![
                    PromptMark::CommandFinished {
                        exit_status: Some(127)
                    },
                    PromptMark::PromptStart
                ],
                "cut {cut}"
            );
            assert_eq!(bytes_of(&out), stream, "cut {cut}");
        }
    }

    #[test]
    fn st_terminator_and_params() {
        let out = shape(&[b"\x1b]133;D;2;aid=7\x1b\\"]);
        assert_eq!(
            out[1],
            Piece::Mark(
                PromptMark::CommandFinished {
                    exit_status: Some(2)
                },
                MarkParams::default()
            )
        );
        let out = shape(&[b"\x1b]133;D\x07"]);
        assert_eq!(
            out[1],
            Piece::Mark(
                PromptMark::CommandFinished { exit_status: None },
                MarkParams::default()
            )
        );
    }

    #[test]
    fn signatures_and_exits_are_read() {
        let out = shape(&[
            b"\x1b]133;D;7;cohort=k3y;exit\x07\x1b]133;A;cohort=k3y\x07\x1b]133;D;cohort=\x07",
        ]);
        let marks: Vec<&Piece> = out
            .iter()
            .filter(|p| matches!(p, Piece::Mark(..)))
            .collect();
        let signed = MarkParams {
            key: Some("k3y".into()),
            exiting: false,
        };
        assert_eq!(
            *marks[0],
            Piece::Mark(
                PromptMark::CommandFinished {
                    exit_status: Some(7)
                },
                MarkParams {
                    exiting: true,
                    ..signed.clone()
                }
            )
        );
        assert_eq!(*marks[1], Piece::Mark(PromptMark::PromptStart, signed));
        // An empty key is no signature, and a key is not a status.
        assert_eq!(
            *marks[2],
            Piece::Mark(
                PromptMark::CommandFinished { exit_status: None },
                MarkParams::default()
            )
        );
    }

    #[test]
    fn other_escapes_pass_through() {
        let stream = b"\x1b[31mred\x1b[0m \x1b]0;title\x07 \x1b]1337;x\x07";
        let out = shape(&[stream]);
        assert_eq!(bytes_of(&out), stream);
        assert!(out.iter().all(|p| matches!(p, Piece::Bytes(_))));
    }

    #[test]
    fn unterminated_mark_gives_up_after_limit() {
        let mut data = b"\x1b]133;".to_vec();
        data.extend(std::iter::repeat_n(b'x', 400));
        let out = shape(&[&data]);
        assert_eq!(bytes_of(&out), data);
    }

    #[test]
    fn invalid_utf8_is_not_held() {
        let out = shape(&[b"abc\xff"]);
        assert_eq!(bytes_of(&out), b"abc\xff");
    }

    fn signal(identity: &str, payload: &str) -> Piece {
        Piece::Signal {
            identity: identity.into(),
            payload: payload.into(),
        }
    }

    #[test]
    fn signals_are_reported_in_place_and_taken_out_of_the_bytes() {
        let stream = b"a\x1b]1337;Custom=id=s3cret:state=done: ok\x07b\x1b]1337;Custom=id=s3cret:\xc3\xa9t\xc3\xa9\x1b\\c";
        let out = shape(&[stream]);
        assert_eq!(
            out,
            vec![
                Piece::Bytes(b"a".to_vec()),
                signal("s3cret", "state=done: ok"),
                Piece::Bytes(b"b".to_vec()),
                signal("s3cret", "\u{e9}t\u{e9}"),
                Piece::Bytes(b"c".to_vec()),
            ]
        );
        // Split anywhere, the same pieces come out, and the secret is in no bytes.
        for cut in 1..stream.len() {
            let out = shape(&[&stream[..cut], &stream[cut..]]);
            assert_eq!(bytes_of(&out), b"abc", "cut at {cut}");
            let signals: Vec<&Piece> = out
                .iter()
                .filter(|p| matches!(p, Piece::Signal { .. }))
                .collect();
            assert_eq!(signals.len(), 2, "cut at {cut}: {out:?}");
        }
    }

    #[test]
    fn a_custom_sequence_without_an_id_is_taken_out_unreported() {
        let out = shape(&[b"x\x1b]1337;Custom=nobody:hi\x07\x1b]1337;Custom=id=:hi\x07y"]);
        assert_eq!(
            out,
            vec![Piece::Bytes(b"x".to_vec()), Piece::Bytes(b"y".to_vec())]
        );
        // Other iTerm2 sequences are not signals.
        let other = b"\x1b]1337;SetUserVar=a=Yg==\x07";
        assert_eq!(bytes_of(&shape(&[other])), other);
    }

    #[test]
    fn a_signal_that_never_ends_well_keeps_its_id_out_of_the_output() {
        // Past its limit: dropped as far as it was waited for.
        let mut data = b"\x1b]1337;Custom=id=s3cret:".to_vec();
        data.extend(std::iter::repeat_n(b'x', MAX_SIGNAL_LEN));
        let out = shape(&[&data]);
        assert!(!contains(&bytes_of(&out), b"s3cret"), "{out:?}");
        assert!(out.iter().all(|p| !matches!(p, Piece::Signal { .. })));
        // Cut short by another sequence: dropped up to it, the other kept.
        let out = shape(&[b"a\x1b]1337;Custom=id=s3cret:x\x1b[0mb"]);
        assert_eq!(bytes_of(&out), b"a\x1b[0mb");
        // Held when the pane ends: not released.
        let mut splitter = OutputSplitter::default();
        let mut out = Vec::new();
        splitter.push(b"z\x1b]1337;Custom=id=s3c", &mut out);
        assert_eq!(splitter.flush(), None);
        let mut splitter = OutputSplitter::default();
        splitter.push(b"\x1b]13", &mut out);
        assert_eq!(splitter.flush().as_deref(), Some(&b"\x1b]13"[..]));
        // Bytes lost in the middle: the rest of it is dropped too, the output after
        // it kept.
        let mut splitter = OutputSplitter::default();
        let mut out = Vec::new();
        splitter.push(b"\x1b]1337;Custom=id=s3", &mut out);
        splitter.reset();
        splitter.push(b"cret:payload\x07after", &mut out);
        assert_eq!(bytes_of(&out), b"after");
        // A reset holding nothing of a signal drops nothing that follows.
        let mut splitter = OutputSplitter::default();
        let mut out = Vec::new();
        splitter.push(b"\x1b]133;D", &mut out);
        splitter.reset();
        splitter.push(b"kept\x07", &mut out);
        assert_eq!(bytes_of(&out), b"kept\x07");
    }

    fn contains(haystack: &[u8], needle: &[u8]) -> bool {
        haystack.windows(needle.len()).any(|w| w == needle)
    }
}
