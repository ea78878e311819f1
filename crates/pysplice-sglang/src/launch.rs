//! How to start an SGLang server for the [`SGLANG_HS_DUMP`](crate::recipes::SGLANG_HS_DUMP) recipe: the
//! server flags and notes for each SGLang release.
//!
//! Everything here derives from `recipes/sglang_launch.json`, which
//! `scripts/sglang-launch-flags.py` writes from the server arguments of every `sglang` release on
//! PyPI (which flags exist, which are deprecated aliases, what is on by default). A new SGLang
//! release needs only a re-run of that script.
//!
//! ```
//! use pysplice_sglang::launch::{launch, ReleaseVersion};
//!
//! let release = ReleaseVersion::parse("0.2.14.post1").unwrap();
//! let launch = launch(Some(&release));
//! // Chunked prefill is on by default there, so the dump turns it off.
//! assert!(launch.flags.windows(2).any(|w| w == ["--chunked-prefill-size", "-1"]));
//! ```

use std::cmp::Ordering;
use std::fmt;
use std::sync::OnceLock;

use serde::Deserialize;

/// The per-release facts, as written by `scripts/sglang-launch-flags.py`.
pub const SGLANG_LAUNCH_DATA: &str = include_str!("../recipes/sglang_launch.json");

/// The flag that turns off (decode) CUDA graphs; a replayed graph skips the dump's Python code.
pub const DISABLE_CUDA_GRAPH: &str = "--disable-cuda-graph";
/// The flag that turns off prefill ("piecewise") CUDA graphs where they are a separate switch.
pub const DISABLE_PIECEWISE_CUDA_GRAPH: &str = "--disable-piecewise-cuda-graph";
/// The flag that turns off prefix reuse, so that every pass sees the whole prompt.
pub const DISABLE_RADIX_CACHE: &str = "--disable-radix-cache";
/// The flag whose value `-1` turns off chunked prefill, so that a prompt arrives in one pass.
pub const CHUNKED_PREFILL_SIZE: &str = "--chunked-prefill-size";
/// How the dump handles a prompt that chunked prefill cuts into several passes on a release.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chunking {
    /// Chunked prefill is off by default (and the dump would write a cut prompt's passes as
    /// `.ckpt.partial`).
    Off,
    /// The passes are stitched into one sample: a request is known by its `rids` (0.5.10+) or by
    /// its ReqToTokenPool row's KV locations, its end by `orig_seq_lens` (0.5.1+).
    Stitched,
    /// Stitched, but without `orig_seq_lens` (0.4.6 – 0.4.10.post2): whether a pass that fills the chunk
    /// budget cut its last prompt shows only at the next prefill pass.
    StitchedLate,
    /// The release shows no way to tell a request across passes: `--chunked-prefill-size -1`.
    Partial,
}

/// The first release whose passes the dump stitches (KV locations and the chunk size in the
/// model process), and the first with `forward_batch.orig_seq_lens`.
const STITCHED_FROM: ReleaseVersion = ReleaseVersion {
    major: 0,
    minor: 4,
    patch: 6,
    pre: None,
    post: 0,
};
const ORIG_SEQ_LENS_FROM: ReleaseVersion = ReleaseVersion {
    major: 0,
    minor: 5,
    patch: 1,
    pre: None,
    post: 0,
};

/// The flag that skips the warmup request, which would otherwise be dumped too.
pub const SKIP_SERVER_WARMUP: &str = "--skip-server-warmup";
/// The flag that keeps the order of passes simple (optional for the dump).
pub const DISABLE_OVERLAP_SCHEDULE: &str = "--disable-overlap-schedule";

/// A PyPI release number of `sglang`: `X.Y[.Z][rcN | .devN][.postN]`, ordered as PyPI orders
/// them (`0.5.14rc0 < 0.5.14 < 0.5.14.post1`). A leading `v` and a local suffix (`+cu12`) are
/// ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ReleaseVersion {
    /// `X`.
    pub major: u32,
    /// `Y`.
    pub minor: u32,
    /// `Z` (0 when absent).
    pub patch: u32,
    /// `.devN` or `rcN`, if any.
    pub pre: Option<PreRelease>,
    /// `N` of `.postN` (0 when absent).
    pub post: u32,
}

/// A pre-release suffix; `.dev` comes before `rc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PreRelease {
    /// `.devN`.
    Dev(u32),
    /// `rcN`.
    Rc(u32),
}

