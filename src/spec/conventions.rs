//! What a code base's own conventions say about its classes, beyond what Python says: which
//! module-level variable lists its entry classes, and which name parts mark auxiliary (draft)
//! classes. Neither the spec nor the project layer knows such a convention itself: a recipe's
//! `[conventions]` table names them, or a caller passes them in
//! [`ScanOptions`](crate::project::ScanOptions). They live with the spec, the lower layer, so
//! that the project layer depends on the spec and never the other way.

/// Conventions of a scanned code base (see the module documentation). The default has none: no
/// entry classes, no draft classes.
///
/// ```
/// use pysplice::Conventions;
///
/// let conventions = Conventions::default()
///     .with_entry_list("ENTRY_POINTS")
///     .with_draft_markers(["draft"]);
/// assert!(conventions.is_draft("models/DraftHead"));
/// assert!(!Conventions::default().is_draft("models/DraftHead"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Conventions {
    /// The module-level variable whose value lists entry classes (`X = A`, `X = [A, B]`,
    /// `X += [C]`); `None`: no class is an entry.
    pub entry_list: Option<String>,
    /// Name parts (matched lower-case) that mark a class as a draft when its name or its file's
    /// path contains one. Draft classes are flagged in answers and never selected as roots.
    pub draft_markers: Vec<String>,
}

impl Conventions {
    /// These conventions with entry classes listed in the module-level variable `name`.
    #[must_use]
    pub fn with_entry_list(mut self, name: impl Into<String>) -> Conventions {
        self.entry_list = Some(name.into());
        self
    }

    /// These conventions with `markers` marking draft classes (compared lower-case).
    #[must_use]
    pub fn with_draft_markers<S: Into<String>>(mut self, markers: impl IntoIterator<Item = S>) -> Conventions {
        self.draft_markers = markers.into_iter().map(|m| m.into().to_lowercase()).collect();
        self
    }

    /// Whether a class or file name contains a draft marker (case-insensitively).
    #[must_use]
    pub fn is_draft(&self, name: &str) -> bool {
        if self.draft_markers.is_empty() {
            return false;
        }
        let lower = name.to_lowercase();
        self.draft_markers.iter().any(|m| lower.contains(m.as_str()))
    }

    /// Whether `name` is the entry-list variable.
    pub(crate) fn is_entry_list(&self, name: &str) -> bool {
        self.entry_list.as_deref() == Some(name)
    }
}
