// What a person is shown of the URLs that receive the API key or the
// rollouts (docs/guide.md "What the editor trusts"): each URL of a setting as
// its parsed origin, the host in punycode (a Cyrillic "а" in "exаmple.com"
// shows as xn--...), invisible characters escaped, one per line; and which of
// them would carry the key unencrypted over the network.
import type { Settings } from './config';
import { escapeInvisible } from './displayText';

/** The URLs of a setting: one, or several separated by commas (thetaevolve.endpoint). */
function urlsOf(value: string): string[] {
  return value
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
}

/** Each URL of `value` as `origin/path` (punycode host, no user:password@ part), one per line; one that does not parse is shown escaped and says so. */
export function urlOriginLines(value: string): string {
  return urlsOf(value)
    .map((text) => {
      try {
        const url = new URL(text);
        const credentials = url.username !== '' || url.password !== '' ? ' (with a user name or password in it)' : '';
        return `${url.origin}${url.pathname === '/' ? '' : url.pathname}${credentials}`;
      } catch {
        return `${escapeInvisible(text)} (not a URL)`;
      }
    })
    .join('\n');
}

/** Whether `hostname` (as URL parses it) is this machine: localhost, 127.0.0.0/8, ::1. */
function isLoopback(hostname: string): boolean {
  return hostname === 'localhost' || hostname.endsWith('.localhost') || /^127\.\d+\.\d+\.\d+$/.test(hostname) || hostname === '[::1]';
}

/** The origins of `value`'s URLs that are plain http:// to another machine: an API key sent there crosses the network unencrypted. */
export function plainHttpOrigins(value: string): string[] {
  return urlsOf(value).flatMap((text) => {
    try {
      const url = new URL(text);
      return url.protocol === 'http:' && !isLoopback(url.hostname) ? [url.origin] : [];
    } catch {
      return [];
    }
  });
}

/**
 * Where a run's requests carry an API key (docs/guide.md "What the editor trusts"): each model's server with the
 * key it sends (thetaevolve.models: its own endpoint, else thetaevolve.endpoint), or thetaevolve.endpoint with the
 * run's key. Embeddings carry the run's key only to thetaevolve.endpoint itself; the trainer gets none.
 */
export interface KeyDestination {
  /** The base URL(s), as the setting holds them (a comma list for a pool). */
  urls: string;
  /** The setting that names them: `thetaevolve.endpoint` or `thetaevolve.models ("name")`. */
  setting: string;
  /** Which key: `the run's key` or the apiKeyName. */
  key: string;
}

export function keyDestinations(
  settings: Pick<Settings, 'sampler' | 'endpoint' | 'models'>,
  hasRunKey: boolean,
  runKeyName = "the run's key",
): KeyDestination[] {
  if (settings.sampler !== 'llm') return [];
  if (settings.models.length === 0) return hasRunKey ? [{ urls: settings.endpoint, setting: 'thetaevolve.endpoint', key: runKeyName }] : [];
  return settings.models.flatMap((model) => {
    const key = model.apiKeyName ?? (hasRunKey ? runKeyName : null);
    if (key === null) return [];
    const setting = model.endpoint !== undefined ? `thetaevolve.models ("${escapeInvisible(model.name)}")` : 'thetaevolve.endpoint';
    return [{ urls: model.endpoint ?? settings.endpoint, setting, key }];
  });
}

/** Each destination as `origin (setting, key)`, one origin per entry, the same origin and key said once. */
export function keyDestinationTexts(destinations: readonly KeyDestination[]): string[] {
  const texts = destinations.flatMap((d) =>
    urlOriginLines(d.urls)
      .split('\n')
      .map((origin) => `${origin} (${d.setting}: ${d.key})`),
  );
  return [...new Set(texts)];
}

/** The warning for an API key sent over plain http:// to another machine, naming each such origin and the setting that names it, or null. */
export function keyOverPlainHttpWarning(destinations: readonly KeyDestination[]): string | null {
  const origins = [...new Set(destinations.flatMap((d) => plainHttpOrigins(d.urls).map((origin) => `${origin} (${d.setting})`)))];
  if (origins.length === 0) return null;
  return `the API key is sent unencrypted over http:// to ${origins.join(', ')}: use https://, an SSH tunnel, or a server on this machine`;
}