impl ReleaseVersion {
    /// Parses a release number; `None` for text that is not one, and for `0.0.x` (the fallback
    /// version of an SGLang that is not installed).
    pub fn parse(text: &str) -> Option<ReleaseVersion> {
        let text = text.trim();
        let text = text.strip_prefix('v').unwrap_or(text);
        let text = text.split('+').next().unwrap_or(text);
        let mut rest = text;
        let mut numbers = Vec::new();
        while numbers.len() < 3 {
            let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            if digits == 0 {
                break;
            }
            numbers.push(rest[..digits].parse::<u32>().ok()?);
            rest = &rest[digits..];
            match rest.strip_prefix('.') {
                Some(after) if after.starts_with(|c: char| c.is_ascii_digit()) => rest = after,
                _ => break,
            }
        }
        let (major, minor, patch) = match numbers[..] {
            [0, 0, ..] => return None,
            [a, b] => (a, b, 0),
            [a, b, c] => (a, b, c),
            _ => return None,
        };
        let mut pre = None;
        if let Some(n) = suffix_number(&mut rest, &["rc", ".rc"]) {
            pre = Some(PreRelease::Rc(n));
        } else if let Some(n) = suffix_number(&mut rest, &[".dev", "dev"]) {
            pre = Some(PreRelease::Dev(n));
        }
        let post = suffix_number(&mut rest, &[".post", "post"]).unwrap_or(0);
        Some(ReleaseVersion {
            major,
            minor,
            patch,
            pre,
            post,
        })
    }

    /// The sort key: a final release sorts after its pre-releases.
    fn key(&self) -> (u32, u32, u32, (u8, Option<PreRelease>), u32) {
        let stage = (u8::from(self.pre.is_none()), self.pre);
        (self.major, self.minor, self.patch, stage, self.post)
    }
}

/// Takes `<prefix><digits>` off the front of `rest` (digits optional, 0 when absent).
fn suffix_number(rest: &mut &str, prefixes: &[&str]) -> Option<u32> {
    let after = prefixes.iter().find_map(|p| rest.strip_prefix(p))?;
    let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let n = after[..digits].parse().unwrap_or(0);
    *rest = &after[digits..];
    Some(n)
}

impl PartialOrd for ReleaseVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ReleaseVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

impl fmt::Display for ReleaseVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        match self.pre {
            Some(PreRelease::Rc(n)) => write!(f, "rc{n}")?,
            Some(PreRelease::Dev(n)) => write!(f, ".dev{n}")?,
            None => {}
        }
        if self.post > 0 {
            write!(f, ".post{}", self.post)?;
        }
        Ok(())
    }
}

/// What one release's server arguments say, as `scripts/sglang-launch-flags.py` read them.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[non_exhaustive]
pub struct ReleaseFacts {
    /// The PyPI version, as published.
    pub version: String,
    /// Whether the release ships `sglang/srt/models/deepseek_v2.py` (the file the recipe patches).
    pub deepseek_v2: bool,
    /// Which of the flags the dump cares about the release accepts.
    #[serde(default)]
    pub flags: Vec<String>,
    /// Which of those are deprecated aliases.
    #[serde(default)]
    pub deprecated: Vec<String>,
    /// The declared default of `chunked_prefill_size` (None: unset, or chosen at startup).
    #[serde(default)]
    pub chunked_prefill_default: Option<i64>,
    /// Whether chunked prefill is on by default.
    #[serde(default)]
    pub chunked_prefill_on: bool,
    /// Whether prefill ("piecewise") CUDA graphs are on by default.
    #[serde(default)]
    pub piecewise_cuda_graph_on: bool,
    /// Whether `--disable-cuda-graph` turns off prefill graphs too (the deprecated alias does).
    #[serde(default)]
    pub disable_cuda_graph_covers_piecewise: bool,
    /// What a deprecated `--disable-cuda-graph` stands for, as its help names it.
    #[serde(default)]
    pub disable_cuda_graph_replacement: String,
}

impl ReleaseFacts {
    /// Whether the release accepts `flag`.
    pub fn has(&self, flag: &str) -> bool {
        self.flags.iter().any(|f| f == flag)
    }

    /// Whether `flag` is a deprecated alias in this release.
    pub fn is_deprecated(&self, flag: &str) -> bool {
        self.deprecated.iter().any(|f| f == flag)
    }

    /// The parsed [`version`](Self::version).
    pub fn release(&self) -> Option<ReleaseVersion> {
        ReleaseVersion::parse(&self.version)
    }

