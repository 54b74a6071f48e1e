//! Notifications that reach a person: the ones that need someone (a worker waiting
//! on an approval, stuck or gone; a budget reached; a request denied for want of an
//! answer; a watcher's hit) are posted to a webhook, as JSON or in ntfy's form so a
//! phone gets a push, and retried.
//!
//! The post is made with `curl` (every supported system has it, and it speaks HTTPS
//! without cohort carrying a TLS stack); the URL and headers go to it as arguments,
//! never through a shell. The notifier, which runs once per terminal server, posts
//! each notification once, whichever cohort process made it.

use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use tokio::io::AsyncWriteExt;

/// How the body is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `{"kind", "from", "to", "message", "at"}` as JSON.
    Json,
    /// ntfy's: the message as the body, a `Title` and `Tags` header.
    Ntfy,
}

/// Where notifications go, and which.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Webhook {
    /// The URL posted to (http or https).
    pub url: String,
    /// The body's form.
    pub format: Format,
    /// Notification kinds posted; empty: the ones that need a person.
    pub kinds: Vec<String>,
}

/// The kinds posted by default.
const NEEDS_A_PERSON: &[&str] = &[
    "budget_reached",
    "budget_interrupt",
    "approval_timed_out",
    "watch",
];

/// The agent states worth a push (`agent_state` notifications say `X is STATE`).
const STATES_POSTED: &[&str] = &["needs_approval", "stuck", "exited"];

/// Notification kinds from a comma-separated list.
pub(crate) fn kinds_list(kinds: &str) -> Vec<String> {
    kinds
        .split(',')
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(str::to_string)
        .collect()
}

/// Whether a notification of `kind` from `from` saying `message` goes out to a
/// person: one of `kinds` when given, else the kinds that need someone and the agent
/// states worth a look.
pub(crate) fn needs_a_person(kinds: &[String], kind: &str, from: &str, message: &str) -> bool {
    if !kinds.is_empty() {
        return kinds.iter().any(|k| k == kind);
    }
    if kind == "agent_state" {
        // `ada is stuck: …`: the state, not a word of the reason.
        return STATES_POSTED
            .iter()
            .any(|s| message.starts_with(&format!("{from} is {s}")));
    }
    NEEDS_A_PERSON.contains(&kind)
}

/// Attempts per notification, and the pauses between them.
const RETRIES: [Duration; 2] = [Duration::from_secs(1), Duration::from_secs(4)];

impl Webhook {
    /// The webhook the environment names: `COHORT_WEBHOOK_URL`, with
    /// `COHORT_WEBHOOK_FORMAT` (`json`, or `ntfy`; default ntfy for an ntfy host) and
    /// `COHORT_WEBHOOK_KINDS` (comma-separated notification kinds).
    pub fn from_env() -> Option<Result<Webhook, String>> {
        let url = std::env::var("COHORT_WEBHOOK_URL")
            .ok()
            .filter(|u| !u.trim().is_empty())?;
        let format = std::env::var("COHORT_WEBHOOK_FORMAT").ok();
        let kinds = std::env::var("COHORT_WEBHOOK_KINDS").unwrap_or_default();
        Some(Webhook::new(&url, format.as_deref(), &kinds))
    }

