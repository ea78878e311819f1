//! Code actions: apply and revert a recipe on one file (eagerly, through `codeAction/resolve`,
//! or through a command). The workspace command is `workspace.rs`'s.

use lsp_server::ErrorCode;
use lsp_types::{CodeAction, CodeActionDisabled, CodeActionKind, CodeActionOrCommand, CodeActionParams, Diagnostic};
use pysplice::{DocumentPlan, Recipe, Status};

use crate::convert::workspace_edit;
use crate::open::{edits_of, plan_of, Open};
use crate::server::{Client, Server, APPLY_ACTION};

impl Server<'_> {
    /// "Apply recipe ID" / "Revert recipe ID" (refactor), and the apply as a quick fix of the
    /// diagnostics of hooks it would place or update. Answered from the plan the diagnostics made;
    /// where the client resolves code actions the edits are computed only when one is chosen.
    pub fn code_actions(&mut self, params: &CodeActionParams) -> Vec<CodeActionOrCommand> {
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
        let client = &self.client;
        let Some(open) = self.open.get_mut(params.text_document.uri.as_str()) else {
            return Vec::new();
        };
        let mut actions = Vec::new();
        for recipe in &self.recipes {
            let Ok(plan) = plan_of(open, recipe) else { continue };
            if !plan.relevant {
                continue;
            }
            let fixes = apply_fixes(&params.context.diagnostics, &recipe.id);
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
                complete(&mut action, client, open, recipe, &plan, revert);
                actions.push(CodeActionOrCommand::CodeAction(action));
            }
        }
        actions
    }

    /// `codeAction/resolve`: the verified edits of an action [`Server::code_actions`] offered.
    pub fn resolve(&mut self, mut action: CodeAction) -> Result<CodeAction, (ErrorCode, String)> {
        let data = action.data.clone().unwrap_or_default();
        let field = |name: &str| data.get(name).cloned().unwrap_or_default();
        let (uri, recipe_id) = (field("uri"), field("recipe"));
        let (Some(uri), Some(recipe_id)) = (uri.as_str(), recipe_id.as_str()) else {
            return Err((ErrorCode::InvalidParams, "not a pysplice code action".into()));
        };
        let revert = field("revert").as_bool().unwrap_or(false);
        let (revision, hash) = (field("revision").as_u64(), field("hash"));
        let document_changes = self.client.document_changes;
        let recipe = self.recipes.iter().find(|r| r.id == recipe_id);
        let (Some(open), Some(recipe)) = (self.open.get_mut(uri), recipe) else {
            return Err((ErrorCode::ContentModified, "the file or the recipe is gone".into()));
        };
        // Only the text the action was offered for: the client's version number is no proof
        // (a client may keep it across a change).
        if !open.offered_for(revision, hash.as_str()) {
            return Err((
                ErrorCode::ContentModified,
                "the file changed since the action was offered".into(),
            ));
        }
        let edits = edits_of(open, recipe, revert).map_err(|reason| (ErrorCode::RequestFailed, reason))?;
        action.edit = Some(workspace_edit(&open.uri, open.doc.version(), edits, document_changes));
        Ok(action)
    }
}

/// The diagnostics that `recipe`'s apply fixes (their data says so).
fn apply_fixes(diagnostics: &[Diagnostic], recipe: &str) -> Vec<Diagnostic> {
    let says = |d: &Diagnostic, key: &str, value: &str| {
        d.data
            .as_ref()
            .and_then(|v| v.get(key))
            .and_then(serde_json::Value::as_str)
            == Some(value)
    };
    diagnostics
        .iter()
        .filter(|d| says(d, "fix", "apply") && says(d, "recipe", recipe))
        .cloned()
        .collect()
}

/// Gives an offered action its edit now, or what it takes to make it when chosen (resolve data,
/// a command), or the reason it is disabled.
fn complete(
    action: &mut CodeAction,
    client: &Client,
    open: &mut Open,
    recipe: &Recipe,
    plan: &DocumentPlan,
    revert: bool,
) {
    if !revert && !plan.is_complete() {
        let reason = plan
            .hooks
            .iter()
            .find(|h| matches!(h.status, Status::Failed { .. }))
            .map_or_else(|| "a hook cannot be placed".to_string(), |h| h.message.clone());
        action.disabled = Some(CodeActionDisabled { reason });
    } else if client.resolve_edit || client.apply_edit {
        // The edit is made when the action is chosen: through `codeAction/resolve`, or the
        // command and `workspace/applyEdit`.
        let data = serde_json::json!({
            "uri": open.uri.as_str(),
            "version": open.doc.version(),
            "revision": open.revision,
            "hash": open.hash(),
            "recipe": recipe.id,
            "revert": revert,
        });
        if !client.resolve_edit {
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
                let edit = workspace_edit(&open.uri, open.doc.version(), edits, client.document_changes);
                action.edit = Some(edit);
            }
            Err(reason) => action.disabled = Some(CodeActionDisabled { reason }),
        }
    }
}
