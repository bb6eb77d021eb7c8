// One self-rewriting progress line on stderr, only when stderr is a terminal.
import type { CliIO } from './io';

export class ProgressLine {
  private shown = false;

  private readonly active: boolean;

  constructor(private readonly io: CliIO) {
    this.active = io.stderrIsTTY;
  }

  update(text: string): void {
    if (!this.active) return;
    this.io.stderr(`\r\x1b[2K${text}`);
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
    this.io.stderr('\r\x1b[2K');
    this.shown = false;
  }
}
