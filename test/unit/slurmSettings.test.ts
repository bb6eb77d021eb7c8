// The thetaevolve.slurm.* settings as the SLURM backend reads them, and the
// strict parsing of what SLURM's tools print.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { defaultSettings, parseSettings } from '../../src/engine/common/config';
import { jobTimeLimitMinutes, shellQuote } from '../../src/engine/evaluation/slurm';
import { jobNameOfRun, SlurmCli, slurmToolEnvironment } from '../../src/engine/evaluation/slurmCli';
import { findExecutable } from '../../src/engine/sandbox/isolation';
import { slurmInferenceOptionsFromSettings, slurmOptionsFromSettings, splitShellWords } from '../../src/engine/evaluation/slurmSettings';
import {
  AUTO_MAX_CANDIDATES_PER_JOB,
  autoCandidatesPerJob,
  candidatesPerJobLimit,
  cpusPerTaskArguments,
  packGroups,
  partitionOfJobs,
} from '../../src/engine/evaluation/slurmPacking';
import { compactJobIds, PENDING_NOTICE_MS, PendingNotices, pendingJobsLine } from '../../src/engine/evaluation/slurmQueue';
import { sandboxLimitArguments } from '../../src/engine/evaluation/slurmStaging';

describe('SLURM settings', () => {
  it('defaults: local backend; SLURM staging under the run folder, 512 jobs, 5 s polls, 2 resubmits', () => {
    const s = defaultSettings();
    assert.equal(s['evaluation.backend'], 'local');
    const o = slurmOptionsFromSettings(s, '/runs/r1');
    assert.equal(o.stagingDirectory, '/runs/r1/slurm');
    assert.deepEqual([o.maxJobs, o.pollSeconds, o.maxResubmits, o.nodeCommand], [512, 5, 2, 'node']);
    assert.deepEqual([o.sbatchArguments, o.setupCommands], [[], []]);
  });

  it('reads sbatch arguments as shell words and setup commands as lines', () => {
    const s = parseSettings({
      'evaluation.backend': 'slurm',
      'slurm.sbatchArguments': `--mem=8G --comment="a b" --qos='short'`,
      'slurm.setupCommands': 'module load nodejs/20\n\n  module load python/3.11  ',
      'slurm.stagingDirectory': '/shared/me',
    });
    const o = slurmOptionsFromSettings(s, '/runs/r1');
    assert.deepEqual(o.sbatchArguments, ['--mem=8G', '--comment=a b', '--qos=short']);
    assert.deepEqual(o.setupCommands, ['module load nodejs/20', 'module load python/3.11']);
    assert.equal(o.stagingDirectory, '/shared/me');
  });

  it('names the bad setting and what is wrong', () => {
    const bad =
      (raw: Record<string, unknown>): (() => unknown) =>
      () =>
        slurmOptionsFromSettings(parseSettings(raw), '/r');
    assert.throws(
      bad({ 'slurm.sbatchArguments': '--array=0-3' }),
      /thetaevolve\.slurm\.sbatchArguments names an option ThetaEvolve sets itself/,
    );
    assert.throws(bad({ 'slurm.sbatchArguments': '-J other' }), /slurm\.sbatchArguments names an option/);
    assert.throws(bad({ 'slurm.sbatchArguments': '--comment="open' }), /slurm\.sbatchArguments unclosed " quote/);
    assert.throws(bad({ 'slurm.partition': 'gpu; rm -rf /' }), /thetaevolve\.slurm\.partition may hold only letters/);
    assert.throws(bad({ 'slurm.nodeCommand': '  ' }), /thetaevolve\.slurm\.nodeCommand is empty/);
    assert.throws(() => parseSettings({ 'slurm.pollSeconds': 0 }), /thetaevolve\.slurm\.pollSeconds/);
    assert.throws(() => parseSettings({ 'evaluation.backend': 'kubernetes' }), /thetaevolve\.evaluation\.backend/);
  });

  it('reads slurm.candidatesPerJob as auto (the default) or a whole number', () => {
    assert.equal(slurmOptionsFromSettings(defaultSettings(), '/r').candidatesPerJob, 'auto');
    assert.equal(slurmOptionsFromSettings(parseSettings({ 'slurm.candidatesPerJob': ' 8 ' }), '/r').candidatesPerJob, 8);
    for (const bad of ['0', 'many', '2.5', '-1'])
      assert.throws(
        () => slurmOptionsFromSettings(parseSettings({ 'slurm.candidatesPerJob': bad }), '/r'),
        /thetaevolve\.slurm\.candidatesPerJob must be auto or a (whole )?number/,
        bad,
      );
  });

  it('packs short candidates (auto: about 10 for a second each, 1 from 10 s up) into even jobs, one CPU each', () => {
    assert.equal(autoCandidatesPerJob(1), 10);
    assert.equal(autoCandidatesPerJob(5), 2);
    assert.equal(autoCandidatesPerJob(10), 1);
    assert.equal(autoCandidatesPerJob(600), 1);
    assert.equal(autoCandidatesPerJob(0.01), AUTO_MAX_CANDIDATES_PER_JOB);
    assert.deepEqual(
      packGroups([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16], 10).map((g) => g.length),
      [8, 8],
    );
    // Every task of an array asks for the largest group's CPUs: groups that ask for none unused (16 by 7: four of 4, not 6, 5, 5).
    assert.deepEqual(
      packGroups(
        Array.from({ length: 16 }, (_, i) => i),
        7,
      ).map((g) => g.length),
      [4, 4, 4, 4],
    );
    assert.deepEqual(
      packGroups(
        Array.from({ length: 16 }, (_, i) => i),
        3,
      ).map((g) => g.length),
      [2, 2, 2, 2, 2, 2, 2, 2],
    );
    assert.deepEqual(packGroups([1, 2, 3, 4, 5, 6], 4), [
      [1, 2, 3],
      [4, 5, 6],
    ]);
    assert.deepEqual(packGroups([1, 2, 3, 4, 5], 2), [[1], [2], [3], [4], [5]]);
    assert.deepEqual(packGroups([1, 2, 3], 1), [[1], [2], [3]]);
    assert.deepEqual(packGroups([], 4), []);
    assert.deepEqual(cpusPerTaskArguments([], 8), ['--cpus-per-task=8']);
    assert.deepEqual(cpusPerTaskArguments([], 1), []);
    // The user's own CPU count wins.
    assert.deepEqual(cpusPerTaskArguments(['--cpus-per-task=4'], 8), []);
    assert.deepEqual(cpusPerTaskArguments(['-c', '4'], 8), []);
  });

  it("never packs more than the partition's nodes fit: auto half the smallest node, a number set by hand a whole node", () => {
    assert.equal(candidatesPerJobLimit(16, true), 8);
    assert.equal(candidatesPerJobLimit(16, false), 16);
    assert.equal(candidatesPerJobLimit(1, true), 1);
    assert.equal(candidatesPerJobLimit(3, true), 1);
    assert.equal(candidatesPerJobLimit(null, true), Number.POSITIVE_INFINITY);
    assert.equal(partitionOfJobs('cpu', ['--partition=gpu']), 'cpu');
    assert.equal(partitionOfJobs('', ['--mem=8G', '--partition=gpu']), 'gpu');
    assert.equal(partitionOfJobs('', ['-p', 'short']), 'short');
    assert.equal(partitionOfJobs('', ['-pshort']), 'short');
    assert.equal(partitionOfJobs('', ['--partition', 'long']), 'long');
    assert.equal(partitionOfJobs('', ['--qos=short']), null);
  });

  it('names each pending job of the run once it has pended a few seconds (at once for a reason that may not clear), with what it asks for', () => {
    const notices = new PendingNotices();
    const request = { cpus: 8, memory: '0', gres: 'N/A', partition: 'main' };
    const pending = [
      { id: '5_0', reason: 'Resources', request, since: 0 },
      { id: '5_1', reason: 'Resources', request, since: 0 },
      { id: '5_3', reason: 'Resources', request, since: 0 },
      { id: '7', reason: 'Priority', request: { cpus: 1, memory: '2000M', gres: 'gres:gpu:1', partition: 'gpu' }, since: 1000 },
    ];
    assert.deepEqual(notices.due(pending, PENDING_NOTICE_MS - 1), [], 'pending for an ordinary reason: not yet');
    const due = notices.due(pending, PENDING_NOTICE_MS + 1000);
    assert.deepEqual(
      due.map((j) => j.id),
      ['5_0', '5_1', '5_3', '7'],
    );
    assert.equal(
      pendingJobsLine(due, 'evaluation', 5000, 'then.'),
      "SLURM evaluation jobs of this run wait in the queue: 5_[0-1,3] pending 5 s (squeue: Resources; each asks for 8 CPUs, the partition's default memory, no GRES, partition main); " +
        '7 pending 4 s (squeue: Priority; asks for 1 CPU, memory 2000M, GRES gres:gpu:1, partition gpu); then.',
    );
    assert.deepEqual(notices.due(pending, 60_000), [], 'each named once');
    // A reason that may never clear is named at once, and again when a named job turns to one.
    const held = [
      { id: '9', reason: 'JobHeldUser', request, since: 59_900 },
      ...pending.slice(0, 1).map((j) => ({ ...j, reason: 'ReqNodeNotAvail' })),
    ];
    assert.deepEqual(
      notices.due(held, 60_000).map((j) => j.id),
      ['9', '5_0'],
    );
    assert.match(
      pendingJobsLine(notices.due([{ id: '11', reason: 'QOSMaxJobsPerUserLimit', request, since: 0 }], 0), 'probe', 0, 'x'),
      /^SLURM probe job of this run waits in the queue: 11 pending 0 s \(squeue: QOSMaxJobsPerUserLimit, which may not clear by itself;/,
    );
    // A job that left the pending state and came back (requeued) is named again.
    assert.deepEqual(notices.due([], 61_000), []);
    assert.deepEqual(
      notices.due([{ id: '9', reason: 'Resources', request, since: 61_000 }], 65_000).map((j) => j.id),
      ['9'],
    );
    assert.equal(compactJobIds(['3_2', '3_0', '3_1', '4', '3_9']), '3_[0-2,9], 4');
  });

  it('reads the inference jobs (none by default) and names the bad setting', () => {
    assert.equal(slurmInferenceOptionsFromSettings(defaultSettings()), null);
    const o = slurmInferenceOptionsFromSettings(
      parseSettings({
        'slurm.inference.count': 2,
        'slurm.inference.command': 'vllm serve m --host {host} --port {port}',
        'slurm.inference.sbatchArguments': '--gres=gpu:1 --time=24:00:00',
        'slurm.inference.setupCommands': 'module load cuda\nsource venv/bin/activate',
      }),
    );
    assert.deepEqual(o, {
      count: 2,
      command: 'vllm serve m --host {host} --port {port}',
      sbatchArguments: ['--gres=gpu:1', '--time=24:00:00'],
      setupCommands: ['module load cuda', 'source venv/bin/activate'],
      maxResubmits: 3,
    });
    const bad = (raw: Record<string, unknown>) => () =>
      slurmInferenceOptionsFromSettings(parseSettings({ 'slurm.inference.count': 1, ...raw }));
    assert.throws(bad({}), /thetaevolve\.slurm\.inference\.command is empty/);
    assert.throws(bad({ 'slurm.inference.command': 'vllm serve m' }), /thetaevolve\.slurm\.inference\.command has no \{port\}/);
    assert.throws(
      bad({ 'slurm.inference.command': 'x {port}', 'slurm.inference.sbatchArguments': '--job-name=x' }),
      /thetaevolve\.slurm\.inference\.sbatchArguments names an option ThetaEvolve sets itself/,
    );
  });

  it("gives the node's evaluate the run's sandbox limits and the nodes' interpreter (slurm.python, else the run's path), quoted", () => {
    assert.equal(
      sandboxLimitArguments({ memoryLimitMb: 96, outputLimitKb: 1, python: "/home/o'neil/env/bin/python" }),
      ` --set sandbox.memoryLimitMb=96 --set sandbox.outputLimitKb=1 --python '/home/o'\\''neil/env/bin/python'`,
    );
    assert.equal(
      sandboxLimitArguments({ memoryLimitMb: 96, outputLimitKb: 1 }),
      ' --set sandbox.memoryLimitMb=96 --set sandbox.outputLimitKb=1',
    );
    assert.equal(defaultSettings()['slurm.python'], '', 'empty: the same path as the run');
  });

  it('splits like a shell for plain, quoted and escaped words', () => {
    assert.deepEqual(splitShellWords(`a  'b c' "d \\"e\\"" f\\ g ''`), ['a', 'b c', 'd "e"', 'f g', '']);
    assert.deepEqual(splitShellWords('   '), []);
  });

  it('names jobs thetaevolve-<run>, quotes words for bash, and sizes --time from the task limits', () => {
    assert.equal(jobNameOfRun('2026-11-23T07-00-00-circle packing'), 'thetaevolve-2026-11-23T07-00-00-circle_packing');
    assert.equal(shellQuote(`it's`), `'it'\\''s'`);
    assert.equal(jobTimeLimitMinutes(5, 5), 3);
    assert.equal(jobTimeLimitMinutes(1000, 60), 20);
  });

  it('starts SLURM tools with SLURM variables and the basics only, never an API key', () => {
    const env = slurmToolEnvironment({
      PATH: '/usr/bin',
      HOME: '/h',
      SLURM_CONF: '/c',
      SBATCH_ACCOUNT: 'a',
      OPENAI_API_KEY: 'sk-x',
      HF_TOKEN: 't',
    });
    assert.deepEqual(env, { PATH: '/usr/bin', HOME: '/h', SLURM_CONF: '/c', SBATCH_ACCOUNT: 'a' });
  });

  it("says to set SLURM_CONF when SLURM's tools find no configuration", async function () {
    if (!findExecutable('squeue'))
      return skipBecause(this, 'squeue is not installed (Debian: apt-get install slurm-client; scripts/setup.sh does)');
    if (existsSync('/etc/slurm/slurm.conf'))
      return skipBecause(this, 'this machine has /etc/slurm/slurm.conf: squeue finds a configuration without SLURM_CONF');
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
    await assert.rejects(
      new SlurmCli(env).queue('thetaevolve-x'),
      /squeue found no SLURM configuration .*Set SLURM_CONF to the cluster's slurm\.conf/,
    );
  });
});

function skipBecause(context: Mocha.Context, reason: string): void {
  console.log(`    skipped: ${reason}`);
  context.skip();
}
