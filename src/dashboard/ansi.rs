//! A screen row with SGR sequences (as tmux's `capture-pane -e` gives it) turned into
//! HTML: runs of text in `<span>`s whose inline style carries the colours (the 16
//! basic ones, the 256-colour palette and true colour) and attributes (bold, dim,
//! italic, underline, strike-through, inverse). Text is escaped; any other escape
//! sequence is dropped.

use std::fmt::Write;

/// The 16 basic colours (xterm's defaults, a little softened for a dark page).
const BASIC: [&str; 16] = [
    "#1e1e1e", "#cd3131", "#0dbc79", "#e5e510", "#2472c8", "#bc3fbc", "#11a8cd", "#e5e5e5",
    "#666666", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#ffffff",
];

/// A colour as a terminal names it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Colour {
    #[default]
    Default,
    Indexed(u8),
    Rgb(u8, u8, u8),
}

impl Colour {
    fn css(self, out: &mut String) {
        match self {
            Colour::Default => {}
            Colour::Indexed(i) if i < 16 => out.push_str(BASIC[i as usize]),
            Colour::Indexed(i) if i >= 232 => {
                let v = 8 + 10 * (i - 232);
                let _ = write!(out, "#{v:02x}{v:02x}{v:02x}");
            }
            Colour::Indexed(i) => {
                let i = i - 16;
                let level = |n: u8| if n == 0 { 0 } else { 55 + 40 * n };
                let _ = write!(
                    out,
                    "#{:02x}{:02x}{:02x}",
                    level(i / 36),
                    level((i / 6) % 6),
                    level(i % 6)
                );
            }
            Colour::Rgb(r, g, b) => {
                let _ = write!(out, "#{r:02x}{g:02x}{b:02x}");
            }
        }
    }
}

/// The style text is drawn in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Style {
    fg: Colour,
    bg: Colour,
    bold: bool,
    dim: bool,
    italic: bool,
    underline: bool,
    strike: bool,
    inverse: bool,
}

