//! Variables as iTerm2 keeps them, and the VariableMonitor that watches them.
//!
//! - **Scopes.** Each session, tab and window has its variables, and so has the app.
//!   Clients set only `user.<name>` (one dot); the rest are computed from the fake's
//!   state: `jobName`, `jobPid`, `processTitle`, `commandLine` and `pid` from the
//!   terminal's process group, `showingAlternateScreen` from the emulator, `name`
//!   from the session's name, `title` of a tab from its title. Values are JSON;
//!   `"null"` unsets, and `"*"` reads a whole scope as one dictionary.
//! - **Monitors.** A `NOTIFY_ON_VARIABLE_CHANGE` subscription names a scope, an
//!   identifier (a session, tab or window id, `"all"` sessions or windows — current
//!   and future — or nothing for the app) and a variable. As in iTerm2, a
//!   notification goes out only when the value changes (never for the value it had
//!   when the subscription began), with the new value as JSON (`"null"` when unset)
//!   and the identifier as subscribed (the session's or window's own id for
//!   `"all"`). Values are compared after every request and every [`POLL`], since
//!   iTerm2 too learns of a new foreground job by polling.
//! - **Set by the output.** A `user.*` variable a program sets with `OSC 1337 ;
//!   SetUserVar` ([`crate::uservar`]) is compared at once, as iTerm2 notifies while it
//!   carries out the output: its monitors hear of the change before anything the
//!   output asks after it (a prompt mark's notification).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use prost::Message as _;
use tokio_tungstenite::tungstenite::Message;

use cohort_backends::iterm2::proto::server_originated_message::Submessage as Rep;
use cohort_backends::iterm2::proto::*;

use crate::session::Session;
use crate::uservar::UserVar;
use crate::{lock, Conn, State};

/// How often computed variables (the foreground job) are compared for monitors.
pub const POLL: Duration = Duration::from_millis(200);

/// Session variables listed by `"*"` besides the `user.*` ones.
const SESSION_BUILTINS: [&str; 14] = [
    "badge",
    "id",
    "name",
    "jobName",
    "jobPid",
    "pid",
    "processTitle",
    "commandLine",
    "columns",
    "rows",
    "path",
    "termid",
    "showingAlternateScreen",
    "tty",
];

/// Whether a client may set this variable: `user.<name>`, with no further dot.
fn settable(name: &str) -> bool {
    name.strip_prefix("user.")
        .is_some_and(|rest| !rest.is_empty() && !rest.contains('.'))
}

/// A computed session variable, as JSON.
fn session_builtin(session: &Session, name: &str) -> Option<serde_json::Value> {
    use serde_json::Value;
    Some(match name {
        "id" => Value::from(session.id.clone()),
        "name" | "autoName" | "presentationName" => Value::from(lock(&session.name).clone()),
        "jobName" => Value::from(session.job().name),
        "processTitle" => Value::from(session.job().title),
        "commandLine" => Value::from(session.job().command_line),
        "jobPid" => Value::from(session.job().pid),
        "pid" => Value::from(session.pid),
        "columns" => Value::from(session.size().0),
        "rows" => Value::from(session.size().1),
        "path" => Value::from(session.cwd()?),
        "termid" => Value::from(format!("w0t0p0:{}", session.id)),
        "showingAlternateScreen" => Value::from(lock(&session.term).alternate_screen()),
        "tty" => Value::from(session.tty_name()?),
        _ => return None,
    })
}

/// Where a variable lives (and where an expression is evaluated).
#[derive(Clone)]
pub(crate) enum Scope {
    Session(Arc<Session>),
    Tab(String),
    Window(String),
    App,
}

impl Scope {
    /// Resolves a monitor's scope and identifier (`"active"` for the focused session).
    fn find(state: &State, scope: i32, identifier: &str) -> Option<Scope> {
        let world = lock(&state.world);
        match VariableScope::try_from(scope).ok()? {
            VariableScope::Session => world.session(identifier).map(Scope::Session),
            VariableScope::Tab => world
                .find_tab(identifier)
                .map(|_| Scope::Tab(identifier.to_string())),
            VariableScope::Window => world
                .windows
                .iter()
                .any(|w| w.id == identifier)
                .then(|| Scope::Window(identifier.to_string())),
            VariableScope::App => Some(Scope::App),
        }
    }

