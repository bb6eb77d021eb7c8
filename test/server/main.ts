// Runs the OpenAI-compatible test server from the command line (demo, e2e):
//   node --import tsx test/server/main.ts --port 8000 [--latency-ms N] [--fault-rate R] ...
// Prints the base URL as the first line of stdout; stops on SIGINT / SIGTERM.
import { appendFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import {
  FAULT_KINDS,
  SERVER_MODES,
  startTestServer,
  type FaultKind,
  type ReasoningMode,
  type ScriptStep,
  type ServerMode,
  type TestServerOptions,
} from './openaiTestServer';

const USAGE = `Usage: node --import tsx test/server/main.ts [options]
  --port N                 port (default 8000; 0: any free port)
  --host H                 address to bind (default 127.0.0.1)
  --model NAME             model to list (repeatable; default test-model)
  --latency-ms N           delay before each reply (default 0)
  --latency-jitter-ms N    plus a uniform random delay up to N
  --fault-rate R           probability of a fault per chat request (default 0)
  --faults K1,K2           fault kinds the rate draws from (${FAULT_KINDS.join(', ')})
  --script S1,S2           faults of the first requests in order (ok or a fault kind)
  --fault-seed N           seed of the fault draws (default 0)
  --retry-after S          Retry-After seconds of a 429 (default: none, like vLLM and SGLang)
  --reasoning MODE         none | reasoning_content | reasoning | inline (default none)
  --no-token-ids           ignore return_token_ids (like a server without it)
  --mode M                 ${SERVER_MODES.join(' | ')}: whose reply and error shapes (default vllm)
  --max-model-len N        context length, listed and enforced (default 32768)
  --weight-version V       report metadata.weight_version (SGLang style)
  --api-key KEY            require this bearer key
  --request-log FILE       append one JSON line per request (method, path, authorization)`;

function fail(message: string): never {
  console.error(`${message}\n\n${USAGE}`);
  process.exit(2);
}

function number(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) fail(`${flag} needs a non-negative number, got "${value}".`);
  return n;
}

function kinds(flag: string, value: string | undefined, allowOk: boolean): ScriptStep[] | undefined {
  if (value === undefined) return undefined;
  const allowed: readonly string[] = allowOk ? ['ok', ...FAULT_KINDS] : FAULT_KINDS;
  const items = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const item of items) if (!allowed.includes(item)) fail(`${flag}: unknown kind "${item}" (one of ${allowed.join(', ')}).`);
  return items as ScriptStep[];
}

async function main(): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({
      options: {
        port: { type: 'string' },
        host: { type: 'string' },
        model: { type: 'string', multiple: true },
        'latency-ms': { type: 'string' },
        'latency-jitter-ms': { type: 'string' },
        'fault-rate': { type: 'string' },
        faults: { type: 'string' },
        script: { type: 'string' },
        'fault-seed': { type: 'string' },
        'retry-after': { type: 'string' },
        reasoning: { type: 'string' },
        'no-token-ids': { type: 'boolean' },
        mode: { type: 'string' },
        'max-model-len': { type: 'string' },
        'weight-version': { type: 'string' },
        'api-key': { type: 'string' },
        'request-log': { type: 'string' },
        help: { type: 'boolean' },
      },
      strict: true,
    });
  } catch (error) {
    fail((error as Error).message);
  }
  const v = parsed.values;
  if (v.help) {
    console.log(USAGE);
    return;
  }
  const faultRate = number('--fault-rate', v['fault-rate'], 0);
  if (faultRate > 1) fail('--fault-rate is a probability in [0, 1].');
  const reasoning = v.reasoning ?? 'none';
  if (!['none', 'reasoning_content', 'reasoning', 'inline'].includes(reasoning)) fail(`--reasoning: unknown mode "${reasoning}".`);
  const mode = v.mode ?? 'vllm';
  if (!(SERVER_MODES as readonly string[]).includes(mode)) fail(`--mode: one of ${SERVER_MODES.join(', ')}.`);
  const maxModelLen = number('--max-model-len', v['max-model-len'], 32768);
  if (!Number.isInteger(maxModelLen) || maxModelLen < 1) fail('--max-model-len needs a positive whole number.');
  const options: TestServerOptions = {
    port: number('--port', v.port, 8000),
    host: v.host ?? '127.0.0.1',
    models: v.model && v.model.length > 0 ? v.model : ['test-model'],
    latencyMs: number('--latency-ms', v['latency-ms'], 0),
    latencyJitterMs: number('--latency-jitter-ms', v['latency-jitter-ms'], 0),
    faultRate,
    faultKinds: kinds('--faults', v.faults, false) as FaultKind[] | undefined,
    script: kinds('--script', v.script, true),
    faultSeed: number('--fault-seed', v['fault-seed'], 0),
    retryAfterSeconds: v['retry-after'] === undefined ? undefined : number('--retry-after', v['retry-after'], 0),
    reasoning: reasoning as ReasoningMode,
    supportsTokenIds: !v['no-token-ids'],
    mode: mode as ServerMode,
    maxModelLen,
    weightVersion: v['weight-version'] ?? null,
    apiKey: v['api-key'] ?? null,
  };
  const requestLog = v['request-log'];
  if (requestLog !== undefined) options.onRequest = (entry) => appendFileSync(requestLog, `${JSON.stringify(entry)}\n`);
  const server = await startTestServer(options);
  console.log(server.baseURL);
  console.error(
    `OpenAI-compatible test server at ${server.baseURL} (models: ${(options.models ?? []).join(', ')}; ` +
      `latency ${options.latencyMs} ms; fault rate ${faultRate}). Ctrl-C stops it.`,
  );
  const stop = () => {
    void server.close().then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((error: unknown) => {
  console.error(`test server failed: ${(error as Error).message}`);
  process.exit(1);
});
