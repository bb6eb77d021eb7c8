// In-host tests of the editor side: EVOLVE-BLOCK CodeLens and problems,
// program documents and diff editors, Apply Program to File, settings
// validation and the task listing. They run inside a real VS Code
// (code-server) on the workspace the host runner created.
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { replaceEvolveBlock } from '../../src/engine/common/diff';
import { applyProgramToFile } from '../../src/vscode/applyProgram';
import { compareProgramWithFile, programDiffTitle, showProgramDiff } from '../../src/vscode/diffViews';
import { evolveBlockProblemOf, registerEvolveBlockLens } from '../../src/vscode/evolveBlockLens';
import { addProgramLookup, type ProgramDocumentSource, type ProgramLookup, programUri } from '../../src/vscode/programDocuments';
import { readModelApiKeys } from '../../src/vscode/apiKey';
import { readSettings, setByWorkspace, SettingsError } from '../../src/vscode/settings';
import { listBundledTaskChoices, listTaskChoices, pickTask, rememberTaskFile } from '../../src/vscode/taskPicker';
import { settingsWithAllowedUrls } from '../../src/vscode/urlConsent';
import { api, EXTENSION_ID, REPO_ROOT } from './support';
import { waitFor } from '../support/waitFor';

function extension(): vscode.Extension<unknown> {
  const ext = vscode.extensions.getExtension(EXTENSION_ID);
  assert.ok(ext, `${EXTENSION_ID} is not installed`);
  return ext;
}

const workspace = process.env.THETAEVOLVE_TEST_WORKSPACE ?? join(tmpdir(), 'thetaevolve-editor-host');
const folder = join(workspace, 'editor-tests');

function writeProgram(name: string, text: string): vscode.Uri {
  mkdirSync(folder, { recursive: true });
  const path = join(folder, name);
  writeFileSync(path, text);
  return vscode.Uri.file(path);
}

const PYTHON = [
  'import numpy as np',
  '',
  '# EVOLVE-BLOCK-START',
  'def pack():',
  '    return 1',
  '# EVOLVE-BLOCK-END',
  '',
  'print(pack())',
  '',
].join('\n');
const C_LIKE = [
  '#include <stdio.h>',
  '/* EVOLVE-BLOCK-START */',
  'int f(void) {',
  '  return 1;',
  '}',
  '// EVOLVE-BLOCK-END',
  'int main(void) { return f(); }',
  '',
].join('\n');

/** Lenses of every provider, one per (command, start line, end line): the extension may register the same provider as this suite. */
async function lensesOf(uri: vscode.Uri): Promise<{ command: string; title: string; tooltip: string; start: number; end: number }[]> {
  const lenses = (await vscode.commands.executeCommand<vscode.CodeLens[]>('vscode.executeCodeLensProvider', uri, 100)) ?? [];
  const seen = new Map<string, { command: string; title: string; tooltip: string; start: number; end: number }>();
  for (const lens of lenses) {
    const entry = {
      command: lens.command?.command ?? '',
      title: lens.command?.title ?? '',
      tooltip: lens.command?.tooltip ?? '',
      start: lens.range.start.line,
      end: lens.range.end.line,
    };
    seen.set(`${entry.command}|${entry.title}|${entry.start}|${entry.end}`, entry);
  }
  return [...seen.values()].sort((a, b) => a.start - b.start || a.command.localeCompare(b.command));
}

/** Close the tabs this suite opened (diffs of program documents, files of its folder); never waits on a prompt for long. */
async function closeOurTabs(): Promise<void> {
  const ours = (uri: vscode.Uri): boolean => uri.scheme === 'thetaevolve' || uri.fsPath.startsWith(folder);
  const tabs = vscode.window.tabGroups.all
    .flatMap((group) => group.tabs)
    .filter((tab) => {
      const input = tab.input;
      if (input instanceof vscode.TabInputTextDiff) return ours(input.original) || ours(input.modified);
      return input instanceof vscode.TabInputText && ours(input.uri) && !tab.isDirty;
    });
  await Promise.race([vscode.window.tabGroups.close(tabs, true), new Promise((r) => setTimeout(r, 5000))]);
}

