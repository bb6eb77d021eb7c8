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
  cpusPerTaskArguments,
  packGroups,
} from '../../src/engine/evaluation/slurmPacking';

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
