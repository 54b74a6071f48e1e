//! Finding and loading user-defined reducer rules.
//!
//! Two places, the first winning when both define a rule for the same command:
//! `.cohort/reducers.toml` in the project (the current directory or the nearest
//! parent that has one), then `reducers.toml` in the user's config directory
//! (`$XDG_CONFIG_HOME/cohort`, default `~/.config/cohort`). A file that does not parse
//! is an error naming the file, line and column: rules are never silently ignored.

use std::path::{Path, PathBuf};

use cohort_reducers::UserRules;

/// The rule files that exist, project first.
pub fn rule_files(cwd: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Some(project) = cwd
        .ancestors()
        .map(|dir| dir.join(".cohort/reducers.toml"))
        .find(|p| p.is_file())
    {
        files.push(project);
    }
    if let Some(user) = cohort_terminal::user_config::dir()
        .map(|c| c.join("reducers.toml"))
        .filter(|p| p.is_file())
    {
        if !files.contains(&user) {
            files.push(user);
        }
    }
    files
}

/// Loads every rule file that exists; `None` when there are none.
pub fn load(cwd: &Path) -> Result<Option<UserRules>, String> {
    let mut rules: Option<UserRules> = None;
    for path in rule_files(cwd) {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("reading {}: {e}", path.display()))?;
        let parsed = UserRules::from_toml_str(&text, &path.display().to_string())
            .map_err(|e| format!("{e} (fix the file, or move it aside to run without it)"))?;
        match &mut rules {
            Some(existing) => existing.extend(parsed),
            None => rules = Some(parsed),
        }
    }
    Ok(rules)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_rules_load_and_errors_name_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let nested = dir.path().join("a/b");
        std::fs::create_dir_all(&nested).unwrap();
        std::fs::create_dir_all(dir.path().join(".cohort")).unwrap();
        std::fs::write(
            dir.path().join(".cohort/reducers.toml"),
            "[[reducer]]\nname = \"deploy\"\ncommand = \"deploy\"\ndrop = [\"^Uploading \"]\n",
        )
        .unwrap();
        let rules = load(&nested).unwrap().expect("found from a subdirectory");
        assert_eq!(rules.len(), 1);

        std::fs::write(
            dir.path().join(".cohort/reducers.toml"),
            "[[reducer]]\nname = \"x\"\ncommand = \"x\"\nkeep = [\"(\"]\n",
        )
        .unwrap();
        let err = load(&nested).unwrap_err();
        assert!(err.contains("reducers.toml:4:"), "{err}");
    }
}
