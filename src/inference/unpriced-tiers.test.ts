import { describe, expect, it } from 'vitest';
import type { UnpricedTier } from '../protocols/common/served-tiers.js';
import { UnpricedTierLog, type ServedCall } from './unpriced-tiers.js';

const PRIORITY: UnpricedTier[] = [
  { field: 'service_tier', reported: 'priority', tier: 'priority' },
];
const FLEX: UnpricedTier[] = [{ field: 'service_tier', reported: 'flex', tier: 'flex' }];

let nextRequest = 0;
const call = (orgId: string, credentialId: string | null = null): ServedCall => ({
  admission: {
    requestId: `req_${(nextRequest += 1)}`,
    identity: { orgId } as ServedCall['admission']['identity'],
    model: { id: 'vendor_b/gpt-4o-mini' } as ServedCall['admission']['model'],
  },
  provider: 'vendor_b',
  credentialId,
});

function recordingLog(kindsMax?: number) {
  let nowMs = 0;
  const lines: Record<string, unknown>[] = [];
  const log = new UnpricedTierLog(
    { warn: (fields: object) => void lines.push(fields as Record<string, unknown>) } as never,
    () => nowMs,
    60_000,
    kindsMax,
  );
  return {
    log,
    lines,
    advance: (ms: number) => {
      nowMs += ms;
    },
  };
}

describe('UnpricedTierLog', () => {
  it('logs one line a minute per org, route and tiers, naming the calls left out since the last', () => {
    const { log, lines, advance } = recordingLog();
    log.served(call('org_a'), PRIORITY);
    advance(1_000);
    log.served(call('org_a'), PRIORITY);
    log.served(call('org_a'), PRIORITY);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toEqual({
      requestId: 'req_1',
      orgId: 'org_a',
      model: 'vendor_b/gpt-4o-mini',
      provider: 'vendor_b',
      route: 'system',
      credentialId: null,
      reported: { service_tier: 'priority' },
    });
    advance(59_000);
    log.served(call('org_a'), PRIORITY);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatchObject({ requestId: 'req_4', similarCallsNotLogged: 2 });
    advance(60_000);
    log.served(call('org_a'), PRIORITY);
    expect(lines[2]).not.toHaveProperty('similarCallsNotLogged');
  });

  it('logs another org, credential or tier on its own line at once', () => {
    const { log, lines } = recordingLog();
    log.served(call('org_a'), PRIORITY);
    log.served(call('org_b'), PRIORITY);
    log.served(call('org_a', 'cred_1'), PRIORITY);
    log.served(call('org_a'), FLEX);
    expect(
      lines.map(({ orgId, credentialId, reported }) => [orgId, credentialId, reported]),
    ).toEqual([
      ['org_a', null, { service_tier: 'priority' }],
      ['org_b', null, { service_tier: 'priority' }],
      ['org_a', 'cred_1', { service_tier: 'priority' }],
      ['org_a', null, { service_tier: 'flex' }],
    ]);
  });

  it('remembers a bounded number of kinds: the one logged longest ago is forgotten first', () => {
    const { log, lines } = recordingLog(2);
    log.served(call('org_a'), PRIORITY);
    log.served(call('org_b'), PRIORITY);
    log.served(call('org_c'), PRIORITY); // org_a forgotten
    log.served(call('org_b'), PRIORITY); // still remembered: left out
    log.served(call('org_a'), PRIORITY); // logged again; org_b, logged before org_c, forgotten
    log.served(call('org_c'), PRIORITY); // still remembered: left out
    log.served(call('org_b'), PRIORITY);
    expect(lines.map(({ orgId }) => orgId)).toEqual(['org_a', 'org_b', 'org_c', 'org_a', 'org_b']);
  });
});
