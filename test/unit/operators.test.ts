// The operators beyond the paper (docs/algorithm.md section 12), each with real
// parts: the fixture task in the sandbox, the run database on disk, the offline
// sampler or the OpenAI-compatible test server.
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Settings } from '../../src/engine/common/config';
import type { EngineEvent, StepCommittedEvent } from '../../src/engine/common/events';
import type { ResponseSource } from '../../src/engine/common/types';
import { ProgramDatabase, type ProgramRecord } from '../../src/engine/database/programDatabase';
import { databaseConfigFromSettings, NOT_GENERATED } from '../../src/engine/database/records';
import { blameOf, lineageOf } from '../../src/engine/database/lineage';
import { codeHash } from '../../src/engine/codeHash';
import { EndpointClient, endpointOptionsFromSettings } from '../../src/engine/llm/endpointClient';
import { CROSSOVER_PARENT_METRIC } from '../../src/engine/operators/crossover';
import { startTestServer } from '../server/openaiTestServer';
import { openEvolveSettings } from '../../src/engine/task/foreignTasks';
import { MutateSampler } from '../../src/engine/llm/mutateSampler';
import { EvolutionRun } from '../../src/engine/loop';
import { OPERATORS_META_KEY } from '../../src/engine/operators/recorded';
import { Evaluator, evaluatorOptionsFromSettings } from '../../src/engine/sandbox/evaluator';
import { loadTask, type Task } from '../../src/engine/task/task';
import { runCli } from '../support/cli';
import { settingsBuilder } from '../support/settings';
import { tempDir } from '../support/tempDirs';

const ROOT = resolve(__dirname, '..', '..');
const FIXTURE = join(ROOT, 'test', 'fixtures', 'tasks', 'quadratic');
const settings = settingsBuilder({ batchSize: 2, samplesPerPrompt: 3, evaluationConcurrency: 3, 'database.preset': 'small', seed: 7 });

async function runOnce(task: Task, s: Settings, dbFile: string, steps: number, source: ResponseSource) {
  const events: EngineEvent[] = [];
  const evaluator = new Evaluator(task, evaluatorOptionsFromSettings(s));
  const run = new EvolutionRun({
    runId: 'ops',
    task,
    settings: s,
    dbFile,
    source,
    evaluator,
    stepsThisInvocation: steps,
    onEvent: (e) => events.push(e),
  });
  const result = await run.run();
  await evaluator.close();
  return { result, events, committed: events.filter((e): e is StepCommittedEvent => e.type === 'step_committed') };
}

