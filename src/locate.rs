//! Finding definitions by path: `DeepseekV2Model.forward`, `Outer.Inner.method`, `f.<locals>.g`,
//! with `#N` to pick the N-th of several definitions of one path (`A.f#2`), and `module` for the
//! file itself.

use unicode_normalization::UnicodeNormalization;

use crate::error::{Error, ErrorKind};
use crate::location::Location;
use crate::outline::{DefKind, Definition, ParsedFile};

/// A dotted path as written (`A.b`, `f.<locals>.g`, `pkg.mod.Class.method`, `A.f#2`), split
/// into its segments and the ordinal after `#`: the one reader of dotted paths, for hook
/// targets ([`Target::parse`]) and project queries alike; each caller says what a segment may
/// be and words its own errors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DottedPath<'a> {
    /// The path without its ordinal.
    pub(crate) path: &'a str,
    /// Its segments, in order (at least one).
    pub(crate) segments: Vec<&'a str>,
    /// The 1-based ordinal after `#`, when written.
    pub(crate) ordinal: Option<usize>,
}

/// Why a dotted path cannot be read ([`DottedPath::parse`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PathProblem<'a> {
    /// The text after `#` is not a number from 1.
    BadOrdinal,
    /// Nothing before `#`.
    Empty,
    /// A segment the caller's rule refuses (an empty one included).
    BadSegment(&'a str),
}

impl<'a> DottedPath<'a> {
    /// Reads `text` (already trimmed): the ordinal first, then each segment, checked by
    /// `is_segment`; the first problem in that order.
    pub(crate) fn parse(text: &'a str, is_segment: impl Fn(&str) -> bool) -> Result<DottedPath<'a>, PathProblem<'a>> {
        let (path, ordinal) = match text.split_once('#') {
            Some((path, n)) => match n.parse::<usize>() {
                Ok(n) if n >= 1 => (path, Some(n)),
                _ => return Err(PathProblem::BadOrdinal),
            },
            None => (text, None),
        };
        if path.is_empty() {
            return Err(PathProblem::Empty);
        }
        let segments: Vec<&str> = path.split('.').collect();
        if let Some(bad) = segments.iter().find(|s| !is_segment(s)) {
            return Err(PathProblem::BadSegment(bad));
        }
        Ok(DottedPath {
            path,
            segments,
            ordinal,
        })
    }
}

/// A parsed target path: which definition a hook applies to.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// The module itself.
    Module,
    /// A class or function by qualified path, optionally the N-th (1-based) of several.
    Definition {
        /// Qualified path, `__qualname__` style.
        path: String,
        /// Which occurrence, when the path is defined more than once.
        ordinal: Option<usize>,
    },
    /// Definitions chosen by meaning: for each class a `[select.NAME]` table of the recipe picks,
    /// the class itself (`method` absent) or the method that runs for it (its own or a base's).
    Select {
        /// The selector's name.
        selector: String,
        /// The method, when the target is a method of the selected classes.
        method: Option<String>,
    },
    /// Several definitions of one file, each by path as [`Target::parse`] reads it (`A.f`,
    /// `B.g#2`): what a [`Target::Select`] hook becomes in one file once its selector is resolved
    /// ([`project::select`](crate::project::select) gives such recipes, one per file). A
    /// recipe read from TOML never holds it; a hook with it runs on each path in turn, and a
    /// path the file does not define is refused as for [`Target::Definition`].
    Paths(Vec<String>),
}

