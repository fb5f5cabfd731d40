// The failover loop against a scripted vendor and a fake budget store: which credential each
// attempt uses, when it fails over, when it stops, and that vendor error bodies reach neither
// the client nor the logs.
import { describe, expect, it } from 'vitest';
import {
  admission,
  chatExchange,
  fakePorts,
  ScriptedVendor,
} from '../../test/support/pipeline-fakes.js';
import { dispatchWithFailover, MAX_ATTEMPTS } from './failover.js';

const client = () => ({ aborted: false, current: undefined });
const rateLimited = {
  status: 429,
  headers: { 'retry-after': '7' },
  chunks: ['{"error":{"message":"slow down sk-live-0123456789abcdefXYZ"}}'],
};
const ok = { status: 200, chunks: ['{}'] };

/** One request through the loop, first on the BYOK credential cred_1. */
const dispatchOnCredential = (ports: ReturnType<typeof fakePorts>) =>
  dispatchWithFailover(ports, admission({ credentialId: 'cred_1' }), chatExchange(), client());

describe('dispatchWithFailover', () => {
  it('fails a rate-limited BYOK credential over to the next one, cooling it down by retry-after', async () => {
    const vendor = new ScriptedVendor([rateLimited, ok]);
    const ports = fakePorts(vendor, {
      secrets: { cred_1: 'key-one', cred_2: 'key-two' },
      failover: () => ({ kind: 'credential', credentialId: 'cred_2' }),
    });
    const result = await dispatchOnCredential(ports);
    expect(result).toMatchObject({ kind: 'answered', credentialId: 'cred_2' });
    expect(vendor.requests.map((request) => request.headers.authorization)).toEqual([
      'Bearer key-one',
      'Bearer key-two',
    ]);
    expect(ports.failovers).toMatchObject([
      { failedCredentialId: 'cred_1', cooldownUntilMs: 1_000_000 + 7_000, amountNano: 61_500n },
    ]);
  });

  it('sends the same body on every attempt, and drops it once an answer is accepted', async () => {
    const vendor = new ScriptedVendor([rateLimited, ok]);
    const ports = fakePorts(vendor, {
      secrets: { cred_1: 'key-one', cred_2: 'key-two' },
      failover: () => ({ kind: 'credential', credentialId: 'cred_2' }),
    });
    const exchange = chatExchange();
    const sent = exchange.body;
    await dispatchWithFailover(ports, admission({ credentialId: 'cred_1' }), exchange, client());
    expect(sent?.length).toBeGreaterThan(0);
    expect(vendor.requests.map((request) => request.body)).toEqual([sent, sent]);
    // A stream keeps its exchange for minutes: the prompt's bytes must not stay with it.
    expect(exchange.body).toBeUndefined();
  });

  it('keeps the body while no answer is accepted (the request can still be retried)', async () => {
    const exchange = chatExchange();
    const ports = fakePorts(new ScriptedVendor([rateLimited]), { secrets: { cred_1: 'key-one' } });
    await dispatchWithFailover(ports, admission(), exchange, client());
    expect(Buffer.isBuffer(exchange.body)).toBe(true);
  });

  it('falls back to the system route when failover picks it', async () => {
    const vendor = new ScriptedVendor([rateLimited, ok]);
    const ports = fakePorts(vendor, {
      secrets: { cred_1: 'key-one' },
      failover: () => ({ kind: 'system' }),
    });
    const result = await dispatchOnCredential(ports);
    expect(result).toMatchObject({ kind: 'answered', credentialId: null });
    expect(vendor.requests[1]!.headers.authorization).toBe('Bearer system-key');
  });

  it('ends as failover_exhausted with the reservation error when the wallet cannot take over', async () => {
    const ports = fakePorts(new ScriptedVendor([rateLimited]), {
      secrets: { cred_1: 'key-one' },
      failover: () => ({ kind: 'wallet_short', availableNano: 0n }),
    });
    const result = await dispatchOnCredential(ports);
    expect(result).toMatchObject({
      kind: 'ended',
      end: { kind: 'vendor_refused', upstreamStatus: 429, failoverExhausted: true },
      reply: { code: 'gw_reservation_insufficient_balance' },
    });
  });

  it('does not fail over on the system route, nor on an answer that is not the key’s fault', async () => {
    const vendor = new ScriptedVendor([
      { status: 429, chunks: ['{}'] },
      { status: 400, chunks: ['{"error":{"message":"bad field"}}'] },
    ]);
    const ports = fakePorts(vendor, { secrets: { cred_1: 'key-one' } });
    const system = await dispatchWithFailover(ports, admission(), chatExchange(), client());
    const badRequest = await dispatchOnCredential(ports);
    expect(system).toMatchObject({ kind: 'ended', reply: { code: 'gw_upstream_rate_limited' } });
    expect(badRequest).toMatchObject({ kind: 'ended', reply: { code: 'gw_invalid_request' } });
    expect(ports.failovers).toHaveLength(0);
  });

  it('stops after MAX_ATTEMPTS however many credentials fail', async () => {
    const vendor = new ScriptedVendor(Array.from({ length: MAX_ATTEMPTS }, () => rateLimited));
    const ports = fakePorts(vendor, {
      secrets: { cred_1: 'key-one' },
      failover: () => ({ kind: 'credential', credentialId: 'cred_1' }),
    });
    const result = await dispatchOnCredential(ports);
    expect(vendor.requests).toHaveLength(MAX_ATTEMPTS);
    expect(result).toMatchObject({ kind: 'ended', reply: { code: 'gw_upstream_rate_limited' } });
  });

  it('sends again a request that was never written (the vendor had closed its connections)', async () => {
    const vendor = new ScriptedVendor([
      { fail: { code: 'GW_UPSTREAM_NOT_SENT' } },
      { fail: { code: 'GW_VENDOR_CLOSED_CONNECTIONS' } },
      ok,
    ]);
    const ports = fakePorts(vendor);
    const exchange = chatExchange();
    const sent = exchange.body;
    const result = await dispatchWithFailover(ports, admission(), exchange, client());
    expect(result).toMatchObject({ kind: 'answered', credentialId: null });
    expect(vendor.requests.map((request) => request.body)).toEqual([sent, sent, sent]);
    expect(ports.failovers).toHaveLength(0);
  });

  it('never sends again a request that was written, whatever became of it (decision 251)', async () => {
    for (const code of ['UND_ERR_SOCKET', 'ECONNRESET', 'EPIPE']) {
      const vendor = new ScriptedVendor([{ fail: { code } }, ok]);
      const result = await dispatchWithFailover(
        fakePorts(vendor),
        admission(),
        chatExchange(),
        client(),
      );
      expect(result).toMatchObject({
        kind: 'ended',
        end: { kind: 'no_answer', cause: 'network_error' },
        reply: { code: 'gw_upstream_error' },
      });
      expect(vendor.requests).toHaveLength(1);
    }
  });

  it('stops sending again after MAX_ATTEMPTS connections the vendor closed', async () => {
    const notSent = { fail: { code: 'GW_UPSTREAM_NOT_SENT' } };
    const vendor = new ScriptedVendor(Array.from({ length: MAX_ATTEMPTS }, () => notSent));
    const result = await dispatchWithFailover(
      fakePorts(vendor),
      admission(),
      chatExchange(),
      client(),
    );
    expect(vendor.requests).toHaveLength(MAX_ATTEMPTS);
    expect(result).toMatchObject({ kind: 'ended', reply: { code: 'gw_upstream_error' } });
  });

  it('tries no next credential for a client that left while the failed one was cooled down', async () => {
    const vendor = new ScriptedVendor([rateLimited, ok]);
    const leaving = client();
    const ports = fakePorts(vendor, {
      secrets: { cred_1: 'key-one', cred_2: 'key-two' },
      failover: () => {
        leaving.aborted = true; // the client leaves between the two attempts
        return { kind: 'credential', credentialId: 'cred_2' };
      },
    });
    const result = await dispatchWithFailover(
      ports,
      admission({ credentialId: 'cred_1' }),
      chatExchange(),
      leaving,
    );
    expect(result).toMatchObject({
      kind: 'ended',
      end: { kind: 'not_dispatched', cause: 'client_gone' },
      reply: null,
    });
    expect(vendor.requests).toHaveLength(1);
  });

  it('keeps vendor error bodies and secrets out of the reply and the logs', async () => {
    const vendor = new ScriptedVendor([
      rateLimited,
      {
        status: 500,
        chunks: ['{"error":{"message":"db password hunter2 sk-live-0123456789abcdefXYZ"}}'],
      },
    ]);
    const ports = fakePorts(vendor, {
      secrets: { cred_1: 'key-one' },
      failover: () => ({ kind: 'system' }),
    });
    const result = await dispatchOnCredential(ports);
    expect(result).toMatchObject({ kind: 'ended', reply: { code: 'gw_upstream_error' } });
    const visible = JSON.stringify([result, ports.logged]);
    expect(visible).not.toContain('hunter2');
    expect(visible).not.toContain('sk-live');
    expect(visible).not.toContain('key-one');
  });
});
