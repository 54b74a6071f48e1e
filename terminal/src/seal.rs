//! Keys and tags for what cohort processes, and the hooks of their workers, hand
//! one another through files and sockets.
//!
//! A hook's event file and the relay's sockets can be written by any process of the
//! same user that finds them. What cohort reads from them is therefore tagged with
//! HMAC-SHA256 under a key that only the parties hold: a worker's hooks get theirs
//! in the agent's environment (no other pane has it), the cohort processes of a
//! state directory share one in a file only the owner can read. A line or datagram
//! whose tag does not verify is dropped.
//!
//! The limit is the user: a process of the same user that reads the key file, or
//! the agent's own environment, holds the key too.

use std::io::{self, Read, Write};
use std::path::Path;

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::private;

type HmacSha256 = Hmac<Sha256>;

/// The bytes of a key.
const KEY_LEN: usize = 32;

/// A secret key for tags.
#[derive(Clone, PartialEq, Eq)]
pub struct SealKey([u8; KEY_LEN]);

impl std::fmt::Debug for SealKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealKey(…)")
    }
}

/// What went wrong making or reading a key.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    /// The system's random source failed.
    #[error("no random bytes for a key: {0}")]
    Random(String),
    /// The key file could not be read or written.
    #[error("the key file {path} could not be {what}: {source}")]
    File {
        /// Read or written.
        what: &'static str,
        /// The file.
        path: String,
        /// Why.
        source: io::Error,
    },
    /// The text is not a key.
    #[error("not a key: expected {} hex digits", KEY_LEN * 2)]
    Malformed,
}

impl SealKey {
    /// A fresh random key.
    pub fn generate() -> Result<SealKey, SealError> {
        let mut bytes = [0u8; KEY_LEN];
        getrandom::fill(&mut bytes).map_err(|e| SealError::Random(e.to_string()))?;
        Ok(SealKey(bytes))
    }

    /// The key as hex (for an environment variable or a file).
    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }

    /// The key from [`SealKey::to_hex`]'s form.
    pub fn from_hex(text: &str) -> Result<SealKey, SealError> {
        let text = text.trim();
        if text.len() != KEY_LEN * 2 || !text.is_ascii() {
            return Err(SealError::Malformed);
        }
        let mut bytes = [0u8; KEY_LEN];
        for (i, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16)
                .map_err(|_| SealError::Malformed)?;
        }
        Ok(SealKey(bytes))
    }

    /// The key kept in `path`, or `None` when there is no such file.
    pub fn load(path: &Path) -> Result<Option<SealKey>, SealError> {
        let mut text = String::new();
        match std::fs::File::open(path) {
            Ok(file) => {
                file.take(256)
                    .read_to_string(&mut text)
                    .map_err(|source| SealError::File {
                        what: "read",
                        path: path.display().to_string(),
                        source,
                    })?
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(SealError::File {
                    what: "read",
                    path: path.display().to_string(),
                    source,
                })
            }
        };
        SealKey::from_hex(&text).map(Some)
    }

    /// The key kept in `path`, made (readable by its owner only) when there is none.
    /// Processes racing to make it agree: the file is created exclusively, and the
    /// loser reads the winner's key.
    pub fn load_or_create(path: &Path) -> Result<SealKey, SealError> {
        if let Some(key) = SealKey::load(path)? {
            return Ok(key);
        }
        let key = SealKey::generate()?;
        let written = private::file_options()
            .write(true)
            .create_new(true)
            .open(path)
            .and_then(|mut file| {
                file.write_all(key.to_hex().as_bytes())?;
                file.sync_all()
            });
        match written {
            Ok(()) => Ok(key),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                // Another process made it first; it may still be writing.
                for _ in 0..50 {
                    if let Ok(Some(key)) = SealKey::load(path) {
                        return Ok(key);
                    }
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
                SealKey::load(path)?.ok_or(SealError::Malformed)
            }
            Err(source) => Err(SealError::File {
                what: "written",
                path: path.display().to_string(),
                source,
            }),
        }
    }

    /// The tag of `message` (hex, 64 digits).
    pub fn tag(&self, message: &[u8]) -> String {
        hex(&self.mac(message).finalize().into_bytes())
    }

    /// Whether `tag` is `message`'s tag under this key (compared in constant time).
    pub fn verify(&self, message: &[u8], tag: &str) -> bool {
        let Ok(SealKey(expected)) = SealKey::from_hex(tag) else {
            return false;
        };
        self.mac(message).verify_slice(&expected).is_ok()
    }

    fn mac(&self, message: &[u8]) -> HmacSha256 {
        let mut mac = <HmacSha256 as KeyInit>::new_from_slice(&self.0)
            .expect("HMAC takes a key of any length");
        mac.update(message);
        mac
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_verifies_under_its_key_only_and_for_its_message_only() {
        let key = SealKey::generate().unwrap();
        let other = SealKey::generate().unwrap();
        let tag = key.tag(b"Stop");
        assert_eq!(tag.len(), 64);
        assert!(key.verify(b"Stop", &tag));
        assert!(!key.verify(b"SessionEnd", &tag));
        assert!(!other.verify(b"Stop", &tag));
        assert!(!key.verify(b"Stop", "not hex"));
        assert!(!key.verify(b"Stop", &tag[..62]));
        assert_eq!(SealKey::from_hex(&key.to_hex()).unwrap(), key);
        assert!(SealKey::from_hex("zz").is_err());
        // RFC 4231, test case 2 ("Jefe"), to show the tag is standard HMAC-SHA256.
        let mut mac = <HmacSha256 as KeyInit>::new_from_slice(b"Jefe").unwrap();
        mac.update(b"what do ya want for nothing?");
        assert_eq!(
            hex(&mac.finalize().into_bytes()),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn a_key_file_is_made_once_private_and_shared_by_whoever_comes_next() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("relay.key");
        assert!(SealKey::load(&path).unwrap().is_none());
        let first = SealKey::load_or_create(&path).unwrap();
        let again = SealKey::load_or_create(&path).unwrap();
        assert_eq!(first, again);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        std::fs::write(&path, "garbage").unwrap();
        assert!(SealKey::load(&path).is_err());
    }
}