impl Target {
    /// Parses `module`, `A.b`, `A.b#2`, `f.<locals>.g`.
    ///
    /// # Errors
    /// [`ErrorKind::BadPath`] (located at `file:1:1`) for empty segments, bad ordinals or characters
    /// that cannot appear in a Python name.
    pub fn parse(text: &str, file: &str) -> Result<Target, Error> {
        let bad = |reason: &str| {
            ErrorKind::BadPath {
                path: text.to_string(),
                reason: reason.to_string(),
            }
            .at(Location::new(file, 1, 1))
        };
        let text_trimmed = text.trim();
        if text_trimmed == "module" {
            return Ok(Target::Module);
        }
        // Non-ASCII characters are let through: Python names take XID characters that are not
        // alphanumeric (`a·b`, `℘`), and a path that cannot match is reported as not found.
        let name_char = |c: char| c == '_' || c.is_alphanumeric() || !c.is_ascii();
        let is_segment = |segment: &str| {
            let valid_name = segment.starts_with(|c: char| !c.is_ascii_digit()) && segment.chars().all(name_char);
            valid_name || segment == "<locals>"
        };
        let DottedPath { path, ordinal, .. } =
            DottedPath::parse(text_trimmed, is_segment).map_err(|problem| match problem {
                PathProblem::BadOrdinal => bad("the ordinal after `#` must be a number from 1"),
                PathProblem::Empty => bad("the path is empty; write `module` or a path such as `Class.method`"),
                PathProblem::BadSegment(segment) => bad(&format!("`{segment}` is not a Python name")),
            })?;
        // Python compares identifiers after NFKC normalization (PEP 3131); so does the outline.
        let path = if path.is_ascii() {
            path.to_string()
        } else {
            path.nfkc().collect()
        };
        Ok(Target::Definition { path, ordinal })
    }
}

impl ParsedFile {
    /// Every definition whose path is exactly `path`, in source order.
    #[must_use]
    pub fn find_all(&self, path: &str) -> Vec<&Definition> {
        self.definitions().iter().filter(|d| d.path() == path).collect()
    }

    /// The single definition at `path` (`Class.method`, optionally `#N`).
    ///
    /// ```
    /// let src = "class M:\n    def forward(self):\n        return 1\n";
    /// let parsed = pysplice::ParsedFile::parse(pysplice::SourceFile::new("m.py", src))?;
    /// assert_eq!(parsed.locate("M.forward")?.line(), 2);
    /// let err = parsed.locate("M.forwad").unwrap_err();
    /// assert!(err.to_string().contains("did you mean `M.forward`?"));
    /// # Ok::<(), pysplice::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`ErrorKind::NotFound`] with the closest candidates and, when the class exists, its members;
    /// [`ErrorKind::Ambiguous`] listing every line when the path is defined several times and no
    /// ordinal picks one; [`ErrorKind::BadPath`] for a malformed path or `module`.
    pub fn locate(&self, text: &str) -> Result<&Definition, Error> {
        let name = self.source().name();
        let (path, ordinal) = match Target::parse(text, name)? {
            Target::Definition { path, ordinal } => (path, ordinal),
            // `parse` gives only paths and `module`.
            Target::Module | Target::Select { .. } | Target::Paths(_) => {
                return Err(ErrorKind::BadPath {
                    path: text.to_string(),
                    reason: "`module` is the whole file, not a definition".into(),
                }
                .at(Location::new(name, 1, 1)))
            }
        };
        let found = self.find_all(&path);
        match (found.len(), ordinal) {
            (0, _) => Err(self.not_found(&path)),
            (1, None | Some(1)) => Ok(found[0]),
            (_, Some(n)) if n <= found.len() => Ok(found[n - 1]),
            (count, Some(n)) => Err(ErrorKind::BadPath {
                path: text.to_string(),
                reason: format!(
                    "asks for occurrence {n} but it is defined {}",
                    crate::printable::counted(count, "time", "times")
                ),
            }
            .at(self.source().location(found[0].range().start))),
            (_, None) => Err(ErrorKind::Ambiguous {
                path,
                lines: found.iter().map(|d| d.line()).collect(),
            }
            .at(self.source().location(found[0].range().start))),
        }
    }

