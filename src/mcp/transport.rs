//! MCP over stdio, with an answer for every request, however malformed.
//!
//! Messages are lines of JSON. A general-purpose transport drops what it cannot
//! parse, and so leaves the caller waiting forever: a request nested deeper than the
//! JSON parser's recursion limit (a layout `tree` 62 levels deep), or a line over
//! the size limit. This transport reads each line with a bound on its size, measures
//! its nesting before parsing it, and answers what it refuses with a JSON-RPC error
//! for the request's id (found by a shallow scan of the top-level object), saying
//! what was wrong and what to do. Lines that are not JSON at all have no id to
//! answer and are dropped, as the other MCP SDKs do.
//!
//! A big message's buffer is given back after it is handled, so one 10 MB request
//! does not keep 10 MB for the life of the server.

use std::sync::Arc;

use rmcp::model::{ErrorCode, ErrorData, NumberOrString, RequestId};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;

/// The longest message read, in bytes (16 MiB, as rmcp's own transport).
pub const MAX_LINE: usize = 16 << 20;

/// The deepest nesting of arrays and objects a message may have. The deepest a
/// layout of 16 panes needs is about 35; the JSON parser gives up at 128.
pub const MAX_DEPTH: usize = 64;

/// A buffer kept between messages; a bigger one is given back after use.
const KEPT_BUFFER: usize = 256 << 10;

/// Bytes at the start of an oversized line kept to find its id.
const ID_PREFIX: usize = 4096;

/// The stdio transport (see the module docs).
pub struct LineTransport<R, W> {
    read: BufReader<R>,
    line: Vec<u8>,
    /// Set while the rest of an oversized line is skipped; holds its start and size.
    oversized: Option<(Vec<u8>, usize)>,
    write: Arc<Mutex<W>>,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// A transport reading messages from `read` and writing them to `write`.
    pub fn new(read: R, write: W) -> Self {
        LineTransport {
            read: BufReader::with_capacity(64 << 10, read),
            line: Vec::new(),
            oversized: None,
            write: Arc::new(Mutex::new(write)),
        }
    }

    /// Writes `message` on its own (a task of its own, so the write completes even
    /// when `receive` is cancelled, and never interleaves with another message).
    fn answer(&self, message: TxJsonRpcMessage<RoleServer>) {
        let write = self.write.clone();
        tokio::spawn(async move {
            if let Err(e) = write_message(&write, &message).await {
                tracing::warn!(target: "cohort::mcp", "could not answer a refused message: {e}");
            }
        });
    }

