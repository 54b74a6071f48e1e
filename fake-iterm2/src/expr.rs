//! iTerm2's expression language, as far as strings that reach iTerm2 meet it, so the
//! fake evaluates what iTerm2 would (and a client that forgot to escape is caught):
//!
//! - **Interpolated strings** (session names, tab titles, badges, the profile's
//!   command and directory): `\(expr)` is evaluated; the literal parts expand
//!   backslash escapes (`\n`, `\t`, `\"`, `\\`, `\uXXXX` …; an unknown escape stays
//!   as written).
//! - **Expressions**: a variable path (`session.name`, `user.x`, with `?` for
//!   optional), a string literal (itself interpolated), a number, or a function
//!   call. The fake has no functions of its own; a call is recorded as run (the
//!   caller decides whether side effects were allowed) and yields an error.
//! - **Invocations** (`InvokeFunction`): `name(arg: expr, …)`.
//! - **Commands**: after interpolation, `$$NAME$$` substitutions (any but `$$$$`
//!   would make iTerm2 ask the user; through the API the launch fails), then
//!   iTerm2's own word splitting (`componentsInShellCommand`): quotes group, a
//!   backslash escapes the next character even inside single quotes, and `\n`,
//!   `\t`, `\r`, `\a` become the control characters.

use std::collections::HashMap;

/// What evaluating may look up and do.
pub(crate) struct Env<'a> {
    /// A variable's value as text, by path.
    pub lookup: &'a dyn Fn(&str) -> Option<String>,
    /// Called with each function call evaluated.
    pub call: &'a dyn Fn(&str),
    /// Unknown variables are errors (iTerm2's strict strings: the command); else
    /// they are empty.
    pub strict: bool,
}

/// Evaluates an interpolated string.
pub(crate) fn interpolate(text: &str, env: &Env<'_>) -> Result<String, String> {
    let mut out = String::new();
    for (part, literal) in swifty_parts(text)? {
        if literal {
            out.push_str(&expand_escapes(&part));
        } else {
            out.push_str(&evaluate(&part, env)?);
        }
    }
    Ok(out)
}

/// Splits an interpolated string into literal parts (escapes still in) and the
/// expressions of `\(…)`.
fn swifty_parts(text: &str) -> Result<Vec<(String, bool)>, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut parts = Vec::new();
    let mut literal = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' && chars.get(i + 1) == Some(&'(') {
            if !literal.is_empty() {
                parts.push((std::mem::take(&mut literal), true));
            }
            let end = closing_paren(&chars, i + 2)
                .ok_or_else(|| format!("unterminated \\( in {text:?}"))?;
            parts.push((chars[i + 2..end].iter().collect(), false));
            i = end + 1;
        } else if c == '\\' {
            // An escape: the next character is taken with it, whatever it is.
            literal.push(c);
            if let Some(next) = chars.get(i + 1) {
                literal.push(*next);
            }
            i += 2;
        } else {
            literal.push(c);
            i += 1;
        }
    }
    if !literal.is_empty() {
        parts.push((literal, true));
    }
    Ok(parts)
}

