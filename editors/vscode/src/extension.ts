// rankdoctor for VS Code: starts `rankdoctor lsp` (the language server does the work: marks,
// hovers, code actions) and adds two commands that show a report in a side panel.
import * as vscode from "vscode";
import { ExecuteCommandRequest, LanguageClient, LanguageClientOptions, ServerOptions, TransportKind } from "vscode-languageclient/node";

const COPY_VERIFY = "rankdoctor.copyVerifyCommand";
const DIAGNOSE_TEXT = "rankdoctor.diagnoseText";

let client: LanguageClient | undefined;
let panel: vscode.WebviewPanel | undefined;

function makeClient(): LanguageClient {
  const config = vscode.workspace.getConfiguration("rankdoctor");
  const serverOptions: ServerOptions = {
    command: config.get<string>("path") || "rankdoctor",
    args: ["lsp"],
    transport: TransportKind.stdio,
  };
  const clientOptions: LanguageClientOptions = {
    // the files the server diagnoses: logs by name, and every file of a torchrun --log-dir tree
    documentSelector: [
      { scheme: "file", pattern: "**/*.{log,out,err,txt}" },
      { scheme: "file", pattern: "**/attempt_*/*/*" },
    ],
    initializationOptions: {
      entryUrl: config.get<string>("entryUrl") || undefined,
      scanWorkspace: config.get<boolean>("scanWorkspace", true),
    },
    middleware: {
      // LSP has no clipboard: the server returns the verify command, the editor copies it
      executeCommand: async (command, args, next) => {
        const result = await next(command, args);
        if (command === COPY_VERIFY && typeof result === "string") {
          await vscode.env.clipboard.writeText(result);
          vscode.window.setStatusBarMessage("rankdoctor: verify command copied", 4000);
        }
        return result;
      },
    },
  };
  return new LanguageClient("rankdoctor", "rankdoctor", serverOptions, clientOptions);
}

async function diagnose(text: string, what: string): Promise<void> {
  if (!client) {
    throw new Error("the rankdoctor language server is not running");
  }
  if (!text.trim()) {
    vscode.window.showWarningMessage(`rankdoctor: ${what} is empty`);
    return;
  }
  const markdown: string = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Window, title: `rankdoctor: diagnosing ${what}` },
    () => client!.sendRequest(ExecuteCommandRequest.type, { command: DIAGNOSE_TEXT, arguments: [text] }),
  );
  await show(markdown, what);
}

async function show(markdown: string, what: string): Promise<void> {
  if (!panel) {
    panel = vscode.window.createWebviewPanel("rankdoctor.report", "rankdoctor report", { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true }, {
      enableScripts: false,
    });
    panel.onDidDispose(() => (panel = undefined));
  }
  // VS Code's own Markdown renderer (the built-in Markdown extension); the report escapes
  // every text that came from a log, and the panel runs no scripts
  let body: string;
  try {
    body = await vscode.commands.executeCommand<string>("markdown.api.render", markdown);
  } catch {
    body = `<pre>${markdown.replace(/&/g, "&amp;").replace(/</g, "&lt;")}</pre>`;
  }
  const csp = `default-src 'none'; style-src ${panel.webview.cspSource} 'unsafe-inline'; img-src ${panel.webview.cspSource};`;
  panel.title = `rankdoctor: ${what}`;
  panel.webview.html = `<!DOCTYPE html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<style>body{font-family:var(--vscode-font-family);padding:0 1em}pre,code{font-family:var(--vscode-editor-font-family)}
table{border-collapse:collapse}td,th{border:1px solid var(--vscode-panel-border);padding:2px 6px}</style>
</head><body>${body}</body></html>`;
  panel.reveal(vscode.ViewColumn.Beside, true);
}

async function diagnoseSelection(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor) {
    vscode.window.showWarningMessage("rankdoctor: open a log and select a traceback first");
    return;
  }
  const selected = editor.selections.map((s) => editor.document.getText(s)).join("\n");
  // nothing selected: the whole document
  await diagnose(selected.trim() ? selected : editor.document.getText(), selected.trim() ? "selection" : "document");
}

async function diagnoseTerminal(): Promise<void> {
  const terminal = vscode.window.activeTerminal;
  if (!terminal) {
    vscode.window.showWarningMessage("rankdoctor: no terminal is open");
    return;
  }
  // VS Code gives extensions no read access to a terminal's buffer: select it all, copy,
  // and put the clipboard back as it was
  const saved = await vscode.env.clipboard.readText();
  let text = "";
  try {
    terminal.show(false);
    await vscode.commands.executeCommand("workbench.action.terminal.selectAll");
    await vscode.commands.executeCommand("workbench.action.terminal.copySelection");
    await vscode.commands.executeCommand("workbench.action.terminal.clearSelection");
    text = await vscode.env.clipboard.readText();
  } finally {
    await vscode.env.clipboard.writeText(saved);
  }
  await diagnose(text, `terminal ${terminal.name}`);
}

function guarded(fn: () => Promise<void>): () => Promise<void> {
  return async () => {
    try {
      await fn();
    } catch (err) {
      vscode.window.showErrorMessage(`rankdoctor: ${err instanceof Error ? err.message : String(err)}`);
    }
  };
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  context.subscriptions.push(
    vscode.commands.registerCommand("rankdoctor.diagnoseSelection", guarded(diagnoseSelection)),
    vscode.commands.registerCommand("rankdoctor.diagnoseTerminal", guarded(diagnoseTerminal)),
    vscode.workspace.onDidChangeConfiguration(async (e) => {
      if (e.affectsConfiguration("rankdoctor")) {
        await client?.stop();
        client = makeClient();
        await client.start();
      }
    }),
  );
  client = makeClient();
  try {
    await client.start();
  } catch (err) {
    vscode.window.showErrorMessage(
      `rankdoctor: could not start \`${vscode.workspace.getConfiguration("rankdoctor").get("path")} lsp\` (set rankdoctor.path): ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}
