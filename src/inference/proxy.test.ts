// The proxy step against fakes of its ports: which charge each ending settles (exactly once),
// and which outcome the HTTP layer gets. Milliseconds, no processes, no Redis.
import { describe, expect, it } from 'vitest';
import {
  admission,
  chatExchange,
  FakeClient,
  fakePorts,
  ScriptedVendor,
} from '../../test/support/pipeline-fakes.js';
import { UpstreamBody } from '../providers/upstream-body.js';
import type { UpstreamCall } from '../providers/upstream.js';
import { runProxy } from './proxy.js';
import { ShutdownCut } from './shutdown-cut.js';

const COMPLETION =
  '{"id":"c1","object":"chat.completion","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4}}';

const request = (stream = false) => ({
  admission: admission({ call: chatExchange(stream) }),
  exchange: chatExchange(stream),
  stream,
  startedAtMs: 0,
});

/** The ports, with a client that leaves as soon as the vendor call is made. */
function leavingOnRequest<P extends ReturnType<typeof fakePorts>>(ports: P, client: FakeClient): P {
  const upstream = ports.upstream;
  return {
    ...ports,
    upstream: {
      request: (call: Parameters<typeof upstream.request>[0]) => {
        const made = upstream.request(call);
        client.abort();
        return made;
      },
    },
  };
}

