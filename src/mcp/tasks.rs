//! Long calls as tasks (the MCP tasks extension, `io.modelcontextprotocol/tasks`).
//!
//! A wait can last minutes (`wait_for`, `wait_idle_workers`, `message_workers` with a
//! wait, `playbook`). A client that declared the tasks extension gets a task for
//! such a call at once instead of a request held open: it polls `tasks/get` for the
//! state and, once the call is done, its result (the same result the call would have
//! returned), and `tasks/cancel` stops it. Progress goes on as for a plain call,
//! under the request's progress token. Other clients, and every other tool, are
//! answered as before. The task runs the call through the same tool router, so
//! roles, errors and spans are the same.

use std::time::Duration;

use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CreateTaskResult};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::task_manager::{TaskExit, TaskOptions};
use rmcp::ErrorData as McpError;
use serde_json::Value;

use super::{bound_error, bound_error_result, spans, CohortServer};

/// How long a task is kept: past the longest wait a call can ask for (24 h), so a
/// task is never cut off before its call's own timeout, and its result stays for a
/// poller that comes back late.
const TASK_TTL: Duration = Duration::from_secs(25 * 3600);

/// How often a client is asked to poll.
const POLL_INTERVAL: Duration = Duration::from_millis(500);

/// Whether `request` is a call that can wait long: a task for clients that take one.
pub(super) fn runs_long(request: &CallToolRequestParams) -> bool {
    match request.name.as_ref() {
        "wait_for" | "wait_idle_workers" | "playbook" => true,
        "message_workers" => request
            .arguments
            .as_ref()
            .and_then(|args| args.get("wait_mode").or_else(|| args.get("wait")))
            .and_then(Value::as_str)
            .is_some_and(|mode| !mode.eq_ignore_ascii_case("none")),
        _ => false,
    }
}

/// Whether the client that sent `context`'s request takes tasks.
pub(super) fn client_takes_tasks(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .is_some_and(|caps| caps.supports_tasks())
}

/// Starts `request` as a task of `server`'s and answers with its handle.
pub(super) fn start(
    server: &CohortServer,
    request: CallToolRequestParams,
    mut context: RequestContext<RoleServer>,
    span: tracing::Span,
) -> CallToolResponse {
    use tracing::Instrument;

    // The task's copy of the server does not keep the connection: when the client
    // goes, its locks are released and its tasks stopped (see `ConnectionEnd`).
    let mut server = server.clone();
    server._end = None;
    // The call stops when the task is cancelled, as it would for a cancelled
    // request: the tools follow their context's token. A token of its own: the
    // request's ends with the request, which the task outlives.
    let cancel = tokio_util::sync::CancellationToken::new();
    context.ct = cancel.clone();
    let options = TaskOptions::new()
        .with_ttl_ms(TASK_TTL.as_millis() as u64)
        .with_poll_interval_ms(POLL_INTERVAL.as_millis() as u64)
        .with_status_message(format!("{} is running", request.name));
    let task = server.tasks.clone().spawn(options, move |task| {
        Box::pin(async move {
            let call = ToolCallContext::new(&server, request, context);
            let outcome = tokio::select! {
                outcome = server.tool_router.call(call).instrument(span.clone()) => outcome,
                () = task.cancelled() => {
                    cancel.cancel();
                    return Err(TaskExit::Cancelled);
                }
            };
            spans::record(&span, &outcome);
            match outcome.map(bound_error_result).map_err(bound_error) {
                Ok(CallToolResponse::Complete(result)) => Ok(result),
                Ok(_) => Err(TaskExit::Error(McpError::internal_error(
                    "the call did not end with a result",
                    None,
                ))),
                Err(error) => Err(TaskExit::Error(error)),
            }
        })
    });
    CallToolResponse::Task(CreateTaskResult::new(task))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &'static str, args: Value) -> CallToolRequestParams {
        CallToolRequestParams::new(name).with_arguments(args.as_object().unwrap().clone())
    }

    #[test]
    fn only_calls_that_wait_become_tasks() {
        use serde_json::json;
        assert!(runs_long(&call("wait_for", json!({}))));
        assert!(runs_long(&call("playbook", json!({}))));
        assert!(runs_long(&call("wait_idle_workers", json!({}))));
        assert!(runs_long(&call("message_workers", json!({"wait": "all"}))));
        assert!(!runs_long(&call(
            "message_workers",
            json!({"wait": "none"})
        )));
        assert!(!runs_long(&call("message_workers", json!({}))));
        assert!(!runs_long(&call("run", json!({"command": "sleep 100"}))));
    }
}
