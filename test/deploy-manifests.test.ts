// The Kubernetes manifests and the compose file stay true to the gateway: every variable they
// set is one the gateway reads, the kill deadline covers the longest stop their settings
// allow, the probes and the scrape reach what the gateway serves, and the pod's resources are
// what docs/operations.md sizes a gateway by.
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { longestBootWaitMs } from '../src/composition/dependency-wait.js';
import { longestStopMs } from '../src/composition/drain.js';
import { configSchema, loadConfig } from '../src/config.js';
import { PROVIDERS } from '../src/providers/registry.js';
import { routeDeclarations } from '../src/routes/index.js';
import { TEST_MASTER_KEY } from './support/env.js';

const manifest = (name: string) =>
  readFileSync(new URL(`../deploy/kubernetes/${name}`, import.meta.url), 'utf8');

/**
 * The `KEY: value` entries under a top-level-indented mapping such as `data:`; with
 * `commented`, the ones written as examples in a comment (`# KEY: value`) instead.
 */
function entriesUnder(text: string, heading: string, commented = false): Map<string, string> {
  const lines = text.split('\n');
  const start = lines.findIndex((line) => line === `${heading}:`);
  const entries = new Map<string, string>();
  const entry = commented
    ? /^ {2}# ([A-Z][A-Z0-9_]*): '?([^'#]*?)'?\s*$/
    : /^ {2}([A-Z][A-Z0-9_]*): '?([^'#]*?)'?\s*$/;
  for (const line of lines.slice(start + 1)) {
    if (!line.startsWith('  ')) break;
    const match = entry.exec(line);
    if (match) entries.set(match[1]!, match[2]!);
  }
  return entries;
}

