//! The pending names of one round of the related-names closure, searched for in a file's text
//! in one pass.
//!
//! Hashing every identifier of every file once per round made a query over a whole package
//! about six times slower, and a search per name is quadratic when thousands of names are
//! pending (a deep hierarchy). One automaton over all the names scans each file once, at memchr-like speed for
//! the handful of names an ordinary query has pending.

use aho_corasick::{AhoCorasick, MatchKind};

use super::contains_word;

/// The names a round searches for.
pub(super) struct Words<'w> {
    /// The names that are one identifier. Leftmost-longest: a match cannot straddle the
    /// non-identifier byte before a whole identifier, and at its start the longest name wins,
    /// so a shorter name that is only a prefix never hides the name that is the identifier.
    automaton: Option<AhoCorasick>,
    /// Names searched for one by one: those that are not one identifier (never met so far), or
    /// all of them if the automaton could not be built.
    others: Vec<&'w str>,
}

impl<'w> Words<'w> {
    /// The search for `names`.
    pub(super) fn new(names: &'w [String]) -> Words<'w> {
        let (single, others): (Vec<&str>, Vec<&str>) =
            names.iter().map(String::as_str).partition(|n| is_one_identifier(n));
        if single.is_empty() {
            return Words {
                automaton: None,
                others,
            };
        }
        match AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&single)
        {
            Ok(automaton) => Words {
                automaton: Some(automaton),
                others,
            },
            Err(_) => Words {
                automaton: None,
                others: names.iter().map(String::as_str).collect(),
            },
        }
    }

    /// Whether `text` mentions one of the names as a whole identifier.
    pub(super) fn in_text(&self, text: &str) -> bool {
        let bytes = text.as_bytes();
        let whole = |start: usize, end: usize| {
            !start.checked_sub(1).is_some_and(|i| is_ident_byte(bytes[i]))
                && !bytes.get(end).copied().is_some_and(is_ident_byte)
        };
        let found = self.automaton.as_ref().is_some_and(|a| {
            a.try_find_iter(bytes)
                .is_ok_and(|mut matches| matches.any(|m| whole(m.start(), m.end())))
        });
        found || self.others.iter().any(|w| contains_word(text, w))
    }
}

/// A byte of an identifier: ASCII letters, digits, `_`, and every byte of a non-ASCII character.
fn is_ident_byte(b: u8) -> bool {
    b == b'_' || b.is_ascii_alphanumeric() || b >= 0x80
}

fn is_one_identifier(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(is_ident_byte)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn mentions(text: &str, names: &[&str]) -> bool {
        let names: Vec<String> = names.iter().map(|n| (*n).to_string()).collect();
        Words::new(&names).in_text(text)
    }

    #[test]
    fn a_prefix_or_a_suffix_does_not_hide_the_whole_identifier() {
        assert!(mentions("x = FooBar()", &["Foo", "FooBar"]));
        assert!(mentions("x = FooBar()", &["FooBar", "Foo"]));
        assert!(!mentions("x = FooBar()", &["Foo", "oBar"]));
        assert!(mentions("xFoo Foo", &["Foo"]));
        assert!(!mentions("_Foo Fooé", &["Foo"]));
        assert!(mentions("a.b = 1", &["a.b", "zz"]));
        assert!(!mentions("anything", &[""]));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        /// On a small alphabet (prefixes, overlaps, non-ASCII and dotted names come often) the
        /// one-pass search answers what a search per name answers.
        #[test]
        fn one_pass_answers_what_a_search_per_name_answers(
            text in "(a|b|ab|ba|aab|é|_| |\\.| ){0,16}",
            names in proptest::collection::vec("(a|b|ab|ba|aab|aé|a\\.b|_a|)", 0..5),
        ) {
            let names: Vec<String> = names;
            let expected = names.iter().any(|n| contains_word(&text, n));
            prop_assert_eq!(Words::new(&names).in_text(&text), expected);
        }
    }
}
