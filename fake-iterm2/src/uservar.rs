//! User variables a program sets with `OSC 1337 ; SetUserVar=<name>=<base64> BEL`
//! (or `ST`), found in a session's output as iTerm2 finds them.
//!
//! What iTerm2 does with one (`VT100Terminal.executeXtermSetKvp`,
//! `PTYSession.screenSetUserVar:`): the payload after `SetUserVar=` is split at its
//! first `=` into a name and a value; a name with a dot is ignored; the value is
//! base64-decoded the way iTerm2's decoder (APR's) does it — line breaks dropped,
//! decoding stops at the first character outside the alphabet, padding optional —
//! and must be UTF-8; the session variable `user.<name>` is set to it. Without `=`,
//! or when the value decodes to nothing or to bytes that are not UTF-8, the variable
//! is unset. Other `OSC 1337` commands pass through untouched.

/// The longest sequence waited for before it is passed through as plain output.
const MAX_LEN: usize = 64 * 1024;

/// How the sequence starts.
const START: &[u8] = b"\x1b]1337;SetUserVar=";

/// One user variable set (or unset, `value: None`) by the output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserVar {
    /// The name after `user.`.
    pub name: String,
    /// The decoded value.
    pub value: Option<String>,
}

/// A piece of output: plain bytes, or a SetUserVar at this point.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Chunk {
    /// Output bytes (any other escape sequence included).
    Bytes(Vec<u8>),
    /// A SetUserVar, at its place in the output.
    Set(UserVar),
}

/// Finds SetUserVar sequences in one session's output stream, holding back a
/// sequence split across reads until its end arrives.
#[derive(Debug, Default)]
pub struct UserVarSplitter {
    carry: Vec<u8>,
}

impl UserVarSplitter {
    /// Feeds the next piece of output, appending what it holds to `out` in order.
    pub fn push(&mut self, data: &[u8], out: &mut Vec<Chunk>) {
        let mut buf = std::mem::take(&mut self.carry);
        buf.extend_from_slice(data);
        let mut emitted = 0;
        let mut pos = 0;
        while let Some(offset) = buf[pos..].iter().position(|&b| b == 0x1b) {
            let esc = pos + offset;
            match scan(&buf[esc..]) {
                Scan::Sequence { len, set } => {
                    if emitted < esc {
                        out.push(Chunk::Bytes(buf[emitted..esc].to_vec()));
                    }
                    out.extend(set.map(Chunk::Set));
                    emitted = esc + len;
                    pos = emitted;
                }
                Scan::Other => pos = esc + 1,
                Scan::Incomplete => {
                    if emitted < esc {
                        out.push(Chunk::Bytes(buf[emitted..esc].to_vec()));
                    }
                    self.carry = buf[esc..].to_vec();
                    return;
                }
            }
        }
        if emitted < buf.len() {
            out.push(Chunk::Bytes(buf[emitted..].to_vec()));
        }
    }
}

enum Scan {
    /// A SetUserVar sequence of `len` bytes; `set` unless iTerm2 ignores it.
    Sequence { len: usize, set: Option<UserVar> },
    /// Not a SetUserVar sequence.
    Other,
    /// Could be one; wait for more bytes.
    Incomplete,
}

/// Looks for `ESC ] 1337 ; SetUserVar=<payload> (BEL | ESC \)` at the start of `buf`.
fn scan(buf: &[u8]) -> Scan {
    let n = buf.len().min(START.len());
    if buf[..n] != START[..n] {
        return Scan::Other;
    }
    if buf.len() < START.len() {
        return Scan::Incomplete;
    }
    let body = &buf[START.len()..];
    for (i, &b) in body.iter().enumerate() {
        let end = match b {
            0x07 => START.len() + i + 1,
            0x1b if i + 1 == body.len() => return Scan::Incomplete,
            0x1b if body[i + 1] == b'\\' => START.len() + i + 2,
            // Another escape sequence starts: this one was cut short.
            0x1b => return Scan::Other,
            _ => continue,
        };
        return Scan::Sequence {
            len: end,
            set: set_user_var(&body[..i]),
        };
    }
    if buf.len() >= MAX_LEN {
        Scan::Other
    } else {
        Scan::Incomplete
    }
}

