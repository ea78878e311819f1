//! An open Python file: its plans and edits cached per version, and its diagnostics.

use std::collections::HashMap;

use lsp_types::{Diagnostic, DiagnosticSeverity, Uri};
use pysplice::document::{Document, DocumentPlan, KeptPlan, Utf16Range};
use pysplice::{Error, ErrorKind, Recipe, Status};

use crate::convert::diagnostic;
use crate::server::Edits;

/// An open Python file.
pub struct Open {
    pub uri: Uri,
    pub doc: Document,
    /// Per recipe id: the plan of `doc` at a version.
    pub plans: HashMap<String, (i32, Result<DocumentPlan, Failure>)>,
    /// Per recipe id: the parse and plan behind `plans`, for the apply edits of that version.
    pub kept: HashMap<String, KeptPlan>,
    /// Per (recipe id, revert?): the verified edits at a version (code actions are asked for on
    /// every cursor move; an apply parses twice).
    pub edits: HashMap<(String, bool), (i32, Edits)>,
    /// Per recipe id: the diagnostics of the last text that parsed, shown while the text does not.
    pub last_good: HashMap<String, Vec<Diagnostic>>,
}

impl Open {
    pub fn new(uri: Uri, doc: Document) -> Open {
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
pub fn hook_diagnostic(recipe: &Recipe, plan: &DocumentPlan, hook: &pysplice::document::DocumentHook) -> Diagnostic {
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
pub fn plan_of(open: &mut Open, recipe: &Recipe) -> Result<DocumentPlan, Failure> {
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
            .unwrap_or_else(|| open.doc.line_range(1));
        let severity = match err.kind() {
            // Syntax errors are the Python tools' business (and the usual state while typing).
            ErrorKind::Syntax { .. } => None,
            ErrorKind::Marker { .. } | ErrorKind::Stacked { .. } => Some(DiagnosticSeverity::ERROR),
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
pub fn edits_of(open: &mut Open, recipe: &Recipe, revert: bool) -> Edits {
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
