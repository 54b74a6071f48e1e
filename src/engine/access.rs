//! Who may type where: a session's lock, requests for access, the notifications
//! that carry them, and tags.
//!
//! A locked session accepts input only from its holder (checked on the send path,
//! [`super::send`]). Another agent asks for access with [`Engine::request_access`],
//! which leaves a notification for the holder.

use cohort_backends::PaneId;

use super::events::EngineEvent;
use super::names::{self, NameKind, NOTE_MAX};
use super::registry::{LockRecord, NotificationRecord, SessionRecord};
use super::{Engine, EngineError};

/// What a front end says when `lock` has been taken.
pub fn lock_taken(lock: &LockRecord) -> String {
    format!("{} is locked for {}", lock.session, lock.owner)
}

/// What a front end says once an unlock of `session` is done: `released` is what
/// [`Engine::unlock`] answered.
pub fn lock_released(session: &str, released: bool) -> String {
    if released {
        format!("{session} is unlocked")
    } else {
        format!("{session} was not locked")
    }
}

/// The answer to a request for access.
#[derive(Clone, Debug)]
pub struct AccessAnswer {
    /// The session's name.
    pub session: String,
    /// Who holds the lock; `None` when the session is not locked (go ahead).
    pub holder: Option<LockRecord>,
}

impl Engine {
    /// The registry record of the session in `pane`, or an error saying the pane is
    /// not a cohort session.
    pub async fn session_of(&self, pane: &PaneId) -> Result<SessionRecord, EngineError> {
        self.session_record(pane).await?.ok_or_else(|| {
            EngineError::InvalidArgument(format!(
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
    ) -> Result<LockRecord, EngineError> {
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
            Ok(None) => Err(EngineError::Internal(format!(
                "the lock on {:?} vanished right after it was taken",
                session.name
            ))),
            Err(holder) => Err(EngineError::Locked(holder)),
        }
    }

    /// Every lock held, by session name.
    pub async fn locks(&self) -> Result<Vec<LockRecord>, EngineError> {
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
    ) -> Result<bool, EngineError> {
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

    /// The lock on the session in `pane`, if any.
    pub async fn lock_of(&self, pane: &PaneId) -> Result<Option<LockRecord>, EngineError> {
        let Some(session) = self.session_record(pane).await? else {
            return Ok(None);
        };
        self.db(move |r| r.lock_of(&session.id)).await
    }

    /// Asks the holder of the lock on `pane`'s session for access on behalf of
    /// `requester`: leaves them a notification.
    pub async fn request_access(
        &self,
        pane: &PaneId,
        requester: &str,
        reason: Option<&str>,
    ) -> Result<AccessAnswer, EngineError> {
        names::check(NameKind::Owner, requester)?;
        if let Some(reason) = reason {
            names::check_text("reason", reason, NOTE_MAX, true)?;
        }
        let session = self.session_of(pane).await?;
        let Some(holder) = self.lock_of(pane).await? else {
            return Ok(AccessAnswer {
                session: session.name,
                holder: None,
            });
        };
        let message = format!(
            "{requester} asks for access to {}{}",
            session.name,
            reason.map(|r| format!(": {r}")).unwrap_or_default()
        );
        let (from, to, text) = (requester.to_string(), holder.owner.clone(), message.clone());
        self.db(move |r| r.notify(&from, &to, "access_request", &text))
            .await?;
        self.bus.publish(EngineEvent::Notification {
            to: holder.owner.clone(),
            from: requester.to_string(),
            kind: "access_request".into(),
            message,
        });
        Ok(AccessAnswer {
            session: session.name,
            holder: Some(holder),
        })
    }

    /// Notifications left for `owner` (and for everyone): those not handed out yet
    /// (they count as handed out from now on), or with `all` every one kept. Oldest
    /// first. See [`Engine::notifications_for`], which can also wait.
    pub async fn notifications(
        &self,
        owner: &str,
        all: bool,
    ) -> Result<Vec<NotificationRecord>, EngineError> {
        self.notifications_for(owner, all, None).await
    }

    /// Adds and removes tags on the session in `pane`; returns its tags now.
    pub async fn tag(
        &self,
        pane: &PaneId,
        add: &[String],
        remove: &[String],
    ) -> Result<Vec<String>, EngineError> {
        for tag in add.iter().chain(remove) {
            names::check(NameKind::Tag, tag)?;
        }
        let session = self.session_of(pane).await?;
        let (id, add, remove) = (session.id.clone(), add.to_vec(), remove.to_vec());
        self.db(move |r| r.tag(&id, &add, &remove)).await?;
        Ok(self.session_of(pane).await?.tags)
    }
}