    /// Reads until a whole line is in `self.line` (`Some(true)`), an oversized line
    /// has been skipped (`Some(false)`), or the input ended (`None`). Cancel-safe: a
    /// partial line stays in the buffer for the next call.
    async fn read_line(&mut self) -> std::io::Result<Option<bool>> {
        loop {
            let available = self.read.fill_buf().await?;
            if available.is_empty() {
                return Ok(None);
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            if let Some((_, size)) = &mut self.oversized {
                *size += take;
            } else if self.line.len() + take > MAX_LINE {
                let size = self.line.len() + take;
                let mut prefix = std::mem::take(&mut self.line);
                prefix.truncate(ID_PREFIX);
                let room = ID_PREFIX - prefix.len();
                prefix.extend_from_slice(&available[..take.min(room)]);
                self.oversized = Some((prefix, size));
            } else {
                self.line.extend_from_slice(&available[..take]);
            }
            self.read.consume(take);
            if newline.is_some() {
                return Ok(Some(self.oversized.is_none()));
            }
        }
    }
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        async move { write_message(&write, &item).await }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.read_line().await {
                Ok(Some(true)) => {}
                Ok(Some(false)) => {
                    let (prefix, size) = self.oversized.take().unwrap_or_default();
                    tracing::warn!(target: "cohort::mcp", size, "refused a message over the size limit");
                    if let Some(id) = top_level_id(&prefix) {
                        self.answer(refusal(
                            id,
                            format!(
                                "the message is {:.1} MiB, over the {} MiB a message may be: send long text in parts, or write it to a file and pass its path",
                                size as f64 / (1 << 20) as f64,
                                MAX_LINE >> 20
                            ),
                        ));
                    }
                    continue;
                }
                Ok(None) => return None,
                Err(e) => {
                    tracing::error!(target: "cohort::mcp", "reading stdin: {e}");
                    return None;
                }
            }
            let message = self.parse_line();
            if self.line.capacity() > KEPT_BUFFER {
                self.line = Vec::new();
                trim_soon();
            } else {
                self.line.clear();
            }
            if let Some(message) = message {
                return Some(message);
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.write.lock().await.shutdown().await
    }
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// The message in `self.line`, or `None` after answering (or dropping) it.
    fn parse_line(&self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let mut line = self.line.strip_suffix(b"\n").unwrap_or(&self.line);
        line = line.strip_suffix(b"\r").unwrap_or(line);
        line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        let depth = nesting(line);
        if depth > MAX_DEPTH {
            tracing::warn!(target: "cohort::mcp", depth, "refused a message nested too deep");
            if let Some(id) = top_level_id(line) {
                self.answer(refusal(
                    id,
                    format!(
                        "the message nests arrays and objects {depth} levels deep, more than the {MAX_DEPTH} cohort reads: \
                         a layout tree of up to 16 panes needs far fewer; flatten the arguments"
                    ),
                ));
            }
            return None;
        }
        match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line) {
            Ok(message) => Some(message),
            Err(e) => {
                match (e.classify(), top_level_id(line)) {
                    (serde_json::error::Category::Data, Some(id)) => {
                        self.answer(refusal(
                            id,
                            format!("not a JSON-RPC message cohort understands: {e}"),
                        ));
                    }
                    _ => {
                        // Not JSON (or no id to answer): answering could start an
                        // error storm with a peer that echoes; drop it, as the MCP
                        // SDKs do.
                        tracing::warn!(target: "cohort::mcp", "dropped an unreadable message: {e}");
                    }
                }
                None
            }
        }
    }
}

/// A moment after a big message (once its call has had time to finish), gives the
/// memory it took back to the system: glibc keeps freed small blocks in its heap, so
/// one huge argument (a 10 MB pattern parsed into millions of nodes) would otherwise
/// stay resident for the life of the server.
fn trim_soon() {
    use std::sync::atomic::{AtomicBool, Ordering};
    static PENDING: AtomicBool = AtomicBool::new(false);
    if PENDING.swap(true, Ordering::SeqCst) {
        return;
    }
    tokio::spawn(async {
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        PENDING.store(false, Ordering::SeqCst);
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        // SAFETY: malloc_trim only returns free heap memory to the system.
        unsafe {
            libc::malloc_trim(0);
        }
    });
}

async fn write_message<W: AsyncWrite + Unpin>(
    write: &Mutex<W>,
    message: &TxJsonRpcMessage<RoleServer>,
) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(message).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    let mut write = write.lock().await;
    write.write_all(&bytes).await?;
    write.flush().await
}

/// The error answering request `id` with `message` (Invalid Request).
fn refusal(id: RequestId, message: String) -> TxJsonRpcMessage<RoleServer> {
    TxJsonRpcMessage::<RoleServer>::error(
        ErrorData::new(ErrorCode::INVALID_REQUEST, message, None),
        Some(id),
    )
}

