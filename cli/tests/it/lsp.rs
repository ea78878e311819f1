//! Drives the `pysplice_lsp` example server over stdio as an editor would: initialize with a
//! recipe, open a file, edit it incrementally, apply the recipe through a code action, hover
//! over a marker, revert, shut down. Every read is bounded by a timeout.
//!
//! `cargo test` builds the examples first; with `cargo test --test lsp` alone, build the server
//! with `cargo build --example pysplice_lsp` beforehand.

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use pysplice::{Recipe, SourceFile};
use serde_json::{json, Value};

const TIMEOUT: Duration = Duration::from_secs(20);

const RECIPE: &str = r#"
[recipe]
id = "demo"
summary = "Count forward calls"

[[hook]]
id = "imports"
summary = "Added the os import"
ensure-imports = ["os"]

[[hook]]
id = "count"
summary = "Counted calls of Model.forward"
in = "Model.forward"
at = "start"
code = "self.calls = getattr(self, 'calls', 0) + 1"

[[hook]]
id = "absent"
summary = "An optional hook whose target is missing"
in = "Missing.method"
at = "end"
optional = true
code = "pass"
"#;

const BROKEN: &str = r#"
[recipe]
id = "typo"
summary = "A recipe with a misspelled target"

[[hook]]
id = "init"
summary = "Marked init"
in = "Model.__init__"
at = "end"
code = "self.marked = True"

[[hook]]
id = "fwd"
summary = "Misspelled forward"
in = "Model.forwrd"
at = "end"
code = "pass"
"#;

const PYTHON: &str = "# Model 😀 with émoji\r\nclass Model:\r\n    def __init__(self):\r\n        self.s = \"😀\"; self.t = 1\r\n\r\n    def forward(self, x):\r\n        return x\r\n";

/// The example server's binary (built if needed).
fn server_binary() -> PathBuf {
    common::program("pysplice_lsp")
}

pub(crate) struct Client {
    child: Child,
    stdin: ChildStdin,
    incoming: Receiver<Value>,
    next_id: i64,
    /// Notifications read while waiting for something else.
    pub(crate) backlog: Vec<Value>,
}

impl Client {
    pub(crate) fn start(dir: &Path) -> Client {
        let mut child = Command::new(server_binary())
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the server starts");
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let incoming = common::lsp::incoming(stdout);
        Client {
            child,
            stdin,
            incoming,
            next_id: 1,
            backlog: Vec::new(),
        }
    }

