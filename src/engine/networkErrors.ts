// What a failure below HTTP was, in a few words for people: one table of
// the error codes Node's sockets, DNS and undici (fetch) give, shared by the
// LLM endpoint client and the trainer's HTTP client.

/** After this long without an answer, a request to a server (inference, trainer) is named as awaited: one that accepted it and stays silent is said within seconds, not at its timeout. */
export const AWAITED_AFTER_MS = 5_000;

const NETWORK_ERROR_CODES: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection closed while sending',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  UND_ERR_SOCKET: 'connection closed by the server',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
};

/** Codes that mean nothing answers at that address at all (as opposed to a server that went away mid-answer). */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND']);

/** Whether a failure down `error`'s cause chain says nothing listens there, or the host does not exist. */
export function isUnreachableError(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && UNREACHABLE_CODES.has(code)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/**
 * Fetch's refusals of the address itself (undici's causes): no server will
 * ever answer there, so waiting for one to come up is pointless.
 */
const ADDRESS_REFUSALS: ReadonlyArray<[RegExp, string]> = [
  [/^bad port$/, 'a port fetch refuses to connect to (its blocked-port list): choose another port, such as 8000'],
  [/^unknown scheme$/, 'not an http:// or https:// URL'],
  [/^Invalid URL$|^Failed to parse URL/, 'not a valid URL'],
];

/**
 * Why the address can never be fetched (fetch refused it before connecting:
 * a blocked port, a scheme other than http/https, an unparsable URL), or
 * null for a failure that may pass (nothing listening yet, a reset).
 */
export function permanentAddressError(error: unknown): string | null {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code;
    if (code === 'ERR_INVALID_URL') return 'not a valid URL';
    for (const [pattern, words] of ADDRESS_REFUSALS) if (pattern.test(current.message)) return words;
    current = (current as { cause?: unknown }).cause;
  }
  return null;
}

/** Wrapper messages that say nothing of the cause (undici's, the openai SDK's). */
const UNTELLING_MESSAGES = new Set(['fetch failed', 'Connection error.']);

/**
 * The most telling words about a network failure: the words for the first
 * known error code down its cause chain, else the innermost telling message,
 * else "connection failed".
 */
export function describeNetworkError(error: unknown): string {
  let current: unknown = error;
  const messages: string[] = [];
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && Object.hasOwn(NETWORK_ERROR_CODES, code)) return NETWORK_ERROR_CODES[code] as string;
    messages.push(current.message);
    current = (current as { cause?: unknown }).cause;
  }
  const last = messages.filter((m) => m && !UNTELLING_MESSAGES.has(m)).pop();
  return last ?? 'connection failed';
}
