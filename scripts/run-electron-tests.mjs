// npm run test:electron: the same in-host suite under @vscode/test-electron,
// for machines with a desktop VS Code build. It cannot download one here, so
// it needs VSCODE_EXECUTABLE=/path/to/code (VS Code >= 1.100).
import { runTests } from '@vscode/test-electron';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const vscodeExecutablePath = process.env.VSCODE_EXECUTABLE;
if (!vscodeExecutablePath) {
  console.error(
    'test:electron: set VSCODE_EXECUTABLE to a desktop VS Code (>= 1.100) binary; on machines without one, npm run test:host runs the same suite in code-server.',
  );
  process.exit(2);
}
try {
  await runTests({
    vscodeExecutablePath,
    extensionDevelopmentPath: root,
    extensionTestsPath: join(root, 'out/test/host.js'),
    launchArgs: ['--disable-extensions', '--disable-workspace-trust'],
  });
} catch (err) {
  console.error(`test:electron: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}
