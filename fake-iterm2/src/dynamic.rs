//! Dynamic Profiles: the JSON files in the DynamicProfiles folder the fake is given
//! ([`crate::FakeOptions::dynamic_profiles`]), read as iTerm2 reads them when the
//! folder changes: every file not starting with a dot, each a `{"Profiles": […]}`
//! whose entries have a Name and a Guid and take what they do not set from their
//! parent (`Dynamic Profile Parent Name`, else Default). The fake reads the folder
//! at each request, as an iTerm2 that reloads at once.

use std::path::Path;

use crate::handlers::default_profile;

/// Every dynamic profile in `dir`, each as its properties (JSON values by key),
/// Default's filled in where it sets none.
pub fn load(dir: Option<&Path>) -> Vec<Vec<(String, String)>> {
    let Some(dir) = dir else { return Vec::new() };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<_> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| !n.starts_with('.'))
        })
        .collect();
    files.sort();
    let mut profiles = Vec::new();
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        // iTerm2 skips a file it cannot parse, and says so in its log.
        let Ok(json) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        let Some(list) = json["Profiles"].as_array() else {
            continue;
        };
        for entry in list {
            let Some(fields) = entry.as_object() else {
                continue;
            };
            if !fields.contains_key("Name") || !fields.contains_key("Guid") {
                continue;
            }
            let mut props: Vec<(String, String)> = default_profile()
                .into_iter()
                .filter(|(k, _)| !fields.contains_key(k))
                .collect();
            props.extend(fields.iter().map(|(k, v)| (k.clone(), v.to_string())));
            profiles.push(props);
        }
    }
    profiles
}

/// The properties of the dynamic profile named `name`.
pub fn named(dir: Option<&Path>, name: &str) -> Option<Vec<(String, String)>> {
    let quoted = serde_json::Value::String(name.to_string()).to_string();
    load(dir)
        .into_iter()
        .find(|p| p.iter().any(|(k, v)| k == "Name" && *v == quoted))
}