impl Style {
    /// Applies one SGR sequence's parameters (`1;38;5;208`).
    fn apply(&mut self, params: &str) {
        let numbers: Vec<u16> = params
            .split([';', ':'])
            .map(|p| p.parse().unwrap_or(0))
            .collect();
        let mut i = 0;
        while i < numbers.len() {
            match numbers[i] {
                0 => *self = Style::default(),
                1 => self.bold = true,
                2 => self.dim = true,
                3 => self.italic = true,
                4 => self.underline = true,
                7 => self.inverse = true,
                9 => self.strike = true,
                21 | 24 => self.underline = false,
                22 => (self.bold, self.dim) = (false, false),
                23 => self.italic = false,
                27 => self.inverse = false,
                29 => self.strike = false,
                n @ 30..=37 => self.fg = Colour::Indexed((n - 30) as u8),
                39 => self.fg = Colour::Default,
                n @ 40..=47 => self.bg = Colour::Indexed((n - 40) as u8),
                49 => self.bg = Colour::Default,
                n @ 90..=97 => self.fg = Colour::Indexed((n - 90 + 8) as u8),
                n @ 100..=107 => self.bg = Colour::Indexed((n - 100 + 8) as u8),
                n @ (38 | 48) => {
                    let colour = match numbers.get(i + 1) {
                        Some(5) => {
                            let c = numbers.get(i + 2).copied().unwrap_or(0).min(255) as u8;
                            i += 2;
                            Colour::Indexed(c)
                        }
                        Some(2) => {
                            let at =
                                |k: usize| numbers.get(i + k).copied().unwrap_or(0).min(255) as u8;
                            let c = Colour::Rgb(at(2), at(3), at(4));
                            i += 4;
                            c
                        }
                        _ => Colour::Default,
                    };
                    if n == 38 {
                        self.fg = colour;
                    } else {
                        self.bg = colour;
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }

    /// The inline CSS for this style; empty for the default one.
    fn css(&self) -> String {
        let (mut fg, mut bg) = (self.fg, self.bg);
        let mut out = String::new();
        if self.inverse {
            (fg, bg) = (bg, fg);
            // Inverse of the defaults: the page's colours swapped.
            if fg == Colour::Default {
                fg = Colour::Indexed(0);
            }
            if bg == Colour::Default {
                bg = Colour::Indexed(7);
            }
        }
        if fg != Colour::Default {
            out.push_str("color:");
            fg.css(&mut out);
            out.push(';');
        }
        if bg != Colour::Default {
            out.push_str("background:");
            bg.css(&mut out);
            out.push(';');
        }
        if self.bold {
            out.push_str("font-weight:bold;");
        }
        if self.dim {
            out.push_str("opacity:.7;");
        }
        if self.italic {
            out.push_str("font-style:italic;");
        }
        match (self.underline, self.strike) {
            (true, true) => out.push_str("text-decoration:underline line-through;"),
            (true, false) => out.push_str("text-decoration:underline;"),
            (false, true) => out.push_str("text-decoration:line-through;"),
            (false, false) => {}
        }
        out
    }
}

/// One row of a styled screen as HTML (see the module docs).
pub fn row_to_html(row: &str) -> String {
    let mut out = String::with_capacity(row.len() + 16);
    let mut style = Style::default();
    let mut open = false;
    let mut text = String::new();
    let flush = |out: &mut String, text: &mut String, style: &Style, open: &mut bool| {
        if text.is_empty() {
            return;
        }
        let css = style.css();
        if !css.is_empty() {
            let _ = write!(out, "<span style=\"{css}\">");
            *open = true;
        }
        escape_into(out, text);
        if *open {
            out.push_str("</span>");
            *open = false;
        }
        text.clear();
    };
    let mut chars = row.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            if !c.is_control() || c == '\t' {
                text.push(c);
            }
            continue;
        }
        match chars.peek() {
            Some('[') => {
                chars.next();
                let mut params = String::new();
                let mut last = None;
                for d in chars.by_ref() {
                    if ('\x40'..='\x7e').contains(&d) {
                        last = Some(d);
                        break;
                    }
                    params.push(d);
                }
                if last == Some('m') {
                    let mut next = style;
                    next.apply(if params.is_empty() { "0" } else { &params });
                    if next != style {
                        flush(&mut out, &mut text, &style, &mut open);
                        style = next;
                    }
                }
            }
            Some(']') => {
                // An OSC (a hyperlink): skip to its terminator, BEL or ST.
                chars.next();
                while let Some(d) = chars.next() {
                    if d == '\x07' || (d == '\x1b' && chars.next_if_eq(&'\\').is_some()) {
                        break;
                    }
                }
            }
            _ => {
                chars.next();
            }
        }
    }
    flush(&mut out, &mut text, &style, &mut open);
    out
}

/// The text with `&`, `<`, `>` and `"` escaped.
pub fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_and_attributes_become_spans() {
        assert_eq!(
            row_to_html("a \x1b[1;31mred\x1b[0m b"),
            "a <span style=\"color:#cd3131;font-weight:bold;\">red</span> b"
        );
        assert_eq!(
            row_to_html("\x1b[38;5;208mx\x1b[48;2;1;2;3my"),
            "<span style=\"color:#ff8700;\">x</span><span style=\"color:#ff8700;background:#010203;\">y</span>"
        );
        assert_eq!(
            row_to_html("\x1b[7mi\x1b[27m"),
            "<span style=\"color:#1e1e1e;background:#e5e5e5;\">i</span>"
        );
    }

    #[test]
    fn text_is_escaped_and_other_sequences_dropped() {
        assert_eq!(
            row_to_html("<b>&\"\x1b]8;;http://x\x1b\\link\x1b]8;;\x07\x1b[2J"),
            "&lt;b&gt;&amp;&quot;link"
        );
        assert_eq!(row_to_html("\x1b[0m\x1b[m"), "");
    }

    #[test]
    fn the_palette_covers_cubes_and_greys() {
        let css = |i: u8| {
            let mut s = String::new();
            Colour::Indexed(i).css(&mut s);
            s
        };
        assert_eq!(css(16), "#000000");
        assert_eq!(css(231), "#ffffff");
        assert_eq!(css(232), "#080808");
        assert_eq!(css(255), "#eeeeee");
    }
}
