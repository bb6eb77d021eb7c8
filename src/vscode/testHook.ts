// Environment-gated in-host test hook. code-server cannot be given a test
// entry point, so when THETAEVOLVE_HOST_TESTS names a test bundle the
// extension runs it inside its own host after activation and writes the
// results to THETAEVOLVE_HOST_TEST_RESULTS. Inert otherwise.
import { writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { log } from './log';

interface HostTestBundle {
  runAndReport: () => Promise<unknown>;
}

export function runHostTestsIfRequested(): void {
  const bundle = process.env.THETAEVOLVE_HOST_TESTS;
  const resultsFile = process.env.THETAEVOLVE_HOST_TEST_RESULTS;
  if (!bundle || !resultsFile) return;
  log().info(`running in-host tests from ${bundle}`);
  // A runtime path, not a bundled module: the suite lives outside the extension.
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
