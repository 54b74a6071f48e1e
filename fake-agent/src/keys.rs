//! Terminal input decoding: raw bytes from a raw-mode tty into keys and pastes.
//!
//! Understands what a terminal (or tmux) sends to the real agent TUIs: plain UTF-8
//! text, C0 control keys, CSI and SS3 cursor keys, bracketed paste
//! (`ESC[200~` … `ESC[201~`), the kitty keyboard protocol (`CSI 13 u`, `CSI 99;5 u`)
//! and xterm's modifyOtherKeys (`CSI 27;5;99 ~`), both of which the real CLIs ask for.
//! Input may be split anywhere across reads; incomplete sequences wait for the next
//! read. A lone `ESC` at the end of a read is held until [`Decoder::flush_pending`]
//! (the caller's short timeout), as terminals send Escape as a single byte.
//! Malformed input never panics: it decodes to [`Key::Other`] or U+FFFD.

/// Longest escape sequence kept waiting for its end; longer ones are dropped.
const MAX_SEQUENCE: usize = 64;

/// One decoded input event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Key {
    /// A printable character typed (or sent outside a bracketed paste).
    Char(char),
    /// Carriage return, kitty `CSI 13 u`: submit (or a newline inside a paste burst).
    Enter,
    /// A key that inserts a newline: line feed (Ctrl-J), Shift-Enter, Alt-Enter.
    Newline,
    /// Backspace (DEL or BS).
    Backspace,
    /// Escape on its own.
    Esc,
    /// Tab.
    Tab,
    /// Ctrl-C.
    CtrlC,
    /// Ctrl-D.
    CtrlD,
    /// Ctrl-U (kill to line start).
    CtrlU,
    /// Ctrl-L (redraw).
    CtrlL,
    /// Cursor up.
    Up,
    /// Cursor down.
    Down,
    /// Cursor left.
    Left,
    /// Cursor right.
    Right,
    /// A whole bracketed paste, its text exactly as received (CRs included).
    Paste(String),
    /// Any other sequence or control byte; ignored by the composer.
    Other,
}

/// An incremental decoder; feed it every read.
#[derive(Debug, Default)]
pub struct Decoder {
    pending: Vec<u8>,
    paste: Option<Vec<u8>>,
}

const PASTE_START: &[u8] = b"\x1b[200~";
const PASTE_END: &[u8] = b"\x1b[201~";

impl Decoder {
    /// A decoder with nothing pending.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes `bytes` (appended to whatever was pending) into keys.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Key> {
        self.pending.extend_from_slice(bytes);
        let mut keys = Vec::new();
        loop {
            if let Some(paste) = self.paste.as_mut() {
                match find(&self.pending, PASTE_END) {
                    Some(at) => {
                        paste.extend_from_slice(&self.pending[..at]);
                        self.pending.drain(..at + PASTE_END.len());
                        let text = String::from_utf8_lossy(paste).into_owned();
                        self.paste = None;
                        keys.push(Key::Paste(text));
                        continue;
                    }
                    None => {
                        // Keep a tail that may be the start of the end marker.
                        let keep = partial_suffix(&self.pending, PASTE_END);
                        let take = self.pending.len() - keep;
                        paste.extend_from_slice(&self.pending[..take]);
                        self.pending.drain(..take);
                        return keys;
                    }
                }
            }
            if self.pending.is_empty() {
                return keys;
            }
            match decode_one(&self.pending) {
                Step::Key(key, used) => {
                    self.pending.drain(..used);
                    keys.push(key);
                }
                Step::PasteStart(used) => {
                    self.pending.drain(..used);
                    self.paste = Some(Vec::new());
                }
                Step::Incomplete => return keys,
            }
        }
    }

    /// True while a lone `ESC` (or another unfinished sequence) waits for more bytes.
    pub fn has_pending(&self) -> bool {
        self.paste.is_none() && !self.pending.is_empty()
    }

    /// True while inside a bracketed paste whose end has not arrived.
    pub fn in_paste(&self) -> bool {
        self.paste.is_some()
    }

    /// Gives up waiting: a held `ESC` becomes [`Key::Esc`], other fragments are dropped.
    pub fn flush_pending(&mut self) -> Vec<Key> {
        if self.paste.is_some() || self.pending.is_empty() {
            return Vec::new();
        }
        let rest = std::mem::take(&mut self.pending);
        let mut keys = Vec::new();
        if rest[0] == 0x1b {
            keys.push(Key::Esc);
            keys.extend(self.feed(&rest[1..]));
        } else {
            // An unfinished UTF-8 character: it will never complete.
            keys.push(Key::Char(char::REPLACEMENT_CHARACTER));
        }
        keys
    }
}

enum Step {
    Key(Key, usize),
    PasteStart(usize),
    Incomplete,
}

