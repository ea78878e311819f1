//! An open Python file: its plans and edits cached per revision of its text, and its diagnostics.
//!
//! The cache key is the server's own revision number, one per text the server has held (every
//! `didOpen` and `didChange` takes a new one), never the client's version: a client may keep
//! its number across a change, and an edit made for the old text would corrupt the new one.
//! Code actions carry the revision and a hash of the text; a resolve for any other text is
//! refused ([`Open::offered_for`]).

use std::collections::HashMap;

use lsp_types::{Diagnostic, DiagnosticSeverity, Uri};
use pysplice::{Document, DocumentPlan, KeptPlan, TextEdit, Utf16Range};
use pysplice::{Error, ErrorKind, Recipe, Status};

use crate::convert::diagnostic;

/// Verified edits, or why there are none.
pub type Edits = Result<Vec<TextEdit>, String>;

/// An open Python file.
pub struct Open {
    pub uri: Uri,
    pub doc: Document,
    /// The server's number for the current text (unique in the session).
    pub revision: u64,
    /// A hash of the current text, made when first needed.
    hash: Option<String>,
    /// Per recipe id: the plan of `doc` at a revision.
    pub plans: HashMap<String, (u64, Result<DocumentPlan, Failure>)>,
    /// Per recipe id: the parse and plan behind `plans`, for the apply edits of that revision.
    pub kept: HashMap<String, (u64, KeptPlan)>,
    /// Per (recipe id, revert?): the verified edits at a revision (code actions are asked for on
    /// every cursor move; an apply parses twice).
    pub edits: HashMap<(String, bool), (u64, Edits)>,
    /// Per recipe id: the diagnostics of the last text that parsed, shown while the text does not.
    pub last_good: HashMap<String, Vec<Diagnostic>>,
}

impl Open {
    pub fn new(uri: Uri, doc: Document, revision: u64) -> Open {
        Open {
            uri,
            doc,
            revision,
            hash: None,
            plans: HashMap::new(),
            kept: HashMap::new(),
            edits: HashMap::new(),
            last_good: HashMap::new(),
        }
    }

    /// Takes a change of the text: a new revision; plans and edits of older ones are no use.
    pub fn changed(&mut self, revision: u64) {
        self.revision = revision;
        self.hash = None;
        self.plans.clear();
        self.kept.clear();
        self.edits.clear();
    }

    /// A hash of the current text (SHA-256, hex), computed once per revision.
    pub fn hash(&mut self) -> &str {
        self.hash.get_or_insert_with(|| text_hash(&self.doc))
    }

    /// Whether resolve data naming `revision` and `hash` was made for the current text.
    pub fn offered_for(&mut self, revision: Option<u64>, hash: Option<&str>) -> bool {
        revision == Some(self.revision) && hash.is_some_and(|h| h == self.hash())
    }

    /// Forgets every plan and edit (the recipes changed).
    pub fn forget(&mut self) {
        self.plans.clear();
        self.kept.clear();
        self.edits.clear();
        self.last_good.clear();
    }
}

/// Why a plan could not be made, for diagnostics.
#[derive(Clone)]
pub struct Failure {
    pub message: String,
    pub range: Utf16Range,
    pub severity: Option<DiagnosticSeverity>,
}

/// A hook's diagnostic; `data` tells the quick fix which recipe places it.
pub fn hook_diagnostic(recipe: &Recipe, plan: &DocumentPlan, hook: &pysplice::DocumentHook) -> Diagnostic {
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
    let fix = hook.status.is_pending() && plan.is_complete();
    d.data = Some(serde_json::json!({
        "recipe": recipe.id,
        "hook": hook.id,
        "fix": if fix { "apply" } else { "" },
    }));
    d
}

/// Why a text over the library's file size limit is not planned: the command-line programs do
/// not read such a file, and a parse of it would stall the server for every keystroke.
pub fn too_large(doc: &Document) -> Option<Failure> {
    let size = doc.len_bytes() as u64;
    (size > pysplice::limits::MAX_FILE_BYTES).then(|| Failure {
        message: format!(
            "the file has {size} bytes, more than the limit of {} bytes: not checked",
            pysplice::limits::MAX_FILE_BYTES
        ),
        range: doc.line_range(1),
        severity: Some(DiagnosticSeverity::INFORMATION),
    })
}

/// The SHA-256 of a document's text, in hex.
fn text_hash(doc: &Document) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(doc.text().as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The plan of `recipe` on the open file, cached per revision.
pub fn plan_of(open: &mut Open, recipe: &Recipe) -> Result<DocumentPlan, Failure> {
    let revision = open.revision;
    if let Some((at, plan)) = open.plans.get(&recipe.id) {
        if *at == revision {
            return plan.clone();
        }
    }
    if let Some(failure) = too_large(&open.doc) {
        open.plans.insert(recipe.id.clone(), (revision, Err(failure.clone())));
        return Err(failure);
    }
    let plan = open.doc.plan_keeping(recipe).map(|(plan, kept)| {
        open.kept.insert(recipe.id.clone(), (revision, kept));
        plan
    });
    let plan = plan.map_err(|err| {
        let range = open
            .doc
            .location_range(err.location())
            .unwrap_or_else(|| open.doc.line_range(1));
        let severity = match err.kind() {
            // Syntax errors are the Python tools' business (and the usual state while typing).
            ErrorKind::Syntax { .. } => None,
            ErrorKind::Marker { .. } => Some(DiagnosticSeverity::ERROR),
            _ => Some(DiagnosticSeverity::WARNING),
        };
        Failure {
            message: err.to_string(),
            range,
            severity,
        }
    });
    open.plans.insert(recipe.id.clone(), (revision, plan.clone()));
    plan
}

/// The verified edits that apply (or revert) `recipe` on the open file, cached per revision.
pub fn edits_of(open: &mut Open, recipe: &Recipe, revert: bool) -> Edits {
    let revision = open.revision;
    let key = (recipe.id.clone(), revert);
    if let Some((at, edits)) = open.edits.get(&key) {
        if *at == revision {
            return edits.clone();
        }
    }
    let edits = if revert {
        open.doc.revert_edits(recipe)
    } else {
        match open.kept.remove(&recipe.id) {
            // The parse and plan the diagnostics made for this text.
            Some((at, kept)) if at == revision => open.doc.apply_edits_from(recipe, kept),
            _ => open.doc.apply_edits(recipe),
        }
    };
    let edits = edits.map_err(|err: Error| err.to_string());
    open.edits.insert(key, (revision, edits.clone()));
    edits
}
