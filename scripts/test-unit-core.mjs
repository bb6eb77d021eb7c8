// @ts-check
// npm run test:unit:core: the unit tests that need nothing beyond Node.js and
// `npm ci` (no bubblewrap, python3, SLURM, code-server or Chromium): every
// test/unit file except those scripts/unit-test-requirements.mjs lists, run by
// mocha with the repository's .mocharc.json. Extra arguments go to mocha
// (e.g. `-- --reporter dot`). `--list` prints the files instead.
// `npm test` still runs every file.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { REQUIREMENTS, UNIT_TEST_NEEDS } from './unit-test-requirements.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const unitDir = join(root, 'test', 'unit');

/** @param {string} dir @returns {string[]} paths relative to test/unit, forward slashes */
function testFiles(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith('.test.ts') ? [relative(unitDir, path).split('\\').join('/')] : [];
  });
}

const all = testFiles(unitDir).sort();
const problems = [];
for (const [file, needs] of Object.entries(UNIT_TEST_NEEDS)) {
  if (!existsSync(join(unitDir, file)))
    problems.push(`${file} is listed but does not exist in test/unit (renamed? update scripts/unit-test-requirements.mjs)`);
  if (needs.length === 0) problems.push(`${file} is listed with no requirement (remove its entry)`);
  for (const need of needs)
    if (!(need in REQUIREMENTS)) problems.push(`${file}: unknown requirement '${need}' (known: ${Object.keys(REQUIREMENTS).join(', ')})`);
}
if (problems.length > 0) {
  for (const problem of problems) console.error(`test:unit:core: ${problem}`);
  process.exit(2);
}

const leftOut = all.filter((file) => file in UNIT_TEST_NEEDS);
const core = all.filter((file) => !(file in UNIT_TEST_NEEDS));
const args = process.argv.slice(2);
if (args.includes('--list')) {
  for (const file of core) console.log(`test/unit/${file}`);
  process.exit(0);
}
console.log(`test:unit:core: ${core.length} of ${all.length} unit test files; left out (npm test runs them):`);
for (const file of leftOut) console.log(`  ${file}: needs ${(UNIT_TEST_NEEDS[file] ?? []).join(', ')}`);
const ignore = leftOut.flatMap((file) => ['--ignore', `test/unit/${file}`]);
const mocha = spawnSync(process.execPath, [join(root, 'node_modules', 'mocha', 'bin', 'mocha.js'), ...ignore, ...args], {
  cwd: root,
  stdio: 'inherit',
});
process.exit(mocha.status ?? 1);