    /// The variable's value as JSON text; `None` when unset or the scope is gone.
    fn value(&self, state: &State, name: &str) -> Option<String> {
        if name == "*" {
            return Some(self.everything(state));
        }
        match self {
            // The badge shown is the profile's badge text, evaluated.
            Scope::Session(s) if name == "badge" => {
                let format = lock(&s.profile)
                    .get("Badge Text")
                    .and_then(|v| serde_json::from_str::<String>(v).ok())
                    .unwrap_or_default();
                let shown = evaluate(state, self, &format, false).unwrap_or_default();
                Some(serde_json::Value::from(shown).to_string())
            }
            Scope::Session(s) => lock(&s.vars)
                .get(name)
                .cloned()
                .or_else(|| session_builtin(s, name).map(|v| v.to_string())),
            Scope::Tab(id) => {
                let world = lock(&state.world);
                let (w, t) = world.find_tab(id)?;
                let tab = &world.windows[w].tabs[t];
                match name {
                    "id" => Some(serde_json::Value::from(tab.id.clone()).to_string()),
                    _ => tab.vars.get(name).cloned().or_else(|| {
                        // Without a title of its own a tab shows its active session's name.
                        (name == "title").then(|| {
                            let active = world.sessions.get(&tab.active);
                            let title = active.map(|s| lock(&s.name).clone()).unwrap_or_default();
                            serde_json::Value::from(title).to_string()
                        })
                    }),
                }
            }
            Scope::Window(id) => {
                let world = lock(&state.world);
                let window = world.windows.iter().find(|w| &w.id == id)?;
                match name {
                    "id" => Some(serde_json::Value::from(window.id.clone()).to_string()),
                    _ => window.vars.get(name).cloned(),
                }
            }
            Scope::App => match name {
                "pid" => Some(std::process::id().to_string()),
                _ => lock(&state.world).app_vars.get(name).cloned(),
            },
        }
    }

    /// Every variable of the scope as one JSON dictionary (what `"*"` reads).
    fn everything(&self, state: &State) -> String {
        let (vars, builtins): (HashMap<String, String>, &[&str]) = match self {
            Scope::Session(s) => (lock(&s.vars).clone(), &SESSION_BUILTINS),
            Scope::Tab(id) => {
                let world = lock(&state.world);
                let vars = world
                    .find_tab(id)
                    .map(|(w, t)| world.windows[w].tabs[t].vars.clone())
                    .unwrap_or_default();
                (vars, &["id", "title"])
            }
            Scope::Window(id) => {
                let world = lock(&state.world);
                let vars = world
                    .windows
                    .iter()
                    .find(|w| &w.id == id)
                    .map(|w| w.vars.clone())
                    .unwrap_or_default();
                (vars, &["id"])
            }
            Scope::App => (lock(&state.world).app_vars.clone(), &["pid"]),
        };
        let mut all: serde_json::Map<String, serde_json::Value> = vars
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), serde_json::from_str(v).ok()?)))
            .collect();
        for name in builtins {
            if let Some(v) = self
                .value(state, name)
                .and_then(|v| serde_json::from_str(&v).ok())
            {
                all.insert(name.to_string(), v);
            }
        }
        serde_json::Value::Object(all).to_string()
    }

    /// The `user.*` variables of the scope, for setting.
    fn with_user_vars<R>(
        &self,
        state: &State,
        f: impl FnOnce(&mut HashMap<String, String>) -> R,
    ) -> R {
        match self {
            Scope::Session(s) => f(&mut lock(&s.vars)),
            Scope::Tab(id) => {
                let mut world = lock(&state.world);
                match world.find_tab(id) {
                    Some((w, t)) => f(&mut world.windows[w].tabs[t].vars),
                    None => f(&mut HashMap::new()),
                }
            }
            Scope::Window(id) => {
                let mut world = lock(&state.world);
                match world.windows.iter_mut().find(|w| &w.id == id) {
                    Some(window) => f(&mut window.vars),
                    None => f(&mut HashMap::new()),
                }
            }
            Scope::App => f(&mut lock(&state.world).app_vars),
        }
    }
}

/// A variable as text for an expression evaluated in `scope`: `session.` and `tab.`
/// name the scope itself; strings are unquoted, other values stay JSON.
fn lookup_text(state: &State, scope: &Scope, path: &str) -> Option<String> {
    let name = match scope {
        Scope::Session(_) => path.strip_prefix("session.").unwrap_or(path),
        Scope::Tab(_) => path.strip_prefix("tab.").unwrap_or(path),
        _ => path,
    };
    let json = scope.value(state, name)?;
    match serde_json::from_str::<serde_json::Value>(&json).ok()? {
        serde_json::Value::Null => None,
        serde_json::Value::String(text) => Some(text),
        other => Some(other.to_string()),
    }
}

