import { Evaluator } from '../src/engine/sandbox/evaluator';
import { loadTask } from '../src/engine/task/task';
async function main() {
  const task = await loadTask('/work/wt/perf/test/fixtures/hostile');
  const ev = new Evaluator(task, { concurrency: 1, memoryLimitMb: 4096, outputLimitBytes: 65536 });
  await ev.warmed();
  await ev.evaluate('import numpy\nprint(1)\nwith open("solution.json","w") as f: f.write(\'{"value": 2}\')\n');
  await ev.warmed();
  await new Promise((r) => setTimeout(r, 300));
  console.error('GO', Date.now() / 1000);
  const t = performance.now();
  const r = await ev.evaluate('import numpy\nwith open("solution.json","w") as f: f.write(\'{"value": 2}\')\n');
  console.error('DONE', Date.now() / 1000, r.status, (performance.now() - t).toFixed(1));
  await ev.close();
}
main();
