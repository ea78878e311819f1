//! A Language Server for pysplice recipes, over stdio.
//!
//! ```text
//! cargo build --release --example pysplice_lsp
//! ```
//! Point an editor's LSP client at `target/release/examples/pysplice_lsp` for Python files.
//! Recipes come from `initializationOptions` (`{"recipes": ["path/to/recipe.toml", ...]}`), or
//! else from a `pysplice.toml` at the workspace root (`recipes = ["...", ...]`). Relative paths
//! are taken from the workspace root; `builtin:sglang-hs-dump` names the bundled recipe.
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
//! `workspace/applyEdit`. Hovering over a marker line (or a block) shows the hook's summary.
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
//! session goes on (see `lsp/transport.rs`).

#[path = "lsp/transport.rs"]
mod transport;

use std::collections::{BTreeSet, HashMap};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use lsp_server::{Connection, ErrorCode, Message, Notification, Request, Response};
use lsp_types::notification::{
    DidChangeTextDocument, DidChangeWatchedFiles, DidCloseTextDocument, DidOpenTextDocument, Notification as _,
    PublishDiagnostics, ShowMessage,
};
use lsp_types::request::{CodeActionRequest, CodeActionResolveRequest, ExecuteCommand, HoverRequest, Request as _};
use lsp_types::{
    CodeAction, CodeActionDisabled, CodeActionKind, CodeActionOptions, CodeActionOrCommand, CodeActionParams,
    CodeActionProviderCapability, Diagnostic, DiagnosticSeverity, DidChangeTextDocumentParams,
    DidChangeWatchedFilesParams, DidCloseTextDocumentParams, DidOpenTextDocumentParams, DocumentChanges,
    ExecuteCommandOptions, ExecuteCommandParams, Hover, HoverContents, HoverParams, HoverProviderCapability,
    InitializeParams, MarkupContent, MarkupKind, MessageType, NumberOrString, OneOf,
    OptionalVersionedTextDocumentIdentifier, Position, PositionEncodingKind, PublishDiagnosticsParams, Range,
    ServerCapabilities, ShowMessageParams, TextDocumentEdit, TextDocumentSyncCapability, TextDocumentSyncKind, Uri,
    WorkspaceEdit,
};
use pysplice::document::{Document, DocumentPlan, KeptPlan, TextEdit, Utf16Position, Utf16Range};
use pysplice::{Error, Recipe, Status};

/// The program's name: `pysplice-lsp` when installed, `pysplice_lsp` as an example binary.
const PROGRAM: &str = env!("CARGO_BIN_NAME");

fn main() -> ExitCode {
    // The server speaks LSP on stdio. `--stdio` is accepted because some clients (VS Code's
    // language client library among them) always pass it.
    match std::env::args().nth(1).as_deref() {
        None | Some("--stdio") => {}
        Some("--version" | "-V") => {
            println!("{PROGRAM} {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Some("--help" | "-h") => {
            println!(
                "{PROGRAM} {}: the pysplice language server, over stdio (no arguments; --stdio is accepted).",
                env!("CARGO_PKG_VERSION")
            );
            return ExitCode::SUCCESS;
        }
        Some(other) => {
            eprintln!("{PROGRAM}: unexpected argument '{other}' (the server speaks LSP on stdio; try --help)");
            return ExitCode::from(2);
        }
    }
    let (connection, io_threads) = transport::stdio();
    let code = match serve(&connection) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("pysplice-lsp: {err}");
            ExitCode::FAILURE
        }
    };
    drop(connection);
    if let Err(err) = io_threads.join() {
        eprintln!("pysplice-lsp: {err}");
    }
    code
}

/// Initializes, then serves until `shutdown` + `exit` (exit code 0) or a bare `exit` (1).
fn serve(connection: &Connection) -> Result<ExitCode, Box<dyn std::error::Error>> {
    let (id, params) = connection.initialize_start()?;
    let params: InitializeParams = serde_json::from_value(params).unwrap_or_else(|err| {
        eprintln!("pysplice-lsp: bad initialize params ({err}); using defaults");
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
            commands: vec![APPLY_TO_WORKSPACE.to_string(), APPLY_ACTION.to_string()],
            ..ExecuteCommandOptions::default()
        }),
        ..ServerCapabilities::default()
    };
    connection.initialize_finish(
        id,
        serde_json::json!({
            "capabilities": capabilities,
            "serverInfo": { "name": "pysplice-lsp", "version": env!("CARGO_PKG_VERSION") },
        }),
    )?;
    let mut server = Server::new(connection, &params);
    server.report_config();
    // `initialize_finish` has already consumed the client's `initialized`: register now.
    server.register_watchers();
    while let Ok(message) = connection.receiver.recv() {
        match message {
            Message::Request(request) => {
                if connection.handle_shutdown(&request)? {
                    return Ok(ExitCode::SUCCESS);
                }
                server.request(request);
            }
            Message::Notification(notification) if notification.method == "exit" => {
                // `exit` without `shutdown`: the protocol asks for exit code 1.
                return Ok(ExitCode::FAILURE);
            }
            Message::Notification(notification) => server.notification(notification),
            // Answers to our `client/registerCapability` and `workspace/applyEdit`: nothing to do.
            Message::Response(_) => {}
        }
        if connection.receiver.is_empty() {
            server.publish_dirty();
        }
    }
    Ok(ExitCode::FAILURE)
}

