//! The bounds pysplice keeps on its input and output, so that no file, recipe or template can
//! exhaust memory or the stack: each is refused with an error naming the limit, before the work
//! that would need more.
//!
//! ```
//! use pysplice::limits::MAX_FILE_BYTES;
//! use pysplice::{files, ErrorKind};
//!
//! let dir = tempfile::tempdir().unwrap();
//! let big = dir.path().join("big.py");
//! std::fs::File::create(&big).unwrap().set_len(MAX_FILE_BYTES + 1).unwrap();
//! let err = files::read_text(&big).unwrap_err();
//! assert!(matches!(err.kind(), ErrorKind::TooLarge { .. }), "{err}");
//! ```

use std::fmt;

/// The largest file pysplice reads or writes: 16 MiB. The largest Python modules of big
/// projects are a few hundred KiB; anything near this size is not source a recipe should patch.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// The most bytes one template may render to: 16 MiB, the limit of a file pysplice reads and
/// writes ([`MAX_FILE_BYTES`]); longer code could never be written into one.
pub const MAX_RENDERED_BYTES: usize = 16 * 1024 * 1024;

/// The most bytes of code one recipe may render to, all its hooks' code (`code`,
/// `wrap-returns`) with the placeholders filled in: 64 MiB, four times the file limit. Each
/// hook's code is bounded on its own by [`MAX_RENDERED_BYTES`] (16 MiB). Both are measured
/// before any text is built, so a large variable used many times is a spec error instead of an
/// exhausted memory.
pub const MAX_RECIPE_CODE_BYTES: usize = 4 * MAX_RENDERED_BYTES;

/// The deepest syntax tree pysplice accepts. Deeper files are refused with a clear error rather
/// than risking the caller's stack in the recursive passes over the tree: a debug build on a
/// 2 MiB thread overflows near 1,600 levels, so this keeps a margin of more than two.
pub const MAX_DEPTH: usize = 600;

/// The deepest nesting the pre-scan (run before the parser) lets through, in estimated levels
/// of the syntax tree: thirty times CPython's limit, so that no file CPython compiles is refused
/// while a hostile one cannot overflow the parser's stack.
pub const MAX_NESTING: usize = 100_000;

/// A rendering refused by `crate::Template::render`: the text would be longer than the limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TooLong {
    /// The length the text would have; `None` when it does not even fit a `usize`.
    pub bytes: Option<usize>,
    /// The limit it is over.
    pub limit: usize,
}

impl fmt::Display for TooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.bytes {
            Some(bytes) => write!(f, "{bytes} bytes, more than the limit of {} bytes", self.limit),
            None => write!(
                f,
                "more bytes than a computer can count, over the limit of {} bytes",
                self.limit
            ),
        }
    }
}
