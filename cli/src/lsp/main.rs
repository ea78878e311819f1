//! A Language Server for pysplice recipes, over stdio.
//!
//! ```text
//! cargo build --release --bin pysplice-lsp
//! ```
//! Point an editor's LSP client at `target/release/pysplice-lsp` for Python files.
//! Recipes come from `initializationOptions` (`{"recipes": ["path/to/recipe.toml", ...]}`), or
//! else from a `pysplice.toml` at the workspace root (`recipes = ["...", ...]`). Relative paths
//! are taken from the workspace root; `builtin:sglang-hs-dump` and `builtin:sglang-hs-dump-models`
//! name the SGLang recipes bundled in the program (docs/cli.md says why), none applied unless named.
//!
//! On every open Python file that a recipe concerns (it carries the recipe's markers, or defines
//! one of the definitions its hooks target), each hook gets a diagnostic: information where it
//! applies or is applied, a hint where it is skipped, a warning (with the nearest candidates)
//! where a required target or anchor is missing; the apply is offered as a quick fix of those
//! that it places or updates. Code actions "Apply recipe ID" and "Revert recipe ID" give the
//! verified change as a `WorkspaceEdit`: computed when the action is chosen (`codeAction/resolve`,
//! or the command `pysplice.applyCodeAction` and `workspace/applyEdit`), so that the answer to a
//! code action request after a keystroke only needs the plan the diagnostics made; eagerly for
//! clients that can do neither. `workspace/executeCommand` `pysplice.applyRecipeToWorkspace`
//! `[recipe id]` applies a recipe to every Python file of the workspace it concerns, in one
//! `workspace/applyEdit`; without an id, with several recipes, each file gets the recipe that
//! targets it, and where several target a file (or none targets any) the client is asked first
//! with `window/showMessageRequest` (`lsp/workspace.rs`); `pysplice.listRecipes` lists them.
//! Hovering over a marker line (or a block) shows the hook's summary.
//! Text sync is incremental; positions are UTF-16.
//!
//! Without any configuration the server stays quiet (a log line). Recipe files and
//! `pysplice.toml` are reloaded on `workspace/didChangeWatchedFiles` (the watcher is registered
//! dynamically where the client can); a recipe that does not compile gets its error as a
//! diagnostic in the recipe file itself, also while it is open and being typed. While a Python
//! file does not parse, its last good diagnostics stay.
//!
//! Logs go to stderr. The server never panics on bad input: malformed messages get an error
//! response (requests) or are logged and dropped (notifications). Framing errors (a body that is
//! not JSON or not UTF-8, a bad header, a message over 64 MiB) get a `-32700` response and the
//! session goes on (see `lsp/transport.rs`). The lifecycle is LSP 3.17's (`lsp/lifecycle.rs`):
//! lenient before `initialized`, `-32600` for every request after `shutdown` until `exit`. A
//! request cancelled while it waits in line gets `-32800` without being computed.
//!
//! Plans, edits and the data of code actions belong to a revision of the text that the server
//! numbers itself (with a hash of the text), never to the client's version alone
//! (`lsp/open.rs`). At most 64 recipes are loaded, the configuration's problems come in one
//! message, and a text over the 16 MiB file limit is not planned.

/// `eprintln!` that ignores a standard error that cannot be written: an editor may close the
/// server's stderr, and `eprintln!` would then panic.
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// `println!` for `--version` and `--help`, ignoring a standard output that cannot be written.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

pysplice_programs::program_allocator!();

mod actions;
mod convert;
mod framing;
mod handlers;
mod lifecycle;
mod open;
mod server;
mod transport;
mod workspace;

use std::process::ExitCode;

use lifecycle::{Phase, Step};
use lsp_server::{Connection, ErrorCode, Message, RequestId, Response};
use lsp_types::{
    CodeActionKind, CodeActionOptions, CodeActionProviderCapability, ExecuteCommandOptions, HoverProviderCapability,
    InitializeParams, PositionEncodingKind, ServerCapabilities, TextDocumentSyncCapability, TextDocumentSyncKind,
};

use server::{Server, APPLY_ACTION, APPLY_TO_WORKSPACE};
use workspace::LIST_RECIPES;

/// The program's name, `pysplice-lsp`.
const PROGRAM: &str = env!("CARGO_BIN_NAME");

