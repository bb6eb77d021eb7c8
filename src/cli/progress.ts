// One self-rewriting progress line on stderr, only when stderr is a terminal.
import type { CliIO } from './io';

/** Carriage return and erase-line: how the progress line rewrites itself (the one control sequence the CLI writes). */
export const REWRITE_LINE = '\r\x1b[2K';

export class ProgressLine {
  private shown = false;

  private readonly active: boolean;

  constructor(private readonly io: CliIO) {
    this.active = io.stderrIsTTY;
  }

  update(text: string): void {
    if (!this.active) return;
    this.io.stderr(`${REWRITE_LINE}${text}`);
    this.shown = true;
  }

  bar(label: string, done: number, total: number): void {
    if (!this.active) return;
    const width = 30;
    const filled = total > 0 ? Math.round((done / total) * width) : 0;
    this.update(`${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total}`);
  }

  clear(): void {
    if (!this.shown) return;
    this.io.stderr(REWRITE_LINE);
    this.shown = false;
  }
}
