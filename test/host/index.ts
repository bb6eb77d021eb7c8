// The in-host suite: runs inside a real VS Code extension host.
// - code-server: the test-only runner extension (test/host/runner) calls runAndReport().
// - desktop VS Code: @vscode/test-electron's extensionTestsPath calls run().
import { appendFileSync } from 'node:fs';
import Mocha from 'mocha';
import { skipReasons } from './support';

/** The words in a top-level suite's title that make it run in the untrusted workspace's pass only. */
export const UNTRUSTED_SUITE = /\(untrusted workspace\)/;

export interface HostTestReport {
  passes: number;
  failures: number;
  skipped: number;
  tests: { title: string; state: 'passed' | 'failed' | 'skipped'; error?: string; durationMs?: number }[];
}

export async function runAndReport(): Promise<HostTestReport> {
  // THETAEVOLVE_HOST_GREP runs only the tests whose full title matches (e.g. "SLURM").
  const grep = process.env.THETAEVOLVE_HOST_GREP;
  const mocha = new Mocha({ ui: 'bdd', timeout: 60_000, color: false, reporter: 'spec', ...(grep ? { grep } : {}) });
  mocha.suite.emit('pre-require', globalThis, 'host-suites', mocha);
  // Loaded only now, so describe/it exist when the suites register.
  await import('./suites');
  // Two passes (test/support/runHostTests.ts): a workspace opened untrusted runs the suites whose title says so, a trusted one the rest.
  const untrusted = process.env.THETAEVOLVE_HOST_UNTRUSTED === '1';
  mocha.suite.suites = mocha.suite.suites.filter((suite) => UNTRUSTED_SUITE.test(suite.title) === untrusted);
  const report: HostTestReport = { passes: 0, failures: 0, skipped: 0, tests: [] };
  // Each test's start, for the runner's deadline (no news for a while, not a whole suite's length) and its message.
  const progress = process.env.THETAEVOLVE_HOST_PROGRESS;
  await new Promise<void>((resolve) => {
    const runner = mocha.run(() => resolve());
    if (progress) runner.on('test', (test) => appendFileSync(progress, `${test.fullTitle()}\n`));
    runner.on('pass', (test) => {
      report.passes++;
      report.tests.push({ title: test.fullTitle(), state: 'passed', durationMs: test.duration ?? 0 });
    });
    runner.on('pending', (test) => {
      report.skipped++;
      let reason: string | undefined;
      for (let suite = test.parent; suite && reason === undefined; suite = suite.parent) reason = skipReasons.get(suite);
      report.tests.push({ title: test.fullTitle(), state: 'skipped', error: `skipped: ${reason ?? 'no reason given'}` });
    });
    runner.on('fail', (test, err: unknown) => {
      report.failures++;
      report.tests.push({
        title: test.fullTitle(),
        state: 'failed',
        error: err instanceof Error ? `${err.message}\n${err.stack ?? ''}` : String(err),
      });
    });
  });
  return report;
}

export async function run(): Promise<void> {
  const report = await runAndReport();
  if (report.failures > 0) throw new Error(`${report.failures} in-host test(s) failed`);
}
