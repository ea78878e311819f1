//! `sglang_hs_dump`: patch SGLang's `deepseek_v2.py` so that the server dumps EAGLE-3 / SpecForge
//! training hidden states during prefill, using pysplice's bundled `sglang-hs-dump` recipe.
//!
//! ```text
//! sglang_hs_dump [PATH] [--revert | --check] [--dry-run] [--json] [--sglang-version X]
//! sglang_hs_dump --installed [--python python3] ...
//! sglang_hs_dump                      # demo: patch a copy of examples/data/demo_model.py
//! sglang_hs_dump --flag-table         # the server flags of every known SGLang release
//! sglang_hs_dump PATH --arch Qwen3MoeForCausalLM [--arch ...]   # any architecture with aux capture
//! sglang_hs_dump PATH --model-path DIR  # the architectures DIR/config.json names
//! sglang_hs_dump PATH --arch all        # every architecture with aux capture
//! ```
//!
//! With `--arch` or `--model-path`, PATH (or `--installed`) stands for the `sglang/srt/models`
//! folder, and every file the architectures need is patched (checked, reverted), all or none.
//!
//! Exit codes: 0 success (for `--check`: up to date); 1 a hook could not be placed, the markers
//! were edited by hand, or `--check` found work; 2 bad usage or input that cannot be read or
//! parsed; 3 the command succeeded but its report could not be written to standard output
//! (closed pipe, full disk).

#[macro_use]
#[path = "shared/output.rs"]
mod output;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::Parser;
use pysplice::contract::{self, Body, Dump, ErrorInfo, FileStatus, HookResult, Output, Splice, Words};
use pysplice::recipes::sglang::{self, Launch, ReleaseVersion as Version};
use pysplice::{report, DiskFile, Error, HookOutcome, Patched, Recipe, Status};

/// The demo model: a stand-in written for pysplice in the shape of SGLang's `deepseek_v2.py`.
const DEMO_MODEL: &str = include_str!("data/demo_model.py");

/// The program's name: `sglang-hs-dump` when installed, `sglang_hs_dump` as an example binary.
const PROGRAM: &str = env!("CARGO_BIN_NAME");

/// Where the dump goes in the printed instructions.
const DUMP_DIR: &str = "/dev/shm/sglang_hs";

/// Patch SGLang's DeepSeek-V2/V3 model file (also used by Kimi-K2.5) to dump per-request hidden
/// states for EAGLE-3 drafter training while the server runs prefill passes.
///
/// Without PATH (and without --installed), a bundled demo model file is copied to a temporary
/// folder, patched there, and the diff is shown.
#[derive(Parser)]
#[command(name = PROGRAM, version, about, long_about)]
struct Args {
    /// `deepseek_v2.py`, or a folder holding it (an SGLang checkout, site-packages, the `sglang`
    /// package, a corpus tree).
    #[arg(conflicts_with = "installed")]
    path: Option<PathBuf>,
    /// Patch the `deepseek_v2.py` of the SGLang that `--python` imports.
    #[arg(long)]
    installed: bool,
    /// The interpreter asked by `--installed`.
    #[arg(long, value_name = "EXE", default_value = "python3", requires = "installed")]
    python: String,
    /// Remove the patch, giving back the original bytes.
    #[arg(long, conflicts_with = "check")]
    revert: bool,
    /// Exit 0 when the patch is applied and up to date, 1 otherwise; writes nothing.
    #[arg(long, conflicts_with = "dry_run")]
    check: bool,
    /// Print a unified diff of what would change and write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// The SGLang release the file belongs to (for the launch flags), when it cannot be read from
    /// `sglang/version.py`, `sglang/_version.py` or a `sglang-*.dist-info` beside the package.
    #[arg(long, value_name = "X")]
    sglang_version: Option<String>,
    /// Print the server flags for every SGLang release that has `deepseek_v2.py`, as a markdown
    /// table (README's), and exit.
    #[arg(long, exclusive = true)]
    flag_table: bool,
    /// An architecture to patch for (an `EntryClass` / `config.json` `architectures` name such as
    /// `Qwen3MoeForCausalLM`; repeat or separate by commas), or `all`: every architecture of the
    /// install that has EAGLE-3 aux capture. PATH then stands for the models folder.
    #[arg(long, value_name = "CLASS", value_delimiter = ',')]
    arch: Vec<String>,
    /// A Hugging Face model folder (or its `config.json`): patch for the architectures it lists.
    #[arg(long, value_name = "DIR", conflicts_with = "arch")]
    model_path: Option<PathBuf>,
}

