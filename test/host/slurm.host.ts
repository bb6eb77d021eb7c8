// Runs inside the extension host: Start Run with
// thetaevolve.evaluation.backend = slurm on a real single-node SLURM cluster
// (munged + slurmctld + slurmd started here as child processes of the
// extension host, test/support/slurmCluster.ts) against the OpenAI-compatible
// test server. The children are evaluated as SLURM jobs (job ids in the
// evaluations terminal's lines), the status bar shows the queue, the results
// are those a local evaluation gives, and Stop Run leaves no job in the queue.
// With thetaevolve.slurm.inference.* the run's inference servers are SLURM jobs
// too (each running the test server): the status bar counts them and lists them.
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as vscode from 'vscode';
import { queueText } from '../../src/dashboard/dashboardFeed';
import type {
  EndpointServersEvent,
  EngineEvent,
  EvaluationFinishedEvent,
  EvaluationQueueEvent,
  EvaluationStartedEvent,
  StepCommittedEvent,
} from '../../src/engine/common/events';
import { jobNameOfRun } from '../../src/engine/evaluation/slurmCli';
import { inferenceJobName } from '../../src/engine/llm/slurmInferenceJobs';
import { outcomeOfEvaluation } from '../../src/engine/common/types';
import type { ThetaEvolveApi } from '../../src/extension';
import type { ProgramRecordMessage, QueryResult } from '../../src/protocol/workerMessages';
import { evaluationStartedLine } from '../../src/vscode/evaluationTask';
import { readSettings } from '../../src/vscode/settings';
import { clusterStatusText, statusTooltip } from '../../src/vscode/statusBar';
import { startTestServer, type TestServer } from '../server/openaiTestServer';
import { type SlurmCluster, slurmUnavailableReason, startSlurmCluster } from '../support/slurmCluster';
import { testServerJobCommand } from '../support/testServerJob';
import { answeredDialogs, api, closed, nextEvent, REPO_ROOT, skipBecause, workspaceDir } from './support';

const TASK = 'slurm-quadratic';
/** Outcomes of children that were run (the others never reach an evaluator). */
const EVALUATED = new Set(['valid', 'invalid_solution', 'no_solution', 'timeout', 'evaluation_failed']);