    /// A webhook posting to `url`; refused with why when the URL is not one.
    pub fn new(url: &str, format: Option<&str>, kinds: &str) -> Result<Webhook, String> {
        let url = url.trim();
        let scheme_ok = url.starts_with("http://") || url.starts_with("https://");
        if !scheme_ok
            || url.len() > 2048
            || url.chars().any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(format!(
                "COHORT_WEBHOOK_URL {:?} is not an http:// or https:// URL without spaces",
                url.chars().take(80).collect::<String>()
            ));
        }
        let format = match format.map(str::trim) {
            Some("json") => Format::Json,
            Some("ntfy") => Format::Ntfy,
            None | Some("") if url.contains("ntfy") => Format::Ntfy,
            None | Some("") => Format::Json,
            Some(other) => {
                return Err(format!(
                    "COHORT_WEBHOOK_FORMAT {other:?} is not a format: use json or ntfy"
                ))
            }
        };
        Ok(Webhook {
            url: url.to_string(),
            format,
            kinds: kinds_list(kinds),
        })
    }

    /// Whether a notification of `kind` from `from` saying `message` is posted.
    pub fn wants(&self, kind: &str, from: &str, message: &str) -> bool {
        needs_a_person(&self.kinds, kind, from, message)
    }

    /// The URL as logs may show it: scheme and host, not the path or query (for
    /// many services the path is the secret).
    fn shown(&self) -> String {
        let (scheme, rest) = self.url.split_once("://").unwrap_or(("", &self.url));
        let host = rest.split(['/', '?', '#']).next().unwrap_or("");
        format!("{scheme}://{host}/…")
    }

    /// Posts one notification, retrying twice; says why when it never got through.
    pub async fn post(
        &self,
        kind: &str,
        from: &str,
        to: &str,
        message: &str,
    ) -> Result<(), String> {
        let (body, headers) = self.request(kind, from, to, message);
        let mut last = String::new();
        for attempt in 0..=RETRIES.len() {
            if attempt > 0 {
                tokio::time::sleep(RETRIES[attempt - 1]).await;
            }
            match self.post_once(&body, &headers).await {
                Ok(()) => return Ok(()),
                Err(e) => last = e,
            }
        }
        Err(format!(
            "the webhook {} did not take a {kind} notification after {} attempts: {last}",
            self.shown(),
            RETRIES.len() + 1
        ))
    }

    /// The body and headers of one notification's post (the same on every attempt).
    fn request(&self, kind: &str, from: &str, to: &str, message: &str) -> (String, Vec<String>) {
        let header = |text: &str| -> String {
            text.chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .take(200)
                .collect()
        };
        let (body, headers) = match self.format {
            Format::Json => (
                json!({"kind": kind, "from": from, "to": to, "message": message,
                       "at": cohort_terminal::registry::now()})
                .to_string(),
                vec!["Content-Type: application/json".to_string()],
            ),
            Format::Ntfy => (
                message.to_string(),
                vec![
                    format!("Title: {}", header(&format!("cohort: {kind} from {from}"))),
                    "Tags: robot".to_string(),
                ],
            ),
        };
        (body, headers)
    }

    async fn post_once(&self, body: &str, headers: &[String]) -> Result<(), String> {
        // -q first: no ~/.curlrc adds options; -g: the URL is not a glob pattern.
        let mut cmd = tokio::process::Command::new("curl");
        cmd.args(["-q", "-g", "-sS", "-f", "--max-time", "10", "-X", "POST"]);
        for h in headers {
            cmd.arg("-H").arg(h);
        }
        cmd.args(["--data-binary", "@-", "--"])
            .arg(&self.url)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("curl could not be run ({e}); is curl installed?"))?;
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(body.as_bytes()).await;
        }
        let out = tokio::time::timeout(Duration::from_secs(15), child.wait_with_output())
            .await
            .map_err(|_| "curl did not finish in 15 s".to_string())?
            .map_err(|e| format!("curl: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            // curl names the URL in its errors: keep the secret part out.
            let said = String::from_utf8_lossy(&out.stderr).replace(&self.url, &self.shown());
            Err(said.trim().to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_formats_and_kinds() {
        assert!(Webhook::new("ftp://x", None, "").is_err());
        assert!(Webhook::new("http://a b", None, "").is_err());
        assert_eq!(
            Webhook::new("https://ntfy.sh/team", None, "")
                .unwrap()
                .format,
            Format::Ntfy
        );
        assert!(Webhook::new("http://h/x", Some("xml"), "").is_err());
        let w = Webhook::new("http://127.0.0.1:9/hook", None, "").unwrap();
        assert_eq!(w.format, Format::Json);
        assert!(w.wants(
            "agent_state",
            "ada",
            "ada is needs_approval: asks permission"
        ));
        assert!(!w.wants("agent_state", "ada", "ada is idle: the turn ended"));
        // A word of the reason is not the state.
        assert!(!w.wants(
            "agent_state",
            "ada",
            "ada is idle: the tests said it is stuck"
        ));
        assert!(w.wants("budget_reached", "ada", "ada reached its budget"));
        assert!(!w.wants("command_failed", "ada", "x"));
        let only = Webhook::new("http://h/x", None, "command_failed").unwrap();
        assert!(only.wants("command_failed", "a", "x") && !only.wants("watch", "a", "x"));
        let secret = Webhook::new("https://hooks.example/T0/B1/sEcReT?k=1", None, "").unwrap();
        assert_eq!(secret.shown(), "https://hooks.example/…");
    }
}
