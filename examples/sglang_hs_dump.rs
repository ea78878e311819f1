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
//! parsed.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::Parser;
use pysplice::recipes::sglang::{self, Launch, ReleaseVersion as Version};
use pysplice::{report, DiskFile, Error, Patched, Prepared, Recipe, Status};

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
        if let Ok(text) = std::fs::read_to_string(&path) {
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

/// The `deepseek_v2.py` of the SGLang that `python` imports.
fn installed(python: &str) -> Result<PathBuf, String> {
    let output = Command::new(python)
        .args(["-c", "import sglang, os; print(os.path.dirname(sglang.__file__))"])
        .output()
        .map_err(|err| format!("cannot run `{python}`: {err}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let why = stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no output");
        return Err(format!(
            "no installed SGLang: `{python} -c 'import sglang'` failed ({}); activate the environment that has \
             SGLang, pass --python, or give the path of deepseek_v2.py",
            why.trim()
        ));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let package = stdout.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    if package.is_empty() {
        return Err(format!("`{python}` found sglang but printed no folder for it"));
    }
    let file = Path::new(package).join("srt/models/deepseek_v2.py");
    if !file.is_file() {
        return Err(format!("{}: the installed SGLang has no such file", file.display()));
    }
    Ok(file)
}

/// Writes the demo model into a fresh temporary folder.
fn demo_copy() -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("sglang_hs_dump-demo-{}", std::process::id()));
    let file = dir.join("deepseek_v2.py");
    std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(&file, DEMO_MODEL))
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

/// Prints an error as text or JSON and gives its exit code.
fn fail(json: bool, file: &Path, message: &str, code: u8) -> u8 {
    if json {
        println!(
            "{}",
            serde_json::json!({"file": file.display().to_string(), "error": message})
        );
    } else {
        eprintln!("{message}");
    }
    code
}

