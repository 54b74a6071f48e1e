//! The user's configuration directory for cohort: `$XDG_CONFIG_HOME/cohort`, default
//! `~/.config/cohort`, where the files a user writes by hand live (`hosts.toml`,
//! `reducers.toml`, `screens.toml`, `prices.toml`).

use std::path::PathBuf;

/// The directory, when a home or `XDG_CONFIG_HOME` is known. It need not exist.
pub fn dir() -> Option<PathBuf> {
    std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .map(|config| config.join("cohort"))
}

/// The file `name` in the directory, or the one the environment variable `over`
/// names when it is set.
pub fn file(name: &str, over: &str) -> Option<PathBuf> {
    if let Some(file) = std::env::var_os(over).filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(file));
    }
    dir().map(|d| d.join(name))
}
