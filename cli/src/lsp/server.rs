//! The server's state: the client's capabilities, the configured recipes, the open files; the
//! configuration's problems and the recipe files' diagnostics; sending to the client.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use lsp_server::{Connection, Message, Notification, Request, RequestId};
use lsp_types::notification::{Notification as _, PublishDiagnostics, ShowMessage};
use lsp_types::{
    Diagnostic, DiagnosticSeverity, InitializeParams, MessageType, PublishDiagnosticsParams, ShowMessageParams, Uri,
};
use pysplice::recipes::config::RecipeConfig;
use pysplice::Document;
use pysplice::{CodeFolder, Error, Recipe};

use crate::convert::{diagnostic, path_uri, same_file, uri_path, workspace_root};
use crate::open::Open;

/// The command that applies a recipe to every matching file of the workspace.
pub const APPLY_TO_WORKSPACE: &str = "pysplice.applyRecipeToWorkspace";
/// The command behind a code action for clients that do not resolve code actions: the edit is
/// made when the action is chosen and sent with `workspace/applyEdit`.
pub const APPLY_ACTION: &str = "pysplice.applyCodeAction";

/// What the client can do, from its `initialize` capabilities.
pub struct Client {
    /// `documentChanges` in workspace edits.
    pub document_changes: bool,
    /// `codeAction/resolve` of the `edit` property.
    pub resolve_edit: bool,
    /// Dynamic registration of `workspace/didChangeWatchedFiles`.
    pub watch_dynamic: bool,
    /// `workspace/applyEdit`.
    pub apply_edit: bool,
}

/// A `window/showMessageRequest` waiting for the client's answer.
pub struct Question {
    /// The `workspace/executeCommand` request to answer once the client has answered.
    pub command: RequestId,
    /// The recipe ids offered, which are the actions' titles.
    pub offered: Vec<String>,
}

pub struct Server<'c> {
    pub connection: &'c Connection,
    pub root: Option<PathBuf>,
    pub options: Option<serde_json::Value>,
    pub recipes: Vec<Recipe>,
    pub config: RecipeConfig,
    pub open: HashMap<String, Open>,
    /// Open recipe files (TOML), checked as they are typed.
    pub specs: HashMap<String, (Uri, Document)>,
    pub dirty: BTreeSet<String>,
    pub client: Client,
    pub next_request: i32,
    /// The questions to the client (`window/showMessageRequest`) waiting for an answer, by the
    /// id of the request that asked them.
    pub questions: HashMap<RequestId, Question>,
    /// The last revision number given to a text (see `open.rs`).
    pub last_revision: u64,
}

impl<'c> Server<'c> {
    pub fn new(connection: &'c Connection, params: &InitializeParams) -> Server<'c> {
        let root = workspace_root(params);
        let options = params.initialization_options.clone();
        let config = load_config(root.as_deref(), options.as_ref());
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
            questions: HashMap::new(),
            last_revision: 0,
        }
    }

    /// A revision number no text of this session has had.
    pub fn new_revision(&mut self) -> u64 {
        self.last_revision += 1;
        self.last_revision
    }