/// Verified edits, or why there are none.
type Edits = Result<Vec<TextEdit>, String>;

/// The command that applies a recipe to every matching file of the workspace.
const APPLY_TO_WORKSPACE: &str = "pysplice.applyRecipeToWorkspace";
/// The command behind a code action for clients that do not resolve code actions: the edit is
/// made when the action is chosen and sent with `workspace/applyEdit`.
const APPLY_ACTION: &str = "pysplice.applyCodeAction";

/// An open Python file.
struct Open {
    uri: Uri,
    doc: Document,
    /// Per recipe id: the plan of `doc` at a version.
    plans: HashMap<String, (i32, Result<DocumentPlan, Failure>)>,
    /// Per recipe id: the parse and plan behind `plans`, for the apply edits of that version.
    kept: HashMap<String, KeptPlan>,
    /// Per (recipe id, revert?): the verified edits at a version (code actions are asked for on
    /// every cursor move; an apply parses twice).
    edits: HashMap<(String, bool), (i32, Edits)>,
    /// Per recipe id: the diagnostics of the last text that parsed, shown while the text does not.
    last_good: HashMap<String, Vec<Diagnostic>>,
}

impl Open {
    fn new(uri: Uri, doc: Document) -> Open {
        Open {
            uri,
            doc,
            plans: HashMap::new(),
            kept: HashMap::new(),
            edits: HashMap::new(),
            last_good: HashMap::new(),
        }
    }

    /// Forgets every plan and edit (the recipes changed).
    fn forget(&mut self) {
        self.plans.clear();
        self.kept.clear();
        self.edits.clear();
        self.last_good.clear();
    }
}

/// Why a plan could not be made, for diagnostics.
#[derive(Clone)]
struct Failure {
    message: String,
    range: Utf16Range,
    severity: Option<DiagnosticSeverity>,
}

/// What the client can do, from its `initialize` capabilities.
struct Client {
    /// `documentChanges` in workspace edits.
    document_changes: bool,
    /// `codeAction/resolve` of the `edit` property.
    resolve_edit: bool,
    /// Dynamic registration of `workspace/didChangeWatchedFiles`.
    watch_dynamic: bool,
    /// `workspace/applyEdit`.
    apply_edit: bool,
}

struct Server<'c> {
    connection: &'c Connection,
    root: Option<PathBuf>,
    options: Option<serde_json::Value>,
    recipes: Vec<Recipe>,
    config: Config,
    open: HashMap<String, Open>,
    /// Open recipe files (TOML), checked as they are typed.
    specs: HashMap<String, (Uri, Document)>,
    dirty: BTreeSet<String>,
    client: Client,
    next_request: i32,
}

