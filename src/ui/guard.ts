/**
 * Which requests `libreyolo ui` answers. The server runs models and writes files on the user's
 * machine, so a web page on another site must not be able to drive it:
 * - `Host` must name this server by a loopback name or an IP literal: a DNS-rebinding attack reaches
 *   127.0.0.1 under the attacker's own host name, which this refuses;
 * - a request that carries `Origin` (browsers send it on every POST, and on cross-origin fetches)
 *   must come from this server's own origin; `Sec-Fetch-Site: cross-site` is refused as well.
 * Clients that are not browsers (curl, scripts) send neither and are answered.
 */
import { isIP } from 'node:net';

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '::1', '[::1]']);

export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase();
  return LOOPBACK_NAMES.has(h) || /^127\.\d+\.\d+\.\d+$/.test(h) || h.endsWith('.localhost');
}

/** `[::1]:8000` -> `[::1]`, `localhost:8000` -> `localhost`; the port, if any, as a number. */
function splitHostHeader(value: string): { host: string; port: number | null } {
  const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(value.trim());
  if (!m) return { host: '', port: null };
  return { host: m[1]!.toLowerCase(), port: m[2] === undefined ? null : Number(m[2]) };
}

/** Why the request is refused, or null to answer it. */
export function refuseReason(headers: { host?: string | undefined; origin?: string | undefined; 'sec-fetch-site'?: string | string[] | undefined }, port: number): string | null {
  const hostHeader = headers.host ?? '';
  const { host, port: hostPort } = splitHostHeader(hostHeader);
  const bare = host.replace(/^\[|\]$/g, '');
  if (!host || !(isLoopbackHost(host) || isIP(bare) !== 0)) {
    return `Host '${hostHeader}' is not this server: open it as http://127.0.0.1:${port}/ (host names other than localhost are refused against DNS rebinding).`;
  }
  if (hostPort !== null && hostPort !== port) return `Host '${hostHeader}' names another port than this server's ${port}.`;
  const site = headers['sec-fetch-site'];
  if (site === 'cross-site' || site === 'same-site') return 'Cross-site requests are refused: use the page this server serves.';
  const origin = headers.origin;
  if (origin !== undefined && origin !== `http://${hostHeader}`) {
    return `Origin '${origin}' is not this server's (http://${hostHeader}): cross-origin requests are refused.`;
  }
  return null;
}
