//! Requests and notifications: dispatch, text sync, watched files, diagnostics, hover.

use std::panic::{catch_unwind, AssertUnwindSafe};

use lsp_server::{ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types::notification::{
    Cancel, DidChangeTextDocument, DidChangeWatchedFiles, DidCloseTextDocument, DidOpenTextDocument, Notification as _,
};
use lsp_types::request::{CodeActionRequest, CodeActionResolveRequest, ExecuteCommand, HoverRequest, Request as _};
use lsp_types::{
    CancelParams, CodeAction, CodeActionParams, Diagnostic, DidChangeTextDocumentParams, DidChangeWatchedFilesParams,
    DidCloseTextDocumentParams, DidOpenTextDocumentParams, ExecuteCommandParams, Hover, HoverContents, HoverParams,
    MarkupContent, MarkupKind, NumberOrString, Uri,
};
use pysplice::{Document, Utf16Position};

use crate::convert::{diagnostic, from_range, to_range, uri_name, uri_path};
use crate::open::{hook_diagnostic, plan_of, Open};
use crate::server::{Server, APPLY_ACTION, APPLY_TO_WORKSPACE};
use crate::workspace::{Answer, LIST_RECIPES};

impl Server<'_> {
    pub fn request(&mut self, request: Request) {
        let id = request.id.clone();
        let method = request.method.clone();
        let result = catch_unwind(AssertUnwindSafe(|| self.dispatch(request)));
        let response = match result {
            Ok(Ok(Some(value))) => Response::new_ok(id, value),
            // Answered once the client has answered a question (`workspace.rs`).
            Ok(Ok(None)) => return,
            Ok(Err((code, message))) => Response::new_err(id, code as i32, message),
            Err(_) => Response::new_err(id, ErrorCode::InternalError as i32, format!("{method} failed (a bug)")),
        };
        self.send(Message::Response(response));
    }

    /// The result of `request`: now, or `None` when it is answered later (a question to the
    /// client is out).
    pub fn dispatch(&mut self, request: Request) -> Answer {
        let bad = |err: serde_json::Error| (ErrorCode::InvalidParams, err.to_string());
        let value = match request.method.as_str() {
            HoverRequest::METHOD => {
                let params: HoverParams = serde_json::from_value(request.params).map_err(bad)?;
                serde_json::to_value(self.hover(&params)).unwrap_or_default()
            }
            CodeActionRequest::METHOD => {
                let params: CodeActionParams = serde_json::from_value(request.params).map_err(bad)?;
                serde_json::to_value(self.code_actions(&params)).unwrap_or_default()
            }
            CodeActionResolveRequest::METHOD => {
                let action: CodeAction = serde_json::from_value(request.params).map_err(bad)?;
                let action = self.resolve(action)?;
                serde_json::to_value(action).unwrap_or_default()
            }
            ExecuteCommand::METHOD => {
                let params: ExecuteCommandParams = serde_json::from_value(request.params).map_err(bad)?;
                match params.command.as_str() {
                    APPLY_TO_WORKSPACE => {
                        let recipe = params.arguments.first().and_then(serde_json::Value::as_str);
                        return self.apply_to_workspace(request.id, recipe);
                    }
                    LIST_RECIPES => self.list_recipes(),
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
                        serde_json::Value::Null
                    }
                    other => return Err((ErrorCode::InvalidParams, format!("unknown command `{other}`"))),
                }
            }
            other => {
                return Err((
                    ErrorCode::MethodNotFound,
                    format!("pysplice-lsp does not handle `{other}`"),
                ))
            }
        };
        Ok(Some(value))
    }

    /// A response from the client: the answer to a question, or to a request whose answer is
    /// not awaited (`client/registerCapability`, `workspace/applyEdit`).
    pub fn response(&mut self, response: Response) {
        if catch_unwind(AssertUnwindSafe(|| self.answered(response))).is_err() {
            errln!("pysplice-lsp: handling a response failed (a bug)");
        }
    }

    pub fn notification(&mut self, notification: Notification) {
        let method = notification.method.clone();
        let result = catch_unwind(AssertUnwindSafe(|| self.notify(notification)));
        match result {
            Ok(Ok(())) => {}
            Ok(Err(err)) => errln!("pysplice-lsp: {method}: {err}"),
            Err(_) => errln!("pysplice-lsp: {method} failed (a bug)"),
        }
    }

    pub fn notify(&mut self, notification: Notification) -> Result<(), serde_json::Error> {
        match notification.method.as_str() {
            Cancel::METHOD => {
                let params: CancelParams = serde_json::from_value(notification.params)?;
                let id = match params.id {
                    NumberOrString::Number(n) => RequestId::from(n),
                    NumberOrString::String(s) => RequestId::from(s),
                };
                self.cancel_question(&id);
            }
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
                let revision = self.new_revision();
                self.open.insert(key.clone(), Open::new(item.uri, doc, revision));
                self.dirty.insert(key);
            }
            DidChangeTextDocument::METHOD => {
                let params: DidChangeTextDocumentParams = serde_json::from_value(notification.params)?;
                let key = params.text_document.uri.as_str().to_string();
                let revision = self.new_revision();
                let doc = match (self.open.get_mut(&key), self.specs.get_mut(&key)) {
                    (Some(open), _) => {
                        open.changed(revision);
                        &mut open.doc
                    }
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
                    if let Some(path) = uri_path(&params.text_document.uri) {
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
    pub fn publish_dirty(&mut self) {
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

    pub fn hover(&mut self, params: &HoverParams) -> Option<Hover> {
        let at = &params.text_document_position_params;
        let open = self.open.get_mut(at.text_document.uri.as_str())?;
        let position = Utf16Position::new(at.position.line, at.position.character);
        let (recipe_id, hook_id, range) = match open.doc.marker_at(position) {
            Some(marker) => (
                marker.recipe,
                marker.hook,
                open.doc.line_range(position.line as usize + 1),
            ),
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
}