/// What to do with the file.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Apply,
    Check,
    Revert,
}

impl Mode {
    fn name(self, dry_run: bool) -> &'static str {
        match (self, dry_run) {
            (Mode::Apply, false) => "apply",
            (Mode::Apply, true) => "apply --dry-run",
            (Mode::Revert, false) => "revert",
            (Mode::Revert, true) => "revert --dry-run",
            (Mode::Check, _) => "check",
        }
    }
}

/// The release a file belongs to, as given or found, with where it came from.
struct Release {
    text: String,
    version: Version,
    source: String,
}

/// Why the release is unknown, for the note under the generic flag list.
const UNKNOWN_RELEASE: &str =
    "no sglang/version.py, sglang/_version.py or sglang-*.dist-info beside the package; pass --sglang-version X";

/// The server flags the dump needs on `release`, from the facts of every SGLang release
/// (`pysplice::recipes::sglang`), or a generic list with a note when the release is unknown.
fn launch(release: Option<&Release>) -> Launch {
    match release {
        Some(release) => sglang::launch(Some(&release.version)),
        None => sglang::launch_unknown(UNKNOWN_RELEASE),
    }
}

/// Finds the release of the SGLang tree holding `file` (`.../sglang/srt/models/deepseek_v2.py`).
fn detect_release(file: &Path) -> Option<Release> {
    let file = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    let models = file.parent()?;
    let srt = models.parent()?;
    if models.file_name()? != "models" || srt.file_name()? != "srt" {
        return None;
    }
    let package = srt.parent()?;
    for name in ["_version.py", "version.py"] {
        let path = package.join(name);
        if let Ok(text) = pysplice::files::read_text(&path) {
            if let Some(release) = version_literal(&text, &path) {
                return Some(release);
            }
        }
    }
    let site = package.parent()?;
    let mut infos: Vec<_> = std::fs::read_dir(site)
        .ok()?
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter_map(|name| {
            Some((
                name.strip_prefix("sglang-")?.strip_suffix(".dist-info")?.to_string(),
                name.clone(),
            ))
        })
        .collect();
    infos.sort();
    let (text, name) = infos.pop()?;
    Some(Release {
        version: Version::parse(&text)?,
        text,
        source: site.join(name).display().to_string(),
    })
}

/// `__version__ = "X"` (or `__version__ = version = 'X'`) as a statement of its own.
fn version_literal(text: &str, path: &Path) -> Option<Release> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix("__version__")?.trim_start().strip_prefix('=')?.trim();
        let rest = rest
            .strip_prefix("version")
            .map_or(rest, |r| r.trim_start().trim_start_matches('=').trim());
        let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'')?;
        let value = rest[1..].split(quote).next()?;
        Some(Release {
            version: Version::parse(value)?,
            text: value.to_string(),
            source: path.display().to_string(),
        })
    })
}