/// The index of the `)` that closes an expression starting at `from`, skipping
/// string literals.
fn closing_paren(chars: &[char], from: usize) -> Option<usize> {
    let mut depth = 1;
    let mut in_string = false;
    let mut i = from;
    while i < chars.len() {
        match (chars[i], in_string) {
            ('\\', true) => i += 1,
            ('"', _) => in_string = !in_string,
            ('(', false) => depth += 1,
            (')', false) => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Expands the backslash escapes of a literal part.
pub(crate) fn expand_escapes(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '\\' || i + 1 >= chars.len() {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let next = chars[i + 1];
        let simple = match next {
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'a' => Some('\x07'),
            'b' => Some('\x08'),
            'f' => Some('\x0c'),
            'e' => Some('\x1b'),
            '\\' | '"' | '/' => Some(next),
            _ => None,
        };
        if let Some(c) = simple {
            out.push(c);
            i += 2;
        } else if next == 'u' && i + 6 <= chars.len() {
            let hex: String = chars[i + 2..i + 6].iter().collect();
            match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                Some(c) if hex.len() == 4 => {
                    out.push(c);
                    i += 6;
                }
                _ => {
                    out.push('\\');
                    i += 1;
                }
            }
        } else {
            // Unknown escapes stay as written.
            out.push('\\');
            i += 1;
        }
    }
    out
}

/// Evaluates one expression to text.
fn evaluate(expr: &str, env: &Env<'_>) -> Result<String, String> {
    let expr = expr.trim();
    if let Some(rest) = expr.strip_prefix('"') {
        let body = rest
            .strip_suffix('"')
            .ok_or_else(|| format!("unterminated string in {expr:?}"))?;
        return interpolate(body, env);
    }
    if expr.parse::<f64>().is_ok() {
        return Ok(expr.to_string());
    }
    if let Some(open) = expr.find('(') {
        (env.call)(expr);
        return Err(format!(
            "the fake iTerm2 has no function {}",
            expr[..open].trim()
        ));
    }
    let (path, optional) = match expr.strip_suffix('?') {
        Some(path) => (path, true),
        None => (expr, false),
    };
    match (env.lookup)(path) {
        Some(value) => Ok(value),
        None if optional || !env.strict => Ok(String::new()),
        None => Err(format!("no variable {path}")),
    }
}

/// Parses an invocation `name(arg: expr, …)` and evaluates its arguments.
pub(crate) fn invocation(
    text: &str,
    env: &Env<'_>,
) -> Result<(String, HashMap<String, String>), String> {
    let text = text.trim();
    let open = text.find('(').ok_or("an invocation needs (arguments)")?;
    let name = text[..open].trim().to_string();
    let inner = text[open + 1..]
        .strip_suffix(')')
        .ok_or("an invocation ends with )")?;
    let chars: Vec<char> = inner.chars().collect();
    let mut args = HashMap::new();
    let mut start = 0;
    let mut depth = 0;
    let mut in_string = false;
    let mut i = 0;
    let mut pieces = Vec::new();
    while i < chars.len() {
        match (chars[i], in_string) {
            ('\\', true) => i += 1,
            ('"', _) => in_string = !in_string,
            ('(', false) => depth += 1,
            (')', false) => depth -= 1,
            (',', false) if depth == 0 => {
                pieces.push(chars[start..i].iter().collect::<String>());
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    let last: String = chars[start..].iter().collect();
    if !last.trim().is_empty() {
        pieces.push(last);
    }
    for piece in pieces {
        let (key, value) = piece
            .split_once(':')
            .ok_or_else(|| format!("argument {piece:?} has no name"))?;
        args.insert(key.trim().to_string(), evaluate(value, env)?);
    }
    Ok((name, args))
}

/// `$$NAME$$` placeholders a command asks for (iTerm2's `doubleDollarVariables`);
/// `$$$$` stands for `$$` and asks for nothing.
pub(crate) fn missing_substitutions(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut start: Option<usize> = None;
    let mut from = 0;
    while let Some(at) = text[from..].find("$$").map(|i| i + from) {
        match start {
            None => start = Some(at),
            Some(s) => {
                let name = &text[s..at + 2];
                if name != "$$$$" {
                    found.push(name.to_string());
                }
                start = None;
            }
        }
        from = at + 2;
    }
    found
}

/// iTerm2's word splitting of a command line.
pub(crate) fn split_command(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let (mut single, mut double, mut escape) = (false, false, false);
    for c in text.chars() {
        if escape {
            escape = false;
            in_word = true;
            match c {
                'n' => word.push('\n'),
                'a' => word.push('\x07'),
                't' => word.push('\t'),
                'r' => word.push('\r'),
                '"' | '\\' if double => word.push(c),
                _ if double || single => {
                    word.push('\\');
                    word.push(c);
                }
                _ => word.push(c),
            }
            continue;
        }
        match c {
            '\\' => escape = true,
            '"' if !single => {
                double = !double;
                in_word = true;
            }
            '\'' if !double => {
                single = !single;
                in_word = true;
            }
            c if c.is_whitespace() && !single && !double => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    fn eval(text: &str) -> (Result<String, String>, Vec<String>) {
        let calls = RefCell::new(Vec::new());
        let lookup = |path: &str| (path == "session.name").then(|| "N".to_string());
        let call = |c: &str| calls.borrow_mut().push(c.to_string());
        let env = Env {
            lookup: &lookup,
            call: &call,
            strict: false,
        };
        let out = interpolate(text, &env);
        (out, calls.into_inner())
    }

    #[test]
    fn interpolation_evaluates_and_escapes_expand() {
        assert_eq!(eval(r"a \(session.name) b").0.unwrap(), "a N b");
        assert_eq!(eval(r"x\\(session.name)").0.unwrap(), r"x\(session.name)");
        assert_eq!(eval(r"1\n2\t\u0041\q").0.unwrap(), "1\n2\tA\\q");
        assert_eq!(eval(r"\(bogus)").0.unwrap(), "");
        let (out, calls) = eval(r#"\(f(x: "y"))"#);
        assert!(out.is_err());
        assert_eq!(calls, [r#"f(x: "y")"#]);
    }

    #[test]
    fn invocations_take_literals_and_paths() {
        let lookup = |path: &str| (path == "user.v").then(|| "V".to_string());
        let env = Env {
            lookup: &lookup,
            call: &|_| {},
            strict: false,
        };
        let (name, args) =
            invocation(r#"iterm2.set_title(title: "a \"b\", \(user.v)")"#, &env).unwrap();
        assert_eq!(name, "iterm2.set_title");
        assert_eq!(args["title"], "a \"b\", V");
        let (_, args) = invocation("f(x: user.v, y: 2)", &env).unwrap();
        assert_eq!((args["x"].as_str(), args["y"].as_str()), ("V", "2"));
        assert!(invocation("f(x 1)", &env).is_err());
    }

    #[test]
    fn commands_split_as_iterm2_splits_them() {
        assert_eq!(
            split_command(r#"/bin/sh -c 'a b' "c\"d" e\ f"#),
            ["/bin/sh", "-c", "a b", "c\"d", "e f"]
        );
        assert_eq!(split_command(r"x 'a\nb' \$"), ["x", "a\nb", "$"]);
        assert_eq!(split_command(r"'a\qb'"), [r"a\qb"]);
        assert_eq!(missing_substitutions("echo $$HOST$$ $$$$"), ["$$HOST$$"]);
        assert!(missing_substitutions(r"a \$\$ b").is_empty());
    }
}
