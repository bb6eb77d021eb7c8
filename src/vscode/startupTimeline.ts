// When each part of the extension's start happened, after the extension host
// process started: the log says it once a restored dashboard page says
// `ready`, so a slow restore after Reload Window shows where its time went
// (docs/architecture.md "Start-up"). Imported first by the entry, so its
// first mark is when the bundle began to run.

/** When the extension host process started (epoch ms). */
const hostStartedAt = Date.now() - process.uptime() * 1000;
/**
 * One list for the process: the entry (dist/extension.js) and the rest
 * (dist/extensionMain.js) are two bundles, each with its copy of this module.
 */
const shared = globalThis as { [key: symbol]: Array<{ what: string; at: number }> | undefined };
const key = Symbol.for('thetaevolve.startupTimeline');
const marks = (shared[key] ??= []);
marks.push({ what: marks.length === 0 ? 'bundle running' : 'main bundle running', at: Date.now() });

/** Note that `what` happened now. */
export function markStartup(what: string): void {
  marks.push({ what, at: Date.now() });
}

/** "extension host started <ISO>; bundle running +812 ms, activate +830 ms, ..." */
export function startupTimeline(): string {
  const parts = marks.map((m) => `${m.what} +${Math.round(m.at - hostStartedAt)} ms`);
  return `extension host started ${new Date(hostStartedAt).toISOString()}; ${parts.join(', ')}`;
}
