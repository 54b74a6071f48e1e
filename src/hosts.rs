//! The remote hosts the user declared: `hosts.toml` in the user's config directory
//! (`$XDG_CONFIG_HOME/cohort`, default `~/.config/cohort`), or the file
//! `COHORT_HOSTS_FILE` names.
//!
//! ```toml
//! [hosts.build-box]
//! ssh = "deploy@build-box.example.com"   # anything `ssh` takes: user@host, an alias
//! ssh_args = ["-p", "2222"]              # optional, before the destination
//! ```
//!
//! A host need not be declared: `open` with a host cohort does not know takes it as
//! an SSH destination (an alias from `~/.ssh/config` works as is). A file that does
//! not parse is an error naming the file and what is wrong: hosts are never silently
//! dropped.

use std::collections::BTreeMap;
use std::path::PathBuf;

use cohort_backends::tmux::remote::SshHost;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct HostsFile {
    #[serde(default)]
    hosts: BTreeMap<String, HostEntry>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct HostEntry {
    /// The SSH destination; the host's name when missing.
    ssh: Option<String>,
    /// Options for ssh before the destination.
    #[serde(default)]
    ssh_args: Vec<String>,
}

/// Where the hosts file is looked for.
pub fn hosts_file() -> Option<PathBuf> {
    cohort_terminal::user_config::file("hosts.toml", "COHORT_HOSTS_FILE")
}

/// The declared hosts; none when there is no file.
pub fn load() -> Result<Vec<SshHost>, String> {
    let Some(path) = hosts_file() else {
        return Ok(Vec::new());
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("reading {}: {e}", path.display())),
    };
    parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn parse(text: &str) -> Result<Vec<SshHost>, String> {
    let file: HostsFile = toml::from_str(text).map_err(|e| e.to_string())?;
    file.hosts
        .into_iter()
        .map(|(name, entry)| {
            let destination = entry.ssh.unwrap_or_else(|| name.clone());
            let mut host = SshHost::new(&name, &destination).map_err(|e| e.to_string())?;
            if let Some(bad) = entry.ssh_args.iter().find(|a| a.contains('\n')) {
                return Err(format!(
                    "host {name}: ssh argument {bad:?} holds a line break"
                ));
            }
            host.ssh_args = entry.ssh_args;
            Ok(host)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_parse_and_bad_ones_are_named() {
        let hosts = parse(
            "[hosts.build-box]\nssh = \"deploy@build\"\nssh_args = [\"-p\", \"2222\"]\n\n[hosts.stage]\n",
        )
        .unwrap();
        assert_eq!(hosts.len(), 2);
        assert_eq!(hosts[0].name, "build-box");
        assert_eq!(hosts[0].destination, "deploy@build");
        assert_eq!(hosts[0].ssh_args, ["-p", "2222"]);
        assert_eq!(hosts[1].destination, "stage");
        let err = parse("[hosts.x]\nssh = \"-oProxyCommand=evil\"\n").unwrap_err();
        assert!(err.contains("not an SSH destination"), "{err}");
        let err = parse("[hosts.x]\nport = 22\n").unwrap_err();
        assert!(err.contains("unknown field"), "{err}");
    }
}