impl<'c> Server<'c> {
    fn new(connection: &'c Connection, params: &InitializeParams) -> Server<'c> {
        let root = workspace_root(params);
        let options = params.initialization_options.clone();
        let config = load_recipes(root.as_deref(), options.as_ref());
        let caps = &params.capabilities;
        let client = Client {
            document_changes: caps
                .workspace
                .as_ref()
                .and_then(|w| w.workspace_edit.as_ref())
                .and_then(|e| e.document_changes)
                .unwrap_or(false),
            resolve_edit: caps
                .text_document
                .as_ref()
                .and_then(|t| t.code_action.as_ref())
                .and_then(|c| c.resolve_support.as_ref())
                .is_some_and(|r| r.properties.iter().any(|p| p == "edit")),
            watch_dynamic: caps
                .workspace
                .as_ref()
                .and_then(|w| w.did_change_watched_files.as_ref())
                .and_then(|d| d.dynamic_registration)
                .unwrap_or(false),
            apply_edit: caps.workspace.as_ref().and_then(|w| w.apply_edit).unwrap_or(false),
        };
        Server {
            connection,
            root,
            options,
            recipes: config.recipes.clone(),
            config,
            open: HashMap::new(),
            specs: HashMap::new(),
            dirty: BTreeSet::new(),
            client,
            next_request: 0,
        }
    }

    /// Says what is wrong with the configuration: problems of `pysplice.toml` or the options in a
    /// message, spec errors as diagnostics in the recipe files. Without any configuration the
    /// server stays quiet (a log line only): it is attached to every Python project.
    fn report_config(&mut self) {
        for problem in &self.config.problems {
            self.show(MessageType::WARNING, problem.clone());
        }
        if self.config.unconfigured {
            self.log("no recipe configured (no initializationOptions.recipes, no pysplice.toml): idle".into());
        }
        for (path, error) in &self.config.spec_errors {
            self.log(error.to_string());
            self.publish_spec(path, None, Some(error));
        }
        for path in &self.config.spec_files {
            if !self.config.spec_errors.iter().any(|(p, _)| p == path) {
                self.publish_spec(path, None, None);
            }
        }
    }

    /// Reads the configuration and recipes again (a watched file changed), then re-plans every
    /// open file. Recipe files that are open are checked as typed, not as saved.
    fn reload(&mut self) {
        let old_files = std::mem::take(&mut self.config.spec_files);
        self.config = load_recipes(self.root.as_deref(), self.options.as_ref());
        self.recipes = self.config.recipes.clone();
        for path in old_files {
            if !self.config.spec_files.contains(&path) {
                self.publish_spec(&path, None, None);
            }
        }
        self.report_config();
        for key in self.specs.keys().cloned().collect::<Vec<_>>() {
            self.check_open_spec(&key);
        }
        for (key, open) in &mut self.open {
            open.forget();
            self.dirty.insert(key.clone());
        }
    }

    /// Registers the file watchers for `pysplice.toml` and recipes when the client can.
    fn register_watchers(&mut self) {
        if !self.client.watch_dynamic {
            return;
        }
        let params = serde_json::json!({
            "registrations": [{
                "id": "pysplice-watch",
                "method": "workspace/didChangeWatchedFiles",
                "registerOptions": { "watchers": [{ "globPattern": "**/*.toml" }] },
            }],
        });
        self.request_client("client/registerCapability", params);
    }

    /// Sends a request to the client; its answer is not awaited.
    fn request_client(&mut self, method: &str, params: serde_json::Value) {
        self.next_request += 1;
        let id = lsp_server::RequestId::from(format!("pysplice-{}", self.next_request));
        self.send(Message::Request(Request::new(id, method.to_string(), params)));
    }

    /// Publishes the diagnostics of a recipe file: its spec error, or none.
    fn publish_spec(&self, path: &Path, text: Option<&str>, error: Option<&Error>) {
        let Some(uri) = path_uri(path) else { return };
        let diagnostics = match error {
            None => Vec::new(),
            Some(err) => {
                let text = text.map_or_else(|| pysplice::files::read_text(path).unwrap_or_default(), str::to_string);
                let doc = Document::new(path.display().to_string(), &text);
                let range = doc.location_range(err.location()).unwrap_or_else(|| doc.line_range(0));
                vec![diagnostic(
                    range,
                    DiagnosticSeverity::ERROR,
                    "spec".into(),
                    err.to_string(),
                )]
            }
        };
        self.publish(uri, diagnostics, None);
    }

    /// Checks an open recipe file as typed and publishes its diagnostics.
    fn check_open_spec(&self, key: &str) {
        let Some((uri, doc)) = self.specs.get(key) else { return };
        let Some(path) = uri_path(uri.as_str()) else { return };
        let text = doc.text();
        let error = Recipe::from_toml(&path.display().to_string(), &text).err();
        let range = |err: &Error| doc.location_range(err.location()).unwrap_or_else(|| doc.line_range(0));
        let diagnostics = error
            .iter()
            .map(|err| diagnostic(range(err), DiagnosticSeverity::ERROR, "spec".into(), err.to_string()))
            .collect();
        self.publish(uri.clone(), diagnostics, Some(doc.version()));
    }

    /// Whether `uri` is one of the configured recipe files.
    fn is_spec(&self, uri: &Uri) -> bool {
        let Some(path) = uri_path(uri.as_str()) else {
            return false;
        };
        self.config.spec_files.iter().any(|p| same_file(p, &path))
    }

    fn log(&self, message: String) {
        eprintln!("pysplice-lsp: {message}");
        let params = lsp_types::LogMessageParams {
            typ: MessageType::LOG,
            message,
        };
        self.send(Message::Notification(Notification::new(
            lsp_types::notification::LogMessage::METHOD.into(),
            params,
        )));
    }

    fn send(&self, message: Message) {
        if let Err(err) = self.connection.sender.send(message) {
            eprintln!("pysplice-lsp: cannot send: {err}");
        }
    }

    fn show(&self, typ: MessageType, message: String) {
        eprintln!("pysplice-lsp: {message}");
        let params = ShowMessageParams { typ, message };
        self.send(Message::Notification(Notification::new(
            ShowMessage::METHOD.into(),
            params,
        )));
    }

    fn request(&mut self, request: Request) {
        let id = request.id.clone();
        let method = request.method.clone();
        let result = catch_unwind(AssertUnwindSafe(|| self.dispatch(request)));
        let response = match result {
            Ok(Ok(value)) => Response::new_ok(id, value),
            Ok(Err((code, message))) => Response::new_err(id, code as i32, message),
            Err(_) => Response::new_err(id, ErrorCode::InternalError as i32, format!("{method} failed (a bug)")),
        };
        self.send(Message::Response(response));
    }

    fn dispatch(&mut self, request: Request) -> Result<serde_json::Value, (ErrorCode, String)> {
        let bad = |err: serde_json::Error| (ErrorCode::InvalidParams, err.to_string());
        match request.method.as_str() {
            HoverRequest::METHOD => {
                let params: HoverParams = serde_json::from_value(request.params).map_err(bad)?;
                Ok(serde_json::to_value(self.hover(&params)).unwrap_or_default())
            }
            CodeActionRequest::METHOD => {
                let params: CodeActionParams = serde_json::from_value(request.params).map_err(bad)?;
                Ok(serde_json::to_value(self.code_actions(&params)).unwrap_or_default())
            }
            CodeActionResolveRequest::METHOD => {
                let action: CodeAction = serde_json::from_value(request.params).map_err(bad)?;
                let action = self.resolve(action)?;
                Ok(serde_json::to_value(action).unwrap_or_default())
            }
            ExecuteCommand::METHOD => {
                let params: ExecuteCommandParams = serde_json::from_value(request.params).map_err(bad)?;
                match params.command.as_str() {
                    APPLY_TO_WORKSPACE => {
                        let recipe = params.arguments.first().and_then(serde_json::Value::as_str);
                        self.apply_to_workspace(recipe)
                    }
                    APPLY_ACTION => {
                        let data = params.arguments.into_iter().next().unwrap_or_default();
                        let action = CodeAction {
                            title: "pysplice".into(),
                            data: Some(data),
                            ..CodeAction::default()
                        };
                        if let Some(edit) = self.resolve(action)?.edit {
                            self.request_client("workspace/applyEdit", serde_json::json!({ "edit": edit }));
                        }
                        Ok(serde_json::Value::Null)
                    }
                    other => Err((ErrorCode::InvalidParams, format!("unknown command `{other}`"))),
                }
            }
            other => Err((
                ErrorCode::MethodNotFound,
                format!("pysplice-lsp does not handle `{other}`"),
            )),
        }
    }

    fn notification(&mut self, notification: Notification) {
        let method = notification.method.clone();
        let result = catch_unwind(AssertUnwindSafe(|| self.notify(notification)));
        match result {
            Ok(Ok(())) => {}
            Ok(Err(err)) => eprintln!("pysplice-lsp: {method}: {err}"),
            Err(_) => eprintln!("pysplice-lsp: {method} failed (a bug)"),
        }
    }

    fn notify(&mut self, notification: Notification) -> Result<(), serde_json::Error> {
        match notification.method.as_str() {
            DidChangeWatchedFiles::METHOD => {
                let params: DidChangeWatchedFilesParams = serde_json::from_value(notification.params)?;
                let concerns = |uri: &Uri| {
                    uri.as_str().ends_with("/pysplice.toml") || self.is_spec(uri) || self.config.spec_files.is_empty()
                };
                if params.changes.iter().any(|change| concerns(&change.uri)) {
                    self.reload();
                }
            }
            DidOpenTextDocument::METHOD => {
                let params: DidOpenTextDocumentParams = serde_json::from_value(notification.params)?;
                let item = params.text_document;
                let key = item.uri.as_str().to_string();
                let mut doc = Document::new(uri_name(&item.uri), &item.text);
                doc.set_version(item.version);
                if self.is_spec(&item.uri) {
                    self.specs.insert(key.clone(), (item.uri, doc));
                    self.check_open_spec(&key);
                    return Ok(());
                }
                if item.language_id != "python" && !key.ends_with(".py") && !key.ends_with(".pyi") {
                    return Ok(());
                }
                self.open.insert(key.clone(), Open::new(item.uri, doc));
                self.dirty.insert(key);
            }
            DidChangeTextDocument::METHOD => {
                let params: DidChangeTextDocumentParams = serde_json::from_value(notification.params)?;
                let key = params.text_document.uri.as_str().to_string();
                let doc = match (self.open.get_mut(&key), self.specs.get_mut(&key)) {
                    (Some(open), _) => &mut open.doc,
                    (None, Some((_, doc))) => doc,
                    (None, None) => return Ok(()),
                };
                for change in params.content_changes {
                    doc.apply_change(change.range.map(to_range), &change.text);
                }
                doc.set_version(params.text_document.version);
                if self.specs.contains_key(&key) {
                    self.check_open_spec(&key);
                } else {
                    self.dirty.insert(key);
                }
            }
            DidCloseTextDocument::METHOD => {
                let params: DidCloseTextDocumentParams = serde_json::from_value(notification.params)?;
                let key = params.text_document.uri.as_str().to_string();
                if self.specs.remove(&key).is_some() {
                    // Back to the file as saved.
                    if let Some(path) = uri_path(&key) {
                        let error = self.config.spec_errors.iter().find(|(p, _)| *p == path).map(|(_, e)| e);
                        self.publish_spec(&path, None, error);
                    }
                } else if self.open.remove(&key).is_some() {
                    self.dirty.remove(&key);
                    self.publish(params.text_document.uri, Vec::new(), None);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Re-plans the documents changed since the last call and publishes their diagnostics. While
    /// a text does not parse (the usual state while typing), a recipe's last good diagnostics stay.
    fn publish_dirty(&mut self) {
        for key in std::mem::take(&mut self.dirty) {
            let Some(open) = self.open.get_mut(&key) else { continue };
            let mut diagnostics = Vec::new();
            for recipe in &self.recipes {
                match plan_of(open, recipe) {
                    Ok(plan) => {
                        let fresh: Vec<Diagnostic> = if plan.relevant {
                            plan.hooks
                                .iter()
                                .map(|hook| hook_diagnostic(recipe, &plan, hook))
                                .collect()
                        } else {
                            Vec::new()
                        };
                        diagnostics.extend(fresh.iter().cloned());
                        open.last_good.insert(recipe.id.clone(), fresh);
                    }
                    Err(failure) => match failure.severity {
                        Some(severity) => {
                            let message = format!("pysplice {}: {}", recipe.id, failure.message);
                            diagnostics.push(diagnostic(failure.range, severity, recipe.id.clone(), message));
                            open.last_good.remove(&recipe.id);
                        }
                        None => diagnostics.extend(open.last_good.get(&recipe.id).into_iter().flatten().cloned()),
                    },
                }
            }
            let (uri, version) = (open.uri.clone(), open.doc.version());
            self.publish(uri, diagnostics, Some(version));
        }
    }

    fn publish(&self, uri: Uri, diagnostics: Vec<Diagnostic>, version: Option<i32>) {
        let params = PublishDiagnosticsParams {
            uri,
            diagnostics,
            version,
        };
        self.send(Message::Notification(Notification::new(
            PublishDiagnostics::METHOD.into(),
            params,
        )));
    }

    fn hover(&mut self, params: &HoverParams) -> Option<Hover> {
        let at = &params.text_document_position_params;
        let open = self.open.get_mut(at.text_document.uri.as_str())?;
        let position = Utf16Position::new(at.position.line, at.position.character);
        let (recipe_id, hook_id, range) = match open.doc.marker_at(position) {
            Some(marker) => (marker.recipe, marker.hook, open.doc.line_range(position.line as usize)),
            None => self.recipes.iter().find_map(|recipe| {
                let plan = plan_of(open, recipe).ok()?;
                plan.hooks.iter().find_map(|hook| {
                    let block = hook.blocks.iter().find(|b| b.contains(position))?;
                    Some((recipe.id.clone(), hook.id.clone(), *block))
                })
            })?,
        };
        let text = match self.recipes.iter().find(|r| r.id == recipe_id) {
            Some(recipe) => {
                let hook = recipe.hooks.iter().find(|h| h.id == hook_id);
                let summary = hook.map_or("(this hook is no longer in the recipe)", |h| h.summary.as_str());
                format!(
                    "**pysplice** `{recipe_id}/{hook_id}`\n\n{summary}\n\nRecipe: {}",
                    recipe.summary
                )
            }
            None => format!("**pysplice** `{recipe_id}/{hook_id}`\n\n(recipe `{recipe_id}` is not configured here)"),
        };
        Some(Hover {
            contents: HoverContents::Markup(MarkupContent {
                kind: MarkupKind::Markdown,
                value: text,
            }),
            range: Some(from_range(range)),
        })
    }

    /// "Apply recipe ID" / "Revert recipe ID" (refactor), and the apply as a quick fix of the
    /// diagnostics of hooks it would place or update. Answered from the plan the diagnostics made;
    /// where the client resolves code actions the edits are computed only when one is chosen.
    fn code_actions(&mut self, params: &CodeActionParams) -> Vec<CodeActionOrCommand> {
        let wanted = |kind: &CodeActionKind| match &params.context.only {
            None => true,
            Some(only) => only
                .iter()
                .any(|k| kind.as_str() == k.as_str() || kind.as_str().starts_with(&format!("{}.", k.as_str()))),
        };
        let (rewrite, quickfix) = (
            wanted(&CodeActionKind::REFACTOR_REWRITE),
            wanted(&CodeActionKind::QUICKFIX),
        );
        let (resolve, command) = (self.client.resolve_edit, self.client.apply_edit);
        let document_changes = self.client.document_changes;
        let Some(open) = self.open.get_mut(params.text_document.uri.as_str()) else {
            return Vec::new();
        };
        let mut actions = Vec::new();
        for recipe in &self.recipes {
            let Ok(plan) = plan_of(open, recipe) else { continue };
            if !plan.relevant {
                continue;
            }
            let fixes: Vec<Diagnostic> = params
                .context
                .diagnostics
                .iter()
                .filter(|d| {
                    d.data
                        .as_ref()
                        .and_then(|v| v.get("fix"))
                        .and_then(serde_json::Value::as_str)
                        == Some("apply")
                        && d.data
                            .as_ref()
                            .and_then(|v| v.get("recipe"))
                            .and_then(serde_json::Value::as_str)
                            == Some(recipe.id.as_str())
                })
                .cloned()
                .collect();
            let mut offers: Vec<(String, CodeActionKind, bool, Option<Vec<Diagnostic>>)> = Vec::new();
            if (plan.pending || !plan.is_complete()) && rewrite {
                offers.push((
                    format!("Apply recipe {}", recipe.id),
                    CodeActionKind::REFACTOR_REWRITE,
                    false,
                    None,
                ));
            }
            if plan.pending && plan.is_complete() && quickfix && !fixes.is_empty() {
                let title = format!("Apply recipe {} (places or updates its hooks)", recipe.id);
                offers.push((title, CodeActionKind::QUICKFIX, false, Some(fixes)));
            }
            if plan.patched && rewrite {
                offers.push((
                    format!("Revert recipe {}", recipe.id),
                    CodeActionKind::REFACTOR_REWRITE,
                    true,
                    None,
                ));
            }
            for (title, kind, revert, diagnostics) in offers {
                let mut action = CodeAction {
                    title,
                    is_preferred: diagnostics.as_ref().map(|_| true),
                    diagnostics,
                    kind: Some(kind),
                    ..CodeAction::default()
                };
                if !revert && !plan.is_complete() {
                    let reason = plan
                        .hooks
                        .iter()
                        .find(|h| matches!(h.status, Status::Failed { .. }))
                        .map_or_else(|| "a hook cannot be placed".to_string(), |h| h.message.clone());
                    action.disabled = Some(CodeActionDisabled { reason });
                } else if resolve || command {
                    // The edit is made when the action is chosen: through `codeAction/resolve`,
                    // or the command and `workspace/applyEdit`.
                    let data = serde_json::json!({
                        "uri": open.uri.as_str(),
                        "version": open.doc.version(),
                        "recipe": recipe.id,
                        "revert": revert,
                    });
                    if !resolve {
                        action.command = Some(lsp_types::Command {
                            title: action.title.clone(),
                            command: APPLY_ACTION.into(),
                            arguments: Some(vec![data.clone()]),
                        });
                    }
                    action.data = Some(data);
                } else {
                    match edits_of(open, recipe, revert) {
                        Ok(edits) => {
                            let edit = workspace_edit(&open.uri, open.doc.version(), edits, document_changes);
                            action.edit = Some(edit);
                        }
                        Err(reason) => action.disabled = Some(CodeActionDisabled { reason }),
                    }
                }
                actions.push(CodeActionOrCommand::CodeAction(action));
            }
        }
        actions
    }

    /// `codeAction/resolve`: the verified edits of an action [`Server::code_actions`] offered.
    fn resolve(&mut self, mut action: CodeAction) -> Result<CodeAction, (ErrorCode, String)> {
        let data = action.data.clone().unwrap_or_default();
        let field = |name: &str| data.get(name).cloned().unwrap_or_default();
        let (uri, recipe_id) = (field("uri"), field("recipe"));
        let (Some(uri), Some(recipe_id)) = (uri.as_str(), recipe_id.as_str()) else {
            return Err((ErrorCode::InvalidParams, "not a pysplice code action".into()));
        };
        let revert = field("revert").as_bool().unwrap_or(false);
        let version = field("version").as_i64();
        let document_changes = self.client.document_changes;
        let recipe = self.recipes.iter().find(|r| r.id == recipe_id);
        let (Some(open), Some(recipe)) = (self.open.get_mut(uri), recipe) else {
            return Err((ErrorCode::ContentModified, "the file or the recipe is gone".into()));
        };
        if version != Some(i64::from(open.doc.version())) {
            return Err((
                ErrorCode::ContentModified,
                "the file changed since the action was offered".into(),
            ));
        }
        let edits = edits_of(open, recipe, revert).map_err(|reason| (ErrorCode::RequestFailed, reason))?;
        action.edit = Some(workspace_edit(&open.uri, open.doc.version(), edits, document_changes));
        Ok(action)
    }

    /// Applies `recipe` (or the only recipe) to every Python file of the workspace that it
    /// concerns and that is not up to date: one `workspace/applyEdit` with all the files. Open
    /// files are taken as typed. Answers with the files changed and those that could not be.
    fn apply_to_workspace(&mut self, recipe: Option<&str>) -> Result<serde_json::Value, (ErrorCode, String)> {
        let recipe = match (recipe, self.recipes.as_slice()) {
            (Some(id), recipes) => recipes.iter().find(|r| r.id == id),
            (None, [only]) => Some(only),
            (None, _) => None,
        };
        let Some(recipe) = recipe.cloned() else {
            let ids: Vec<&str> = self.recipes.iter().map(|r| r.id.as_str()).collect();
            return Err((ErrorCode::InvalidParams, format!("name one of the recipes: {ids:?}")));
        };
        let Some(root) = self.root.clone() else {
            return Err((ErrorCode::InvalidParams, "no workspace folder".into()));
        };
        let mut changes: Vec<(Uri, Option<i32>, Vec<TextEdit>)> = Vec::new();
        let mut failed = Vec::new();
        for path in python_files(&root) {
            let Some(uri) = path_uri(&path) else { continue };
            let (doc, version) = match self.open.get(uri.as_str()) {
                Some(open) => (open.doc.clone(), Some(open.doc.version())),
                None => match pysplice::files::read_text(&path) {
                    Ok(text) => (Document::new(path.display().to_string(), &text), None),
                    Err(err) => {
                        failed.push(err.to_string());
                        continue;
                    }
                },
            };
            // Files that do not parse are not the recipe's business here; they are listed.
            let (plan, kept) = match doc.plan_keeping(&recipe) {
                Ok(pair) => pair,
                Err(err) => {
                    failed.push(err.to_string());
                    continue;
                }
            };
            if !plan.relevant || !plan.pending {
                if plan.relevant && !plan.is_complete() {
                    failed.push(format!("{}: a hook cannot be placed", path.display()));
                }
                continue;
            }
            match doc.apply_edits_from(&recipe, kept) {
                Ok(edits) if !edits.is_empty() => changes.push((uri, version, edits)),
                Ok(_) => {}
                Err(err) => failed.push(err.to_string()),
            }
        }
        let files: Vec<&str> = changes.iter().map(|(uri, _, _)| uri.as_str()).collect();
        let answer = serde_json::json!({ "recipe": recipe.id, "changed": files, "failed": failed });
        if !changes.is_empty() {
            let edit = workspace_edits(changes, self.client.document_changes);
            let label = format!("Apply recipe {} to the workspace", recipe.id);
            self.request_client(
                "workspace/applyEdit",
                serde_json::json!({ "label": label, "edit": edit }),
            );
        }
        Ok(answer)
    }
}

/// A hook's diagnostic; `data` tells the quick fix which recipe places it.
fn hook_diagnostic(recipe: &Recipe, plan: &DocumentPlan, hook: &pysplice::document::DocumentHook) -> Diagnostic {
    let severity = match hook.status {
        Status::Failed { .. } => DiagnosticSeverity::WARNING,
        Status::Skipped { .. } => DiagnosticSeverity::HINT,
        _ => DiagnosticSeverity::INFORMATION,
    };
    let mut d = diagnostic(
        hook.range,
        severity,
        format!("{}/{}", recipe.id, hook.id),
        format!("pysplice {}/{}: {}", recipe.id, hook.id, hook.message),
    );
    let fix = pysplice::outcome::is_pending(&hook.status) && plan.is_complete();
    d.data = Some(serde_json::json!({
        "recipe": recipe.id,
        "hook": hook.id,
        "fix": if fix { "apply" } else { "" },
    }));
    d
}

/// The plan of `recipe` on the open file, cached per version.
fn plan_of(open: &mut Open, recipe: &Recipe) -> Result<DocumentPlan, Failure> {
    let version = open.doc.version();
    if let Some((at, plan)) = open.plans.get(&recipe.id) {
        if *at == version {
            return plan.clone();
        }
    }
    let plan = open.doc.plan_keeping(recipe).map(|(plan, kept)| {
        open.kept.insert(recipe.id.clone(), kept);
        plan
    });
    let plan = plan.map_err(|err| {
        let range = open
            .doc
            .location_range(err.location())
            .unwrap_or_else(|| open.doc.line_range(0));
        let severity = match err {
            // Syntax errors are the Python tools' business (and the usual state while typing).
            Error::Syntax { .. } => None,
            Error::Marker { .. } | Error::Stacked { .. } => Some(DiagnosticSeverity::ERROR),
            _ => Some(DiagnosticSeverity::WARNING),
        };
        Failure {
            message: err.to_string(),
            range,
            severity,
        }
    });
    open.plans.insert(recipe.id.clone(), (version, plan.clone()));
    plan
}

/// The verified edits that apply (or revert) `recipe` on the open file, cached per version.
fn edits_of(open: &mut Open, recipe: &Recipe, revert: bool) -> Edits {
    let version = open.doc.version();
    let key = (recipe.id.clone(), revert);
    if let Some((at, edits)) = open.edits.get(&key) {
        if *at == version {
            return edits.clone();
        }
    }
    let edits = if revert {
        open.doc.revert_edits(recipe)
    } else {
        match open.kept.remove(&recipe.id) {
            // The parse and plan the diagnostics made for this version.
            Some(kept) => open.doc.apply_edits_from(recipe, kept),
            None => open.doc.apply_edits(recipe),
        }
    };
    let edits = edits.map_err(|err: Error| err.to_string());
    open.edits.insert(key, (version, edits.clone()));
    edits
}

fn diagnostic(range: Utf16Range, severity: DiagnosticSeverity, code: String, message: String) -> Diagnostic {
    Diagnostic {
        range: from_range(range),
        severity: Some(severity),
        code: Some(NumberOrString::String(code)),
        source: Some("pysplice".into()),
        message,
        ..Diagnostic::default()
    }
}

fn workspace_edit(uri: &Uri, version: i32, edits: Vec<TextEdit>, document_changes: bool) -> WorkspaceEdit {
    workspace_edits(vec![(uri.clone(), Some(version), edits)], document_changes)
}

/// One workspace edit over several files (the version is that of an open file, `None` for a
/// file on disk).
fn workspace_edits(files: Vec<(Uri, Option<i32>, Vec<TextEdit>)>, document_changes: bool) -> WorkspaceEdit {
    let lsp_edits = |edits: Vec<TextEdit>| -> Vec<lsp_types::TextEdit> {
        edits
            .into_iter()
            .map(|e| lsp_types::TextEdit {
                range: from_range(e.range),
                new_text: e.new_text,
            })
            .collect()
    };
    if document_changes {
        let changes = files
            .into_iter()
            .map(|(uri, version, edits)| TextDocumentEdit {
                text_document: OptionalVersionedTextDocumentIdentifier { uri, version },
                edits: lsp_edits(edits).into_iter().map(OneOf::Left).collect(),
            })
            .collect();
        WorkspaceEdit {
            document_changes: Some(DocumentChanges::Edits(changes)),
            ..WorkspaceEdit::default()
        }
    } else {
        #[allow(clippy::mutable_key_type)] // lsp-types' Uri: its hash does not change
        let changes: HashMap<Uri, Vec<lsp_types::TextEdit>> = files
            .into_iter()
            .map(|(uri, _, edits)| (uri, lsp_edits(edits)))
            .collect();
        WorkspaceEdit {
            changes: Some(changes),
            ..WorkspaceEdit::default()
        }
    }
}

/// The `.py` files under `root`, sorted, skipping hidden folders, virtual environments, caches and
/// build output (at most 50,000 files, links not followed).
fn python_files(root: &Path) -> Vec<PathBuf> {
    const SKIP: [&str; 5] = ["__pycache__", "node_modules", "target", "venv", "site-packages"];
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() && !name.starts_with('.') && !SKIP.contains(&name.as_str()) {
                stack.push(entry.path());
            } else if kind.is_file() && name.ends_with(".py") && found.len() < 50_000 {
                found.push(entry.path());
            }
        }
    }
    found.sort();
    found
}

/// The `file:` URI of an absolute path (percent-encoding what URIs do not allow).
fn path_uri(path: &Path) -> Option<Uri> {
    let text = path.to_str()?;
    let mut uri = String::from("file://");
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            uri.push(byte as char);
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri.parse().ok()
}

/// Whether two paths name the same file (as given, or once resolved).
fn same_file(a: &Path, b: &Path) -> bool {
    a == b || matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)), (Ok(x), Ok(y)) if x == y)
}