    /// Whether the dump needs `--disable-piecewise-cuda-graph`: prefill graphs are on by default
    /// and `--disable-cuda-graph` does not turn them off.
    pub fn needs_piecewise_flag(&self) -> bool {
        self.piecewise_cuda_graph_on && !self.disable_cuda_graph_covers_piecewise
    }

    /// How the dump handles chunked prefill on this release.
    pub fn chunking(&self) -> Chunking {
        let release = self.release();
        if release.is_some_and(|r| r >= STITCHED_FROM) {
            if release.is_some_and(|r| r >= ORIG_SEQ_LENS_FROM) {
                Chunking::Stitched
            } else {
                Chunking::StitchedLate
            }
        } else if self.chunked_prefill_on {
            Chunking::Partial
        } else {
            Chunking::Off
        }
    }

    /// The server flags the dump needs on this release, in the order they are printed.
    pub fn flags_for_dump(&self) -> Vec<&'static str> {
        let mut flags = Vec::new();
        if self.has(DISABLE_CUDA_GRAPH) {
            flags.push(DISABLE_CUDA_GRAPH);
        }
        if self.needs_piecewise_flag() && self.has(DISABLE_PIECEWISE_CUDA_GRAPH) {
            flags.push(DISABLE_PIECEWISE_CUDA_GRAPH);
        }
        if self.has(DISABLE_RADIX_CACHE) {
            flags.push(DISABLE_RADIX_CACHE);
        }
        if self.chunking() == Chunking::Partial && self.has(CHUNKED_PREFILL_SIZE) {
            flags.extend([CHUNKED_PREFILL_SIZE, "-1"]);
        }
        if self.has(SKIP_SERVER_WARMUP) {
            flags.push(SKIP_SERVER_WARMUP);
        }
        if self.has(DISABLE_OVERLAP_SCHEDULE) {
            flags.push(DISABLE_OVERLAP_SCHEDULE);
        }
        flags
    }
}

/// The data file's shape.
#[derive(Deserialize)]
struct LaunchData {
    releases: Vec<ReleaseFacts>,
}

/// Parses [`SGLANG_LAUNCH_DATA`], ordered by release.
fn parse_data(text: &str) -> Result<Vec<ReleaseFacts>, serde_json::Error> {
    let data: LaunchData = serde_json::from_str(text)?;
    let mut releases: Vec<_> = data
        .releases
        .into_iter()
        .filter(|facts| facts.release().is_some())
        .collect();
    releases.sort_by_key(|facts| facts.release());
    Ok(releases)
}

/// Every release in the data, oldest first (empty only if the bundled data could not be read,
/// which the crate's tests rule out).
pub fn releases() -> &'static [ReleaseFacts] {
    static RELEASES: OnceLock<Vec<ReleaseFacts>> = OnceLock::new();
    RELEASES.get_or_init(|| parse_data(SGLANG_LAUNCH_DATA).unwrap_or_default())
}

/// The releases that ship `deepseek_v2.py`, oldest first.
pub fn dump_releases() -> impl Iterator<Item = &'static ReleaseFacts> {
    releases().iter().filter(|facts| facts.deepseek_v2)
}

/// The facts of exactly `release`, if the data has it.
pub fn facts(release: &ReleaseVersion) -> Option<&'static ReleaseFacts> {
    releases()
        .iter()
        .find(|facts| facts.release().as_ref() == Some(release))
}

/// How to start the server for one release.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Launch {
    /// The server flags, each value its own item (`--chunked-prefill-size`, `-1`).
    pub flags: Vec<&'static str>,
    /// What to know beyond the flags.
    pub notes: Vec<String>,
    /// The release whose facts gave the flags (None: the generic list).
    pub basis: Option<&'static str>,
}

/// The flags printed when the release is unknown: those of the current releases (the last row
/// of the flag table), which all stitch chunked prefill (so no `--chunked-prefill-size -1`); the
/// note says where others differ.
const GENERIC_FLAGS: [&str; 4] = [
    DISABLE_CUDA_GRAPH,
    DISABLE_RADIX_CACHE,
    SKIP_SERVER_WARMUP,
    DISABLE_OVERLAP_SCHEDULE,
];

