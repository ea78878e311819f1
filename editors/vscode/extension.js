// Starts `pysplice-lsp` for Python files and recipe files (TOML) of the workspace.
//
// The server reads its recipes from `pysplice.recipes` (sent as initializationOptions) or else
// from `pysplice.toml` at the workspace root, and stays quiet where there is neither. TOML files
// are watched so that edits to recipes and `pysplice.toml` reload them. The server's commands
// (`pysplice.applyRecipeToWorkspace`, and the one behind code actions) are registered by the
// language client itself.
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
  };
  return new LanguageClient("pysplice", "pysplice", serverOptions, clientOptions);
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

module.exports = { activate, deactivate };
