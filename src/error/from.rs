//! How the errors of the modules below cross into the crate's [`Error`]: each module raises its
//! own type, and `?` converts it here, at the boundary, into the [`ErrorKind`] that names it.
//! A public entry point of such a module that returns [`Error`] is defined here too, so that the
//! module itself never names this one.

use super::{Error, ErrorKind};
use crate::edit::Conflict;
use crate::marker::MarkerError;
use crate::parse::SyntaxError;
use crate::source::{DecodeError, SourceFile};

impl From<DecodeError> for Error {
    fn from(err: DecodeError) -> Error {
        match err {
            DecodeError::Encoding { message, location } => ErrorKind::Syntax { message }.at(location),
            DecodeError::NotUtf8 { byte, location } => ErrorKind::NotUtf8 { byte }.at(location),
        }
    }
}

impl From<Conflict> for Error {
    fn from(err: Conflict) -> Error {
        let Conflict {
            first,
            second,
            location,
        } = err;
        ErrorKind::Conflict { first, second }.at(location)
    }
}

impl From<MarkerError> for Error {
    fn from(err: MarkerError) -> Error {
        let MarkerError { reason, location, hook } = err;
        ErrorKind::Marker { reason: *reason }.at(location).with_hook(&hook)
    }
}

impl From<SyntaxError> for Error {
    fn from(err: SyntaxError) -> Error {
        ErrorKind::Syntax { message: err.message }.at(err.location)
    }
}

impl SourceFile {
    /// Decodes `bytes` as UTF-8; anything else is an [`ErrorKind::NotUtf8`] naming the first bad byte.
    /// A PEP 263 coding declaration (`# -*- coding: latin-1 -*-` on line 1 or 2) must name UTF-8:
    /// pysplice writes back what it reads, in UTF-8 only.
    ///
    /// # Errors
    /// [`ErrorKind::Syntax`] naming the declaration when it declares another encoding (or, after a
    /// UTF-8 byte order mark, anything but UTF-8, as CPython says), [`ErrorKind::NotUtf8`] when the
    /// bytes are not valid UTF-8.
    pub fn from_bytes(name: impl Into<String>, bytes: Vec<u8>) -> Result<SourceFile, Error> {
        Ok(SourceFile::decode(name.into(), bytes)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::location::Location;
    use crate::MarkerReason;

    #[test]
    fn a_marker_error_keeps_its_reason_and_says_the_remedy() {
        let error = |reason| {
            Error::from(MarkerError {
                reason: Box::new(reason),
                location: Location::new("f.py", 3, 1),
                hook: "h".into(),
            })
        };
        let stacked = MarkerReason::Stacked {
            top: "b".into(),
            top_hook: "wrap".into(),
            top_line: 7,
        };
        let err = error(stacked.clone());
        assert!(matches!(err.kind(), ErrorKind::Marker { reason } if *reason == stacked));
        assert_eq!(
            err.to_string(),
            "f.py:3:1: recipe `b` was applied on top of this change (its marker for hook `wrap` is at line 7); revert `b` first [hook h]"
        );
        assert_eq!(
            error(MarkerReason::CloseWithoutOpen).to_string(),
            "f.py:3:1: closing marker without an opening marker; restore the block or remove it by hand, then run again [hook h]"
        );
    }
}
