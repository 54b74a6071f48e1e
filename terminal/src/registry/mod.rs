//! The registry: the one store every cohort process on the machine shares, and the
//! terminal's own tables in it (sessions, agents, teams, tags, locks, team colours).
//!
//! A manager agent and its workers may each run their own cohort server; they all
//! meet here. It is one SQLite database in WAL mode under the state directory, every
//! write in a transaction, with a busy timeout so concurrent processes wait for each
//! other instead of failing. The schema is versioned (`PRAGMA user_version`) and
//! migrated forward on open. A file that is not a readable database is moved aside to
//! a timestamped backup, never overwritten, and the error says where it went.
//!
//! This module opens, recovers and migrates the database; the terminal's rows live in
//! its children: `sessions`, `teams` (with agents and team colours), `locks`. Other
//! crates keep tables of their own in the same store: they register their schema
//! with [`Registry::add_schema`] (run again whenever the database is replaced) and
//! read and write through [`Registry::with`] and [`Registry::write`].

mod arrangements;
mod locks;
mod sessions;
mod teams;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, TransactionBehavior};
use serde::{Deserialize, Serialize};

/// Errors from the registry.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// SQLite failed.
    #[error("registry database {path}: {source}")]
    Sqlite {
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },
    /// The database was unreadable and was moved aside.
    #[error("the registry at {path} was not a readable database ({why}); it was kept as {backup} and a new one was started. Sessions still open are re-adopted from the identity stamped on their panes")]
    Recovered {
        /// The database file.
        path: PathBuf,
        /// The kept copy.
        backup: PathBuf,
        /// What was wrong.
        why: String,
    },
    /// A name that does not exist.
    #[error("{0}")]
    NotFound(String),
    /// A conflicting request.
    #[error("{0}")]
    Conflict(String),
    /// A lock held by someone else (or on another connection) stands in the way.
    #[error("{0}")]
    NotHolder(String),
}

/// The answer to [`Registry::claim_name`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Claim {
    /// The name is the caller's now.
    Claimed,
    /// A live session or a fresh claim holds it.
    Taken,
    /// A session with this id holds it whose pane the caller did not list: look again,
    /// and claim with `replacing` when it is really gone.
    Suspect(String),
}

/// A session row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// Persistent id.
    pub id: String,
    /// Unique name.
    pub name: String,
    /// Backend kind.
    pub backend: String,
    /// Terminal server (tmux socket) the pane lives on.
    pub server: String,
    /// Backend pane id.
    pub pane: String,
    /// Working directory it was opened in.
    pub cwd: Option<String>,
    /// Unix seconds.
    pub created: i64,
    /// Last command cohort ran in it.
    pub last_command: Option<String>,
    /// Tags.
    pub tags: Vec<String>,
}

/// An agent row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentRecord {
    /// Unique agent name.
    pub name: String,
    /// Session it works in.
    pub session: Option<String>,
    /// Role (free text: "reviewer", "builder").
    pub role: Option<String>,
    /// Teams it belongs to.
    pub teams: Vec<String>,
}

/// A team row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamRecord {
    /// Unique team name.
    pub name: String,
    /// Parent team, for hierarchies.
    pub parent: Option<String>,
    /// Agents in it.
    pub members: Vec<String>,
}

/// A lock on a session's input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockRecord {
    /// Session name.
    pub session: String,
    /// Who holds it.
    pub owner: String,
    /// Unix seconds.
    pub since: i64,
    /// The token of the connection that took it (`None`: bound to the name alone).
    #[serde(skip)]
    pub token: Option<String>,
    /// The process holding it and when that process started (`None`: a lock taken
    /// before locks were leases, held until released).
    #[serde(skip)]
    pub holder: Option<(i64, Option<String>)>,
}

impl LockRecord {
    /// Whether the process that took the lock is gone: the lease ended with it.
    pub fn lapsed(&self) -> bool {
        self.holder
            .as_ref()
            .is_some_and(|(pid, start)| !crate::holder::running(*pid, start.as_deref()))
    }

    /// How long it has been held, in words (`42 s`, `3 min`, `2 h`).
    pub fn held_for(&self) -> String {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        match (now - self.since).max(0) {
            s if s < 120 => format!("{s} s"),
            s if s < 7200 => format!("{} min", s / 60),
            s => format!("{} h", s / 3600),
        }
    }

