// Configuration: environment variables, parsed once by zod at boot and passed down frozen.
import { z } from 'zod';
import { poolSettingsInUrl } from './db/url-parameters.js';
import { PROVIDERS, type ProviderId } from './providers/registry.js';
import { originOf } from './http/own-origin.js';
import { parseTrustedProxies } from './http/client-address.js';
import { parseClusterNodes } from './redis/target.js';
import { parseMasterKeys, SecretBoxError } from './credentials/secret-box.js';
import { DEFAULT_MAX_SSE_EVENT_BYTES } from './protocols/common/sse.js';
import { DEFAULT_MAX_WAITING_PER_LANE } from './tokens/fair-scheduler.js';
import { describeAllIssues } from './validation-messages.js';
import { PASSWORD_SCRYPT_N_DEFAULT } from './accounts/passwords.js';
import { plainDecimal, wholeNumber } from './written-numbers.js';
import { DEFAULT_RETRY_SCHEDULE_S, parseRetrySchedule } from './webhooks/retry-schedule.js';

const optionalUrl = z
  .string()
  .trim()
  .transform((value) => (value === '' ? undefined : value))
  .pipe(z.url().optional());

const optionalSecret = z
  .string()
  .transform((value) => (value === '' ? undefined : value))
  .optional();

const providerBaseUrl = optionalUrl.optional();

/** Each registered provider's system route: <ID>_BASE_URL and <ID>_API_KEY (VENDOR_A_BASE_URL). */
type ProviderEnvShape = {
  [Id in ProviderId as `${Uppercase<Id>}_BASE_URL`]: typeof providerBaseUrl;
} & { [Id in ProviderId as `${Uppercase<Id>}_API_KEY`]: typeof optionalSecret };

const providerEnvShape = Object.fromEntries(
  PROVIDERS.flatMap((provider) => [
    [provider.env.baseUrl, providerBaseUrl],
    [provider.env.apiKey, optionalSecret],
  ]),
) as ProviderEnvShape;

const booleanFlag = z
  .enum(['true', 'false', '1', '0'])
  .transform((value) => value === 'true' || value === '1');

/**
 * A trimmed text that `accept` turns into its value, or refuses (undefined) with `message`: the
 * message never repeats the value (it may hold a password).
 */
const checkedText = (accept: (value: string) => string | undefined, message: string) =>
  z
    .string()
    .trim()
    .transform((value, context) => {
      const accepted = accept(value);
      if (accepted === undefined) {
        context.addIssue({ code: 'custom', message });
        return z.NEVER;
      }
      return accepted;
    });

/** An smtp:// or smtps:// URL with a host, as written; undefined for anything else. */
function smtpUrl(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  return (url.protocol === 'smtp:' || url.protocol === 'smtps:') && url.hostname
    ? value
    : undefined;
}

