//! Where an interpreter would import a package from, found without importing it: the folder
//! `pysplice --installed NAME` and `sglang-hs-dump --installed` patch.
//!
//! The interpreter runs in isolated mode (`-I`: the current directory and `PYTHONPATH` are not
//! searched, so a same-named folder where the command runs decides nothing) and answers with
//! `importlib.util.find_spec` on the top-level name, which locates a package without running its
//! code (a dotted name's further parts are folders below it, looked up here: `find_spec` of
//! `a.b` would import `a`). `-I` also leaves out the per-user site-packages (`pip install
//! --user`), which a plain start searches outside virtual environments: it is put back where a
//! plain start has it. The interpreter runs under a time limit, in a process group of its own
//! that is killed afterwards ([`probe`]).

pub mod probe;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The question put to the interpreter: the name is its first argument, never part of the code.
const FIND_PACKAGE: &str = r#"
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
    spec = importlib.util.find_spec(sys.argv[1])
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

/// How long the interpreter may take to answer by default: it only starts and looks up a
/// package (well under a second), but a cold start on a network file system can take seconds.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// `--probe-timeout SECONDS`, as every program with `--installed` reads it: a number of
/// seconds, more than 0 and at most 3600.
///
/// # Errors
/// What the value should be, for the argument parser to show.
pub fn probe_timeout(text: &str) -> Result<Duration, String> {
    match text.parse::<f64>() {
        Ok(secs) if secs > 0.0 && secs <= 3600.0 => Ok(Duration::from_secs_f64(secs)),
        _ => Err("a number of seconds, more than 0 and at most 3600".into()),
    }
}

/// The package looked for, and how messages name it.
#[derive(Clone, Copy, Debug)]
pub struct Wanted<'a> {
    /// The import name (`transformers`, `transformers.models.llama`).
    pub name: &'a str,
    /// How messages call it (`SGLang`, or the name itself).
    pub shown: &'a str,
    /// What to do when it is not found, said at the end of each message.
    pub remedy: &'a str,
}

/// The folder of the package `wanted` that the interpreter `python` would import, the
/// interpreter given `limit` to answer.
///
/// # Errors
/// A message naming the interpreter and the remedy: `python` is a folder or cannot be run, does
/// not answer within `limit` or gives no answer; the name is not a dotted Python name; the
/// package is missing, a single module, or a namespace package (a leftover folder); a dotted
/// name's further parts are not folders of it.
pub fn package_folder(python: &str, wanted: Wanted<'_>, limit: Duration) -> Result<PathBuf, String> {
    let Wanted { name, shown, remedy } = wanted;
    if name.is_empty() || !name.split('.').all(is_identifier) {
        return Err(format!(
            "`{name}` is not a package name (dotted Python names: `transformers`, `a.b`)"
        ));
    }
    if Path::new(python).is_dir() {
        let bin = Path::new(python).join("bin/python");
        return Err(format!(
            "`{python}` is a folder, not an interpreter; pass its interpreter: --python {}",
            bin.display()
        ));
    }
    let (top, below) = name.split_once('.').map_or((name, None), |(t, b)| (t, Some(b)));
    let output = probe::run(Command::new(python).args(["-I", "-c", FIND_PACKAGE, top]), limit).map_err(|err| {
        match err.kind() {
            std::io::ErrorKind::NotFound => {
                format!("cannot run `{python}`: no such program; pass --python with the interpreter of the environment that has {shown}")
            }
            _ => format!("cannot run `{python}`: {err}"),
        }
    })?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last_error = clip(
        stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no message")
            .trim(),
    );
    let Some(status) = output.status else {
        return Err(format!(
            "`{python}` did not answer within {} when asked where {shown} is, and was stopped with all it started \
             (raise the limit with --probe-timeout SECONDS); is it a Python 3 interpreter? {remedy}",
            seconds(limit)
        ));
    };
    if !status.success() {
        return Err(format!(
            "`{python}` could not look for {shown} ({last_error}); is it a Python 3 interpreter? {remedy}"
        ));
    }
    let Some(answer) = String::from_utf8_lossy(&output.stdout)
        .lines()
        .rev()
        .find_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
    else {
        return Err(format!(
            "`{python}` gave no answer when asked where {shown} is ({last_error})"
        ));
    };
    let folder = judge(python, Wanted { name: top, ..wanted }, &answer)?;
    match below {
        None => Ok(folder),
        Some(below) => {
            let sub = folder.join(below.replace('.', "/"));
            if sub.is_dir() {
                Ok(sub)
            } else {
                Err(format!(
                    "{}: no such folder in the {top} that `{python}` has; {remedy}",
                    sub.display()
                ))
            }
        }
    }
}