fn to_range(range: Range) -> Utf16Range {
    let at = |p: Position| Utf16Position::new(p.line, p.character);
    Utf16Range::new(at(range.start), at(range.end))
}

fn from_range(range: Utf16Range) -> Range {
    let at = |p: Utf16Position| Position::new(p.line, p.character);
    Range::new(at(range.start), at(range.end))
}

/// The file path of a `file:` URI (percent-decoded), if it is one.
fn uri_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(hi), Some(lo)) => {
                out.push(u8::try_from(hi * 16 + lo).unwrap_or(b'?'));
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok().map(PathBuf::from)
}

/// The name a document goes by in messages: its path, or its URI when it is not a file.
fn uri_name(uri: &Uri) -> String {
    uri_path(uri.as_str()).map_or_else(|| uri.as_str().to_string(), |p| p.display().to_string())
}

#[allow(deprecated)] // root_uri and root_path: older clients send only these
fn workspace_root(params: &InitializeParams) -> Option<PathBuf> {
    let folder = params
        .workspace_folders
        .as_ref()
        .and_then(|f| f.first())
        .map(|f| &f.uri);
    folder
        .or(params.root_uri.as_ref())
        .and_then(|uri| uri_path(uri.as_str()))
        .or_else(|| params.root_path.as_ref().map(PathBuf::from))
}

