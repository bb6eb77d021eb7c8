// Runs one of the trainer test servers as a process of its own, with no
// simulated trainer (the caller plays the trainer's side over HTTP), so a
// test can kill it outright and start it again on the same port:
//   node --import tsx test/server/trainerMain.ts --protocol atropos|slime --port N
// slime's buffer knows the generator module `thetaevolve` (what docs/guide.md
// has people add beside buffer.py), so /start_rollout with that task_type
// rebuilds it. Prints the base URL as the first line of stdout.
import { parseArgs } from 'node:util';
import { startAtroposTestServer } from './atroposTestServer';
import { startSlimeTestServer } from './slimeTestServer';

const USAGE = 'Usage: node --import tsx test/server/trainerMain.ts --protocol atropos|slime --port N [--host H]';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { protocol: { type: 'string' }, port: { type: 'string' }, host: { type: 'string' } },
    strict: true,
  });
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port needs a port number, got "${values.port}"`);
  const host = values.host ?? '127.0.0.1';
  const server =
    values.protocol === 'atropos'
      ? await startAtroposTestServer({ host, port, trainer: null })
      : values.protocol === 'slime'
        ? await startSlimeTestServer({ host, port, generators: ['thetaevolve'] })
        : null;
  if (!server) throw new Error(`--protocol must be atropos or slime, got "${values.protocol}"`);
  console.log(server.url);
  const stop = () => void server.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((error: unknown) => {
  console.error(`trainer test server failed: ${(error as Error).message}\n${USAGE}`);
  process.exit(2);
});
