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
//! where a required target or anchor is missing. Code actions "Apply recipe ID" and "Revert
//! recipe ID" return the verified change as a `WorkspaceEdit`; hovering over a marker line (or a
//! block) shows the hook's summary. Text sync is incremental; positions are UTF-16.
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
    DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, Notification as _, PublishDiagnostics,
    ShowMessage,
};
use lsp_types::request::{CodeActionRequest, HoverRequest, Request as _};
use lsp_types::{
    CodeAction, CodeActionDisabled, CodeActionKind, CodeActionOptions, CodeActionOrCommand, CodeActionParams,
    CodeActionProviderCapability, Diagnostic, DiagnosticSeverity, DidChangeTextDocumentParams,
    DidCloseTextDocumentParams, DidOpenTextDocumentParams, DocumentChanges, Hover, HoverContents, HoverParams,
    HoverProviderCapability, InitializeParams, MarkupContent, MarkupKind, MessageType, NumberOrString, OneOf,
    OptionalVersionedTextDocumentIdentifier, Position, PositionEncodingKind, PublishDiagnosticsParams, Range,
    ServerCapabilities, ShowMessageParams, TextDocumentEdit, TextDocumentSyncCapability, TextDocumentSyncKind, Uri,
    WorkspaceEdit,
};
use pysplice::document::{Document, DocumentPlan, TextEdit, Utf16Position, Utf16Range};
use pysplice::{Error, Recipe, Status};

fn main() -> ExitCode {
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
            code_action_kinds: Some(vec![CodeActionKind::REFACTOR_REWRITE]),
            ..CodeActionOptions::default()
        })),
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
    for problem in std::mem::take(&mut server.config_problems) {
        server.show(MessageType::WARNING, problem);
    }
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

/// An open Python file.
struct Open {
    uri: Uri,
    doc: Document,
    /// Per recipe id: the plan of `doc` at a version.
    plans: HashMap<String, (i32, Result<DocumentPlan, Failure>)>,
    /// Per (recipe id, revert?): the verified edits at a version (code actions are asked for on
    /// every cursor move; an apply parses twice).
    edits: HashMap<(String, bool), (i32, Edits)>,
}

/// Why a plan could not be made, for diagnostics.
#[derive(Clone)]
struct Failure {
    message: String,
    range: Utf16Range,
    severity: Option<DiagnosticSeverity>,
}

struct Server<'c> {
    connection: &'c Connection,
    recipes: Vec<Recipe>,
    config_problems: Vec<String>,
    open: HashMap<String, Open>,
    dirty: BTreeSet<String>,
    document_changes: bool,
}