/// Applies the recipe, reporting every hook when one cannot be placed.
fn apply(recipe: &Recipe, file: &DiskFile, json: bool) -> Result<Patched, u8> {
    let prepared = Prepared::new(recipe, file.source().clone())
        .map_err(|err| fail(json, file.path(), &err.to_string(), exit_code(&err)))?;
    let plan = pysplice::plan(recipe, prepared.original());
    if !plan.is_complete() {
        let outcomes = plan.outcomes();
        if json {
            let value = serde_json::json!({"file": file.path().display().to_string(), "error": "a hook could not be placed; nothing was written", "hooks": outcomes});
            println!("{value}");
        } else {
            eprintln!("Cannot patch {}", file.path().display());
            for outcome in &outcomes {
                eprintln!("  - {}", report::outcome_line(outcome));
            }
            eprintln!("nothing was written");
        }
        return Err(1);
    }
    pysplice::apply_plan(recipe, &prepared, plan)
        .map_err(|err| fail(json, file.path(), &err.to_string(), exit_code(&err)))
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
    let path = if args.installed {
        installed(&args.python)
    } else if let Some(path) = &args.path {
        resolve(path)
    } else {
        demo_copy()
    };
    let path = match path {
        Ok(path) => path,
        Err(message) => return fail(args.json, args.path.as_deref().unwrap_or(Path::new("")), &message, 2),
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
                return fail(args.json, &path, &message, 2);
            }
        },
        None if demo => None,
        None => detect_release(&path),
    };

    let file = match DiskFile::read(&path) {
        Ok(file) => file,
        Err(err) => return fail(args.json, &path, &err.to_string(), exit_code(&err)),
    };
    let patched = if mode == Mode::Revert {
        pysplice::revert(&recipe, file.source().clone())
            .map_err(|err| fail(args.json, &path, &err.to_string(), exit_code(&err)))
    } else {
        apply(&recipe, &file, args.json)
    };
    let patched = match patched {
        Ok(patched) => patched,
        Err(code) => return code,
    };
    let write = mode != Mode::Check && !args.dry_run && patched.changed();
    if write {
        if let Err(err) = file.write(patched.output()) {
            return fail(args.json, &path, &err.to_string(), exit_code(&err));
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
    // Headers `a/<path>`, `b/<path>` with the path as given (relative to / when absolute).
    let diff = report::unified_diff(
        patched.name().trim_start_matches('/'),
        patched.input(),
        patched.output(),
    );
    let code = u8::from(mode == Mode::Check && (pending || patched.changed()));

    if args.json {
        let mut value = report::json(&patched);
        value["mode"] = mode.name(args.dry_run).into();
        value["written"] = write.into();
        value["demo"] = demo.into();
        value["release"] = release
            .as_ref()
            .map(|r| serde_json::json!({"version": r.text, "source": r.source}))
            .into();
        value["launch"] = serde_json::json!({
            "env": {env: DUMP_DIR},
            "flags": launch.flags,
            "notes": launch.notes,
        });
        if mode == Mode::Check {
            value["up_to_date"] = (code == 0).into();
        }
        if args.dry_run || demo {
            value["diff"] = diff.into();
        }
        println!("{value}");
        return code;
    }

    if demo {
        println!(
            "No PATH given: patching a copy of the bundled demo model (examples/data/demo_model.py, written for \
             pysplice in the shape of SGLang's deepseek_v2.py; not SGLang code)."
        );
        println!("For a real SGLang: {PROGRAM} --installed, or {PROGRAM} path/to/deepseek_v2.py\n");
    }
    match (mode, args.dry_run) {
        (Mode::Check, _) => {
            println!(
                "{}: {}",
                patched.name(),
                if code == 0 { "up to date" } else { "needs apply" }
            );
            for outcome in patched.outcomes() {
                let status = report::check_status(outcome);
                println!("  - {}: {status}", outcome.hook);
            }
            return code;
        }
        (_, true) => {
            print!("{diff}");
            eprintln!("dry run: nothing was written to {}", patched.name());
            return code;
        }
        (Mode::Revert, false) => {
            if patched.changed() {
                println!("Reverted {}", patched.name());
                for outcome in patched.outcomes() {
                    println!("  - {}", report::outcome_line(outcome));
                }
            } else {
                println!("Nothing to revert in {}", patched.name());
            }
            return code;
        }
        (Mode::Apply, false) => {}
    }
    if demo {
        print!("{diff}");
        println!();
    }
    print!("{}", report::applied_text(&patched));
    println!();
    println!("To use: set {env}={DUMP_DIR} before starting server");
    match &release {
        Some(r) => println!("Server flags for SGLang {} (from {}):", r.text, r.source),
        None if demo => println!("Server flags (for a real SGLang they depend on its release):"),
        None => println!("Server flags:"),
    }
    println!("  {}", launch.flags.join(" "));
    for note in &launch.notes {
        println!("Note: {note}");
    }
    println!(
        "e.g. {env}={DUMP_DIR} python3 -m sglang.launch_server --model-path MODEL {}",
        launch.flags.join(" ")
    );
    println!("Undo with: {PROGRAM} --revert {}", patched.name());
    code
}

/// `--arch` / `--model-path`: every file the architectures need, all or none.
fn run_models(args: &Args, mode: Mode) -> u8 {
    use pysplice::recipes::sglang_models::{self, FilePatch};
    let given = args.path.clone().unwrap_or_default();
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
        Err(message) => return fail(args.json, &given, &message, 2),
    };
    let wanted: Option<Vec<String>> = match &args.model_path {
        Some(model) => match sglang_models::architectures(model) {
            Ok(names) => Some(names),
            Err(message) => return fail(args.json, model, &message, 2),
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
        Err(err) => return fail(args.json, &dir, &err.to_string(), exit_code(&err)),
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
    let written = if write {
        match sglang_models::write_all(&patches) {
            Ok(n) => n,
            Err(err) => return fail(args.json, &dir, &err.to_string(), exit_code(&err)),
        }
    } else {
        0
    };
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
        let files: Vec<serde_json::Value> = patches
            .iter()
            .map(|p| {
                let mut v = report::json(&p.patched);
                v["file"] = p.file.path().display().to_string().into();
                v["changed"] = p.patched.changed().into();
                if args.dry_run {
                    v["diff"] = report::unified_diff(&p.relative, p.patched.input(), p.patched.output()).into();
                }
                v
            })
            .collect();
        let value = serde_json::json!({
            "mode": mode.name(args.dry_run),
            "models": dir.display().to_string(),
            "architectures": roots,
            "files": files,
            "written": written,
            "up_to_date": (mode == Mode::Check).then_some(code == 0),
            "release": release.as_ref().map(|r| serde_json::json!({"version": r.text, "source": r.source})),
            "launch": {"env": {env: DUMP_DIR}, "flags": launch.flags, "notes": launch.notes},
        });
        println!("{value}");
        return code;
    }
    for root in &roots {
        match &root.skipped {
            Some(why) => println!("{} ({}): skipped: {why}", root.class, root.file),
            None => println!("{} ({}): {}", root.class, root.file, root.files().join(", ")),
        }
    }
    for p in &patches {
        let name = p.file.path().display();
        match (mode, args.dry_run, p.patched.changed()) {
            (Mode::Check, _, _) => {
                println!("{name}: {}", if pending(p) { "needs apply" } else { "up to date" });
                for o in p.patched.outcomes() {
                    println!("  - {}: {}", o.hook, report::check_status(o));
                }
            }
            (_, true, _) => print!(
                "{}",
                report::unified_diff(&p.relative, p.patched.input(), p.patched.output())
            ),
            (Mode::Revert, false, true) => println!("Reverted {name}"),
            (Mode::Revert, false, false) => println!("Nothing to revert in {name}"),
            (Mode::Apply, false, _) => print!("{}", report::applied_text(&p.patched)),
        }
    }
    if args.dry_run {
        eprintln!("dry run: nothing was written");
    } else if mode == Mode::Apply {
        println!("\nTo use: set {env}={DUMP_DIR} before starting server");
        println!("Server flags: {}", launch.flags.join(" "));
        for note in &launch.notes {
            println!("Note: {note}");
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
    ExitCode::from(run(&args))
}
