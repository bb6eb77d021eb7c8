// The layering lint (scripts/eslint-layers.mjs) really refuses an import that
// crosses a layer the wrong way: ESLint runs on texts placed, by file name,
// in each layer.
import { strict as assert } from 'node:assert';
import { resolve } from 'node:path';
import { ESLint } from 'eslint';

const ROOT = resolve(__dirname, '../..');

async function layerProblems(filePath: string, code: string): Promise<string[]> {
  const eslint = new ESLint({ cwd: ROOT });
  const [result] = await eslint.lintText(code, { filePath: resolve(ROOT, filePath) });
  return (result?.messages ?? []).filter((m) => m.ruleId === 'layers/imports').map((m) => m.message);
}

describe('lint: layers', function () {
  this.timeout(60_000);

  const refused: [string, string, RegExp][] = [
    [
      'src/engine/fixture.ts',
      "import { parseHostToWorker } from '../protocol/workerMessages';\nvoid parseHostToWorker;\n",
      /src\/engine may not import \.\.\/protocol\/workerMessages \(src\/protocol\)/,
    ],
    [
      'src/engine/llm/fixture.ts',
      "import { DashboardModel } from '../../dashboard/dashboardModel';\nvoid DashboardModel;\n",
      /src\/engine may not import/,
    ],
    ['src/engine/fixture.ts', "import * as vscode from 'vscode';\nvoid vscode;\n", /may not import 'vscode'/],
    [
      'src/protocol/fixture.ts',
      "import { DashboardModel } from '../dashboard/dashboardModel';\nvoid DashboardModel;\n",
      /src\/protocol may not import/,
    ],
    ['src/cli/fixture.ts', "import { EngineHost } from '../worker/engineHost';\nvoid EngineHost;\n", /src\/cli may not import/],
    ['src/worker/fixture.ts', "import { log } from '../vscode/log';\nvoid log;\n", /src\/worker may not import/],
    ['src/dashboard/fixture.ts', "import * as vscode from 'vscode';\nvoid vscode;\n", /may not import 'vscode'/],
    ['webview/src/fixture.ts', "import { loadTask } from '../../src/engine/task/task';\nvoid loadTask;\n", /webview\/src may not import/],
    ['webview/src/fixture.ts', "import { readFileSync } from 'node:fs';\nvoid readFileSync;\n", /may not import 'node:fs'/],
    [
      'src/engine/common/fixture.ts',
      "import { readFile } from 'node:fs/promises';\nvoid readFile;\n",
      /src\/engine\/common may not import 'node:fs\/promises': it is browser-safe/,
    ],
    ['src/engine/common/fixture.ts', "import { createHash } from 'crypto';\nvoid createHash;\n", /may not import 'crypto'/],
    [
      'src/engine/common/fixture.ts',
      "import { codeHash } from '../codeHash';\nvoid codeHash;\n",
      /src\/engine\/common may not import \.\.\/codeHash \(src\/engine\)/,
    ],
    [
      'src/protocol/fixture.ts',
      "import { loadTask } from '../engine/task/task';\nvoid loadTask;\n",
      /src\/protocol may not import \.\.\/engine\/task\/task \(src\/engine\)/,
    ],
  ];
  for (const [file, code, message] of refused) {
    it(`refuses in ${file}: ${code.split('\n')[0]}`, async () => {
      const problems = await layerProblems(file, code);
      assert.equal(problems.length, 1, `expected one layer problem, got ${JSON.stringify(problems)}`);
      assert.match(problems[0] as string, message);
    });
  }

  it('allows what each layer may import', async () => {
    assert.deepEqual(
      await layerProblems(
        'src/vscode/fixture.ts',
        "import * as vscode from 'vscode';\nimport { EngineHost } from '../worker/engineHost';\nimport { DashboardModel } from '../dashboard/dashboardModel';\nvoid vscode; void EngineHost; void DashboardModel;\n",
      ),
      [],
    );
    assert.deepEqual(
      await layerProblems('src/protocol/fixture.ts', "import { OUTCOMES } from '../engine/common/types';\nvoid OUTCOMES;\n"),
      [],
    );
    assert.deepEqual(
      await layerProblems(
        'webview/src/fixture.ts',
        "import { OUTCOME_GROUPS } from '../../src/protocol/dashboardMessages';\nvoid OUTCOME_GROUPS;\n",
      ),
      [],
    );
    assert.deepEqual(
      await layerProblems('webview/src/fixture.ts', "import { OUTCOMES } from '../../src/engine/common/types';\nvoid OUTCOMES;\n"),
      [],
    );
    assert.deepEqual(
      await layerProblems(
        'src/engine/common/fixture.ts',
        "import { z } from 'zod';\nimport { OUTCOMES } from './types';\nvoid z; void OUTCOMES;\n",
      ),
      [],
    );
    assert.deepEqual(
      await layerProblems(
        'src/engine/fixture.ts',
        "import { createHash } from 'node:crypto';\nimport { OUTCOMES } from './common/types';\nvoid createHash; void OUTCOMES;\n",
      ),
      [],
    );
  });
});
