// The command palette's quick pick for the workspace command (extension.js's `pickRecipe`), with
// `vscode` and the language client replaced by stand-ins: what is offered, what goes to the
// server, and that a dismissed pick sends nothing. Run: `node --test editors/vscode/test/`
// (Node 18 or newer; no npm install needed).
"use strict";

const test = require("node:test");
const assert = require("node:assert");
const Module = require("node:module");

const shown = [];
let pick = () => undefined;
const vscode = {
  window: {
    showInformationMessage: (text) => shown.push(["info", text]),
    showWarningMessage: (text) => shown.push(["warning", text]),
    showQuickPick: async (items, options) => pick(items, options),
  },
  workspace: {},
};
const load = Module._load;
Module._load = function (request, ...rest) {
  if (request === "vscode") return vscode;
  if (request === "vscode-languageclient/node") return { LanguageClient: class {}, TransportKind: { stdio: 0 } };
  return load.call(this, request, ...rest);
};
const { pickRecipe } = require("../extension.js");

// A server stand-in for `next`: lists `recipes`, records every command sent.
function server(recipes) {
  const sent = [];
  const next = async (command, args) => {
    sent.push([command, args]);
    if (command === "pysplice.listRecipes") return recipes;
    return { recipe: args[0] || null, recipes: args, changed: ["file:///m.py"], failed: [] };
  };
  return { sent, next };
}

const TWO = [
  { id: "count", summary: "Count calls" },
  { id: "trace", summary: "Trace run" },
];

test("several recipes: a quick pick of them, the pick sent as the argument", async () => {
  const { sent, next } = server(TWO);
  let offered;
  pick = (items) => {
    offered = items.map((i) => i.label);
    return items.find((i) => i.id === "trace");
  };
  const answer = await pickRecipe("pysplice.applyRecipeToWorkspace", [], next);
  assert.deepStrictEqual(offered, ["Each file: the recipe that targets it", "count", "trace"]);
  assert.deepStrictEqual(sent, [
    ["pysplice.listRecipes", []],
    ["pysplice.applyRecipeToWorkspace", ["trace"]],
  ]);
  assert.strictEqual(answer.recipe, "trace");
});

test("'each file' sends the command without a recipe: the server picks per file", async () => {
  const { sent, next } = server(TWO);
  pick = (items) => items[0];
  await pickRecipe("pysplice.applyRecipeToWorkspace", [], next);
  assert.deepStrictEqual(sent[1], ["pysplice.applyRecipeToWorkspace", []]);
});

test("a dismissed pick sends nothing and says so", async () => {
  const { sent, next } = server(TWO);
  shown.length = 0;
  pick = () => undefined;
  const answer = await pickRecipe("pysplice.applyRecipeToWorkspace", [], next);
  assert.strictEqual(answer, undefined);
  assert.deepStrictEqual(sent, [["pysplice.listRecipes", []]]);
  assert.deepStrictEqual(shown, [["info", "pysplice: no recipe chosen: nothing was changed"]]);
});

test("one recipe: no pick; a named recipe or another command: passed through", async () => {
  const { sent, next } = server([TWO[0]]);
  pick = () => assert.fail("no quick pick with one recipe");
  await pickRecipe("pysplice.applyRecipeToWorkspace", [], next);
  await pickRecipe("pysplice.applyRecipeToWorkspace", ["trace"], next);
  await pickRecipe("pysplice.applyCodeAction", [{ uri: "file:///m.py" }], next);
  assert.deepStrictEqual(sent, [
    ["pysplice.listRecipes", []],
    ["pysplice.applyRecipeToWorkspace", ["count"]],
    ["pysplice.applyRecipeToWorkspace", ["trace"]],
    ["pysplice.applyCodeAction", [{ uri: "file:///m.py" }]],
  ]);
});