    /// Whether `owner` presenting `token` is the holder: the same name, and the same
    /// connection when the lock was bound to one.
    pub fn held_by(&self, owner: &str, token: Option<&str>) -> bool {
        self.owner == owner && self.token.as_deref().is_none_or(|t| Some(t) == token)
    }
}

/// The registry handle; one connection per process, shared by its tasks.
///
/// The file can change under a running process: deleted with the state directory,
/// overwritten by another program, corrupted. Every call first checks that the file
/// at the path is still the one this connection has open (device and inode), and a
/// call that finds the database unreadable moves it aside. Either way the registry
/// opens a fresh database at the path and goes on, [`Registry::generation`] counts
/// up so the engine re-adopts its sessions from the identities stamped on their
/// panes, and [`Registry::recovered`] says what happened.
#[derive(Debug)]
pub struct Registry {
    conn: Mutex<Open>,
    path: PathBuf,
    /// The schemas other crates added (see [`Registry::add_schema`]), applied again to
    /// a database that replaces this one.
    schemas: Mutex<Vec<&'static str>>,
    recovered: Mutex<Option<String>>,
    generation: std::sync::atomic::AtomicU64,
}

/// The open connection and the file it is on.
#[derive(Debug)]
struct Open {
    conn: Connection,
    file: Option<(u64, u64)>,
}

/// Whether the file at `path` starts as every SQLite database does (an empty file
/// counts: SQLite writes the header with the first page).
fn has_sqlite_header(path: &Path) -> bool {
    use std::io::Read;
    let mut header = [0u8; 16];
    match std::fs::File::open(path) {
        Ok(mut file) => match file.read(&mut header) {
            Ok(0) => true,
            Ok(n) => header[..n] == b"SQLite format 3\0"[..n],
            Err(_) => true,
        },
        Err(_) => true,
    }
}

/// The device and inode of the file at `path`.
fn file_id(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

const SCHEMA_VERSION: i64 = 4;

const MIGRATIONS: &[&str] = &[
    // 1: the first schema.
    "CREATE TABLE sessions (
         id TEXT PRIMARY KEY,
         name TEXT NOT NULL UNIQUE,
         backend TEXT NOT NULL,
         server TEXT NOT NULL,
         pane TEXT NOT NULL,
         cwd TEXT,
         created INTEGER NOT NULL,
         last_command TEXT
     );
     CREATE TABLE tags (
         session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
         tag TEXT NOT NULL,
         PRIMARY KEY (session_id, tag)
     );
     CREATE TABLE teams (
         name TEXT PRIMARY KEY,
         parent TEXT REFERENCES teams(name) ON DELETE SET NULL,
         created INTEGER NOT NULL
     );
     CREATE TABLE agents (
         name TEXT PRIMARY KEY,
         session_id TEXT REFERENCES sessions(id) ON DELETE SET NULL,
         role TEXT,
         created INTEGER NOT NULL
     );
     CREATE TABLE agent_teams (
         agent TEXT NOT NULL REFERENCES agents(name) ON DELETE CASCADE,
         team TEXT NOT NULL REFERENCES teams(name) ON DELETE CASCADE,
         PRIMARY KEY (agent, team)
     );
     CREATE TABLE locks (
         session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
         owner TEXT NOT NULL,
         since INTEGER NOT NULL
     );",
    // 2: sessions are looked up by their pane on every send.
    "CREATE INDEX sessions_by_pane ON sessions (server, pane);",
    // 3: a lock is bound to the connection that took it, not only to a name.
    "ALTER TABLE locks ADD COLUMN token TEXT;",
    // 4: a lock is a lease that ends with the process holding it.
    "ALTER TABLE locks ADD COLUMN holder_pid INTEGER;
     ALTER TABLE locks ADD COLUMN holder_start TEXT;",
];

