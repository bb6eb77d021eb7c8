// RL switched on with no run asks whether the trainer answers (src/engine/trainer/trainerProbe.ts):
// against a real listener, a port where nothing listens, and one that accepts and never answers.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { probeTrainer } from '../../src/engine/trainer/trainerProbe';

describe('trainer probe (RL on with no run)', () => {
  it('says the trainer answers, that nothing listens, or that it took the request and never answered, within its timeout', async () => {
    const answering = createServer((_req, res) => res.writeHead(404).end('{"detail":"Not Found"}'));
    const silent = createServer(() => undefined);
    for (const server of [answering, silent]) await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const urlOf = (server: typeof answering): string => `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      assert.deepEqual(await probeTrainer(urlOf(answering)), {
        answers: true,
        message: `the trainer at ${urlOf(answering)} answers (HTTP 404)`,
      });
      const refused = await probeTrainer('http://127.0.0.1:9');
      assert.equal(refused.answers, false);
      assert.match(
        refused.message,
        /^nothing answers at http:\/\/127\.0\.0\.1:9 \(connection refused\): start the trainer there, or set thetaevolve\.trainer\.url$/,
      );
      const quiet = await probeTrainer(urlOf(silent), 300);
      assert.equal(quiet.answers, false);
      assert.match(quiet.message, /^nothing answers at .* \(no reply within \d+ s\)/);
      assert.equal((await probeTrainer('ftp://127.0.0.1:8000')).answers, false);
    } finally {
      silent.closeAllConnections();
      for (const server of [answering, silent]) await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
