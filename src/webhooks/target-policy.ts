// Where webhooks may be sent. A URL must be https (http only where config allows it), name a
// port other than 0, and may not reach an address that is not globally reachable — loopback,
// private, link-local (cloud metadata), carrier-grade NAT, multicast, documentation, reserved:
// ADDRESS_BLOCKS in address-blocks.ts — unless config allows private targets (tests,
// on-premise). Checked when an endpoint is saved and again for every connection: the address
// the check approves is the one the connection uses (the lookup below), so a name that later
// resolves elsewhere (DNS rebinding) is refused at connect time.
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import { refusedBlockOf } from './address-blocks.js';

export interface TargetPolicy {
  /** http:// URLs are accepted (tests, on-premise). */
  readonly allowHttp: boolean;
  /** Loopback and private addresses are accepted (tests, on-premise). */
  readonly allowPrivate: boolean;
}

/** Resolves a host name to every address it has. */
export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

export const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) =>
    dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) =>
      error ? reject(error) : resolve(addresses),
    ),
  );

export const MAX_URL_CHARS = 2048;
/** How long an endpoint's creation waits for DNS before accepting a name it cannot resolve. */
const CREATION_LOOKUP_TIMEOUT_MS = 3000;

/** True for an address no webhook may reach (unless private targets are allowed). */
export function isRefusedAddress(address: string): boolean {
  return refusedAddressOf(address) !== undefined;
}

/**
 * Which kind of address a refused one is, and its block: "a documentation address in
 * 192.0.2.0/24" (an address carrying an IPv4 address — NAT64, 6to4, Teredo, IPv4-mapped — is
 * named by the IPv4 block that refuses it). The block, never the address: for a name, that
 * would tell the caller what internal names resolve to.
 */
function refusedAddressOf(address: string): string | undefined {
  if (isIP(address) === 0) return 'something that is not an IP address';
  const block = refusedBlockOf(address);
  return block && `${block.kind} in ${block.network}/${block.prefix}`;
}

/** Why a name that resolved to these addresses is refused, or undefined if none is. */
function refusedAnswerOf(addresses: readonly LookupAddress[]): string | undefined {
  for (const { address } of addresses) {
    const refused = refusedAddressOf(address);
    if (refused !== undefined) return `resolves to ${refused}`;
  }
  return undefined;
}

/** The host of a URL without IPv6 brackets. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

/**
 * Checks a URL's form: scheme, no credentials, a host, the length; and, when its host is an
 * address, the address. Returns the parsed URL or why it is refused.
 */
export function checkTargetUrl(text: string, policy: TargetPolicy): URL | string {
  if (text.length > MAX_URL_CHARS) return `must be at most ${MAX_URL_CHARS} characters`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'is not a URL';
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && policy.allowHttp)) {
    return policy.allowHttp ? 'must be an http or https URL' : 'must be an https URL';
  }
  if (url.username !== '' || url.password !== '') return 'must not carry credentials';
  if (url.hash !== '') return 'must not have a fragment';
  // Port 0 is no port (the URL parser keeps it): nothing listens there to answer.
  if (url.port === '0') return 'must not use port 0';
  const host = hostOf(url);
  if (host === '') return 'must name a host';
  const refused = isIP(host) !== 0 && !policy.allowPrivate ? refusedAddressOf(host) : undefined;
  if (refused !== undefined) return `must not point to ${refused}`;
  return url;
}

/**
 * The creation-time address check: every address the host resolves to must be allowed. A
 * name that does not resolve (yet) is accepted: deliveries to it fail until it does, and
 * every connection is checked again anyway.
 */
export async function checkTargetAddresses(
  url: URL,
  policy: TargetPolicy,
  resolve: Resolver = systemResolver,
): Promise<string | null> {
  if (policy.allowPrivate) return null;
  const host = hostOf(url);
  if (isIP(host) !== 0) {
    const refused = refusedAddressOf(host);
    return refused === undefined ? null : `resolves to ${refused} (${host})`;
  }
  let addresses: LookupAddress[];
  try {
    addresses = await withTimeout(resolve(host), CREATION_LOOKUP_TIMEOUT_MS);
  } catch {
    return null;
  }
  const refused = refusedAnswerOf(addresses);
  return refused === undefined ? null : `${refused} (${host})`;
}

/** A connection refused because of where it would go. */
export class TargetRefusedError extends Error {
  override readonly name = 'TargetRefusedError';
  readonly code = 'GW_WEBHOOK_TARGET_REFUSED';
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * A `lookup` for net/tls.connect (undici's connect options): resolves, refuses the host if
 * any of its addresses is refused, and hands the connection exactly the addresses it checked.
 */
export function guardedLookup(policy: TargetPolicy, resolve: Resolver = systemResolver) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    resolve(hostname).then(
      (addresses) => {
        if (addresses.length === 0) {
          callback(
            Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }),
            '',
          );
          return;
        }
        const refused = policy.allowPrivate ? undefined : refusedAnswerOf(addresses);
        if (refused !== undefined) {
          callback(new TargetRefusedError(`${hostname}: ${refused}`), '');
          return;
        }
        const wanted =
          options.family === 4 || options.family === 6
            ? addresses.filter((entry) => entry.family === options.family)
            : addresses;
        if (options.all) callback(null, wanted);
        else if (wanted[0]) callback(null, wanted[0].address, wanted[0].family);
        else
          callback(
            Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }),
            '',
          );
      },
      (error: NodeJS.ErrnoException) => callback(error, ''),
    );
  };
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('timed out')), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error as Error);
      },
    );
  });
}
