// Starts `pysplice-lsp` for Python files and recipe files (TOML) of the workspace.
//
// The server reads its recipes from `pysplice.recipes` (sent as initializationOptions) or else
// from `pysplice.toml` at the workspace root, and stays quiet where there is neither. TOML files
// are watched so that edits to recipes and `pysplice.toml` reload them. The server's commands
// (`pysplice.applyRecipeToWorkspace`, and the one behind code actions) are registered by the
// language client itself. Run from the command palette (no arguments) with several recipes
// configured, the workspace command first offers a quick pick of them (from the server's
// `pysplice.listRecipes`), with "each file: the recipe that targets it" first; the server asks
// again (a notification with one button per recipe) where several recipes target one file.
"use strict";

const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

function createClient() {
  const config = vscode.workspace.getConfiguration("pysplice");
  const recipes = config.get("recipes") || [];
  const serverOptions = {
    command: config.get("server.path") || "pysplice-lsp",
    transport: TransportKind.stdio,
  };
  const clientOptions = {
    documentSelector: [
      { scheme: "file", language: "python" },
      { scheme: "file", language: "toml" },
    ],
    initializationOptions: recipes.length > 0 ? { recipes } : undefined,
    synchronize: {
      fileEvents: vscode.workspace.createFileSystemWatcher("**/*.toml"),
    },
    middleware: { executeCommand: pickRecipe },
  };
  return new LanguageClient("pysplice", "pysplice", serverOptions, clientOptions);
}

const APPLY_TO_WORKSPACE = "pysplice.applyRecipeToWorkspace";
const LIST_RECIPES = "pysplice.listRecipes";

// The workspace command without a recipe (the command palette): a quick pick of the configured
// recipes, or the only one; dismissed, nothing is sent and nothing changes.
async function pickRecipe(command, args, next) {
  if (command !== APPLY_TO_WORKSPACE || (args && args.length > 0)) {
    return next(command, args);
  }
  const recipes = (await next(LIST_RECIPES, [])) || [];
  if (recipes.length === 0) {
    vscode.window.showInformationMessage("pysplice: no recipe is configured (pysplice.recipes or pysplice.toml)");
    return undefined;
  }
  if (recipes.length === 1) {
    return report(await next(command, [recipes[0].id]));
  }
  const items = [
    { label: "Each file: the recipe that targets it", description: "asks where several do", id: null },
    ...recipes.map((r) => ({ label: r.id, description: r.summary, id: r.id })),
  ];
  const picked = await vscode.window.showQuickPick(items, {
    placeHolder: "pysplice: the recipe to apply to every matching file of the workspace",
  });
  if (!picked) {
    vscode.window.showInformationMessage("pysplice: no recipe chosen: nothing was changed");
    return undefined;
  }
  return report(await next(command, picked.id === null ? [] : [picked.id]));
}

// Says what the workspace command did; gives its answer back.
function report(answer) {
  if (answer && !answer.cancelled) {
    const changed = (answer.changed || []).length;
    const failed = answer.failed || [];
    const recipes = (answer.recipes || []).join(", ") || "no recipe";
    const text = `pysplice: ${recipes}: ${changed} file(s) to change` + (failed.length ? `; ${failed.length} not: ${failed[0]}` : "");
    (failed.length ? vscode.window.showWarningMessage : vscode.window.showInformationMessage)(text);
  }
  return answer;
}

async function activate(context) {
  client = createClient();
  await client.start();
  // A changed setting (server path, recipes) takes a fresh server.
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (event.affectsConfiguration("pysplice")) {
        await client.stop();
        client = createClient();
        await client.start();
      }
    })
  );
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate, pickRecipe };