/// The file to patch when PATH is a folder.
fn resolve(path: &Path) -> Result<PathBuf, String> {
    if !path.is_dir() {
        return Ok(path.to_path_buf());
    }
    let file = pysplice::recipes::SGLANG_HS_DUMP_FILE; // sglang/srt/models/deepseek_v2.py
    let tails = [
        file.to_string(),
        format!("python/{file}"),
        file.trim_start_matches("sglang/").to_string(),
        "models/deepseek_v2.py".into(),
        "deepseek_v2.py".into(),
    ];
    tails
        .iter()
        .map(|tail| path.join(tail))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| {
            format!(
                "{}: no deepseek_v2.py in this folder (looked for {})",
                path.display(),
                tails.join(", ")
            )
        })
}

/// Finds where `python` would import `sglang` from, without importing it: isolated mode (`-I`: the
/// current directory and `PYTHONPATH` are not searched, so a `sglang/` folder where the command
/// runs decides nothing) and `importlib.util.find_spec`, which locates the package without running
/// its code. `-I` also leaves out the per-user site-packages (`pip install --user`), which a plain
/// start searches outside virtual environments: it is put back where a plain start has it. Prints
/// one JSON object.
const FIND_SGLANG: &str = r#"
import importlib.util, json, os, site, sys
answer = {"executable": sys.executable, "version": sys.version.split()[0]}
try:
    user = site.getusersitepackages()
    same_user = not hasattr(os, "geteuid") or os.geteuid() == os.getuid()
    if sys.prefix == sys.base_prefix and same_user and os.path.isdir(user) and user not in sys.path:
        sites = [i for i, p in enumerate(sys.path) if p.endswith(("site-packages", "dist-packages"))]
        sys.path.insert(sites[0] if sites else len(sys.path), user)
except Exception:
    pass
try:
    spec = importlib.util.find_spec("sglang")
except Exception as err:
    answer["error"] = "%s: %s" % (type(err).__name__, err)
else:
    if spec is not None:
        answer["origin"] = spec.origin
        answer["has_location"] = bool(spec.has_location)
        locations = spec.submodule_search_locations
        answer["package"] = locations is not None
        answer["locations"] = [str(p) for p in (locations or [])]
print(json.dumps(answer))
"#;

/// The `deepseek_v2.py` of the SGLang that `python` would import, or exactly what is wrong.
fn installed(python: &str) -> Result<PathBuf, String> {
    let remedy = "activate the environment that has SGLang, pass --python, or give the path of deepseek_v2.py";
    let output = Command::new(python)
        .args(["-I", "-c", FIND_SGLANG])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|err| match err.kind() {
            std::io::ErrorKind::NotFound => {
                format!("cannot run `{python}`: no such program; pass --python with the interpreter of the SGLang environment")
            }
            _ => format!("cannot run `{python}`: {err}"),
        })?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last_error = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no message")
        .trim();
    if !output.status.success() {
        return Err(format!(
            "`{python}` could not look for SGLang ({last_error}); is it a Python 3 interpreter? {remedy}"
        ));
    }
    let answer: serde_json::Value = String::from_utf8_lossy(&output.stdout)
        .lines()
        .rev()
        .find_map(|line| serde_json::from_str(line).ok())
        .ok_or_else(|| format!("`{python}` gave no answer when asked where SGLang is ({last_error})"))?;
    let field = |key: &str| {
        answer
            .get(key)
            .and_then(serde_json::Value::as_str)
            .unwrap_or("?")
            .to_string()
    };
    let who = format!("`{python}` ({}, Python {})", field("executable"), field("version"));
    if let Some(error) = answer.get("error").and_then(serde_json::Value::as_str) {
        return Err(format!("{who} could not look for the sglang package: {error}"));
    }
    let Some(origin) = answer.get("origin") else {
        return Err(format!(
            "no installed SGLang: {who} has no package `sglang` (looked in isolated mode: the current directory \
             and PYTHONPATH are not searched); {remedy}"
        ));
    };
    let locations: Vec<&str> = answer
        .get("locations")
        .and_then(serde_json::Value::as_array)
        .map(|l| l.iter().filter_map(serde_json::Value::as_str).collect())
        .unwrap_or_default();
    if answer.get("package") != Some(&serde_json::Value::Bool(true)) {
        return Err(format!(
            "{who} finds `sglang` as a single module ({}), not the SGLang package; {remedy}",
            origin.as_str().unwrap_or("?")
        ));
    }
    let origin = match origin.as_str() {
        Some(origin) if answer.get("has_location") == Some(&serde_json::Value::Bool(true)) => origin,
        _ => {
            return Err(format!(
                "{who} finds `sglang` only as a namespace package (folders without __init__.py: {}), not an \
                 installed SGLang; a leftover of an uninstalled SGLang? {remedy}",
                locations.join(", ")
            ))
        }
    };
    let package = Path::new(origin).parent().unwrap_or(Path::new(origin));
    let file = package.join("srt/models/deepseek_v2.py");
    if !file.is_file() {
        return Err(format!(
            "{}: the SGLang that {who} has at {} holds no such file",
            file.display(),
            package.display()
        ));
    }
    Ok(file)
}

