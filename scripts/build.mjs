// npm run build: every bundle with esbuild.
//   dist/extension.js      the extension's small entry: the dashboard's serializer first (node, vscode external)
//   dist/extensionMain.js  the rest of the extension, which the entry loads (node, vscode external)
//   dist/cli.js            the headless runner (node, `node dist/cli.js`)
//   dist/nodeProbe.js      the SLURM backend's probe of a compute node (node)
//   dist/evaluateJob.js    what a SLURM evaluation job runs: `evaluate` alone (node)
//   dist/jobStart.js       starts it with V8's code cache (node)
//   dist/engineWorker.js   the engine's worker thread (node)
//   dist/webview/*.js      the dashboard and Compare Runs pages (browser)
//   out/test/host.js       the in-host test suite (not packaged)
//   out/test/runner/       the test-only extension that runs it in code-server (not packaged)
//   out/bench/paperScaleHolder.js  bench db-paper-scale's process: the engine worker's code holding a paper-scale run (not packaged)
// plus sql-wasm.wasm and src/engine/task/foreign (the Python wrapper that runs
// OpenEvolve/ShinkaEvolve evaluators in the sandbox) copied beside the node bundles.
import * as esbuild from 'esbuild';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const watch = process.argv.includes('--watch');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const define = { __THETAEVOLVE_VERSION__: JSON.stringify(pkg.version) };

/**
 * zod's index exports every locale (about 250 KB minified) for z.config();
 * its default messages import English directly, and no other is used: the
 * locales module becomes English only.
 */
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(build) {
    build.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      args.importer.includes(`${join('node_modules', 'zod')}`) ? { path: 'zod-locales', namespace: 'zod-english-only' } : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'zod-english-only' }, () => ({
      contents: `export { default as en } from 'zod/v4/locales/en.js';`,
      resolveDir: root,
    }));
  },
};

/**
 * The entry's `import('./vscode/extensionMain')` stays a load of the bundle
 * beside it, dist/extensionMain.js: the entry is parsed and run before the
 * rest, so VS Code gets the dashboard's serializer at once after a reload.
 */
const extensionMainApart = {
  name: 'extension-main-apart',
  setup(build) {
    build.onResolve({ filter: /^\.\/vscode\/extensionMain$/ }, () => ({ path: './extensionMain.js', external: true }));
  },
};

const node = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  // Loaded into every window at start-up: small beats readable (the source maps stay, outside the package).
  minify: true,
  sourcemap: 'linked',
  logLevel: 'warning',
  define,
  absWorkingDir: root,
  plugins: [zodEnglishOnly],
  // jsonc-parser's main build is UMD with runtime requires esbuild cannot follow; its ES modules bundle.
  alias: { 'jsonc-parser': 'jsonc-parser/lib/esm/main.js' },
};

/** @type {esbuild.BuildOptions[]} */
const builds = [
  {
    ...node,
    entryPoints: ['src/extension.ts'],
    outfile: 'dist/extension.js',
    external: ['vscode'],
    plugins: [...node.plugins, extensionMainApart],
    // As require(): loaded by Node's CommonJS loader, as VS Code loads the entry itself.
    supported: { 'dynamic-import': false },
  },
  { ...node, entryPoints: ['src/vscode/extensionMain.ts'], outfile: 'dist/extensionMain.js', external: ['vscode'] },
  // src/cli.ts starts with its hashbang, which esbuild keeps.
  { ...node, entryPoints: ['src/cli.ts'], outfile: 'dist/cli.js' },
  // A SLURM evaluation job runs this on a compute node: `thetaevolve evaluate` alone, so its Node starts sooner.
  { ...node, entryPoints: ['src/evaluateJob.ts'], outfile: 'dist/evaluateJob.js' },
  // ... started through this, which keeps V8's code cache of it in the staging folder.
  { ...node, entryPoints: ['src/jobStart.ts'], outfile: 'dist/jobStart.js' },
  // The SLURM backend's probe job runs this on a compute node, beside the staged cli.js.
  { ...node, entryPoints: ['src/engine/evaluation/nodeProbeMain.ts'], outfile: 'dist/nodeProbe.js' },
  {
    ...node,
    platform: 'browser',
    format: 'iife',
    target: 'es2022',
    entryPoints: ['webview/src/dashboard.ts'],
    outfile: 'dist/webview/dashboard.js',
    // The page loads this on every open and reload: small beats readable (the source map stays).
    minify: true,
  },
  {
    ...node,
    platform: 'browser',
    format: 'iife',
    target: 'es2022',
    // The Compare Runs page, and the page `thetaevolve report` inlines into its HTML file.
    entryPoints: ['webview/src/compare/comparePage.ts'],
    outfile: 'dist/webview/compare.js',
    minify: true,
  },
  { ...node, entryPoints: ['src/worker/engineWorker.ts'], outfile: 'dist/engineWorker.js' },
  // Bundled as dist/engineWorker.js is: db-paper-scale measures the memory of the code the editor runs.
  { ...node, entryPoints: ['bench/support/paperScaleHolder.ts'], outfile: 'out/bench/paperScaleHolder.js' },
  { ...node, minify: false, entryPoints: ['test/host/index.ts'], outfile: 'out/test/host.js', external: ['vscode', 'mocha'] },
  { ...node, entryPoints: ['test/host/runner/runner.ts'], outfile: 'out/test/runner/runner.js', external: ['vscode'] },
  // The stand-in for the Python extension (ms-python.python) the in-host tests install beside ours.
  {
    ...node,
    entryPoints: ['test/host/pythonExtension/extension.ts'],
    outfile: 'out/test/pythonExtension/extension.js',
    external: ['vscode'],
  },
];

function copyAssets() {
  mkdirSync(join(root, 'dist'), { recursive: true });
  copyFileSync(join(root, 'node_modules/sql.js/dist/sql-wasm.wasm'), join(root, 'dist/sql-wasm.wasm'));
  for (const target of ['out/test', 'out/bench'])
    if (existsSync(join(root, target))) copyFileSync(join(root, 'dist/sql-wasm.wasm'), join(root, target, 'sql-wasm.wasm'));
  copyFileSync(join(root, 'test/host/runner/package.json'), join(root, 'out/test/runner/package.json'));
  copyFileSync(join(root, 'test/host/pythonExtension/package.json'), join(root, 'out/test/pythonExtension/package.json'));
  chmodSync(join(root, 'dist/cli.js'), 0o755);
  // foreignTasks.ts finds these beside its bundle (__dirname/foreign).
  const foreign = join(root, 'src/engine/task/foreign');
  for (const target of ['dist', ...(existsSync(join(root, 'out/test')) ? ['out/test'] : [])]) {
    rmSync(join(root, target, 'foreign'), { recursive: true, force: true });
    cpSync(foreign, join(root, target, 'foreign'), { recursive: true, filter: (src) => !src.includes('__pycache__') });
  }
}

if (watch) {
  const contexts = await Promise.all(builds.map((b) => esbuild.context(b)));
  await Promise.all(contexts.map((c) => c.rebuild()));
  copyAssets();
  await Promise.all(contexts.map((c) => c.watch()));
  console.log('esbuild: watching');
} else {
  const started = Date.now();
  await Promise.all(builds.map((b) => esbuild.build(b)));
  copyAssets();
  console.log(`build: ${builds.length} bundles in ${Date.now() - started} ms`);
}
