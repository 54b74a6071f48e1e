//! State only its owner can read.
//!
//! Journals hold whatever a pane printed (tokens, keys), the registry who runs
//! what, recordings a session's whole screen. cohort's state directory is therefore
//! `0700` and the files it writes `0600`, whatever the umask: [`secure_dir`] makes or
//! tightens a directory (an existing one that is too open is fixed, with a warning),
//! [`file_options`] opens files readable by their owner only.

use std::fs::{DirBuilder, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The mode of cohort's directories: the owner only.
pub const DIR_MODE: u32 = 0o700;

/// The mode of the files cohort writes: the owner only.
pub const FILE_MODE: u32 = 0o600;

/// Makes `dir` (and its missing parents) readable by its owner only. An existing
/// directory that group or others may enter is tightened to `0700`; the mode it had is
/// returned so the caller can say so.
pub fn secure_dir(dir: &Path) -> io::Result<Option<u32>> {
    match std::fs::metadata(dir) {
        Ok(meta) => {
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 == 0 {
                return Ok(None);
            }
            std::fs::set_permissions(dir, Permissions::from_mode(DIR_MODE))?;
            Ok(Some(mode))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            DirBuilder::new()
                .recursive(true)
                .mode(DIR_MODE)
                .create(dir)?;
            // `recursive` applies the mode to every directory it makes, and the
            // umask may have taken bits away: set the last one exactly.
            std::fs::set_permissions(dir, Permissions::from_mode(DIR_MODE))?;
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// [`secure_dir`], with a warning on stderr's log when a directory was too open.
pub fn secure_dir_or_warn(dir: &Path, what: &str) {
    match secure_dir(dir) {
        Ok(Some(was)) => tracing::warn!(
            target: "cohort::engine",
            dir = %dir.display(),
            "the {what} was readable by other users (mode {was:o}); it is now 0700"
        ),
        Ok(None) => {}
        Err(e) => tracing::warn!(
            target: "cohort::engine",
            dir = %dir.display(),
            error = %e,
            "cannot make the {what} private (0700); other users may read it"
        ),
    }
}

/// Options that create files readable and writable by their owner only.
pub fn file_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.mode(FILE_MODE);
    options
}

/// Makes an existing file readable by its owner only; a missing file is fine.
pub fn secure_file(path: &Path) -> io::Result<()> {
    match std::fs::set_permissions(path, Permissions::from_mode(FILE_MODE)) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_new_directory_is_private_and_an_open_one_is_tightened() {
        let root = tempfile::tempdir().unwrap();
        let new = root.path().join("a/b/state");
        assert_eq!(secure_dir(&new).unwrap(), None);
        assert_eq!(mode(&new), 0o700);

        let open = root.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, Permissions::from_mode(0o755)).unwrap();
        assert_eq!(secure_dir(&open).unwrap(), Some(0o755));
        assert_eq!(mode(&open), 0o700);
        assert_eq!(secure_dir(&open).unwrap(), None, "already private");
    }

    #[test]
    fn files_are_made_for_their_owner_only() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("spill.log");
        file_options().write(true).create(true).open(&path).unwrap();
        assert_eq!(mode(&path), 0o600);
        let old = root.path().join("old.db");
        std::fs::write(&old, b"x").unwrap();
        std::fs::set_permissions(&old, Permissions::from_mode(0o644)).unwrap();
        secure_file(&old).unwrap();
        assert_eq!(mode(&old), 0o600);
        secure_file(&root.path().join("missing")).unwrap();
    }
}
