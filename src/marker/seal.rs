//! The seal of a frame: what it covers, how older markers were hashed, and the checks that a
//! frame's claim about the text it displaced holds (see the [`marker`](super) module doc).

use sha2::{Digest, Sha256};

use super::grammar::{self, Seal};
use crate::parse::parse_snippet;
use crate::syntax::{kind, ABSENT};

/// Bumped when what the seal covers changes, so an old seal never verifies new content.
const SEAL_VERSION: &str = "pysplice-marker-2";

/// The seal of a frame: SHA-256 over the kind, ids, displaced text, inserted text and column,
/// each field length-prefixed so no two different frames hash the same input.
pub(super) fn seal(kind: &str, recipe: &str, hook: &str, displaced: &str, content: &str, column: usize) -> String {
    let mut hasher = Sha256::new();
    let column = column.to_string();
    for field in [SEAL_VERSION, kind, recipe, hook, displaced, content, &column] {
        hasher.update((field.len() as u64).to_le_bytes());
        hasher.update(field.as_bytes());
    }
    grammar::seal_token(&hasher.finalize())
}

/// The hash older markers carry: the low 32 bits of the 64-bit FNV-1a of the inserted text.
fn legacy_hash(text: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{:08x}", hash & 0xffff_ffff)
}

/// What a frame says about itself, checked against its seal.
pub(super) struct Claim<'a> {
    pub(super) kind: &'static str,
    pub(super) recipe: &'a str,
    pub(super) hook: &'a str,
    pub(super) displaced: &'a str,
    pub(super) content: &'a str,
    /// The code a reader sees in place of the displaced text: `content`, or for an expanded
    /// one-line suite, its content without the recipe's other hooks framed inside it.
    pub(super) shown: &'a str,
    pub(super) column: usize,
}

/// Why a frame cannot be trusted.
pub(super) enum Broken {
    /// The seal does not match: the frame was edited.
    Edited,
    /// An older marker whose displaced text cannot be checked.
    Unchecked(&'static str),
}

impl Claim<'_> {
    /// The seal first (an edit of anything revert relies on), then whether the displaced text
    /// is visible in the code the frame holds: a marker cannot carry code of its own that
    /// revert would write (see [`displaced_fits`]).
    pub(super) fn check(&self, seal: &Seal) -> Result<(), Broken> {
        let sealed = match seal {
            Seal::Current(token) => {
                *token
                    == self::seal(
                        self.kind,
                        self.recipe,
                        self.hook,
                        self.displaced,
                        self.content,
                        self.column,
                    )
            }
            Seal::Legacy(token) => *token == legacy_hash(self.content),
        };
        if !sealed {
            return Err(Broken::Edited);
        }
        if displaced_fits(self.kind, self.displaced, self.shown) {
            Ok(())
        } else {
            Err(Broken::Unchecked(
                "the text this marker would put back does not appear in the code it frames (was the marker forged?)",
            ))
        }
    }
}

/// Whether the displaced text of a frame shows in its inserted text, so that revert writes
/// nothing a reader of the code could not see: a wrapped return keeps the returned value (or
/// `None` for a bare `return`), an expanded one-line suite keeps the suite. Pure insertions
/// displace nothing; replaced statements are checked against the recipe's pattern by the
/// engine, which knows the recipe.
fn displaced_fits(kind: &str, displaced: &str, content: &str) -> bool {
    match kind {
        "inline" => {
            // Compared as syntax: the value may sit in parentheses, after comments, on several
            // lines of the displaced statement.
            let value_of = |text: &str| {
                let stmts = parse_snippet("<marker>", text).ok()?;
                match stmts.as_slice() {
                    [stmt] if stmt.is(kind::RETURN) => stmt.children().first().cloned(),
                    _ => None,
                }
            };
            let (Some(old), Some(new)) = (value_of(displaced), value_of(content)) else {
                return false;
            };
            if old.kind() == ABSENT {
                return content.contains("None");
            }
            let mut found = false;
            new.walk(&mut |node| {
                found |= node.same_shape(&old);
                !found
            });
            found
        }
        "joined" => content.split(['\n', '\r']).any(|line| line.trim() == displaced.trim()),
        _ => true,
    }
}