/// Writes the demo model into a fresh private temporary folder (created exclusively, mode 0700),
/// which is left for inspection.
fn demo_copy() -> Result<PathBuf, String> {
    let mut builder = tempfile::Builder::new();
    builder.prefix("sglang_hs_dump-demo-");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // tempfile creates folders with 0777 less the umask unless told otherwise.
        builder.permissions(std::fs::Permissions::from_mode(0o700));
    }
    let dir = builder
        .tempdir()
        .map_err(|err| format!("cannot create a temporary folder for the demo copy: {err}"))?
        .keep();
    let file = dir.join("deepseek_v2.py");
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&file)
        .and_then(|mut out| std::io::Write::write_all(&mut out, DEMO_MODEL.as_bytes()))
        .map_err(|err| format!("{}: cannot write the demo copy: {err}", file.display()))?;
    Ok(file)
}

/// Exit code for an error: 1 when a hook could not be placed or the markers are damaged, 2 for
/// input that cannot be used.
fn exit_code(err: &Error) -> u8 {
    if err.is_input_error() {
        2
    } else {
        1
    }
}

/// How failures are reported: as text, or as the JSON object of a success with `error` set.
struct Failures<'a> {
    json: bool,
    recipe: &'a Recipe,
    mode: Mode,
    dry_run: bool,
    demo: bool,
}

impl Failures<'_> {
    /// The words hook statuses are given in for this mode.
    fn words(&self) -> Words {
        match self.mode {
            Mode::Apply => Words::Apply,
            Mode::Check => Words::Check,
            Mode::Revert => Words::Revert,
        }
    }

    /// Prints an error as text or JSON (with what became of every hook) and gives `code`.
    fn fail(&self, file: &Path, error: ErrorInfo, outcomes: &[HookOutcome], code: u8) -> u8 {
        if self.json {
            let hooks = if outcomes.is_empty() {
                HookResult::not_run(self.recipe)
            } else {
                outcomes.iter().map(|o| HookResult::new(o, self.words())).collect()
            };
            let body = Body::SglangHsDump(Dump {
                splice: Splice {
                    status: FileStatus::Failed,
                    changed: false,
                    written: false,
                    hooks,
                    diff: None,
                },
                mode: self.mode.name(self.dry_run).to_string(),
                demo: self.demo,
                release: None,
                launch: None,
                architectures: Vec::new(),
                skipped: None,
            });
            outln!("{}", Output::failed(file.display().to_string(), body, error).to_line());
        } else {
            errln!("{}", error.message);
        }
        code
    }

    /// [`Failures::fail`] for a library error.
    fn error(&self, file: &Path, err: &Error) -> u8 {
        self.fail(file, ErrorInfo::from(err), &[], exit_code(err))
    }

    /// Applies the recipe, reporting every hook when one cannot be placed.
    fn apply(&self, file: &DiskFile) -> Result<Patched, u8> {
        let attempt = pysplice::engine::apply_reporting(self.recipe, file.source().clone());
        let (planned, outcomes) = (attempt.planned, attempt.outcomes);
        attempt.result.map_err(|err| {
            if !self.json && !outcomes.is_empty() && !planned {
                errln!("Cannot patch {}", file.path().display());
                for outcome in &outcomes {
                    errln!("  - {}", report::outcome_line(outcome));
                }
                errln!("nothing was written");
                return 1;
            }
            self.fail(file.path(), ErrorInfo::from(&err), &outcomes, exit_code(&err))
        })
    }
}

