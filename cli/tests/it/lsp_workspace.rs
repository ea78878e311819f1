//! The workspace command `pysplice.applyRecipeToWorkspace` with two recipes and no recipe
//! named, over the server's real stdio transport: a file that one recipe targets gets it without
//! a question; a file that both target brings a `window/showMessageRequest`, and the recipe the
//! client picks is the one applied; a dismissed (or failed) question changes nothing and says so.
//! The edits are compared with the library's own apply, the files' bytes on disk before and after.

use std::path::Path;

use pysplice::{Recipe, SourceFile};
use serde_json::{json, Value};

use crate::lsp::{apply_text_edits, temp_dir, Client};

/// Targets `Model.forward`; its import hook is module-level.
const COUNT: &str = r#"
[recipe]
id = "count"
summary = "Count Model.forward calls"

[[hook]]
id = "imports"
summary = "Added the os import"
ensure-imports = ["os"]

[[hook]]
id = "count"
summary = "Counted calls"
in = "Model.forward"
at = "start"
code = "self.calls = getattr(self, 'calls', 0) + 1"
"#;

/// Targets `Other.run`; its import hook (module-level) fits every file but targets none.
const TRACE: &str = r#"
[recipe]
id = "trace"
summary = "Trace Other.run"

[[hook]]
id = "imports"
summary = "Added the logging import"
ensure-imports = ["logging"]

[[hook]]
id = "trace"
summary = "Traced run"
in = "Other.run"
at = "start"
code = "logging.debug('run')"
"#;

const MODEL: &str = "class Model:\n    def forward(self, x):\n        return x\n";
const OTHER: &str = "class Other:\n    def run(self):\n        return 1\n";

/// A workspace with both recipes configured and `files` written; a started, initialized client.
fn workspace(files: &[(&str, &str)]) -> (std::path::PathBuf, Client) {
    workspace_with(files, None)
}

/// [`workspace`], the server given `options` as `initializationOptions`.
fn workspace_with(files: &[(&str, &str)], options: Option<serde_json::Value>) -> (std::path::PathBuf, Client) {
    let dir = temp_dir();
    std::fs::write(dir.join("count.toml"), COUNT).unwrap();
    std::fs::write(dir.join("trace.toml"), TRACE).unwrap();
    std::fs::write(
        dir.join("pysplice.toml"),
        "recipes = [\"count.toml\", \"trace.toml\"]\n",
    )
    .unwrap();
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let mut client = Client::start(&dir);
    let mut params = json!({
        "processId": null,
        "rootUri": uri(&dir, ""),
        "capabilities": {"workspace": {"applyEdit": true, "workspaceEdit": {"documentChanges": true}}},
    });
    if let Some(options) = options {
        params["initializationOptions"] = options;
    }
    let init = client.request("initialize", params);
    let commands = &init["result"]["capabilities"]["executeCommandProvider"]["commands"];
    assert!(
        commands
            .as_array()
            .unwrap()
            .contains(&json!("pysplice.applyRecipeToWorkspace")),
        "{init:#}"
    );
    client.notify("initialized", json!({}));
    (dir, client)
}

fn uri(dir: &Path, name: &str) -> String {
    let root = format!("file://{}", dir.display());
    if name.is_empty() {
        root
    } else {
        format!("{root}/{name}")
    }
}

/// The library's apply of `spec` to `text`.
fn library_apply(spec: &str, text: &str) -> String {
    let recipe = Recipe::from_toml("r.toml", spec).unwrap();
    pysplice::apply(&recipe, SourceFile::new("m.py", text))
        .unwrap()
        .output()
        .to_string()
}

/// Sends the workspace command without a recipe, as request `id` (its answer is not awaited).
fn run_command(client: &mut Client, id: i64) {
    client.send(&json!({
        "jsonrpc": "2.0", "id": id, "method": "workspace/executeCommand",
        "params": {"command": "pysplice.applyRecipeToWorkspace", "arguments": []},
    }));
}

/// The answer to request `id`.
fn answer(client: &mut Client, id: i64) -> Value {
    client.wait_for(|m| m.get("id") == Some(&json!(id)) && m.get("method").is_none())
}

/// Per file URI, the edits of a `workspace/applyEdit` request.
fn edits_by_file(apply: &Value) -> Vec<(String, Vec<Value>)> {
    let changes = apply["params"]["edit"]["documentChanges"]
        .as_array()
        .expect("documentChanges");
    changes
        .iter()
        .map(|c| {
            let uri = c["textDocument"]["uri"].as_str().unwrap().to_string();
            (uri, c["edits"].as_array().cloned().unwrap())
        })
        .collect()
}

fn is_method(message: &Value, method: &str) -> bool {
    message["method"] == method
}