impl<'c> Server<'c> {
    fn new(connection: &'c Connection, params: &InitializeParams) -> Server<'c> {
        let root = workspace_root(params);
        let (recipes, config_problems) = load_recipes(root.as_deref(), params.initialization_options.as_ref());
        let document_changes = params
            .capabilities
            .workspace
            .as_ref()
            .and_then(|w| w.workspace_edit.as_ref())
            .and_then(|e| e.document_changes)
            .unwrap_or(false);
        Server {
            connection,
            recipes,
            config_problems,
            open: HashMap::new(),
            dirty: BTreeSet::new(),
            document_changes,
        }
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
            DidOpenTextDocument::METHOD => {
                let params: DidOpenTextDocumentParams = serde_json::from_value(notification.params)?;
                let item = params.text_document;
                let key = item.uri.as_str().to_string();
                if item.language_id != "python" && !key.ends_with(".py") && !key.ends_with(".pyi") {
                    return Ok(());
                }
                let mut doc = Document::new(uri_name(&item.uri), &item.text);
                doc.set_version(item.version);
                let open = Open {
                    uri: item.uri,
                    doc,
                    plans: HashMap::new(),
                    edits: HashMap::new(),
                };
                self.open.insert(key.clone(), open);
                self.dirty.insert(key);
            }
            DidChangeTextDocument::METHOD => {
                let params: DidChangeTextDocumentParams = serde_json::from_value(notification.params)?;
                let key = params.text_document.uri.as_str().to_string();
                if let Some(open) = self.open.get_mut(&key) {
                    for change in params.content_changes {
                        open.doc.apply_change(change.range.map(to_range), &change.text);
                    }
                    open.doc.set_version(params.text_document.version);
                    self.dirty.insert(key);
                }
            }
            DidCloseTextDocument::METHOD => {
                let params: DidCloseTextDocumentParams = serde_json::from_value(notification.params)?;
                let key = params.text_document.uri.as_str().to_string();
                if self.open.remove(&key).is_some() {
                    self.dirty.remove(&key);
                    self.publish(params.text_document.uri, Vec::new(), None);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Re-plans the documents changed since the last call and publishes their diagnostics.
    fn publish_dirty(&mut self) {
        for key in std::mem::take(&mut self.dirty) {
            let Some(open) = self.open.get_mut(&key) else { continue };
            let mut diagnostics = Vec::new();
            for recipe in &self.recipes {
                match plan_of(open, recipe) {
                    Ok(plan) if plan.relevant => {
                        diagnostics.extend(plan.hooks.iter().map(|hook| {
                            let severity = match hook.status {
                                Status::Failed { .. } => DiagnosticSeverity::WARNING,
                                Status::Skipped { .. } => DiagnosticSeverity::HINT,
                                _ => DiagnosticSeverity::INFORMATION,
                            };
                            diagnostic(
                                hook.range,
                                severity,
                                format!("{}/{}", recipe.id, hook.id),
                                format!("pysplice {}/{}: {}", recipe.id, hook.id, hook.message),
                            )
                        }));
                    }
                    Ok(_) => {}
                    Err(failure) => {
                        if let Some(severity) = failure.severity {
                            let message = format!("pysplice {}: {}", recipe.id, failure.message);
                            diagnostics.push(diagnostic(failure.range, severity, recipe.id.clone(), message));
                        }
                    }
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

    fn code_actions(&mut self, params: &CodeActionParams) -> Vec<CodeActionOrCommand> {
        let kind = CodeActionKind::REFACTOR_REWRITE;
        if let Some(only) = &params.context.only {
            let wanted = only
                .iter()
                .any(|k| kind.as_str() == k.as_str() || kind.as_str().starts_with(&format!("{}.", k.as_str())));
            if !wanted {
                return Vec::new();
            }
        }
        let document_changes = self.document_changes;
        let Some(open) = self.open.get_mut(params.text_document.uri.as_str()) else {
            return Vec::new();
        };
        let mut actions = Vec::new();
        for recipe in &self.recipes {
            let Ok(plan) = plan_of(open, recipe) else { continue };
            if !plan.relevant {
                continue;
            }
            let mut offer = |title: String, open: &Open, edits: Edits| {
                let mut action = CodeAction {
                    title,
                    kind: Some(kind.clone()),
                    ..CodeAction::default()
                };
                match edits {
                    Ok(edits) => {
                        action.edit = Some(workspace_edit(&open.uri, open.doc.version(), edits, document_changes));
                    }
                    Err(reason) => action.disabled = Some(CodeActionDisabled { reason }),
                }
                actions.push(CodeActionOrCommand::CodeAction(action));
            };
            if plan.pending || !plan.is_complete() {
                let edits = edits_of(open, recipe, false);
                offer(format!("Apply recipe {}", recipe.id), open, edits);
            }
            if plan.patched {
                let edits = edits_of(open, recipe, true);
                offer(format!("Revert recipe {}", recipe.id), open, edits);
            }
        }
        actions
    }
}

/// The plan of `recipe` on the open file, cached per version.
fn plan_of(open: &mut Open, recipe: &Recipe) -> Result<DocumentPlan, Failure> {
    let version = open.doc.version();
    if let Some((at, plan)) = open.plans.get(&recipe.id) {
        if *at == version {
            return plan.clone();
        }
    }
    let plan = open.doc.plan(recipe).map_err(|err| {
        let range = open
            .doc
            .location_range(err.location())
            .unwrap_or_else(|| open.doc.line_range(0));
        let severity = match err {
            // Syntax errors are the Python tools' business (and the usual state while typing).
            Error::Syntax { .. } => None,
            Error::Marker { .. } => Some(DiagnosticSeverity::ERROR),
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
        open.doc.apply_edits(recipe)
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
    let edits: Vec<lsp_types::TextEdit> = edits
        .into_iter()
        .map(|e| lsp_types::TextEdit {
            range: from_range(e.range),
            new_text: e.new_text,
        })
        .collect();
    if document_changes {
        WorkspaceEdit {
            document_changes: Some(DocumentChanges::Edits(vec![TextDocumentEdit {
                text_document: OptionalVersionedTextDocumentIdentifier {
                    uri: uri.clone(),
                    version: Some(version),
                },
                edits: edits.into_iter().map(OneOf::Left).collect(),
            }])),
            ..WorkspaceEdit::default()
        }
    } else {
        #[allow(clippy::mutable_key_type)] // lsp-types' Uri: its hash does not change
        let changes = HashMap::from([(uri.clone(), edits)]);
        WorkspaceEdit {
            changes: Some(changes),
            ..WorkspaceEdit::default()
        }
    }
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

/// The recipes named by the initialization options, or else by `pysplice.toml` at the root.
fn load_recipes(root: Option<&Path>, options: Option<&serde_json::Value>) -> (Vec<Recipe>, Vec<String>) {
    let mut problems = Vec::new();
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
    let names = from_options.unwrap_or_else(|| {
        let Some(config) = root.map(|r| r.join("pysplice.toml")) else {
            return Vec::new();
        };
        let Ok(text) = std::fs::read_to_string(&config) else {
            return Vec::new();
        };
        let list = toml::from_str::<toml::Table>(&text)
            .map_err(|err| err.to_string())
            .and_then(|table| match table.get("recipes") {
                Some(toml::Value::Array(items)) => {
                    Ok(items.iter().filter_map(|v| v.as_str().map(str::to_string)).collect())
                }
                _ => Err("`recipes` must be a list of paths".to_string()),
            });
        list.unwrap_or_else(|err| {
            problems.push(format!("{}: {err}", config.display()));
            Vec::new()
        })
    });
    let mut recipes: Vec<Recipe> = Vec::new();
    for name in names {
        let loaded = if name == "builtin:sglang-hs-dump" {
            Recipe::from_toml(&name, pysplice::recipes::SGLANG_HS_DUMP).map_err(|err| err.to_string())
        } else {
            let path = match root {
                Some(root) if Path::new(&name).is_relative() => root.join(&name),
                _ => PathBuf::from(&name),
            };
            std::fs::read_to_string(&path)
                .map_err(|err| format!("{}: cannot read: {err}", path.display()))
                .and_then(|text| Recipe::from_toml(&path.display().to_string(), &text).map_err(|e| e.to_string()))
        };
        match loaded {
            Ok(recipe) if recipes.iter().any(|r| r.id == recipe.id) => {
                problems.push(format!("{name}: recipe `{}` is configured twice", recipe.id));
            }
            Ok(recipe) => recipes.push(recipe),
            Err(err) => problems.push(err),
        }
    }
    if recipes.is_empty() && problems.is_empty() {
        problems
            .push("no recipe configured: pass initializationOptions {\"recipes\": [...]} or add pysplice.toml".into());
    }
    (recipes, problems)
}