/// Runs `f` with what evaluation in `scope` looks up, logging function calls in the
/// server's call log.
fn in_scope<R>(
    state: &State,
    scope: &Scope,
    strict: bool,
    f: impl FnOnce(&crate::expr::Env<'_>) -> R,
) -> R {
    let lookup = |path: &str| lookup_text(state, scope, path);
    let call = |c: &str| lock(&state.calls).push(c.to_string());
    f(&crate::expr::Env {
        lookup: &lookup,
        call: &call,
        strict,
    })
}

/// Evaluates an interpolated string in `scope`, as iTerm2 evaluates names, titles,
/// badges and commands.
pub(crate) fn evaluate(
    state: &State,
    scope: &Scope,
    text: &str,
    strict: bool,
) -> Result<String, String> {
    in_scope(state, scope, strict, |env| {
        crate::expr::interpolate(text, env)
    })
}

/// Parses and evaluates an invocation (`iterm2.set_name(name: "…")`) in `scope`.
pub(crate) fn invocation(
    state: &State,
    scope: &Scope,
    text: &str,
) -> Result<(String, HashMap<String, String>), String> {
    in_scope(state, scope, false, |env| {
        crate::expr::invocation(text, env)
    })
}

/// Answers a VariableRequest: sets first, then gets.
pub(crate) fn handle(state: &State, r: VariableRequest) -> VariableResponse {
    use variable_response::Status;
    let fail = |s: Status| VariableResponse {
        status: Some(s as i32),
        values: Vec::new(),
    };
    for set in &r.set {
        let name = set.name.as_deref().unwrap_or("");
        let value = set.value.as_deref().unwrap_or("");
        if !settable(name) || serde_json::from_str::<serde_json::Value>(value).is_err() {
            return fail(Status::InvalidName);
        }
    }
    let scopes: Vec<Scope> = match r.scope {
        None => return fail(Status::MissingScope),
        Some(variable_request::Scope::SessionId(id)) if id == "all" => {
            if !r.get.is_empty() {
                return fail(Status::MultiGetDisallowed);
            }
            let world = lock(&state.world);
            world
                .sessions
                .values()
                .cloned()
                .map(Scope::Session)
                .collect()
        }
        Some(variable_request::Scope::SessionId(id)) => match lock(&state.world).session(&id) {
            Some(s) => vec![Scope::Session(s)],
            None => return fail(Status::SessionNotFound),
        },
        Some(variable_request::Scope::TabId(id)) => {
            match Scope::find(state, VariableScope::Tab as i32, &id) {
                Some(scope) => vec![scope],
                None => return fail(Status::TabNotFound),
            }
        }
        Some(variable_request::Scope::WindowId(id)) => {
            match Scope::find(state, VariableScope::Window as i32, &id) {
                Some(scope) => vec![scope],
                None => return fail(Status::WindowNotFound),
            }
        }
        Some(variable_request::Scope::App(_)) => vec![Scope::App],
    };
    for scope in &scopes {
        scope.with_user_vars(state, |vars| {
            for set in &r.set {
                let name = set.name.clone().unwrap_or_default();
                match set.value.as_deref() {
                    Some("null") | None => vars.remove(&name),
                    Some(value) => vars.insert(name, value.to_string()),
                };
            }
        });
    }
    let values = match scopes.first() {
        Some(scope) => r
            .get
            .iter()
            .map(|name| scope.value(state, name).unwrap_or_else(|| "null".into()))
            .collect(),
        None => Vec::new(),
    };
    VariableResponse {
        status: Some(Status::Ok as i32),
        values,
    }
}

/// What a monitor watches: one object, or every session or window.
enum Targets {
    One(Scope),
    AllSessions,
    AllWindows,
}

/// One VariableMonitor subscription of a connection.
pub(crate) struct Watch {
    request: VariableMonitorRequest,
    targets: Targets,
    /// Last value seen per object id (the baseline notifications compare with).
    last: HashMap<String, String>,
}

impl Watch {
    /// `(object id, identifier to report, scope)` for every watched object now.
    fn objects(&self, state: &State) -> Vec<(String, Option<String>, Scope)> {
        let world = lock(&state.world);
        match &self.targets {
            Targets::One(scope) => {
                let id = match scope {
                    Scope::Session(s) => s.id.clone(),
                    Scope::Tab(id) | Scope::Window(id) => id.clone(),
                    Scope::App => String::new(),
                };
                vec![(id, self.request.identifier.clone(), scope.clone())]
            }
            Targets::AllSessions => world
                .sessions
                .values()
                .map(|s| (s.id.clone(), Some(s.id.clone()), Scope::Session(s.clone())))
                .collect(),
            Targets::AllWindows => world
                .windows
                .iter()
                .map(|w| {
                    (
                        w.id.clone(),
                        Some(w.id.clone()),
                        Scope::Window(w.id.clone()),
                    )
                })
                .collect(),
        }
    }
}

/// Subscribes or unsubscribes a VariableMonitor, with iTerm2's statuses.
pub(crate) fn subscribe(
    state: &State,
    conn: &Conn,
    subscribe: Option<bool>,
    request: Option<&VariableMonitorRequest>,
) -> notification_response::Status {
    use notification_response::Status;
    let (Some(subscribe), Some(request)) = (subscribe, request) else {
        return Status::RequestMalformed;
    };
    let mut watches = lock(&conn.watches);
    let existing = watches.iter().position(|w| &w.request == request);
    if !subscribe {
        return match existing {
            Some(i) => {
                watches.remove(i);
                Status::Ok
            }
            None => Status::NotSubscribed,
        };
    }
    if existing.is_some() {
        return Status::AlreadySubscribed;
    }
    let scope = request.scope.unwrap_or(0);
    let identifier = request.identifier.as_deref().unwrap_or("");
    let targets = if identifier == "all" {
        match VariableScope::try_from(scope) {
            Ok(VariableScope::Session) => Targets::AllSessions,
            Ok(VariableScope::Window) => Targets::AllWindows,
            _ => return Status::InvalidIdentifier,
        }
    } else {
        match Scope::find(state, scope, identifier) {
            Some(scope) => Targets::One(scope),
            None => return Status::InvalidIdentifier,
        }
    };
    let mut watch = Watch {
        request: request.clone(),
        targets,
        last: HashMap::new(),
    };
    let name = watch.request.name.clone().unwrap_or_default();
    for (id, _, scope) in watch.objects(state) {
        let value = scope.value(state, &name).unwrap_or_else(|| "null".into());
        watch.last.insert(id, value);
    }
    watches.push(watch);
    Status::Ok
}

/// Compares every watched variable with its last value and notifies the changes.
pub(crate) fn check(state: &State) {
    check_only(state, None)
}

/// Sets (or unsets) a session's `user.<name>` as the output asked, and notifies the
/// monitors of that variable now.
pub(crate) fn set_by_output(state: &State, session: &Session, var: UserVar) {
    let name = format!("user.{}", var.name);
    {
        let mut vars = lock(&session.vars);
        match var.value {
            Some(value) => vars.insert(name.clone(), serde_json::Value::from(value).to_string()),
            None => vars.remove(&name),
        };
    }
    check_only(state, Some(&name));
}

/// [`check`] for the monitors of one variable, or of all.
fn check_only(state: &State, only: Option<&str>) {
    let conns: Vec<Arc<Conn>> = lock(&state.conns).values().cloned().collect();
    for conn in conns {
        let mut watches = lock(&conn.watches);
        for watch in watches.iter_mut() {
            let name = watch.request.name.clone().unwrap_or_default();
            if only.is_some_and(|only| only != name) {
                continue;
            }
            let objects = watch.objects(state);
            watch
                .last
                .retain(|id, _| objects.iter().any(|(o, _, _)| o == id));
            for (id, identifier, scope) in objects {
                let value = scope.value(state, &name).unwrap_or_else(|| "null".into());
                match watch.last.insert(id, value.clone()) {
                    // First seen (a session created since): its value is the baseline.
                    None => {}
                    Some(old) if old == value => {}
                    Some(_) => send(&conn, &watch.request, identifier, &name, value),
                }
            }
        }
    }
}

fn send(
    conn: &Conn,
    request: &VariableMonitorRequest,
    identifier: Option<String>,
    name: &str,
    value: String,
) {
    let message = ServerOriginatedMessage {
        id: None,
        submessage: Some(Rep::Notification(Notification {
            variable_changed_notification: Some(VariableChangedNotification {
                scope: request.scope,
                identifier,
                name: Some(name.to_string()),
                json_new_value: Some(value),
            }),
            ..Default::default()
        })),
    };
    let _ = conn
        .out
        .send(Message::Binary(message.encode_to_vec().into()));
}
