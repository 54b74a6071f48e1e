//! The shape the screen words ([`crate::screen_rules`]) and the transcript rules
//! ([`crate::transcript_rules`]) share: a TOML file with a table per CLI, each table
//! lists of phrases by key, and version tables (`[claude.versions.">=2.1"]`) whose
//! lists hold only for the releases in their range.
//!
//! A built-in file ships with cohort; the user's file of the same shape is merged
//! over it: each list it gives is added to the built-in one, or, in a table with
//! `replace = true`, used instead of it. A version table adds to, or replaces, its
//! CLI's lists for a worker whose transcript gives a version in the range;
//! replacements apply first, then additions, so the result does not depend on the
//! order the ranges are written in. A file is checked when read: no empty phrase
//! (it would match everything), no key that its CLI's reader never reads, ranges
//! that read, and version tables only for the CLIs whose transcript gives their
//! version. An error names the file, the line and what to do.

use std::collections::{BTreeMap, BTreeSet};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::cli_version::{Version, VersionRange};
use crate::user_file::toml_line;

/// One table of a rules file: lists of phrases by key, and version tables of the
/// same shape.
pub trait Lists: Clone + Default {
    /// Every list with its key, in the file's order.
    fn lists_mut(&mut self) -> Vec<(&'static str, &mut Vec<String>)>;
    /// Its version tables, by range.
    fn versions(&self) -> &BTreeMap<String, Self>;
    /// Its `replace`, its version tables, and (in a version table) the lists that
    /// replace the table's own where it applies.
    fn parts(&mut self) -> Parts<'_, Self>;
}

/// The parts of a table beside its lists (see [`Lists::parts`]).
pub struct Parts<'a, T> {
    /// In a user's file: the lists given replace the built-in ones.
    pub replace: &'a mut bool,
    /// The version tables, by range.
    pub versions: &'a mut BTreeMap<String, T>,
    /// In a version table: the keys of the lists a file gave under `replace = true`.
    /// Kept per list, so that two files' tables for one range each keep their own
    /// choice (never read from or written to a file).
    pub replacing: &'a mut BTreeSet<&'static str>,
}

/// A whole rules file: its tables by name.
pub trait RuleFile: Clone + Serialize + DeserializeOwned {
    /// The tables' type.
    type Table: Lists;
    /// Every table with its name, in the file's order.
    fn tables_mut(&mut self) -> Vec<(&'static str, &mut Self::Table)>;
}

/// What a file of a kind may hold: the keys each table's reader reads, and the
/// tables that take version ranges.
pub struct Schema {
    /// Per table, the keys its reader reads.
    pub used: &'static [(&'static str, &'static [&'static str])],
    /// The tables whose CLI's transcript gives its version.
    pub versioned: &'static [&'static str],
}

/// Reads a rules file's `text` (`origin` names it in errors) and checks it against
/// `schema`: the error says the line and what is wrong.
pub fn parse<F: RuleFile>(text: &str, origin: &str, schema: &Schema) -> Result<F, String> {
    let mut file: F = toml::from_str(text)
        .map_err(|e| format!("{origin}{}: {}", toml_line(text, &e), e.message()))?;
    for (table, lists) in file.tables_mut() {
        let used = schema
            .used
            .iter()
            .find(|(name, _)| *name == table)
            .map_or(&[][..], |(_, keys)| keys);
        // The line of the first table header (or key) naming all of `needles`.
        let line = |needles: &[&str]| {
            text.lines()
                .position(|l| {
                    !l.trim_start().starts_with('#') && needles.iter().all(|n| l.contains(n))
                })
                .map(|i| format!(", line {}", i + 1))
                .unwrap_or_default()
        };
        let versions_of = format!("{table}.versions");
        if !schema.versioned.contains(&table) && !lists.versions().is_empty() {
            return Err(format!(
                "{origin}{}: [{table}] has versions, but {}: give version ranges in the table of a CLI whose transcript gives its version ({})",
                line(&[&versions_of]),
                match table {
                    "all" => "its words are every CLI's",
                    _ => "this CLI's transcript does not give its version",
                },
                schema.versioned.join(", ")
            ));
        }
        check_lists(lists, used).map_err(|e| format!("{origin}: [{table}] {e}"))?;
        for (range, versioned) in lists.parts().versions.iter_mut() {
            let place = format!(
                "{origin}{}: [{table}.versions.{range:?}]",
                line(&[&versions_of, range])
            );
            VersionRange::parse(range).map_err(|e| format!("{place} {e}"))?;
            if !versioned.versions().is_empty() {
                return Err(format!(
                    "{place} has versions of its own: give each range its own table under [{table}.versions]"
                ));
            }
            check_lists(versioned, used).map_err(|e| format!("{place} {e}"))?;
            if *versioned.parts().replace {
                let given = given(versioned);
                *versioned.parts().replacing = given;
            }
        }
    }
    Ok(file)
}

