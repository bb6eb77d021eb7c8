// npm run demo: a local VS Code (code-server) in the browser with ThetaEvolve
// installed, a sample workspace holding a bundled task, and the project's
// OpenAI-compatible test server standing in for vLLM. Prints the URL.
//   --port N     code-server port (default 8080, or $PORT)
//   --smoke      start everything, screenshot the workbench, exit (a check)
import { join } from 'node:path';
import { existsSync } from 'node:fs';
import { prepareDemoWorkspace } from './demoWorkspace';
import { launchBrowser, openWorkbench, REPO_ROOT, saveScreenshot, startCodeServer } from '../test/support/codeServer';

interface TestServerHandle {
  baseURL: string;
  close: () => Promise<void>;
}
interface TestServerModule {
  startTestServer: (options: { port?: number; latencyMs?: number }) => Promise<TestServerHandle>;
}

function argValue(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  return i === -1 ? undefined : process.argv[i + 1];
}

async function main(): Promise<void> {
  const smoke = process.argv.includes('--smoke');
  const port = Number(argValue('--port') ?? process.env.PORT ?? 8080);
  const demoRoot = join(REPO_ROOT, '.demo');
  const workspace = join(demoRoot, 'workspace');
  prepareDemoWorkspace(workspace, REPO_ROOT);

  let server: TestServerHandle | undefined;
  const serverModule = join(REPO_ROOT, 'test', 'server', 'openaiTestServer.ts');
  if (existsSync(serverModule)) {
    const mod = (await import(serverModule)) as TestServerModule;
    server = await mod.startTestServer({ latencyMs: 400 });
  }
  // thetaevolve.endpoint is machine-scoped (a workspace cannot point the extension at a server): it goes in user settings.
  const codeServer = await startCodeServer({
    workspace,
    port,
    stateDir: join(demoRoot, 'state'),
    userSettings: { 'thetaevolve.endpoint': server?.baseURL ?? 'http://127.0.0.1:8000/v1' },
  });
  const url = `${codeServer.url}/?folder=${encodeURIComponent(workspace)}`;
  const stop = async (): Promise<void> => {
    await codeServer.stop();
    await server?.close();
  };

  if (smoke) {
    const browser = await launchBrowser();
    try {
      const page = await openWorkbench(browser, codeServer.url, workspace);
      const shot = await saveScreenshot(page, 'demo');
      console.log(`demo: workbench up, screenshot ${shot.file}`);
    } finally {
      await browser.close();
      await stop();
    }
    return;
  }

  console.log('');
  console.log(`ThetaEvolve demo: open ${url}`);
  console.log(
    server
      ? `  inference: the project's OpenAI-compatible test server at ${server.baseURL} (a stand-in for vLLM)`
      : '  inference: none started',
  );
  console.log(`  workspace: ${workspace}`);
  console.log('  Try: open circle-packing/initial.py, click "Evolve" above its EVOLVE-BLOCK (or run ThetaEvolve: Start Run),');
  console.log('       watch the status bar and ThetaEvolve: Open Dashboard, review a child from the ThetaEvolve view, Apply to File.');
  console.log('       For the offline sampler (no model) set thetaevolve.sampler to "mutate" in the workspace settings.');
  console.log('  Ctrl-C to stop.');
  const onSignal = (): void => {
    void stop().then(() => process.exit(0));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  await new Promise<never>(() => {});
}

main().catch((err: unknown) => {
  console.error(`demo: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
