// Does the endpoint client keep the configured number of requests in flight?
// Against a fixed-latency test server (its own process), throughput at
// concurrency 512 vs 1, measured side by side in one run.
//   node --import tsx bench/client-concurrency.bench.ts
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { EndpointClient } from '../src/engine/llm/endpointClient';
import type { GenerationJob } from '../src/engine/common/types';

const LATENCY_MS = 1000;
const PROGRAM = '# EVOLVE-BLOCK-START\ndef f(x):\n    return 0.5 * x + 3\n# EVOLVE-BLOCK-END\n';

function jobsFor(requests: number): GenerationJob[] {
  const perJob = 16;
  return Array.from({ length: Math.ceil(requests / perJob) }, (_, i) => ({
    key: `b-p${i}`,
    n: Math.min(perJob, requests - i * perJob),
    seed: i * perJob,
    parentId: 'p',
    parentCode: PROGRAM,
    messages: [{ role: 'user' as const, content: `Improve:\n\`\`\`python\n${PROGRAM}\`\`\`\n` }],
  }));
}

async function measure(baseURL: string, concurrency: number, requests: number) {
  const client = new EndpointClient({
    baseURL,
    model: '',
    apiKey: undefined,
    temperature: 1,
    topP: 1,
    maxTokens: 256,
    maxInFlight: concurrency,
    useNParameter: false,
    requestTimeoutMs: 60_000,
    maxRetries: 0,
    requestTokenIds: false,
    retrySeconds: 5,
  });
  await client.check();
  let failures = 0;
  const stats = await client.generate(jobsFor(requests), new AbortController().signal, (s) => {
    if (!s.ok) failures++;
  });
  if (failures > 0) throw new Error(`${failures} requests failed at concurrency ${concurrency}`);
  return { throughput: (requests * 1000) / stats.wallMs, stats };
}

async function main(): Promise<void> {
  const server = spawn(process.execPath, ['--import', 'tsx', 'test/server/main.ts', '--port', '0', '--latency-ms', String(LATENCY_MS)], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  try {
    const baseURL = await new Promise<string>((resolve, reject) => {
      createInterface({ input: server.stdout }).once('line', resolve);
      server.once('exit', (code) => reject(new Error(`test server exited with ${code}`)));
    });
    const serial = await measure(baseURL, 1, 6);
    // Warm up right before: JIT, and 512 kept-alive connections (idle ones close after a few seconds).
    await measure(baseURL, 512, 512);
    const wide = await measure(baseURL, 512, 1024);
    const context = `fixed ${LATENCY_MS} ms server latency, separate server process`;
    console.log(`bench client-concurrency-1: ${serial.throughput.toFixed(2)} requests/s (concurrency 1, 6 requests, ${context})`);
    console.log(`bench client-concurrency-512: ${wide.throughput.toFixed(1)} requests/s (concurrency 512, 1024 requests, ${context})`);
    console.log(
      `bench client-concurrency-ratio: ${(wide.throughput / serial.throughput).toFixed(1)} x (throughput at concurrency 512 vs 1; ideal 512)`,
    );
    console.log(`bench client-concurrency-max-in-flight: ${wide.stats.maxInFlight} requests (most in flight at once with a cap of 512)`);
    console.log(
      `bench client-concurrency-p95-latency: ${wide.stats.latencyMsP95.toFixed(0)} ms (request latency p95 at concurrency 512; server adds ${LATENCY_MS} ms)`,
    );
  } finally {
    server.kill('SIGTERM');
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