/// The checks of one table's lists: no empty phrase, no key its reader never reads.
fn check_lists<T: Lists>(lists: &mut T, used: &[&str]) -> Result<(), String> {
    let mut all = lists.lists_mut();
    if let Some((key, _)) = all
        .iter()
        .find(|(_, list)| list.iter().any(|p| p.trim().is_empty()))
    {
        return Err(format!(
            "{key} holds an empty phrase, which everything matches: remove it"
        ));
    }
    if let Some((key, _)) = all
        .iter_mut()
        .find(|(key, list)| !list.is_empty() && !used.contains(key))
    {
        return Err(format!(
            "{key} is not read for this table (its keys: {}): move the phrases where they are read",
            used.join(", ")
        ));
    }
    Ok(())
}

/// The keys of the lists a table gives.
fn given<T: Lists>(table: &mut T) -> BTreeSet<&'static str> {
    table
        .lists_mut()
        .into_iter()
        .filter(|(_, list)| !list.is_empty())
        .map(|(key, _)| key)
        .collect()
}

/// `base` with a user's file `over` it: each list added to, or replaced in a table
/// with `replace = true`.
pub fn merged<F: RuleFile>(base: &F, mut over: F) -> F {
    let mut out = base.clone();
    for ((_, mine), (_, theirs)) in out.tables_mut().into_iter().zip(over.tables_mut()) {
        *mine = with(std::mem::take(mine), std::mem::take(theirs));
    }
    out
}

/// The table `mine` with `over` it: added, or in place of a list given with
/// `replace`.
fn with<T: Lists>(mut mine: T, mut over: T) -> T {
    for (range, theirs) in std::mem::take(over.parts().versions) {
        let merged = match mine.parts().versions.remove(&range) {
            Some(own) => with(own, theirs),
            None => theirs,
        };
        mine.parts().versions.insert(range, merged);
    }
    let (replace, replacing) = {
        let parts = over.parts();
        (*parts.replace, std::mem::take(parts.replacing))
    };
    let mut replaced = Vec::new();
    for ((key, list), (_, theirs)) in mine.lists_mut().into_iter().zip(over.lists_mut()) {
        if theirs.is_empty() {
            continue;
        }
        if replace || replacing.contains(key) {
            list.clear();
            replaced.push(key);
        }
        add_new(list, theirs.drain(..));
    }
    mine.parts().replacing.extend(replaced);
    mine
}

/// The table `own` for a CLI at `version`: with the lists of every range the
/// version is in over it (replacements first, the union of those for a list, then
/// additions). An unknown version gets the table's own lists.
pub fn at<T: Lists>(own: &T, version: Option<&str>) -> T {
    let mut table = own.clone();
    let mut applied: Vec<T> = applying(own, version).map(|(_, t)| t.clone()).collect();
    let mut cleared = BTreeSet::new();
    for replacing in [true, false] {
        for versioned in &mut applied {
            let replaces = versioned.parts().replacing.clone();
            for ((key, mine), (_, theirs)) in
                table.lists_mut().into_iter().zip(versioned.lists_mut())
            {
                if theirs.is_empty() || replaces.contains(key) != replacing {
                    continue;
                }
                if replacing && cleared.insert(key) {
                    mine.clear();
                }
                add_new(mine, theirs.iter().cloned());
            }
        }
    }
    table
}

/// The ranges of the table `own` that hold for `version`.
pub fn ranges_at<T: Lists>(own: &T, version: Option<&str>) -> Vec<String> {
    applying(own, version)
        .map(|(range, _)| range.clone())
        .collect()
}

/// The version tables of `table` whose range holds for `version` (none for an
/// unknown version; ranges that do not read were refused when the file was).
fn applying<'a, T: Lists>(
    table: &'a T,
    version: Option<&str>,
) -> impl Iterator<Item = (&'a String, &'a T)> {
    let version = version.and_then(Version::parse);
    table.versions().iter().filter(move |(range, _)| {
        version
            .as_ref()
            .is_some_and(|v| VersionRange::parse(range).is_ok_and(|r| r.contains(v)))
    })
}

/// Adds to `list` the phrases it does not hold yet.
fn add_new(list: &mut Vec<String>, phrases: impl IntoIterator<Item = String>) {
    for phrase in phrases {
        if !list.contains(&phrase) {
            list.push(phrase);
        }
    }
}

/// The file as text that reads back to it. A version table two files gave prints
/// `replace = true` when any of its lists replaces the table's.
pub fn to_toml<F: RuleFile>(file: &F) -> String {
    let mut file = file.clone();
    for (_, table) in file.tables_mut() {
        for versioned in table.parts().versions.values_mut() {
            let replaces = !versioned.parts().replacing.is_empty();
            *versioned.parts().replace = replaces;
        }
    }
    toml::to_string(&file).unwrap_or_default()
}
