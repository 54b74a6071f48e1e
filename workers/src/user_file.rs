//! A file of the user's that cohort reads its settings from (the screen words, the
//! price table): found in the user's config directory or where an environment
//! variable says, read again when it changes (looked at at most once a second),
//! without a rebuild or a restart. A file with an error is refused with its path,
//! line and reason, logged once, and the standing says so; the value without the
//! file (the built-in one) is used meanwhile.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// How often the file is looked at for a change.
const RECHECK: Duration = Duration::from_secs(1);

/// Whether the user's file is in use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Standing {
    /// The user's file, when there is one.
    pub file: Option<PathBuf>,
    /// Why the user's file was refused (the value without it is used).
    pub error: Option<String>,
}

/// A user's file of settings of type `T`, read again when it changes.
pub struct Watched<T> {
    /// Its name in the user's config directory.
    name: &'static str,
    /// The environment variable that names another file in its place.
    env: &'static str,
    /// Reads the file's text (the second argument names it in errors).
    parse: fn(&str, &str) -> Result<T, String>,
    /// The value without a file.
    fallback: fn() -> T,
    slot: Mutex<Option<Loaded<T>>>,
}

/// The value as last loaded, and where it came from.
struct Loaded<T> {
    value: Arc<T>,
    standing: Standing,
    /// The file's path, modification time and size when it was read.
    stamp: Option<(PathBuf, Option<(SystemTime, u64)>)>,
    looked: Instant,
}

impl<T> Watched<T> {
    /// The file `name` (or the one `env` names), read by `parse`; `fallback` when
    /// there is none or it is refused.
    pub const fn new(
        name: &'static str,
        env: &'static str,
        parse: fn(&str, &str) -> Result<T, String>,
        fallback: fn() -> T,
    ) -> Self {
        Watched {
            name,
            env,
            parse,
            fallback,
            slot: Mutex::new(None),
        }
    }

    /// Where the file is looked for.
    pub fn path(&self) -> Option<PathBuf> {
        cohort_terminal::user_config::file(self.name, self.env)
    }

    /// The value in use, read again when the file changed.
    pub fn current(&self) -> Arc<T> {
        self.with_loaded(|l| l.value.clone())
    }

    /// Whether the user's file is in use, and why it was refused if it was.
    pub fn standing(&self) -> Standing {
        self.with_loaded(|l| l.standing.clone())
    }

    fn with_loaded<R>(&self, f: impl FnOnce(&Loaded<T>) -> R) -> R {
        let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        // Looked at again a second after the last look, however often it is asked.
        let stale = match slot.as_mut() {
            None => true,
            Some(l) if l.looked.elapsed() < RECHECK => false,
            Some(l) => {
                l.looked = Instant::now();
                let now = self.path().map(|f| {
                    let stamp = stamp_of(&f);
                    (f, stamp)
                });
                now != l.stamp
            }
        };
        if stale {
            *slot = Some(self.load());
        }
        f(slot.as_ref().expect("loaded above"))
    }

    /// Reads the file again: the fallback when there is none or it is refused.
    fn load(&self) -> Loaded<T> {
        let file = self.path();
        let stamp = file.as_ref().map(|f| (f.clone(), stamp_of(f)));
        let (value, standing) = match stamp.as_ref() {
            Some((path, Some(_))) => {
                let read = std::fs::read_to_string(path)
                    .map_err(|e| format!("{}: {e}", path.display()))
                    .and_then(|text| (self.parse)(&text, &path.display().to_string()));
                match read {
                    Ok(value) => (
                        value,
                        Standing {
                            file: Some(path.clone()),
                            error: None,
                        },
                    ),
                    Err(error) => {
                        tracing::warn!(target: "cohort::workers", "{error}; cohort goes on without the file until it is fixed");
                        (
                            (self.fallback)(),
                            Standing {
                                file: Some(path.clone()),
                                error: Some(error),
                            },
                        )
                    }
                }
            }
            _ => (
                (self.fallback)(),
                Standing {
                    file: None,
                    error: None,
                },
            ),
        };
        Loaded {
            value: Arc::new(value),
            standing,
            stamp,
            looked: Instant::now(),
        }
    }
}

impl Standing {
    /// In a line: which `what` (`screen words`, `transcript rules`) are in use.
    pub fn describe(&self, what: &str) -> String {
        match (&self.file, &self.error) {
            (_, Some(error)) => {
                format!("built-in {what} only: the user's file was refused: {error}")
            }
            (Some(file), None) => format!("built-in {what} with the user's {}", file.display()),
            (None, None) => format!("built-in {what}"),
        }
    }
}

/// A file's identity now: its modification time and size (`None` when it does not
/// exist).
fn stamp_of(path: &Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// Where a TOML error is: `, line N` of `text`, or nothing.
pub fn toml_line(text: &str, error: &toml::de::Error) -> String {
    error
        .span()
        .map(|span| {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            format!(", line {line}")
        })
        .unwrap_or_default()
}
