// Number formatting for people.

/** An objective value: 6 significant digits, exponent notation for very large or small. */
export function formatValue(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '–';
  if (value === 0) return '0';
  const abs = Math.abs(value);
  if (abs >= 1e6 || abs < 1e-4) return value.toExponential(4);
  return String(Number(value.toPrecision(6)));
}

export function formatCount(value: number): string {
  return value.toLocaleString('en-US');
}

/** 1.2k, 3.4M. */
export function formatCompact(value: number): string {
  return new Intl.NumberFormat('en-US', { notation: 'compact', maximumFractionDigits: 1 }).format(value);
}

export function formatDuration(ms: number): string {
  const s = Math.floor(ms / 1000);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  if (h > 0) return `${h}h ${String(m).padStart(2, '0')}m`;
  if (m > 0) return `${m}m ${String(sec).padStart(2, '0')}s`;
  return `${(ms / 1000).toFixed(1)} s`;
}

/**
 * Labels for equal-width bins starting at `min`: each bin's lower edge with
 * just the decimals its width needs (0.35, not 0.336567); the model's bins
 * start on multiples of a round width, so the edges read 0.3, 0.35, 0.4.
 */
export function binLabels(min: number, width: number, count: number): string[] {
  const edges = Array.from({ length: count }, (_, i) => min + width * i);
  if (!(width > 0) || !Number.isFinite(width)) return edges.map((c) => formatValue(c));
  const decimals = Math.min(10, Math.max(0, -Math.floor(Math.log10(width) + 1e-9) + 1));
  const largest = Math.max(...edges.map((c) => Math.abs(c)));
  // Beyond a million the general format.
  if (largest >= 1e6) return edges.map((c) => formatValue(c));
  return edges.map((c) => String(Number(c.toFixed(decimals))));
}