/// The terminal's tables that came after the versioned migrations: the command a
/// session was opened with, saved arrangements, each team's colour and environment
/// variables (created where missing, as every crate's own schema is).
const TERMINAL_SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS orch_team_colours (
        team TEXT PRIMARY KEY,
        hue REAL NOT NULL
    );
    CREATE TABLE IF NOT EXISTS session_commands (
        session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
        command TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS arrangements (
        name TEXT PRIMARY KEY,
        body TEXT NOT NULL,
        saved INTEGER NOT NULL
    );
    CREATE TABLE IF NOT EXISTS team_alerts (
        team TEXT PRIMARY KEY REFERENCES teams(name) ON DELETE CASCADE
    );
    CREATE TABLE IF NOT EXISTS team_env (
        team TEXT NOT NULL REFERENCES teams(name) ON DELETE CASCADE,
        name TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (team, name)
    );
";

/// Unix seconds now.
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

impl Registry {
    /// Opens (creating or migrating) the registry at `path`. An unreadable file is
    /// moved aside; the returned registry then reports it through [`Registry::recovered`].
    pub fn open(path: &Path) -> Result<Registry, RegistryError> {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let (open, recovered) = Self::open_or_recover(path, &[])?;
        Ok(Registry {
            conn: Mutex::new(open),
            path: path.to_path_buf(),
            schemas: Mutex::new(Vec::new()),
            recovered: Mutex::new(recovered),
            generation: Default::default(),
        })
    }

    /// A connection to the database at `path`, and the recovery message when the file
    /// there was unreadable and had to be moved aside first.
    fn open_or_recover(
        path: &Path,
        schemas: &[&'static str],
    ) -> Result<(Open, Option<String>), RegistryError> {
        let opened = |conn| Open {
            conn,
            file: file_id(path),
        };
        // Processes starting together open (and create) the database at once. Some
        // steps of opening are refused at once rather than waited for while another
        // connection holds a lock (turning on WAL, a first read of a WAL being set
        // up): they are tried again for as long as a call waits for a lock.
        let deadline = std::time::Instant::now() + BUSY_WAIT;
        let mut pause = Duration::from_millis(5);
        let tried = loop {
            match Self::try_open(path, schemas) {
                Err(e) if is_busy(&e) && std::time::Instant::now() < deadline => {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
                other => break other,
            }
        };
        match tried {
            Ok(conn) => Ok((opened(conn), None)),
            Err(e) if is_corruption(&e) && path.exists() => {
                let message =
                    Self::move_aside(path, "not a database or damaged").map_err(|_| {
                        RegistryError::Sqlite {
                            path: path.to_path_buf(),
                            source: e,
                        }
                    })?;
                tracing::error!(target: "cohort::registry", "{message}");
                let conn =
                    Self::try_open(path, schemas).map_err(|source| RegistryError::Sqlite {
                        path: path.to_path_buf(),
                        source,
                    })?;
                Ok((opened(conn), Some(message)))
            }
            Err(source) => Err(RegistryError::Sqlite {
                path: path.to_path_buf(),
                source,
            }),
        }
    }

    /// Moves the database at `path` (and its WAL files) to a timestamped backup and
    /// returns the message saying so.
    fn move_aside(path: &Path, why: &str) -> std::io::Result<String> {
        let backup = path.with_extension(format!("corrupt-{}.db", now()));
        std::fs::rename(path, &backup)?;
        for suffix in ["-wal", "-shm"] {
            let side = PathBuf::from(format!("{}{suffix}", path.display()));
            let _ = std::fs::rename(
                &side,
                PathBuf::from(format!("{}{suffix}", backup.display())),
            );
        }
        Ok(RegistryError::Recovered {
            path: path.to_path_buf(),
            backup,
            why: why.into(),
        }
        .to_string())
    }

    fn try_open(path: &Path, schemas: &[&'static str]) -> rusqlite::Result<Connection> {
        // Private before SQLite opens it: SQLite would create the file 0644, and it
        // gives the -wal and -shm files the database's own mode.
        let _ = crate::private::file_options()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path);
        for suffix in ["", "-wal", "-shm"] {
            let mut name = path.as_os_str().to_owned();
            name.push(suffix);
            let _ = crate::private::secure_file(Path::new(&name));
        }
        let mut conn = Connection::open(path)?;
        // Opening and migrating wait for another process the whole time at once.
        conn.busy_timeout(BUSY_WAIT)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "foreign_keys", true)?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        let check: String = conn.query_row("PRAGMA quick_check", [], |r| r.get(0))?;
        if check != "ok" {
            return Err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CORRUPT),
                Some(check),
            ));
        }
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version > SCHEMA_VERSION {
            return Err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_MISMATCH),
                Some(format!(
                    "the registry was written by a newer cohort (schema {version}, this one knows {SCHEMA_VERSION}): upgrade cohort"
                )),
            ));
        }
        for (i, migration) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            tx.execute_batch(migration)?;
            tx.pragma_update(None, "user_version", (i + 1) as i64)?;
        }
        tx.execute_batch(TERMINAL_SCHEMA)?;
        for schema in schemas {
            tx.execute_batch(schema)?;
        }
        tx.commit()?;
        // From now on a call waits for another process's lock in short slices with
        // the connection let go between them (see `retrying`), so reads in this
        // process never queue behind a write that is waiting.
        conn.busy_timeout(BUSY_SLICE)?;
        Ok(conn)
    }

    /// Adds a crate's own tables: `schema` (statements that create what is missing,
    /// `CREATE TABLE IF NOT EXISTS`) runs now and again on any database that replaces
    /// this one. Adding the same schema twice runs it once.
    pub fn add_schema(&self, schema: &'static str) -> Result<(), RegistryError> {
        {
            let mut schemas = self.schemas.lock().unwrap_or_else(|e| e.into_inner());
            if schemas.contains(&schema) {
                return Ok(());
            }
            schemas.push(schema);
        }
        self.write(|tx| tx.execute_batch(schema).map_err(sql(&self.path)))
    }

    /// The schemas added so far.
    fn schemas(&self) -> Vec<&'static str> {
        self.schemas
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Where the database lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What happened to the database, when it had to be replaced (moved aside as
    /// unreadable on open or while running, or found deleted or replaced).
    pub fn recovered(&self) -> Option<String> {
        self.recovered
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Whether another process holds the database locked now: the message saying so
    /// (writes would wait up to the busy timeout, then fail), or `None`.
    pub fn lock_holder(&self) -> Option<String> {
        let probe = Connection::open(&self.path).ok()?;
        probe.busy_timeout(Duration::from_millis(200)).ok()?;
        match probe.execute_batch("BEGIN IMMEDIATE; ROLLBACK;") {
            Ok(()) => None,
            Err(e) if matches!(e.sqlite_error_code(), Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)) => Some(format!(
                "the registry at {} is locked by another process: calls that write to it wait up to 10 s, then fail; sessions already open keep working",
                self.path.display()
            )),
            Err(_) => None,
        }
    }

    /// How many times the database was replaced while this process ran: each time,
    /// the sessions it knew must be adopted again from their panes.
    pub fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The connection, first replaced by a fresh database when the file at the path
    /// is no longer the one it has open (deleted, or replaced by another program).
    fn connection(&self) -> Result<std::sync::MutexGuard<'_, Open>, RegistryError> {
        let mut open = self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let now_at_path = file_id(&self.path);
        if now_at_path.is_some() && now_at_path == open.file && !has_sqlite_header(&self.path) {
            // Overwritten in place (`echo … > registry.db`): SQLite would go on from
            // its cache and its WAL, over a file nobody else can read.
            let message = Self::move_aside(&self.path, "overwritten by another program while cohort ran")
                .unwrap_or_else(|e| format!("the registry at {} was overwritten by another program and could not be moved aside ({e})", self.path.display()));
            let (fresh, _) = Self::open_or_recover(&self.path, &self.schemas())?;
            *open = fresh;
            self.replaced(message);
            return Ok(open);
        }
        if now_at_path != open.file {
            let what = if now_at_path.is_none() {
                "was deleted"
            } else {
                "was replaced by another file"
            };
            if let Some(dir) = self.path.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let (fresh, moved) = Self::open_or_recover(&self.path, &self.schemas())?;
            *open = fresh;
            let message = moved.unwrap_or_else(|| {
                format!(
                    "the registry at {} {what} while cohort ran; a new one was started and the open sessions were adopted again from the identity stamped on their panes",
                    self.path.display()
                )
            });
            self.replaced(message);
        }
        Ok(open)
    }

    /// Notes that the database was replaced.
    fn replaced(&self, message: String) {
        tracing::error!(target: "cohort::registry", "{message}");
        *self.recovered.lock().unwrap_or_else(|e| e.into_inner()) = Some(message);
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    /// Runs `f`; when the database turns out unreadable (overwritten, damaged), moves
    /// it aside, starts a fresh one and runs `f` once more on it.
    ///
    /// While another process holds the database's write lock, `f` is tried again in
    /// slices of [`BUSY_SLICE`] for up to [`BUSY_WAIT`], letting go of the connection
    /// between tries: the other calls of this process (reads above all, which WAL
    /// lets through) go on meanwhile instead of queueing behind the waiting write.
    fn retrying<T>(
        &self,
        mut f: impl FnMut(&mut Open) -> Result<T, RegistryError>,
    ) -> Result<T, RegistryError> {
        let deadline = std::time::Instant::now() + BUSY_WAIT;
        let mut pause = Duration::from_millis(5);
        loop {
            let mut open = self.connection()?;
            match f(&mut open) {
                Err(RegistryError::Sqlite { source, .. })
                    if is_busy(&source) && std::time::Instant::now() < deadline =>
                {
                    drop(open);
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(100));
                }
                other => return self.recovering(open, other, &mut f),
            }
        }
    }

    /// What [`Self::retrying`] does with an answer: a database found unreadable is
    /// moved aside and replaced, and `f` runs once more on the new one.
    fn recovering<T>(
        &self,
        mut open: std::sync::MutexGuard<'_, Open>,
        answer: Result<T, RegistryError>,
        f: &mut impl FnMut(&mut Open) -> Result<T, RegistryError>,
    ) -> Result<T, RegistryError> {
        match answer {
            Err(RegistryError::Sqlite { source, .. }) if is_corruption(&source) => {
                let message = Self::move_aside(&self.path, "found unreadable while cohort ran")
                    .map_err(|_| RegistryError::Sqlite {
                        path: self.path.clone(),
                        source,
                    })?;
                let (fresh, _) = Self::open_or_recover(&self.path, &self.schemas())?;
                *open = fresh;
                self.replaced(message);
                f(&mut open)
            }
            other => other,
        }
    }

    /// Reads (or writes outside a transaction) with the connection; a database found
    /// unreadable is replaced and `f` runs once more on the new one.
    pub fn with<T>(
        &self,
        mut f: impl FnMut(&mut Connection) -> rusqlite::Result<T>,
    ) -> Result<T, RegistryError> {
        self.retrying(|open| {
            f(&mut open.conn).map_err(|source| RegistryError::Sqlite {
                path: self.path.clone(),
                source,
            })
        })
    }

    /// Writes in one immediate transaction, committed when `f` succeeds; a database
    /// found unreadable is replaced and `f` runs once more on the new one.
    pub fn write<T>(
        &self,
        mut f: impl FnMut(&rusqlite::Transaction<'_>) -> Result<T, RegistryError>,
    ) -> Result<T, RegistryError> {
        self.retrying(|open| {
            let sql = |source| RegistryError::Sqlite {
                path: self.path.clone(),
                source,
            };
            let tx = open
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(sql)?;
            let out = f(&tx)?;
            tx.commit().map_err(sql)?;
            Ok(out)
        })
    }
}

