// The command line reaches every setting (--config FILE, --set KEY=VALUE,
// flags, in that order of precedence), refuses a bad key or value with one
// line naming it, stops at --until-step counting resumed steps, and writes the
// best program with `db --best`. Driven through `main` as the binary is.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from '../../src/cli/args';
import { RUN_SPEC } from '../../src/cli/commands';
import { settingsFromArgs, parseJsonc, withFlagNames } from '../../src/cli/settingsSources';
import { ProgramDatabase } from '../../src/engine/database/programDatabase';
import { runCli } from '../support/cli';
import { tempDir } from '../support/tempDirs';

const TASK_DIR = resolve(__dirname, '../fixtures/tasks/quadratic');

describe('CLI settings: --config, --set, flags', () => {
  let dir: string;
  beforeEach(() => (dir = tempDir('thetaevolve-cli-settings-')));

  const settingsOf = (argv: string[]) => settingsFromArgs(parseArgs(RUN_SPEC, [TASK_DIR, ...argv]), dir);

  it('reaches settings that have no flag, with or without the thetaevolve. prefix', () => {
    const s = settingsOf([
      '--set',
      'temperature=0.7',
      '--set',
      'thetaevolve.topP=0.9',
      '--set',
      'database.preset=small',
      '--set',
      'lazyPenalty=false',
      '--set',
      'trainer.mode=async',
    ]);
    assert.equal(s.temperature, 0.7);
    assert.equal(s.topP, 0.9);
    assert.equal(s['database.preset'], 'small');
    assert.equal(s.lazyPenalty, false);
    assert.equal(s['trainer.mode'], 'async');
  });

  it("reads a settings.json-like --config (comments, trailing commas, other extensions' keys ignored); flags win over --set, which wins over --config", () => {
    writeFileSync(
      join(dir, 'settings.json'),
      '{\n  // as in VS Code\n  "thetaevolve.batchSize": 4, /* B */\n  "thetaevolve.samplesPerPrompt": 3,\n  "thetaevolve.maxTokens": 2048,\n  "editor.fontSize": 14,\n  "thetaevolve.endpoint": "http://gpu:8000/v1",\n}\n',
    );
    const s = settingsOf(['--config', 'settings.json', '--set', 'samplesPerPrompt=5', '--set', 'maxTokens=4096', '--samples', '7']);
    assert.equal(s.batchSize, 4, 'from --config');
    assert.equal(s.endpoint, 'http://gpu:8000/v1', 'a URL with // survives comment stripping');
    assert.equal(s.maxTokens, 4096, '--set over --config');
    assert.equal(s.samplesPerPrompt, 7, 'the flag over --set');
    assert.deepEqual(parseJsonc('{"a": "x // y", /* z */ "b": [1,], "c": "print([1,2,])",}'), {
      a: 'x // y',
      b: [1],
      c: 'print([1,2,])',
    });
    assert.throws(() => parseJsonc('{"a": 1\n  "b": 2}'), /CommaExpected at line 2, column 3/);
  });

  it('refuses a bad key or value with one line naming the key and exit code 2', async () => {
    writeFileSync(join(dir, 'bad.json'), '{ "thetaevolve.batchSize": "many" }');
    writeFileSync(join(dir, 'typo.json'), '{ "thetaevolve.batchsize": 4 }');
    const cases: [string[], RegExp][] = [
      [['--set', 'batchSize=0'], /thetaevolve\.batchSize/],
      [['--set', 'batchSize=lots'], /thetaevolve\.batchSize takes a number, got 'lots'/],
      [['--set', 'temprature=0.5'], /unknown setting 'temprature'/],
      [['--set', 'database.preset=huge'], /thetaevolve\.database\.preset/],
      [['--set', 'lazyPenalty=yes'], /thetaevolve\.lazyPenalty takes true or false/],
      [['--set', 'noequals'], /--set takes KEY=VALUE/],
      [['--config', 'bad.json'], /thetaevolve\.batchSize/],
      [['--config', 'typo.json'], /unknown setting 'thetaevolve\.batchsize' \(did you mean thetaevolve\.batchSize\?\)/],
      [['--config', 'missing.json'], /--config: cannot read/],
    ];
    for (const [argv, message] of cases) {
      const r = await runCli(['run', TASK_DIR, '--sampler', 'mutate', ...argv], dir);
      assert.equal(r.code, 2, `${argv.join(' ')}: ${r.stderr}`);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.match(r.stderr, message, argv.join(' '));
    }
  });

  it('refuses inference jobs on SLURM without a command (or one without {port}) in one line naming the setting, before any job', async () => {
    for (const [command, message] of [
      [[], /thetaevolve\.slurm\.inference\.command \(--set slurm\.inference\.command=\.\.\.\) is empty/],
      [
        ['--set', 'slurm.inference.command=vllm serve m'],
        /thetaevolve\.slurm\.inference\.command \(--set slurm\.inference\.command=\.\.\.\) has no \{port\}/,
      ],
    ] as const) {
      const r = await runCli(['run', TASK_DIR, '--set', 'slurm.inference.count=1', ...command, '--db', join(dir, 'inference.sqlite')], dir);
      assert.equal(r.code, 1, r.stderr);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.match(r.stderr, message);
    }
  });
});

