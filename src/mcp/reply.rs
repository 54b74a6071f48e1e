//! Tool replies: plain text for the model, the typed result beside it.
//!
//! What a host hands its model is a tool result's text content. A JSON serialisation
//! there turns every newline of a command's output into `\n` and every quote into
//! `\"`: code reads worse and costs more (`cargo --version`, 36 characters, came back
//! as 267). So a tool's text content is written for a reader — the output, then the
//! meta line with the verdict, as `cohort reduce` prints it — and the typed result
//! goes in `structuredContent`, described by the tool's `outputSchema`, for clients
//! that read it.
//!
//! [`Json`] carries the typed result. It is named as rmcp's wrapper is because rmcp's
//! `#[tool]` macro derives a tool's `outputSchema` from a return type spelled
//! `Json<T>` (or `Result<Json<T>, E>`); only the text content differs, and each
//! result type says how it reads through [`Plain`].

use rmcp::handler::server::tool::IntoCallToolResult;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock};
use serde::Serialize;

/// A tool's typed result: `structuredContent` as JSON, text content as [`Plain`].
pub(crate) struct Json<T>(pub T);

/// How a result reads as a tool's text content.
pub(crate) trait Plain: Serialize {
    /// The text a model reads. By default compact JSON: right for small records
    /// (acknowledgements, lists of names), where there is no output to unescape.
    fn plain(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

impl<T: Plain + 'static> IntoCallToolResult for Json<T> {
    fn into_call_tool_result(self) -> Result<CallToolResponse, rmcp::ErrorData> {
        let text = self.0.plain();
        let value = serde_json::to_value(&self.0).map_err(|e| {
            rmcp::ErrorData::internal_error(format!("the result did not serialise: {e}"), None)
        })?;
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = Some(value);
        Ok(result.into())
    }
}

/// Output then its meta line, as `cohort reduce` prints them: the output as the
/// terminal showed it (no escaping), the meta line on a line of its own.
pub(crate) fn output_with_meta(output: &str, meta: &str) -> String {
    let output = output.trim_end_matches('\n');
    match (output.is_empty(), meta.is_empty()) {
        (true, _) => meta.to_string(),
        (false, true) => output.to_string(),
        (false, false) => format!("{output}\n{meta}"),
    }
}

// How each result reads. Output-carrying results read as output and meta line; the
// small records keep compact JSON.

impl Plain for super::RunResult {
    fn plain(&self) -> String {
        output_with_meta(&self.output, &self.meta)
    }
}

impl Plain for super::ReadResult {
    fn plain(&self) -> String {
        output_with_meta(&self.output, &self.meta)
    }
}

impl Plain for super::team::ManyResult {
    /// One block per target: a `== target ==` header, then what was read or sent
    /// there and its meta line, or why it failed.
    fn plain(&self) -> String {
        let mut out = String::new();
        for r in &self.results {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str("== ");
            out.push_str(&r.target);
            if !r.session.is_empty() && r.session != r.target {
                out.push_str(&format!(" ({})", r.session));
            }
            out.push_str(" ==\n");
            match &r.error {
                Some(e) => out.push_str(&format!("error: {e}\n")),
                None => {
                    let body = output_with_meta(
                        r.text.as_deref().unwrap_or(""),
                        r.meta.as_deref().unwrap_or(""),
                    );
                    out.push_str(if body.is_empty() { "ok" } else { &body });
                    out.push('\n');
                }
            }
        }
        out.truncate(out.trim_end().len());
        out
    }
}

impl Plain for super::ListResult {}
impl Plain for super::OpenResult {}
impl Plain for super::StatusResult {}
impl Plain for super::Done {}
impl Plain for super::layout::CreateLayoutResult {}
impl Plain for super::team::AgentsResult {}
impl Plain for super::team::TeamsResult {}
impl Plain for super::team::Ack {}
impl Plain for super::team::LockResult {}
impl Plain for super::team::NotificationsResult {}
impl Plain for super::team::TagResult {}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Small {
        session: String,
    }
    impl Plain for Small {}

    #[derive(Serialize)]
    struct Output {
        output: String,
        meta: String,
    }
    impl Plain for Output {
        fn plain(&self) -> String {
            output_with_meta(&self.output, &self.meta)
        }
    }

    fn text_and_structured(r: CallToolResponse) -> (String, serde_json::Value) {
        let CallToolResponse::Complete(r) = r else {
            panic!("a complete result")
        };
        let text = r.content[0].as_text().expect("text content").text.clone();
        (text, r.structured_content.expect("structured content"))
    }

    #[test]
    fn output_reads_as_printed_and_the_record_stays_typed() {
        let reply = Json(Output {
            output: "line \"one\"\n\tline two\n".into(),
            meta: "[lines 1-2 of 2; complete (exit 0)]".into(),
        });
        let (text, value) = text_and_structured(reply.into_call_tool_result().unwrap());
        assert_eq!(
            text,
            "line \"one\"\n\tline two\n[lines 1-2 of 2; complete (exit 0)]"
        );
        assert_eq!(value["output"], "line \"one\"\n\tline two\n");
    }

    #[test]
    fn small_records_read_as_compact_json() {
        let (text, value) = text_and_structured(
            Json(Small {
                session: "build".into(),
            })
            .into_call_tool_result()
            .unwrap(),
        );
        assert_eq!(text, r#"{"session":"build"}"#);
        assert_eq!(value["session"], "build");
    }

    #[test]
    fn empty_output_is_its_meta_line_alone() {
        assert_eq!(output_with_meta("", "[no new output]"), "[no new output]");
        assert_eq!(output_with_meta("x\n\n", ""), "x");
    }
}
