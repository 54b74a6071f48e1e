//! Team profiles on iTerm2: each team a Dynamic Profile (its colour as the tab
//! colour, its name as the badge, the Default profile for everything else), all in
//! one JSON file cohort owns in iTerm2's DynamicProfiles folder. iTerm2 watches the
//! folder and loads the file when it changes; cohort reads its profile list back
//! until the teams' profiles are there, and a new pane of a team starts from its
//! profile (CreateTab and SplitPane by profile name).
//!
//! A profile has no environment of its own in iTerm2: a team's variables are given
//! to each of its panes as it starts, on every backend.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::error::{BackendError, Result};
use crate::types::TeamProfile;

use super::proto::client_originated_message::Submessage as Req;
use super::proto::server_originated_message::Submessage as Rep;
use super::proto::*;
use super::requests::{color_json, unexpected};
use super::Iterm2Backend;

/// The file cohort writes in the DynamicProfiles folder.
pub const PROFILES_FILE: &str = "cohort-teams.json";

/// How long iTerm2 has to load the profiles after the file changed.
const LOAD_WAIT: Duration = Duration::from_secs(5);

impl Iterm2Backend {
    /// Writes the teams' profiles and waits until iTerm2 lists them.
    pub(super) async fn write_team_profiles(&self, profiles: &[TeamProfile]) -> Result<()> {
        let Some(dir) = self.inner.config.dynamic_profiles.clone() else {
            return Err(BackendError::Unsupported {
                backend: "iterm2",
                what: "keep team profiles (no DynamicProfiles folder is configured)",
            });
        };
        let json = profiles_json(profiles)?;
        let written = tokio::task::spawn_blocking(move || write_atomically(&dir, &json))
            .await
            .map_err(|e| BackendError::Io {
                context: "writing the team profiles".into(),
                source: std::io::Error::other(e.to_string()),
            })?;
        written?;
        let wanted: Vec<&str> = profiles.iter().map(|p| p.name.as_str()).collect();
        let deadline = Instant::now() + LOAD_WAIT;
        loop {
            let names = self.profile_names().await?;
            if wanted.iter().all(|w| names.iter().any(|n| n == w)) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let missing: Vec<&str> = wanted
                    .iter()
                    .filter(|w| !names.iter().any(|n| n == *w))
                    .copied()
                    .collect();
                return Err(BackendError::Timeout {
                    what: format!(
                        "iTerm2 to load the team profiles {} from its DynamicProfiles folder",
                        missing.join(", ")
                    ),
                    after_ms: LOAD_WAIT.as_millis() as u64,
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The names of the profiles iTerm2 has.
    pub(super) async fn profile_names(&self) -> Result<Vec<String>> {
        let reply = self
            .call(Req::ListProfilesRequest(ListProfilesRequest {
                properties: vec!["Name".into()],
                guids: Vec::new(),
            }))
            .await?;
        match reply {
            Rep::ListProfilesResponse(r) => Ok(r
                .profiles
                .into_iter()
                .flat_map(|p| p.properties)
                .filter(|p| p.key.as_deref() == Some("Name"))
                .filter_map(|p| serde_json::from_str::<String>(p.json_value.as_deref()?).ok())
                .collect()),
            other => Err(unexpected("ListProfiles", &other)),
        }
    }
}

/// The Dynamic Profiles file for `profiles`.
fn profiles_json(profiles: &[TeamProfile]) -> Result<String> {
    let mut list = Vec::new();
    for p in profiles {
        let colour: serde_json::Value = serde_json::from_str(&color_json(&p.colour)?)
            .map_err(|e| BackendError::Protocol(e.to_string()))?;
        list.push(serde_json::json!({
            "Name": p.name,
            "Guid": format!("cohort-team-{}", p.team),
            "Dynamic Profile Parent Name": "Default",
            // A badge is an interpolated string: the name shows as written.
            "Badge Text": super::literal::interpolated(&p.team),
            "Use Tab Color": true,
            "Tab Color": colour,
            "Tags": ["cohort"],
        }));
    }
    Ok(
        serde_json::to_string_pretty(&serde_json::json!({ "Profiles": list }))
            .expect("JSON values serialise"),
    )
}

/// Writes `json` as the profiles file in `dir`: to a hidden file first (iTerm2
/// reads no file whose name starts with a dot), then renamed over the old one, so
/// iTerm2 never reads half a file.
fn write_atomically(dir: &Path, json: &str) -> Result<()> {
    let io = |what: &str, source: std::io::Error| BackendError::Io {
        context: format!("{what} in {}", dir.display()),
        source,
    };
    std::fs::create_dir_all(dir).map_err(|e| io("creating the DynamicProfiles folder", e))?;
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let temporary = dir.join(format!(".{PROFILES_FILE}.{}.{n}", std::process::id()));
    std::fs::write(&temporary, json).map_err(|e| io("writing the team profiles", e))?;
    std::fs::rename(&temporary, dir.join(PROFILES_FILE))
        .map_err(|e| io("putting the team profiles in place", e))
}
