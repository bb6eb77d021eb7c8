// What a result may carry of an evaluator's metrics. Another system's
// evaluator runs with the candidate (OpenEvolve, ShinkaEvolve layouts), so a
// candidate can return thousands of metrics or megabytes of text, and every
// program's metrics are stored in the run database and held in memory: a few
// hundred named numbers is what any evaluator reports, the rest is dropped
// and counted (metrics_dropped), not stored.
export const MAX_METRICS = 100;
/** Characters kept of a text metric. */
export const MAX_METRIC_TEXT = 500;
/** Characters of all names and texts together. */
export const MAX_METRICS_CHARS = 16 * 1024;

type MetricValue = number | string | boolean | null;

/** The metrics within the limits, in their order, and `metrics_dropped` when any were left out. */
export function limitMetrics(metrics: Readonly<Record<string, MetricValue>>): Record<string, MetricValue> {
  const kept: Record<string, MetricValue> = {};
  let count = 0;
  let chars = 0;
  let dropped = 0;
  for (const [name, raw] of Object.entries(metrics)) {
    const value = typeof raw === 'string' && raw.length > MAX_METRIC_TEXT ? `${raw.slice(0, MAX_METRIC_TEXT)}...` : raw;
    const size = name.length + (typeof value === 'string' ? value.length : 8);
    if (count >= MAX_METRICS || chars + size > MAX_METRICS_CHARS || name.length > MAX_METRIC_TEXT) {
      dropped++;
      continue;
    }
    kept[name] = value;
    count++;
    chars += size;
  }
  if (dropped > 0) kept.metrics_dropped = dropped;
  return kept;
}
