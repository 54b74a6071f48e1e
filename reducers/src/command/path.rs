//! Reading a path lexically, as a guard against destroying the wrong directory needs it:
//! is this the root, the home directory, `.`, `..`, or everything inside one of them?

/// Which directory a path names, read lexically (no file system access, no symlinks).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PathKind {
    /// `/`, `//`, `/.`, `/usr/..`, `/./`, `/..`.
    Root,
    /// `~`, `~/`, `~user`, `$HOME`, `${HOME}`, `$HOME/x/..`.
    Home,
    /// `.`, `./`, `x/..`.
    Current,
    /// `..`, `../..`, `./..`: a directory above the current one.
    Parent,
    /// Anything else (including the empty path and `~/..`).
    Other,
}

/// What [`read_path`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathRead {
    /// The directory the path names, or for `…/*`, the one whose entries it names.
    pub kind: PathKind,
    /// The path ends in a pattern that matches every entry (`*`, `.*`, `**`, `.[!.]*`,
    /// `{*,.*}` …): it names what is inside `kind`, not `kind` itself.
    pub everything: bool,
    /// The path written plainly: `/`, `~`, `~/src`, `.`, `../..`, `/usr/*`.
    pub normalized: String,
}

/// Components that match every entry of a directory.
const EVERYTHING: &[&str] = &[
    "*", "**", ".*", ".[!.]*", ".[^.]*", ".??*", "{*,.*}", "{.*,*}",
];

/// Where a path starts.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Base {
    Root,
    Home,
    Current,
}

/// Reads `path` (a word after quote removal) lexically: `//`, `/.`, `/./`, `..`
/// components, trailing slashes, `~`, `~user`, `$HOME` and `${HOME}` are resolved as a
/// shell and the kernel would, without looking at the file system.
///
/// ```
/// use cohort_reducers::command::{read_path, PathKind};
/// assert_eq!(read_path("/usr/..").kind, PathKind::Root);
/// assert_eq!(read_path("${HOME}/").kind, PathKind::Home);
/// assert_eq!(read_path("src/../..").kind, PathKind::Parent);
/// let all = read_path("~/*");
/// assert_eq!((all.kind, all.everything, all.normalized.as_str()), (PathKind::Home, true, "~/*"));
/// assert_eq!(read_path("./build/").kind, PathKind::Other);
/// ```
pub fn read_path(path: &str) -> PathRead {
    if path.is_empty() {
        return PathRead {
            kind: PathKind::Other,
            everything: false,
            normalized: String::new(),
        };
    }
    let (base, home, rest) = split_base(path);
    let mut parts: Vec<&str> = rest
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let everything = parts.last().is_some_and(|p| EVERYTHING.contains(p));
    if everything {
        parts.pop();
    }
    let mut kept: Vec<&str> = Vec::new();
    let mut up = 0;
    for part in parts {
        if part != ".." {
            kept.push(part);
        } else if kept.pop().is_none() && base != Base::Root {
            up += 1;
        }
    }
    let kind = match (kept.is_empty(), base, up) {
        (false, ..) => PathKind::Other,
        (true, Base::Root, _) => PathKind::Root,
        (true, Base::Home, 0) => PathKind::Home,
        (true, Base::Current, 0) => PathKind::Current,
        (true, Base::Current, _) => PathKind::Parent,
        (true, Base::Home, _) => PathKind::Other,
    };
    let mut segments: Vec<&str> = std::iter::repeat_n("..", up).chain(kept).collect();
    if everything {
        segments.push("*");
    }
    let tail = segments.join("/");
    let normalized = match base {
        Base::Root => format!("/{tail}"),
        Base::Home if tail.is_empty() => home.to_owned(),
        Base::Home => format!("{home}/{tail}"),
        Base::Current if tail.is_empty() => ".".to_owned(),
        Base::Current if everything && up == 0 && segments.len() == 1 => "./*".to_owned(),
        Base::Current => tail,
    };
    PathRead {
        kind,
        everything,
        normalized,
    }
}

/// The base a path starts from, how to write it, and the rest of the path.
fn split_base(path: &str) -> (Base, &str, &str) {
    for home in ["$HOME", "${HOME}"] {
        if let Some(rest) = path.strip_prefix(home) {
            if rest.is_empty() || rest.starts_with('/') {
                return (Base::Home, "~", rest);
            }
        }
    }
    if let Some(after) = path.strip_prefix('~') {
        let user_end = after.find('/').unwrap_or(after.len());
        let user = &after[..user_end];
        if user
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        {
            return (Base::Home, &path[..=user_end], &after[user_end..]);
        }
    }
    match path.strip_prefix('/') {
        Some(rest) => (Base::Root, "/", rest),
        None => (Base::Current, ".", path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(p: &str) -> (PathKind, bool) {
        let r = read_path(p);
        (r.kind, r.everything)
    }

    #[test]
    fn roots_homes_and_dots_in_their_many_spellings() {
        use PathKind::*;
        for (path, want) in [
            ("/", (Root, false)),
            ("//", (Root, false)),
            ("///", (Root, false)),
            ("/.", (Root, false)),
            ("/./", (Root, false)),
            ("/usr/..", (Root, false)),
            ("/usr/../", (Root, false)),
            ("/..", (Root, false)),
            ("/*", (Root, true)),
            ("/usr/../*", (Root, true)),
            ("~", (Home, false)),
            ("~/", (Home, false)),
            ("~/.", (Home, false)),
            ("~/*", (Home, true)),
            ("~/.*", (Home, true)),
            ("~root", (Home, false)),
            ("$HOME", (Home, false)),
            ("$HOME/", (Home, false)),
            ("${HOME}", (Home, false)),
            ("${HOME}/*", (Home, true)),
            ("$HOME/src/..", (Home, false)),
            (".", (Current, false)),
            ("./", (Current, false)),
            ("./.", (Current, false)),
            ("src/..", (Current, false)),
            ("*", (Current, true)),
            (".*", (Current, true)),
            ("./*", (Current, true)),
            ("{*,.*}", (Current, true)),
            ("..", (Parent, false)),
            ("../", (Parent, false)),
            ("../..", (Parent, false)),
            ("./..", (Parent, false)),
            ("../*", (Parent, true)),
            ("src/../../", (Parent, false)),
        ] {
            assert_eq!(kind(path), want, "{path}");
        }
    }

    #[test]
    fn ordinary_paths_are_other() {
        for path in [
            "", "build", "./target", "/usr/lib", "~/.cache", "~/..", "$HOMEDIR", "${HOME}x",
            "/tmp/*", "*.o", "src/*/x",
        ] {
            assert_eq!(read_path(path).kind, PathKind::Other, "{path}");
        }
    }

    #[test]
    fn normalized_forms() {
        for (path, want) in [
            ("//usr/./lib//", "/usr/lib"),
            ("/usr/..", "/"),
            ("${HOME}/src/../.cache/", "~/.cache"),
            ("~alice/x", "~alice/x"),
            ("a/../../b", "../b"),
            ("./", "."),
            ("*", "./*"),
            ("../*", "../*"),
            ("/*", "/*"),
        ] {
            assert_eq!(read_path(path).normalized, want, "{path}");
        }
    }
}
