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
import { PendingWatch } from '../../src/engine/evaluation/slurmQueue';
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
    assert.deepEqual(packGroups([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]]);
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

  it("says once when the run's jobs have pended a minute with none running, not while others of the run run", () => {
    const watch = new PendingWatch();
    const pending = [
      { jobId: '5_0', submittedAt: 0, reason: 'Resources' },
      { jobId: '5_0', submittedAt: 0, reason: 'Resources' },
      { jobId: '5_1', submittedAt: 0, reason: 'Priority' },
    ];
    assert.equal(watch.observe(pending, false, 59_000, 8), null);
    const notice = watch.observe(pending, false, 61_000, 8);
    assert.match(
      notice ?? '',
      /^2 SLURM evaluation job\(s\) of this run have been pending for 61 s with none running \(squeue: Resources, Priority\); each runs up to 8 candidate\(s\)/,
    );
    assert.equal(watch.observe(pending, false, 90_000, 8), null, 'said once');
    // Something of the run ran: the wait starts again from then.
    assert.equal(watch.observe(pending, true, 100_000, 8), null);
    assert.equal(watch.observe(pending, false, 150_000, 8), null);
    assert.match(watch.observe(pending, false, 161_000, 8) ?? '', /pending for 61 s/);
    // A job that ran a while ago and others queued since: counted from the later of the two.
    const later = new PendingWatch();
    later.progressed(0);
    assert.equal(later.observe([{ jobId: '9_0', submittedAt: 30_000, reason: 'Resources' }], false, 80_000, 1), null);
    assert.match(later.observe([{ jobId: '9_0', submittedAt: 30_000, reason: 'Resources' }], false, 91_000, 1) ?? '', /pending for 61 s/);
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
