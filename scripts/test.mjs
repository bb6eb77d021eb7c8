// npm test (after scripts/setup.sh): every layer of the pyramid in order,
// stopping at the first failing layer, then one closing line with the totals.
//   lint (eslint + prettier --check) + typecheck -> build -> engine unit tests (mocha, plain Node)
//   -> package the .vsix -> in-host suite in code-server -> end-to-end in code-server + Chromium
import { spawn } from 'node:child_process';

const steps = [
  ['lint', ['npm', 'run', '--silent', 'lint']],
  ['typecheck', ['npm', 'run', '--silent', 'typecheck']],
  ['build', ['npm', 'run', '--silent', 'build']],
  ['unit', ['npx', 'mocha']],
  ['package', ['npm', 'run', '--silent', 'package']],
  ['host', ['npm', 'run', '--silent', 'test:host']],
  ['e2e', ['npm', 'run', '--silent', 'test:e2e']],
];
const only = process.argv.slice(2);

let passed = 0;
let failed = 0;
function count(text) {
  // mocha: "  12 passing", "  1 failing"; our host runner: "N passed, M failed"
  for (const m of text.matchAll(/^\s*(\d+) passing/gm)) passed += Number(m[1]);
  for (const m of text.matchAll(/^\s*(\d+) failing/gm)) failed += Number(m[1]);
  for (const m of text.matchAll(/^in-host \(code-server\): (\d+) passed, (\d+) failed/gm)) {
    passed += Number(m[1]);
    failed += Number(m[2]);
  }
}

function run(name, [cmd, ...args]) {
  return new Promise((resolve) => {
    console.log(`\n=== ${name}: ${[cmd, ...args].join(' ')}`);
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    child.stdout.on('data', (d) => {
      process.stdout.write(d);
      text += d.toString();
    });
    child.stderr.on('data', (d) => {
      process.stderr.write(d);
      text += d.toString();
    });
    child.on('close', (code) => {
      count(text);
      resolve(code ?? 1);
    });
  });
}

let status = 0;
for (const [name, command] of steps) {
  if (only.length && !only.includes(name)) continue;
  const code = await run(name, command);
  if (code !== 0) {
    console.error(`\n=== ${name} failed (exit ${code})`);
    status = 1;
    if (failed === 0) failed = 1;
    break;
  }
}
console.log(`\ntests: ${passed} passed, ${failed} failed`);
process.exit(status);