export const configSchema = z.object({
  PORT: wholeNumber({ min: 0, max: 65535 }).default(8080),
  /**
   * Gateway processes accepting on PORT (SO_REUSEPORT): `auto` is one per core the process may
   * run on (Node 20 counts its CPU affinity, not a container's CPU quota). PORT=0 always runs
   * one (each process would pick its own port).
   */
  GATEWAY_WORKERS: z.union([z.literal('auto'), wholeNumber({ min: 1, max: 256 })]).default('auto'),
  HOST: z.string().min(1).default('0.0.0.0'),
  /**
   * Let other processes accept on PORT too (SO_REUSEPORT), e.g. a new gateway started before the
   * old one drains on a host without containers. Off: a PORT another process holds stops the
   * start, rather than the kernel spreading connections over both (decision 376).
   */
  LISTEN_REUSE_PORT: booleanFlag.default(false),
  REDIS_URL: z.url().default('redis://127.0.0.1:6379'),
  /** A Redis Cluster by some of its nodes (host:port,… or redis[s]://…); set, it replaces REDIS_URL. */
  REDIS_CLUSTER_NODES: z
    .string()
    .trim()
    .default('')
    .superRefine((value, context) => {
      if (value === '') return;
      try {
        parseClusterNodes(value);
      } catch (error) {
        context.addIssue({ code: 'custom', message: (error as Error).message });
      }
    }),
  REDIS_KEY_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,40}$/, 'letters, digits, _ . - only (1-40 chars)')
    .default('gw'),
  DATABASE_URL: z
    .url()
    .default('postgres://postgres@127.0.0.1:5432/gw')
    .superRefine((value, context) => {
      const named = poolSettingsInUrl(value);
      if (named.length === 0) return;
      context.addIssue({
        code: 'custom',
        message: `must not set ${named.join(', ')}: gw sets ${named.length === 1 ? 'it' : 'them'} on every connection itself (DATABASE_TIMEOUT_MS bounds statements; each pool names itself)`,
      });
    }),
  /**
   * The longest the gateway waits on Postgres: for a connection of its pool, and for one
   * statement (the server cancels it). Past it the request answers 503 gw_unavailable.
   */
  DATABASE_TIMEOUT_MS: wholeNumber({ min: 100, max: 600_000 }).default(10_000),
  /**
   * The most Postgres connections a gateway process's request pool opens (its other pools:
   * the usage writer's 2, the readiness probe's 1, the webhook dispatcher's
   * WEBHOOK_DELIVERY_CONCURRENCY + 1). Requests past it wait for a connection, up to
   * DATABASE_TIMEOUT_MS.
   */
  DATABASE_POOL_SIZE: wholeNumber({ min: 1, max: 1_000 }).default(20),
  /**
   * The longest a request waits on one Redis command while the event loop is free to read its
   * answer (a stalled loop's time counts only past six times this). Past it the request answers 503 gw_unavailable; a hold it may have placed is
   * released, a settle goes to the settle spool (decision 318).
   */
  REDIS_TIMEOUT_MS: wholeNumber({ min: 100, max: 600_000 }).default(5_000),
  /**
   * How long /readyz and the scrape wait for a dependency to answer before reporting it down
   * (below the readiness probe's own time-out: a probe that times out is a failed probe). At
   * most 1.5 s: the scrape waits 2 s on its probes (metrics.ts) and keeps the last value past
   * that, so a longer bound would leave gw_dependency_up at 1 through a hang.
   */
  DEPENDENCY_CHECK_TIMEOUT_MS: wholeNumber({ min: 50, max: 1_500 }).default(1_000),
  ...providerEnvShape,
  MAX_BODY_BYTES: wholeNumber({ min: 1024 }).default(4 * 1024 * 1024),
  UPSTREAM_TIMEOUT_MS: wholeNumber({ min: 100 }).default(120_000),
  /**
   * The largest single SSE event a vendor's stream may send; past it the stream ends as the
   * vendor's failure (an error event to the client, charged as a broken stream: decision 354).
   */
  MAX_SSE_EVENT_BYTES: wholeNumber({ min: 64 * 1024, max: 1024 * 1024 * 1024 }).default(
    DEFAULT_MAX_SSE_EVENT_BYTES,
  ),
  /**
   * Connections per vendor origin and process. Every stream in flight holds one (HTTP/1.1),
   * so this bounds the concurrent requests to one vendor; more wait in the pool's queue.
   */
  UPSTREAM_CONNECTIONS: wholeNumber({ min: 1, max: 65_536 }).default(8192),
  /**
   * How long a hold lives unless settled. At most a day: settle reads a request's admission
   * time off its hold, and credits outlive the accounts they pay by 2 days (decisions 288, 289).
   */
  RESERVATION_TTL_MS: wholeNumber({ min: 1000, max: 86_400_000 }).default(600_000),
  INSTANCE_DEAD_AFTER_MS: wholeNumber({ min: 600 }).default(30_000),
  AUTH_CACHE_TTL_MS: wholeNumber({ min: 0 }).default(30_000),
  TOKEN_WORKERS: wholeNumber({ min: 1, max: 64 }).default(2),
  /**
   * Token counts one organization may have waiting for the TOKEN_WORKERS threads, per
   * process; past it its requests answer 429 gw_concurrency_limited (decision 351).
   */
  TOKEN_QUEUE_PER_ORG: wholeNumber({ min: 1, max: 100_000 }).default(DEFAULT_MAX_WAITING_PER_LANE),
  /**
   * V8's heap growing factor, as a percentage over what the last full collection kept
   * (`--heap-growing-percent`); 0 leaves V8's own (1.1–4×, mostly the upper end on a busy
   * loop). Long-lived streams make the heap's slack most of a stream's memory (decision 296).
   */
  HEAP_GROWTH_PERCENT: wholeNumber({ min: 0, max: 400 }).default(20),
  USAGE_BATCH_MAX_ROWS: wholeNumber({ min: 1, max: 10_000 }).default(500),
  USAGE_FLUSH_INTERVAL_MS: wholeNumber({ min: 1 }).default(50),
  USAGE_CLAIM_IDLE_MS: wholeNumber({ min: 100 }).default(30_000),
  /**
   * The longest the usage writer waits on one statement of a batch (its COMMIT too: a batch
   * replays harmlessly). Past it the batch is written again on another connection, so a
   * connection cut off without a reset stalls the ledger this long, not until TCP gives up.
   */
  USAGE_WRITE_TIMEOUT_MS: wholeNumber({ min: 1_000, max: 3_600_000 }).default(60_000),
  /** Settles that fail after the vendor answered wait here (fsynced) until Redis is back. */
  SPOOL_DIR: z.string().min(1).default('var/spool'),
  SHUTDOWN_GRACE_MS: wholeNumber({ min: 0 }).default(10_000),
  /**
   * Load shedding (decision 335): while the event loop runs this many ms late, new requests
   * (not health checks) are answered 503 gw_unavailable at once and their connections closed;
   * requests in flight go on. 0: off.
   */
  SHED_LOOP_DELAY_MS: wholeNumber({ min: 0, max: 60_000 }).default(0),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** The built-in mock serves every vendor without a base URL (else only when none is set). */
  MOCK_VENDORS: booleanFlag.default(false),
  REQUEST_LOG_SAMPLE_RATE: plainDecimal.pipe(z.number().min(0).max(1)).default(1),
  MOCK_VENDOR_LATENCY_MS: wholeNumber({ min: 0 }).default(0),
  MOCK_VENDOR_TOKENS_PER_SECOND: wholeNumber({ min: 0 }).default(0),
  METRICS_ENABLED: booleanFlag.default(true),
  /** /metrics is served only here, never on PORT (0: any free port, logged at start). */
  METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  METRICS_PORT: wholeNumber({ min: 0, max: 65535 }).default(9464),
  CREDENTIALS_MASTER_KEY: optionalSecret,
  CREDENTIALS_MASTER_KEY_ID: z
    .string()
    .regex(/^[\w.-]{1,32}$/)
    .default('k1'),
  CREDENTIALS_PREVIOUS_KEYS: optionalSecret,
  DASHBOARD_INSECURE_COOKIES: booleanFlag.default(false),
  /**
   * Origins besides the gateway's own that may send dashboard writes, comma-separated; each
   * normalised as a browser writes its Origin (lower case, no default port, no trailing
   * slash: decision 354), so `https://App.Example:443/` matches `https://app.example`.
   */
  DASHBOARD_ALLOWED_ORIGINS: z
    .string()
    .default('')
    .transform((value, context) => {
      const entries = value
        .split(',')
        .map((entry) => entry.trim())
        .filter((entry) => entry !== '');
      const origins = new Set<string>();
      entries.forEach((entry, index) => {
        const origin = entry.includes('*') ? undefined : originOf(entry);
        if (origin !== undefined) origins.add(origin);
        else {
          context.addIssue({
            code: 'custom',
            // By position: a configuration error never repeats a value.
            message: `entry ${index + 1} of ${entries.length} is not an origin: each must be scheme://host[:port] only (http or https, no path, query, user or wildcard)`,
          });
        }
      });
      return [...origins];
    }),
  /**
   * scrypt's N for the password hashes made from now on (a power of two; r = 8, p = 1): the
   * default is OWASP's floor; raise it on fast hardware. Below the floor only for tests, with a
   * warning at start-up (decision 573). A stored hash keeps the cost it was made at.
   */
  PASSWORD_SCRYPT_N: wholeNumber({ min: 2 ** 10, max: 2 ** 16 })
    .refine((n) => (n & (n - 1)) === 0, { message: 'must be a power of two' })
    .default(PASSWORD_SCRYPT_N_DEFAULT),
  DASHBOARD_SESSION_IDLE_MS: wholeNumber({ min: 60_000 }).default(2 * 3_600_000),
  DASHBOARD_SESSION_MAX_MS: wholeNumber({ min: 60_000 }).default(12 * 3_600_000),
  /**
   * The reverse proxies or load balancers in front of the gateway (addresses and CIDR ranges,
   * comma-separated): a request from one of them is counted as from the client its
   * X-Forwarded-For names (sign-in and e-mail throttles; src/http/client-address.ts).
   */
  TRUSTED_PROXIES: z
    .string()
    .default('')
    .transform((text, context) => {
      const parsed = parseTrustedProxies(text);
      if (parsed.ok) return parsed.trusted;
      context.addIssue({
        code: 'custom',
        // By position: a configuration error never repeats a value.
        message: `entry ${parsed.entry} is not an address or a CIDR range (a.b.c.d, a.b.c.d/n, an IPv6 address or range)`,
      });
      return z.NEVER;
    }),
  /** Anyone may make an account (and its personal organization) with POST /auth/signup. */
  DASHBOARD_SIGNUP: booleanFlag.default(false),
  /** Owners and admins may add funds to their organization's wallet from the dashboard. */
  DASHBOARD_WALLET_TOPUP: booleanFlag.default(false),
  /** Webhook attempts this instance runs at once (0: it delivers none; others do). */
  WEBHOOK_DELIVERY_CONCURRENCY: wholeNumber({ min: 0, max: 64 }).default(4),
  /** Delays in seconds between a delivery's attempts (docs/webhooks.md). */
  WEBHOOK_RETRY_SCHEDULE: z
    .string()
    .default(DEFAULT_RETRY_SCHEDULE_S.join(','))
    .transform((value, context) => {
      try {
        return parseRetrySchedule(value);
      } catch (error) {
        context.addIssue({ code: 'custom', message: (error as Error).message });
        return z.NEVER;
      }
    }),
  WEBHOOK_TIMEOUT_MS: wholeNumber({ min: 100, max: 60_000 }).default(10_000),
  /** An endpoint failing without a success for this long is disabled (5 days). */
  WEBHOOK_DISABLE_AFTER_S: wholeNumber({ min: 1 }).default(5 * 86_400),
  /** How often an idle dispatcher looks for due deliveries. */
  WEBHOOK_POLL_INTERVAL_MS: wholeNumber({ min: 10, max: 60_000 }).default(1000),
  /** How often credit-grant expiries are announced and old messages deleted. */
  WEBHOOK_SWEEP_INTERVAL_MS: wholeNumber({ min: 10, max: 3_600_000 }).default(10_000),
  /** Messages are kept this long (longer than a month: threshold events dedupe on them). */
  WEBHOOK_RETENTION_DAYS: wholeNumber({ min: 32, max: 3650 }).default(45),
  /** http:// endpoint URLs are accepted (tests, on-premise). */
  WEBHOOK_ALLOW_HTTP: booleanFlag.default(false),
  /** Endpoints may reach loopback and private addresses (tests, on-premise). */
  WEBHOOK_ALLOW_PRIVATE_TARGETS: booleanFlag.default(false),
  /**
   * The origin users and apps reach the gateway at (`https://gw.example.com`): the OAuth
   * issuer (RFC 8414) and the base of its endpoints' URLs. Unset: the origin each request was
   * sent to, as the dashboard's Origin check takes it (decision 343).
   */
  PUBLIC_ORIGIN: checkedText(
    originOf,
    'must be scheme://host[:port] only (http or https, no path, query or user)',
  ).optional(),
  /**
   * Where gw sends its e-mail (verification and password-reset links): smtp://user:pass@host:port
   * (STARTTLS when the server offers it) or smtps:// (TLS from the start). A secret: it holds the
   * SMTP password, and no message ever repeats it. Unset: gw sends no e-mail (decision 370).
   */
  SMTP_URL: checkedText(
    smtpUrl,
    'must be smtp://[user:password@]host[:port] or smtps://…',
  ).optional(),
  /** The From of gw's e-mail: `gw <no-reply@example.com>` or a bare address. */
  EMAIL_FROM: z.string().trim().max(320).optional(),
  /** How long an OAuth authorization code waits for its exchange (RFC 6749: short). */
  OAUTH_CODE_TTL_MS: wholeNumber({ min: 1_000, max: 600_000 }).default(60_000),
  /**
   * How long an Idempotency-Key's claim stands unless its request renews it (every quarter of
   * this): a key whose gateway died mid-request is free again this long after its last renewal
   * at most (decision 388).
   */
  IDEMPOTENCY_KEY_LEASE_MS: wholeNumber({ min: 2_000, max: 600_000 }).default(10_000),
});

