//! Which invariant a patched text broke: the verification's own reasons, which the crate's
//! [`ErrorKind::Verify`](crate::ErrorKind::Verify) carries.

/// Which invariant a patched text broke ([`ErrorKind::Verify`](crate::ErrorKind::Verify)).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyReason {
    /// The patched text does not parse.
    #[error("the patched text does not parse: {message}")]
    Unparsable {
        /// The parse error, as shown.
        message: String,
    },
    /// CPython's compiler would refuse the patched file (and not the original).
    #[error("CPython would refuse the patched file: {message}")]
    CompilerRefuses {
        /// CPython's message (`'await' outside function`, ...).
        message: String,
    },
    /// Bytes outside the edited ranges changed.
    #[error("bytes outside the edited ranges changed")]
    OutsideChanged,
    /// Removing the marker lines does not give back the original text.
    #[error("removing the markers does not give back the original text")]
    NotReversible,
    /// Without the inserted statements the syntax tree is not the original's.
    #[error("without the inserted statements the syntax tree differs from the original")]
    TreeChanged,
}
