// The Kubernetes manifests stay true to the gateway: every variable they set is one the
// gateway reads, and the pod's termination grace covers the drain the gateway needs.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../src/config.js';

const manifest = (name: string) =>
  readFileSync(new URL(`../deploy/kubernetes/${name}`, import.meta.url), 'utf8');

/** The `KEY: value` entries under a top-level-indented mapping such as `data:`. */
function entriesUnder(text: string, heading: string): Map<string, string> {
  const lines = text.split('\n');
  const start = lines.findIndex((line) => line === `${heading}:`);
  const entries = new Map<string, string>();
  for (const line of lines.slice(start + 1)) {
    if (!line.startsWith('  ')) break;
    const match = /^ {2}([A-Z][A-Z0-9_]*): '?([^'#]*?)'?\s*$/.exec(line);
    if (match) entries.set(match[1]!, match[2]!);
  }
  return entries;
}

describe('deploy/kubernetes', () => {
  const config = entriesUnder(manifest('configmap.yaml'), 'data');
  const secret = entriesUnder(manifest('secret.example.yaml'), 'stringData');
  const known = new Set(Object.keys(configSchema.shape));

  it('sets only variables the gateway reads', () => {
    expect(config.size).toBeGreaterThan(5);
    expect(secret.size).toBeGreaterThan(3);
    for (const name of [...config.keys(), ...secret.keys()]) expect(known, name).toContain(name);
  });

  it('and each ConfigMap value passes the gateway’s own validation', () => {
    const parsed = configSchema.safeParse({
      ...Object.fromEntries(config),
      DATABASE_URL: 'postgres://x@h/db',
    });
    expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
  });

  it('gives a pod time for the preStop sleep, the request drain, the cut’s settles and the writer’s drain', () => {
    const deployment = manifest('deployment.yaml');
    const grace = Number(/terminationGracePeriodSeconds: (\d+)/.exec(deployment)![1]);
    const preStop = Number(/command: \['sleep', '(\d+)'\]/.exec(deployment)![1]);
    const drainSeconds = Number(config.get('SHUTDOWN_GRACE_MS')) / 1000;
    const cutSettleSeconds = 5; // CUT_SETTLE_TIMEOUT_MS in src/composition/drain.ts
    const writerDrainSeconds = 15; // WRITER_STOP_TIMEOUT_MS in src/composition/usage-recording.ts
    expect(grace).toBeGreaterThan(preStop + drainSeconds + cutSettleSeconds + writerDrainSeconds);
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
