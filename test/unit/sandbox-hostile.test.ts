// Hostile candidates: each must be contained, scored as a failure, and the
// evaluator must go on scoring the next program normally.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { Evaluator } from '../../src/engine/sandbox/evaluator';
import { loadTask, type Task } from '../../src/engine/task/task';
import { processesMatching } from '../fixtures/hostile/processes';
import { tempDir } from '../support/tempDirs';

const FIXTURE = join(__dirname, '../fixtures/hostile');
const REPO = join(__dirname, '../..');
/** Passed to every candidate of this file on its command line, so its processes (and their forks) can be found. */
const MARKER = `te-hostile-candidate-${process.pid}-${Date.now()}`;

const VALID_SOLUTION = 'with open("solution.json", "w") as f:\n    f.write(\'{"value": 100}\')\n';

describe('sandbox: hostile candidates', function () {
  this.timeout(60_000);
  let task: Task;
  let evaluator: Evaluator;

  before(async function () {
    const fixture = await loadTask(FIXTURE);
    task = { ...fixture, candidateCommand: [...fixture.candidateCommand, MARKER] };
    evaluator = new Evaluator(task, {
      concurrency: 4,
      memoryLimitMb: 512,
      outputLimitBytes: 64 * 1024,
      runtimeLimitSec: 3,
      processLimit: 64,
      // As a run's evaluator: each hostile case in a sandbox started ahead of need.
      warmInterpreters: 'auto',
    });
    if (evaluator.isolation.kind !== 'bwrap') {
      console.log(`      (skipped: no bubblewrap sandbox here: ${evaluator.isolation.warning})`);
      this.skip();
    }
  });
  after(async () => {
    await evaluator?.close();
  });
  afterEach(() => {
    // Checked at once: when a result arrives, the sandbox is already gone.
    assert.deepEqual(processesMatching(MARKER), [], 'a candidate process outlived its evaluation');
  });

  it('has no network: cannot reach a server on the host, nor the outside', async () => {
    let connections = 0;
    const server: Server = createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as { port: number }).port;
    try {
      const result = await evaluator.evaluate(
        `import socket\nreached = []\nfor host, port in [("127.0.0.1", ${port}), ("1.1.1.1", 53), ("8.8.8.8", 443)]:\n    try:\n        socket.create_connection((host, port), timeout=1).close()\n        reached.append(host)\n    except OSError as e:\n        print(host, "unreachable:", e)\nif not reached:\n    raise SystemExit(7)\n${VALID_SOLUTION}`,
      );
      assert.equal(connections, 0);
      assert.equal(result.status, 'no_solution');
      assert.equal(result.score, -0.2);
      assert.match(result.reason, /code 7/);
    } finally {
      server.close();
    }
  });

  it('sees no secrets: the environment is cleared and the host processes are invisible', async () => {
    const secret = `sk-hostile-${process.pid}-${Date.now()}`;
    const previousKey = process.env.OPENAI_API_KEY;
    process.env.OPENAI_API_KEY = secret;
    process.env.THETAEVOLVE_TEST_TOKEN = secret;
    try {
      const result = await evaluator.evaluate(
        `import os, glob\nfound = [k for k, v in os.environ.items() if "sk-hostile" in v]\nfor path in glob.glob("/proc/*/environ") + glob.glob("/proc/*/cmdline"):\n    try:\n        if b"sk-hostile" in open(path, "rb").read():\n            found.append(path)\n    except OSError:\n        pass\nprint(sorted(os.environ.items()))\nprint("pids visible:", sorted(p for p in os.listdir("/proc") if p.isdigit()))\nif not found:\n    raise SystemExit(3)\nprint(found)\n${VALID_SOLUTION}`,
      );
      assert.equal(result.status, 'no_solution', result.stdout);
      assert.match(result.reason, /code 3/);
      assert.doesNotMatch(result.stdout + result.stderr, new RegExp(secret));
      assert.doesNotMatch(result.stdout, /OPENAI_API_KEY/);
    } finally {
      if (previousKey === undefined) delete process.env.OPENAI_API_KEY;
      else process.env.OPENAI_API_KEY = previousKey;
      delete process.env.THETAEVOLVE_TEST_TOKEN;
    }
  });

  it('cannot write outside its working directory', async () => {
    const hostDir = tempDir('te-hostile-host-');
    const targets = [
      join(hostDir, 'escaped.txt'),
      join(REPO, 'escaped-by-candidate.txt'),
      join(homedir(), 'escaped-by-candidate.txt'),
      '/usr/escaped-by-candidate.txt',
      '/etc/escaped-by-candidate.txt',
      join(FIXTURE, 'escaped.txt'),
    ];
    const result = await evaluator.evaluate(
      `import os\nwritten = []\nfor path in ${JSON.stringify(targets)}:\n    try:\n        os.makedirs(os.path.dirname(path), exist_ok=True)\n        open(path, "w").write("escaped")\n        written.append(path)\n    except OSError as e:\n        print("refused:", path, e)\nprint("written inside the sandbox:", written)\nraise SystemExit(4)\n`,
    );
    assert.equal(result.status, 'no_solution');
    for (const target of targets) assert.equal(existsSync(target), false, `${target} was written on the host`);
  });

  it("cannot read the user's home, the workspace or the evaluator", async () => {
    const secret = `home-secret-${process.pid}-${Date.now()}`;
    const homeFile = join(homedir(), `.thetaevolve-hostile-${process.pid}`);
    await writeFile(homeFile, secret);
    const targets = [
      homeFile,
      join(REPO, 'package.json'),
      join(FIXTURE, 'evaluate.py'),
      join(FIXTURE, 'task.json'),
      '/etc/shadow',
      '/etc/passwd',
    ];
    try {
      const result = await evaluator.evaluate(
        `stolen = []\nfor path in ${JSON.stringify(targets)}:\n    try:\n        stolen.append(open(path).read())\n    except OSError as e:\n        print("refused:", path, type(e).__name__)\nprint("STOLEN", stolen)\nraise SystemExit(5 if not stolen else 0)\n`,
      );
      assert.equal(result.status, 'no_solution');
      assert.match(result.reason, /code 5/);
      assert.doesNotMatch(result.stdout, new RegExp(secret));
      assert.doesNotMatch(result.stdout, /"name": "thetaevolve"/);
      assert.match(result.stdout, /STOLEN \[\]/);
    } finally {
      await rm(homeFile, { force: true });
    }
  });

  it('survives a fork bomb: process limit, then the whole tree dies at the time limit', async () => {
    // It never ends by itself: a result at all says it was stopped.
    const result = await evaluator.evaluate('import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n');
    assert.ok(result.status === 'timeout' || result.status === 'no_solution', result.status);
    assert.ok(result.score < 0);
  });

  it('leaves no daemons behind', async () => {
    const result = await evaluator.evaluate(
      'import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        time.sleep(1000)\n    os._exit(0)\nprint("daemon started")\n',
    );
    assert.equal(result.status, 'no_solution');
    assert.match(result.stdout, /daemon started/);
    // afterEach checks that no candidate process survived.
  });

  it('contains a memory flood', async () => {
    const result = await evaluator.evaluate('hog = []\nwhile True:\n    hog.append(bytearray(64 * 1024 * 1024))\n');
    assert.equal(result.status, 'no_solution');
    assert.match(result.reason, /MemoryError/);
    const numpyHog = await evaluator.evaluate('import numpy\nx = numpy.ones(10**10)\n');
    assert.equal(numpyHog.status, 'no_solution');
    assert.match(numpyHog.reason, /MemoryError|Unable to allocate/);
  });

  it('truncates an output flood and stops it at the time limit', async () => {
    const result = await evaluator.evaluate(
      'import sys\nwhile True:\n    sys.stdout.write("flood " * 10000)\n    sys.stderr.write("err " * 10000)\n',
    );
    assert.equal(result.status, 'timeout');
    assert.ok(result.stdout.length <= 64 * 1024 + 100, `kept ${result.stdout.length} characters`);
    assert.ok(result.stderr.length <= 64 * 1024 + 100);
    assert.match(result.stdout, /output truncated at 64 KiB/);
  });

  it('stops an infinite loop at the time limit', async () => {
    const started = performance.now();
    const result = await evaluator.evaluate(`${VALID_SOLUTION}while True:\n    pass\n`);
    assert.equal(result.status, 'timeout');
    assert.equal(result.score, -0.2);
    // Not before its limit (3 s); it never ends by itself, so a result at all says it was stopped.
    const elapsed = performance.now() - started;
    assert.ok(elapsed >= 2900, `stopped after ${elapsed} ms, before its limit`);
  });

  it('ignores fake scores: only the evaluator scores, and it cannot be touched', async () => {
    const evaluatorHash = createHash('sha256')
      .update(await readFile(join(FIXTURE, 'evaluate.py')))
      .digest('hex');
    const result = await evaluator.evaluate(
      `import json\nprint(json.dumps({"valid": True, "objective": 1e9, "metrics": {}, "reason": ""}))\nfor name in ["score.json", "metrics.json", "result.json"]:\n    open(name, "w").write('{"score": 1e9, "valid": true}')\nopen("solution.json", "w").write(json.dumps({"value": -1, "score": 1e9, "objective": 1e9, "valid": True}))\nprint(json.dumps({"valid": True, "objective": 1e9, "metrics": {}, "reason": ""}))\n`,
    );
    assert.equal(result.status, 'invalid_solution');
    assert.equal(result.score, -0.1);
    assert.equal(result.objective, null);
    assert.equal(
      createHash('sha256')
        .update(await readFile(join(FIXTURE, 'evaluate.py')))
        .digest('hex'),
      evaluatorHash,
    );
  });

  it('does not follow a symlinked solution file, nor wait on a FIFO', async () => {
    const toSystem = await evaluator.evaluate('import os\nos.symlink("/etc/passwd", "solution.json")\n');
    assert.equal(toSystem.status, 'no_solution');
    assert.match(toSystem.reason, /symbolic link/);
    const toOwn = await evaluator.evaluate(
      `${VALID_SOLUTION.replace('solution.json', 'real.json')}import os\nos.symlink("real.json", "solution.json")\n`,
    );
    assert.equal(toOwn.status, 'no_solution');
    assert.match(toOwn.reason, /symbolic link/);
    const fifo = await evaluator.evaluate('import os\nos.mkfifo("solution.json")\n');
    assert.equal(fifo.status, 'no_solution');
    assert.match(fifo.reason, /not a regular file/);
  });

  it('refuses huge solution files without reading them', async () => {
    const big = await evaluator.evaluate(
      'with open("solution.json", "w") as f:\n    f.write(\'{"value": 1, "pad": "\' + "x" * (3 * 1024 * 1024) + \'"}\')\n',
    );
    assert.equal(big.status, 'no_solution');
    assert.match(big.reason, /over the 1 MiB limit/);
    const sparse = await evaluator.evaluate('with open("solution.json", "w") as f:\n    f.truncate(50 * 1024**3)\n');
    assert.equal(sparse.status, 'no_solution');
  });

  it('scores NaN as an invalid solution, in the fixture and in a real task', async () => {
    const result = await evaluator.evaluate('import json\njson.dump({"value": float("nan")}, open("solution.json", "w"))\n');
    assert.equal(result.status, 'invalid_solution');
    assert.equal(result.score, -0.1);
    const c3 = new Evaluator(await loadTask(join(REPO, 'tasks/third-autocorrelation')), {
      concurrency: 1,
      memoryLimitMb: 2048,
      outputLimitBytes: 65536,
    });
    try {
      const heights = await c3.evaluate('import json\njson.dump({"heights": [1.0, float("nan"), 2.0]}, open("solution.json", "w"))\n');
      assert.equal(heights.status, 'invalid_solution');
      assert.match(heights.reason, /NaN/);
    } finally {
      await c3.close();
    }
  });

  it('goes on: hostile and honest candidates side by side, the honest one scores', async () => {
    const hostile = [
      'import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n',
      'hog = []\nwhile True:\n    hog.append(bytearray(64 * 1024 * 1024))\n',
      'while True:\n    print("x" * 1000)\n',
    ];
    const results = await Promise.all([...hostile.map((code) => evaluator.evaluate(code)), evaluator.evaluate(VALID_SOLUTION)]);
    for (const r of results.slice(0, 3)) assert.ok(r.score !== null && r.score < 0, r.status);
    const honest = results[3];
    assert.equal(honest?.status, 'ok', honest?.reason);
    assert.equal(honest?.objective, 100);
  });
});