fn run(args: &Args) -> u8 {
    if args.flag_table {
        print!("{}", sglang::flag_table());
        return 0;
    }
    let recipe = Recipe::from_toml("recipes/sglang_hs_dump.toml", pysplice::recipes::SGLANG_HS_DUMP)
        .expect("the bundled recipe is valid");
    let env = recipe.vars.get("env").map_or("SGLANG_HS_DUMP_DIR", String::as_str);
    let mode = if args.revert {
        Mode::Revert
    } else if args.check {
        Mode::Check
    } else {
        Mode::Apply
    };
    if !args.arch.is_empty() || args.model_path.is_some() {
        return run_models(args, mode);
    }
    let demo = args.path.is_none() && !args.installed;
    let failures = Failures {
        json: args.json,
        recipe: &recipe,
        mode,
        dry_run: args.dry_run,
        demo,
    };
    let path = if args.installed {
        installed(&args.python)
    } else if let Some(path) = &args.path {
        resolve(path)
    } else {
        demo_copy()
    };
    let path = match path {
        Ok(path) => path,
        Err(message) => {
            let file = args.path.as_deref().unwrap_or(Path::new(""));
            return failures.fail(file, ErrorInfo::message(message), &[], 2);
        }
    };
    let release = match &args.sglang_version {
        Some(text) => match Version::parse(text) {
            Some(version) => Some(Release {
                text: text.clone(),
                version,
                source: "--sglang-version".into(),
            }),
            None => {
                let message = format!("--sglang-version {text}: not a release number such as 0.5.9");
                return failures.fail(&path, ErrorInfo::message(message), &[], 2);
            }
        },
        None if demo => None,
        None => detect_release(&path),
    };

    let file = match DiskFile::read(&path) {
        Ok(file) => file,
        Err(err) => return failures.error(&path, &err),
    };
    let patched = if mode == Mode::Revert {
        pysplice::revert(&recipe, file.source().clone()).map_err(|err| failures.error(&path, &err))
    } else {
        failures.apply(&file)
    };
    let patched = match patched {
        Ok(patched) => patched,
        Err(code) => return code,
    };
    // Written before anything is printed about it: a report that cannot be printed never leaves
    // the file half done, and "Successfully patched" follows a write that succeeded.
    let write = mode != Mode::Check && !args.dry_run && patched.changed();
    if write {
        if let Err(err) = file.write(patched.output()) {
            return failures.fail(&path, ErrorInfo::from(&err), patched.outcomes(), exit_code(&err));
        }
        if file.hard_links() > 1 {
            errln!(
                "note: {} had {} hard links; it is now a file of its own, the other names keep the old content",
                path.display(),
                file.hard_links()
            );
        }
    }
    let pending = patched
        .outcomes()
        .iter()
        .any(|o| matches!(o.status, Status::Applied | Status::Updated));
    let mut launch = launch(release.as_ref());
    let no_capture = patched
        .outcomes()
        .iter()
        .any(|o| o.hook == "capture" && matches!(o.status, Status::Skipped { .. }));
    if no_capture && mode != Mode::Revert {
        launch.notes.push(
            "this file has no aux capture (set_eagle3_layers_to_capture came in SGLang 0.5.4.post2): the files \
             hold hidden_state but no aux_hidden_state"
                .into(),
        );
    }
    // Headers `a/<path>`, `b/<path>` with the path as given (relative to / when absolute);
    // computed only where it is printed.
    let diff = || {
        report::unified_diff(
            patched.name().trim_start_matches('/'),
            patched.input(),
            patched.output(),
        )
    };
    let code = u8::from(mode == Mode::Check && (pending || patched.changed()));

    if args.json {
        let status = match (mode, args.dry_run) {
            (Mode::Check, _) if code == 0 => FileStatus::UpToDate,
            (Mode::Check, _) => FileStatus::NeedsApply,
            (Mode::Apply, _) if !pending => FileStatus::UpToDate,
            (Mode::Apply, true) => FileStatus::WouldPatch,
            (Mode::Apply, false) => FileStatus::Patched,
            (Mode::Revert, _) if !patched.changed() => FileStatus::NothingToRevert,
            (Mode::Revert, true) => FileStatus::WouldRevert,
            (Mode::Revert, false) => FileStatus::Reverted,
        };
        let mut splice = Splice::new(status, patched.outcomes(), failures.words());
        splice.changed = patched.changed();
        splice.written = write;
        splice.diff = (args.dry_run || demo).then(diff);
        let body = Body::SglangHsDump(Dump {
            splice,
            mode: mode.name(args.dry_run).to_string(),
            demo,
            release: release.as_ref().map(|r| contract::Release {
                version: r.text.clone(),
                source: r.source.clone(),
            }),
            launch: Some(contract::Launch {
                env: [(env.to_string(), DUMP_DIR.to_string())].into(),
                flags: launch.flags.iter().map(|f| f.to_string()).collect(),
                notes: launch.notes.clone(),
            }),
            architectures: Vec::new(),
            skipped: None,
        });
        outln!("{}", Output::new(patched.name(), body).to_line());
        return code;
    }

    if demo {
        outln!(
            "No PATH given: patching a copy of the bundled demo model (examples/data/demo_model.py, written for \
             pysplice in the shape of SGLang's deepseek_v2.py; not SGLang code)."
        );
        outln!("For a real SGLang: {PROGRAM} --installed, or {PROGRAM} path/to/deepseek_v2.py\n");
    }
    match (mode, args.dry_run) {
        (Mode::Check, _) => {
            outln!(
                "{}: {}",
                patched.name(),
                if code == 0 { "up to date" } else { "needs apply" }
            );
            for outcome in patched.outcomes() {
                let status = report::check_status(outcome);
                outln!("  - {}: {status}", outcome.hook);
            }
            return code;
        }
        (_, true) => {
            out!("{}", diff());
            errln!("dry run: nothing was written to {}", patched.name());
            return code;
        }
        (Mode::Revert, false) => {
            if patched.changed() {
                outln!("Reverted {}", patched.name());
                for outcome in patched.outcomes() {
                    outln!("  - {}", report::outcome_line(outcome));
                }
            } else {
                outln!("Nothing to revert in {}", patched.name());
            }
            return code;
        }
        (Mode::Apply, false) => {}
    }
    if demo {
        out!("{}", diff());
        outln!();
    }
    out!("{}", report::applied_text(&patched));
    outln!();
    outln!("To use: set {env}={DUMP_DIR} before starting server");
    match &release {
        Some(r) => outln!("Server flags for SGLang {} (from {}):", r.text, r.source),
        None if demo => outln!("Server flags (for a real SGLang they depend on its release):"),
        None => outln!("Server flags:"),
    }
    outln!("  {}", launch.flags.join(" "));
    for note in &launch.notes {
        outln!("Note: {note}");
    }
    outln!(
        "e.g. {env}={DUMP_DIR} python3 -m sglang.launch_server --model-path MODEL {}",
        launch.flags.join(" ")
    );
    outln!("Undo with: {PROGRAM} --revert {}", patched.name());
    code
}