/// Turns SQLite's errors into the registry's, naming the database at `path`.
pub fn sql(path: &Path) -> impl Fn(rusqlite::Error) -> RegistryError + '_ {
    move |source| RegistryError::Sqlite {
        path: path.to_path_buf(),
        source,
    }
}

/// How long a call waits for another process to let go of the database.
const BUSY_WAIT: Duration = Duration::from_secs(10);

/// How long SQLite itself waits for a lock before the call lets go of the
/// connection and tries again.
const BUSY_SLICE: Duration = Duration::from_millis(50);

/// Whether SQLite gave up waiting for another connection's lock.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy) | Some(rusqlite::ErrorCode::DatabaseLocked)
    )
}

fn is_corruption(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::NotADatabase) | Some(rusqlite::ErrorCode::DatabaseCorrupt)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Servers starting at the same moment open a database none of them has made
    /// yet: every one of them gets it.
    #[test]
    fn many_opening_a_new_database_at_once_all_get_it() {
        let dir = tempfile::tempdir().unwrap();
        for round in 0..10 {
            let path = dir.path().join(format!("registry-{round}.db"));
            let start = std::sync::Arc::new(std::sync::Barrier::new(8));
            let openers: Vec<_> = (0..8)
                .map(|_| {
                    let (path, start) = (path.clone(), start.clone());
                    std::thread::spawn(move || {
                        start.wait();
                        Registry::open(&path).map(|_| ())
                    })
                })
                .collect();
            for opener in openers {
                opener.join().unwrap().expect("the registry opens");
            }
        }
    }

    fn session(id: &str, name: &str) -> SessionRecord {
        SessionRecord {
            id: id.into(),
            name: name.into(),
            backend: "tmux".into(),
            server: "-L cohort".into(),
            pane: "%1".into(),
            cwd: None,
            created: 1,
            last_command: None,
            tags: vec![],
        }
    }

    #[test]
    fn reads_go_on_while_a_write_waits_for_another_processs_lock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("registry.db");
        let registry = std::sync::Arc::new(Registry::open(&path).unwrap());
        registry.upsert_session(&session("a", "alpha")).unwrap();

        // Another process takes the write lock and keeps it until told.
        let other = Connection::open(&path).unwrap();
        other.execute_batch("BEGIN EXCLUSIVE").unwrap();
        let (wrote_tx, wrote) = std::sync::mpsc::channel();
        let writer = {
            let registry = registry.clone();
            std::thread::spawn(move || {
                let out = registry.upsert_session(&session("b", "beta"));
                wrote_tx.send(()).unwrap();
                out
            })
        };
        // The write cannot finish while the lock is held; reads answer meanwhile,
        // again and again, instead of queueing behind it.
        std::thread::sleep(Duration::from_millis(200));
        for _ in 0..5 {
            let names: Vec<String> = registry
                .sessions()
                .unwrap()
                .into_iter()
                .map(|s| s.name)
                .collect();
            assert_eq!(names, ["alpha"]);
        }
        assert!(
            wrote.try_recv().is_err(),
            "the write finished under another's lock"
        );
        other.execute_batch("ROLLBACK").unwrap();
        writer.join().unwrap().unwrap();
        assert_eq!(registry.sessions().unwrap().len(), 2);
    }

    #[test]
    fn survives_reopening_and_a_second_connection_sees_writes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("registry.db");
        {
            let r = Registry::open(&path).unwrap();
            r.upsert_session(&session("a", "alpha")).unwrap();
            r.register_agent("alice", Some("a"), Some("builder"), &["core".into()])
                .unwrap();
        }
        let one = Registry::open(&path).unwrap();
        let two = Registry::open(&path).unwrap();
        assert_eq!(one.sessions().unwrap()[0].name, "alpha");
        two.tag("a", &["web".into()], &[]).unwrap();
        assert_eq!(one.sessions().unwrap()[0].tags, vec!["web".to_string()]);
        let agents = one.agents().unwrap();
        assert_eq!(agents[0].session.as_deref(), Some("alpha"));
        assert_eq!(agents[0].teams, vec!["core".to_string()]);
    }

    #[test]
    fn a_name_is_claimed_once_across_connections() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("registry.db");
        let (one, two) = (
            Registry::open(&path).unwrap(),
            Registry::open(&path).unwrap(),
        );
        let server = "-L cohort";
        // Two processes opening "race" at once: the second claim loses.
        assert_eq!(
            one.claim_name("a", "race", server, &[], None).unwrap(),
            Claim::Claimed
        );
        assert_eq!(
            two.claim_name("b", "race", server, &[], None).unwrap(),
            Claim::Taken
        );
        // The first becomes a session whose pane lives: still taken.
        one.upsert_session(&session("a", "race")).unwrap();
        assert_eq!(
            two.claim_name("b", "race", server, &["a".into()], None)
                .unwrap(),
            Claim::Taken
        );
        // Not in the caller's list: maybe gone, maybe too new for the list. Only when
        // the caller looked again and names it does the row yield.
        assert_eq!(
            two.claim_name("b", "race", server, &["c".into()], None)
                .unwrap(),
            Claim::Suspect("a".into())
        );
        assert_eq!(
            two.claim_name("b", "race", server, &["c".into()], Some("a"))
                .unwrap(),
            Claim::Claimed
        );
        let sessions = one.sessions().unwrap();
        assert_eq!(
            sessions.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
            ["b"]
        );
    }

    #[test]
    fn a_first_version_database_is_migrated_forward() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(MIGRATIONS[0]).unwrap();
            conn.pragma_update(None, "user_version", 1).unwrap();
            conn.execute(
                "INSERT INTO sessions (id, name, backend, server, pane, created) VALUES ('a', 'alpha', 'tmux', 's', '%1', 1)",
                [],
            )
            .unwrap();
        }
        let r = Registry::open(&path).unwrap();
        let version: i64 = r
            .with(|c| c.query_row("PRAGMA user_version", [], |row| row.get(0)))
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        assert_eq!(
            r.session_for_pane("s", "%1").unwrap().unwrap().name,
            "alpha"
        );
        assert_eq!(r.session_for_pane("s", "%2").unwrap(), None);
    }

    #[test]
    fn locks_refuse_a_second_owner_and_another_connection() {
        let dir = tempfile::tempdir().unwrap();
        let r = Registry::open(&dir.path().join("r.db")).unwrap();
        r.upsert_session(&session("a", "alpha")).unwrap();
        let (one, two) = (Some("conn-1"), Some("conn-2"));
        assert_eq!(r.lock("a", "alice", one).unwrap(), None);
        assert_eq!(
            r.lock("a", "alice", one).unwrap(),
            None,
            "re-locking by the holder is fine"
        );
        let held = r.lock("a", "bob", two).unwrap().expect("held by alice");
        assert_eq!(
            (held.session.as_str(), held.owner.as_str()),
            ("alpha", "alice")
        );
        // The holder's name on another connection is not the holder.
        assert!(r.lock("a", "alice", two).unwrap().is_some());
        assert!(!held.held_by("alice", two) && held.held_by("alice", one));
        assert!(r.unlock("a", "alice", two, false).is_err());
        assert!(r.unlock("a", "bob", two, false).is_err());
        assert!(r.unlock("a", "alice", one, false).unwrap());
        assert_eq!(r.lock("a", "bob", two).unwrap(), None);
        assert!(
            r.unlock("a", "carol", None, true).unwrap(),
            "force breaks it"
        );
    }

    #[test]
    fn a_lock_ends_with_its_process_and_with_its_connection() {
        let dir = tempfile::tempdir().unwrap();
        let r = Registry::open(&dir.path().join("r.db")).unwrap();
        r.upsert_session(&session("a", "alpha")).unwrap();
        r.upsert_session(&session("b", "beta")).unwrap();
        assert_eq!(r.lock("a", "alice", Some("conn-1")).unwrap(), None);
        let held = r.lock_of("a").unwrap().expect("held");
        assert_eq!(
            held.holder.as_ref().map(|h| h.0),
            Some(i64::from(std::process::id()))
        );
        assert!(!held.lapsed());
        // A holder process that is gone holds nothing: the lock is dropped.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = i64::from(child.id());
        child.wait().unwrap();
        r.with(|c| c.execute("UPDATE locks SET holder_pid = ?1", [gone]))
            .unwrap();
        assert_eq!(r.lock_of("a").unwrap(), None, "a lapsed lock is no lock");
        assert!(r.locks().unwrap().is_empty());
        assert_eq!(
            r.lock("a", "bob", Some("conn-2")).unwrap(),
            None,
            "bob takes it"
        );
        // A connection that ends releases what it took, and only that.
        assert_eq!(r.lock("b", "bob", Some("conn-2")).unwrap(), None);
        assert_eq!(r.lock("b", "bob", Some("conn-2")).unwrap(), None);
        let mut released = r.release_connection("conn-2").unwrap();
        released.sort();
        assert_eq!(released, ["alpha", "beta"]);
        assert!(r.locks().unwrap().is_empty());
        assert!(r.release_connection("conn-2").unwrap().is_empty());
    }

    #[test]
    fn team_cycles_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let r = Registry::open(&dir.path().join("r.db")).unwrap();
        r.create_team("org", None).unwrap();
        r.create_team("web", Some("org")).unwrap();
        assert!(r.create_team("org", Some("web")).is_err());
        assert!(r.create_team("x", Some("missing")).is_err());
    }

    #[test]
    fn a_corrupt_file_is_kept_and_replaced_loudly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("registry.db");
        std::fs::write(
            &path,
            b"this is not a database, it is some other file that got here",
        )
        .unwrap();
        let r = Registry::open(&path).unwrap();
        let message = r.recovered().expect("recovery reported");
        assert!(message.contains("kept as"), "{message}");
        let backups: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains("corrupt"))
            .collect();
        assert_eq!(backups.len(), 1);
        assert!(std::fs::read(backups[0].path())
            .unwrap()
            .starts_with(b"this is not a database"));
        r.upsert_session(&session("a", "alpha")).unwrap();
    }
}