/// What iTerm2 does with the payload of a SetUserVar (after `SetUserVar=`), unless it
/// ignores it.
fn set_user_var(payload: &[u8]) -> Option<UserVar> {
    let payload = std::str::from_utf8(payload).ok()?;
    let (name, value) = match payload.split_once('=') {
        Some((name, encoded)) => (name, decode(encoded)),
        None => (payload, None),
    };
    if name.is_empty() || name.contains('.') {
        return None;
    }
    Some(UserVar {
        name: name.to_string(),
        value,
    })
}

/// Base64 as iTerm2 decodes it (APR's decoder); `None` when nothing decodes or the
/// bytes are not UTF-8.
pub fn decode(text: &str) -> Option<String> {
    let sextet = |b: u8| match b {
        b'A'..=b'Z' => Some(b - b'A'),
        b'a'..=b'z' => Some(b - b'a' + 26),
        b'0'..=b'9' => Some(b - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let digits: Vec<u8> = text
        .bytes()
        .filter(|&b| b != b'\r' && b != b'\n')
        .map_while(sextet)
        .collect();
    let mut out = Vec::with_capacity(digits.len() / 4 * 3 + 2);
    for group in digits.chunks(4) {
        let n = group
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &d)| n | (u32::from(d) << (18 - 6 * i)));
        // 4 digits make 3 bytes, 3 make 2, 2 make 1, a lone one none.
        out.extend_from_slice(&n.to_be_bytes()[1..group.len()]);
    }
    if out.is_empty() {
        return None;
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(pieces: &[&[u8]]) -> Vec<Chunk> {
        let mut splitter = UserVarSplitter::default();
        let mut out = Vec::new();
        for piece in pieces {
            splitter.push(piece, &mut out);
        }
        out
    }

    fn set(name: &str, value: Option<&str>) -> Chunk {
        Chunk::Set(UserVar {
            name: name.into(),
            value: value.map(str::to_string),
        })
    }

    #[test]
    fn decodes_as_iterm2_does() {
        assert_eq!(decode("aGVsbG8=").as_deref(), Some("hello"));
        // Padding is optional, line breaks are dropped, decoding stops at the first
        // character outside the alphabet.
        assert_eq!(decode("aGVsbG8").as_deref(), Some("hello"));
        assert_eq!(decode("aGVs\nbG8=").as_deref(), Some("hello"));
        assert_eq!(decode("aGVs*bG8=").as_deref(), Some("hel"));
        assert_eq!(decode(""), None);
        assert_eq!(decode("*"), None);
        // Not UTF-8.
        assert_eq!(decode("/w=="), None);
    }

    #[test]
    fn sequences_are_found_in_order_even_when_split() {
        let out = split(&[
            b"a\x1b]1337;SetUserVar=v=aGk=\x07b\x1b]13",
            b"37;SetUser",
            b"Var=v\x1b\\c\x1b]1337;CurrentDir=/x\x07d\x1b]133;A\x07",
        ]);
        let bytes = |b: &[u8]| Chunk::Bytes(b.to_vec());
        assert_eq!(
            out,
            vec![
                bytes(b"a"),
                set("v", Some("hi")),
                bytes(b"b"),
                set("v", None),
                bytes(b"c\x1b]1337;CurrentDir=/x\x07d\x1b]133;A\x07"),
            ]
        );
    }

    #[test]
    fn what_iterm2_ignores_is_ignored() {
        assert_eq!(
            split(&[b"\x1b]1337;SetUserVar=a.b=aGk=\x07\x1b]1337;SetUserVar==aGk=\x07"]),
            vec![]
        );
        assert_eq!(
            split(&[b"\x1b]1337;SetUserVar=v=\x07"]),
            vec![set("v", None)]
        );
    }
}