/// The deepest nesting of arrays and objects in `json` (strings skipped), in one pass.
pub fn nesting(json: &[u8]) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in json {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// The `id` member of the top-level object, when `json` starts with one that has it
/// before anything unreadable: a number or a string. Reads no deeper than the top
/// level, so it works on messages too deep or too long to parse.
pub fn top_level_id(json: &[u8]) -> Option<RequestId> {
    let mut i = json.iter().position(|b| !b.is_ascii_whitespace())?;
    if json[i] != b'{' {
        return None;
    }
    i += 1;
    let (mut depth, mut key_start) = (1usize, None::<usize>);
    let mut expecting_key = true;
    while i < json.len() {
        match json[i] {
            b'"' => {
                let end = string_end(json, i)?;
                if depth == 1 && expecting_key {
                    key_start = Some(i);
                }
                i = end;
                continue;
            }
            b':' if depth == 1 => {
                let is_id = key_start
                    .map(|k| &json[k..i])
                    .map(|k| k.trim_ascii_end() == b"\"id\"")
                    .unwrap_or(false);
                if is_id {
                    return scalar_id(&json[i + 1..]);
                }
                expecting_key = false;
            }
            b',' if depth == 1 => {
                expecting_key = true;
                key_start = None;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return None;
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The index just past the string starting at `json[start]` (a `"`).
fn string_end(json: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < json.len() {
        match json[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// A request id at the start of `rest` (after the colon).
fn scalar_id(rest: &[u8]) -> Option<RequestId> {
    let start = rest.iter().position(|b| !b.is_ascii_whitespace())?;
    let rest = &rest[start..];
    let end = if rest.first() == Some(&b'"') {
        string_end(rest, 0)?
    } else {
        rest.iter()
            .position(|b| matches!(b, b',' | b'}' | b' ' | b'\n' | b'\r' | b'\t'))
            .unwrap_or(rest.len())
    };
    match serde_json::from_slice::<serde_json::Value>(&rest[..end]).ok()? {
        serde_json::Value::Number(n) => n.as_i64().map(NumberOrString::Number),
        serde_json::Value::String(s) => Some(NumberOrString::String(s.into())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_counts_arrays_and_objects_outside_strings() {
        assert_eq!(nesting(br#"{"a":[1,{"b":2}]}"#), 3);
        assert_eq!(nesting(br#"{"a":"[[[{{{\"["}"#), 1);
        assert_eq!(nesting(b"[[[[]]]]"), 4);
        assert_eq!(nesting(b"42"), 0);
    }

    #[test]
    fn ids_are_found_at_the_top_level_only() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}}"#,
            "[".repeat(500)
        );
        assert_eq!(
            top_level_id(deep.as_bytes()),
            Some(NumberOrString::Number(7))
        );
        assert_eq!(
            top_level_id(br#"{"params":{"id":3},"id":"abc\"d"}"#),
            Some(NumberOrString::String("abc\"d".into()))
        );
        assert_eq!(top_level_id(br#"{"method":"x","params":{"id":1}}"#), None);
        assert_eq!(
            top_level_id(br#"{"id": 12 , "m":1}"#),
            Some(NumberOrString::Number(12))
        );
        assert_eq!(top_level_id(br#"{"id":null}"#), None);
        assert_eq!(top_level_id(b"not json"), None);
        assert_eq!(top_level_id(br#"{"value":"id","x":1}"#), None);
    }

    #[tokio::test]
    async fn refused_messages_are_answered_and_the_next_ones_read() {
        let deep = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{{\"name\":\"x\",\"arguments\":{{\"t\":{}1{}}}}}}}\n",
            "[".repeat(100),
            "]".repeat(100)
        );
        let big = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\",\"params\":{{\"x\":\"{}\"}}}}\n",
            "y".repeat(MAX_LINE)
        );
        let ok = "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\"}\n";
        let input = [deep.as_str(), "garbage\n", big.as_str(), ok].concat();
        let (client, server_out) = tokio::io::duplex(1 << 20);
        let mut transport =
            LineTransport::new(std::io::Cursor::new(input.into_bytes()), server_out);
        let message = transport.receive().await.expect("the ping after them");
        assert!(format!("{message:?}").contains("Number(8)"), "{message:?}");
        drop(transport);
        let mut answers = String::new();
        let mut reader = BufReader::new(client);
        for _ in 0..2 {
            reader.read_line(&mut answers).await.unwrap();
        }
        assert!(
            answers.contains("\"id\":5") && answers.contains("levels deep"),
            "{answers}"
        );
        assert!(
            answers.contains("\"id\":6") && answers.contains("MiB"),
            "{answers}"
        );
    }
}