describe('SLURM evaluation backend (Start Run on a real single-node cluster)', function () {
  this.timeout(120_000);
  let theta: ThetaEvolveApi;
  let cluster: SlurmCluster | undefined;
  let model: TestServer | undefined;
  let staging = '';
  let program: vscode.Uri;
  let taskDir = '';
  const slurmConfBefore = process.env.SLURM_CONF;
  const config = (): vscode.WorkspaceConfiguration => vscode.workspace.getConfiguration('thetaevolve');
  /** squeue lists no job of this name. */
  const assertNoJobNamed = async (name: string): Promise<void> => {
    const queued = await cluster?.client('squeue', ['-h', '-r', '-n', name, '-o', '%i']);
    assert.equal(queued?.code, 0, queued?.stderr);
    assert.equal(queued?.stdout.trim(), '', `no job of ${name} is left in the queue`);
  };
  // The SLURM and endpoint settings are machine-scoped (a workspace must not choose where jobs or requests go): User settings.
  const userSettings = {
    endpoint: '',
    'evaluation.backend': 'slurm',
    'slurm.partition': '',
    'slurm.stagingDirectory': '',
    'slurm.pollSeconds': 0.5,
    // The login environment a job starts from may not have a Node.js >= 20 on PATH: the extension host's own.
    'slurm.nodeCommand': process.execPath,
  };
  const workspaceSettings = { sampler: 'llm', batchSize: 2, samplesPerPrompt: 2, 'database.preset': 'small' };

  before(async function () {
    const unavailable = slurmUnavailableReason();
    if (unavailable) skipBecause(this, `no SLURM test cluster here: ${unavailable}`);
    theta = await api();
    if (theta.controller.active) {
      const done = closed(theta.controller);
      theta.controller.stop();
      await done;
    }
    cluster = await startSlurmCluster({ cpus: 8 });
    // On a login node SLURM_CONF (or /etc/slurm/slurm.conf) is in the extension host's environment; here the
    // cluster exists only from now on, so it goes there now (the engine worker shares that environment).
    process.env.SLURM_CONF = cluster.conf;
    model = await startTestServer({ latencyMs: 5 });
    staging = mkdtempSync(join(tmpdir(), 'te-host-slurm-staging-'));
    userSettings.endpoint = model.baseURL;
    userSettings['slurm.partition'] = cluster.partition;
    userSettings['slurm.stagingDirectory'] = staging;
    for (const [key, value] of Object.entries(userSettings)) await config().update(key, value, vscode.ConfigurationTarget.Global);
    for (const [key, value] of Object.entries(workspaceSettings)) await config().update(key, value, vscode.ConfigurationTarget.Workspace);

    taskDir = join(workspaceDir(), TASK);
    cpSync(join(REPO_ROOT, 'test', 'fixtures', 'tasks', 'quadratic'), taskDir, { recursive: true });
    const taskFile = join(taskDir, 'task.json');
    writeFileSync(
      taskFile,
      JSON.stringify({ ...(JSON.parse(readFileSync(taskFile, 'utf8')) as Record<string, unknown>), name: TASK }, null, 2),
    );
    program = vscode.Uri.file(join(taskDir, 'initial.py'));
    await theta.rememberTaskFor(program, taskFile);
  });

  after(async () => {
    if (theta?.controller.active) {
      const done = closed(theta.controller);
      theta.controller.stop();
      await done;
    }
    for (const key of Object.keys(userSettings)) await config().update(key, undefined, vscode.ConfigurationTarget.Global);
    for (const key of Object.keys(workspaceSettings)) await config().update(key, undefined, vscode.ConfigurationTarget.Workspace);
    await model?.close();
    await cluster?.stop();
    if (slurmConfBefore === undefined) delete process.env.SLURM_CONF;
    else process.env.SLURM_CONF = slurmConfBefore;
    if (staging) rmSync(staging, { recursive: true, force: true });
  });

  it('evolves the task with its children evaluated as SLURM jobs; the status bar shows the queue; Stop Run leaves no job', async () => {
    const settings = readSettings(program);
    assert.equal(settings['evaluation.backend'], 'slurm', 'the setting reaches the run');
    assert.equal(settings['slurm.pollSeconds'], 0.5);

    const events: EngineEvent[] = [];
    const statusTexts: string[] = [];
    const failures: string[] = [];
    const subs = [
      theta.onDidFailCommand(({ message }) => failures.push(message)),
      theta.controller.onDidCloseRun((closedRun) => failures.push(`${closedRun.runId} ${closedRun.state}: ${closedRun.message}`)),
      theta.controller.onDidEngineEvent(({ event }) => {
        events.push(event);
        // What the status bar's SLURM item says right after each queue report.
        const run = theta.controller.active;
        if (event.type === 'evaluation_queue' && run) statusTexts.push(clusterStatusText(run) ?? '(hidden)');
      }),
    ];
    try {
      const stepTwo = nextEvent(theta.controller, (e) => e.type === 'step_committed' && e.step === 2, 'step 2 to commit', 90_000);
      await vscode.commands.executeCommand('thetaevolve.startRun', program);
      const run = theta.controller.active;
      assert.ok(
        run,
        `a run is active after Start Run (failures: ${JSON.stringify(failures)}; dialogs answered: ${JSON.stringify(answeredDialogs())})`,
      );
      assert.match(run.runId, new RegExp(`^${TASK}-`));
      await stepTwo;
      const jobName = jobNameOfRun(run.runId);

      // Every sample of steps 1 and 2 ended in one outcome; each child that needed evaluating (not a
      // duplicate or an unchanged one) ran as a job of this run: its evaluation_started names its job,
      // and the evaluations terminal's line for it says so.
      const finished = events.filter((e): e is EvaluationFinishedEvent => e.type === 'evaluation_finished' && e.step <= 2);
      assert.equal(finished.length, 9, `the initial program and 2 steps x 2 prompts x 2 samples ended (saw ${finished.length})`);
      const evaluated = finished.filter((e) => e.step >= 1 && EVALUATED.has(e.outcome));
      assert.ok(evaluated.length >= 2, `children were evaluated (outcomes: ${finished.map((e) => e.outcome).join(', ')})`);
      const started = events.filter((e): e is EvaluationStartedEvent => e.type === 'evaluation_started' && e.step >= 1 && e.step <= 2);
      for (const e of evaluated) {
        const start = started.find((s) => s.step === e.step && s.jobKey === e.jobKey && s.sampleIndex === e.sampleIndex);
        assert.ok(start, `${e.jobKey}#${e.sampleIndex} of step ${e.step} started`);
        assert.match(start.schedulerJobId ?? '', /^\d+_\d+$/, `${e.jobKey}#${e.sampleIndex} of step ${e.step} names its array job task`);
        assert.match(evaluationStartedLine(start) ?? '', new RegExp(`running as SLURM job ${start.schedulerJobId ?? '-'}$`));
      }
      // Quick children are packed several to an array task (slurm.candidatesPerJob auto), each naming the task that ran it.
      const childJobs = new Set(started.map((e) => e.schedulerJobId));
      assert.ok(childJobs.size >= 1 && childJobs.size <= started.length, `${childJobs.size} array task(s) for ${started.length} children`);
      // Those jobs were the cluster's: its completion log lists them under the run's job name.
      const jobcomp = readFileSync(join(cluster?.dir ?? '', 'log', 'jobcomp.log'), 'utf8');
      const finishedJobs = jobcomp.split('\n').filter((l) => l.includes(`Name=${jobName} `));
      assert.ok(
        finishedJobs.length >= 1 + childJobs.size,
        `the initial program and ${childJobs.size} array task(s) of children finished as jobs named ${jobName} (jobcomp lists ${finishedJobs.length})`,
      );

      // The queue as the status bar and the dashboard show it.
      const queues = events.filter((e): e is EvaluationQueueEvent => e.type === 'evaluation_queue');
      assert.ok(queues.length >= 1, 'the backend reported its queue');
      assert.ok(queues.every((q) => q.backend === 'slurm'));
      const last = queues.at(-1) as EvaluationQueueEvent;
      assert.ok(last.done >= 1 && last.lost === 0 && last.failed === 0, JSON.stringify(last));
      assert.ok(last.schedulerCalls >= 2, 'sbatch and squeue were called');
      assert.ok(
        statusTexts.some((t) => /SLURM \d+ running, \d+ queued/.test(t)),
        `the status bar shows the queue (saw ${JSON.stringify(statusTexts.slice(-3))})`,
      );
      assert.deepEqual(run.queue && Object.keys(run.queue).sort(), ['done', 'failed', 'lost', 'pending', 'queueWaitMsP50', 'running']);
      assert.match(queueText(last), /^SLURM: \d+ pending, \d+ running, \d+ done/);
      // The queue wait is known once a poll saw a job running (a quick job may end between two polls): wait for one if need be.
      const withWait =
        queues.find((q) => q.queueWaitMsP50 !== null) ??
        (await nextEvent(theta.controller, (e) => e.type === 'evaluation_queue' && e.queueWaitMsP50 !== null, 'a queue wait', 60_000));
      assert.match(withWait.type === 'evaluation_queue' ? queueText(withWait) : '', /; queue wait [\d.]+ s$/);

      // Results identical in kind to a local run: every outcome is one a local run has (no infrastructure failure),
      // and the programs in the database score what the local sandbox gives them.
      for (const e of finished)
        assert.ok(
          e.outcome !== 'evaluation_failed' && e.outcome !== 'request_failed',
          `${e.jobKey}#${e.sampleIndex}: ${e.outcome} (${e.reason})`,
        );
      const commits = events.filter((e): e is StepCommittedEvent => e.type === 'step_committed' && e.step <= 2);
      assert.deepEqual(
        commits.map((c) => c.step),
        [1, 2],
      );
      const summary = await theta.controller.query({ kind: 'summary', dbFile: run.dbFile });
      // (The run goes on meanwhile: later steps may have added more.)
      assert.ok(summary.programs > 1, `the database holds the initial program and evaluated children (${summary.programs})`);
      // The run's improving programs (the initial one first or last), each evaluated again here in the local sandbox.
      const improvements: ProgramRecordMessage[] = await theta.controller.query({ kind: 'improvements', dbFile: run.dbFile });
      assert.ok(
        improvements.some((p) => p.parentId === null),
        'the initial program is among them',
      );
      for (const program of improvements) {
        const local: QueryResult<'evaluate'> = await theta.controller.query({
          kind: 'evaluate',
          taskDir,
          code: program.code,
          settings: { ...settings, 'evaluation.backend': 'local' },
        });
        assert.equal(program.outcome, outcomeOfEvaluation(local.status), `${program.id}: the same outcome as in the local sandbox`);
        assert.equal(program.score, local.score, `${program.id}: the SLURM job's score is the local sandbox's`);
        assert.equal(program.objective, local.objective);
        assert.equal(program.metrics.x, local.metrics.x);
      }

      // Stop Run cancels the run's jobs: none is left in the queue.
      const done = closed(theta.controller);
      await vscode.commands.executeCommand('thetaevolve.stopRun');
      const stopped = await done;
      assert.equal(stopped.state, 'finished');
      assert.ok(stopped.lastStep >= 2);
      await assertNoJobNamed(jobName);
      assert.deepEqual(await cluster?.queuedJobs(), []);
    } finally {
      for (const s of subs) s.dispose();
    }
  });

  it('runs its inference servers as SLURM jobs: the status bar counts those up and its tooltip lists each job; Stop Run leaves no job', async function () {
    // Two job servers start (Node.js and tsx each) before the run's first step.
    this.timeout(180_000);
    // The jobs are the run's only servers: thetaevolve.endpoint left at its default names none of the user's.
    const inferenceSettings = {
      endpoint: undefined,
      'slurm.inference.count': 2,
      'slurm.inference.command': testServerJobCommand(REPO_ROOT),
    };
    for (const [key, value] of Object.entries(inferenceSettings)) await config().update(key, value, vscode.ConfigurationTarget.Global);
    /** What the status bar says right after each report of the servers. */
    const seen: { event: EndpointServersEvent; text: string; tooltip: string }[] = [];
    const failures: string[] = [];
    const subs = [
      theta.onDidFailCommand(({ message }) => failures.push(message)),
      theta.controller.onDidCloseRun((closedRun) => failures.push(`${closedRun.runId} ${closedRun.state}: ${closedRun.message}`)),
      theta.controller.onDidEngineEvent(({ event }) => {
        const run = theta.controller.active;
        if (event.type === 'endpoint_servers' && run)
          seen.push({ event, text: clusterStatusText(run) ?? '(hidden)', tooltip: statusTooltip(run).value });
      }),
    ];
    try {
      assert.equal(readSettings(program)['slurm.inference.count'], 2, 'the setting reaches the run');
      // Both job servers up and each answered requests (reported after a step's commit).
      const bothServing = nextEvent(
        theta.controller,
        (e) =>
          e.type === 'endpoint_servers' &&
          e.jobs?.length === 2 &&
          e.jobs.every((job) => (e.servers.find((s) => s.baseURL === job.baseURL)?.requests ?? 0) > 0),
        'both inference job servers answering requests',
        100_000,
      );
      await vscode.commands.executeCommand('thetaevolve.startRun', program);
      const run = theta.controller.active;
      assert.ok(
        run,
        `a run is active after Start Run (failures: ${JSON.stringify(failures)}; dialogs answered: ${JSON.stringify(answeredDialogs())})`,
      );
      const serving = await bothServing;
      assert.ok(serving.type === 'endpoint_servers' && serving.jobs);
      const jobIds = serving.jobs.map((job) => job.jobId ?? '-');
      assert.ok(
        jobIds.every((id) => /^\d+$/.test(id)),
        `both jobs were submitted: ${jobIds.join(', ')}`,
      );

      // Submitted, not up yet: the first report counts none up (the run is still starting, waiting for one).
      assert.match(seen[0]?.text ?? '', /servers 0\/2 up$/, JSON.stringify(seen[0]?.text));
      const shown = seen.find((s) => s.event === serving);
      assert.ok(shown, 'the status bar was read at that report');
      assert.match(shown.text, /servers 2\/2 up$/, shown.text);
      // The tooltip has one line per job: its id, state, requests (appendText may write the spaces as &nbsp;).
      for (const [index, id] of jobIds.entries())
        assert.match(shown.tooltip, new RegExp(`server(?: |&nbsp;)${index}(?: |&nbsp;)job(?: |&nbsp;)${id}\\b`), shown.tooltip);
      assert.match(shown.tooltip, /RUNNING/, shown.tooltip);
      assert.equal(shown.tooltip.match(/requests/g)?.length, 2, shown.tooltip);

      const done = closed(theta.controller);
      await vscode.commands.executeCommand('thetaevolve.stopRun');
      const stopped = await done;
      assert.equal(stopped.state, 'finished');
      // Once stopped, the run holds no job (nor a live queue): the SLURM item is gone.
      assert.equal(clusterStatusText(stopped), null);
      assert.doesNotMatch(statusTooltip(stopped).value, /Inference jobs/);
      for (const name of [jobNameOfRun(run.runId), inferenceJobName(run.runId, 0), inferenceJobName(run.runId, 1)])
        await assertNoJobNamed(name);
      assert.deepEqual(await cluster?.queuedJobs(), []);
    } finally {
      for (const s of subs) s.dispose();
      if (theta.controller.active) {
        const done = closed(theta.controller);
        theta.controller.stop();
        await done;
      }
      await config().update('endpoint', userSettings.endpoint, vscode.ConfigurationTarget.Global);
      for (const key of ['slurm.inference.count', 'slurm.inference.command'])
        await config().update(key, undefined, vscode.ConfigurationTarget.Global);
    }
  });
});