/// The server flags and notes the dump needs on `release`. A release in the data gets its own
/// flags; one newer than the newest known release gets the newest known flags, and an unlisted
/// one in between (a pre-release, a local build) those of the nearest earlier release, each with
/// a note saying so. Without a release, or for one older than the first `deepseek_v2.py`, the
/// generic list comes with a note on what to change per release (see [`launch_unknown`]).
pub fn launch(release: Option<&ReleaseVersion>) -> Launch {
    let Some(release) = release else {
        return launch_unknown("");
    };
    let (Some(first), Some(newest)) = (dump_releases().next(), dump_releases().last()) else {
        return launch_unknown("");
    };
    if first.release().is_some_and(|first| *release < first) {
        return Launch {
            flags: GENERIC_FLAGS.to_vec(),
            notes: vec![format!(
                "SGLang {release} is older than {}, the first release with deepseek_v2.py: {}",
                first.version,
                generic_advice()
            )],
            basis: None,
        };
    }
    if let Some(facts) = facts(release).filter(|facts| facts.deepseek_v2) {
        return launch_for(facts, None);
    }
    if newest.release().is_some_and(|newest| *release > newest) {
        let note = format!(
            "SGLang {release} is newer than the newest release pysplice knows ({}): these are the flags of {}; \
             check them against `python3 -m sglang.launch_server --help` (scripts/sglang-launch-flags.py \
             updates the data)",
            newest.version, newest.version
        );
        return launch_for(newest, Some(note));
    }
    let nearest = dump_releases()
        .filter(|facts| facts.release().is_some_and(|known| known < *release))
        .last()
        .unwrap_or(first);
    let note = format!(
        "SGLang {release} is not a release pysplice knows: these are the flags of {}, the nearest earlier release",
        nearest.version
    );
    launch_for(nearest, Some(note))
}

/// The generic flag list for an unknown release, with a note that starts with `SGLang release
/// unknown (<why>)` (just `SGLang release unknown` when `why` is empty) and says which flags
/// differ on which releases.
pub fn launch_unknown(why: &str) -> Launch {
    let head = if why.is_empty() {
        "SGLang release unknown".to_string()
    } else {
        format!("SGLang release unknown ({why})")
    };
    Launch {
        flags: GENERIC_FLAGS.to_vec(),
        notes: vec![format!("{head}: {}", generic_advice())],
        basis: None,
    }
}

/// The generic list for a file of no release (the demo's model): the flags of the current
/// releases, with a note on where other releases differ.
pub fn launch_current() -> Launch {
    Launch {
        flags: GENERIC_FLAGS.to_vec(),
        notes: vec![format!("these are the flags of current releases; {}", generic_advice())],
        basis: None,
    }
}

/// Which flags of the generic list to change on which releases, from the data, and where every
/// release's flags are listed.
fn generic_advice() -> String {
    let piecewise = ranges(|f| f.needs_piecewise_flag(), "-");
    let partial = ranges(|f| f.chunking() == Chunking::Partial, "-");
    let no_warmup = ranges(|f| !f.has(SKIP_SERVER_WARMUP), "-");
    let no_overlap = ranges(|f| !f.has(DISABLE_OVERLAP_SCHEDULE), "-");
    let mut add = Vec::new();
    if !piecewise.is_empty() {
        add.push(format!("{DISABLE_PIECEWISE_CUDA_GRAPH} on {}", piecewise.join(", ")));
    }
    if !partial.is_empty() {
        add.push(format!("{CHUNKED_PREFILL_SIZE} -1 on {}", partial.join(", ")));
    }
    let mut parts = Vec::new();
    if !add.is_empty() {
        parts.push(format!("add {}", add.join(" and ")));
    }
    let mut leave = Vec::new();
    if !no_warmup.is_empty() {
        leave.push(format!("{SKIP_SERVER_WARMUP} on {}", no_warmup.join(", ")));
    }
    if !no_overlap.is_empty() {
        leave.push(format!("{DISABLE_OVERLAP_SCHEDULE} on {}", no_overlap.join(", ")));
    }
    if !leave.is_empty() {
        parts.push(format!("leave out {}", leave.join(" and ")));
    }
    parts.push("every release's flags: sglang-hs-dump --flag-table".to_string());
    parts.join("; ")
}

