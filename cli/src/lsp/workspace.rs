//! The workspace command `pysplice.applyRecipeToWorkspace`: a recipe on every Python file of the
//! workspace, as one `workspace/applyEdit`.
//!
//! Named (or the only one configured), the recipe goes on every file it concerns. Without a name
//! and with several recipes, each file gets the recipe that targets it: one of whose hooks with
//! a target (not `module`) finds that target there, its `requires` met. Where that is not clear
//! (a file that several recipes target, or no file that any targets) nothing is changed yet: the
//! client is asked through `window/showMessageRequest`, one action per recipe, and the command is
//! answered once it has chosen (the chosen recipe applied as if named) or declined (nothing
//! changed, and a message says so). `pysplice.listRecipes` lists the recipes for a client's own
//! picker.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use lsp_server::{ErrorCode, Message, RequestId, Response};
use lsp_types::request::{Request as _, ShowMessageRequest};
use lsp_types::{MessageActionItem, MessageType, ShowMessageRequestParams, Uri};
use pysplice::{Document, TextEdit};
use pysplice::{ParsedFile, Recipe, SourceFile, Target};

use crate::convert::{path_uri, python_files, workspace_edits, workspace_limit};
use crate::server::{Question, Server};

/// The command that lists the configured recipes: `[{"id", "summary"}]`.
pub const LIST_RECIPES: &str = "pysplice.listRecipes";

/// The most questions that may wait for the client's answer at once.
const MAX_QUESTIONS: usize = 8;

/// How many files a question names; the others are counted.
const NAMED_FILES: usize = 3;

/// What a command gives: its result now, or nothing yet (a question is out, see [`Question`]).
pub type Answer = Result<Option<serde_json::Value>, (ErrorCode, String)>;

/// A workspace file: as typed where it is open, else as saved.
struct FileText {
    uri: Uri,
    doc: Document,
    /// The open document's version; `None` for a file on disk.
    version: Option<i32>,
}

/// The edits of one run over the workspace, and the files that could not be done.
#[derive(Default)]
struct Run {
    changes: Vec<(Uri, Option<i32>, Vec<TextEdit>)>,
    failed: Vec<String>,
    /// The most `.py` files looked at ([`workspace_limit`]).
    limit: usize,
    /// The `.py` files over the limit, not looked at.
    left_out: usize,
}

/// What the client is told when a workspace has more `.py` files than a command looks at.
fn left_out_message(limit: usize, left_out: usize) -> String {
    format!(
        "pysplice: the workspace has more than {limit} Python files; the recipe was applied to the first {limit} found, {left_out} were left out (open a smaller folder, or run `pysplice apply` on the folders in question)"
    )
}

impl Run {
    /// Plans `recipe` on `file` and keeps its verified edits when the file is concerned and not
    /// up to date.
    fn apply(&mut self, recipe: &Recipe, file: FileText) {
        let shown = file.doc.name().to_string();
        // Files that do not parse are not the recipe's business here; they are listed.
        let (plan, kept) = match file.doc.plan_keeping(recipe) {
            Ok(pair) => pair,
            Err(err) => {
                self.failed.push(err.to_string());
                return;
            }
        };
        if !plan.relevant || !plan.pending {
            if plan.relevant && !plan.is_complete() {
                self.failed
                    .push(format!("{shown}: a hook of {} cannot be placed", recipe.id));
            }
            return;
        }
        match file.doc.apply_edits_from(recipe, kept) {
            Ok(edits) if !edits.is_empty() => self.changes.push((file.uri, file.version, edits)),
            Ok(_) => {}
            Err(err) => self.failed.push(err.to_string()),
        }
    }
}