    fn not_found(&self, path: &str) -> Error {
        let parent_path = path
            .rsplit_once('.')
            .map(|(parent, _)| parent.trim_end_matches(".<locals>"));
        let parent = parent_path.and_then(|p| self.find_all(p).into_iter().next());
        let members: Vec<String> = parent
            .filter(|p| p.kind() == DefKind::Class)
            .map(|p| {
                let prefix = format!("{}.", p.path());
                self.definitions()
                    .iter()
                    .filter(|d| d.path().strip_prefix(&prefix).is_some_and(|rest| !rest.contains('.')))
                    .map(|d| d.name().to_string())
                    .fold(Vec::new(), |mut names, name| {
                        if !names.contains(&name) {
                            names.push(name);
                        }
                        names
                    })
            })
            .unwrap_or_default();
        let location = match parent {
            Some(p) => self.source().location(p.range().start),
            None => Location::new(self.source().name(), 1, 1),
        };
        ErrorKind::NotFound {
            path: path.to_string(),
            candidates: self.closest_paths(path, 3).into(),
            members: members.into(),
        }
        .at(location)
    }

    /// Up to `limit` definition paths closest to `path` (the scorer of `crate::suggest`; ties:
    /// source order).
    #[must_use]
    pub fn closest_paths(&self, path: &str, limit: usize) -> Vec<String> {
        crate::suggest::closest(path, self.definitions().iter().map(Definition::path), limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::SourceFile;

    fn parsed(text: &str) -> ParsedFile {
        ParsedFile::parse(SourceFile::new("t.py", text)).unwrap()
    }

    #[test]
    fn duplicate_paths_need_an_ordinal() {
        let p = parsed("class A:\n    if X:\n        def f(self): pass\n    else:\n        def f(self): return 1\n");
        let err = p.locate("A.f").unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::Ambiguous { lines, .. } if lines == &[3, 5]),
            "{err}"
        );
        assert_eq!(p.locate("A.f#2").unwrap().line(), 5);
        assert!(matches!(
            p.locate("A.f#3").as_ref().map_err(Error::kind),
            Err(ErrorKind::BadPath { .. })
        ));
    }

    #[test]
    fn missing_method_lists_class_members() {
        let p = parsed("class Model:\n    def __init__(self): pass\n    def forward(self): pass\n");
        let err = p.locate("Model.backward").unwrap_err();
        let ErrorKind::NotFound {
            candidates, members, ..
        } = err.kind()
        else {
            panic!("{err}")
        };
        assert_eq!(&members[..], ["__init__", "forward"]);
        assert_eq!(candidates.first().map(String::as_str), Some("Model.forward"));
        assert_eq!(err.location().line, 1);
    }

    #[test]
    fn bad_paths_are_rejected() {
        for bad in ["", "A..b", "A.b#0", "A.b#x", "A.1b", "A-b"] {
            assert!(
                matches!(
                    Target::parse(bad, "t.py").as_ref().map_err(Error::kind),
                    Err(ErrorKind::BadPath { .. })
                ),
                "{bad}"
            );
        }
        assert_eq!(Target::parse("module", "t.py").unwrap(), Target::Module);
        assert_eq!(
            Target::parse("f.<locals>.g#2", "t.py").unwrap(),
            Target::Definition {
                path: "f.<locals>.g".into(),
                ordinal: Some(2)
            }
        );
    }

    #[test]
    fn a_dotted_path_is_read_ordinal_first_then_each_segment() {
        let any = |_: &str| true;
        let ok = DottedPath::parse("A.b#2", any).unwrap();
        assert_eq!((ok.path, ok.segments, ok.ordinal), ("A.b", vec!["A", "b"], Some(2)));
        assert_eq!(DottedPath::parse("A.b#0", any), Err(PathProblem::BadOrdinal));
        assert_eq!(DottedPath::parse("A..b#x", any), Err(PathProblem::BadOrdinal));
        assert_eq!(DottedPath::parse("#1", any), Err(PathProblem::Empty));
        let named = |s: &str| crate::syntax::is_identifier(s);
        assert_eq!(DottedPath::parse("A..b", named), Err(PathProblem::BadSegment("")));
        assert_eq!(DottedPath::parse("A.1b", named), Err(PathProblem::BadSegment("1b")));
    }
}