describe('operators beyond the paper', function () {
  this.timeout(180_000);
  let task: Task;
  let dir: string;
  before(async () => {
    task = await loadTask(FIXTURE);
  });
  beforeEach(() => {
    dir = tempDir('thetaevolve-ops-');
  });

  describe('patience (stopAfterStepsWithoutImprovement)', () => {
    it('ends the run with no_improvement once that many steps brought no new best, and a resume keeps the recorded patience', async () => {
      const s = settings({ stopAfterStepsWithoutImprovement: 3 });
      const file = join(dir, 'patience.sqlite');
      const { result, committed } = await runOnce(task, s, file, 200, new MutateSampler({ seed: 7, language: 'py' }));
      assert.equal(result.reason, 'no_improvement');
      assert.ok(committed.length < 200);
      const db = await ProgramDatabase.openReadOnly(file);
      const lastBestStep = db.improvements().at(-1)?.step ?? 0;
      assert.equal(db.lastStep - lastBestStep, 3);
      assert.deepEqual(db.meta()[OPERATORS_META_KEY], { stopAfterStepsWithoutImprovement: 3 });
      await db.close();
      // Resumed without the setting: the database's recorded patience ends it at once.
      const again = await runOnce(task, settings({}), file, 5, new MutateSampler({ seed: 7, language: 'py' }));
      assert.equal(again.result.reason, 'no_improvement');
      assert.equal(again.committed.length, 0);
    });

    it('is off by default: the run goes on to its step limit and records no operators', async () => {
      const file = join(dir, 'default.sqlite');
      const { result, committed } = await runOnce(task, settings({}), file, 4, new MutateSampler({ seed: 7, language: 'py' }));
      assert.equal(result.reason, 'steps_done');
      assert.equal(committed.length, 4);
      const db = await ProgramDatabase.openReadOnly(file);
      assert.equal(db.meta()[OPERATORS_META_KEY], undefined);
      await db.close();
    });
  });

  describe('cascade (task.json evaluator.stages)', () => {
    it('stops a solution under a stage threshold at that stage, scored by it; only the others reach the full evaluator; the stage counts are recorded', async () => {
      const taskDir = join(dir, 'cascade-task');
      cpSync(FIXTURE, taskDir, { recursive: true });
      // Stage 1: the same objective; the full evaluator also counts its runs in a file.
      writeFileSync(
        join(taskDir, 'stage1.py'),
        readFileSync(join(taskDir, 'evaluate.py'), 'utf8').replace('{"x": x}, "reason": ""', '{"x": x, "stage1": True}, "reason": ""'),
      );
      writeFileSync(
        join(taskDir, 'full.py'),
        `import sys\nopen(sys.argv[2], "a").write("run\\n")\nsys.argv = sys.argv[:2]\n` +
          readFileSync(join(taskDir, 'evaluate.py'), 'utf8'),
      );
      const spec = JSON.parse(readFileSync(join(taskDir, 'task.json'), 'utf8'));
      spec.evaluator = {
        command: ['/usr/bin/python3', '{taskDir}/full.py', '{solution}', '{taskDir}/full-runs.txt'],
        timeLimitSec: 10,
        stages: [{ command: ['/usr/bin/python3', '{taskDir}/stage1.py', '{solution}'], threshold: 7 }],
      };
      writeFileSync(join(taskDir, 'task.json'), JSON.stringify(spec));
      const cascadeTask = await loadTask(taskDir);
      const file = join(dir, 'cascade.sqlite');
      const { result, committed } = await runOnce(cascadeTask, settings({}), file, 4, new MutateSampler({ seed: 7, language: 'py' }));
      assert.equal(result.reason, 'steps_done');
      const db = await ProgramDatabase.openReadOnly(file);
      // The starting program (score 6) stops at stage 1 and keeps that stage's score.
      const initial = db.get('0');
      assert.ok(initial);
      assert.equal(initial.score, 6);
      assert.equal(initial.metrics.cascade_stage, '1 of 2', 'a text, not among the numeric metrics');
      assert.equal(initial.metrics.stage1, true);
      for (const p of db.topPrograms(70))
        if (p.outcome === 'valid')
          assert.equal(p.metrics.cascade_stage, p.score >= 7 ? '2 of 2' : '1 of 2', `program ${p.id} score ${p.score}`);
      await db.close();
      const counts = { '1': 0, '2': 0 };
      for (const c of committed) for (const [stage, n] of Object.entries(c.cascade ?? {})) counts[stage as '1' | '2'] += n;
      assert.ok(counts['1'] > 0 && counts['2'] > 0, JSON.stringify(counts));
      const fullRuns = existsSync(join(taskDir, 'full-runs.txt'))
        ? readFileSync(join(taskDir, 'full-runs.txt'), 'utf8').split('\n').filter(Boolean).length
        : 0;
      assert.equal(fullRuns, counts['2'], 'the full evaluator ran only for the children past stage 1');
    });
  });

  describe('behaviour dimensions (task.json features)', () => {
    it("places each program in its island's grid by the named metric's bin, kept by a resume, and the snapshot names the axis", async () => {
      const taskDir = join(dir, 'features-task');
      cpSync(FIXTURE, taskDir, { recursive: true });
      const spec = JSON.parse(readFileSync(join(taskDir, 'task.json'), 'utf8'));
      spec.features = [{ metric: 'x', bins: 7 }];
      writeFileSync(join(taskDir, 'task.json'), JSON.stringify(spec));
      const featureTask = await loadTask(taskDir);
      assert.deepEqual(featureTask.features, [{ metric: 'x', bins: 7 }]);
      const file = join(dir, 'features.sqlite');
      await runOnce(featureTask, settings({}), file, 2, new MutateSampler({ seed: 7, language: 'py' }));
      // Resumed with the task's features gone: the database keeps its own axes.
      await runOnce(task, settings({}), file, 2, new MutateSampler({ seed: 7, language: 'py' }));
      const db = await ProgramDatabase.openReadOnly(file);
      const grid = db.stateSnapshot().mapElites;
      assert.deepEqual(grid.features, ['x']);
      const axis = grid.axes?.[0];
      assert.ok(axis && axis.range, JSON.stringify(grid.axes));
      let checked = 0;
      for (const island of grid.islands)
        for (const cell of island.cells) {
          // One axis of 7 bins: rows 0..6, a single column.
          assert.ok(cell.scoreBin <= 6 && cell.lengthBin === 0, JSON.stringify(cell));
          assert.equal(cell.cell, cell.scoreBin);
          assert.ok(typeof db.get(cell.id)?.metrics.x === 'number' || db.get(cell.id)?.outcome !== 'valid');
          checked++;
        }
      assert.ok(checked > 1);
      for (const island of grid.islands) assert.equal(new Set(island.cells.map((c) => c.cell)).size, island.cells.length);
      await db.close();
    });
  });

  describe("behaviour dimensions of an OpenEvolve folder's config.yaml", () => {
    it('reads database.feature_dimensions and feature_bins as OpenEvolve bins them; score, combined_score and complexity are the built-in axes, diversity is left out', async () => {
      const folder = join(dir, 'oe');
      mkdirSync(folder);
      const axesOf = async (database: string) => {
        writeFileSync(join(folder, 'config.yaml'), `database:\n${database}`);
        return (await openEvolveSettings(folder, 'def evaluate(program_path):\n    return {}\n', 'evaluator.py')).features;
      };
      // A map: its own bins per axis, 10 where it names none.
      assert.deepEqual(await axesOf('  feature_dimensions: ["complexity", "spread", "steps"]\n  feature_bins:\n    spread: 4\n'), [
        { metric: 'complexity', bins: 10 },
        { metric: 'spread', bins: 4 },
        { metric: 'steps', bins: 10 },
      ]);
      // A number: at least archive_size^(1/dimensions) bins (archive_size 100 by default): 5 for three axes, 100 for one.
      assert.deepEqual(await axesOf('  feature_dimensions: ["score", "performance_score", "adaptability_score"]\n  feature_bins: 4\n'), [
        { metric: 'score', bins: 5 },
        { metric: 'performance_score', bins: 5 },
        { metric: 'adaptability_score', bins: 5 },
      ]);
      assert.deepEqual(await axesOf('  feature_dimensions: ["spread"]\n  feature_bins: 10\n'), [{ metric: 'spread', bins: 100 }]);
      assert.deepEqual(await axesOf('  feature_dimensions: ["spread"]\n  feature_bins: 10\n  archive_size: 50\n'), [
        { metric: 'spread', bins: 50 },
      ]);
      // Nothing beyond score and code length (OpenEvolve's own examples): the paper's grid.
      assert.equal(await axesOf('  feature_dimensions: ["complexity", "diversity"]\n'), null);
      assert.equal(await axesOf('  feature_dimensions:\n    - "score"\n    - "complexity"\n'), null);
      assert.equal(await axesOf('  feature_dimensions: ["combined_score", "complexity", "diversity"]\n  feature_bins: 10\n'), null);
      assert.deepEqual(await axesOf('  feature_dimensions: ["combined_score", "spread"]\n'), [
        { metric: 'score', bins: 10 },
        { metric: 'spread', bins: 10 },
      ]);
    });

    it("an axis named score or complexity that the evaluator does not report is the program's score or code length, kept by a resume", async () => {
      const taskDir = join(dir, 'built-in-task');
      cpSync(FIXTURE, taskDir, { recursive: true });
      const spec = JSON.parse(readFileSync(join(taskDir, 'task.json'), 'utf8'));
      spec.features = [
        { metric: 'score', bins: 6 },
        { metric: 'complexity', bins: 3 },
      ];
      writeFileSync(join(taskDir, 'task.json'), JSON.stringify(spec));
      const featureTask = await loadTask(taskDir);
      const file = join(dir, 'built-in.sqlite');
      await runOnce(featureTask, settings({}), file, 3, new MutateSampler({ seed: 3, language: 'py' }));
      await runOnce(featureTask, settings({}), file, 2, new MutateSampler({ seed: 3, language: 'py' }));
      const db = await ProgramDatabase.openReadOnly(file);
      try {
        const grid = db.stateSnapshot().mapElites;
        assert.deepEqual(grid.features, ['score', 'complexity']);
        const [scoreAxis, lengthAxis] = grid.axes ?? [];
        const programs = grid.islands.flatMap((island) => island.cells.map((cell) => ({ cell, program: db.get(cell.id) })));
        assert.ok(programs.length > 2, JSON.stringify(grid.islands));
        // The axes' ranges are the programs' own scores and code lengths (the metrics name neither).
        for (const { program } of programs) assert.equal(program?.metrics.score, undefined);
        const scores = programs.map(({ program }) => program?.score as number);
        const lengths = programs.map(({ program }) => (program?.code ?? '').length);
        assert.ok(
          scoreAxis?.range && scoreAxis.range.max >= Math.max(...scores) && scoreAxis.range.min <= Math.min(...scores),
          JSON.stringify(scoreAxis),
        );
        assert.ok(
          lengthAxis?.range && lengthAxis.range.max >= Math.max(...lengths) && lengthAxis.range.min <= Math.min(...lengths),
          JSON.stringify(lengthAxis),
        );
        assert.ok(scoreAxis.range.max > scoreAxis.range.min, 'the score axis spreads (it was every program at 0)');
        // The best program sits in the top bin of the score axis.
        const best = db.best();
        const bestCell = programs.find(({ program }) => program?.id === best?.id)?.cell;
        assert.equal(bestCell?.scoreBin, 5, JSON.stringify(bestCell));
        const summary = await runCli(['db', file], dir);
        assert.equal(summary.code, 0, summary.stderr);
        assert.match(summary.stdout, /per island \(axes score: 6 bins, complexity: 3 bins\)/);
      } finally {
        await db.close();
      }
    });
  });

  describe('novelty judge (novelty.judge)', () => {
    it('asks about many children at once without a listener warning on the terminal', async () => {
      const server = await startTestServer({ latencyMs: 20 });
      const warnings: string[] = [];
      const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
      process.on('warning', onWarning);
      try {
        const s = settings({
          batchSize: 4,
          samplesPerPrompt: 4,
          evaluationConcurrency: 2,
          endpoint: server.baseURL,
          sampler: 'llm',
          'novelty.enabled': true,
          'novelty.threshold': 0.5,
          'novelty.judge': true,
        });
        const { committed } = await runOnce(
          task,
          s,
          join(dir, 'judge.sqlite'),
          1,
          new EndpointClient(endpointOptionsFromSettings(s, undefined)),
        );
        assert.ok(
          server.counters.judgeQuestions > 10,
          `more judge questions than the default listener limit (${server.counters.judgeQuestions})`,
        );
        assert.equal(committed.length, 1, JSON.stringify(committed[0]?.counts));
        // Node emits the warning on the tick after the listener that passes the limit, long before the run ends.
        assert.deepEqual(
          warnings.filter((w) => w.startsWith('MaxListenersExceededWarning')),
          [],
        );
      } finally {
        process.off('warning', onWarning);
        await server.close();
      }
    });
  });

  describe('crossover (crossover.share)', () => {
    it('shows a second parent from another island in that share of prompts; the child records it; lineage and blame name both parents', async () => {
      const server = await startTestServer({ latencyMs: 1 });
      try {
        const s = settings({ 'crossover.share': 1, endpoint: server.baseURL, sampler: 'llm', batchSize: 3 });
        const file = join(dir, 'crossover.sqlite');
        const client = new EndpointClient(endpointOptionsFromSettings(s, undefined));
        const { result } = await runOnce(task, s, file, 4, client);
        assert.equal(result.reason, 'steps_done');
        const crossoverPrompts = server.requests.filter((r) => r.userText.includes('# Second parent, to combine with the current program'));
        assert.ok(crossoverPrompts.length > 0, 'some prompt shows a second parent');
        // The parent stays the only block with markers.
        for (const r of crossoverPrompts) assert.equal(r.userText.split('# EVOLVE-BLOCK-START').length - 1, 1);
        const db = await ProgramDatabase.openReadOnly(file);
        const children = db.topPrograms(70).filter((p) => typeof p.metrics[CROSSOVER_PARENT_METRIC] === 'string');
        assert.ok(children.length > 0, 'some stored child names a second parent');
        const child = children[0] as ProgramRecord;
        const second = child.metrics[CROSSOVER_PARENT_METRIC] as string;
        assert.notEqual(second, child.parentId);
        const lineage = lineageOf(db, child);
        assert.equal(lineage.programs[0]?.secondParentId, second);
        assert.equal(lineage.programs[0]?.parentId, child.parentId);
        const blame = blameOf(db, child);
        const allowed = new Set([child.id, second, ...lineage.programs.map((p) => p.id)]);
        for (const line of blame.lines) assert.ok(allowed.has(line.id), JSON.stringify(line));
        // The second parent's prompt metrics line never shows the crossover metric.
        for (const r of server.requests) assert.ok(!r.userText.includes(CROSSOVER_PARENT_METRIC));
        await db.close();
      } finally {
        await server.close();
      }
    });

    it('blame gives a line the crossover child took from its second parent to that parent', async () => {
      // A database written by hand through the real API: parent A, second parent B, child C holding a line only B has.
      const file = join(dir, 'blame.sqlite');
      const db = await ProgramDatabase.open(file, { config: databaseConfigFromSettings(settings({})) });
      const code = (body: string) => `import json\n# EVOLVE-BLOCK-START\n${body}\n# EVOLVE-BLOCK-END\n`;
      const program = (c: string, parentId: string | null, step: number, metrics = {}) => ({
        parentId,
        step,
        code: c,
        codeHash: codeHash(c, 'py'),
        score: 1 + step,
        objective: 1 + step,
        outcome: 'valid' as const,
        metrics,
        ...NOT_GENERATED,
      });
      const a = await db.addInitial(program(code('a = 1'), null, 0));
      await db.commitStep({ step: 1, children: [program(code('a = 1\nb = 2'), a.id, 1)], stats: {}, engineState: null });
      const b = db.topPrograms(70).find((p) => p.code.includes('b = 2')) as ProgramRecord;
      await db.commitStep({
        step: 2,
        children: [program(code('a = 1\nb = 2\nc = 3'), a.id, 2, { [CROSSOVER_PARENT_METRIC]: b.id })],
        stats: {},
        engineState: null,
      });
      const c = db.topPrograms(70).find((p) => p.code.includes('c = 3')) as ProgramRecord;
      const lines = blameOf(db, c).lines;
      assert.equal(lines.find((l) => l.text === 'b = 2')?.id, b.id);
      assert.equal(lines.find((l) => l.text === 'c = 3')?.id, c.id);
      assert.equal(lines.find((l) => l.text === 'a = 1')?.id, a.id);
      await db.close();
    });

    it('keeps an evicted second parent while its crossover child is kept, so blame still gives it its lines, also after a reopen; it goes with the child', async () => {
      const file = join(dir, 'evicted-second.sqlite');
      const config = { ...databaseConfigFromSettings(settings({})), populationSize: 4, archiveSize: 1, numIslands: 1 };
      // A run that recorded crossover (as EvolutionRun does): reopening reads the second parents back.
      const meta = { [OPERATORS_META_KEY]: { 'crossover.share': 0.5 } };
      let db = await ProgramDatabase.open(file, { config, meta });
      const code = (body: string) => `import json\n# EVOLVE-BLOCK-START\n${body}\n# EVOLVE-BLOCK-END\n`;
      const program = (c: string, parentId: string | null, step: number, score: number, metrics = {}) => ({
        parentId,
        step,
        code: c,
        codeHash: codeHash(c, 'py'),
        score,
        objective: score,
        outcome: 'valid' as const,
        metrics,
        ...NOT_GENERATED,
      });
      const commit = async (step: number, children: ReturnType<typeof program>[]) =>
        (await db.commitStep({ step, children, stats: {}, engineState: null })).inserted;
      const a = await db.addInitial(program(code('a = 1'), null, 0, 5));
      const [b] = await commit(1, [program(code('a = 1\nb = 2'), a.id, 1, 1)]);
      assert.ok(b);
      const [c] = await commit(2, [program(code('a = 1\nb = 2\nc = 3'), a.id, 2, 2, { [CROSSOVER_PARENT_METRIC]: b.id })]);
      assert.ok(c);
      // Two better programs push out b, the worst: c names it, so its row stays.
      await commit(3, [program(code('a = 1\nx = 4'), a.id, 3, 3), program(code('a = 1\ny = 5'), a.id, 3, 3.1)]);
      assert.equal(db.isLive(b.id), false);
      assert.ok(db.isLive(c.id));
      const blameOfC = (d: ProgramDatabase) => {
        const lines = blameOf(d, d.get(c.id) as ProgramRecord).lines;
        return Object.fromEntries(lines.filter((l) => /^[abc] = /.test(l.text)).map((l) => [l.text, l.id]));
      };
      assert.deepEqual(blameOfC(db), { 'a = 1': a.id, 'b = 2': b.id, 'c = 3': c.id });
      assert.equal(db.get(b.id)?.code, b.code);
      await db.close();

      db = await ProgramDatabase.open(file, { config, meta });
      assert.deepEqual(blameOfC(db), { 'a = 1': a.id, 'b = 2': b.id, 'c = 3': c.id }, 'after a reopen');
      // Better programs push out c, not kept by anything: b goes with it.
      await commit(4, [program(code('a = 1\nz = 6'), a.id, 4, 3.2), program(code('a = 1\nw = 7'), a.id, 4, 3.3)]);
      assert.equal(db.get(c.id), null);
      assert.equal(db.get(b.id), null, "the second parent's row went with its last kept descendant");
      await db.close();
    });
  });
});