fn main() -> ExitCode {
    // The server speaks LSP on stdio. `--stdio` is accepted because some clients (VS Code's
    // language client library among them) always pass it.
    match std::env::args().nth(1).as_deref() {
        None | Some("--stdio") => {}
        Some("--version" | "-V") => {
            outln!("{PROGRAM} {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Some("--help" | "-h") => {
            outln!(
                "{PROGRAM} {}: the pysplice language server, over stdio (no arguments; --stdio is accepted).",
                env!("CARGO_PKG_VERSION")
            );
            return ExitCode::SUCCESS;
        }
        Some(other) => {
            errln!("{PROGRAM}: unexpected argument '{other}' (the server speaks LSP on stdio; try --help)");
            return ExitCode::from(2);
        }
    }
    let (connection, io_threads) = transport::stdio();
    let code = serve(&connection);
    drop(connection);
    if let Err(err) = io_threads.join() {
        errln!("pysplice-lsp: {err}");
    }
    code
}

/// Serves the session through its lifecycle (`lsp/lifecycle.rs`) until `exit`: exit code 0 after
/// `shutdown`, 1 for an `exit` without it or the end of input.
fn serve(connection: &Connection) -> ExitCode {
    let mut phase = Phase::Waiting;
    let mut server: Option<Server<'_>> = None;
    let mut queue = Queue::default();
    while let Some(message) = queue.next(connection) {
        match lifecycle::step(phase, message) {
            Step::Initialize(request) => {
                let (new, result) = initialize(connection, request.params);
                send(connection, Message::Response(Response::new_ok(request.id, result)));
                server = Some(new);
                phase = Phase::Initializing;
            }
            Step::Initialized => {
                phase = Phase::Running;
                if let Some(server) = server.as_mut() {
                    server.report_config();
                    server.register_watchers();
                }
            }
            Step::Shutdown(id) => {
                if let Some(server) = server.as_mut() {
                    server.drop_questions();
                }
                send(connection, Message::Response(Response::new_ok(id, ())));
                phase = Phase::ShutDown;
            }
            Step::Serve(message) => {
                if let Some(server) = server.as_mut() {
                    match message {
                        Message::Request(request) if queue.cancelled(&request.id) => {
                            let message = format!("{} was cancelled", request.method);
                            let code = ErrorCode::RequestCanceled as i32;
                            send(
                                connection,
                                Message::Response(Response::new_err(request.id, code, message)),
                            );
                        }
                        Message::Request(request) => server.request(request),
                        Message::Notification(notification) => server.notification(notification),
                        // Answers to our questions, `client/registerCapability` and `workspace/applyEdit`.
                        Message::Response(response) => server.response(response),
                    }
                }
            }
            Step::Refuse(response) => send(connection, Message::Response(response)),
            Step::Drop => {}
            Step::Exit(code) => return ExitCode::from(code),
        }
        if phase != Phase::ShutDown && queue.is_empty(connection) {
            if let Some(server) = server.as_mut() {
                server.publish_dirty();
            }
        }
    }
    // The end of input without `exit`.
    ExitCode::FAILURE
}

/// The messages read but not yet handled, and the requests a `$/cancelRequest` among them (or
/// before them) cancelled: requests are handled one at a time, so a request the client gave up
/// while it waited in line is answered `RequestCancelled` without being computed.
#[derive(Default)]
struct Queue {
    waiting: std::collections::VecDeque<Message>,
    cancelled: std::collections::HashSet<RequestId>,
}

/// The most cancellations remembered (of requests not seen yet, or already answered).
const MAX_CANCELLED: usize = 1024;

impl Queue {
    /// The next message (waiting for one when none is read), `None` at the end of input.
    fn next(&mut self, connection: &Connection) -> Option<Message> {
        if self.waiting.is_empty() {
            let message = connection.receiver.recv().ok()?;
            self.take(message);
        }
        // Take in what else has arrived, to see its cancellations.
        while let Ok(message) = connection.receiver.try_recv() {
            self.take(message);
        }
        self.waiting.pop_front()
    }

    fn take(&mut self, message: Message) {
        if let Message::Notification(n) = &message {
            if n.method == "$/cancelRequest" {
                let id = n
                    .params
                    .get("id")
                    .cloned()
                    .and_then(|id| serde_json::from_value(id).ok());
                if let Some(id) = id {
                    if self.cancelled.len() >= MAX_CANCELLED {
                        self.cancelled.clear();
                    }
                    self.cancelled.insert(id);
                }
            }
        }
        self.waiting.push_back(message);
    }

    /// Whether the request `id` was cancelled (forgetting the cancellation).
    fn cancelled(&mut self, id: &RequestId) -> bool {
        self.cancelled.remove(id)
    }

    fn is_empty(&self, connection: &Connection) -> bool {
        self.waiting.is_empty() && connection.receiver.is_empty()
    }
}

fn send(connection: &Connection, message: Message) {
    if let Err(err) = connection.sender.send(message) {
        errln!("pysplice-lsp: cannot send: {err}");
    }
}

/// The server for an `initialize` request's params, and the answer to it.
fn initialize<'c>(connection: &'c Connection, params: serde_json::Value) -> (Server<'c>, serde_json::Value) {
    let params: InitializeParams = serde_json::from_value(params).unwrap_or_else(|err| {
        errln!("pysplice-lsp: bad initialize params ({err}); using defaults");
        InitializeParams::default()
    });
    let capabilities = ServerCapabilities {
        position_encoding: Some(PositionEncodingKind::UTF16),
        text_document_sync: Some(TextDocumentSyncCapability::Kind(TextDocumentSyncKind::INCREMENTAL)),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        code_action_provider: Some(CodeActionProviderCapability::Options(CodeActionOptions {
            code_action_kinds: Some(vec![CodeActionKind::QUICKFIX, CodeActionKind::REFACTOR_REWRITE]),
            resolve_provider: Some(true),
            ..CodeActionOptions::default()
        })),
        execute_command_provider: Some(ExecuteCommandOptions {
            commands: vec![
                APPLY_TO_WORKSPACE.to_string(),
                APPLY_ACTION.to_string(),
                LIST_RECIPES.to_string(),
            ],
            ..ExecuteCommandOptions::default()
        }),
        ..ServerCapabilities::default()
    };
    let result = serde_json::json!({
        "capabilities": capabilities,
        "serverInfo": { "name": "pysplice-lsp", "version": env!("CARGO_PKG_VERSION") },
    });
    (Server::new(connection, &params), result)
}
