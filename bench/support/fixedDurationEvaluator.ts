// Evaluations of a fixed duration in a fixed number of slots, for the benches
// that measure the loop's overlap of generation and evaluation: what the
// sandbox costs is measured by bench sandbox-overhead, not with these.
import type { EvaluationResult } from '../../src/engine/common/types';
import type { CandidateEvaluator } from '../../src/engine/loop';

export class FixedDurationEvaluator implements CandidateEvaluator {
  private running = 0;
  private readonly queue: (() => void)[] = [];

  constructor(
    private readonly slots: number,
    private readonly durationMs: number,
  ) {}

  async evaluate(code: string, options: { signal?: AbortSignal; onStart?: () => void } = {}): Promise<EvaluationResult> {
    if (this.running >= this.slots) await new Promise<void>((r) => this.queue.push(r));
    this.running++;
    options.onStart?.();
    const started = Date.now();
    await new Promise((r) => setTimeout(r, this.durationMs));
    this.running--;
    this.queue.shift()?.();
    // A deterministic objective from the code so the database sees distinct scores.
    let h = 0;
    for (let i = 0; i < code.length; i++) h = (h * 31 + code.charCodeAt(i)) >>> 0;
    const objective = 1 + (h % 1000) / 1000;
    return { status: 'ok', score: objective, objective, metrics: {}, reason: '', durationMs: Date.now() - started, stdout: '', stderr: '' };
  }
}