// Files rather than untitled documents: a dirty untitled editor would make
// any later "close all editors" wait on a save prompt.
let scratchCount = 0;
async function scratch(extension: string, content: string): Promise<vscode.TextDocument> {
  scratchCount++;
  return vscode.workspace.openTextDocument(writeProgram(`scratch-${scratchCount}.${extension}`, content));
}

describe('editor: EVOLVE-BLOCK CodeLens and problems', () => {
  let registration: vscode.Disposable | undefined;
  before(() => {
    registration = registerEvolveBlockLens({ subscriptions: [], extension: extension() });
  });
  after(async () => {
    await closeOurTabs();
    registration?.dispose();
  });

  it('puts Evolve, Dashboard and Best so far over the region of a Python file', async () => {
    const uri = writeProgram('lens.py', PYTHON);
    await vscode.window.showTextDocument(uri);
    const lenses = await lensesOf(uri);
    const commands = lenses.filter((l) => l.command.startsWith('thetaevolve.'));
    assert.deepEqual(
      commands.map((l) => [l.command, l.start, l.end]),
      [
        ['thetaevolve.openDashboard', 2, 5],
        ['thetaevolve.showBestDiff', 2, 5],
        ['thetaevolve.startRun', 2, 5],
      ],
    );
    assert.ok(commands.some((l) => l.title.includes('Evolve')));
    // Best so far diffs the file (left) against the best program (right), and says so.
    assert.match(
      commands.find((l) => l.command === 'thetaevolve.showBestDiff')?.tooltip ?? '',
      /this file \(left\) against the best program/,
    );
    assert.equal(evolveBlockProblemOf(await vscode.workspace.openTextDocument(uri)), null);
  });

  it('finds the region of a C-like file with /* */ and // markers', async () => {
    const uri = writeProgram('lens.c', C_LIKE);
    const document = await vscode.workspace.openTextDocument(uri);
    assert.equal(document.languageId, 'c');
    const starts = (await lensesOf(uri)).filter((l) => l.command === 'thetaevolve.startRun');
    assert.deepEqual(
      starts.map((l) => [l.start, l.end]),
      [[1, 5]],
    );
  });

  it('follows edits: removing the end marker replaces the lenses with a warning', async () => {
    const document = await scratch('py', PYTHON);
    assert.equal((await lensesOf(document.uri)).filter((l) => l.command === 'thetaevolve.startRun').length, 1);
    const edit = new vscode.WorkspaceEdit();
    edit.delete(document.uri, document.lineAt(5).rangeIncludingLineBreak);
    assert.ok(await vscode.workspace.applyEdit(edit));
    const after = await lensesOf(document.uri);
    assert.equal(after.filter((l) => l.command === 'thetaevolve.startRun').length, 0);
    assert.ok(
      after.some((l) => l.title.includes('EVOLVE-BLOCK-START on line 3 has no EVOLVE-BLOCK-END')),
      JSON.stringify(after),
    );
    await document.save();
  });

  it('says a file has no region, with the comment syntax of its language', async () => {
    const python = evolveBlockProblemOf(await scratch('py', 'x = 1\n'));
    assert.match(python ?? '', /no EVOLVE-BLOCK region/);
    assert.match(python ?? '', /"# EVOLVE-BLOCK-START"/);
    const c = evolveBlockProblemOf(await scratch('c', 'int x;\n'));
    assert.match(c ?? '', /"\/\/ EVOLVE-BLOCK-START"/);
    assert.equal((await lensesOf((await scratch('py', 'x = 1\n')).uri)).filter((l) => l.command.startsWith('thetaevolve.')).length, 0);
  });

  it('reports unbalanced markers with their line, also in Problems', async () => {
    const uri = writeProgram('unbalanced.py', ['x = 1', '# EVOLVE-BLOCK-END', 'y = 2', ''].join('\n'));
    const document = await vscode.workspace.openTextDocument(uri);
    assert.match(evolveBlockProblemOf(document) ?? '', /EVOLVE-BLOCK-END on line 2 without an EVOLVE-BLOCK-START/);
    const diagnostics = await waitFor(() => vscode.languages.getDiagnostics(uri), {
      what: 'the unbalanced markers in Problems',
      until: (found) => found.length > 0,
    });
    assert.ok(
      diagnostics.some((d) => d.range.start.line === 1 && d.source === 'ThetaEvolve'),
      JSON.stringify(diagnostics),
    );
  });

  it('offers the lenses over each of several regions, with no warning (algorithm.md section 3: a file may hold several)', async () => {
    const text = [
      '// EVOLVE-BLOCK-START',
      'a();',
      '// EVOLVE-BLOCK-END',
      '',
      '// EVOLVE-BLOCK-START',
      'b();',
      '// EVOLVE-BLOCK-END',
      '',
    ].join('\n');
    const document = await scratch('js', text);
    assert.equal(evolveBlockProblemOf(document), null);
    const lenses = await lensesOf(document.uri);
    assert.deepEqual(
      lenses.filter((l) => l.command === 'thetaevolve.startRun').map((l) => [l.start, l.end]),
      [
        [0, 2],
        [4, 6],
      ],
    );
    assert.equal(lenses.filter((l) => l.title.includes('$(warning)')).length, 0, JSON.stringify(lenses));
  });
});

