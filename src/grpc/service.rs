//! The service: each call checks what only the wire can get wrong, calls the same
//! engine methods as the MCP tools (so names, locks and the tripwire are checked
//! alike), and answers in the API's messages.

use cohort_terminal::{
    access::{lock_released, lock_taken},
    events::EngineEvent,
    ids::short_id,
    input::parse_keys,
    layout::SplitTree,
    ready::layout_tree,
    request::{ReadRequest, RunRequest},
    sessions::session_name,
    Caller, LayoutPane, OpenOptions, SendOptions,
};
use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;

use futures_util::Stream;
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

use super::convert::{invalid, split_tree, status, worker_status};
use super::proto::cohort_server::Cohort;
use super::proto::{self, playbook_request::Source};
use crate::engine::{slot::EngineSlot, Engine};
use crate::restriction::Restriction;
use cohort_orchestration::{
    playbook::{run::Runner, Playbook},
    waits::{wait_timeout, Condition, Quorum},
};

type Reply<T> = Result<Response<T>, Status>;

/// The gRPC service over one engine.
#[derive(Clone)]
pub struct CohortService {
    engine: EngineSlot,
    /// This server, in the names of its connections.
    id: Arc<str>,
    /// Ends the event streams when the server stops.
    stop: CancellationToken,
    /// The role and agent this server serves.
    restriction: Restriction,
}

impl CohortService {
    /// A service over `engine`; its event streams end when `stop` is cancelled.
    pub fn new(engine: EngineSlot, stop: CancellationToken) -> Self {
        CohortService {
            engine,
            id: short_id(12).into(),
            stop,
            restriction: Restriction::default(),
        }
    }

    /// The same service, serving a role (and the agent it is for).
    pub fn restricted(mut self, restriction: Restriction) -> Self {
        self.restriction = restriction;
        self
    }

    /// Refuses an operation (an MCP tool's name) the role does not allow, or a
    /// destructive choice (`forced`) a role without them makes.
    fn allow(&self, operation: &str, forced: bool) -> Result<(), Status> {
        self.restriction
            .allow(operation, forced)
            .map_err(Status::permission_denied)
    }

    /// The name the caller acts as for `what` (bound to the served agent by a role).
    fn own_name(&self, given: &str, what: &str) -> Result<String, Status> {
        self.restriction
            .own_name(given, what)
            .map_err(Status::permission_denied)
    }

    async fn engine(&self) -> Result<&Engine, Status> {
        self.engine.get().await.map_err(Status::unavailable)
    }

    /// The caller's connection: its cursor for new output, and the token its locks are
    /// bound to (one per client connection, as for MCP).
    fn connection<T>(&self, request: &Request<T>) -> String {
        match request.remote_addr() {
            Some(addr) => self.connection_at(addr),
            None => format!("grpc-{}", self.id),
        }
    }

    /// The name of the connection from `peer`.
    pub fn connection_at(&self, peer: std::net::SocketAddr) -> String {
        format!("grpc-{}-{peer}", self.id)
    }

    /// The caller's connection acting as `owner` (the served agent, under a role),
    /// as the terminal's caller.
    fn caller(&self, connection: String, owner: Option<String>) -> Caller {
        Caller::new(connection).as_owner(self.restriction.owner(owner))
    }
}

#[tonic::async_trait]
impl Cohort for CohortService {
    async fn open(&self, request: Request<proto::OpenRequest>) -> Reply<proto::OpenReply> {
        self.allow("open", false)?;
        let engine = self.engine().await?;
        let args = request.into_inner();
        let options = OpenOptions {
            name: args.name,
            cwd: args.cwd,
            command: args.command,
            env: args.env.into_iter().collect(),
            ..Default::default()
        };
        let opened = engine
            .terminal
            .open_up(options, args.record)
            .await
            .map_err(status)?;
        let pane = opened.pane;
        Ok(Response::new(proto::OpenReply {
            session: Some(proto::Session::from(&pane)),
            attach: engine.terminal.attach_text(&pane.id),
            notice: opened.notice,
            recording: engine
                .terminal
                .recording(&pane.id)
                .map(|r| r.path.display().to_string()),
        }))
    }

    async fn list(&self, _: Request<proto::ListRequest>) -> Reply<proto::ListReply> {
        self.allow("list", false)?;
        let panes = self.engine().await?.terminal.list().await.map_err(status)?;
        Ok(Response::new(proto::ListReply {
            sessions: panes.iter().map(proto::Session::from).collect(),
        }))
    }

    async fn close(&self, request: Request<proto::TargetRequest>) -> Reply<proto::Done> {
        self.allow("close", false)?;
        let engine = self.engine().await?;
        let pane = engine
            .terminal
            .resolve(&request.get_ref().target)
            .await
            .map_err(status)?;
        engine.terminal.close(&pane.id).await.map_err(status)?;
        Ok(Response::new(proto::Done::from(&pane)))
    }