/// The package folder from the interpreter's answer, or what is wrong with what it found.
pub fn judge(python: &str, wanted: Wanted<'_>, answer: &serde_json::Value) -> Result<PathBuf, String> {
    use serde_json::Value;
    let Wanted { name, shown, remedy } = wanted;
    let field = |key: &str| answer.get(key).and_then(Value::as_str).unwrap_or("?").to_string();
    let who = format!("`{python}` ({}, Python {})", field("executable"), field("version"));
    if let Some(error) = answer.get("error").and_then(Value::as_str) {
        return Err(format!("{who} could not look for the {name} package: {error}"));
    }
    let Some(origin) = answer.get("origin") else {
        return Err(format!(
            "no installed {shown}: {who} has no package `{name}` (looked in isolated mode: the current directory \
             and PYTHONPATH are not searched); {remedy}"
        ));
    };
    let locations: Vec<&str> = answer
        .get("locations")
        .and_then(Value::as_array)
        .map(|l| l.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if answer.get("package") != Some(&Value::Bool(true)) {
        return Err(format!(
            "{who} finds `{name}` as a single module ({}), not a package; {remedy}",
            origin.as_str().unwrap_or("?")
        ));
    }
    match origin.as_str() {
        Some(origin) if answer.get("has_location") == Some(&Value::Bool(true)) => {
            Ok(Path::new(origin).parent().unwrap_or(Path::new(origin)).to_path_buf())
        }
        _ => Err(format!(
            "{who} finds `{name}` only as a namespace package (folders without __init__.py: {}), not an installed \
             {shown}; a leftover of an uninstalled {shown}? {remedy}",
            locations.join(", ")
        )),
    }
}

/// Whether `text` is a Python identifier (ASCII letters, digits, `_`; Unicode letters too).
fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_alphabetic()) && chars.all(|c| c == '_' || c.is_alphanumeric())
}

/// A duration as people read it: `20 s`, `0.5 s`.
fn seconds(limit: Duration) -> String {
    if limit.subsec_millis() == 0 {
        format!("{} s", limit.as_secs())
    } else {
        format!("{:.1} s", limit.as_secs_f64())
    }
}

/// At most 300 characters of an interpreter's message.
fn clip(text: &str) -> String {
    match text.char_indices().nth(300) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SGLANG: Wanted<'static> = Wanted {
        name: "sglang",
        shown: "SGLang",
        remedy: "pass --python",
    };

    #[test]
    fn the_interpreters_answer_is_judged() {
        let err = |answer: serde_json::Value| judge("py", SGLANG, &answer).unwrap_err();
        assert!(err(serde_json::json!({})).contains("no installed SGLang"));
        assert!(err(serde_json::json!({"origin": "/x/sglang.py", "package": false})).contains("single module"));
        assert!(
            err(serde_json::json!({"origin": null, "package": true, "locations": ["/a"]}))
                .contains("namespace package (folders without __init__.py: /a)")
        );
        let found = judge(
            "py",
            SGLANG,
            &serde_json::json!({"origin": "/site/sglang/__init__.py", "package": true, "has_location": true}),
        );
        assert_eq!(found.unwrap(), PathBuf::from("/site/sglang"));
        let cannot = package_folder("/no/such/python-interpreter", SGLANG, PROBE_TIMEOUT).unwrap_err();
        assert!(cannot.contains("no such program"), "{cannot}");
    }

    #[test]
    fn names_and_folders_are_refused_before_anything_runs() {
        let bad = Wanted { name: "a;b", ..SGLANG };
        assert!(package_folder("python3", bad, PROBE_TIMEOUT)
            .unwrap_err()
            .contains("not a package name"));
        let dir = tempfile::tempdir().unwrap();
        let err = package_folder(dir.path().to_str().unwrap(), SGLANG, PROBE_TIMEOUT).unwrap_err();
        assert!(
            err.contains("is a folder, not an interpreter") && err.contains("bin/python"),
            "{err}"
        );
    }
}