fn decode_one(buf: &[u8]) -> Step {
    let first = buf[0];
    match first {
        0x1b => decode_escape(buf),
        b'\r' => Step::Key(Key::Enter, 1),
        b'\n' => Step::Key(Key::Newline, 1),
        0x7f | 0x08 => Step::Key(Key::Backspace, 1),
        b'\t' => Step::Key(Key::Tab, 1),
        0x03 => Step::Key(Key::CtrlC, 1),
        0x04 => Step::Key(Key::CtrlD, 1),
        0x15 => Step::Key(Key::CtrlU, 1),
        0x0c => Step::Key(Key::CtrlL, 1),
        0x00..=0x1f => Step::Key(Key::Other, 1),
        _ => decode_utf8(buf),
    }
}

fn decode_utf8(buf: &[u8]) -> Step {
    let width = match buf[0] {
        0x00..=0x7f => 1,
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return Step::Key(Key::Char(char::REPLACEMENT_CHARACTER), 1),
    };
    if buf.len() < width {
        // Wait for the rest unless what is there is already invalid.
        if buf[1..].iter().all(|b| b & 0xc0 == 0x80) {
            return Step::Incomplete;
        }
        return Step::Key(Key::Char(char::REPLACEMENT_CHARACTER), 1);
    }
    match std::str::from_utf8(&buf[..width]) {
        Ok(s) => match s.chars().next() {
            Some(c) => Step::Key(Key::Char(c), width),
            None => Step::Key(Key::Other, width),
        },
        Err(_) => Step::Key(Key::Char(char::REPLACEMENT_CHARACTER), 1),
    }
}

fn decode_escape(buf: &[u8]) -> Step {
    let Some(&second) = buf.get(1) else {
        return Step::Incomplete;
    };
    match second {
        b'[' => decode_csi(buf),
        b'O' => match buf.get(2) {
            None => Step::Incomplete,
            Some(b'A') => Step::Key(Key::Up, 3),
            Some(b'B') => Step::Key(Key::Down, 3),
            Some(b'C') => Step::Key(Key::Right, 3),
            Some(b'D') => Step::Key(Key::Left, 3),
            Some(b'M') => Step::Key(Key::Enter, 3),
            Some(_) => Step::Key(Key::Other, 3),
        },
        b'\r' => Step::Key(Key::Newline, 2),
        // ESC ESC: the first one is an Escape press.
        0x1b => Step::Key(Key::Esc, 1),
        // Alt+key: not used by the composer.
        _ => Step::Key(Key::Other, 2),
    }
}

fn decode_csi(buf: &[u8]) -> Step {
    // buf starts with ESC [
    let mut end = None;
    for (i, &b) in buf.iter().enumerate().skip(2) {
        match b {
            0x20..=0x3f => {}
            0x40..=0x7e => {
                end = Some(i);
                break;
            }
            // A control byte inside a sequence: abandon the sequence before it.
            _ => return Step::Key(Key::Other, i),
        }
        if i >= MAX_SEQUENCE {
            return Step::Key(Key::Other, i + 1);
        }
    }
    let Some(end) = end else {
        return if buf.len() > MAX_SEQUENCE {
            Step::Key(Key::Other, buf.len())
        } else {
            Step::Incomplete
        };
    };
    let used = end + 1;
    if &buf[..used] == PASTE_START {
        return Step::PasteStart(used);
    }
    let params = String::from_utf8_lossy(&buf[2..end]);
    let key = match buf[end] {
        b'A' => Key::Up,
        b'B' => Key::Down,
        b'C' => Key::Right,
        b'D' => Key::Left,
        b'u' => kitty_key(&params),
        b'~' => tilde_key(&params),
        _ => Key::Other,
    };
    Step::Key(key, used)
}

/// `CSI code ; modifiers u` (kitty keyboard protocol).
fn kitty_key(params: &str) -> Key {
    let mut fields = params.split(';');
    let code = fields
        .next()
        .and_then(|f| f.split(':').next()?.parse::<u32>().ok());
    let mods = fields
        .next()
        .and_then(|f| f.split(':').next()?.parse::<u32>().ok())
        .unwrap_or(1);
    match code {
        Some(code) => modified_key(code, mods),
        None => Key::Other,
    }
}

/// `CSI 27 ; modifiers ; code ~` (modifyOtherKeys) and the paste end outside a paste.
fn tilde_key(params: &str) -> Key {
    let fields: Vec<&str> = params.split(';').collect();
    if fields.len() == 3 && fields[0] == "27" {
        let mods = fields[1].parse::<u32>().unwrap_or(1);
        return match fields[2].parse::<u32>() {
            Ok(code) => modified_key(code, mods),
            Err(_) => Key::Other,
        };
    }
    Key::Other
}

