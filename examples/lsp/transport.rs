//! The server's stdio transport: `Content-Length` framing that survives what a broken or hostile
//! client sends.
//!
//! Messages are read here rather than by `lsp_server::Connection::stdio`, whose reader ends the
//! session on the first malformed message and trusts `Content-Length` for its allocation (a
//! huge one panics or aborts). Here:
//! * a body that is not JSON, or not UTF-8, gets a `-32700 Parse error` response with `id: null`;
//!   JSON that is not a message gets `-32600 Invalid Request` (with its id when it has one);
//! * a header block without a usable `Content-Length` (missing, not a number, a line without
//!   `:`, a line over 8 KiB) or announcing more than [`MAX_MESSAGE`] bytes gets `-32700` too, and
//!   the reader skips ahead to the next `Content-Length:` header;
//! * the session goes on in every case, until end of input or an `exit` notification.

use std::io::{self, Read, Write};
use std::thread::{self, JoinHandle};

use lsp_server::{Connection, Message};
use serde_json::{json, Value};

/// The largest message body accepted: 64 MiB, far above any source file an editor sends.
pub const MAX_MESSAGE: usize = 64 << 20;
/// The longest header line accepted.
const MAX_HEADER_LINE: usize = 8 << 10;
const HEADER: &[u8] = b"content-length:";

/// JSON-RPC's code for a message that is not JSON.
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's code for JSON that is not a request, notification or response.
const INVALID_REQUEST: i64 = -32600;

/// The reader and writer threads of [`stdio`].
pub struct Threads {
    reader: JoinHandle<()>,
    writer: JoinHandle<io::Result<()>>,
}

impl Threads {
    /// Waits for the writer to send everything the server produced (the server's `Connection`
    /// must be dropped first), and for the reader if it has stopped (it stops after `exit`;
    /// otherwise it may be waiting on input that never comes).
    pub fn join(self) -> io::Result<()> {
        if self.reader.is_finished() {
            self.reader
                .join()
                .map_err(|_| io::Error::other("the reader thread panicked"))?;
        }
        self.writer
            .join()
            .map_err(|_| io::Error::other("the writer thread panicked"))?
    }
}

/// A connection over stdin and stdout with the robust framing of this module.
pub fn stdio() -> (Connection, Threads) {
    let (server, client) = Connection::memory();
    let Connection {
        sender: to_server,
        receiver: from_server,
    } = client;
    let reader = thread::spawn(move || {
        let stdin = io::stdin();
        read_messages(
            &mut stdin.lock(),
            &mut |message| to_server.send(message).is_ok(),
            &mut |reply| write_raw(&mut io::stdout().lock(), &reply),
        );
    });
    let writer = thread::spawn(move || {
        for message in from_server {
            let mut out = io::stdout().lock();
            message.write(&mut out)?;
            out.flush()?;
        }
        Ok(())
    });
    (server, Threads { reader, writer })
}

/// Writes one framed JSON value; failures mean the client is gone, which the writer notices.
fn write_raw(out: &mut impl Write, value: &Value) {
    let body = value.to_string();
    let _ = write!(out, "Content-Length: {}\r\n\r\n{body}", body.len()).and_then(|()| out.flush());
}

/// Reads messages from `input` until its end or an `exit` notification, handing each to
/// `deliver` (which returns false once the server is gone) and each error response to `reply`.
pub fn read_messages(input: &mut impl Read, deliver: &mut dyn FnMut(Message) -> bool, reply: &mut dyn FnMut(Value)) {
    let mut framer = Framer::new(input);
    loop {
        match framer.next_body() {
            Ok(None) => return,
            Ok(Some(body)) => match decode(&body) {
                Ok(message) => {
                    let exit = matches!(&message, Message::Notification(n) if n.method == "exit");
                    if !deliver(message) || exit {
                        return;
                    }
                }
                Err(error) => reply(error),
            },
            Err(Bad::Io) => return,
            Err(Bad::Frame(message)) => {
                reply(error_response(Value::Null, PARSE_ERROR, &message));
                match framer.skip_to_header() {
                    Ok(true) => {}
                    Ok(false) | Err(_) => return,
                }
            }
        }
    }
}