/// The configuration: recipes, and what is wrong with it.
#[derive(Default)]
struct Config {
    recipes: Vec<Recipe>,
    /// Problems of the options or `pysplice.toml` (missing recipe files, duplicates, bad lists).
    problems: Vec<String>,
    /// Neither options nor `pysplice.toml` name a recipe.
    unconfigured: bool,
    /// The recipe files named (resolved paths).
    spec_files: Vec<PathBuf>,
    /// Recipe files that do not compile, with the error.
    spec_errors: Vec<(PathBuf, Error)>,
}

/// The recipes named by the initialization options, or else by `pysplice.toml` at the root.
fn load_recipes(root: Option<&Path>, options: Option<&serde_json::Value>) -> Config {
    let mut config = Config::default();
    let problems = &mut config.problems;
    let from_options: Option<Vec<String>> = options.and_then(|o| o.get("recipes")).map(|list| {
        let names = list.as_array().map(|items| {
            items
                .iter()
                .filter_map(|item| item.as_str().map(str::to_string))
                .collect::<Vec<_>>()
        });
        names.unwrap_or_else(|| {
            problems.push("initializationOptions.recipes must be a list of paths".into());
            Vec::new()
        })
    });
    let configured = from_options.is_some();
    let mut found_config = false;
    let names = from_options.unwrap_or_else(|| {
        let Some(config_path) = root.map(|r| r.join("pysplice.toml")) else {
            return Vec::new();
        };
        // Regular files only, within the size limit: a `pysplice.toml` that is a FIFO or a link to
        // `/dev/zero` (in an untrusted repository) is reported, never waited on or drained.
        let text = match pysplice::files::read_text(&config_path) {
            Ok(text) => text,
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
            Err(err) => {
                found_config = true;
                problems.push(err.to_string());
                return Vec::new();
            }
        };
        found_config = true;
        let list = toml::from_str::<toml::Table>(&text)
            .map_err(|err| err.to_string())
            .and_then(|table| match table.get("recipes") {
                Some(toml::Value::Array(items)) => {
                    Ok(items.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
                }
                _ => Err("`recipes` must be a list of paths".to_string()),
            });
        list.unwrap_or_else(|err| {
            problems.push(format!("{}: {err}", config_path.display()));
            Vec::new()
        })
    });
    config.unconfigured = !configured && !found_config;
    for name in names {
        let loaded = if name == "builtin:sglang-hs-dump" {
            Recipe::from_toml(&name, pysplice::recipes::SGLANG_HS_DUMP)
        } else {
            let path = match root {
                Some(root) if Path::new(&name).is_relative() => root.join(&name),
                _ => PathBuf::from(&name),
            };
            config.spec_files.push(path.clone());
            match pysplice::files::read_text(&path) {
                Ok(text) => match Recipe::from_toml(&path.display().to_string(), &text) {
                    // A spec error is shown in the recipe file itself.
                    Err(err) => {
                        config.spec_errors.push((path, err));
                        continue;
                    }
                    ok => ok,
                },
                Err(err) => Err(err),
            }
        };
        match loaded {
            Ok(recipe) if config.recipes.iter().any(|r| r.id == recipe.id) => {
                config
                    .problems
                    .push(format!("{name}: recipe `{}` is configured twice", recipe.id));
            }
            Ok(recipe) => config.recipes.push(recipe),
            Err(err) => config.problems.push(err.to_string()),
        }
    }
    config
}
