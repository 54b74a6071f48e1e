//! curl -v: the connection, the request line, the response status and the headers that say
//! something about the answer are kept, with the body; the TLS handshake, the transfer
//! progress, the certificate's particulars and routine headers are hidden.

use super::re;
use crate::doc::{Out, Post, Src};
use crate::model::HiddenReason::{Detail, Noise};

re!(
    CHATTER,
    r"^[{}] \[\d+ bytes data\]$|^\* (TLSv[\d.]+ \((IN|OUT)\)|ALPN|using HTTP|Mark bundle|old SSL session|processing:|Connection #\d+ to host .* left intact|Closing connection|Added .* to DNS cache|Hostname .* was found in DNS cache|Re-using existing connection|Found bundle|Expire in|HTTP 1\.[01], assume close| CAfile:| CApath:|Server certificate:| subject:| start date:| expire date:| issuer:| subjectAltName:)|^\s*% Total|^\s*Dload\s+Upload|^\s*\d+\s+[\d.]+[kMG]?\s+\d+\s+[\d.]+[kMG]?\s+\d+\s+[\d.]+[kMG]?\s+\d+\s+\d+\s+[\d:-]+"
);
re!(REQUEST_HEADER, r"^> \S+: |^>\s*$");
re!(
    ROUTINE_HEADER,
    r"(?i)^< (date|server|connection|keep-alive|accept-ranges|etag|last-modified|vary|via|age|strict-transport-security|alt-svc|x-served-by|x-cache|x-cache-hits|x-timer|report-to|nel|cf-ray|x-request-id|expires|pragma):"
);

/// curl with `-v`: declines output without curl's `*`, `>` or `<` lines.
pub(crate) fn curl<'a>(src: &Src<'a>, post: Post) -> Option<Out<'a>> {
    let verbose = src
        .lines
        .iter()
        .any(|l| l.starts_with("> ") || l.starts_with("< ") || l.starts_with("* "));
    if !verbose {
        return None;
    }
    let mut out = Out::new(post);
    for i in 0..src.len() {
        let line = src.line(i);
        if CHATTER.is_match(line) {
            out.hide(src, i, Noise);
        } else if REQUEST_HEADER.is_match(line) || ROUTINE_HEADER.is_match(line) || line == "<" {
            out.hide(src, i, Detail);
        } else {
            out.keep(src, i);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use crate::{reduce, Options};

    #[test]
    fn the_exchange_stays_the_handshake_goes() {
        let raw = "* Connected to localhost (127.0.0.1) port 8443 (#0)\n\
                   * TLSv1.3 (OUT), TLS handshake, Client hello (1):\n} [512 bytes data]\n\
                   *  subject: CN=localhost\n*  start date: Nov 23 15:52:56 2026 GMT\n> GET /missing HTTP/1.1\n> Host: localhost:8443\n>\n\
                   < HTTP/1.0 404 File not found\n< Server: SimpleHTTP/0.6\n\
                   < Content-Type: text/html\n<\n<p>Nothing matches the given URI.</p>\n";
        let r = reduce(
            "curl -vk https://localhost:8443/missing",
            raw.as_bytes(),
            &Options::default(),
        );
        assert_eq!(r.reducer, "curl");
        assert_eq!(
            r.text,
            "* Connected to localhost (127.0.0.1) port 8443 (#0)\n> GET /missing HTTP/1.1\n\
             < HTTP/1.0 404 File not found\n< Content-Type: text/html\n\
             <p>Nothing matches the given URI.</p>"
        );
    }
}
