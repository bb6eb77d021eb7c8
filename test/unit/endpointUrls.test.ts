// What a person is shown of the URLs that receive the API key (issue 42 item
// 6): each as its parsed origin, a look-alike host in punycode, hidden
// characters escaped, one per line; a key over plain http:// to another
// machine is warned about; the CLI says when the endpoint a --config file
// names receives OPENAI_API_KEY.
import { strict as assert } from 'node:assert';
import { cpSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { escapeInvisible } from '../../src/engine/common/displayText';
import { keyOverPlainHttpWarning, plainHttpOrigins, urlOriginLines } from '../../src/engine/common/endpointUrls';
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
    assert.equal(keyOverPlainHttpWarning('https://api.example/v1'), null);
    assert.match(
      keyOverPlainHttpWarning('http://10.0.0.5:8000/v1') ?? '',
      /API key is sent unencrypted over http:\/\/ to http:\/\/10\.0\.0\.5:8000/,
    );
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
      assert.ok(named.stderr.includes(`the endpoint --config ${config} names receives OPENAI_API_KEY: ${origin}/v1`), named.stderr);
      const noKey = await runCli([...base, '--db', join(dir, 'b.sqlite')], dir, {});
      assert.equal(noKey.code, 0, noKey.stderr);
      assert.doesNotMatch(noKey.stderr, /receives OPENAI_API_KEY/);
      const flag = await runCli(
        [...base, '--endpoint', server.baseURL.replace('127.0.0.1', 'localhost'), '--db', join(dir, 'c.sqlite')],
        dir,
        {
          OPENAI_API_KEY: 'sk-test',
        },
      );
      assert.doesNotMatch(flag.stderr, /receives OPENAI_API_KEY/);
    });
  });
});