describe('editor: program documents and diffs', () => {
  const runId = `editor-test-${Date.now().toString(36)}`;
  const programs = new Map<string, ProgramDocumentSource>([
    ['1v', { code: PYTHON, objective: 0.95981, step: 11, stepRank: { rank: 2, of: 8 }, feedback: '' }],
    ['3k', { code: PYTHON.replace('return 1', 'return 2'), objective: 0.96123, step: 12, stepRank: { rank: 1, of: 8 }, feedback: '' }],
  ]);
  // Test data behind the real lookup interface: a run with two programs.
  const lookup: ProgramLookup = {
    getProgram: async (run, id) => (run === runId ? (programs.get(id) ?? null) : null),
  };
  let registration: vscode.Disposable | undefined;
  before(async () => {
    // Served through the extension: a scheme has one file system, the extension's (this test bundle's copy of the
    // module could not register it again); the diff titles this bundle's diffViews makes read its own lookups.
    registration = vscode.Disposable.from((await api()).registerProgramLookup(lookup), addProgramLookup(lookup));
  });
  after(async () => {
    await closeOurTabs();
    registration?.dispose();
  });

  it('opens a program read-only with its text and its language from the extension', async () => {
    const uri = programUri(runId, '3k', '3k step 12', 'py');
    assert.equal(uri.scheme, 'thetaevolve');
    assert.ok(uri.path.endsWith('.py'), uri.path);
    const document = await vscode.workspace.openTextDocument(uri);
    assert.equal(document.getText(), programs.get('3k')?.code);
    assert.equal(document.languageId, 'python');
    const c = await vscode.workspace.openTextDocument(programUri(runId, '1v', 'odd/label: 1v', '.c'));
    assert.equal(c.languageId, 'c');
  });

  it('says plainly when a program is not available', async () => {
    const document = await vscode.workspace.openTextDocument(programUri(runId, 'zz', 'zz', 'py'));
    assert.match(document.getText(), /program zz of run .* is not available/);
  });

  it("Show Diff opens parent <-> child with a title naming step, rank and objective; the ids are in the documents' paths", async () => {
    await showProgramDiff(runId, '1v', '3k', 'py');
    const tab = vscode.window.tabGroups.activeTabGroup.activeTab;
    assert.ok(tab?.input instanceof vscode.TabInputTextDiff, 'the active tab is not a diff');
    assert.equal(tab.label, 'step 11 #2 (0.9598) \u2194 step 12 #1 (0.9612)');
    assert.equal(tab.input.modified.path.split('/').at(-1), 'step 12 #1.py', 'the document is named like the program');
    assert.equal(tab.input.original.path.split('/')[2], '1v');
    assert.equal(tab.input.modified.path.split('/')[2], '3k');
    // Programs are named by their step (and rank there when known); an unknown step falls back to the id.
    assert.equal(
      programDiffTitle({ id: '1v', objective: 0.95981 }, { id: '3k', objective: 0.96123, step: 12 }, 'circle-packing'),
      'circle-packing: 1v (0.9598) \u2194 step 12 (0.9612)',
    );
  });

  it('Compare with File diffs the program against the file', async () => {
    const fileUri = writeProgram('compare.py', PYTHON);
    await compareProgramWithFile(runId, '3k', fileUri, 'py');
    const tab = vscode.window.tabGroups.activeTabGroup.activeTab;
    assert.ok(tab?.input instanceof vscode.TabInputTextDiff, 'the active tab is not a diff');
    // Old on the left (the file as it is), new on the right (the program): an improvement reads as an insertion.
    assert.equal(tab.input.original.toString(), fileUri.toString());
    assert.equal(tab.input.modified.scheme, 'thetaevolve');
    assert.match(tab.label, /compare\.py \(current\) \u2194 step 12 #1 \(0\.9612\)/);
  });
});

describe('editor: Apply Program to File', () => {
  const child = PYTHON.replace('    return 1', '    best = 2\n    return best');
  after(closeOurTabs);

  it('refuses without asking when the file changed since the run started (non-interactive)', async () => {
    const uri = writeProgram('apply-changed.py', PYTHON);
    const outcome = await applyProgramToFile(uri, child, { textAtRunStart: PYTHON.replace('pack', 'pack_v0'), interactive: false });
    assert.equal(outcome, 'refused');
    assert.equal((await vscode.workspace.openTextDocument(uri)).getText(), PYTHON);
  });

  it('refuses a file without a single region', async () => {
    const uri = writeProgram('apply-none.py', 'x = 1\n');
    assert.equal(await applyProgramToFile(uri, child, { interactive: false }), 'refused');
    assert.equal((await vscode.workspace.openTextDocument(uri)).getText(), 'x = 1\n');
  });

  it('replaces only the EVOLVE-BLOCK, and one Undo restores the file', async () => {
    const uri = writeProgram('apply-undo.py', PYTHON);
    const editor = await vscode.window.showTextDocument(uri);
    const outcome = await applyProgramToFile(uri, child, { textAtRunStart: PYTHON, interactive: false });
    assert.equal(outcome, 'applied');
    assert.equal(editor.document.getText(), replaceEvolveBlock(PYTHON, child));
    assert.ok(editor.document.getText().includes('best = 2'));
    assert.equal(await applyProgramToFile(uri, child, { interactive: false }), 'unchanged');
    await vscode.window.showTextDocument(editor.document);
    await vscode.commands.executeCommand('undo');
    assert.equal(editor.document.getText(), PYTHON);
    assert.equal(editor.document.isDirty, false);
  });

  it("replaces each of several regions by the program's region of the same rank, keeping the code between", async () => {
    const file = [
      '// EVOLVE-BLOCK-START',
      'const a = 1;',
      '// EVOLVE-BLOCK-END',
      'const fixed = 0;',
      '// EVOLVE-BLOCK-START',
      'const b = 2;',
      '// EVOLVE-BLOCK-END',
      '',
    ].join('\n');
    const program = file.replace('const a = 1;', 'const a = 10;\nconst a2 = 11;').replace('const b = 2;', '');
    const uri = writeProgram('apply-two-regions.js', file);
    assert.equal(await applyProgramToFile(uri, program, { interactive: false }), 'applied');
    const document = await vscode.workspace.openTextDocument(uri);
    assert.equal(document.getText(), replaceEvolveBlock(file, program));
    assert.equal(document.getText(), program);
    await document.save();
  });

  it('keeps CRLF line endings', async () => {
    const crlf = PYTHON.replace(/\n/g, '\r\n');
    const uri = writeProgram('apply-crlf.py', crlf);
    assert.equal(await applyProgramToFile(uri, child, { interactive: false }), 'applied');
    const document = await vscode.workspace.openTextDocument(uri);
    assert.equal(document.getText(), replaceEvolveBlock(crlf, child));
    assert.ok(!/[^\r]\n/.test(document.getText()));
    await document.save();
  });
});

describe('editor: settings', () => {
  const config = (): vscode.WorkspaceConfiguration => vscode.workspace.getConfiguration('thetaevolve');
  afterEach(async () => {
    await config().update('batchSize', undefined, vscode.ConfigurationTarget.Workspace);
    await config().update('sampler', undefined, vscode.ConfigurationTarget.Workspace);
  });

  it('reads every setting with its default', () => {
    const settings = readSettings();
    assert.equal(settings.batchSize, 32);
    assert.equal(settings['database.preset'], 'large');
  });

  it('names a bad number, its value and where it is set', async () => {
    await config().update('batchSize', -3, vscode.ConfigurationTarget.Workspace);
    assert.throws(
      () => readSettings(),
      (err: unknown) =>
        err instanceof SettingsError &&
        /thetaevolve\.batchSize/.test(err.message) &&
        /-3/.test(err.message) &&
        /Workspace Settings/.test(err.message) &&
        err.settingKey === 'thetaevolve.batchSize',
    );
  });

  it('names a bad enum value', async () => {
    await config().update('sampler', 'gpt', vscode.ConfigurationTarget.Workspace);
    assert.throws(
      () => readSettings(),
      (err: unknown) => err instanceof SettingsError && /thetaevolve\.sampler/.test(err.message) && /"gpt"/.test(err.message),
    );
  });
});

/** A workspace state for the consent question (VS Code's Memento, kept in memory). */
class MemoryState implements vscode.Memento {
  private readonly values = new Map<string, unknown>();
  keys(): readonly string[] {
    return [...this.values.keys()];
  }
  get<T>(key: string, defaultValue?: T): T | undefined {
    return (this.values.has(key) ? this.values.get(key) : defaultValue) as T | undefined;
  }
  async update(key: string, value: unknown): Promise<void> {
    this.values.set(key, value);
  }
}

describe('editor: endpoint and trainer URL from User and workspace settings', () => {
  const config = (): vscode.WorkspaceConfiguration => vscode.workspace.getConfiguration('thetaevolve');
  afterEach(async () => {
    for (const target of [vscode.ConfigurationTarget.Workspace, vscode.ConfigurationTarget.Global]) {
      await config().update('endpoint', undefined, target);
      await config().update('trainer.url', undefined, target);
      await config().update('models', undefined, target);
    }
  });

  it('reads the User value of thetaevolve.endpoint (not machine-scoped, so a remote window applies it)', async () => {
    const categories = extension().packageJSON.contributes.configuration as { properties: Record<string, { scope?: string }> }[];
    const endpoint = categories.map((c) => c.properties['thetaevolve.endpoint']).find((e) => e !== undefined);
    assert.ok(endpoint, 'thetaevolve.endpoint is contributed');
    assert.equal(endpoint.scope, undefined);
    await config().update('endpoint', 'http://gpu-box:8000/v1', vscode.ConfigurationTarget.Global);
    const settings = readSettings();
    assert.equal(settings.endpoint, 'http://gpu-box:8000/v1');
    let asked = 0;
    const allowed = await settingsWithAllowedUrls(settings, undefined, new MemoryState(), async () => {
      asked++;
      return 'cancel';
    });
    assert.equal(allowed?.endpoint, 'http://gpu-box:8000/v1', 'a User value needs no consent');
    assert.equal(asked, 0);
  });

  it("uses a workspace's endpoint only with consent, asked once per workspace and URL; otherwise the User value", async () => {
    await config().update('endpoint', 'http://gpu-box:8000/v1', vscode.ConfigurationTarget.Global);
    await config().update('endpoint', 'http://elsewhere:9000/v1', vscode.ConfigurationTarget.Workspace);
    const settings = readSettings();
    assert.equal(settings.endpoint, 'http://elsewhere:9000/v1');
    const state = new MemoryState();
    const questions: string[] = [];
    const answer = (choice: 'workspace' | 'user' | 'cancel') => async (q: { key: string; workspaceValue: string; userValue: string }) => {
      questions.push(`${q.key}: ${q.workspaceValue} vs ${q.userValue}`);
      return choice;
    };
    assert.equal(
      (await settingsWithAllowedUrls(settings, undefined, state, answer('user')))?.endpoint,
      'http://gpu-box:8000/v1',
      'declined: the User value',
    );
    assert.equal(await settingsWithAllowedUrls(settings, undefined, state, answer('cancel')), undefined, 'cancelled: no run');
    assert.equal((await settingsWithAllowedUrls(settings, undefined, state, answer('workspace')))?.endpoint, 'http://elsewhere:9000/v1');
    assert.deepEqual(questions, Array(3).fill('endpoint: http://elsewhere:9000/v1 vs http://gpu-box:8000/v1'));
    assert.equal(
      (await settingsWithAllowedUrls(settings, undefined, state, answer('cancel')))?.endpoint,
      'http://elsewhere:9000/v1',
      'allowed once: not asked again',
    );
    assert.equal(questions.length, 3);
    // Another URL in the workspace is asked about again; the trainer URL is guarded the same way.
    await config().update('trainer.url', 'http://trainer.example:8000', vscode.ConfigurationTarget.Workspace);
    await settingsWithAllowedUrls(readSettings(), undefined, state, answer('user'));
    assert.equal(questions.at(-1), 'trainer.url: http://trainer.example:8000 vs ');
  });

  // Issue 51 item 1: a cloned repository's .vscode/settings.json names a model at its own server, with an apiKeyName.
  it("uses a workspace's model endpoints only with consent, and reads no environment variable a workspace's apiKeyName names", async () => {
    const mine = [{ name: 'gpt-4.1', weight: 1 }];
    const theirs = [{ name: 'gpt-4.1', endpoint: 'https://elsewhere.example/v1', apiKeyName: 'THETAEVOLVE_HOST_AWS_SECRET' }];
    await config().update('endpoint', 'http://gpu-box:8000/v1', vscode.ConfigurationTarget.Global);
    await config().update('models', mine, vscode.ConfigurationTarget.Global);
    await config().update('models', theirs, vscode.ConfigurationTarget.Workspace);
    const settings = readSettings();
    assert.equal(settings.models[0]?.endpoint, 'https://elsewhere.example/v1');
    const state = new MemoryState();
    const questions: string[] = [];
    const answer = (choice: 'workspace' | 'user' | 'cancel') => async (q: { key: string; workspaceValue: string; userValue: string }) => {
      questions.push(`${q.key}: ${q.workspaceValue} vs ${q.userValue}`);
      return choice;
    };
    assert.deepEqual((await settingsWithAllowedUrls(settings, undefined, state, answer('user')))?.models, mine, 'declined: the User list');
    assert.equal(await settingsWithAllowedUrls(settings, undefined, state, answer('cancel')), undefined, 'cancelled: no run');
    assert.deepEqual(questions, Array(2).fill('models: https://elsewhere.example/v1 vs '));
    assert.equal(
      (await settingsWithAllowedUrls(settings, undefined, state, answer('workspace')))?.models[0]?.endpoint,
      'https://elsewhere.example/v1',
    );
    assert.equal(
      (await settingsWithAllowedUrls(settings, undefined, state, answer('cancel')))?.models[0]?.endpoint,
      'https://elsewhere.example/v1',
    );
    assert.equal(questions.length, 3, 'allowed once: not asked again');
    const contributed = extension().packageJSON.capabilities.untrustedWorkspaces.restrictedConfigurations as string[];
    assert.ok(contributed.includes('thetaevolve.models'), 'an untrusted workspace cannot set it');

    // Even allowed, its apiKeyName names a stored secret only, never a variable of the editor's environment.
    process.env.THETAEVOLVE_HOST_AWS_SECRET = 'aws-secret';
    const stored = new Map<string, string>();
    const secrets = { get: async (key: string) => stored.get(key) } as unknown as vscode.SecretStorage;
    try {
      assert.equal(setByWorkspace('models'), true);
      assert.deepEqual(await readModelApiKeys(secrets, settings, !setByWorkspace('models')), {});
      stored.set('thetaevolve.apiKey.THETAEVOLVE_HOST_AWS_SECRET', 'stored-key');
      assert.deepEqual(await readModelApiKeys(secrets, settings, !setByWorkspace('models')), { THETAEVOLVE_HOST_AWS_SECRET: 'stored-key' });
      stored.clear();
      // The same list in the User settings: the variable is the user's to name.
      await config().update('models', undefined, vscode.ConfigurationTarget.Workspace);
      await config().update('models', theirs, vscode.ConfigurationTarget.Global);
      assert.equal(setByWorkspace('models'), false);
      assert.deepEqual(await readModelApiKeys(secrets, readSettings(), !setByWorkspace('models')), {
        THETAEVOLVE_HOST_AWS_SECRET: 'aws-secret',
      });
    } finally {
      delete process.env.THETAEVOLVE_HOST_AWS_SECRET;
    }
  });
});

describe('editor: task picker', () => {
  it('lists the bundled tasks with title, direction and description', async () => {
    const choices = await listBundledTaskChoices(extension().extensionPath);
    const names = choices.map((c) => c.summary?.name);
    assert.ok(names.includes('circle-packing'), JSON.stringify(names));
    for (const choice of choices) {
      assert.equal(choice.error, undefined, choice.error);
      assert.ok(choice.summary?.title && choice.summary.description);
      assert.ok(['maximize', 'minimize'].includes(choice.summary.direction));
    }
  });

  it("lists the workspace's task files, a malformed one with the field it lacks", async () => {
    const choices = await listTaskChoices(extension().extensionPath);
    const broken = choices.find((c) => c.source === 'workspace' && c.taskFile.endsWith(join('my-task', 'task.json')));
    assert.ok(broken, JSON.stringify(choices.map((c) => c.taskFile)));
    assert.match(broken.error ?? '', /field \w+/);
  });

  it("Select Task with no program open opens a workspace copy of the bundled task's program, remembered for it; again, keeps the copy", async () => {
    const select = async (): Promise<void> => {
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
      let done = false;
      const command = Promise.resolve(vscode.commands.executeCommand('thetaevolve.selectTask')).finally(() => (done = true));
      // No file open: the bundled tasks head the list, circle-packing first.
      await waitFor(
        async () => {
          if (done) return true;
          await vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem');
          return false;
        },
        { what: 'a task was picked', deadlineMs: 60_000 },
      );
      await command;
    };
    const copy = join(workspace, 'circle-packing', 'initial.py');
    const bundled = join(extension().extensionPath, 'tasks', 'circle-packing', 'initial.py');
    rmSync(join(workspace, 'circle-packing'), { recursive: true, force: true });
    await select();
    assert.equal(vscode.window.activeTextEditor?.document.uri.fsPath, copy, 'the copy is open');
    assert.equal(readFileSync(copy, 'utf8'), readFileSync(bundled, 'utf8'));
    // Remembered for the copy: Start Run on it asks nothing.
    assert.equal((await api()).rememberedTaskFor(vscode.Uri.file(copy)), join(extension().extensionPath, 'tasks', 'circle-packing'));
    // The researcher's edits are theirs: a second Select Task opens the copy as it is.
    writeFileSync(copy, `# my edit\n${readFileSync(bundled, 'utf8')}`);
    await select();
    assert.equal(vscode.window.activeTextEditor?.document.uri.fsPath, copy);
    assert.match(readFileSync(copy, 'utf8'), /^# my edit/);
  });

  it('lists each evaluator of an OpenEvolve folder that has several, as a task of its program, and runs the one picked', async () => {
    const dir = join(folder, 'code-phases');
    rmSync(dir, { recursive: true, force: true });
    cpSync(join(REPO_ROOT, 'test', 'fixtures', 'openevolve', 'binary_code'), dir, { recursive: true });
    cpSync(join(dir, 'evaluator.py'), join(dir, 'evaluator_phase_1.py'));
    const program = vscode.Uri.file(join(dir, 'initial_program.py'));
    const ofFolder = (await listTaskChoices(extension().extensionPath, undefined, program)).filter((c) => c.taskFile.startsWith(dir));
    assert.deepEqual(
      ofFolder.map((c) => c.taskFile.slice(dir.length + 1)).sort(),
      ['evaluator.py', 'evaluator_phase_1.py'],
      JSON.stringify(ofFolder.map((c) => c.taskFile)),
    );
    for (const choice of ofFolder) {
      assert.equal(choice.error, undefined, choice.error);
      assert.equal(choice.summary?.initialProgramPath, program.fsPath, "each is this file's task");
    }
    assert.equal(new Set(ofFolder.map((c) => c.summary?.name)).size, 2, 'two tasks, by name');
    // The picker's list for the program, in its own order: both, under "This file's task".
    const state = new Map<string, unknown>();
    const workspaceState: vscode.Memento = {
      keys: () => [...state.keys()],
      get: <T>(key: string, fallback?: T): T | undefined => (state.has(key) ? (state.get(key) as T) : fallback),
      update: async (key: string, value: unknown) => {
        state.set(key, value);
      },
    };
    const context = { extensionPath: extension().extensionPath, workspaceState };
    await rememberTaskFile(context, program, join(dir, 'evaluator_phase_1.py'));
    const task = await pickTask(context, program);
    assert.equal(task?.source, join(dir, 'evaluator_phase_1.py'), 'the evaluator picked is the one the run uses');
  });

  it('New Task for This File on a FunSearch specification asks its inputs and reduction, then writes the task folder beside it', async () => {
    const specDir = join(folder, 'funsearch-spec');
    rmSync(specDir, { recursive: true, force: true });
    mkdirSync(specDir, { recursive: true });
    const spec = join(specDir, 'sum_free.py');
    cpSync(join(REPO_ROOT, 'test', 'fixtures', 'funsearch', 'sum_free.py'), spec);
    await vscode.window.showTextDocument(vscode.Uri.file(spec));
    // Asked first: cancelling the question writes nothing.
    const cancelled = Promise.resolve(vscode.commands.executeCommand('thetaevolve.newTaskForFile'));
    let answered = false;
    void cancelled.finally(() => (answered = true));
    await waitFor(
      async () => {
        if (answered) return true;
        await vscode.commands.executeCommand('workbench.action.closeQuickOpen');
        return false;
      },
      { what: 'the inputs question, cancelled', deadlineMs: 60_000 },
    );
    assert.equal(await cancelled, null);
    assert.deepEqual(readdirSync(specDir), ['sum_free.py']);

    // Answered (the inputs as a keybinding could offer them, then the first reduction): the folder in OpenEvolve's layout.
    await vscode.window.showTextDocument(vscode.Uri.file(spec));
    let done = false;
    const written = Promise.resolve(vscode.commands.executeCommand('thetaevolve.newTaskForFile', { inputs: '[3, 4]' })).finally(
      () => (done = true),
    );
    await waitFor(
      async () => {
        if (done) return true;
        await vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem');
        return false;
      },
      { what: 'the questions answered', deadlineMs: 60_000 },
    );
    const result = (await written) as { taskFile: string; evaluatorFile: string | null } | null;
    assert.equal(result?.taskFile, join(specDir, 'sum_free', 'evaluator.py'));
    const settings = JSON.parse(readFileSync(join(specDir, 'sum_free', 'funsearch.json'), 'utf8')) as Record<string, unknown>;
    assert.deepEqual(settings.inputs, [3, 4]);
    assert.equal(settings.reduce, 'last', "FunSearch's own reduction, offered first");
    assert.match(readFileSync(join(specDir, 'sum_free', 'initial_program.py'), 'utf8'), /EVOLVE-BLOCK-START/);
    // The program it opened has the converted folder as its task.
    const converted = vscode.Uri.file(join(specDir, 'sum_free', 'initial_program.py'));
    const choices = await listTaskChoices(extension().extensionPath, undefined, converted);
    assert.ok(
      choices.some((c) => c.taskFile.startsWith(join(specDir, 'sum_free')) && c.summary?.initialProgramPath === converted.fsPath),
      JSON.stringify(choices.map((c) => c.taskFile)),
    );
  });

  it('uses the task remembered for a file without asking', async () => {
    const state = new Map<string, unknown>();
    // The real Memento interface over a Map: test data for the picker's memory.
    const workspaceState: vscode.Memento = {
      keys: () => [...state.keys()],
      get: <T>(key: string, fallback?: T): T | undefined => (state.has(key) ? (state.get(key) as T) : fallback),
      update: async (key: string, value: unknown) => {
        state.set(key, value);
      },
    };
    const context = { extensionPath: extension().extensionPath, workspaceState };
    const file = writeProgram('remembered.py', PYTHON);
    await rememberTaskFile(context, file, join(extension().extensionPath, 'tasks', 'circle-packing', 'task.json'));
    const task = await pickTask(context, file);
    assert.equal(task?.name, 'circle-packing');
  });
});
