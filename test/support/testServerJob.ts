// What an inference job on the test cluster runs (thetaevolve.slurm.inference.command):
// the project's OpenAI-compatible test server (test/server/main.ts) on the node and
// port the job picked, started with the given Node.js (a job's PATH may have none).
import { shellQuote } from '../../src/engine/evaluation/slurm';

export function testServerJobCommand(repoRoot: string, node = process.execPath): string {
  return `cd ${shellQuote(repoRoot)} && exec ${shellQuote(node)} --import tsx test/server/main.ts --host {host} --port {port}`;
}
