// Where Redis is, from the configuration: one server by URL, or a cluster by some of its
// nodes. Kept apart from the client (connect.ts) so that reading the configuration does not
// load ioredis: the primary over GATEWAY_WORKERS reads it and never connects (~16 MB of RSS).
export interface RedisNode {
  readonly host: string;
  readonly port: number;
}

/** Where Redis is: one server by URL, or a cluster by some of its nodes (the rest are found). */
export type RedisTarget =
  | { readonly kind: 'single'; readonly url: string }
  | {
      readonly kind: 'cluster';
      readonly nodes: readonly RedisNode[];
      readonly username?: string;
      readonly password?: string;
      readonly tls: boolean;
    };

const NODE = /^(?:(rediss?):\/\/(?:([^:@/]*)(?::([^@/]*))?@)?)?([^:/@,\s]+):(\d{1,5})\/?$/;

/**
 * Parses REDIS_CLUSTER_NODES: `host:port,host:port,…`, each item optionally written as a URL,
 * `redis://[user:password@]host:port` (or `rediss://` for TLS). Credentials and TLS apply to
 * every node of the cluster, so the items that carry them must agree. Throws on anything else.
 */
export function parseClusterNodes(text: string): RedisTarget & { kind: 'cluster' } {
  const items = text
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
  if (items.length === 0) throw new Error('expected host:port[,host:port…]');
  const nodes: RedisNode[] = [];
  const schemes = new Set<string>();
  const credentials = new Set<string>();
  let username: string | undefined;
  let password: string | undefined;
  for (const item of items) {
    const match = NODE.exec(item);
    const port = Number(match?.[5]);
    if (!match || port < 1 || port > 65535) {
      throw new Error('each node must be host:port or redis[s]://[user:password@]host:port');
    }
    const [, scheme, user, secret, host] = match;
    if (scheme) schemes.add(scheme);
    if (user !== undefined || secret !== undefined) {
      credentials.add(`${user ?? ''}\n${secret ?? ''}`);
      username = user ? decodeURIComponent(user) : undefined;
      password = secret !== undefined ? decodeURIComponent(secret) : undefined;
    }
    nodes.push({ host: host!, port });
  }
  if (schemes.size > 1) throw new Error('the nodes mix redis:// and rediss://');
  if (credentials.size > 1) throw new Error('the nodes carry different credentials');
  return {
    kind: 'cluster',
    nodes,
    tls: schemes.has('rediss'),
    ...(username !== undefined && { username }),
    ...(password !== undefined && { password }),
  };
}

/** The target the configuration names: the cluster when REDIS_CLUSTER_NODES is set. */
export function redisTarget(config: {
  readonly REDIS_URL: string;
  readonly REDIS_CLUSTER_NODES?: string | undefined;
}): RedisTarget {
  const nodes = config.REDIS_CLUSTER_NODES?.trim();
  return nodes ? parseClusterNodes(nodes) : { kind: 'single', url: config.REDIS_URL };
}

/** What a start-up log may say about the target (no credentials). */
export function describeTarget(target: RedisTarget): Record<string, unknown> {
  if (target.kind === 'single') return { redis: 'single' };
  return {
    redis: 'cluster',
    redisSeedNodes: target.nodes.map((node) => `${node.host}:${node.port}`),
  };
}