export type Config = Readonly<z.infer<typeof configSchema>>;

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** Parses the environment. Throws ConfigError naming every bad variable (never its value). */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // A variable set to nothing (compose's `${UNSET}`, Kubernetes' `value: ""`) is not set: it
  // takes its default, never the 0 or '' that an empty string would parse to.
  const set = Object.fromEntries(
    Object.entries(env).filter(([, value]) => value !== undefined && value.trim() !== ''),
  );
  const parsed = configSchema.safeParse(set);
  if (!parsed.success) {
    const problems = describeAllIssues(parsed.error, '(environment)');
    throw new ConfigError(`invalid configuration:\n  ${problems.join('\n  ')}`);
  }
  const masterKeys = masterKeysProblem(parsed.data);
  if (masterKeys !== undefined) throw new ConfigError(`invalid configuration:\n  ${masterKeys}`);
  // Together they would let anyone on the network make an account and fund it for nothing:
  // free vendor spend on the gateway's own keys. Top-ups then come from the CLI (or a payment
  // integration) only.
  if (parsed.data.DASHBOARD_SIGNUP && parsed.data.DASHBOARD_WALLET_TOPUP) {
    throw new ConfigError(
      'invalid configuration:\n  DASHBOARD_WALLET_TOPUP: cannot be true while DASHBOARD_SIGNUP is: anyone could sign up and fund their own wallet',
    );
  }
  // The issuer is an https URL (RFC 8414), and the gateway's own origin is http only when it
  // serves plain HTTP: an http PUBLIC_ORIGIN on a TLS gateway would also let a plain-HTTP page
  // send dashboard writes (decision 346).
  if (parsed.data.PUBLIC_ORIGIN?.startsWith('http:') && !parsed.data.DASHBOARD_INSECURE_COOKIES) {
    throw new ConfigError(
      'invalid configuration:\n  PUBLIC_ORIGIN: http:// only for a plain-HTTP gateway (DASHBOARD_INSECURE_COOKIES=true); use https://',
    );
  }
  // The links gw mails must point at the gateway whoever asked for them: the origin a request
  // was sent to is the Host header, which a caller chooses (a reset link to their own host
  // would hand them the victim's token). So e-mail needs PUBLIC_ORIGIN, and a sender. The
  // messages wait in Postgres until sent, sealed: e-mail needs the master key (decision 375).
  if (parsed.data.SMTP_URL !== undefined) {
    const missing = [
      ...(parsed.data.PUBLIC_ORIGIN === undefined
        ? ['PUBLIC_ORIGIN: must be set when SMTP_URL is: the links gw mails are built on it']
        : []),
      ...(parsed.data.EMAIL_FROM === undefined
        ? ['EMAIL_FROM: must be set when SMTP_URL is (the From of its e-mail)']
        : []),
      ...(parsed.data.CREDENTIALS_MASTER_KEY === undefined
        ? [
            'CREDENTIALS_MASTER_KEY: must be set when SMTP_URL is: e-mail waiting to be sent is encrypted with it',
          ]
        : []),
    ];
    if (missing.length > 0) {
      throw new ConfigError(`invalid configuration:\n  ${missing.join('\n  ')}`);
    }
  }
  return Object.freeze(parsed.data);
}