    pub(crate) fn send(&mut self, message: &Value) {
        let body = message.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).expect("the server reads");
        self.stdin.flush().expect("the server reads");
    }

    pub(crate) fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and waits for its response (`result` or `error` object).
    pub(crate) fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.wait_for(|m| m.get("id") == Some(&json!(id)) && m.get("method").is_none())
    }

    /// The next message matching `wanted`, keeping the others; fails after [`TIMEOUT`].
    pub(crate) fn wait_for(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.backlog.iter().position(&wanted) {
            return self.backlog.remove(i);
        }
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self
                .incoming
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no matching message within {TIMEOUT:?}; seen: {:#?}", self.backlog));
            if wanted(&message) {
                return message;
            }
            self.backlog.push(message);
        }
    }

    /// The next diagnostics published for `uri` at `version`.
    fn diagnostics(&mut self, uri: &str, version: i64) -> Vec<Value> {
        let message = self.wait_for(|m| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == uri
                && m["params"]["version"] == version
        });
        message["params"]["diagnostics"].as_array().cloned().unwrap_or_default()
    }

    pub(crate) fn wait_exit(&mut self) -> std::process::ExitStatus {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().expect("the server can be waited for") {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the server did not exit within {TIMEOUT:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Byte offset of an LSP position (UTF-16 characters; lines on `\n`, `\r\n`, `\r`), computed
/// independently of the library.
fn offset_of(text: &str, line: u64, character: u64) -> usize {
    let mut at_line = 0;
    let mut units = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if at_line == line {
            if c == '\n' || c == '\r' || units >= character {
                return i;
            }
            units += c.len_utf16() as u64;
            continue;
        }
        if c == '\n' || c == '\r' {
            if c == '\r' && chars.peek().map(|&(_, n)| n) == Some('\n') {
                chars.next();
            }
            at_line += 1;
        }
    }
    text.len()
}

fn position_offset(text: &str, position: &Value) -> usize {
    let n = |key: &str| position[key].as_u64().expect("a position field");
    offset_of(text, n("line"), n("character"))
}

/// Applies LSP `TextEdit`s (all relative to `text`) the way a client does.
pub(crate) fn apply_text_edits(text: &str, edits: &[Value]) -> String {
    let mut spans: Vec<(usize, usize, &str)> = edits
        .iter()
        .map(|e| {
            let start = position_offset(text, &e["range"]["start"]);
            let end = position_offset(text, &e["range"]["end"]);
            (start, end, e["newText"].as_str().expect("newText"))
        })
        .collect();
    spans.sort_by_key(|&(start, end, _)| (start, end));
    let mut out = String::new();
    let mut at = 0;
    for (start, end, new_text) in spans {
        assert!(at <= start && start <= end, "overlapping edits: {edits:?}");
        out.push_str(&text[at..start]);
        out.push_str(new_text);
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

/// The edits of a code action's `WorkspaceEdit` for `uri`, checking the document version.
fn action_edits(action: &Value, uri: &str, version: i64) -> Vec<Value> {
    let changes = action["edit"]["documentChanges"].as_array().expect("documentChanges");
    assert_eq!(changes.len(), 1, "{action:#}");
    assert_eq!(changes[0]["textDocument"]["uri"], uri);
    assert_eq!(changes[0]["textDocument"]["version"], version);
    changes[0]["edits"].as_array().cloned().expect("edits")
}

fn find_action<'a>(actions: &'a Value, title: &str) -> &'a Value {
    actions
        .as_array()
        .and_then(|list| list.iter().find(|a| a["title"] == title))
        .unwrap_or_else(|| panic!("no code action `{title}` in {actions:#}"))
}

/// Sends `edits` as incremental changes (last first, so earlier positions stay valid).
fn did_change(client: &mut Client, uri: &str, version: i64, edits: &[Value]) {
    let mut sorted = edits.to_vec();
    sorted.sort_by_key(|e| {
        let p = &e["range"]["start"];
        (p["line"].as_u64(), p["character"].as_u64())
    });
    let changes: Vec<Value> = sorted
        .iter()
        .rev()
        .map(|e| json!({"range": e["range"], "text": e["newText"]}))
        .collect();
    client.notify(
        "textDocument/didChange",
        json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": changes}),
    );
}

pub(crate) fn temp_dir() -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!("pysplice-lsp-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}

#[test]
fn editor_session_applies_hovers_and_reverts() {
    let dir = temp_dir();
    std::fs::write(dir.join("recipe.toml"), RECIPE).unwrap();
    std::fs::write(dir.join("broken.toml"), BROKEN).unwrap();
    std::fs::write(dir.join("m.py"), PYTHON).unwrap();
    let root = format!("file://{}", dir.display());
    let uri = format!("{root}/m.py");
    let recipe = Recipe::from_toml("recipe.toml", RECIPE).unwrap();

    let mut client = Client::start(&dir);
    let init = client.request(
        "initialize",
        json!({
            "processId": null,
            "rootUri": root,
            "capabilities": {"workspace": {"workspaceEdit": {"documentChanges": true}}},
            "initializationOptions": {"recipes": ["recipe.toml", "broken.toml"]},
        }),
    );
    let capabilities = &init["result"]["capabilities"];
    assert_eq!(capabilities["textDocumentSync"], 2, "incremental sync: {init:#}");
    assert_eq!(capabilities["hoverProvider"], true);
    client.notify("initialized", json!({}));

    // Open: one diagnostic per hook of each recipe.
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": PYTHON}}),
    );
    let diagnostics = client.diagnostics(&uri, 1);
    let by_code = |diagnostics: &[Value], code: &str| -> Value {
        diagnostics
            .iter()
            .find(|d| d["code"] == code)
            .cloned()
            .unwrap_or_else(|| panic!("no diagnostic {code} in {diagnostics:#?}"))
    };
    assert_eq!(diagnostics.len(), 5, "{diagnostics:#?}");
    let count = by_code(&diagnostics, "demo/count");
    assert_eq!(count["severity"], 3, "information: {count:#}");
    assert_eq!(count["range"]["start"]["line"], 5, "on `def forward`: {count:#}");
    assert!(
        count["message"].as_str().unwrap().contains("can be applied"),
        "{count:#}"
    );
    assert_eq!(
        by_code(&diagnostics, "demo/absent")["severity"],
        4,
        "hint for a skipped hook"
    );
    let typo = by_code(&diagnostics, "typo/fwd");
    assert_eq!(typo["severity"], 2, "warning: {typo:#}");
    assert!(
        typo["message"]
            .as_str()
            .unwrap()
            .contains("did you mean `Model.forward`?"),
        "{typo:#}"
    );

    // An incremental edit after the emoji on line 3: `1` -> `22` (UTF-16 column 28, not byte 30).
    let mut text = PYTHON.to_string();
    let line3 = "        self.s = \"😀\"; self.t = 1";
    let character = line3.encode_utf16().count() as u64 - 1;
    let at = offset_of(&text, 3, character);
    assert_eq!(&text[at..=at], "1");
    text.replace_range(at..=at, "22");
    client.notify(
        "textDocument/didChange",
        json!({
            "textDocument": {"uri": uri, "version": 2},
            "contentChanges": [{
                "range": {"start": {"line": 3, "character": character}, "end": {"line": 3, "character": character + 1}},
                "text": "22",
            }],
        }),
    );
    assert_eq!(client.diagnostics(&uri, 2).len(), 5);

    // Apply through the code action; the edit gives exactly what the library's apply gives.
    let actions = client.request(
        "textDocument/codeAction",
        json!({
            "textDocument": {"uri": uri},
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
            "context": {"diagnostics": []},
        }),
    );
    let actions = &actions["result"];
    let apply = find_action(actions, "Apply recipe demo");
    assert!(
        find_action(actions, "Apply recipe typo").get("disabled").is_some(),
        "a recipe with a failing hook cannot be applied: {actions:#}"
    );
    let edits = action_edits(apply, &uri, 2);
    let patched = apply_text_edits(&text, &edits);
    let expected = pysplice::apply(&recipe, SourceFile::new("m.py", text.as_str())).unwrap();
    assert_eq!(patched, expected.output());
    did_change(&mut client, &uri, 3, &edits);
    let before_apply = std::mem::replace(&mut text, patched);
    let diagnostics = client.diagnostics(&uri, 3);
    let count = by_code(&diagnostics, "demo/count");
    assert!(
        count["message"].as_str().unwrap().contains("applied: Counted calls"),
        "{count:#}"
    );

    // Hover over the marker line of `count`.
    let marker_line = text
        .split("\r\n")
        .position(|l| l.trim_start().starts_with("# >>> pysplice demo/count"))
        .expect("a marker line");
    assert_eq!(count["range"]["start"]["line"], marker_line as u64);
    let hover = client.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri}, "position": {"line": marker_line, "character": 10}}),
    );
    let contents = hover["result"]["contents"]["value"].as_str().unwrap_or_default();
    assert!(contents.contains("Counted calls of Model.forward"), "{hover:#}");
    let class_line = text
        .split("\r\n")
        .position(|l| l == "class Model:")
        .expect("the class line");
    let plain = client.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri}, "position": {"line": class_line, "character": 2}}),
    );
    assert!(plain["result"].is_null(), "no hover off the markers: {plain:#}");

    // Malformed and unknown requests get errors; the server carries on.
    let bad = client.request("textDocument/codeAction", json!({"textDocument": 42}));
    assert!(bad["error"].is_object(), "{bad:#}");
    let unknown = client.request("textDocument/definition", json!({}));
    assert!(unknown["error"].is_object(), "{unknown:#}");
    client.notify("textDocument/didChange", json!({"nonsense": true}));

    // Revert through the code action: the text before the apply, byte for byte.
    let actions = client.request(
        "textDocument/codeAction",
        json!({
            "textDocument": {"uri": uri},
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
            "context": {"diagnostics": [], "only": ["refactor"]},
        }),
    );
    let revert = find_action(&actions["result"], "Revert recipe demo");
    let edits = action_edits(revert, &uri, 3);
    let reverted = apply_text_edits(&text, &edits);
    assert_eq!(reverted, before_apply);
    did_change(&mut client, &uri, 4, &edits);
    let diagnostics = client.diagnostics(&uri, 4);
    assert!(by_code(&diagnostics, "demo/count")["message"]
        .as_str()
        .unwrap()
        .contains("can be applied"));

    // Close clears the diagnostics; shutdown + exit ends with status 0.
    client.notify("textDocument/didClose", json!({"textDocument": {"uri": uri}}));
    let cleared = client.wait_for(|m| {
        m["method"] == "textDocument/publishDiagnostics"
            && m["params"]["uri"] == uri
            && m["params"]["diagnostics"] == json!([])
    });
    assert!(cleared["params"]["diagnostics"].as_array().unwrap().is_empty());
    let shutdown = client.request("shutdown", Value::Null);
    assert!(shutdown.get("error").is_none(), "{shutdown:#}");
    client.notify("exit", Value::Null);
    let status = client.wait_exit();
    assert!(status.success(), "exit status {status:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Regression: plans and edits were cached by the client's version number. A client that keeps
/// version 1 across a change (inserting lines above the class) got, from `codeAction/resolve`,
/// the edit made for the old text, which corrupted the buffer when applied
/// (`# <<< pysplice demo/end   h = x + y`). Now an action offered for other text is refused
/// (`ContentModified`), and an action offered after the change carries the edit of the new text;
/// the same for clients that get the edit in the code action itself.
#[test]
fn regression_a_change_that_keeps_the_version_gets_no_stale_edit() {
    let dir = temp_dir();
    std::fs::write(dir.join("recipe.toml"), RECIPE).unwrap();
    let root = format!("file://{}", dir.display());
    let uri = format!("{root}/m.py");
    let recipe = Recipe::from_toml("recipe.toml", RECIPE).unwrap();
    let old = "class Model:\n    def forward(self, x):\n        return x\n";
    let inserted = "h = x + y\n\n\n";
    let new = format!("{inserted}{old}");
    let expected = pysplice::apply(&recipe, SourceFile::new("m.py", new.as_str()))
        .unwrap()
        .output()
        .to_string();
    let code_actions = |client: &mut Client| {
        let actions = client.request(
            "textDocument/codeAction",
            json!({
                "textDocument": {"uri": uri},
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                "context": {"diagnostics": [], "only": ["refactor"]},
            }),
        );
        find_action(&actions["result"], "Apply recipe demo").clone()
    };
    for resolves in [true, false] {
        let mut client = Client::start(&dir);
        let mut capabilities = json!({"workspace": {"workspaceEdit": {"documentChanges": true}}});
        if resolves {
            capabilities["textDocument"] = json!({"codeAction": {"resolveSupport": {"properties": ["edit"]}}});
        }
        client.request(
            "initialize",
            json!({"rootUri": root, "capabilities": capabilities,
                "initializationOptions": {"recipes": ["recipe.toml"]}}),
        );
        client.notify("initialized", json!({}));
        client.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": old}}),
        );
        client.diagnostics(&uri, 1);
        let offered = code_actions(&mut client);
        // Lines inserted above the class, the version kept at 1.
        client.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": 1}, "contentChanges": [{
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                "text": inserted}]}),
        );
        let diagnostics = client.diagnostics(&uri, 1);
        let count = diagnostics
            .iter()
            .find(|d| d["code"] == "demo/count")
            .expect("the count hook");
        assert_eq!(
            count["range"]["start"]["line"], 4,
            "on the moved `def forward`: {count:#}"
        );
        if resolves {
            assert!(offered.get("edit").is_none(), "{offered:#}");
            let stale = client.request("codeAction/resolve", offered.clone());
            assert_eq!(stale["error"]["code"], -32801, "an edit for the old text: {stale:#}");
            assert!(stale.get("result").is_none(), "{stale:#}");
            // The data names the text: a forged revision or hash is refused too.
            let mut forged = offered.clone();
            forged["data"]["hash"] = json!("0");
            let refused = client.request("codeAction/resolve", forged);
            assert_eq!(refused["error"]["code"], -32801, "{refused:#}");
        }
        let fresh = code_actions(&mut client);
        let action = if resolves {
            let resolved = client.request("codeAction/resolve", fresh);
            resolved["result"].clone()
        } else {
            fresh
        };
        let edits = action_edits(&action, &uri, 1);
        assert_eq!(apply_text_edits(&new, &edits), expected, "resolves: {resolves}");
        let shutdown = client.request("shutdown", Value::Null);
        assert!(shutdown.get("error").is_none(), "{shutdown:#}");
        client.notify("exit", Value::Null);
        assert!(client.wait_exit().success());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn workspace_config_file_names_the_recipes() {
    let dir = temp_dir();
    std::fs::write(dir.join("recipe.toml"), RECIPE).unwrap();
    std::fs::write(dir.join("pysplice.toml"), "recipes = [\"recipe.toml\"]\n").unwrap();
    let root = format!("file://{}", dir.display());
    let uri = format!("{root}/m.py");
    let mut client = Client::start(&dir);
    client.request(
        "initialize",
        json!({"processId": null, "rootUri": root, "capabilities": {}}),
    );
    client.notify("initialized", json!({}));
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "python", "version": 7, "text": PYTHON}}),
    );
    let diagnostics = client.diagnostics(&uri, 7);
    assert_eq!(diagnostics.len(), 3, "{diagnostics:#?}");
    // Without documentChanges support, the edit comes as `changes`.
    let actions = client.request(
        "textDocument/codeAction",
        json!({
            "textDocument": {"uri": uri},
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
            "context": {"diagnostics": []},
        }),
    );
    let apply = find_action(&actions["result"], "Apply recipe demo");
    let edits = apply["edit"]["changes"][&uri]
        .as_array()
        .cloned()
        .expect("changes for the file");
    let recipe = Recipe::from_toml("recipe.toml", RECIPE).unwrap();
    let expected = pysplice::apply(&recipe, SourceFile::new("m.py", PYTHON)).unwrap();
    assert_eq!(apply_text_edits(PYTHON, &edits), expected.output());
    // A bare `exit` (no shutdown) ends with status 1, as the protocol asks.
    client.notify("exit", Value::Null);
    assert_eq!(client.wait_exit().code(), Some(1));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bundled_recipe_on_sglang_deepseek_v2() {
    let path = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .join("target/sglang-corpus/0.5.23/sglang/srt/models/deepseek_v2.py");
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!("skipped: {} is missing (bash scripts/fetch-corpus.sh)", path.display());
        return;
    };
    let dir = temp_dir();
    let root = format!("file://{}", dir.display());
    let uri = format!("{root}/deepseek_v2.py");
    let mut client = Client::start(&dir);
    client.request(
        "initialize",
        json!({
            "processId": null,
            "rootUri": root,
            "capabilities": {"workspace": {"workspaceEdit": {"documentChanges": true}}},
            "initializationOptions": {"recipes": ["builtin:sglang-hs-dump"]},
        }),
    );
    client.notify("initialized", json!({}));
    client.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}),
    );
    let diagnostics = client.diagnostics(&uri, 1);
    assert_eq!(diagnostics.len(), 5, "{diagnostics:#?}");
    assert!(diagnostics.iter().all(|d| d["severity"] == 3), "{diagnostics:#?}");
    let actions = client.request(
        "textDocument/codeAction",
        json!({
            "textDocument": {"uri": uri},
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
            "context": {"diagnostics": []},
        }),
    );
    let edits = action_edits(find_action(&actions["result"], "Apply recipe sglang-hs-dump"), &uri, 1);
    let mut recipe = Recipe::from_toml_with(
        "r.toml",
        pysplice_sglang::recipes::SGLANG_HS_DUMP,
        &pysplice_sglang::recipes::dump_code(),
    )
    .unwrap();
    pysplice_sglang::recipes::stamp(&mut recipe); // the version the bundled recipe writes
    let expected = pysplice::apply(&recipe, SourceFile::new("deepseek_v2.py", text.as_str())).unwrap();
    assert_eq!(apply_text_edits(&text, &edits), expected.output());
    client.request("shutdown", Value::Null);
    client.notify("exit", Value::Null);
    assert!(client.wait_exit().success());
    let _ = std::fs::remove_dir_all(&dir);
}
