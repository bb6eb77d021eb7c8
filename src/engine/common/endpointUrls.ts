// What a person is shown of the URLs that receive the API key or the
// rollouts (docs/guide.md "What the editor trusts"): each URL of a setting as
// its parsed origin, the host in punycode (a Cyrillic "а" in "exаmple.com"
// shows as xn--...), invisible characters escaped, one per line; and which of
// them would carry the key unencrypted over the network.
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

/** The warning for an API key sent over plain http:// to another machine, or null. */
export function keyOverPlainHttpWarning(endpoint: string): string | null {
  const origins = plainHttpOrigins(endpoint);
  if (origins.length === 0) return null;
  return `the API key is sent unencrypted over http:// to ${origins.join(', ')} (thetaevolve.endpoint): use https://, an SSH tunnel, or a server on this machine`;
}