/**
 * Why the credential master keys cannot be used, as `VARIABLE: problem` (never a key), or
 * undefined: refused at boot as any bad value is, not later where the gateway first opens a
 * secret (decision 466).
 */
function masterKeysProblem(
  data: Pick<
    z.infer<typeof configSchema>,
    'CREDENTIALS_MASTER_KEY' | 'CREDENTIALS_MASTER_KEY_ID' | 'CREDENTIALS_PREVIOUS_KEYS'
  >,
): string | undefined {
  const current = data.CREDENTIALS_MASTER_KEY;
  const id = data.CREDENTIALS_MASTER_KEY_ID;
  for (const [variable, previous] of [
    ['CREDENTIALS_MASTER_KEY', undefined],
    ['CREDENTIALS_PREVIOUS_KEYS', data.CREDENTIALS_PREVIOUS_KEYS],
  ] as const) {
    try {
      parseMasterKeys(current, id, previous);
    } catch (error) {
      if (error instanceof SecretBoxError) return `${variable}: ${error.message}`;
      throw error;
    }
  }
  return undefined;
}

/**
 * What a valid configuration leaves open that its operator should know, one line each, for
 * the log at boot (never a value). With sign-up on and no SMTP_URL, nothing proves that
 * whoever signs up with an address reads it (decision 365, 413).
 */
export function configurationWarnings(
  config: Pick<Config, 'DASHBOARD_SIGNUP' | 'SMTP_URL' | 'PASSWORD_SCRYPT_N'>,
): string[] {
  const warnings: string[] = [];
  if (config.DASHBOARD_SIGNUP && config.SMTP_URL === undefined) {
    warnings.push(
      'DASHBOARD_SIGNUP is on and SMTP_URL is unset: no e-mail address is verified, so anyone may sign up with an address they do not own (set SMTP_URL to verify addresses)',
    );
  }
  if (config.PASSWORD_SCRYPT_N < PASSWORD_SCRYPT_N_DEFAULT) {
    warnings.push(
      `PASSWORD_SCRYPT_N is ${config.PASSWORD_SCRYPT_N}, below OWASP's floor of ${PASSWORD_SCRYPT_N_DEFAULT}: passwords set now are cheap to guess from a stolen database (a setting for tests only)`,
    );
  }
  return warnings;
}
