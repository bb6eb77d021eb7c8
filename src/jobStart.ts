// dist/jobStart.js: how a SLURM evaluation job starts our `evaluate`
// (dist/evaluateJob.js, staged beside it) on a compute node, with V8's code
// cache of that bundle kept beside it in the staging folder. The first job of
// a run compiles the bundle and leaves the cache as it exits (its results are
// written by then); later jobs skip most of the compiling, which is most of
// Node's start (bench slurm-step-overhead, its cliLoad phase). A cache this
// Node rejects is compiled past and replaced; one per Node version.
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import Module from 'node:module';
import { dirname, join } from 'node:path';
import { Script } from 'node:vm';
import { tempFileFor } from './engine/database/atomicFile';

const file = join(__dirname, 'evaluateJob.js');
const cacheFile = `${file}.${process.version}.cache`;
let cachedData: Buffer | undefined;
try {
  cachedData = readFileSync(cacheFile);
} catch {
  cachedData = undefined;
}
const script = new Script(Module.wrap(readFileSync(file, 'utf8')), { filename: file, ...(cachedData ? { cachedData } : {}) });
if (!cachedData || script.cachedDataRejected) {
  // At exit the functions this job ran are compiled too, so the cache holds them.
  process.once('exit', () => {
    try {
      // An unguessable name, created new: a link planted in the staging folder is not written through.
      const part = tempFileFor(cacheFile);
      writeFileSync(part, script.createCachedData(), { mode: 0o600, flag: 'wx' });
      renameSync(part, cacheFile);
    } catch {
      // No cache: the next job compiles, as this one did.
    }
  });
}
const bundle = new Module(file, module);
bundle.filename = file;
const run = script.runInThisContext() as (
  exports: unknown,
  require: NodeJS.Require,
  module: Module,
  filename: string,
  dirname: string,
) => void;
run.call(bundle.exports, bundle.exports, ((id: string) => bundle.require(id)) as NodeJS.Require, bundle, file, dirname(file));