    async fn run(&self, request: Request<proto::RunRequest>) -> Reply<proto::RunReply> {
        self.allow("run", request.get_ref().force)?;
        let engine = self.engine().await?;
        let connection = self.connection(&request);
        let args = request.into_inner();
        let caller = self.caller(connection, args.owner.clone());
        let answer = engine
            .terminal
            .run_request(&RunRequest::from(args), &caller)
            .await
            .map_err(status)?;
        Ok(Response::new(proto::RunReply::from(answer)))
    }

    async fn send(&self, request: Request<proto::SendRequest>) -> Reply<proto::Done> {
        self.allow("send", request.get_ref().force)?;
        let engine = self.engine().await?;
        let connection = self.connection(&request);
        let args = request.into_inner();
        let pane = engine
            .terminal
            .resolve(&args.target)
            .await
            .map_err(status)?;
        let options = SendOptions {
            enter: !args.no_enter,
            raw: args.raw,
            force: args.force,
            ..SendOptions::default()
        };
        let caller = self.caller(connection, args.owner);
        let echoed = engine
            .terminal
            .send_with_group(&pane.id, &args.text, &options, &caller, args.alone)
            .await
            .map_err(status)?;
        Ok(Response::new(proto::Done::echoed(&pane, echoed)))
    }

    async fn read(&self, request: Request<proto::ReadRequest>) -> Reply<proto::ReadReply> {
        self.allow("read", false)?;
        let engine = self.engine().await?;
        let caller = self.caller(self.connection(&request), None);
        let answer = engine
            .terminal
            .read_request(&ReadRequest::from(request.into_inner()), &caller)
            .await
            .map_err(status)?;
        Ok(Response::new(proto::ReadReply::from(answer)))
    }

    async fn key(&self, request: Request<proto::KeyRequest>) -> Reply<proto::Done> {
        self.allow("key", false)?;
        let engine = self.engine().await?;
        let connection = self.connection(&request);
        let args = request.into_inner();
        let keys = parse_keys(&args.keys).map_err(status)?;
        let pane = engine
            .terminal
            .resolve(&args.target)
            .await
            .map_err(status)?;
        let caller = self.caller(connection, args.owner);
        let echoed = engine
            .terminal
            .keys_with_group(&pane.id, &keys, &caller, args.alone)
            .await
            .map_err(status)?;
        Ok(Response::new(proto::Done::echoed(&pane, echoed)))
    }

    async fn create_layout(
        &self,
        request: Request<proto::CreateLayoutRequest>,
    ) -> Reply<proto::CreateLayoutReply> {
        self.allow("create_layout", false)?;
        let engine = self.engine().await?;
        let args = request.into_inner();
        let size = |n: Option<u32>, what: &str| {
            n.map(|n| {
                u16::try_from(n)
                    .map_err(|_| invalid(format!("{what} {n} is out of range: use 1 to 8")))
            })
            .transpose()
        };
        let tree: SplitTree = layout_tree(
            args.layout.as_deref(),
            args.tree.map(split_tree).transpose()?,
            size(args.rows, "rows")?,
            size(args.cols, "cols")?,
            args.panes.len(),
        )
        .map_err(status)?;
        let panes: Vec<LayoutPane> = args
            .panes
            .into_iter()
            .map(|p| LayoutPane {
                name: p.name,
                agent: p.agent,
                team: p.team,
                command: p.command,
                cwd: p.cwd,
                env: p.env.into_iter().collect(),
            })
            .collect();
        let laid = engine
            .terminal
            .create_layout_up(&args.name, &tree, &panes)
            .await
            .map_err(status)?;
        Ok(Response::new(proto::CreateLayoutReply {
            attach: laid
                .panes
                .first()
                .map(|p| engine.terminal.attach_text(&p.id))
                .unwrap_or_default(),
            sessions: laid.panes.iter().map(proto::Session::from).collect(),
            notices: laid.notices,
        }))
    }

    async fn register_agent(
        &self,
        request: Request<proto::RegisterAgentRequest>,
    ) -> Reply<proto::Agent> {
        self.allow("register_agent", false)?;
        let engine = self.engine().await?;
        let args = request.into_inner();
        let pane = engine
            .terminal
            .resolve(&args.session)
            .await
            .map_err(status)?;
        let agent = engine
            .terminal
            .register_agent(&args.name, &pane, args.role.as_deref(), &args.teams)
            .await
            .map_err(status)?;
        Ok(Response::new(agent.into()))
    }

    async fn list_agents(
        &self,
        _: Request<proto::ListAgentsRequest>,
    ) -> Reply<proto::ListAgentsReply> {
        self.allow("list_agents", false)?;
        let agents = self
            .engine()
            .await?
            .terminal
            .agents()
            .await
            .map_err(status)?;
        Ok(Response::new(proto::ListAgentsReply {
            agents: agents.into_iter().map(Into::into).collect(),
        }))
    }

