import * as assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ProgramDatabase } from '../../src/engine/database/programDatabase';
import { tempDir } from '../support/tempDirs';
import { testConfig } from './fixtures/database/programs';

const ROOT = path.resolve(__dirname, '../..');
const LOOP = path.join(__dirname, 'fixtures/database/commitLoop.ts');

function waitForExit(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
}

// Parents drawn after each commit, or (pipelined) before the step before commits (docs/algorithm.md section 1).
for (const mode of ['synchronous', 'pipelined'])
  describe(`program database: SIGKILL at random moments (${mode} draws)`, function () {
    this.timeout(90_000);
    let dir: string;

    beforeEach(() => {
      dir = tempDir('thetaevolve-crash-');
    });

    it('keeps every step a killed writer reported committed, and the file always opens', async () => {
      const file = path.join(dir, 'run.sqlite');
      const seed = Date.now() % 100000;
      let random = seed;
      const nextRandom = (): number => {
        random = (random * 1103515245 + 12345) % 2147483648;
        return random / 2147483648;
      };
      const reported: number[] = [];
      let killsDuringWork = 0;
      for (let round = 0; round < 6; round++) {
        const child = spawn(process.execPath, ['--import', 'tsx', LOOP, file, '1000000', mode], {
          cwd: ROOT,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        const exited = waitForExit(child);
        let stderr = '';
        let buffered = '';
        let roundReports = 0;
        let onFirstReport: () => void = () => {};
        const firstReport = new Promise<void>((resolve) => (onFirstReport = resolve));
        child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        child.stdout?.on('data', (chunk: Buffer) => {
          buffered += chunk.toString();
          const lines = buffered.split('\n');
          buffered = lines.pop() ?? '';
          for (const line of lines) {
            const match = /^committed (\d+)$/.exec(line);
            if (!match) continue;
            reported.push(Number(match[1]));
            roundReports++;
            onFirstReport();
          }
        });
        // Even rounds: kill at a random time after start (sometimes while opening);
        // odd rounds: a random time after the first commit of this run.
        if (round % 2 === 1) await Promise.race([firstReport, exited]);
        await new Promise((resolve) => setTimeout(resolve, round % 2 === 1 ? nextRandom() * 400 : 300 + nextRandom() * 2500));
        child.kill('SIGKILL');
        const { signal, code } = await exited;
        assert.equal(signal, 'SIGKILL', `round ${round} (seed ${seed}): the writer ended by itself (code ${code}): ${stderr}`);
        if (roundReports > 0) killsDuringWork++;

        if (!fs.existsSync(file)) {
          assert.deepEqual(reported, [], `round ${round} (seed ${seed}): steps were reported but there is no file`);
          continue;
        }
        const db = await ProgramDatabase.openReadOnly(file);
        try {
          const maxReported = reported.length > 0 ? Math.max(...reported) : -1;
          assert.ok(db.lastStep >= maxReported, `round ${round} (seed ${seed}): last step ${db.lastStep} < reported ${maxReported}`);
          const steps = new Set(db.steps().map((s) => s.step));
          for (const step of reported)
            if (step > 0) assert.ok(steps.has(step), `round ${round} (seed ${seed}): step ${step} was reported committed but is missing`);
          if (db.lastStep >= 0) assert.ok(db.best());
          assert.equal(db.summary().steps, Math.max(0, db.lastStep));
          assert.deepEqual(db.engineState(), db.lastStep > 0 ? { nextStep: db.lastStep + 1 } : null);
        } finally {
          await db.close();
        }
      }
      assert.ok(killsDuringWork >= 3, `only ${killsDuringWork} kills landed while steps were being committed`);
      // A writable open clears what killed writers left behind, and resumes.
      const resumed = await ProgramDatabase.open(file, { config: testConfig() });
      try {
        assert.deepEqual(
          fs.readdirSync(dir).filter((name) => name.endsWith('.tmp')),
          [],
        );
        assert.ok(resumed.lastStep >= Math.max(...reported));
        assert.ok(resumed.size > 0);
      } finally {
        await resumed.close();
      }
    });
  });