impl Server<'_> {
    /// `pysplice.applyRecipeToWorkspace [recipe id]`, asked by the request `command`.
    pub fn apply_to_workspace(&mut self, command: RequestId, recipe: Option<&str>) -> Answer {
        match (recipe, self.recipes.as_slice()) {
            (Some(id), _) => self.apply_named(id).map(Some),
            (None, [only]) => {
                let id = only.id.clone();
                self.apply_named(&id).map(Some)
            }
            (None, []) => Err((ErrorCode::InvalidParams, "no recipe is configured".into())),
            (None, _) => self.apply_by_target(command),
        }
    }

    /// `pysplice.listRecipes`: the configured recipes, in order.
    pub fn list_recipes(&self) -> serde_json::Value {
        let list: Vec<serde_json::Value> = self
            .recipes
            .iter()
            .map(|r| serde_json::json!({ "id": r.id, "summary": r.summary }))
            .collect();
        serde_json::Value::Array(list)
    }

    /// Applies the recipe `id` to every Python file of the workspace that it concerns and that is
    /// not up to date. Answers with the files changed and those that could not be.
    fn apply_named(&mut self, id: &str) -> Result<serde_json::Value, (ErrorCode, String)> {
        let Some(recipe) = self.recipes.iter().find(|r| r.id == id).cloned() else {
            let ids: Vec<&str> = self.recipes.iter().map(|r| r.id.as_str()).collect();
            return Err((
                ErrorCode::InvalidParams,
                format!(
                    "no recipe `{}` is configured: name one of {ids:?}",
                    pysplice::report::shown(id)
                ),
            ));
        };
        let root = self.workspace_folder()?;
        let (limit, _) = workspace_limit(self.options.as_ref());
        let (paths, left_out) = python_files(&root, limit);
        let mut run = Run {
            limit,
            left_out,
            ..Run::default()
        };
        for path in paths {
            if let Some(file) = self.file_text(&path, &mut run.failed) {
                run.apply(&recipe, file);
            }
        }
        Ok(self.send_run(run, vec![recipe.id]))
    }

    /// Each file gets the one recipe that targets it; where several target a file, or none
    /// targets any, the client is asked first.
    fn apply_by_target(&mut self, command: RequestId) -> Answer {
        let root = self.workspace_folder()?;
        let recipes = self.recipes.clone();
        let (limit, _) = workspace_limit(self.options.as_ref());
        let (paths, left_out) = python_files(&root, limit);
        let mut run = Run {
            limit,
            left_out,
            ..Run::default()
        };
        let mut used = BTreeSet::new();
        // Files that several recipes target, with those recipes (indexes into `recipes`).
        let mut ambiguous: Vec<(String, Vec<usize>)> = Vec::new();
        for path in paths {
            let Some(file) = self.file_text(&path, &mut run.failed) else {
                continue;
            };
            let source = SourceFile::new(file.doc.name(), file.doc.text());
            let parsed = match ParsedFile::parse(source) {
                Ok(parsed) => parsed,
                Err(err) => {
                    run.failed.push(err.to_string());
                    continue;
                }
            };
            let which: Vec<usize> = (0..recipes.len()).filter(|&i| targets(&recipes[i], &parsed)).collect();
            match which.as_slice() {
                [] => {}
                [one] => {
                    used.insert(*one);
                    // Once a question is due nothing is applied: the edits would be thrown away.
                    if ambiguous.is_empty() {
                        run.apply(&recipes[*one], file);
                    }
                }
                _ => ambiguous.push((file.doc.name().to_string(), which)),
            }
        }
        if ambiguous.is_empty() && !used.is_empty() {
            let ids = used.iter().map(|&i| recipes[i].id.clone()).collect();
            return Ok(Some(self.send_run(run, ids)));
        }
        let (offered, message) = if ambiguous.is_empty() {
            let offered: Vec<String> = recipes.iter().map(|r| r.id.clone()).collect();
            let message = "pysplice: no configured recipe targets a Python file of the workspace. Apply one anyway?";
            (offered, message.to_string())
        } else {
            let wanted: BTreeSet<usize> = ambiguous.iter().flat_map(|(_, which)| which.iter().copied()).collect();
            let offered: Vec<String> = wanted.iter().map(|&i| recipes[i].id.clone()).collect();
            let mut files: Vec<String> = ambiguous
                .iter()
                .take(NAMED_FILES)
                .map(|(name, which)| {
                    let ids: Vec<&str> = which.iter().map(|&i| recipes[i].id.as_str()).collect();
                    format!("{} ({})", pysplice::report::shown(name), ids.join(", "))
                })
                .collect();
            if ambiguous.len() > NAMED_FILES {
                files.push(format!("{} more", ambiguous.len() - NAMED_FILES));
            }
            let message = format!(
                "pysplice: several recipes target {}. Which one to apply to the workspace?",
                files.join("; ")
            );
            (offered, message)
        };
        self.ask(command, offered, message)?;
        Ok(None)
    }

    /// Sends the question; the command is answered when the client answers it.
    fn ask(&mut self, command: RequestId, offered: Vec<String>, message: String) -> Result<(), (ErrorCode, String)> {
        if self.questions.len() >= MAX_QUESTIONS {
            return Err((
                ErrorCode::RequestFailed,
                format!("{MAX_QUESTIONS} questions already wait for an answer: name the recipe"),
            ));
        }
        let actions = offered
            .iter()
            .map(|id| MessageActionItem {
                title: id.clone(),
                properties: HashMap::new(),
            })
            .collect();
        let params = ShowMessageRequestParams {
            typ: MessageType::INFO,
            message,
            actions: Some(actions),
        };
        let params = serde_json::to_value(params).unwrap_or_default();
        let id = self.request_client(ShowMessageRequest::METHOD, params);
        self.questions.insert(id, Question { command, offered });
        Ok(())
    }

    /// The client's answer to a question: the chosen recipe is applied; a dismissal, an error or
    /// an action that was not offered changes nothing, and a message says so. Answers to other
    /// requests are dropped.
    pub fn answered(&mut self, response: Response) {
        let Some(question) = self.questions.remove(&response.id) else {
            return;
        };
        let chosen = response
            .result
            .as_ref()
            .and_then(|r| r.get("title"))
            .and_then(serde_json::Value::as_str)
            .filter(|title| question.offered.iter().any(|id| id == title))
            .map(str::to_string);
        let result = match chosen {
            Some(id) => self.apply_named(&id),
            None => {
                self.show(
                    MessageType::INFO,
                    "pysplice: no recipe chosen: nothing was changed".into(),
                );
                Ok(serde_json::json!({
                    "recipe": null, "recipes": [], "changed": [], "failed": [], "cancelled": true,
                }))
            }
        };
        let response = match result {
            Ok(value) => Response::new_ok(question.command, value),
            Err((code, message)) => Response::new_err(question.command, code as i32, message),
        };
        self.send(Message::Response(response));
    }

    /// `$/cancelRequest` of a command whose question is out: the command is answered
    /// `RequestCancelled` and a later answer to the question changes nothing.
    pub fn cancel_question(&mut self, command: &RequestId) {
        let asked = self
            .questions
            .iter()
            .find(|(_, q)| &q.command == command)
            .map(|(id, _)| id.clone());
        if let Some(asked) = asked {
            self.questions.remove(&asked);
            self.refuse_cancelled(command.clone());
        }
    }

    /// Answers every command whose question is still out `RequestCancelled` (at `shutdown`).
    pub fn drop_questions(&mut self) {
        for (_, question) in std::mem::take(&mut self.questions) {
            self.refuse_cancelled(question.command);
        }
    }

    fn refuse_cancelled(&self, command: RequestId) {
        let code = ErrorCode::RequestCanceled as i32;
        let message = "the command was cancelled before a recipe was chosen: nothing was changed".to_string();
        self.send(Message::Response(Response::new_err(command, code, message)));
    }

    fn workspace_folder(&self) -> Result<std::path::PathBuf, (ErrorCode, String)> {
        self.root
            .clone()
            .ok_or_else(|| (ErrorCode::InvalidParams, "no workspace folder".into()))
    }

    /// The text of a workspace file: as typed when it is open. A file that cannot be read, or
    /// is over the file size limit, is listed in `failed`.
    fn file_text(&self, path: &Path, failed: &mut Vec<String>) -> Option<FileText> {
        let uri = path_uri(path)?;
        let (doc, version) = match self.open.get(uri.as_str()) {
            Some(open) => (open.doc.clone(), Some(open.doc.version())),
            None => match pysplice::files::read_text(path) {
                Ok(text) => (Document::new(path.display().to_string(), &text), None),
                Err(err) => {
                    failed.push(err.to_string());
                    return None;
                }
            },
        };
        if let Some(failure) = crate::open::too_large(&doc) {
            failed.push(format!("{}: {}", path.display(), failure.message));
            return None;
        }
        Some(FileText { uri, doc, version })
    }

    /// Sends the run's edits in one `workspace/applyEdit` and gives the command's answer:
    /// `{"recipe": the only recipe or null, "recipes", "changed": [uri], "failed": [message],
    /// "left_out": count}`; files left out over the limit are also shown as a warning.
    fn send_run(&mut self, run: Run, recipes: Vec<String>) -> serde_json::Value {
        if run.left_out > 0 {
            self.show(MessageType::WARNING, left_out_message(run.limit, run.left_out));
        }
        let files: Vec<&str> = run.changes.iter().map(|(uri, _, _)| uri.as_str()).collect();
        let only = match recipes.as_slice() {
            [only] => serde_json::Value::from(only.as_str()),
            _ => serde_json::Value::Null,
        };
        let answer = serde_json::json!({
            "recipe": only, "recipes": recipes, "changed": files, "failed": run.failed,
            "left_out": run.left_out,
        });
        if !run.changes.is_empty() {
            let label = match recipes.as_slice() {
                [only] => format!("Apply recipe {only} to the workspace"),
                _ => format!("Apply recipes {} to the workspace", recipes.join(", ")),
            };
            let edit = workspace_edits(run.changes, self.client.document_changes);
            self.request_client(
                "workspace/applyEdit",
                serde_json::json!({ "label": label, "edit": edit }),
            );
        }
        answer
    }
}

