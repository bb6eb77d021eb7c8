// What a person is shown of the URLs that receive the API key (issue 42 item
// 6): each as its parsed origin, a look-alike host in punycode, hidden
// characters escaped, one per line; a key over plain http:// to another
// machine is warned about; the CLI says when the endpoint a --config file
// names receives OPENAI_API_KEY.
import { strict as assert } from 'node:assert';
import { cpSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { escapeInvisible } from '../../src/engine/common/displayText';
import { keyDestinations, keyOverPlainHttpWarning, plainHttpOrigins, urlOriginLines } from '../../src/engine/common/endpointUrls';
import { defaultSettings } from '../../src/engine/common/config';
import { startTestServer, type TestServer } from '../server/openaiTestServer';
import { runCli } from '../support/cli';
import { tempDir } from '../support/tempDirs';

const FIXTURE = resolve(__dirname, '../fixtures/tasks/quadratic');

describe('endpoint URLs as shown', () => {
  it('shows each URL as its origin, one per line: punycode host, no credentials, invisible characters escaped', () => {
    const value =
      'http://ex\u0430mple.com:8000/v1, https://trusted.example@evil.example/v1,https://a\u202Egoogle.com/v1 ,not a url\u001b[2J';
    assert.equal(
      urlOriginLines(value),
      [
        'http://xn--exmple-4nf.com:8000/v1',
        'https://evil.example/v1 (with a user name or password in it)',
        'https://a\\u{202E}google.com/v1 (not a URL)',
        'not a url\\u{1B}[2J (not a URL)',
      ].join('\n'),
    );
    assert.equal(escapeInvisible('a\u200Bb\u0007'), 'a\\u{200B}b\\u{7}');
  });

  it('warns of a key over plain http:// to another machine only', () => {
    assert.deepEqual(
      plainHttpOrigins('http://127.0.0.1:8000/v1,http://localhost:30000/v1,http://[::1]:8000/v1,https://api.example/v1'),
      [],
    );
    assert.deepEqual(plainHttpOrigins('http://127.0.0.1:8000/v1, http://gpu-node-3:8000/v1'), ['http://gpu-node-3:8000']);
    const endpoint = (urls: string) => [{ urls, setting: 'thetaevolve.endpoint', key: "the run's key" }];
    assert.equal(keyOverPlainHttpWarning(endpoint('https://api.example/v1')), null);
    assert.match(
      keyOverPlainHttpWarning(endpoint('http://10.0.0.5:8000/v1')) ?? '',
      /API key is sent unencrypted over http:\/\/ to http:\/\/10\.0\.0\.5:8000 \(thetaevolve\.endpoint\)/,
    );
  });

  // Issue 51 item 1: a model's own endpoint receives a key too, and is named as such.
  it("warns of a key over plain http:// to a model's own endpoint, naming the model, not thetaevolve.endpoint", () => {
    const settings = {
      ...defaultSettings(),
      sampler: 'llm' as const,
      endpoint: 'https://api.example/v1',
      models: [{ name: 'big', endpoint: 'http://10.0.0.7:8000/v1', apiKeyName: 'BIG_KEY' }, { name: 'small' }],
    };
    assert.deepEqual(keyDestinations(settings, true), [
      { urls: 'http://10.0.0.7:8000/v1', setting: 'thetaevolve.models ("big")', key: 'BIG_KEY' },
      { urls: 'https://api.example/v1', setting: 'thetaevolve.endpoint', key: "the run's key" },
    ]);
    assert.equal(
      keyOverPlainHttpWarning(keyDestinations(settings, false)),
      'the API key is sent unencrypted over http:// to http://10.0.0.7:8000 (thetaevolve.models ("big")): use https://, an SSH tunnel, or a server on this machine',
    );
    assert.deepEqual(keyDestinations({ ...settings, sampler: 'mutate' }, true), []);
  });

  describe('CLI --config', function () {
    this.timeout(120_000);
    let server: TestServer | undefined;
    afterEach(async () => {
      await server?.close();
      server = undefined;
    });

    it('says when the endpoint a --config file names receives OPENAI_API_KEY, and not when a flag overrides it', async () => {
      const dir = tempDir('thetaevolve-configkey-');
      cpSync(FIXTURE, join(dir, 'task'), { recursive: true });
      server = await startTestServer({ latencyMs: 1 });
      const config = join(dir, 'settings.json');
      writeFileSync(config, JSON.stringify({ 'thetaevolve.endpoint': server.baseURL, 'thetaevolve.model': 'test-model' }));
      const base = ['run', join(dir, 'task'), '--config', config, '--steps', '1', '--batch', '1', '--samples', '1'];
      const named = await runCli([...base, '--db', join(dir, 'a.sqlite')], dir, { OPENAI_API_KEY: 'sk-test' });
      assert.equal(named.code, 0, named.stderr);
      const origin = new URL(server.baseURL).origin;
      assert.ok(
        named.stderr.includes(`--config ${config} names servers that receive a key: ${origin}/v1 (thetaevolve.endpoint: OPENAI_API_KEY)`),
        named.stderr,
      );
      const noKey = await runCli([...base, '--db', join(dir, 'b.sqlite')], dir, {});
      assert.equal(noKey.code, 0, noKey.stderr);
      assert.doesNotMatch(noKey.stderr, /receive a key/);
      const flag = await runCli(
        [...base, '--endpoint', server.baseURL.replace('127.0.0.1', 'localhost'), '--db', join(dir, 'c.sqlite')],
        dir,
        {
          OPENAI_API_KEY: 'sk-test',
        },
      );
      assert.doesNotMatch(flag.stderr, /receive a key/);
    });

    // Issue 51 item 1, with the attacker's input: a settings file (a cloned repository's, a handed-over one) naming
    // a model at its own server; each server records the Authorization it received.
    it('sends the key only where the command line or the file says, names every origin that receives one, and reads no environment variable a file names', async () => {
      const dir = tempDir('thetaevolve-configkey-');
      cpSync(FIXTURE, join(dir, 'task'), { recursive: true });
      const main = await startTestServer({ latencyMs: 1 });
      const elsewhere = await startTestServer({ latencyMs: 1 });
      const previous = process.env.AWS_SECRET_ACCESS_KEY;
      // The engine once read apiKeyName from the process's own environment: the secret is there too.
      process.env.AWS_SECRET_ACCESS_KEY = 'aws-secret';
      try {
        const env = { OPENAI_API_KEY: 'sk-run', AWS_SECRET_ACCESS_KEY: 'aws-secret' };
        const base = ['run', join(dir, 'task'), '--steps', '1', '--batch', '1', '--samples', '1'];
        const auth = (server: TestServer) => new Set(server.requests.map((r) => r.authorization));

        // A model with its own endpoint: the run's key goes there, and the line names that origin, not the main one.
        const config = join(dir, 'settings.json');
        writeFileSync(
          config,
          JSON.stringify({
            'thetaevolve.endpoint': main.baseURL,
            'thetaevolve.models': [{ name: 'test-model', endpoint: elsewhere.baseURL }],
          }),
        );
        const named = await runCli([...base, '--config', config, '--db', join(dir, 'a.sqlite')], dir, env);
        assert.equal(named.code, 0, named.stderr);
        assert.deepEqual(auth(elsewhere), new Set(['Bearer sk-run']));
        assert.deepEqual(auth(main), new Set(), 'the main endpoint received nothing');
        const elsewhereOrigin = new URL(elsewhere.baseURL).origin;
        assert.ok(
          named.stderr.includes(
            `--config ${config} names servers that receive a key: ${elsewhereOrigin}/v1 (thetaevolve.models ("test-model"): OPENAI_API_KEY)`,
          ),
          named.stderr,
        );
        assert.ok(!named.stderr.includes(new URL(main.baseURL).origin), `the line names an origin that receives nothing: ${named.stderr}`);

        // apiKeyName in the file: refused before any request, naming how to say it on the command line.
        const models = [{ name: 'test-model', endpoint: elsewhere.baseURL, apiKeyName: 'AWS_SECRET_ACCESS_KEY' }];
        writeFileSync(config, JSON.stringify({ 'thetaevolve.models': models }));
        const before = elsewhere.requests.length;
        const refused = await runCli([...base, '--config', config, '--db', join(dir, 'b.sqlite')], dir, env);
        assert.equal(refused.code, 1, refused.stderr);
        assert.match(refused.stderr, /names apiKeyName AWS_SECRET_ACCESS_KEY \(model "test-model"\).*--set 'models=\[\.\.\.\]'/);
        assert.equal(elsewhere.requests.length, before, 'no request left');
        assert.ok(!auth(elsewhere).has('Bearer aws-secret') && !auth(main).has('Bearer aws-secret'));

        // The same model named on the command line: its key is the variable it names.
        const own = await runCli([...base, '--set', `models=${JSON.stringify(models)}`, '--db', join(dir, 'c.sqlite')], dir, env);
        assert.equal(own.code, 0, own.stderr);
        assert.deepEqual(new Set(elsewhere.requests.slice(before).map((r) => r.authorization)), new Set(['Bearer aws-secret']));
      } finally {
        if (previous === undefined) delete process.env.AWS_SECRET_ACCESS_KEY;
        else process.env.AWS_SECRET_ACCESS_KEY = previous;
        await main.close();
        await elsewhere.close();
      }
    });
  });
});
