// What keeping failed evaluations' output costs: a step of 512 failures
// (each a 40-frame Python traceback with some printed progress, about 4 KB),
// appended one gzip member each as the loop does, then one read back; and
// the worst case, 512 failures that each filled both streams to the 64 KiB
// sandbox limit with incompressible text.
//   node --import tsx bench/evaluation-outputs.bench.ts
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EvaluationOutputWriter, readEvaluationOutput } from '../src/engine/evaluationOutputs';
import { evaluationOutputsDir } from '../src/engine/runFiles';

const CHILDREN = 512;

function traceback(i: number): string {
  const frames = Array.from(
    { length: 40 },
    (_, f) => `  File "/sandbox/program/program.py", line ${f * 3 + 10}, in step_${f}\n    value = step_${f + 1}(x * ${i % 7} + ${f})`,
  );
  return `Traceback (most recent call last):\n${frames.join('\n')}\nZeroDivisionError: float division by zero (child ${i})\n`;
}

async function step(name: string, stdout: (i: number) => string, stderr: (i: number) => string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'thetaevolve-bench-outputs-'));
  try {
    const dbFile = join(dir, 'run.sqlite');
    const errors: string[] = [];
    const writer = new EvaluationOutputWriter(dbFile, (m) => errors.push(m));
    const outputs = Array.from({ length: CHILDREN }, (_, i) => ({
      step: 1,
      jobKey: `s1-p${i >> 4}`,
      sampleIndex: i % 16,
      outcome: 'no_solution' as const,
      reason: 'the program exited with code 1',
      stdout: stdout(i),
      stderr: stderr(i),
    }));
    const raw = outputs.reduce((a, o) => a + o.stdout.length + o.stderr.length, 0);
    const started = performance.now();
    await writer.startStep(1);
    await Promise.all(outputs.map((o) => writer.add(o)));
    await writer.flush();
    const writeMs = performance.now() - started;
    if (errors.length > 0) throw new Error(errors.join('; '));
    const bytes = statSync(join(evaluationOutputsDir(dbFile), 'step-1.jsonl.gz')).size;
    const readStarted = performance.now();
    const back = await readEvaluationOutput(dbFile, 1, 's1-p31', 15);
    const readMs = performance.now() - readStarted;
    if (back?.stderr !== outputs.at(-1)?.stderr) throw new Error('read back something else');
    console.log(
      `bench evaluation-outputs-${name}-write: ${writeMs.toFixed(0)} ms (${CHILDREN} failures in one step, ${(raw / 1024 / 1024).toFixed(1)} MiB of output)`,
    );
    console.log(
      `bench evaluation-outputs-${name}-disk: ${(bytes / 1024).toFixed(0)} KiB (one step of ${CHILDREN} failures, ${((100 * bytes) / raw).toFixed(1)}% of the raw output)`,
    );
    console.log(`bench evaluation-outputs-${name}-open: ${readMs.toFixed(0)} ms (one output read back from that step's file)`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  await step('tracebacks', (i) => `iteration ${i}: loss 0.${i}\n`.repeat(20), traceback);
  await step(
    'worst-case',
    () => randomBytes(48 * 1024).toString('base64'),
    () => randomBytes(48 * 1024).toString('base64'),
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
