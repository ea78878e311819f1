//! The server's stdio transport: `Content-Length` framing that survives what a broken or hostile
//! client sends.
//!
//! Messages are read here rather than by `lsp_server::Connection::stdio`, whose reader ends the
//! session on the first malformed message and trusts `Content-Length` for its allocation (a
//! huge one panics or aborts). Here:
//! * a body that is not JSON, or not UTF-8, gets a `-32700 Parse error` response with `id: null`;
//!   JSON that is not a message gets `-32600 Invalid Request` (with its id when it has one);
//! * a header block without a usable `Content-Length` (missing, not a number, a line without
//!   `:`, a line over 8 KiB) or announcing more than [`MAX_MESSAGE`](crate::framing::MAX_MESSAGE) bytes gets `-32700` too, and
//!   the reader skips ahead to the next `Content-Length:` header;
//! * the session goes on in every case, until end of input or an `exit` notification.
//!
//! The framing itself (headers, bodies, skipping to the next header) is in `framing.rs`.

use std::io::{self, Read, Write};
use std::thread::{self, JoinHandle};

use lsp_server::{Connection, Message};
use serde_json::{json, Value};

use crate::framing::{Bad, Framer};

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