    /// Says what is wrong with the configuration: problems of `pysplice.toml` or the options in a
    /// message, spec errors as diagnostics in the recipe files. Without any configuration the
    /// server stays quiet (a log line only): it is attached to every Python project.
    pub fn report_config(&mut self) {
        // One message for all the problems (a hostile `pysplice.toml` must not bury the editor
        // in popups); each in the log.
        for problem in &self.config.problems {
            self.log(clip(problem, 1000));
        }
        if let Some(message) = summary(&self.config.problems) {
            self.show(MessageType::WARNING, message);
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
    pub fn reload(&mut self) {
        let old_files = std::mem::take(&mut self.config.spec_files);
        self.config = load_config(self.root.as_deref(), self.options.as_ref());
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
    pub fn register_watchers(&mut self) {
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

    /// Sends a request to the client and gives its id; its answer is not awaited.
    pub fn request_client(&mut self, method: &str, params: serde_json::Value) -> lsp_server::RequestId {
        self.next_request = self.next_request.wrapping_add(1);
        let id = lsp_server::RequestId::from(format!("pysplice-{}", self.next_request));
        self.send(Message::Request(Request::new(id.clone(), method.to_string(), params)));
        id
    }

    /// Publishes the diagnostics of a recipe file: its spec error, or none.
    pub fn publish_spec(&self, path: &Path, text: Option<&str>, error: Option<&Error>) {
        let Some(uri) = path_uri(path) else { return };
        let diagnostics = match error {
            None => Vec::new(),
            Some(err) => {
                let text = text.map_or_else(|| pysplice::files::read_text(path).unwrap_or_default(), str::to_string);
                let doc = Document::new(path.display().to_string(), &text);
                let range = doc.location_range(err.location()).unwrap_or_else(|| doc.line_range(1));
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
    pub fn check_open_spec(&self, key: &str) {
        let Some((uri, doc)) = self.specs.get(key) else { return };
        let Some(path) = uri_path(uri) else { return };
        let text = doc.text();
        // Read with its folder, so that code taken from files beside it (`code-from`) is checked too.
        let folder = CodeFolder::of_recipe(&path);
        let error = Recipe::from_toml_with(&path.display().to_string(), &text, &folder).err();
        let range = |err: &Error| doc.location_range(err.location()).unwrap_or_else(|| doc.line_range(1));
        let diagnostics = error
            .iter()
            .map(|err| diagnostic(range(err), DiagnosticSeverity::ERROR, "spec".into(), err.to_string()))
            .collect();
        self.publish(uri.clone(), diagnostics, Some(doc.version()));
    }

    /// Whether `uri` is one of the configured recipe files.
    pub fn is_spec(&self, uri: &Uri) -> bool {
        let Some(path) = uri_path(uri) else {
            return false;
        };
        self.config.spec_files.iter().any(|p| same_file(p, &path))
    }

    pub fn log(&self, message: String) {
        errln!("pysplice-lsp: {message}");
        let params = lsp_types::LogMessageParams {
            typ: MessageType::LOG,
            message,
        };
        self.send(Message::Notification(Notification::new(
            lsp_types::notification::LogMessage::METHOD.into(),
            params,
        )));
    }

    pub fn send(&self, message: Message) {
        if let Err(err) = self.connection.sender.send(message) {
            errln!("pysplice-lsp: cannot send: {err}");
        }
    }

    pub fn show(&self, typ: MessageType, message: String) {
        errln!("pysplice-lsp: {message}");
        let params = ShowMessageParams { typ, message };
        self.send(Message::Notification(Notification::new(
            ShowMessage::METHOD.into(),
            params,
        )));
    }

    pub fn publish(&self, uri: Uri, diagnostics: Vec<Diagnostic>, version: Option<i32>) {
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
}

/// How many problems one message names; the others are counted.
const NAMED_PROBLEMS: usize = 3;

/// One message for the configuration's problems: all of them up to [`NAMED_PROBLEMS`], else the
/// first few and how many more.
fn summary(problems: &[String]) -> Option<String> {
    match problems {
        [] => None,
        [only] => Some(clip(only, 1000)),
        _ => {
            let named: Vec<String> = problems.iter().take(NAMED_PROBLEMS).map(|p| clip(p, 300)).collect();
            let mut message = format!(
                "pysplice: {} problems with the recipe configuration: {}",
                problems.len(),
                named.join("; ")
            );
            if problems.len() > NAMED_PROBLEMS {
                message += &format!("; and {} more (in the server's log)", problems.len() - NAMED_PROBLEMS);
            }
            Some(message)
        }
    }
}

/// At most `limit` characters of `text`.
fn clip(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_string(),
    }
}

/// The recipes named by the initialization options (`{"recipes": [...]}`), or else by the
/// `pysplice.toml` at the workspace root.
fn load_config(root: Option<&Path>, options: Option<&serde_json::Value>) -> RecipeConfig {
    let mut bad_list = false;
    let names = options.and_then(|o| o.get("recipes")).map(|list| {
        let names = list.as_array().map(|items| {
            items
                .iter()
                .filter_map(|item| item.as_str().map(str::to_string))
                .collect()
        });
        bad_list = names.is_none();
        names.unwrap_or_default()
    });
    let mut config = RecipeConfig::load(root, names, pysplice_sglang::recipes::CATALOGUE);
    if bad_list {
        let problem = "initializationOptions.recipes must be a list of paths".to_string();
        config.problems.insert(0, problem);
    }
    if let (_, Some(problem)) = crate::convert::workspace_limit(options) {
        config.problems.insert(0, problem);
    }
    config
}