    async fn create_team(&self, request: Request<proto::CreateTeamRequest>) -> Reply<proto::Team> {
        self.allow("create_team", false)?;
        let args = request.into_inner();
        let team = self
            .engine()
            .await?
            .terminal
            .create_team(&args.name, args.parent.as_deref())
            .await
            .map_err(status)?;
        Ok(Response::new(team.into()))
    }

    async fn list_teams(
        &self,
        _: Request<proto::ListTeamsRequest>,
    ) -> Reply<proto::ListTeamsReply> {
        self.allow("list_teams", false)?;
        let teams = self
            .engine()
            .await?
            .terminal
            .teams()
            .await
            .map_err(status)?;
        Ok(Response::new(proto::ListTeamsReply {
            teams: teams.into_iter().map(Into::into).collect(),
        }))
    }

    async fn broadcast(
        &self,
        request: Request<proto::BroadcastRequest>,
    ) -> Reply<proto::Deliveries> {
        self.allow("broadcast", false)?;
        let engine = self.engine().await?;
        let connection = self.connection(&request);
        let args = request.into_inner();
        let options = SendOptions {
            enter: !args.no_enter,
            ..SendOptions::default()
        };
        let caller = self.caller(connection, args.owner);
        let addressed: Vec<(String, String)> = args
            .messages
            .into_iter()
            .map(|m| (m.target, m.message))
            .collect();
        let results = engine
            .orchestrator
            .broadcast_addressed(
                args.message.as_deref(),
                &args.teams.into_iter().collect(),
                &args.agents.into_iter().collect(),
                &addressed,
                &options,
                &caller,
            )
            .await
            .map_err(status)?;
        Ok(Response::new(proto::Deliveries {
            results: results.into_iter().map(Into::into).collect(),
        }))
    }

    async fn lock(&self, request: Request<proto::LockRequest>) -> Reply<proto::LockReply> {
        self.allow("lock", false)?;
        let engine = self.engine().await?;
        let connection = self.connection(&request);
        let args = request.into_inner();
        let pane = engine
            .terminal
            .resolve(&args.target)
            .await
            .map_err(status)?;
        let lock = engine
            .terminal
            .lock(
                &pane.id,
                &self.own_name(&args.owner, "the lock's owner")?,
                Some(&connection),
            )
            .await
            .map_err(status)?;
        Ok(Response::new(proto::LockReply {
            locked: true,
            message: lock_taken(&lock),
            holder: Some(lock.into()),
        }))
    }

    async fn unlock(&self, request: Request<proto::UnlockRequest>) -> Reply<proto::LockReply> {
        self.allow("unlock", request.get_ref().force)?;
        let engine = self.engine().await?;
        let connection = self.connection(&request);
        let args = request.into_inner();
        let pane = engine
            .terminal
            .resolve(&args.target)
            .await
            .map_err(status)?;
        let released = engine
            .terminal
            .unlock(
                &pane.id,
                &self.own_name(&args.owner, "the lock's owner")?,
                Some(&connection),
                args.force,
            )
            .await
            .map_err(status)?;
        Ok(Response::new(proto::LockReply {
            locked: false,
            holder: None,
            message: lock_released(&session_name(&pane), released),
        }))
    }

    async fn list_locks(
        &self,
        _: Request<proto::ListLocksRequest>,
    ) -> Reply<proto::ListLocksReply> {
        self.allow("list_locks", false)?;
        let locks = self
            .engine()
            .await?
            .terminal
            .locks()
            .await
            .map_err(status)?;
        Ok(Response::new(proto::ListLocksReply {
            locks: locks.into_iter().map(Into::into).collect(),
        }))
    }

    async fn run_playbook(
        &self,
        request: Request<proto::PlaybookRequest>,
    ) -> Reply<proto::PlaybookReply> {
        self.allow("playbook", false)?;
        let connection = self.connection(&request);
        let args = request.into_inner();
        let book = match args.source {
            Some(Source::Playbook(book)) => {
                Playbook::from_either(Some(super::playbook::document(book)), None).await
            }
            Some(Source::Path(path)) => Playbook::from_either(None, Some(&path)).await,
            None => Playbook::from_either(None, None).await,
        }
        .map_err(invalid)?;
        self.restriction
            .allow_playbook(&book)
            .map_err(Status::permission_denied)?;
        let engine = self.engine().await?;
        let runner = Runner {
            send: SendOptions::default(),
            caller: self.caller(connection, args.owner),
        };
        // A call the client gives up on is dropped, and the playbook with it: the
        // commands it started keep running.
        let report = engine
            .orchestrator
            .run_playbook(&book, &runner, &CancellationToken::new(), |_| ())
            .await;
        Ok(Response::new(super::playbook::reply(report)))
    }