/// The flags and notes of a release in the data, with `lead` as the first note.
fn launch_for(facts: &'static ReleaseFacts, lead: Option<String>) -> Launch {
    let mut notes: Vec<String> = lead.into_iter().collect();
    if facts.is_deprecated(DISABLE_CUDA_GRAPH) && facts.disable_cuda_graph_covers_piecewise {
        let since = dump_releases()
            .find(|f| f.is_deprecated(DISABLE_CUDA_GRAPH))
            .map_or(facts.version.as_str(), |f| f.version.as_str());
        let default = if facts.piecewise_cuda_graph_on {
            "prefill graphs are on by default there; "
        } else {
            ""
        };
        let same = if facts.disable_cuda_graph_replacement.is_empty() {
            String::new()
        } else {
            format!("same as {}", facts.disable_cuda_graph_replacement)
        };
        notes.push(format!(
            "{DISABLE_CUDA_GRAPH} is deprecated from {since} but still turns off both decode and prefill graphs \
             ({default}{same})"
        ));
    }
    if facts.chunking() == Chunking::StitchedLate && facts.chunked_prefill_on {
        notes.push(
            "chunked prefill stays on: a prompt's passes are stitched into one sample, but a prompt whose last \
             chunk exactly fills the chunk budget is settled only by the next prefill pass (send one more \
             request before stopping the server)"
                .into(),
        );
    }
    if !facts.has(SKIP_SERVER_WARMUP) {
        notes.push(
            "this release has no --skip-server-warmup: the warmup request sent at startup is dumped too; delete the \
             files written before your first request"
                .into(),
        );
    }
    Launch {
        flags: facts.flags_for_dump(),
        notes,
        basis: Some(facts.version.as_str()),
    }
}

/// The runs of consecutive `deepseek_v2.py` releases for which `holds` is true, each as `A` or
/// `A<dash>B`.
fn ranges(holds: impl Fn(&ReleaseFacts) -> bool, dash: &str) -> Vec<String> {
    let mut runs: Vec<(&str, &str)> = Vec::new();
    let mut open = false;
    for facts in dump_releases() {
        if !holds(facts) {
            open = false;
            continue;
        }
        match runs.last_mut() {
            Some(run) if open => run.1 = &facts.version,
            _ => runs.push((&facts.version, &facts.version)),
        }
        open = true;
    }
    runs.into_iter()
        .map(|(a, b)| if a == b { a.to_string() } else { format!("{a}{dash}{b}") })
        .collect()
}