/// A JSON-RPC error response.
fn error_response(id: Value, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

/// The message in `body`, or the error response it deserves.
fn decode(body: &[u8]) -> Result<Message, Value> {
    let text = std::str::from_utf8(body).map_err(|err| {
        error_response(
            Value::Null,
            PARSE_ERROR,
            &format!("Parse error: the message is not UTF-8 ({err})"),
        )
    })?;
    let value: Value = serde_json::from_str(text)
        .map_err(|err| error_response(Value::Null, PARSE_ERROR, &format!("Parse error: {err}")))?;
    if !value.is_object() {
        // Batches are not part of LSP; serde would read an array as a positional response.
        return Err(error_response(
            Value::Null,
            INVALID_REQUEST,
            "Invalid Request: not a JSON object",
        ));
    }
    let id = match value.get("id") {
        Some(id @ (Value::Number(_) | Value::String(_))) => id.clone(),
        _ => Value::Null,
    };
    serde_json::from_value(value).map_err(|err| error_response(id, INVALID_REQUEST, &format!("Invalid Request: {err}")))
}

/// Why a message could not be framed.
enum Bad {
    /// Input failed or ended inside a message: nothing more to read.
    Io,
    /// The header block is unusable; the message says why.
    Frame(String),
}

/// A buffered reader over the input that can look ahead for the next header.
struct Framer<'r, R: Read> {
    input: &'r mut R,
    buf: Vec<u8>,
    start: usize,
    eof: bool,
}

impl<'r, R: Read> Framer<'r, R> {
    fn new(input: &'r mut R) -> Framer<'r, R> {
        Framer {
            input,
            buf: Vec::new(),
            start: 0,
            eof: false,
        }
    }

    fn buffered(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    /// Reads more input; false at its end.
    fn fill(&mut self) -> io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        if self.start > 0 && self.start >= self.buf.len() / 2 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        let mut chunk = [0; 64 << 10];
        loop {
            match self.input.read(&mut chunk) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.buf.extend_from_slice(&chunk[..n]);
                    return Ok(true);
                }
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err),
            }
        }
    }

    /// The next header line without its line break; `None` at the end of input.
    fn line(&mut self) -> Result<Option<Vec<u8>>, Bad> {
        loop {
            if let Some(end) = self.buffered().iter().position(|&b| b == b'\n') {
                if end > MAX_HEADER_LINE {
                    return Err(Bad::Frame(format!("a header line is over {MAX_HEADER_LINE} bytes")));
                }
                let mut line = self.buffered()[..end].to_vec();
                self.start += end + 1;
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Ok(Some(line));
            }
            if self.buffered().len() > MAX_HEADER_LINE {
                // Leave the long line for `skip_to_header` to pass over.
                return Err(Bad::Frame(format!("a header line is over {MAX_HEADER_LINE} bytes")));
            }
            if !self.fill().map_err(|_| Bad::Io)? {
                return Ok(None);
            }
        }
    }

    /// The body of the next message; `None` at the end of input between messages.
    fn next_body(&mut self) -> Result<Option<Vec<u8>>, Bad> {
        let mut length = None;
        let mut first = true;
        loop {
            let Some(line) = self.line()? else {
                return if first { Ok(None) } else { Err(Bad::Io) };
            };
            if line.is_empty() {
                if first {
                    // Blank lines between messages are harmless.
                    continue;
                }
                break;
            }
            first = false;
            let text = String::from_utf8_lossy(&line);
            let Some((name, value)) = text.split_once(':') else {
                return Err(Bad::Frame(format!("Parse error: bad header line `{}`", clip(&text))));
            };
            if name.trim().eq_ignore_ascii_case("content-length") {
                let value = value.trim();
                let n: u64 = value
                    .parse()
                    .map_err(|_| Bad::Frame(format!("Parse error: bad Content-Length `{}`", clip(value))))?;
                if n > MAX_MESSAGE as u64 {
                    return Err(Bad::Frame(format!(
                        "Parse error: a message of {n} bytes is over the limit of {MAX_MESSAGE} bytes"
                    )));
                }
                length = usize::try_from(n).ok();
            }
        }
        let Some(length) = length else {
            return Err(Bad::Frame("Parse error: a message without Content-Length".to_string()));
        };
        while self.buffered().len() < length {
            if !self.fill().map_err(|_| Bad::Io)? {
                return Err(Bad::Io);
            }
        }
        let body = self.buffered()[..length].to_vec();
        self.start += length;
        Ok(Some(body))
    }

    /// Skips input up to the next `Content-Length:` (any case); false at the end of input.
    fn skip_to_header(&mut self) -> io::Result<bool> {
        loop {
            let found = self
                .buffered()
                .windows(HEADER.len())
                .position(|window| window.eq_ignore_ascii_case(HEADER));
            if let Some(at) = found {
                self.start += at;
                return Ok(true);
            }
            // Keep a tail that may hold the start of a header cut by the read.
            self.start = self.buf.len() - self.buffered().len().min(HEADER.len() - 1);
            if !self.fill()? {
                return Ok(false);
            }
        }
    }
}