/// Whether `recipe` targets the parsed file: one of its hooks with a target (not `module`)
/// finds that target there (the N-th definition of a path, one of several paths, or a class a
/// `[select.NAME]` table picks in this file), and the definitions its `requires` names exist.
fn targets(recipe: &Recipe, parsed: &ParsedFile) -> bool {
    recipe.hooks.iter().any(|hook| {
        let requires = hook
            .requires
            .iter()
            .all(|path| !parsed.find_all(path.split('#').next().unwrap_or(path)).is_empty());
        let found = match &hook.target {
            Target::Module => false,
            Target::Definition { path, ordinal } => parsed.find_all(path).len() >= ordinal.unwrap_or(1).max(1),
            Target::Paths(paths) => paths.iter().any(|p| parsed.locate(p).is_ok()),
            Target::Select { .. } => pysplice::project::select::in_file(recipe, parsed, &hook.id)
                .is_ok_and(|paths| paths.iter().any(|p| parsed.locate(p).is_ok())),
        };
        requires && found
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recipe(hooks: &str) -> Recipe {
        let text = format!("[recipe]\nid = \"r\"\nsummary = \"s\"\n{hooks}");
        Recipe::from_toml("r.toml", &text).expect("a valid recipe")
    }

    fn parsed(text: &str) -> ParsedFile {
        ParsedFile::parse(SourceFile::new("m.py", text)).expect("valid Python")
    }

    const TWO_F: &str = "def f():\n    pass\n\nclass A:\n    def g(self):\n        pass\n";

    #[test]
    fn files_over_the_limit_are_counted_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..5 {
            std::fs::write(dir.path().join(format!("m{i}.py")), "").unwrap();
        }
        let (kept, left_out) = python_files(dir.path(), 3);
        assert_eq!((kept.len(), left_out), (3, 2));
        assert_eq!(python_files(dir.path(), 5).1, 0);
        let message = left_out_message(3, 2);
        assert!(message.contains("more than 3 Python files"), "{message}");
        assert!(message.contains("2 were left out"), "{message}");
    }

    #[test]
    fn the_workspace_limit_may_be_lowered_never_raised() {
        use crate::convert::MAX_WORKSPACE_FILES;
        assert_eq!(MAX_WORKSPACE_FILES, 50_000);
        assert_eq!(workspace_limit(None), (MAX_WORKSPACE_FILES, None));
        let options = |value: serde_json::Value| Some(serde_json::json!({ "maxWorkspaceFiles": value }));
        assert_eq!(workspace_limit(options(3.into()).as_ref()), (3, None));
        assert_eq!(
            workspace_limit(options(MAX_WORKSPACE_FILES.into()).as_ref()).0,
            MAX_WORKSPACE_FILES
        );
        let bad: [serde_json::Value; 5] = [
            0.into(),
            (MAX_WORKSPACE_FILES + 1).into(),
            (-1).into(),
            "9".into(),
            2.5.into(),
        ];
        for bad in bad {
            let (limit, problem) = workspace_limit(options(bad).as_ref());
            assert_eq!(limit, MAX_WORKSPACE_FILES);
            assert!(problem.is_some_and(|p| p.contains("from 1 to 50000")));
        }
    }

    #[test]
    fn a_recipe_targets_a_file_where_a_targeted_hook_finds_its_target() {
        let file = parsed(TWO_F);
        let hook = |target: &str| {
            format!("[[hook]]\nid = \"h\"\nsummary = \"s\"\nin = \"{target}\"\nat = \"start\"\ncode = \"pass\"\n")
        };
        assert!(targets(&recipe(&hook("A.g")), &file));
        assert!(targets(&recipe(&hook("f")), &file));
        assert!(!targets(&recipe(&hook("A.h")), &file));
        // The second `f` is not there.
        assert!(!targets(&recipe(&hook("f#2")), &file));
        // Module-level hooks fit every file and target none.
        let module = "[[hook]]\nid = \"i\"\nsummary = \"s\"\nensure-imports = [\"os\"]\n";
        assert!(!targets(&recipe(module), &file));
        assert!(!targets(&recipe(&format!("{module}{}", hook("B.g"))), &file));
        // `requires` unmet: the hook would be skipped, so it targets nothing here.
        let requires = format!("{}requires = [\"Missing\"]\n", hook("A.g"));
        assert!(!targets(&recipe(&requires), &file));
        let requires = format!("{}requires = [\"f\"]\n", hook("A.g"));
        assert!(targets(&recipe(&requires), &file));
    }

    #[test]
    fn a_selection_targets_the_files_where_it_selects_a_class() {
        let selecting = recipe(
            "[conventions]\nentry-list = \"EntryClass\"\n\n[select.entry]\nentries = true\nhas-method = \"forward\"\n\n\
             [[hook]]\nid = \"h\"\nsummary = \"s\"\nin = { class = \"entry\", method = \"forward\" }\nat = \"start\"\ncode = \"pass\"\n",
        );
        let listed = "class M:\n    def forward(self):\n        pass\n\nEntryClass = M\n";
        assert!(targets(&selecting, &parsed(listed)));
        assert!(!targets(
            &selecting,
            &parsed("class M:\n    def forward(self):\n        pass\n")
        ));
    }
}