/// `--arch` / `--model-path`: every file the architectures need, all or none.
fn run_models(args: &Args, mode: Mode) -> u8 {
    use pysplice::recipes::sglang_models::{self, FilePatch};
    let given = args.path.clone().unwrap_or_default();
    // Failures before any file is patched: a JSON error object in the contract's layout, or text.
    let fail = |file: &Path, message: &str, code: u8| -> u8 {
        if args.json {
            let body = Body::SglangHsDump(Dump {
                splice: Splice {
                    status: FileStatus::Failed,
                    changed: false,
                    written: false,
                    hooks: Vec::new(),
                    diff: None,
                },
                mode: mode.name(args.dry_run).to_string(),
                demo: false,
                release: None,
                launch: None,
                architectures: Vec::new(),
                skipped: None,
            });
            outln!(
                "{}",
                Output::failed(file.display().to_string(), body, ErrorInfo::message(message)).to_line()
            );
        } else {
            errln!("{message}");
        }
        code
    };
    let base = if args.installed {
        installed(&args.python).map(|f| f.parent().map(Path::to_path_buf).unwrap_or(f))
    } else if let Some(path) = &args.path {
        Ok(path.clone())
    } else {
        Err(
            "--arch and --model-path need PATH (a models folder, the sglang package, site-packages, a checkout, \
             a model file) or --installed"
                .to_string(),
        )
    };
    let dir = match base.and_then(|b| {
        sglang_models::models_dir(&b).ok_or_else(|| format!("{}: no sglang/srt/models folder here", b.display()))
    }) {
        Ok(dir) => dir,
        Err(message) => return fail(&given, &message, 2),
    };
    let wanted: Option<Vec<String>> = match &args.model_path {
        Some(model) => match sglang_models::architectures(model) {
            Ok(names) => Some(names),
            Err(message) => return fail(model, &message, 2),
        },
        None if args.arch.iter().any(|a| a == "all") => None,
        None => Some(args.arch.clone()),
    };
    let recipe = sglang_models::recipe().expect("the bundled recipes are valid");
    let lib_mode = if mode == Mode::Revert {
        sglang_models::Mode::Revert
    } else {
        sglang_models::Mode::Apply
    };
    let (selection, patches) = match sglang_models::patch(&recipe, &dir, wanted.as_deref(), lib_mode) {
        Ok(found) => found,
        Err(err) => return fail(&dir, &err.to_string(), exit_code(&err)),
    };
    let pending = |p: &FilePatch| {
        p.patched.changed()
            || p.patched
                .outcomes()
                .iter()
                .any(|o| matches!(o.status, Status::Applied | Status::Updated))
    };
    let code = u8::from(mode == Mode::Check && patches.iter().any(pending));
    let write = mode != Mode::Check && !args.dry_run;
    if write {
        if let Err(err) = sglang_models::write_all(&patches) {
            return fail(&dir, &err.to_string(), exit_code(&err));
        }
    }
    let roots: Vec<_> = selection
        .roots
        .iter()
        .filter(|r| wanted.as_ref().is_none_or(|w| w.contains(&r.class)))
        .collect();
    let release = args
        .sglang_version
        .as_deref()
        .and_then(|t| Version::parse(t).map(|v| (t.to_string(), v, "--sglang-version".to_string())))
        .map(|(text, version, source)| Release { text, version, source })
        .or_else(|| detect_release(&dir.join("__init__.py")));
    let launch = launch(release.as_ref());
    let env = recipe.vars.get("env").map_or("SGLANG_HS_DUMP_DIR", String::as_str);
    if args.json {
        // The contract's layout: one object per file, then one per architecture skipped.
        let words = match mode {
            Mode::Apply => Words::Apply,
            Mode::Check => Words::Check,
            Mode::Revert => Words::Revert,
        };
        let release = release.as_ref().map(|r| contract::Release {
            version: r.text.clone(),
            source: r.source.clone(),
        });
        let launch = contract::Launch {
            env: [(env.to_string(), DUMP_DIR.to_string())].into(),
            flags: launch.flags.iter().map(|f| f.to_string()).collect(),
            notes: launch.notes.clone(),
        };
        let dump = |splice: Splice, architectures: Vec<String>, skipped: Option<String>| {
            Body::SglangHsDump(Dump {
                splice,
                mode: mode.name(args.dry_run).to_string(),
                demo: false,
                release: release.clone(),
                launch: Some(launch.clone()),
                architectures,
                skipped,
            })
        };
        for p in &patches {
            let status = match (mode, args.dry_run) {
                (Mode::Check, _) if pending(p) => FileStatus::NeedsApply,
                (Mode::Check, _) => FileStatus::UpToDate,
                (Mode::Apply, _) if !pending(p) => FileStatus::UpToDate,
                (Mode::Apply, true) => FileStatus::WouldPatch,
                (Mode::Apply, false) => FileStatus::Patched,
                (Mode::Revert, _) if !p.patched.changed() => FileStatus::NothingToRevert,
                (Mode::Revert, true) => FileStatus::WouldRevert,
                (Mode::Revert, false) => FileStatus::Reverted,
            };
            let mut splice = Splice::new(status, p.patched.outcomes(), words);
            splice.changed = p.patched.changed();
            splice.written = write && p.patched.changed();
            splice.diff = args
                .dry_run
                .then(|| report::unified_diff(&p.relative, p.patched.input(), p.patched.output()));
            let mut served: Vec<String> = roots
                .iter()
                .filter(|r| r.skipped.is_none() && r.files().contains(&p.relative.as_str()))
                .map(|r| r.class.clone())
                .collect();
            served.sort();
            served.dedup();
            let path = p.file.path().display().to_string();
            outln!("{}", Output::new(path, dump(splice, served, None)).to_line());
        }
        for root in roots.iter().filter(|r| r.skipped.is_some()) {
            let splice = Splice::new(FileStatus::Skipped, &[], words);
            let path = dir.join(&root.file).display().to_string();
            let body = dump(splice, vec![root.class.clone()], root.skipped.clone());
            outln!("{}", Output::new(path, body).to_line());
        }
        return code;
    }
    for root in &roots {
        match &root.skipped {
            Some(why) => outln!("{} ({}): skipped: {why}", root.class, root.file),
            None => outln!("{} ({}): {}", root.class, root.file, root.files().join(", ")),
        }
    }
    for p in &patches {
        let name = p.file.path().display();
        match (mode, args.dry_run, p.patched.changed()) {
            (Mode::Check, _, _) => {
                outln!("{name}: {}", if pending(p) { "needs apply" } else { "up to date" });
                for o in p.patched.outcomes() {
                    outln!("  - {}: {}", o.hook, report::check_status(o));
                }
            }
            (_, true, _) => out!(
                "{}",
                report::unified_diff(&p.relative, p.patched.input(), p.patched.output())
            ),
            (Mode::Revert, false, true) => outln!("Reverted {name}"),
            (Mode::Revert, false, false) => outln!("Nothing to revert in {name}"),
            (Mode::Apply, false, _) => out!("{}", report::applied_text(&p.patched)),
        }
    }
    if args.dry_run {
        errln!("dry run: nothing was written");
    } else if mode == Mode::Apply {
        outln!("\nTo use: set {env}={DUMP_DIR} before starting server");
        outln!("Server flags: {}", launch.flags.join(" "));
        for note in &launch.notes {
            outln!("Note: {note}");
        }
    }
    code
}

fn main() -> ExitCode {
    let args = match Args::try_parse() {
        Ok(args) => args,
        Err(err) => {
            let code = if err.use_stderr() { 2 } else { 0 };
            let _ = err.print();
            return ExitCode::from(code);
        }
    };
    output::finish(run(&args))
}
