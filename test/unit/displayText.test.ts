// What the editor shows of text it did not write (docs/guide.md "What the
// editor trusts"): forMessage leaves no link VS Code would render in a
// notification, progress message, modal, quick pick or status bar item, and
// no control or format character; the lint rule keeps every text shown in
// VS Code's UI on that path.
import { strict as assert } from 'node:assert';
import { resolve } from 'node:path';
import { ESLint } from 'eslint';
import { forDisplay, forMessage } from '../../src/engine/common/displayText';

const ROOT = resolve(__dirname, '../..');

/** Anything a notification or a Markdown renderer would make a link of: `[label](target)`, `<scheme:...>`, `command:ID`. */
const LINK_SHAPES = [/\[[^\]]*\]\(/, /<[a-z][a-z0-9+.-]*:/i, /command:\S/i];

function assertNoLink(shown: string): void {
  for (const shape of LINK_SHAPES) assert.doesNotMatch(shown, shape, `${JSON.stringify(shown)} still holds a link (${String(shape)})`);
}

const ESC = '\u001b';
const CSI = '\u009b';

describe('display text: forMessage', () => {
  // The inputs issue 42 names: each reached a notification or a picker.
  const inputs: Array<[string, string, string]> = [
    [
      'a run database named as a link',
      '[Click me](command:workbench.action.openSettings).sqlite',
      '[Click me] (command: workbench.action.openSettings).sqlite',
    ],
    [
      'a task title holding a link and ESC sequences',
      `Packing ${ESC}[2J${ESC}[H[open](command:workbench.action.terminal.new?%7B%7D) ${ESC}]8;;https://x.example${ESC}\\here${ESC}]8;;${ESC}\\`,
      'Packing [2J[H[open] (command: workbench.action.terminal.new?%7B%7D) ]8;;https://x.example\\here]8;;\\',
    ],
    [
      'a programPath holding a link',
      '/w/[x](command:git.clone?["https://evil.example/r"]).py',
      '/w/[x] (command: git.clone?["https://evil.example/r"]).py',
    ],
    ['a workspace setting value holding one', 'ID [go](https://evil.example "title")', 'ID [go] (https://evil.example "title")'],
    [
      'a served model id holding an autolink',
      'model-<command:workbench.action.openSettings>',
      'model-< command: workbench.action.openSettings>',
    ],
    [
      'an evaluator stderr with a bare command URI',
      'Traceback: see command:workbench.action.openGlobalKeybindings',
      'Traceback: see command: workbench.action.openGlobalKeybindings',
    ],
    ['a link hidden by a zero-width space and a bidi override', `[a]\u200b(command:x) \u202Eevil\u202C`, '[a] (command: x) evil'],
    ['an OSC 52 clipboard write and a C1 CSI cursor move', `ok${ESC}]52;c;cm0gLXJmIH4=\u0007${CSI}2A done`, 'ok]52;c;cm0gLXJmIH4=2A done'],
  ];
  for (const [what, input, shown] of inputs)
    it(`shows ${what} as text, no link`, () => {
      const out = forMessage(input);
      assert.equal(out, shown);
      assertNoLink(out);
    });

  it('keeps plain words, newlines, tabs and $(icon) names as they are', () => {
    const text = 'ThetaEvolve: run quadratic-20260101-000000 is paused.\n\tbest 0.25 · $(warning) weak sandbox · a: b [1] (2) <3>';
    assert.equal(forMessage(text), text);
  });

  it('forDisplay drops control and format characters, and nothing else', () => {
    assert.equal(forDisplay(`a${ESC}[31mb\u200ec\u2028d\te\nf`), 'a[31mbcd\te\nf');
    assert.equal(forDisplay('[x](command:y)'), '[x](command:y)');
  });
});

describe('lint: text shown in VS Code goes through src/vscode/notify.ts', function () {
  this.timeout(60_000);
  const raw = [
    'vscode.window.showInformationMessage(text)',
    'vscode.window.showWarningMessage(text, { modal: true })',
    'vscode.window.showErrorMessage(text)',
    'vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: text }, async () => undefined)',
    'vscode.window.showQuickPick([text])',
    'vscode.window.createQuickPick()',
    'vscode.window.showInputBox({ prompt: text })',
    'vscode.window.setStatusBarMessage(text)',
  ];

  async function problems(filePath: string, call: string): Promise<string[]> {
    const eslint = new ESLint({ cwd: ROOT });
    const code = `import * as vscode from 'vscode';\nexport function f(text: string): unknown {\n  return ${call};\n}\n`;
    const [result] = await eslint.lintText(code, { filePath: resolve(ROOT, filePath) });
    return (result?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-syntax').map((m) => m.message);
  }

  for (const call of raw)
    it(`refuses ${call.slice(0, call.indexOf('('))} outside notify.ts`, async () => {
      const found = await problems('src/vscode/fixture.ts', call);
      assert.equal(found.length, 1, `no lint problem for ${call}`);
      assert.match(found[0] ?? '', /src\/vscode\/notify\.ts/);
    });

  it('allows them in notify.ts', async () => {
    assert.deepEqual(await problems('src/vscode/notify.ts', raw[0] ?? ''), []);
  });
});