/// At most 80 characters of a header, for messages.
fn clip(text: &str) -> String {
    text.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(body: &str) -> String {
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    }

    /// Methods of the messages delivered and codes of the errors answered, in order.
    fn run(input: &[u8]) -> Vec<String> {
        let mut seen = Vec::new();
        let events = std::cell::RefCell::new(&mut seen);
        read_messages(
            &mut &input[..],
            &mut |message| {
                let name = match message {
                    Message::Request(r) => r.method,
                    Message::Notification(n) => n.method,
                    Message::Response(r) => format!("response {:?}", r.id),
                };
                events.borrow_mut().push(name);
                true
            },
            &mut |reply| {
                events
                    .borrow_mut()
                    .push(format!("error {} id {}", reply["error"]["code"], reply["id"]))
            },
        );
        seen
    }

    const PING: &str = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;

    #[test]
    fn bad_messages_are_answered_and_reading_goes_on() {
        let mut input = String::new();
        input += &frame("{not json");
        input += &frame(PING);
        input += "Content-Length: 18446744073709551615\r\n\r\n{}";
        input += &frame(PING);
        input += "Content-Length: 1000000000000\r\n\r\n";
        input += &frame(PING);
        input += "Content-Length: x\r\n\r\n{}";
        input += &frame(PING);
        input += "Garbage without colon\r\n\r\n";
        input += &frame(r#"{"jsonrpc":"2.0","id":7,"result":1,"method":3}"#);
        input += &frame(r#"{"id":"a","method":5}"#);
        input += &frame(r#"{"jsonrpc":"2.0","method":5}"#);
        input += &frame("[1, 2]");
        input += "Content-Type: x\r\n\r\n{}";
        input += &frame(r#"{"jsonrpc":"2.0","method":"exit"}"#);
        input += &frame(PING);
        let mut bytes = input.into_bytes();
        bytes.splice(
            0..0,
            frame("\u{1}")
                .into_bytes()
                .into_iter()
                .map(|b| if b == 1 { 0xff } else { b }),
        );
        assert_eq!(
            run(&bytes),
            [
                "error -32700 id null",
                "error -32700 id null",
                "ping",
                "error -32700 id null",
                "ping",
                "error -32700 id null",
                "ping",
                "error -32700 id null",
                "ping",
                "error -32700 id null",
                "response RequestId(I32(7))",
                // Without `result` or `error`, a response to request "a": ignored by the server.
                "response RequestId(String(\"a\"))",
                "error -32600 id null",
                "error -32600 id null",
                "error -32700 id null",
                "exit",
            ]
        );
    }

    #[test]
    fn a_long_header_line_is_skipped() {
        let mut input = format!("X-Junk: {}\r\n\r\n", "y".repeat(1 << 20));
        input += &frame(PING);
        assert_eq!(run(input.as_bytes()), ["error -32700 id null", "ping"]);
        assert_eq!(run(b"Content-Length: 100\r\n\r\n{}"), Vec::<String>::new());
    }
}
