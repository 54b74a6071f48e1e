//! Who may type where: a session's lock, and tags.
//!
//! A locked session accepts input only from its holder (checked on the send path,
//! [`crate::input`]). Another agent asks for access with the orchestrator's `request_access`,
//! which leaves a notification for the holder.

use cohort_backends::PaneId;

use crate::{
    events::EngineEvent,
    names::{self, NameKind},
    registry::{LockRecord, SessionRecord},
    Terminal, TerminalError,
};

/// What a front end says when `lock` has been taken.
pub fn lock_taken(lock: &LockRecord) -> String {
    format!("{} is locked for {}", lock.session, lock.owner)
}

/// What a front end says once an unlock of `session` is done: `released` is what
/// [`Terminal::unlock`] answered.
pub fn lock_released(session: &str, released: bool) -> String {
    if released {
        format!("{session} is unlocked")
    } else {
        format!("{session} was not locked")
    }
}

impl Terminal {
    /// The registry record of the session in `pane`, or an error saying the pane is
    /// not a cohort session.
    pub async fn session_of(&self, pane: &PaneId) -> Result<SessionRecord, TerminalError> {
        self.session_record(pane).await?.ok_or_else(|| {
            TerminalError::InvalidArgument(format!(
                "pane {pane} is not a cohort session (no persistent identity): open it with cohort"
            ))
        })
    }

    /// Locks the session in `pane` for `owner`, bound to `token` (the caller's
    /// connection: another connection cannot type as the holder by passing the same
    /// name). Locking a session one holds is fine; locked by someone else, the error
    /// names the holder.
    pub async fn lock(
        &self,
        pane: &PaneId,
        owner: &str,
        token: Option<&str>,
    ) -> Result<LockRecord, TerminalError> {
        names::check(NameKind::Owner, owner)?;
        let session = self.session_of(pane).await?;
        let (id, who, token) = (
            session.id.clone(),
            owner.to_string(),
            token.map(str::to_string),
        );
        let taken = self
            .db(move |r| {
                Ok(match r.lock(&id, &who, token.as_deref())? {
                    Some(holder) => Err(holder),
                    None => Ok(r.lock_of(&id)?),
                })
            })
            .await?;
        match taken {
            Ok(Some(lock)) => {
                self.bus.publish(EngineEvent::LockChanged {
                    session: lock.session.clone(),
                    holder: Some(lock.owner.clone()),
                });
                Ok(lock)
            }
            Ok(None) => Err(TerminalError::Internal(format!(
                "the lock on {:?} vanished right after it was taken",
                session.name
            ))),
            Err(holder) => Err(TerminalError::Locked(holder)),
        }
    }

    /// Every lock held, by session name.
    pub async fn locks(&self) -> Result<Vec<LockRecord>, TerminalError> {
        self.db(|r| r.locks()).await
    }

    /// Releases the lock on the session in `pane` held by `owner` on `token`'s
    /// connection (anyone's with `force`). Returns whether a lock was released.
    pub async fn unlock(
        &self,
        pane: &PaneId,
        owner: &str,
        token: Option<&str>,
        force: bool,
    ) -> Result<bool, TerminalError> {
        names::check(NameKind::Owner, owner)?;
        let session = self.session_of(pane).await?;
        let (who, token) = (owner.to_string(), token.map(str::to_string));
        let id = session.id.clone();
        let released = self
            .db(move |r| r.unlock(&id, &who, token.as_deref(), force))
            .await?;
        if released {
            self.bus.publish(EngineEvent::LockChanged {
                session: session.name,
                holder: None,
            });
        }
        Ok(released)
    }

    /// Releases the locks taken through connection `token`, which ended.
    pub async fn release_connection(&self, token: &str) -> Result<(), TerminalError> {
        let token = token.to_string();
        let released = self.db(move |r| r.release_connection(&token)).await?;
        for session in released {
            self.bus.publish(EngineEvent::LockChanged {
                session,
                holder: None,
            });
        }
        Ok(())
    }

    /// The lock on the session in `pane`, if any.
    pub async fn lock_of(&self, pane: &PaneId) -> Result<Option<LockRecord>, TerminalError> {
        let Some(session) = self.session_record(pane).await? else {
            return Ok(None);
        };
        self.db(move |r| r.lock_of(&session.id)).await
    }

    /// Adds and removes tags on the session in `pane`; returns its tags now.
    pub async fn tag(
        &self,
        pane: &PaneId,
        add: &[String],
        remove: &[String],
    ) -> Result<Vec<String>, TerminalError> {
        for tag in add.iter().chain(remove) {
            names::check(NameKind::Tag, tag)?;
        }
        let session = self.session_of(pane).await?;
        let (id, add, remove) = (session.id.clone(), add.to_vec(), remove.to_vec());
        self.db(move |r| r.tag(&id, &add, &remove)).await?;
        Ok(self.session_of(pane).await?.tags)
    }

    /// Every tagged session's tags, by session id (`tag:NAME` targets them all).
    pub async fn tags(
        &self,
    ) -> Result<std::collections::HashMap<String, Vec<String>>, TerminalError> {
        let records = self.db(|r| r.sessions()).await?;
        Ok(records
            .into_iter()
            .filter(|s| !s.tags.is_empty())
            .map(|s| (s.id, s.tags))
            .collect())
    }
}