fn shut_down(mut client: Client) {
    let shutdown = client.request("shutdown", Value::Null);
    assert!(shutdown.get("error").is_none(), "{shutdown:#}");
    client.notify("exit", Value::Null);
    assert!(client.wait_exit().success());
}

/// Regression: with two recipes and none named the command answered `-32602 name one of the
/// recipes`. Each file now gets the recipe that targets it, in one edit, without a question; the
/// module-level hook of `trace` (an import that fits every file) does not make it target `m.py`.
#[test]
fn each_file_gets_the_one_recipe_that_targets_it_without_a_question() {
    let (dir, mut client) = workspace(&[("m.py", MODEL), ("o.py", OTHER), ("plain.py", "x = 1\n")]);
    run_command(&mut client, 100);
    let result = answer(&mut client, 100);
    assert!(result.get("error").is_none(), "{result:#}");
    let result = &result["result"];
    assert_eq!(result["recipes"], json!(["count", "trace"]), "{result:#}");
    assert_eq!(result["recipe"], Value::Null, "{result:#}");
    assert_eq!(result["failed"], json!([]), "{result:#}");
    let mut changed: Vec<&str> = result["changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    changed.sort_unstable();
    assert_eq!(changed, [uri(&dir, "m.py"), uri(&dir, "o.py")]);
    assert!(
        !client.backlog.iter().any(|m| is_method(m, "window/showMessageRequest")),
        "no question: {:#?}",
        client.backlog
    );
    let apply = client.wait_for(|m| is_method(m, "workspace/applyEdit"));
    let edits = edits_by_file(&apply);
    assert_eq!(edits.len(), 2, "{apply:#}");
    for (file, edits) in edits {
        let (text, spec) = if file == uri(&dir, "m.py") {
            (MODEL, COUNT)
        } else {
            (OTHER, TRACE)
        };
        assert_eq!(apply_text_edits(text, &edits), library_apply(spec, text), "{file}");
    }
    // One file, one recipe: the same, the answer naming the recipe.
    let _ = std::fs::remove_file(dir.join("o.py"));
    run_command(&mut client, 101);
    let result = answer(&mut client, 101);
    assert_eq!(result["result"]["recipe"], "count", "{result:#}");
    assert_eq!(result["result"]["changed"], json!([uri(&dir, "m.py")]), "{result:#}");
    shut_down(client);
    // The server only sends edits: the files on disk are as written.
    assert_eq!(std::fs::read_to_string(dir.join("m.py")).unwrap(), MODEL);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A file that both recipes target: the client is asked, one action per recipe, and the
/// recipe it picks (`trace`, the second) is the one applied.
#[test]
fn a_file_both_recipes_target_brings_a_question_and_the_pick_is_applied() {
    let both = format!("{MODEL}\n\n{OTHER}");
    let (dir, mut client) = workspace(&[("both.py", &both)]);
    run_command(&mut client, 200);
    let question = client.wait_for(|m| is_method(m, "window/showMessageRequest"));
    let titles: Vec<&str> = question["params"]["actions"]
        .as_array()
        .expect("actions")
        .iter()
        .map(|a| a["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["count", "trace"], "{question:#}");
    let message = question["params"]["message"].as_str().unwrap();
    assert!(message.contains("both.py (count, trace)"), "{message}");
    assert!(
        !client.backlog.iter().any(|m| m.get("id") == Some(&json!(200))),
        "no answer before the pick"
    );
    client.send(&json!({"jsonrpc": "2.0", "id": question["id"], "result": {"title": "trace"}}));
    let result = answer(&mut client, 200);
    assert_eq!(result["result"]["recipe"], "trace", "{result:#}");
    assert_eq!(result["result"]["changed"], json!([uri(&dir, "both.py")]), "{result:#}");
    let apply = client.wait_for(|m| is_method(m, "workspace/applyEdit"));
    let [(file, edits)] = edits_by_file(&apply).try_into().expect("one file");
    assert_eq!(file, uri(&dir, "both.py"));
    let patched = apply_text_edits(&both, &edits);
    assert_eq!(patched, library_apply(TRACE, &both));
    assert!(!patched.contains("self.calls"), "count was not chosen: {patched}");
    shut_down(client);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The question dismissed (`null`), failed (an error answer) or answered with an action that
/// was not offered: no edit is sent, the answer says so, a message tells the user, and the file
/// keeps its bytes.
#[test]
fn a_dismissed_question_changes_nothing() {
    let both = format!("{MODEL}\n\n{OTHER}");
    let (dir, mut client) = workspace(&[("both.py", &both)]);
    let answers = [
        json!({"result": null}),
        json!({"error": {"code": -32603, "message": "no window"}}),
        json!({"result": {"title": "forged"}}),
    ];
    for (n, reply) in answers.into_iter().enumerate() {
        let id = 300 + n as i64;
        run_command(&mut client, id);
        let question = client.wait_for(|m| is_method(m, "window/showMessageRequest"));
        let mut response = json!({"jsonrpc": "2.0", "id": question["id"]});
        for (key, value) in reply.as_object().unwrap() {
            response[key] = value.clone();
        }
        client.send(&response);
        let result = answer(&mut client, id);
        assert_eq!(result["result"]["cancelled"], true, "{result:#}");
        assert_eq!(result["result"]["changed"], json!([]), "{result:#}");
        let said = client.wait_for(|m| is_method(m, "window/showMessage"));
        assert!(
            said["params"]["message"]
                .as_str()
                .unwrap()
                .contains("nothing was changed"),
            "{said:#}"
        );
        assert!(
            !client.backlog.iter().any(|m| is_method(m, "workspace/applyEdit")),
            "no edit: {:#?}",
            client.backlog
        );
    }
    // A command cancelled while its question is out is answered `RequestCancelled`; the late
    // pick changes nothing.
    run_command(&mut client, 400);
    let question = client.wait_for(|m| is_method(m, "window/showMessageRequest"));
    client.notify("$/cancelRequest", json!({"id": 400}));
    let result = answer(&mut client, 400);
    assert_eq!(result["error"]["code"], -32800, "{result:#}");
    client.send(&json!({"jsonrpc": "2.0", "id": question["id"], "result": {"title": "count"}}));
    // Named, the recipe is applied as before: the only edit of the session.
    let named = client.request(
        "workspace/executeCommand",
        json!({"command": "pysplice.applyRecipeToWorkspace", "arguments": ["count"]}),
    );
    assert_eq!(named["result"]["recipe"], "count", "{named:#}");
    let apply = client.wait_for(|m| is_method(m, "workspace/applyEdit"));
    assert_eq!(apply["params"]["label"], "Apply recipe count to the workspace");
    assert!(
        !client.backlog.iter().any(|m| is_method(m, "workspace/applyEdit")),
        "one edit only: {:#?}",
        client.backlog
    );
    shut_down(client);
    assert_eq!(std::fs::read_to_string(dir.join("both.py")).unwrap(), both);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `pysplice.listRecipes` (for an editor's own picker): the configured recipes in order.
#[test]
fn the_recipes_are_listed_for_a_picker() {
    let (dir, mut client) = workspace(&[]);
    let listed = client.request(
        "workspace/executeCommand",
        json!({"command": "pysplice.listRecipes", "arguments": []}),
    );
    assert_eq!(
        listed["result"],
        json!([
            {"id": "count", "summary": "Count Model.forward calls"},
            {"id": "trace", "summary": "Trace Other.run"},
        ]),
        "{listed:#}"
    );
    // No file that any recipe targets: the client is asked, with every recipe.
    run_command(&mut client, 500);
    let question = client.wait_for(|m| is_method(m, "window/showMessageRequest"));
    assert_eq!(
        question["params"]["actions"].as_array().unwrap().len(),
        2,
        "{question:#}"
    );
    assert!(question["params"]["message"]
        .as_str()
        .unwrap()
        .contains("no configured recipe targets"));
    client.send(&json!({"jsonrpc": "2.0", "id": question["id"], "result": null}));
    assert_eq!(answer(&mut client, 500)["result"]["cancelled"], true);
    shut_down(client);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A workspace with more `.py` files than the command looks at: the answer counts those left
/// out, and a warning names the limit and the count. The limit lowered to a few files
/// (`maxWorkspaceFiles`; the default of 50,000 and the cap on the option are unit tests of
/// `lsp/workspace.rs`), so that the workspace is small.
#[test]
fn files_over_the_limit_are_counted_and_said() {
    const LIMIT: usize = 5;
    let (dir, mut client) = workspace_with(&[], Some(json!({ "maxWorkspaceFiles": LIMIT })));
    let many = dir.join("many");
    std::fs::create_dir(&many).unwrap();
    for i in 0..LIMIT + 2 {
        std::fs::write(many.join(format!("e{i}.py")), "").unwrap();
    }
    let named = client.request(
        "workspace/executeCommand",
        json!({"command": "pysplice.applyRecipeToWorkspace", "arguments": ["count"]}),
    );
    assert_eq!(named["result"]["left_out"], 2, "{named:#}");
    let said = client.wait_for(|m| is_method(m, "window/showMessage"));
    assert_eq!(said["params"]["type"], 2, "a warning: {said:#}");
    let message = said["params"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("more than {LIMIT} Python files")) && message.contains("2 were left out"),
        "{message}"
    );
    shut_down(client);
    let _ = std::fs::remove_dir_all(&dir);
}