    async fn wait_for(
        &self,
        request: Request<proto::WaitForRequest>,
    ) -> Reply<proto::WaitForReply> {
        self.allow("wait_for", false)?;
        let args = request.into_inner();
        let condition = Condition::parse(
            &args.condition,
            args.pattern.as_deref(),
            args.regex,
            args.input,
            args.quiet_ms,
        )
        .map_err(status)?;
        let quorum = Quorum::parse(args.mode.as_deref()).map_err(status)?;
        let engine = self.engine().await?;
        let outcome = engine
            .orchestrator
            .wait_for(
                &args.targets,
                &condition,
                quorum,
                wait_timeout(args.timeout_ms),
                |_, _, _| (),
            )
            .await
            .map_err(status)?;
        Ok(Response::new(proto::WaitForReply {
            done: outcome.done,
            elapsed_ms: outcome.elapsed.as_millis() as u64,
            results: outcome.results.into_iter().map(Into::into).collect(),
        }))
    }

    async fn approve_workers(
        &self,
        request: Request<proto::ApproveWorkersRequest>,
    ) -> Reply<proto::ApproveWorkersReply> {
        self.allow("approve_workers", false)?;
        let connection = self.connection(&request);
        let args = request.into_inner();
        let decision = args
            .decision
            .as_deref()
            .map(cohort_workers::approve::Decision::parse)
            .transpose()
            .map_err(invalid)?;
        if decision.is_some() && args.workers.is_empty() {
            return Err(invalid(
                "name the workers: a decision is never given to every worker at once; call without decision to list what waits",
            ));
        }
        cohort_terminal::names::check_opt(
            cohort_terminal::names::NameKind::Owner,
            args.by.as_deref(),
        )
        .map_err(status)?;
        let by = self
            .restriction
            .owner(args.by)
            .unwrap_or_else(|| format!("connection {connection}"));
        let engine = self.engine().await?;
        let rows = engine
            .workers
            .worker_rows_named(&args.workers, true)
            .await
            .map_err(worker_status)?;
        let done = engine
            .workers
            .approve(&rows, decision, &by, args.since_ms)
            .await
            .map_err(worker_status)?;
        let now = cohort_workers::events::now_ms();
        let answered = done
            .answered
            .into_iter()
            .map(|a| proto::ApprovalAnswer {
                worker: a.name,
                request: a.request,
                answered: a.answered,
                detail: a.detail,
            })
            .collect();
        let pending = done
            .pending
            .into_iter()
            .map(|p| proto::PendingApproval {
                worker: p.name,
                request: p.request,
                question: p.question,
                shows: p.shows,
                waiting_s: (now - p.since_ms).max(0) / 1000,
                since_ms: p.since_ms,
            })
            .collect();
        Ok(Response::new(proto::ApproveWorkersReply {
            pending,
            answered,
        }))
    }

    type EventsStream = Pin<Box<dyn Stream<Item = Result<proto::Event, Status>> + Send>>;

    async fn events(&self, request: Request<proto::EventsRequest>) -> Reply<Self::EventsStream> {
        self.allow("events", false)?;
        let output = request.get_ref().output;
        // Subscribed before the answer goes out: the client sees everything that
        // happens once its call has returned. After a lag the client is told how many
        // events it missed, then given the state each agent holds now if it changed
        // meanwhile (the older ones the stream still holds are skipped).
        let bus = self.engine().await?.terminal.bus().clone();
        let (events, states) = bus.subscribe_states();
        let stop = self.stop.clone();
        let start = (events, states, VecDeque::new(), bus, stop);
        let stream = futures_util::stream::unfold(start, move |state| async move {
            let (mut events, mut states, mut pending, bus, stop) = state;
            loop {
                if let Some(event) = pending.pop_front() {
                    return Some((Ok(event), (events, states, pending, bus, stop)));
                }
                let next = tokio::select! {
                    _ = stop.cancelled() => return None,
                    next = events.recv() => next,
                };
                let event = match next {
                    Ok(EngineEvent::Output { .. }) if !output => continue,
                    Ok(event) if !states.fresh(&event) => continue,
                    Ok(event) => proto::Event::from(event),
                    Err(RecvError::Lagged(missed)) => {
                        pending.extend(
                            states
                                .missed(&bus)
                                .into_iter()
                                .map(|(event, _)| proto::Event::from(event)),
                        );
                        proto::Event {
                            kind: Some(proto::event::Kind::Missed(missed)),
                        }
                    }
                    Err(RecvError::Closed) => return None,
                };
                return Some((Ok(event), (events, states, pending, bus, stop)));
            }
        });
        Ok(Response::new(Box::pin(stream)))
    }
}
