// Comparing runs: two short runs, one with a stand-in atropos trainer whose
// step (the policy version) moves on with every step of the run, one
// without; read back from their databases into one comparison, and written
// by `thetaevolve report` as a self-contained HTML file. Bad input (not a run
// database, a damaged one) exits 1 naming the file.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { programLabel } from '../../src/engine/common/format';
import { EMBEDDED_COMPARISON_ID, RunComparisonSchema } from '../../src/engine/common/runComparison';
import { compareRunFiles } from '../../src/engine/database/runComparison';
import { startAtroposTestServer } from '../server/atroposTestServer';
import { startTestServer } from '../server/openaiTestServer';
import { runCli } from '../support/cli';
import { tempDir } from '../support/tempDirs';

const ROOT = resolve(__dirname, '..', '..');
const FIXTURE = join(ROOT, 'test', 'fixtures', 'tasks', 'quadratic');
/** A starting program whose comment would end the report's script element and run its own, were it ever taken as markup. */
const HOSTILE_COMMENT = '# </script><script>document.title="pwned"</script><img src=x onerror=alert(1)>';

describe('comparing runs (thetaevolve report)', function () {
  this.timeout(120_000);
  const closers: (() => Promise<void>)[] = [];
  let dir: string;
  let rlDb: string;
  let plainDb: string;

  before(async () => {
    dir = tempDir('thetaevolve-compare-');
    rlDb = join(dir, 'with-rl.sqlite');
    plainDb = join(dir, 'without-rl.sqlite');
    const endpoint = await startTestServer();
    closers.push(() => endpoint.close());
    // One trainer step per batch of 4 sequences: each step of B = 2 x n = 2 is one trainer step.
    const trainer = await startAtroposTestServer({ trainer: { batchSize: 4 } });
    closers.push(() => trainer.close());
    const common = ['--endpoint', endpoint.baseURL, '--batch', '2', '--samples', '2', '--steps', '4'];
    const rl = await runCli(['run', FIXTURE, ...common, '--db', rlDb, '--trainer', trainer.url, '--set', 'trainer.mode=sync'], ROOT);
    assert.equal(rl.code, 0, rl.stderr);
    const program = join(dir, 'hostile.py');
    writeFileSync(program, `${HOSTILE_COMMENT}\n${readFileSync(join(FIXTURE, 'initial.py'), 'utf8')}`);
    const plain = await runCli(['run', FIXTURE, ...common, '--db', plainDb, '--seed', '7', '--program', program], ROOT);
    assert.equal(plain.code, 0, plain.stderr);
  });
  after(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });

  it('records how each step was sampled and by which policy, and labels each run by what differs', async () => {
    const comparison = await compareRunFiles([rlDb, plainDb]);
    assert.deepEqual(comparison.differing, ['rl', 'seed']);
    const [rl, plain] = comparison.runs;
    assert.ok(rl && plain);
    assert.equal(rl.label, 'RL on · seed 0');
    assert.equal(plain.label, 'RL off · seed 7');
    assert.equal(rl.settings.batch, '2 x 2');
    assert.deepEqual(
      rl.steps.map((s) => s.step),
      [1, 2, 3, 4],
    );
    // Synchronous mode: each step waits for the trainer to take it, so each is sampled by the next policy.
    const versions = rl.steps.map((s) => s.policyVersion);
    assert.ok(
      versions.every((v) => v !== null),
      `every RL step names its policy: ${versions.join(',')}`,
    );
    assert.equal(new Set(versions).size, 4, `a new policy each step: ${versions.join(',')}`);
    assert.deepEqual(
      rl.policyChanges.map((c) => c.step),
      [1, 2, 3, 4],
    );
    assert.equal(rl.policyVersions.length, 4);
    for (const row of rl.policyVersions) {
      assert.equal(row.steps, 1);
      assert.equal(row.samples, 4);
      assert.ok(row.validShare !== null && row.validShare >= 0 && row.validShare <= 1);
      assert.ok(row.meanReward !== null);
    }
    assert.ok(plain.steps.every((s) => s.policyVersion === null));
    assert.deepEqual(plain.policyVersions, []);
    // Best so far never goes down, and the best program's lineage starts with it.
    for (const run of comparison.runs) {
      const best = run.steps.map((s) => s.bestSoFar ?? -Infinity);
      assert.deepEqual(
        best,
        [...best].sort((a, b) => a - b),
      );
      assert.equal(run.lineage.programs[0]?.id, run.best?.id);
      // Named as the Runs view names them (issue 43 item 12): "step 1 #1 · model" down to "initial", never by id.
      const labels = run.lineage.programs.map((p) => programLabel(p));
      assert.equal(labels.at(-1), 'initial', labels.join(' | '));
      for (const [i, p] of run.lineage.programs.entries())
        if (p.step > 0) assert.match(labels[i] ?? '', new RegExp(`^step ${p.step}( #\\d+)? · `), labels.join(' | '));
      assert.deepEqual(run.best?.stepRank, run.lineage.programs[0]?.stepRank);
      if (run.best && run.best.step > 0) assert.ok(run.best.stepRank, 'the best has its place in its step');
    }
  });

  it('writes one self-contained HTML file with the comparison embedded as data, and --json prints it', async () => {
    const html = join(dir, 'report.html');
    const result = await runCli(['report', rlDb, plainDb, '--output', html], dir);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /Compared 2 run\(s\) differing in rl, seed/);
    assert.match(result.stdout, /RL on · seed 0: 4 steps, best .*, 4 policy version\(s\)/);
    const text = readFileSync(html, 'utf8');
    // Nothing from outside the file: no script or style by address, and a CSP that allows none.
    assert.doesNotMatch(text, /<(script|link|img)[^>]+(src|href)=/i);
    assert.match(text, /Content-Security-Policy" content="default-src 'none'/);
    // The candidate's text is data only: the comment cannot close the data element nor open an element.
    assert.ok(!text.includes(HOSTILE_COMMENT) && !text.includes('<script>document.title'));
    const embedded = new RegExp(`<script type="application/json" id="${EMBEDDED_COMPARISON_ID}">([^<]*)</script>`).exec(text);
    assert.ok(embedded?.[1], 'the comparison is embedded');
    const comparison = RunComparisonSchema.parse(JSON.parse(embedded[1]));
    assert.ok(comparison.runs[1]?.best?.code.includes(HOSTILE_COMMENT), 'the program text is read back whole from the data');
    const json = await runCli(['report', rlDb, plainDb, '--json'], dir);
    assert.equal(json.code, 0, json.stderr);
    const printed = RunComparisonSchema.parse(JSON.parse(json.stdout));
    assert.deepEqual(
      printed.runs.map((r) => r.label),
      ['RL on · seed 0', 'RL off · seed 7'],
    );
  });

  it('bad input exits 1 naming the file: not a run database, a damaged one, a missing one', async () => {
    const notDb = join(dir, 'notes.txt');
    writeFileSync(notDb, 'just some notes\n');
    const damaged = join(dir, 'damaged.sqlite');
    const bytes = readFileSync(plainDb);
    // The header stays (it still looks like SQLite); the pages after the first are overwritten.
    bytes.fill(0xa5, 4096, bytes.length);
    writeFileSync(damaged, bytes);
    for (const [file, why] of [
      [notDb, /not a usable ThetaEvolve run database \(not an SQLite file\)/],
      [damaged, /not a usable ThetaEvolve run database/],
      [join(dir, 'missing.sqlite'), /no such run database/],
    ] as const) {
      const out = join(dir, 'never.html');
      const result = await runCli(['report', rlDb, file, '--output', out], dir);
      assert.equal(result.code, 1, `${file}: ${result.stdout}`);
      assert.ok(result.stderr.includes(file), result.stderr);
      assert.match(result.stderr, why);
      assert.equal(result.stderr.trim().split('\n').length, 1, 'one line');
      assert.throws(() => readFileSync(out), 'no report written');
    }
    const usage = await runCli(['report', rlDb], dir);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--output FILE.html, --png FILE.png or --json/);
  });

  it('--png without a Chromium on PATH exits 1 saying what to install, before reading any run', async () => {
    const result = await runCli(['report', rlDb, plainDb, '--png', join(dir, 'p.png')], dir, { PATH: tempDir('thetaevolve-empty-path-') });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /no Chromium on PATH .*install one \(Debian\/Ubuntu: apt install chromium/);
  });
});
