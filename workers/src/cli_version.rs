//! Versions of an agent CLI, and ranges of them: which words of `screens.toml` hold
//! for the release a worker runs.
//!
//! A version is read the way the CLIs write theirs (`2.0.14`, `v0.46.0`,
//! `0.9.0-nightly.20251001`): the numbers before anything else, compared one by one
//! with missing ones as 0. A range is one or more comparisons joined by commas, all of
//! which must hold: `>=2.1`, `>=0.40, <0.46`, `=2.0.14`. A bare version (`2.0`)
//! holds for every version it begins (`2.0.14`, not `2.1`).

use std::cmp::Ordering;

/// The numbers of a version, as many as it gives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Version(Vec<u64>);

impl Version {
    /// Reads `text`: an optional `v`, then numbers joined by dots; what follows (a
    /// pre-release, a build, words) is not compared. `None` without a first number.
    pub fn parse(text: &str) -> Option<Version> {
        let text = text.trim();
        let text = text.strip_prefix(['v', 'V']).unwrap_or(text);
        let mut numbers = Vec::new();
        for part in text.split('.') {
            let digits: &str = &part[..part
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(part.len())];
            match digits.parse() {
                Ok(n) => numbers.push(n),
                Err(_) => break,
            }
            if digits.len() < part.len() {
                break;
            }
        }
        (!numbers.is_empty()).then_some(Version(numbers))
    }

    fn compare(&self, other: &Version) -> Ordering {
        let len = self.0.len().max(other.0.len());
        (0..len)
            .map(|i| {
                let a = self.0.get(i).copied().unwrap_or(0);
                let b = other.0.get(i).copied().unwrap_or(0);
                a.cmp(&b)
            })
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    }

    /// Whether `prefix`'s numbers begin this version's.
    fn begins_with(&self, prefix: &Version) -> bool {
        prefix.0.len() <= self.0.len() && self.0[..prefix.0.len()] == prefix.0[..]
    }
}

/// One comparison of a range.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Comparison {
    AtLeast(Version),
    Above(Version),
    AtMost(Version),
    Below(Version),
    Exactly(Version),
    Begins(Version),
}

/// A range of versions: every comparison holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionRange(Vec<Comparison>);

impl VersionRange {
    /// Reads a range; the error says which part is wrong and what a range looks like.
    pub fn parse(text: &str) -> Result<VersionRange, String> {
        let mut comparisons = Vec::new();
        for part in text.split(',') {
            let part = part.trim();
            let (make, rest): (fn(Version) -> Comparison, &str) =
                if let Some(rest) = part.strip_prefix(">=") {
                    (Comparison::AtLeast, rest)
                } else if let Some(rest) = part.strip_prefix("<=") {
                    (Comparison::AtMost, rest)
                } else if let Some(rest) = part.strip_prefix('>') {
                    (Comparison::Above, rest)
                } else if let Some(rest) = part.strip_prefix('<') {
                    (Comparison::Below, rest)
                } else if let Some(rest) = part.strip_prefix('=') {
                    (Comparison::Exactly, rest)
                } else {
                    (Comparison::Begins, part)
                };
            let rest = rest.trim();
            let well_formed = !rest.is_empty()
                && rest
                    .split('.')
                    .all(|n| n.bytes().all(|b| b.is_ascii_digit()) && n.parse::<u64>().is_ok());
            match Version::parse(rest).filter(|_| well_formed) {
                Some(version) => comparisons.push(make(version)),
                None => {
                    return Err(format!(
                        "{part:?} in version range {text:?} is not a comparison: write versions as numbers joined by dots, each after >=, >, <=, < or = (or alone, for the versions it begins), joined by commas, e.g. \">=2.1, <2.3\""
                    ))
                }
            }
        }
        Ok(VersionRange(comparisons))
    }

    /// Whether `version` is in the range.
    pub fn contains(&self, version: &Version) -> bool {
        self.0.iter().all(|c| match c {
            Comparison::AtLeast(v) => version.compare(v).is_ge(),
            Comparison::Above(v) => version.compare(v).is_gt(),
            Comparison::AtMost(v) => version.compare(v).is_le(),
            Comparison::Below(v) => version.compare(v).is_lt(),
            Comparison::Exactly(v) => version.compare(v).is_eq(),
            Comparison::Begins(v) => version.begins_with(v),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> Version {
        Version::parse(text).unwrap()
    }

    #[test]
    fn versions_are_read_as_the_clis_write_them() {
        assert_eq!(v("2.0.14"), Version(vec![2, 0, 14]));
        assert_eq!(v("v0.46.0"), Version(vec![0, 46, 0]));
        assert_eq!(v("0.9.0-nightly.20251001"), Version(vec![0, 9, 0]));
        assert_eq!(v("2.0.14 (Claude Code)"), Version(vec![2, 0, 14]));
        assert_eq!(Version::parse("unknown"), None);
        assert_eq!(Version::parse(""), None);
    }

    #[test]
    fn ranges_hold_for_the_versions_they_name() {
        let r = VersionRange::parse(">=0.40, <0.46").unwrap();
        assert!(r.contains(&v("0.40.0")) && r.contains(&v("0.45.9")));
        assert!(!r.contains(&v("0.46.0")) && !r.contains(&v("0.39.12")));
        let r = VersionRange::parse("2.0").unwrap();
        assert!(r.contains(&v("2.0.14")) && r.contains(&v("2.0")));
        assert!(!r.contains(&v("2.1.0")) && !r.contains(&v("2")));
        let r = VersionRange::parse("=2.0").unwrap();
        assert!(r.contains(&v("2.0.0")) && !r.contains(&v("2.0.1")));
        assert!(VersionRange::parse(">1").unwrap().contains(&v("1.0.1")));
        assert!(!VersionRange::parse(">1").unwrap().contains(&v("1.0.0")));
        assert!(VersionRange::parse("<=1.2").unwrap().contains(&v("1.2.0")));
    }

    #[test]
    fn a_range_that_is_not_one_says_what_a_range_looks_like() {
        for bad in [
            "",
            ">=",
            "~2.1",
            ">=2.x",
            "2..1",
            ">=2.1,",
            "latest",
            ">=2.99999999999999999999",
        ] {
            let err = VersionRange::parse(bad).unwrap_err();
            assert!(err.contains("e.g. \">=2.1, <2.3\""), "{bad}: {err}");
        }
    }
}