describe('runProxy', () => {
  it('makes no vendor call and charges nothing for a client gone before dispatch', async () => {
    const vendor = new ScriptedVendor([]);
    const ports = fakePorts(vendor);
    const client = new FakeClient();
    client.aborted = true;
    const outcome = await runProxy(ports, request(), client);
    expect(outcome).toEqual({ kind: 'client_gone' });
    expect(vendor.requests).toHaveLength(0);
    expect(ports.settled).toMatchObject([
      { status: 'client_aborted', reason: 'client_gone_before_dispatch', inputTokens: 0 },
    ]);
  });

  it('returns the JSON answer and settles the reported usage', async () => {
    const vendor = new ScriptedVendor([{ status: 200, chunks: [COMPLETION] }]);
    const ports = fakePorts(vendor);
    const outcome = await runProxy(ports, request(), new FakeClient());
    expect(outcome).toEqual({ kind: 'json', body: Buffer.from(COMPLETION) });
    expect(ports.settled).toMatchObject([
      { status: 'completed', reason: 'completed', inputTokens: 9, outputTokens: 4, mock: false },
    ]);
    expect(vendor.requests[0]!.headers.authorization).toBe('Bearer system-key');
  });

  it('keeps the holds while the request runs, and stops once it has settled, on every ending', async () => {
    const vendor = new ScriptedVendor([
      { status: 200, chunks: [COMPLETION] },
      { fail: { code: 'ECONNREFUSED' } },
    ]);
    const base = fakePorts(vendor);
    const events: string[] = [];
    const ports = {
      ...base,
      keepHeld: () => {
        events.push('keep');
        return () => void events.push(`stop after ${base.settled.length} settled`);
      },
    };
    await runProxy(ports, request(), new FakeClient());
    await runProxy(ports, request(), new FakeClient());
    expect(events).toEqual(['keep', 'stop after 1 settled', 'keep', 'stop after 2 settled']);
  });

  it('answers 502 for invalid JSON and charges the input only', async () => {
    const ports = fakePorts(new ScriptedVendor([{ status: 200, chunks: ['{"id":'] }]));
    const outcome = await runProxy(ports, request(), new FakeClient());
    expect(outcome).toMatchObject({ kind: 'error', error: { code: 'gw_upstream_error' } });
    expect(ports.settled).toMatchObject([
      { status: 'incomplete', reason: 'vendor_invalid_json', inputTokens: 10, outputTokens: 0 },
    ]);
  });

  it('maps a network error and a timeout before the answer, charging nothing', async () => {
    const ports = fakePorts(
      new ScriptedVendor([
        { fail: { code: 'ECONNREFUSED' } },
        { fail: { code: 'UND_ERR_HEADERS_TIMEOUT' } },
      ]),
    );
    const refused = await runProxy(ports, request(), new FakeClient());
    const timedOut = await runProxy(ports, request(), new FakeClient());
    expect(refused).toMatchObject({ kind: 'error', error: { code: 'gw_upstream_error' } });
    expect(timedOut).toMatchObject({ kind: 'error', error: { code: 'gw_upstream_timeout' } });
    expect(ports.settled).toMatchObject([
      { status: 'upstream_error', reason: 'network_error', inputTokens: 0 },
      { status: 'upstream_error', reason: 'upstream_timeout', inputTokens: 0 },
    ]);
  });

  it('charges nothing to a client that left before any byte of its request was written', async () => {
    // The client left while its call was queued for a connection, or while the gateway found
    // the vendor's connections closed: the vendor never saw the prompt.
    for (const fail of [
      { code: 'GW_UPSTREAM_ABORTED', written: false },
      { code: 'GW_UPSTREAM_NOT_SENT', written: false },
      { code: 'GW_VENDOR_CLOSED_CONNECTIONS', written: false },
      { code: 'UND_ERR_CONNECT_TIMEOUT', written: false },
    ]) {
      const client = new FakeClient();
      const ports = leavingOnRequest(fakePorts(new ScriptedVendor([{ fail }])), client);
      const running = runProxy(ports, request(), client);
      expect(await running).toEqual({ kind: 'client_gone' });
      expect(ports.settled).toMatchObject([
        { status: 'client_aborted', reason: 'client_gone_before_dispatch', inputTokens: 0 },
      ]);
    }
  });

  it('charges the input to a client that left once its request was written', async () => {
    const client = new FakeClient();
    const ports = leavingOnRequest(
      fakePorts(new ScriptedVendor([{ fail: { code: 'GW_UPSTREAM_ABORTED' } }])),
      client,
    );
    const running = runProxy(ports, request(), client);
    expect(await running).toEqual({ kind: 'client_gone' });
    expect(ports.settled).toMatchObject([
      { status: 'client_aborted', reason: 'client_aborted_before_answer', inputTokens: 10 },
    ]);
  });

  it('charges an estimated prompt as the cache write its hold priced it as', async () => {
    // The body asked for a cache write: without the vendor's report, the prompt may have been
    // written to its cache, and is charged at that rate, as it was held.
    const client = new FakeClient();
    const ports = leavingOnRequest(
      fakePorts(new ScriptedVendor([{ fail: { code: 'GW_UPSTREAM_ABORTED' } }])),
      client,
    );
    const estimatedPrompt = {
      inputTokens: 10,
      cacheWriteTokens: 10,
      cacheWrite1hTokens: 0,
      cacheReadTokens: 0,
    };
    const asked = { ...request(), admission: admission({ call: chatExchange(), estimatedPrompt }) };
    expect(await runProxy(ports, asked, client)).toEqual({ kind: 'client_gone' });
    expect(ports.settled).toMatchObject([
      { reason: 'client_aborted_before_answer', ...estimatedPrompt, outputTokens: 0 },
    ]);
  });

  it('relays a stream with backpressure and ends it with the terminal event after settling', async () => {
    const events = [
      'data: {"choices":[{"delta":{"content":"a"}}]}\n\n',
      'data: {"choices":[{"delta":{"content":"b"}}]}\n\n',
      'data: {"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2}}\n\n',
      'data: [DONE]\n\n',
    ];
    const ports = fakePorts(new ScriptedVendor([{ status: 200, chunks: events }]));
    const client = new FakeClient(1); // every write asks the relay to wait for a drain
    const outcome = await runProxy(ports, request(true), client);
    expect(outcome).toEqual({ kind: 'stream_end', finalEvent: 'data: [DONE]\n\n' });
    expect(client.head).toBe(200);
    // The scripted vendor sends every chunk in one run, as one socket read: one write.
    expect(client.written).toEqual([events[0]! + events[1]!]);
    expect(client.drains).toBe(1);
    expect(ports.settled).toMatchObject([
      { status: 'completed', inputTokens: 9, outputTokens: 2, stream: true },
    ]);
  });

  it('counts and logs a call its vendor served at a tier gw does not price, charged as any other', async () => {
    const flex = COMPLETION.replace('"choices"', '"service_tier":"flex","choices"');
    const stream = [
      'data: {"choices":[{"delta":{"content":"a"}}]}\n\n',
      'data: {"service_tier":"priority","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4}}\n\n',
      'data: [DONE]\n\n',
    ];
    const vendor = new ScriptedVendor([
      { status: 200, chunks: [COMPLETION] },
      { status: 200, chunks: [flex] },
      { status: 200, chunks: stream },
    ]);
    const counted: string[][] = [];
    const ports = {
      ...fakePorts(vendor, { secrets: { cred_1: 'sk-vendor-secret' } }),
      unpricedTierCounter: {
        unpricedTierServed: (...labels: string[]) => void counted.push(labels),
      },
    };
    const byok = (stream: boolean) => ({
      ...request(stream),
      admission: admission({ call: chatExchange(stream), credentialId: 'cred_1' }),
    });
    await runProxy(ports, byok(false), new FakeClient());
    expect(counted).toEqual([]); // no tier named: the standard one
    await runProxy(ports, byok(false), new FakeClient());
    await runProxy(ports, byok(true), new FakeClient());
    expect(counted).toEqual([
      ['vendor_b', 'byok', 'service_tier', 'flex'],
      ['vendor_b', 'byok', 'service_tier', 'priority'],
    ]);
    const charged = ports.settled.map(({ inputTokens, outputTokens, credentialId }) => ({
      inputTokens,
      outputTokens,
      credentialId,
    }));
    expect(new Set(charged.map((charge) => JSON.stringify(charge))).size).toBe(1);
    expect(charged[0]).toEqual({ inputTokens: 9, outputTokens: 4, credentialId: 'cred_1' });
    const warnings = ports.logged.filter((line) => JSON.stringify(line).includes('tier gw does'));
    expect(warnings).toEqual([
      [
        {
          requestId: 'req_1',
          orgId: 'org_1',
          model: 'vendor_b/gpt-4o-mini',
          provider: 'vendor_b',
          route: 'byok',
          credentialId: 'cred_1',
          reported: { service_tier: 'flex' },
        },
        'vendor served the call at a tier gw does not price; charged at the catalogue rates',
      ],
      [expect.objectContaining({ reported: { service_tier: 'priority' } }), expect.any(String)],
    ]);
    expect(JSON.stringify(ports.logged)).not.toContain('sk-vendor-secret');
  });

  it('closes a truncated stream without the terminal event and charges the counted text', async () => {
    const ports = fakePorts(
      new ScriptedVendor([
        {
          status: 200,
          chunks: ['data: {"choices":[{"delta":{"content":"partial"}}]}\n\n'],
          breakWith: { code: 'UND_ERR_SOCKET' },
        },
      ]),
      { countedOutputTokens: 1 },
    );
    const outcome = await runProxy(ports, request(true), new FakeClient());
    expect(outcome).toEqual({ kind: 'stream_end', finalEvent: null });
    expect(ports.settled).toMatchObject([
      { status: 'incomplete', reason: 'truncated', inputTokens: 10, outputTokens: 1 },
    ]);
  });

  it('records a vendor error event inside a stream', async () => {
    const ports = fakePorts(
      new ScriptedVendor([
        {
          status: 200,
          chunks: [
            'data: {"choices":[{"delta":{"content":"a"}}]}\n\n',
            'data: {"error":{"message":"boom","type":"server_error"}}\n\n',
          ],
        },
      ]),
      { countedOutputTokens: 1 },
    );
    const outcome = await runProxy(ports, request(true), new FakeClient());
    expect(outcome).toEqual({ kind: 'stream_end', finalEvent: null });
    expect(ports.settled).toMatchObject([{ status: 'incomplete', reason: 'vendor_error_event' }]);
  });

  it('settles once and rethrows when a bug strikes between the hold and settle', async () => {
    const ports = fakePorts(new ScriptedVendor([{ status: 200, chunks: [COMPLETION] }]));
    const broken = {
      ...request(),
      exchange: {
        ...chatExchange(),
        translateJson: () => {
          throw new Error('bug');
        },
      },
    };
    await expect(runProxy(ports, broken, new FakeClient())).rejects.toThrow('bug');
    expect(ports.settled).toHaveLength(1);
    expect(ports.settled[0]).toMatchObject({ reason: 'gateway_error', inputTokens: 0 });
  });

  it('cuts a stream at the shutdown cut, even to a client that stopped reading', async () => {
    // A vendor that sends one event and keeps its body open; a client that never drains.
    let aborted = 0;
    const body = new UpstreamBody({
      pause: () => undefined,
      resume: () => undefined,
      abort: () => void (aborted += 1),
    });
    const call: UpstreamCall = {
      response: Promise.resolve({ statusCode: 200, headers: {}, body }),
      abort: () => {
        aborted += 1;
        body.fail(Object.assign(new Error('aborted'), { code: 'GW_UPSTREAM_ABORTED' }));
      },
      written: true,
    };
    const shutdown = new ShutdownCut();
    const ports = {
      ...fakePorts(new ScriptedVendor([]), { countedOutputTokens: 1 }),
      upstream: { request: () => call },
      shutdown,
    };
    const client = new FakeClient(1);
    client.drained = () => new Promise<void>(() => undefined);
    const running = runProxy(ports, request(true), client);
    body.push(Buffer.from('data: {"choices":[{"delta":{"content":"partial"}}]}\n\n'));
    await new Promise((resolve) => setTimeout(resolve, 10));
    shutdown.cutAll();
    const outcome = await running;
    expect(aborted).toBeGreaterThan(0);
    expect(outcome).toMatchObject({ kind: 'stream_end' });
    const finalEvent = (outcome as { finalEvent: string }).finalEvent;
    expect(finalEvent.startsWith('data: ')).toBe(true);
    expect(JSON.parse(finalEvent.slice(6))).toMatchObject({ error: { code: 'gw_unavailable' } });
    expect(ports.settled).toMatchObject([
      { status: 'incomplete', reason: 'gateway_shutdown', inputTokens: 10, outputTokens: 1 },
    ]);
  });

  it('sends nothing and charges nothing once the cut came before dispatch', async () => {
    const vendor = new ScriptedVendor([]);
    const shutdown = new ShutdownCut();
    shutdown.cutAll();
    const ports = { ...fakePorts(vendor), shutdown };
    const outcome = await runProxy(ports, request(), new FakeClient());
    expect(outcome).toMatchObject({
      kind: 'error',
      error: { code: 'gw_unavailable', status: 503 },
    });
    expect(vendor.requests).toHaveLength(0);
    expect(ports.settled).toMatchObject([
      { status: 'incomplete', reason: 'gateway_shutdown', inputTokens: 0, outputTokens: 0 },
    ]);
  });
});