fn modified_key(code: u32, mods: u32) -> Key {
    let bits = mods.saturating_sub(1);
    let shift = bits & 1 != 0;
    let alt = bits & 2 != 0;
    let ctrl = bits & 4 != 0;
    match code {
        13 if shift || alt || ctrl => Key::Newline,
        13 => Key::Enter,
        27 => Key::Esc,
        9 => Key::Tab,
        127 | 8 => Key::Backspace,
        _ if ctrl => match char::from_u32(code).map(|c| c.to_ascii_lowercase()) {
            Some('c') => Key::CtrlC,
            Some('d') => Key::CtrlD,
            Some('u') => Key::CtrlU,
            Some('l') => Key::CtrlL,
            Some('j') => Key::Newline,
            _ => Key::Other,
        },
        _ if alt => Key::Other,
        _ => match char::from_u32(code) {
            Some(c) if !c.is_control() => Key::Char(c),
            _ => Key::Other,
        },
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Length of the longest suffix of `buf` that is a proper prefix of `marker`.
fn partial_suffix(buf: &[u8], marker: &[u8]) -> usize {
    (1..marker.len())
        .rev()
        .find(|&n| n <= buf.len() && buf[buf.len() - n..] == marker[..n])
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(bytes: &[u8]) -> Vec<Key> {
        let mut d = Decoder::new();
        let mut keys = d.feed(bytes);
        keys.extend(d.flush_pending());
        keys
    }

    #[test]
    fn text_controls_and_utf8() {
        assert_eq!(
            all("hé\r\x7f\x03".as_bytes()),
            vec![
                Key::Char('h'),
                Key::Char('é'),
                Key::Enter,
                Key::Backspace,
                Key::CtrlC
            ]
        );
    }

    #[test]
    fn bracketed_paste_is_one_event_and_a_following_cr_is_enter() {
        assert_eq!(
            all(b"\x1b[200~a\rb\x1b[201~\r"),
            vec![Key::Paste("a\rb".into()), Key::Enter]
        );
    }

    #[test]
    fn paste_split_inside_the_end_marker_still_ends() {
        let mut d = Decoder::new();
        assert!(d.feed(b"\x1b[200~abc\x1b[20").is_empty());
        assert!(d.in_paste());
        assert_eq!(d.feed(b"1~"), vec![Key::Paste("abc".into())]);
    }

    #[test]
    fn kitty_and_modify_other_keys() {
        assert_eq!(
            all(b"\x1b[13u\x1b[13;2u\x1b[99;5u\x1b[27;5;100~\x1b[97u"),
            vec![
                Key::Enter,
                Key::Newline,
                Key::CtrlC,
                Key::CtrlD,
                Key::Char('a')
            ]
        );
    }

    #[test]
    fn lone_escape_waits_for_the_timeout() {
        let mut d = Decoder::new();
        assert!(d.feed(b"\x1b").is_empty());
        assert!(d.has_pending());
        assert_eq!(d.flush_pending(), vec![Key::Esc]);
        assert_eq!(d.feed(b"\x1b[A"), vec![Key::Up]);
    }

    /// A small deterministic generator, so the test needs no dependency.
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            self.0 >> 33
        }
    }

    /// Bytes biased towards the interesting ones: ESC, '[', digits, ';', '~', 'u',
    /// paste markers, UTF-8 lead and continuation bytes.
    fn noise(rng: &mut Lcg, len: usize) -> Vec<u8> {
        const PIECES: &[&[u8]] = &[
            b"\x1b",
            b"[",
            b"200~",
            b"201~",
            b"\x1b[200~",
            b"\x1b[201~",
            b"13",
            b";",
            b"u",
            b"~",
            b"\r",
            b"\xe2\x82",
            b"\xac",
            b"\xff",
            b"O",
            b"27;5;99~",
        ];
        let mut out = Vec::new();
        while out.len() < len {
            if rng.next().is_multiple_of(3) {
                out.push((rng.next() % 256) as u8);
            } else {
                out.extend_from_slice(PIECES[(rng.next() as usize) % PIECES.len()]);
            }
        }
        out
    }

    #[test]
    fn random_input_split_anywhere_decodes_like_whole_input() {
        let mut rng = Lcg(0x5eed);
        for round in 0..2000 {
            let bytes = noise(&mut rng, 1 + (round % 97));
            let whole = all(&bytes);
            // Same bytes, fed in random pieces (never flushing in between, so a lone
            // ESC is not turned into Escape early).
            let mut d = Decoder::new();
            let mut split = Vec::new();
            let mut at = 0;
            while at < bytes.len() {
                let n = 1 + (rng.next() as usize) % 7;
                let end = (at + n).min(bytes.len());
                split.extend(d.feed(&bytes[at..end]));
                at = end;
            }
            split.extend(d.flush_pending());
            assert_eq!(whole, split, "input {bytes:?}");
        }
    }
}
