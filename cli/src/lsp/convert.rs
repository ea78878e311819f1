//! Between LSP and pysplice: ranges, diagnostics, workspace edits, `file:` URIs, the workspace's
//! Python files.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use lsp_types::{
    Diagnostic, DiagnosticSeverity, DocumentChanges, InitializeParams, NumberOrString, OneOf,
    OptionalVersionedTextDocumentIdentifier, Position, Range, TextDocumentEdit, Uri, WorkspaceEdit,
};
use pysplice::{TextEdit, Utf16Position, Utf16Range};

pub fn diagnostic(range: Utf16Range, severity: DiagnosticSeverity, code: String, message: String) -> Diagnostic {
    Diagnostic {
        range: from_range(range),
        severity: Some(severity),
        code: Some(NumberOrString::String(code)),
        source: Some("pysplice".into()),
        message,
        ..Diagnostic::default()
    }
}

pub fn workspace_edit(uri: &Uri, version: i32, edits: Vec<TextEdit>, document_changes: bool) -> WorkspaceEdit {
    workspace_edits(vec![(uri.clone(), Some(version), edits)], document_changes)
}

/// One workspace edit over several files (the version is that of an open file, `None` for a
/// file on disk).
pub fn workspace_edits(files: Vec<(Uri, Option<i32>, Vec<TextEdit>)>, document_changes: bool) -> WorkspaceEdit {
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

/// The most `.py` files a workspace command looks at: the default, and the most
/// `initializationOptions.maxWorkspaceFiles` may ask for.
pub const MAX_WORKSPACE_FILES: usize = 50_000;

/// The most `.py` files a workspace command looks at: `initializationOptions.maxWorkspaceFiles`
/// when it is a whole number from 1 to [`MAX_WORKSPACE_FILES`] (a lower limit, for a slow machine),
/// else [`MAX_WORKSPACE_FILES`]; with the problem to report when the option is given but is not
/// such a number (a larger one is never taken: the limit bounds the work a workspace can ask for).
pub fn workspace_limit(options: Option<&serde_json::Value>) -> (usize, Option<String>) {
    let Some(given) = options.and_then(|o| o.get("maxWorkspaceFiles")) else {
        return (MAX_WORKSPACE_FILES, None);
    };
    match given.as_u64() {
        Some(n) if (1..=MAX_WORKSPACE_FILES as u64).contains(&n) => (n as usize, None),
        _ => {
            let shown = pysplice::report::shown(&given.to_string());
            let problem = format!(
                "initializationOptions.maxWorkspaceFiles must be a whole number from 1 to {MAX_WORKSPACE_FILES}, not {shown}; {MAX_WORKSPACE_FILES} is used"
            );
            (MAX_WORKSPACE_FILES, Some(problem))
        }
    }
}

/// The `.py` files under `root`, sorted, skipping hidden folders, virtual environments, caches and
/// build output (links not followed): the first `limit` found, and how many more were left out.
pub fn python_files(root: &Path, limit: usize) -> (Vec<PathBuf>, usize) {
    const SKIP: [&str; 5] = ["__pycache__", "node_modules", "target", "venv", "site-packages"];
    let mut found = Vec::new();
    let mut left_out = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() && !name.starts_with('.') && !SKIP.contains(&name.as_str()) {
                stack.push(entry.path());
            } else if kind.is_file() && name.ends_with(".py") {
                if found.len() < limit {
                    found.push(entry.path());
                } else {
                    left_out += 1;
                }
            }
        }
    }
    found.sort();
    (found, left_out)
}

/// The `file:` URI of an absolute path (percent-encoding what URIs do not allow).
pub fn path_uri(path: &Path) -> Option<Uri> {
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
pub fn same_file(a: &Path, b: &Path) -> bool {
    a == b || matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)), (Ok(x), Ok(y)) if x == y)
}

pub fn to_range(range: Range) -> Utf16Range {
    let at = |p: Position| Utf16Position::new(p.line, p.character);
    Utf16Range::new(at(range.start), at(range.end))
}

pub fn from_range(range: Utf16Range) -> Range {
    let at = |p: Utf16Position| Position::new(p.line, p.character);
    Range::new(at(range.start), at(range.end))
}

/// The file path of a `file:` URI (percent-decoded by the URI crate), if it is one: no host, or
/// `localhost`.
pub fn uri_path(uri: &Uri) -> Option<PathBuf> {
    if !uri.scheme()?.as_str().eq_ignore_ascii_case("file") {
        return None;
    }
    let host = uri.authority().map_or("", |a| a.host().as_str());
    if !(host.is_empty() || host.eq_ignore_ascii_case("localhost")) {
        return None;
    }
    let path = uri.path().as_estr().decode().into_string().ok()?;
    Some(PathBuf::from(path.into_owned()))
}

/// The name a document goes by in messages: its path, or its URI when it is not a file.
pub fn uri_name(uri: &Uri) -> String {
    uri_path(uri).map_or_else(|| uri.as_str().to_string(), |p| p.display().to_string())
}

#[allow(deprecated)] // root_uri and root_path: older clients send only these
pub fn workspace_root(params: &InitializeParams) -> Option<PathBuf> {
    let folder = params
        .workspace_folders
        .as_ref()
        .and_then(|f| f.first())
        .map(|f| &f.uri);
    folder
        .or(params.root_uri.as_ref())
        .and_then(uri_path)
        .or_else(|| params.root_path.as_ref().map(PathBuf::from))
}
