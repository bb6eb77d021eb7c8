// A test-only extension that runs the in-host suite inside code-server, which
// cannot be given a test entry point: installed beside the packaged
// ThetaEvolve (which it depends on, so that one activates first) only by
// test/support/runHostTests.ts. The shipped extension holds no test hook.
// THETAEVOLVE_HOST_TESTS names the suite's bundle; its results go to
// THETAEVOLVE_HOST_TEST_RESULTS.
import { writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';

interface HostTestBundle {
  runAndReport: () => Promise<unknown>;
}

export function activate(): void {
  const bundle = process.env.THETAEVOLVE_HOST_TESTS;
  const resultsFile = process.env.THETAEVOLVE_HOST_TEST_RESULTS;
  if (!bundle || !resultsFile) return;
  // A runtime path, not a bundled module: the suite is built apart.
  const load = createRequire(__filename) as (id: string) => HostTestBundle;
  void (async () => {
    let report: unknown;
    try {
      report = await load(bundle).runAndReport();
    } catch (err) {
      report = { passes: 0, failures: 1, tests: [{ title: 'load in-host suite', state: 'failed', error: String(err) }] };
    }
    await writeFile(resultsFile, JSON.stringify(report, null, 2));
  })();
}