describe('deploy/kubernetes', () => {
  const config = entriesUnder(manifest('configmap.yaml'), 'data');
  const template = entriesUnder(manifest('secret.example.yaml'), 'stringData');
  // The template as an operator fills it: its master key's CHANGE-ME stops the boot (below);
  // the key is 32 random bytes, as the template's comment says to make it.
  const secret = new Map([...template, ['CREDENTIALS_MASTER_KEY', TEST_MASTER_KEY]]);
  const known = new Set(Object.keys(configSchema.shape));

  it('sets only variables the gateway reads', () => {
    expect(config.size).toBeGreaterThan(5);
    expect(secret.size).toBeGreaterThan(3);
    for (const name of [...config.keys(), ...secret.keys()]) expect(known, name).toContain(name);
  });

  it('stops a boot with the template’s master key left as it is, naming the variable (decision 466)', () => {
    expect(template.get('CREDENTIALS_MASTER_KEY')).toBe('CHANGE-ME');
    expect(() =>
      loadConfig({ ...Object.fromEntries(config), ...Object.fromEntries(template) }),
    ).toThrow(/CREDENTIALS_MASTER_KEY: master key k1 must be 32 bytes written in base64/);
  });

  it('and so do the examples left in comments, which pass its validation together', () => {
    const examples = new Map([
      ...entriesUnder(manifest('configmap.yaml'), 'data', true),
      ...entriesUnder(manifest('secret.example.yaml'), 'stringData', true),
    ]);
    expect([...examples.keys()].sort()).toEqual(
      ['EMAIL_FROM', 'PUBLIC_ORIGIN', 'REDIS_CLUSTER_NODES', 'SMTP_URL'].sort(),
    );
    expect(() =>
      loadConfig({
        ...Object.fromEntries(config),
        ...Object.fromEntries(secret),
        ...Object.fromEntries(examples),
      }),
    ).not.toThrow();
  });

  it('states the Postgres connections the autoscaler’s pods can open', () => {
    const settings = loadConfig({ ...Object.fromEntries(config), ...Object.fromEntries(secret) });
    const deployment = manifest('deployment.yaml');
    const maxReplicas = Number(/maxReplicas: (\d+)/.exec(manifest('hpa.yaml'))![1]);
    const surge = Number(/maxSurge: (\d+)/.exec(deployment)![1]);
    const workers = Number(/limits: \{ cpu: '(\d+)'/.exec(deployment)![1]);
    // README, DATABASE_POOL_SIZE: the request pool + 3 (writer 2, probe 1) + the webhooks'
    // WEBHOOK_DELIVERY_CONCURRENCY + 1 (database-pool-size.e2e.test.ts counts them).
    const perWorker = settings.DATABASE_POOL_SIZE + 3 + settings.WEBHOOK_DELIVERY_CONCURRENCY + 1;
    const atMost = maxReplicas * workers * perWorker;
    const inRollout = (maxReplicas + surge) * workers * perWorker;
    const operations = readFileSync(new URL('../docs/operations.md', import.meta.url), 'utf8');
    expect(operations).toContain(`${maxReplicas * workers} × ${perWorker} = ${atMost}`);
    expect(operations).toContain(`${maxReplicas + surge} pods, ${inRollout}`);
    expect(manifest('configmap.yaml')).toContain(
      `${maxReplicas * workers} x ${perWorker} = ${atMost}, and ${inRollout}`,
    );
  });

  it('and each ConfigMap value passes the gateway’s own validation', () => {
    const parsed = configSchema.safeParse({
      ...Object.fromEntries(config),
      DATABASE_URL: 'postgres://x@h/db',
    });
    expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
  });

  it('gives a pod time for the preStop sleep and the longest stop its settings allow', () => {
    const deployment = manifest('deployment.yaml');
    const grace = Number(/terminationGracePeriodSeconds: (\d+)/.exec(deployment)![1]);
    const preStop = Number(/command: \['sleep', '(\d+)'\]/.exec(deployment)![1]);
    const settings = loadConfig({
      ...Object.fromEntries(config),
      ...Object.fromEntries(secret),
      CREDENTIALS_MASTER_KEY: TEST_MASTER_KEY,
    });
    expect(settings.WEBHOOK_DELIVERY_CONCURRENCY).toBeGreaterThan(0); // its wait counts
    expect(grace * 1000).toBeGreaterThan(preStop * 1000 + longestStopMs(settings));
  });

  it('probes the gateway’s own /readyz and /healthz on its port, answered within the time-out', () => {
    const deployment = manifest('deployment.yaml');
    const paths = new Set(routeDeclarations.map((route) => route.path));
    const probe = (kind: string) => {
      const text = deployment.slice(deployment.indexOf(`${kind}:`));
      const [, path, port] = /httpGet: \{ path: (\S+), port: (\S+) \}/.exec(text)!;
      return { path: path!, port: port!, text: text.slice(0, text.indexOf('\n          ', 1)) };
    };
    expect(probe('readinessProbe').path).toBe('/readyz');
    expect(probe('livenessProbe').path).toBe('/healthz');
    expect(probe('startupProbe').path).toBe('/healthz');
    for (const kind of ['readinessProbe', 'livenessProbe', 'startupProbe']) {
      const { path, port } = probe(kind);
      expect(paths, path).toContain(path);
      // The named port is the container's PORT.
      const containerPort = new RegExp(`name: ${port}, containerPort: (\\d+)`).exec(deployment);
      expect(containerPort?.[1], kind).toBe(config.get('PORT'));
    }
    const readiness = deployment.slice(deployment.indexOf('readinessProbe:'));
    const timeoutSeconds = Number(/timeoutSeconds: (\d+)/.exec(readiness)![1]);
    expect(timeoutSeconds * 1000).toBeGreaterThan(
      Number(config.get('DEPENDENCY_CHECK_TIMEOUT_MS')),
    );
  });

  it('lets the boot wait out its dependencies before the startup probe gives up (decision 426)', () => {
    const deployment = manifest('deployment.yaml');
    const startup = deployment.slice(deployment.indexOf('startupProbe:'));
    const periodSeconds = Number(/periodSeconds: (\d+)/.exec(startup)![1]);
    const failureThreshold = Number(/failureThreshold: (\d+)/.exec(startup)![1]);
    const settings = loadConfig({ ...Object.fromEntries(config), ...Object.fromEntries(secret) });
    // 6 × (10 s + 5 s) = 90 s against 2 s × 60 = 120 s.
    expect(periodSeconds * failureThreshold * 1000).toBeGreaterThan(longestBootWaitMs(settings));
  });

  it('lets a scraper reach /metrics: the port the pod announces is the one it listens on', () => {
    const deployment = manifest('deployment.yaml');
    expect(config.get('METRICS_HOST')).toBe('0.0.0.0');
    const port = config.get('METRICS_PORT');
    expect(deployment).toContain(`prometheus.io/port: '${port}'`);
    expect(deployment).toContain(`{ name: metrics, containerPort: ${port} }`);
  });

  it('runs one worker per CPU of the limit, with the memory docs/operations.md sizes them by', () => {
    const deployment = manifest('deployment.yaml');
    expect(deployment).toMatch(
      /name: GATEWAY_WORKERS\n\s+valueFrom:\n\s+resourceFieldRef: \{ resource: limits\.cpu, divisor: '1' \}/,
    );
    const [, requestCpu, requestMemory] = /requests: \{ cpu: '(\d+)', memory: (\d+)Gi \}/.exec(
      deployment,
    )!;
    const [, limitCpu, limitMemory] = /limits: \{ cpu: '(\d+)', memory: (\d+)Gi \}/.exec(
      deployment,
    )!;
    expect(requestCpu).toBe(limitCpu); // the autoscaler's utilization is of the request
    const workers = Number(limitCpu);
    // docs/operations.md, Crashes: ~180 MB a worker idle, ~80 MB the primary, ~30 KB a live
    // stream; a worker relays at most UPSTREAM_CONNECTIONS streams to each vendor at once.
    const mb = 1024 * 1024;
    const idle = 80 * mb + workers * 180 * mb;
    const perVendor = loadConfig(Object.fromEntries(config)).UPSTREAM_CONNECTIONS;
    const streams = workers * PROVIDERS.length * perVendor * 30 * 1024;
    expect(Number(requestMemory) * 1024 * mb).toBeGreaterThan(idle);
    expect(Number(limitMemory) * 1024 * mb).toBeGreaterThan(idle + streams);
  });

  it('migrates in an init container of the same image, with the same settings, before the gateway', () => {
    const deployment = manifest('deployment.yaml');
    const init = deployment.slice(
      deployment.indexOf('initContainers:'),
      deployment.indexOf('containers:', deployment.indexOf('initContainers:') + 15),
    );
    expect(init).toContain("command: ['node', 'bin/gw.js', 'migrate']");
    const image = (text: string): string | undefined => /image: (\S+)/.exec(text)?.[1];
    const gateway = deployment.slice(deployment.indexOf('\n      containers:'));
    expect(image(init)).toBe(image(gateway));
    expect(init).toContain('configMapRef: { name: gw-config }');
    expect(init).toContain('secretRef: { name: gw-secrets }');
  });
});

describe('deploy/kubernetes, the reconcile CronJob', () => {
  const cronJob = manifest('reconcile-cronjob.yaml');

  it('is applied with the rest, and every manifest but the Secret’s template is', () => {
    const listed = [...manifest('kustomization.yaml').matchAll(/^ {2}- (\S+\.yaml)$/gm)].map(
      (match) => match[1],
    );
    const files = readdirSync(new URL('../deploy/kubernetes/', import.meta.url)).filter(
      (file) => file.endsWith('.yaml') && file !== 'kustomization.yaml',
    );
    expect([...listed].sort()).toEqual(files.filter((file) => !file.includes('example')).sort());
  });

  it('runs gw reconcile in the gateway’s image with its settings, failing on a drift', () => {
    const image = (text: string): string | undefined => /image: (\S+)/.exec(text)?.[1];
    expect(image(cronJob)).toBe(image(manifest('deployment.yaml')));
    expect(cronJob).toContain('node bin/gw.js reconcile');
    expect(cronJob).toMatch(/drifted === 0 \? 0 : 1/);
    expect(cronJob).toContain('configMapRef: { name: gw-config }');
    expect(cronJob).toContain('secretRef: { name: gw-secrets }');
    // A run that hangs fails (and alerts) before the next is due, which it would hold back.
    const deadline = Number(/activeDeadlineSeconds: (\d+)/.exec(cronJob)![1]);
    expect(cronJob).toContain('concurrencyPolicy: Forbid');
    expect(cronJob).toMatch(/schedule: '\d+ \* \* \* \*'/); // hourly
    expect(deadline).toBeLessThan(3600);
  });

  it('is the job the Reconcile drift alert watches, and never one of the Service’s pods', () => {
    const operations = readFileSync(new URL('../docs/operations.md', import.meta.url), 'utf8');
    const [, jobs] = /job_name=~"([^"]+)"/.exec(operations)!;
    const [, name] = /^ {2}name: (\S+)$/m.exec(cronJob)!;
    expect(`${name!}-29000000`).toMatch(new RegExp(`^${jobs!}$`));
    const service = manifest('service.yaml');
    const [, selected] = /selector: \{ app\.kubernetes\.io\/name: (\S+) \}/.exec(service)!;
    for (const [, label] of cronJob.matchAll(/app\.kubernetes\.io\/name: ([^\s}]+)/g)) {
      expect(label).not.toBe(selected);
    }
  });
});

describe('compose.yaml', () => {
  const compose = readFileSync(new URL('../compose.yaml', import.meta.url), 'utf8');
  const gateway = compose.slice(compose.indexOf('  gateway:'), compose.indexOf('\n  redis:'));
  const environment = entriesUnder(
    gateway
      .split('\n')
      .map((line) => line.replace(/^ {4}/, ''))
      .join('\n'),
    'environment',
  );

  it('sets only variables the gateway reads', () => {
    expect(environment.size).toBeGreaterThan(3);
    const known = new Set(Object.keys(configSchema.shape));
    for (const name of environment.keys()) expect(known, name).toContain(name);
  });

  it('waits for the longest stop its settings allow before killing the gateway', () => {
    const [, seconds] = /stop_grace_period: (\d+)s/.exec(gateway)!;
    // ${VARIABLE:-default} is the default unless the shell sets it.
    const settings = loadConfig(
      Object.fromEntries(
        [...environment].map(([name, value]) => [name, value.replace(/^\$\{\w+:-(.*)\}$/, '$1')]),
      ),
    );
    expect(Number(seconds) * 1000).toBeGreaterThan(longestStopMs(settings));
  });
});