describe('CLI: settings named with their flags', () => {
  it('adds the flag (or --set) to each setting the engine names, once', () => {
    assert.equal(withFlagNames('set thetaevolve.model to one of them'), 'set thetaevolve.model (--model) to one of them');
    assert.equal(withFlagNames('raise thetaevolve.maxTokens.'), 'raise thetaevolve.maxTokens (--set maxTokens=...).');
    assert.equal(withFlagNames('thetaevolve.trainer.url is empty'), 'thetaevolve.trainer.url (--trainer URL) is empty');
    assert.equal(withFlagNames('thetaevolve.model (--model) already'), 'thetaevolve.model (--model) already');
    assert.equal(withFlagNames('thetaevolve.nosuch stays'), 'thetaevolve.nosuch stays');
  });
});

describe('CLI run --until-step and db --best', function () {
  this.timeout(120_000);
  let dir: string;
  beforeEach(() => (dir = tempDir('thetaevolve-cli-until-')));

  it('stops once step N is committed, counting the steps a resumed database already has', async () => {
    const common = [
      'run',
      TASK_DIR,
      '--sampler',
      'mutate',
      '--batch',
      '2',
      '--samples',
      '2',
      '--eval-concurrency',
      '2',
      '--db',
      'run.sqlite',
      '--json',
      '--set',
      'database.preset=small',
    ];
    const first = await runCli([...common, '--until-step', '2'], dir);
    assert.equal(first.code, 0, first.stderr);
    assert.deepEqual(
      first.stdout
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { step: number }).step),
      [1, 2],
    );
    // A requeued job runs the same command again with a higher target: it finishes the work, not N more steps.
    const again = await runCli([...common, '--until-step', '3'], dir);
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(
      again.stdout
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { step: number }).step),
      [3],
    );
    const done = await runCli([...common, '--until-step', '3'], dir);
    assert.equal(done.code, 0, done.stderr);
    assert.equal(done.stdout, '', 'nothing left to do');
    const db = await ProgramDatabase.openReadOnly(join(dir, 'run.sqlite'));
    try {
      assert.equal(db.lastStep, 3);
    } finally {
      await db.close();
    }
  });

  it('db --best writes the best program to stdout or --output FILE', async () => {
    const run = await runCli(
      [
        'run',
        TASK_DIR,
        '--sampler',
        'mutate',
        '--steps',
        '2',
        '--batch',
        '2',
        '--samples',
        '2',
        '--db',
        'run.sqlite',
        '--set',
        'database.preset=small',
      ],
      dir,
    );
    assert.equal(run.code, 0, run.stderr);
    const db = await ProgramDatabase.openReadOnly(join(dir, 'run.sqlite'));
    const best = db.best();
    await db.close();
    assert.ok(best);
    const printed = await runCli(['db', 'run.sqlite', '--best'], dir);
    assert.equal(printed.code, 0, printed.stderr);
    assert.equal(printed.stdout.trimEnd(), best.code.trimEnd());
    const written = await runCli(['db', 'run.sqlite', '--best', '--output', 'best.py'], dir);
    assert.equal(written.code, 0, written.stderr);
    assert.equal(readFileSync(join(dir, 'best.py'), 'utf8'), best.code);
    assert.match(written.stderr, new RegExp(`wrote the best program ${best.id} `));
    const json = await runCli(['db', 'run.sqlite', '--best', '--json'], dir);
    assert.equal((JSON.parse(json.stdout) as { id: string }).id, best.id);
    const misuse = await runCli(['db', 'run.sqlite', '--output', 'x.py'], dir);
    assert.equal(misuse.code, 2);
    assert.match(misuse.stderr, /--output goes with --best/);
  });
});
