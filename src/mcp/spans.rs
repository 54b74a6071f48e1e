//! A span for every tool call (see [`crate::telemetry`]): the tool, the session,
//! agent and team it names (or the agent and team of the session it targets), and for runs and waits the verdict, the layer that
//! decided and the exit status. Without the `otel` feature the span is
//! `Span::none()` and nothing here is evaluated.

use rmcp::model::{CallToolRequestParams, CallToolResponse};
use rmcp::ErrorData as McpError;
use serde_json::Value;

use crate::engine::Engine;

/// The span for a call of `request` (its outcome is recorded by [`record`]).
#[cfg_attr(not(feature = "otel"), allow(unused_variables))]
pub(crate) fn start(request: &CallToolRequestParams) -> tracing::Span {
    cohort_backends::otel_span!(
        "tool",
        otel.name = %format_args!("tool {}", request.name),
        tool = %request.name,
        session = argument(request, "target").or_else(|| argument(request, "name")),
        agent = argument(request, "agent")
            .or_else(|| argument(request, "owner"))
            .or_else(|| argument(request, "from")),
        team = argument(request, "team"),
        verdict = tracing::field::Empty,
        layer = tracing::field::Empty,
        exit_status = tracing::field::Empty,
        error = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    )
}

/// Continues the trace of the client that made the call: the W3C Trace Context
/// (`traceparent`, `tracestate`) in the request's `_meta` becomes the parent of the
/// call's span, so a host's trace runs on into cohort's spans and those of tmux
/// under them. A value that does not parse is ignored (the call starts a trace of
/// its own, as without one).
#[cfg_attr(not(feature = "otel"), allow(unused_variables))]
pub(crate) fn continue_trace(
    span: &tracing::Span,
    request: &CallToolRequestParams,
    context_meta: &rmcp::model::RequestMetaObject,
) {
    #[cfg(feature = "otel")]
    {
        use opentelemetry::propagation::TextMapPropagator;
        use opentelemetry::trace::TraceContextExt;
        use tracing_opentelemetry::OpenTelemetrySpanExt;

        if span.is_disabled() {
            return;
        }
        // rmcp hands `_meta` over in the request context; a request built by hand
        // may still carry it in its parameters.
        let meta = request
            .meta
            .as_ref()
            .filter(|meta| meta.get_traceparent().is_some())
            .unwrap_or(context_meta);
        let Some(parent) = meta.get_traceparent() else {
            return;
        };
        let mut carrier = std::collections::HashMap::new();
        carrier.insert("traceparent".to_string(), parent.to_string());
        if let Some(state) = meta.get_tracestate() {
            carrier.insert("tracestate".to_string(), state.to_string());
        }
        let context =
            opentelemetry_sdk::propagation::TraceContextPropagator::new().extract(&carrier);
        if context.span().span_context().is_valid() {
            if let Err(e) = span.set_parent(context) {
                tracing::debug!(target: "cohort::mcp", error = %e, "the caller's trace was not continued");
            }
        } else {
            tracing::debug!(target: "cohort::mcp", traceparent = parent, "a traceparent that does not parse was ignored");
        }
    }
}

/// The string argument `key` of `request`.
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
fn argument(request: &CallToolRequestParams, key: &str) -> Option<String> {
    request
        .arguments
        .as_ref()?
        .get(key)?
        .as_str()
        .map(str::to_string)
}

/// Names on the span the agent and team of the session the call targets, when its
/// arguments did not (only when the span is exported: it asks the backend).
pub(crate) async fn identify(
    span: &tracing::Span,
    engine: &Engine,
    request: &CallToolRequestParams,
) {
    if span.is_disabled() {
        return;
    }
    let Some(target) = request
        .arguments
        .as_ref()
        .and_then(|a| a.get("target"))
        .and_then(Value::as_str)
    else {
        return;
    };
    let Ok(pane) = engine.terminal.resolve(target).await else {
        return;
    };
    let Some(identity) = pane.identity else {
        return;
    };
    span.record("session", identity.name.as_str());
    if let Some(agent) = &identity.agent {
        span.record("agent", agent.as_str());
    }
    if let Some(team) = &identity.team {
        span.record("team", team.as_str());
    }
}

/// Records what the call came to on its span.
pub(crate) fn record(span: &tracing::Span, outcome: &Result<CallToolResponse, McpError>) {
    if span.is_disabled() {
        return;
    }
    let result = match outcome {
        Ok(CallToolResponse::Complete(result)) => result,
        Ok(_) => return,
        Err(e) => {
            span.record("otel.status_code", "ERROR");
            span.record("error", e.message.as_ref());
            return;
        }
    };
    if result.is_error == Some(true) {
        span.record("otel.status_code", "ERROR");
        let text = result
            .content
            .iter()
            .find_map(|c| c.as_text().map(|t| t.text.clone()));
        span.record("error", text.as_deref().unwrap_or("the tool failed"));
        return;
    }
    let Some(verdict) = result
        .structured_content
        .as_ref()
        .and_then(|s| s.get("verdict"))
    else {
        return;
    };
    let complete = verdict.get("complete").and_then(Value::as_bool);
    let exit_status = verdict
        .get("exit_status")
        .and_then(Value::as_i64)
        .and_then(|s| i32::try_from(s).ok());
    if let Some(complete) = complete {
        span.record(
            "verdict",
            cohort_terminal::completion::verdict_word(complete, exit_status),
        );
    }
    if let Some(layer) = verdict.get("layer").and_then(Value::as_str) {
        span.record("layer", layer);
    }
    if let Some(status) = exit_status {
        span.record("exit_status", status);
    }
}