/// The flag table of docs/sglang.md: one row per run of consecutive `deepseek_v2.py` releases that take the
/// same flags, as markdown.
pub fn flag_table() -> String {
    let mut rows: Vec<(&str, &str, Vec<&'static str>, Chunking)> = Vec::new();
    for facts in dump_releases() {
        let flags = facts.flags_for_dump();
        let chunking = facts.chunking();
        match rows.last_mut() {
            Some(row) if row.2 == flags && row.3 == chunking => row.1 = &facts.version,
            _ => rows.push((&facts.version, &facts.version, flags, chunking)),
        }
    }
    let mut table = String::from("| SGLang | flags | chunked prefill |\n|---|---|---|\n");
    for (first, last, flags, chunking) in rows {
        let span = if first == last {
            first.to_string()
        } else {
            format!("{first} – {last}")
        };
        let chunking = match chunking {
            Chunking::Off => "off by default",
            Chunking::Stitched => "stitched",
            Chunking::StitchedLate => "stitched (cut settled a pass later)",
            Chunking::Partial => "partial: turned off",
        };
        table.push_str(&format!("| {span} | `{}` | {chunking} |\n", flags.join(" ")));
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> ReleaseVersion {
        ReleaseVersion::parse(text).unwrap_or_else(|| panic!("{text} parses"))
    }

    #[test]
    fn parses_release_numbers() {
        assert_eq!(v("0.5.8.post1").to_string(), "0.5.8.post1");
        assert_eq!(v("0.5.14rc0").to_string(), "0.5.14rc0");
        assert_eq!(v("v0.4").to_string(), "0.4.0");
        assert_eq!(v("0.5.24.dev3+g1234").to_string(), "0.5.24.dev3");
        assert_eq!(ReleaseVersion::parse("0.0.0.dev0"), None);
        assert_eq!(ReleaseVersion::parse("latest"), None);
        assert_eq!(ReleaseVersion::parse("0"), None);
    }

    #[test]
    fn orders_like_pypi() {
        let order = [
            "0.2.9",
            "0.2.9.post1",
            "0.2.10",
            "0.5.14.dev1",
            "0.5.14rc0",
            "0.5.14",
            "0.5.14.post1",
        ];
        for pair in order.windows(2) {
            assert!(v(pair[0]) < v(pair[1]), "{} < {}", pair[0], pair[1]);
        }
    }

    #[test]
    fn bundled_data_reads_and_is_ordered() {
        let parsed = parse_data(SGLANG_LAUNCH_DATA).expect("the bundled data parses");
        assert_eq!(parsed.len(), releases().len());
        assert!(dump_releases().count() >= 123);
        for pair in releases().windows(2) {
            assert!(pair[0].release() < pair[1].release());
        }
    }

    #[test]
    fn chunked_prefill_on_by_default_before_0_2_15() {
        // Regression: 0.2.13 - 0.2.14.post2 default to chunked_prefill_size 8192.
        for release in ["0.2.13", "0.2.14", "0.2.14.post1", "0.2.14.post2"] {
            let flags = launch(Some(&v(release))).flags;
            assert!(
                flags.windows(2).any(|w| w == [CHUNKED_PREFILL_SIZE, "-1"]),
                "{release}: {flags:?}"
            );
        }
        assert!(!launch(Some(&v("0.2.12"))).flags.contains(&CHUNKED_PREFILL_SIZE));
    }

    #[test]
    fn unknown_newer_release_uses_the_newest_with_a_note() {
        let newest = dump_releases().last().expect("data");
        let later = ReleaseVersion {
            minor: v(&newest.version).minor + 1,
            ..v(&newest.version)
        };
        let launch = launch(Some(&later));
        assert_eq!(launch.basis, Some(newest.version.as_str()));
        assert_eq!(launch.flags, newest.flags_for_dump());
        assert!(
            launch.notes[0].contains("newer than the newest release"),
            "{:?}",
            launch.notes
        );
    }

    #[test]
    fn unlisted_release_in_between_uses_the_nearest_earlier() {
        let launch = launch(Some(&v("0.5.14rc0")));
        assert_eq!(launch.basis, Some("0.5.13.post1"));
        assert!(launch.notes[0].contains("nearest earlier release"));
    }

    #[test]
    fn older_or_missing_release_gets_the_generic_list() {
        let old = launch(Some(&v("0.1.20")));
        assert_eq!(old.basis, None);
        assert!(old.notes[0].contains("older than 0.2.6"), "{:?}", old.notes);
        let unknown = launch_unknown("why");
        assert!(unknown.notes[0].starts_with("SGLang release unknown (why): add --disable-piecewise-cuda-graph on "));
    }

    /// The generic list is right for every current release (all stitch chunked prefill, so no
    /// `-1`), and its note says only where older releases differ, never to drop a flag it
    /// prints for the releases it is meant for.
    #[test]
    fn the_generic_list_fits_the_current_releases_and_its_note_names_the_others() {
        let unknown = launch_unknown("");
        let newest = dump_releases().last().expect("data");
        // The newest release's flags: the flag table's last row.
        assert_eq!(
            unknown.flags,
            newest.flags_for_dump(),
            "the flags of {}",
            newest.version
        );
        assert!(!unknown.flags.contains(&"-1"), "{:?}", unknown.flags);
        let note = &unknown.notes[0];
        assert_eq!(
            note,
            "SGLang release unknown: add --disable-piecewise-cuda-graph on 0.5.10-0.5.13.post1 and \
             --chunked-prefill-size -1 on 0.2.13-0.4.5.post3; leave out --skip-server-warmup on 0.2.6-0.4.8.post1 and \
             --disable-overlap-schedule on 0.2.6-0.3.5.post2; every release's flags: sglang-hs-dump --flag-table"
        );
        // What the note tells to add is what those releases' own flags have.
        for facts in dump_releases() {
            let own = facts.flags_for_dump();
            let partial = facts.chunking() == Chunking::Partial;
            assert_eq!(own.contains(&CHUNKED_PREFILL_SIZE), partial, "{}", facts.version);
        }
    }

    #[test]
    fn a_file_of_no_release_gets_the_current_flags_and_where_others_differ() {
        let current = launch_current();
        assert_eq!(current.flags, launch_unknown("").flags);
        assert_eq!(current.notes.len(), 1);
        assert!(
            current.notes[0]
                .starts_with("these are the flags of current releases; add --disable-piecewise-cuda-graph on ")
                && current.notes[0].ends_with("every release's flags: sglang-hs-dump --flag-table"),
            "{:?}",
            current.notes
        );
    }

    #[test]
    fn ranges_join_consecutive_releases() {
        assert_eq!(ranges(|f| f.needs_piecewise_flag(), "-"), ["0.5.10-0.5.13.post1"]);
    }
}
