//! The `pysplice_lsp` server's stdio transport against what a broken or hostile client writes:
//! bodies that are not JSON or not UTF-8, bad headers, absurd `Content-Length`s, and a file
//! nested a million levels deep. Raw bytes go to the real binary's stdin; every answer is read
//! from its stdout. The session must survive each one and end with exit code 0 after
//! `shutdown` + `exit`.

use crate::common;

use std::io::Write;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use common::lsp::frame;
use serde_json::{json, Value};

const TIMEOUT: Duration = Duration::from_secs(60);

struct Server {
    child: Child,
    /// `None` once closed.
    stdin: Option<ChildStdin>,
    incoming: Receiver<Value>,
}

impl Server {
    fn start() -> Server {
        Server::start_with(Stdio::null())
    }

    fn start_with(stderr: Stdio) -> Server {
        let mut server = Server::spawn(stderr);
        server.initialize();
        server.raw(frame(r#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#).as_bytes());
        server
    }

    /// Sends `initialize` (with the bundled recipe) and checks its answer.
    fn initialize(&mut self) {
        self.raw(
            frame(
                &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "capabilities": {}, "initializationOptions": {"recipes": ["builtin:sglang-hs-dump"]}}})
                .to_string(),
            )
            .as_bytes(),
        );
        let init = self.next();
        assert_eq!(init["id"], 0, "{init}");
        assert!(init["result"]["capabilities"].is_object(), "{init}");
    }

    /// The server started, before `initialize`.
    fn spawn(stderr: Stdio) -> Server {
        let mut child = Command::new(common::program("pysplice_lsp"))
            .current_dir(std::env::temp_dir())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("the server starts");
        // A stderr nobody reads any more: every log line meets a broken pipe.
        drop(child.stderr.take());
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let incoming = common::lsp::incoming(stdout);
        Server {
            child,
            stdin: Some(stdin),
            incoming,
        }
    }

    /// Sends one JSON message.
    fn send(&mut self, message: &Value) {
        self.raw(frame(&message.to_string()).as_bytes());
    }

    /// The next message matching `wanted`, skipping the others.
    fn next_matching(&mut self, mut wanted: impl FnMut(&Value) -> bool) -> Value {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self.incoming.recv_timeout(left).unwrap_or_else(|_| {
                let status = self.child.try_wait();
                panic!("no such message within {TIMEOUT:?}; server status {status:?}")
            });
            if wanted(&message) {
                return message;
            }
        }
    }

    /// Waits for the server's exit and gives its code.
    fn exit_code(mut self) -> Option<i32> {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().expect("the server can be waited for") {
                return status.code();
            }
            assert!(Instant::now() < deadline, "the server did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("the input is open");
        stdin.write_all(bytes).expect("the server reads");
        stdin.flush().expect("the server reads");
    }

    /// The next message from the server, skipping notifications (logs, diagnostics).
    fn next(&mut self) -> Value {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self.incoming.recv_timeout(left).unwrap_or_else(|_| {
                let status = self.child.try_wait();
                panic!("no answer within {TIMEOUT:?}; server status {status:?}")
            });
            if message.get("id").is_some() {
                return message;
            }
        }
    }

    /// Sends a request of an unknown method and checks that its answer comes: the session lives.
    fn still_serving(&mut self, id: i64) {
        self.raw(frame(&json!({"jsonrpc": "2.0", "id": id, "method": "pysplice/ping"}).to_string()).as_bytes());
        let answer = self.next();
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["error"]["code"], -32601, "{answer}");
    }

    fn finish(mut self) {
        self.raw(frame(r#"{"jsonrpc":"2.0","id":"end","method":"shutdown"}"#).as_bytes());
        let answer = self.next();
        assert_eq!(answer["id"], "end", "{answer}");
        self.raw(frame(r#"{"jsonrpc":"2.0","method":"exit"}"#).as_bytes());
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().expect("the server can be waited for") {
                assert_eq!(status.code(), Some(0), "exit after shutdown: {status:?}");
                return;
            }
            assert!(Instant::now() < deadline, "the server did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

#[track_caller]
fn assert_parse_error(answer: &Value, needle: &str) {
    assert_eq!(answer["id"], Value::Null, "{answer}");
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(needle), "`{needle}` not in {answer}");
}

#[test]
fn bad_framing_is_answered_and_the_session_goes_on() {
    let mut server = Server::start();
    let cases: [(&[u8], &str); 7] = [
        (b"Content-Length: 9\r\n\r\n{not json", "Parse error"),
        (b"Content-Length: 4\r\n\r\n\"\xff\xfe\"", "not UTF-8"),
        (
            b"Content-Length: 18446744073709551615\r\n\r\n{}",
            "over the limit of 67108864 bytes",
        ),
        (b"Content-Length: 1000000000000\r\n\r\n{}", "over the limit"),
        (b"Content-Length: -3\r\n\r\n{}", "bad Content-Length"),
        (b"this is no header\r\n\r\n{}", "bad header line"),
        (b"Content-Type: application/json\r\n\r\n{}", "without Content-Length"),
    ];
    for (i, (bytes, needle)) in cases.into_iter().enumerate() {
        server.raw(bytes);
        assert_parse_error(&server.next(), needle);
        server.still_serving(i as i64 + 1);
    }
    // JSON that is no message: Invalid Request.
    for body in [
        "[1, 2]",
        r#"{"jsonrpc":"2.0","id":true}"#,
        r#"{"jsonrpc":"2.0","method":7}"#,
        "3",
    ] {
        server.raw(frame(body).as_bytes());
        let answer = server.next();
        assert_eq!(answer["id"], Value::Null, "{answer}");
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
    }
    server.still_serving(100);
    server.finish();
}

/// An editor that closes the server's stderr: logging meets a broken pipe, which must not end
/// the session (`eprintln!` panics there).
#[test]
fn regression_a_closed_stderr_is_no_crash() {
    let mut server = Server::start_with(Stdio::piped());
    for (i, body) in [
        r#"{"jsonrpc":"2.0","method":"textDocument/didOpen","params":7}"#,
        r#"{"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{}}}"#,
    ]
    .into_iter()
    .enumerate()
    {
        server.raw(frame(body).as_bytes());
        server.still_serving(i as i64 + 1);
    }
    server.raw(b"Content-Length: 9\r\n\r\n{not json");
    assert_parse_error(&server.next(), "Parse error");
    server.still_serving(10);
    server.finish();
}

#[test]
fn a_million_deep_file_is_no_crash() {
    let mut server = Server::start();
    let dir = std::env::temp_dir();
    let uri = format!("file://{}/deep.py", dir.display());
    for (i, text) in [
        format!("Z = {}1\n", "-".repeat(1_000_000)),
        format!("Z = a{}\n", ".b".repeat(1_000_000)),
        format!("Z = {}1{}\n", "(".repeat(1_000_000), ")".repeat(1_000_000)),
        "x = 'a\0b'\n".to_string(),
    ]
    .into_iter()
    .enumerate()
    {
        let open = json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": text}}});
        server.raw(frame(&open.to_string()).as_bytes());
        let hover = json!({"jsonrpc": "2.0", "id": 500 + i, "method": "textDocument/hover", "params": {
            "textDocument": {"uri": uri}, "position": {"line": 0, "character": 2}}});
        server.raw(frame(&hover.to_string()).as_bytes());
        let answer = server.next();
        assert_eq!(answer["id"], 500 + i, "{answer}");
        let close =
            json!({"jsonrpc": "2.0", "method": "textDocument/didClose", "params": {"textDocument": {"uri": uri}}});
        server.raw(frame(&close.to_string()).as_bytes());
        server.still_serving(i as i64);
    }
    server.finish();
}

fn request(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

fn open(uri: &str) -> Value {
    notification(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": "x = 1\n"}}),
    )
}

fn hover(id: i64, uri: &str) -> Value {
    request(
        id,
        "textDocument/hover",
        json!({"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}),
    )
}

#[track_caller]
fn assert_error(answer: &Value, id: i64, code: i64) {
    assert_eq!(answer["id"], id, "{answer}");
    assert_eq!(answer["error"]["code"], code, "{answer}");
    assert!(answer.get("result").is_none(), "{answer}");
}

/// Before `initialize`: requests get `ServerNotInitialized`, notifications are dropped (a file
/// opened then is not known later). Between `initialize` and `initialized` everything is served.
/// Regression: a `didOpen` before `initialized` ended the server (exit 1, "expected initialized
/// notification"); a second `initialize` got "method not found".
#[test]
fn regression_the_lifecycle_before_initialized_is_lenient() {
    let mut server = Server::spawn(Stdio::null());
    let dir = std::env::temp_dir();
    let (early, opened) = (
        format!("file://{}/early.py", dir.display()),
        format!("file://{}/opened.py", dir.display()),
    );
    server.send(&hover(1, &early));
    assert_error(&server.next(), 1, -32002);
    server.send(&request(2, "shutdown", Value::Null));
    assert_error(&server.next(), 2, -32002);
    server.send(&open(&early));
    server.send(&notification("textDocument/didChange", json!({"nonsense": 1})));
    server.initialize();
    // Before `initialized`: a file opened now is served.
    server.send(&open(&opened));
    let published = server.next_matching(|m| m["method"] == "textDocument/publishDiagnostics");
    assert_eq!(published["params"]["uri"], opened.as_str(), "{published}");
    server.send(&request(3, "initialize", json!({"capabilities": {}})));
    assert_error(&server.next(), 3, -32600);
    server.send(&hover(4, &opened));
    let answer = server.next();
    assert_eq!(answer["id"], 4, "{answer}");
    assert!(answer.get("error").is_none(), "{answer}");
    server.send(&notification("initialized", json!({})));
    server.send(&notification("initialized", json!({})));
    server.still_serving(5);
    // The file sent before `initialize` was dropped: closing it publishes nothing, and the next
    // message is the answer to the ping.
    server.send(&notification(
        "textDocument/didClose",
        json!({"textDocument": {"uri": early}}),
    ));
    server.send(&request(6, "pysplice/ping", Value::Null));
    let mut seen = Vec::new();
    let answer = server.next_matching(|m| {
        seen.push(m.clone());
        m["id"] == 6
    });
    assert_error(&answer, 6, -32601);
    let about_early: Vec<&Value> = seen.iter().filter(|m| m["params"]["uri"] == early.as_str()).collect();
    assert!(about_early.is_empty(), "{about_early:?}");
    server.finish();
}

/// After `shutdown`: every request gets `InvalidRequest`, notifications are dropped, and the
/// server reads on until `exit`, then exits 0. Regression: a request after `shutdown` got no
/// answer and the server exited 1.
#[test]
fn regression_after_shutdown_requests_are_refused_until_exit() {
    let mut server = Server::start();
    let uri = format!("file://{}/late.py", std::env::temp_dir().display());
    server.send(&request(1, "shutdown", Value::Null));
    let answer = server.next();
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(answer["result"], Value::Null, "{answer}");
    server.send(&hover(2, &uri));
    assert_error(&server.next(), 2, -32600);
    server.send(&open(&uri));
    server.send(&request(3, "shutdown", Value::Null));
    assert_error(&server.next(), 3, -32600);
    server.send(&request(4, "pysplice/ping", Value::Null));
    assert_error(&server.next(), 4, -32600);
    server.raw(b"Content-Length: 9\r\n\r\n{not json");
    assert_parse_error(&server.next(), "Parse error");
    server.send(&notification("exit", Value::Null));
    assert_eq!(server.exit_code(), Some(0));
}

/// `exit` without `shutdown` (before or after `initialize`) and the end of input exit 1.
#[test]
fn exit_without_shutdown_is_exit_code_1() {
    let mut server = Server::spawn(Stdio::null());
    server.send(&notification("exit", Value::Null));
    assert_eq!(server.exit_code(), Some(1));
    let mut server = Server::start();
    server.still_serving(1);
    server.send(&notification("exit", Value::Null));
    assert_eq!(server.exit_code(), Some(1));
    let mut server = Server::start();
    server.still_serving(1);
    server.stdin = None;
    assert_eq!(server.exit_code(), Some(1));
}

/// Regression: a Python file over the library's size limit (16 MiB) was parsed and planned
/// anyway, at every keystroke, blocking the server for a minute (debug build) while the
/// command-line programs refuse to read such a file. It now gets one note per recipe, at once.
#[test]
fn regression_a_file_over_the_size_limit_is_not_parsed() {
    let mut server = Server::start();
    let uri = format!("file://{}/huge.py", std::env::temp_dir().display());
    let text = format!(
        "class DeepseekV2ForCausalLM:\n    def forward(self):\n        pass\n{}",
        "x = 1\n".repeat(3_000_000)
    );
    let start = Instant::now();
    server.send(&notification(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}),
    ));
    let published = server.next_matching(|m| m["method"] == "textDocument/publishDiagnostics");
    assert!(start.elapsed() < Duration::from_secs(10), "{:?}", start.elapsed());
    let diagnostics = published["params"]["diagnostics"].as_array().unwrap();
    assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
    let expected = format!(
        "pysplice sglang-hs-dump: the file has {} bytes, more than the limit of 16777216 bytes: not checked",
        text.len()
    );
    assert_eq!(diagnostics[0]["message"], expected.as_str());
    server.send(&request(
        1,
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri},
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
            "context": {"diagnostics": []}}),
    ));
    let answer = server.next();
    assert_eq!(answer["result"], json!([]), "{answer}");
    assert!(start.elapsed() < Duration::from_secs(10), "{:?}", start.elapsed());
    server.finish();
}

/// A request cancelled (`$/cancelRequest`) while it waits behind other work is answered
/// `RequestCancelled` and not computed.
#[test]
fn a_cancelled_request_waiting_in_line_is_not_computed() {
    let mut server = Server::start();
    let uri = format!("file://{}/busy.py", std::env::temp_dir().display());
    // One write: while the server takes in the opened file, the rest of the burst arrives, so the
    // cancellation is known when the hover's turn comes.
    let text = format!(
        "class DeepseekV2ForCausalLM:\n    def forward(self):\n        pass\n{}",
        "x = 1\n".repeat(150_000)
    );
    let open = notification(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}),
    );
    let mut burst = frame(&open.to_string());
    burst += &frame(&hover(7, &uri).to_string());
    burst += &frame(&notification("$/cancelRequest", json!({"id": 7})).to_string());
    burst += &frame(&request(8, "pysplice/ping", Value::Null).to_string());
    server.raw(burst.as_bytes());
    assert_error(&server.next(), 7, -32800);
    assert_error(&server.next(), 8, -32601);
    // A cancellation after the answer changes nothing.
    server.send(&hover(9, &uri));
    let answer = server.next();
    assert_eq!(answer["id"], 9, "{answer}");
    assert!(answer.get("error").is_none(), "{answer}");
    server.send(&notification("$/cancelRequest", json!({"id": 9})));
    server.still_serving(10);
    server.finish();
}
