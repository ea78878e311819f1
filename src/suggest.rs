//! "Did you mean": which known names are close to one that was not found, and how a message
//! offers them. One scorer for every lookup that fails (definition paths, class names, method
//! names, architectures), so the same typo gets the same help everywhere.
//!
//! A candidate is close when, ignoring case, it contains what was asked for (`Qwen3Moe` finds
//! `Qwen3MoeForCausalLM`), its last dotted segment shares most of the start of the asked one
//! (`DeepseekV3` finds `DeepseekV2ForCausalLM`), or it is a few edits away (a third of the
//! asked name's length, at least 3). For dotted paths a matching last segment counts almost as
//! much as a match of the whole path: the class was renamed, not the method. Containment ranks
//! first, then the edit distance, then the order the candidates came in.

/// The longest name (in chars) suggestions are looked for, and the longest candidate compared:
/// names are identifiers and dotted paths, a few dozen characters. A longer one (an 8 MB
/// "architecture" in a downloaded `config.json`) gets no suggestions instead of an edit distance
/// that takes minutes.
pub(crate) const MAX_SUGGESTED_NAME: usize = 256;

/// Levenshtein distance over chars. O(len(a) * len(b)) time, O(len(b)) memory.
#[must_use]
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (row[j + 1] + 1).min(row[j] + 1).min(diagonal + usize::from(ca != cb));
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// The last dotted segment of `path`.
fn last_segment(path: &str) -> &str {
    path.rsplit('.').next().unwrap_or(path)
}

/// Up to `limit` of `candidates` close to `wanted`, best first (see the [module](self) for what
/// is close); each name once.
pub(crate) fn closest<'a>(wanted: &str, candidates: impl IntoIterator<Item = &'a str>, limit: usize) -> Vec<String> {
    if wanted.chars().nth(MAX_SUGGESTED_NAME).is_some() {
        return Vec::new();
    }
    let wanted = wanted.to_lowercase();
    let wanted_last = last_segment(&wanted);
    let cutoff = (wanted.chars().count() / 3).max(3);
    let shared_start = (wanted_last.chars().count() * 2 / 3).max(4);
    let mut scored: Vec<(bool, usize, &str)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for candidate in candidates {
        // Each name once (a set: a list searched per candidate is quadratic in a large file).
        if candidate.chars().nth(MAX_SUGGESTED_NAME).is_some() || !seen.insert(candidate) {
            continue;
        }
        let lower = candidate.to_lowercase();
        let last = last_segment(&lower);
        let contains = lower.contains(&wanted);
        let distance = edit_distance(&wanted, &lower).min(edit_distance(wanted_last, last).saturating_add(2));
        let prefix = wanted_last
            .chars()
            .zip(last.chars())
            .take_while(|(a, b)| a == b)
            .count();
        if contains || distance <= cutoff || prefix >= shared_start {
            scored.push((!contains, distance, candidate));
        }
    }
    // Stable: ties keep the candidates' order.
    scored.sort_by_key(|&(far, distance, _)| (far, distance));
    scored.into_iter().take(limit).map(|(_, _, c)| c.to_string()).collect()
}

/// `; did you mean `a`, `b`?` for a message, or nothing without candidates.
pub(crate) fn did_you_mean<S: AsRef<str>>(candidates: &[S]) -> String {
    if candidates.is_empty() {
        return String::new();
    }
    let quoted: Vec<String> = candidates.iter().map(|c| format!("`{}`", c.as_ref())).collect();
    format!("; did you mean {}?", quoted.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_counts_single_edits() {
        assert_eq!(edit_distance("forward", "forwad"), 1);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn typos_find_the_name() {
        let paths = ["Model", "Model.__init__", "Model.forward", "helper"];
        assert_eq!(closest("Model.forwrd", paths, 3), ["Model.forward"]);
        assert_eq!(closest("Model.backward", paths, 3), ["Model.forward"]);
        // The method kept, the class renamed.
        assert_eq!(closest("Net.forward", paths, 3), ["Model.forward"]);
        assert!(closest("Nothing.like.it", paths, 3).is_empty());
    }

    #[test]
    fn containment_and_a_shared_start_count_and_rank_first() {
        let classes = ["DeepseekV2ForCausalLM", "Qwen2MoeForCausalLM", "Qwen3MoeForCausalLM"];
        assert_eq!(
            closest("qwen3moeforcausallm", classes, 5),
            ["Qwen3MoeForCausalLM", "Qwen2MoeForCausalLM"]
        );
        assert_eq!(closest("DeepseekV3", classes, 5), ["DeepseekV2ForCausalLM"]);
        assert_eq!(closest("Qwen3Moe", classes, 5)[0], "Qwen3MoeForCausalLM");
        // The class of a path is not a suggestion for a member it lacks.
        assert_eq!(
            closest("Model.backward", ["Model", "Model.forward"], 5),
            ["Model.forward"]
        );
    }

    #[test]
    fn each_name_once_and_at_most_the_limit() {
        assert_eq!(closest("abcd", ["abce", "abce", "abcf", "abcg"], 2), ["abce", "abcf"]);
    }

    #[test]
    fn long_names_get_no_suggestions() {
        let long = "Qwen3MoeForCausalLM".repeat(100);
        assert!(closest(&long, ["Qwen3MoeForCausalLM"], 3).is_empty());
        assert!(closest("Qwen3MoeForCausalLM", [long.as_str()], 3).is_empty());
    }

    #[test]
    fn messages_quote_the_candidates() {
        assert_eq!(did_you_mean::<&str>(&[]), "");
        assert_eq!(did_you_mean(&["a", "b.c"]), "; did you mean `a`, `b.c`?");
    }
}
