"""The language server driven by an independent client: pygls's LanguageClient (PyPI).

Checks what an editor sees: quiet attach without configuration; per-hook diagnostics with quick
fixes; code actions resolved lazily into a verified edit; the last good diagnostics kept while the
file does not parse; spec errors shown in the recipe file, reloaded when a watched file changes;
the command that applies a recipe to the whole workspace in one edit.

Usage: python cli/tests/python/lsp_pygls.py PYSPLICE_LSP   (needs `pygls` from PyPI)
"""

import ast
import asyncio
import pathlib
import shutil
import sys
import tempfile

from lsprotocol import types as t
from pygls.lsp.client import LanguageClient

RECIPE = """\
[recipe]
id = "trace"
summary = "Trace forward calls"

[[hook]]
id = "imports"
summary = "Added imports"
ensure-imports = ["logging"]

[[hook]]
id = "log"
summary = "Logged each call"
in = "Model.forward"
at = "start"
code = "logging.debug('forward')"
"""

MODEL = "class Model:\n    def forward(self, x):\n        return x\n"
TIMEOUT = 10


def uri(path):
    return path.resolve().as_uri()


class Client(LanguageClient):
    """Records what the server sends."""

    def __init__(self):
        super().__init__("pysplice-test", "1")
        self.diagnostics = {}
        self.messages = []
        self.registrations = []
        self.applied = []

        @self.feature(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def diagnostics(params):
            self.diagnostics[params.uri] = params

        @self.feature(t.WINDOW_SHOW_MESSAGE)
        def show(params):
            self.messages.append(params.message)

        @self.feature(t.WINDOW_LOG_MESSAGE)
        def log(params):
            pass

        @self.feature(t.CLIENT_REGISTER_CAPABILITY)
        def register(params):
            self.registrations.extend(params.registrations)

        @self.feature(t.WORKSPACE_APPLY_EDIT)
        def apply(params):
            self.applied.append(params)
            return t.ApplyWorkspaceEditResult(applied=True)


async def wait_for(what, predicate):
    for _ in range(int(TIMEOUT / 0.02)):
        value = predicate()
        if value:
            return value
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


CAPABILITIES = t.ClientCapabilities(
    workspace=t.WorkspaceClientCapabilities(
        apply_edit=True,
        workspace_edit=t.WorkspaceEditClientCapabilities(document_changes=True),
        did_change_watched_files=t.DidChangeWatchedFilesClientCapabilities(dynamic_registration=True),
        execute_command=t.ExecuteCommandClientCapabilities(),
    ),
    text_document=t.TextDocumentClientCapabilities(
        code_action=t.CodeActionClientCapabilities(
            code_action_literal_support=t.ClientCodeActionLiteralOptions(
                code_action_kind=t.ClientCodeActionKindOptions(value_set=["quickfix", "refactor.rewrite"])
            ),
            resolve_support=t.ClientCodeActionResolveOptions(properties=["edit"]),
            data_support=True,
        )
    ),
)


async def start(server, root, capabilities=CAPABILITIES):
    client = Client()
    await client.start_io(server)
    await client.initialize_async(
        t.InitializeParams(
            capabilities=capabilities,
            root_uri=uri(root),
            workspace_folders=[t.WorkspaceFolder(uri=uri(root), name="ws")],
        )
    )
    client.initialized(t.InitializedParams())
    return client


async def stop(client):
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()


def open_file(client, path, text, version=1):
    item = t.TextDocumentItem(uri=uri(path), language_id="python", version=version, text=text)
    client.text_document_did_open(t.DidOpenTextDocumentParams(text_document=item))


def apply_edits(text, edits):
    """Applies LSP edits (ASCII text) from the last to the first."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(p):
        return starts[min(p.line, len(lines))] + p.character

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end) :]
    return text


async def quiet_without_configuration(server, tmp):
    root = tmp / "plain"
    root.mkdir()
    (root / "m.py").write_text(MODEL)
    client = await start(server, root)
    open_file(client, root / "m.py", MODEL)
    await wait_for("diagnostics", lambda: client.diagnostics.get(uri(root / "m.py")))
    await asyncio.sleep(0.2)
    assert client.messages == [], f"a popup in a project without pysplice.toml: {client.messages}"
    assert not client.diagnostics[uri(root / "m.py")].diagnostics, client.diagnostics
    await stop(client)


async def workspace(server, tmp):
    root = tmp / "ws"
    (root / "recipes").mkdir(parents=True)
    (root / "pkg").mkdir()
    (root / "pysplice.toml").write_text('recipes = ["recipes/trace.toml"]\n')
    spec = root / "recipes" / "trace.toml"
    spec.write_text(RECIPE)
    model = root / "m.py"
    model.write_text(MODEL)
    (root / "pkg" / "n.py").write_text(MODEL)
    (root / "pkg" / "other.py").write_text("x = 1\n")

    client = await start(server, root)
    assert any(r.method == "workspace/didChangeWatchedFiles" for r in client.registrations) or await wait_for(
        "the watcher registration", lambda: client.registrations
    )
    assert client.messages == [], client.messages

    # Diagnostics per hook, each marked as fixed by applying the recipe.
    open_file(client, model, MODEL)
    published = await wait_for("diagnostics of m.py", lambda: client.diagnostics.get(uri(model)))
    codes = sorted(d.code for d in published.diagnostics)
    assert codes == ["trace/imports", "trace/log"], codes
    assert all(d.data["fix"] == "apply" for d in published.diagnostics)

    # Code actions: a quick fix for the diagnostics and the rewrite, resolved into the edit.
    actions = await client.text_document_code_action_async(
        t.CodeActionParams(
            text_document=t.TextDocumentIdentifier(uri=uri(model)),
            range=t.Range(start=t.Position(line=1, character=0), end=t.Position(line=1, character=0)),
            context=t.CodeActionContext(diagnostics=published.diagnostics),
        )
    )
    kinds = sorted(a.kind for a in actions)
    assert kinds == ["quickfix", "refactor.rewrite"], kinds
    fix = next(a for a in actions if a.kind == "quickfix")
    assert fix.diagnostics and fix.edit is None and fix.data, fix
    resolved = await client.code_action_resolve_async(fix)
    [change] = resolved.edit.document_changes
    assert change.text_document.uri == uri(model) and change.text_document.version == 1
    patched = apply_edits(MODEL, change.edits)
    assert "import logging" in patched and "        logging.debug('forward')\n" in patched, patched

    # Typing a syntax error keeps the last good diagnostics.
    client.text_document_did_change(
        t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=uri(model), version=2),
            content_changes=[
                t.TextDocumentContentChangePartial(
                    range=t.Range(start=t.Position(line=3, character=0), end=t.Position(line=3, character=0)),
                    text="def (\n",
                )
            ],
        )
    )
    broken = await wait_for(
        "diagnostics of version 2", lambda: (d := client.diagnostics[uri(model)]).version == 2 and d
    )
    assert sorted(d.code for d in broken.diagnostics) == codes, broken.diagnostics
    client.text_document_did_change(
        t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=uri(model), version=3),
            content_changes=[t.TextDocumentContentChangeWholeDocument(text=MODEL)],
        )
    )
    await wait_for("diagnostics of version 3", lambda: client.diagnostics[uri(model)].version == 3)

    # A spec error is shown in the recipe file once the watched file changes; fixed, it goes.
    spec.write_text(RECIPE.replace('at = "start"', 'at = "start"\nplace = 1'))
    client.workspace_did_change_watched_files(
        t.DidChangeWatchedFilesParams(changes=[t.FileEvent(uri=uri(spec), type=t.FileChangeType.Changed)])
    )
    errors = await wait_for(
        "spec diagnostics", lambda: (d := client.diagnostics.get(uri(spec))) and d.diagnostics and d
    )
    [error] = errors.diagnostics
    assert error.severity == t.DiagnosticSeverity.Error and "place" in error.message, error
    broken_lines = RECIPE.replace('at = "start"', 'at = "start"\nplace = 1').splitlines()
    assert error.range.start.line == broken_lines.index("place = 1"), error
    await wait_for("m.py without the broken recipe", lambda: not client.diagnostics[uri(model)].diagnostics)
    spec.write_text(RECIPE)
    client.workspace_did_change_watched_files(
        t.DidChangeWatchedFilesParams(changes=[t.FileEvent(uri=uri(spec), type=t.FileChangeType.Changed)])
    )
    await wait_for("spec diagnostics cleared", lambda: not client.diagnostics[uri(spec)].diagnostics)
    await wait_for("m.py diagnostics back", lambda: len(client.diagnostics[uri(model)].diagnostics) == 2)

    # The recipe applied to every matching file of the workspace: one edit.
    answer = await client.workspace_execute_command_async(
        t.ExecuteCommandParams(command="pysplice.applyRecipeToWorkspace", arguments=["trace"])
    )
    assert sorted(answer["changed"]) == sorted([uri(model), uri(root / "pkg" / "n.py")]), answer
    [request] = await wait_for("workspace/applyEdit", lambda: client.applied)
    files = {c.text_document.uri: c for c in request.edit.document_changes}
    assert set(files) == {uri(model), uri(root / "pkg" / "n.py")}, files
    assert files[uri(model)].text_document.version == 3
    assert files[uri(root / "pkg" / "n.py")].text_document.version is None
    assert "logging.debug" in apply_edits(MODEL, files[uri(root / "pkg" / "n.py")].edits)
    await stop(client)


async def command_instead_of_resolve(server, tmp):
    """A client that cannot resolve code actions gets a command; running it sends the edit."""
    root = tmp / "cmd"
    root.mkdir()
    (root / "recipe.toml").write_text(RECIPE)
    (root / "pysplice.toml").write_text('recipes = ["recipe.toml"]\n')
    model = root / "m.py"
    model.write_text(MODEL)
    capabilities = t.ClientCapabilities(
        workspace=t.WorkspaceClientCapabilities(apply_edit=True, execute_command=t.ExecuteCommandClientCapabilities()),
        text_document=t.TextDocumentClientCapabilities(
            code_action=t.CodeActionClientCapabilities(
                code_action_literal_support=t.ClientCodeActionLiteralOptions(
                    code_action_kind=t.ClientCodeActionKindOptions(value_set=["quickfix", "refactor.rewrite"])
                )
            )
        ),
    )
    client = await start(server, root, capabilities)
    open_file(client, model, MODEL)
    await wait_for("diagnostics", lambda: client.diagnostics.get(uri(model)))
    actions = await client.text_document_code_action_async(
        t.CodeActionParams(
            text_document=t.TextDocumentIdentifier(uri=uri(model)),
            range=t.Range(start=t.Position(line=0, character=0), end=t.Position(line=0, character=0)),
            context=t.CodeActionContext(diagnostics=[]),
        )
    )
    [action] = [a for a in actions if a.title == "Apply recipe trace"]
    # lsprotocol reads any answer with a "command" key as a Command, and the CodeAction's command
    # object ends up as the repr of a dict in `command`: read it back from there.
    command = action.command if isinstance(action, t.CodeAction) else ast.literal_eval(action.command)
    if isinstance(action, t.CodeAction):
        assert action.edit is None, action
        command = {"command": command.command, "arguments": command.arguments}
    assert command["command"] == "pysplice.applyCodeAction", command
    await client.workspace_execute_command_async(
        t.ExecuteCommandParams(command=command["command"], arguments=command["arguments"])
    )
    [request] = await wait_for("workspace/applyEdit", lambda: client.applied)
    patched = apply_edits(MODEL, request.edit.changes[uri(model)])
    assert "        logging.debug('forward')\n" in patched, patched
    await stop(client)


async def main(server):
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="pysplice-pygls-"))
    try:
        await asyncio.wait_for(quiet_without_configuration(server, tmp), 30)
        await asyncio.wait_for(workspace(server, tmp), 30)
        await asyncio.wait_for(command_instead_of_resolve(server, tmp), 30)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("LSP through pygls: all checks passed")


if __name__ == "__main__":
    asyncio.run(main(str(pathlib.Path(sys.argv[1]).resolve())))
