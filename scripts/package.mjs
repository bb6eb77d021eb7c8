// npm run package: out/thetaevolve.vsix with vsce, as the Marketplace and
// Open VSX take it: no skip flags (LICENSE, repository and README links are
// checked; vsce makes the README's relative links absolute from the
// repository field). vsce runs `vscode:prepublish` (the build) first.
// Everything is bundled, so no node_modules folder goes in (--no-dependencies).
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
mkdirSync(join(root, 'out'), { recursive: true });
const vsce = join(root, 'node_modules/@vscode/vsce/vsce');
const result = spawnSync(process.execPath, [vsce, 'package', '--no-dependencies', '--out', 'out/thetaevolve.vsix'], {
  cwd: root,
  stdio: 'inherit',
});
process.exit(result.status ?? 1);
