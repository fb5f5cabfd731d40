// vendor_a's web search server tool bills every search (0.01 each) on top of tokens. A search
// is held for before the call (the tool's max_uses) and charged as the vendor reported it;
// server tools gw cannot meter are refused before anything is held or sent (decision 327).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isolatedContext } from './support/context.js';
import { seed, startGateway, type GatewayProcess, type SeededOrg } from './support/processes.js';
import { ledgerRow } from './support/records.js';
import { messagesEvent, messagesMessage } from './support/messages-events.js';
import {
  answerMessagesText,
  closeStub,
  listenLocally,
  openEventStream,
  stubVendor,
} from './support/stub-vendor.js';

const { env, db } = isolatedContext('web-search-usage');
let org: SeededOrg;
let gateway: GatewayProcess;
const MODEL = 'vendor_a/claude-haiku-4-5';
const INPUT = 40;
const OUTPUT = 6;
const SEARCHES = 2;
let vendorCalls = 0;
/** A body whose web search allows 7 searches is answered by a stream cut after one began. */
const CUT_SHORT = /"max_uses":7/;

/** vendor_a answering after two searches: its usage names them beside the tokens. */
const stub = stubVendor((body, response) => {
  vendorCalls += 1;
  const searched = Array.isArray(body.tools) && body.tools.length > 0 ? SEARCHES : 0;
  const usage = { input_tokens: INPUT, server_tool_use: { web_search_requests: searched } };
  const message = { id: 'msg_search', model: 'claude-haiku-4-5' };
  const startUsage = { input_tokens: INPUT, output_tokens: 1 };
  if (body.stream === true && CUT_SHORT.test(JSON.stringify(body.tools))) {
    // One search begun, then the connection drops: no message_delta, no report.
    openEventStream(response);
    response.end(
      messagesEvent('message_start', {
        message: messagesMessage({ ...message, usage: startUsage }),
      }) +
        messagesEvent('content_block_start', {
          index: 0,
          content_block: {
            type: 'server_tool_use',
            id: 'srvtoolu_1',
            name: 'web_search',
            input: {},
          },
        }) +
        messagesEvent('content_block_stop', { index: 0 }),
    );
    return;
  }
  const finalUsage = { ...usage, output_tokens: OUTPUT };
  answerMessagesText(body, response, {
    ...message,
    text: 'found it',
    usage: finalUsage,
    startUsage,
    finalUsage,
  });
});

beforeAll(async () => {
  const vendorA = await listenLocally(stub);
  [org, gateway] = await Promise.all([
    seed(env),
    startGateway({
      ...env,
      VENDOR_A_BASE_URL: vendorA,
      VENDOR_A_API_KEY: 'stub-vendor-key-0123456789abcdef',
    }),
  ]);
});

afterAll(async () => {
  await gateway?.stop();
  await closeStub(stub);
});

const ask = (body: Record<string, unknown>): Promise<Response> =>
  fetch(`${gateway.url}/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': org.api_key },
    body: JSON.stringify({
      model: MODEL,
      max_tokens: 100,
      messages: [{ role: 'user', content: 'what happened today?' }],
      ...body,
    }),
  });

async function recordCount(): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM usage_records WHERE org_id = $1',
    [org.org_id],
  );
  return rows[0]!.n;
}

const webSearch = (maxUses?: unknown) => ({
  type: 'web_search_20250305',
  name: 'web_search',
  ...(maxUses !== undefined && { max_uses: maxUses }),
});

interface SearchRow {
  web_search_requests: number;
  sell_cost: string;
  vendor_cost: string;
  reserved: string;
}
const COLUMNS =
  'web_search_requests, sell_cost::text, vendor_cost::text, reserved_amount::text AS reserved';

// claude-haiku-4-5 sells (and costs) 1 per million input tokens, 5 per million output tokens;
// a search is 0.01.
const COST = ((INPUT * 1 + OUTPUT * 5) / 1e6 + SEARCHES * 0.01).toFixed(12);

describe('a request that lets the vendor search the web', () => {
  for (const stream of [false, true]) {
    it(`charges every search the vendor reported, and held every one it allowed (${stream ? 'stream' : 'JSON'})`, async () => {
      const plain = await ask({ stream });
      await plain.text();
      const searching = await ask({ stream, tools: [webSearch(5)] });
      expect(searching.status).toBe(200);
      await searching.text();
      const row = await ledgerRow<SearchRow>(db, searching.headers.get('x-request-id'), COLUMNS);
      expect(row).toMatchObject({
        web_search_requests: SEARCHES,
        sell_cost: COST,
        vendor_cost: COST,
      });
      const plainRow = await ledgerRow<SearchRow>(db, plain.headers.get('x-request-id'), COLUMNS);
      expect(plainRow.web_search_requests).toBe(0);
      // The hold covered the 5 searches allowed: 0.05 over the same request without the tool
      // (whose tool definition adds a few prompt tokens to the estimate).
      const extraHeld = Number(row.reserved) - Number(plainRow.reserved);
      expect(extraHeld).toBeGreaterThanOrEqual(0.05);
      expect(extraHeld).toBeLessThan(0.0501);
    });
  }

  it('charges a stream cut short the searches it began, not all 7 held', async () => {
    const cut = await ask({ stream: true, tools: [webSearch(7)] });
    expect(cut.status).toBe(200);
    await cut.text();
    const row = await ledgerRow<SearchRow & { end_reason: string }>(
      db,
      cut.headers.get('x-request-id'),
      `${COLUMNS}, end_reason`,
    );
    expect(row).toMatchObject({ end_reason: 'truncated', web_search_requests: 1 });
    // The prompt message_start named, and one search.
    expect(row.sell_cost).toBe((INPUT / 1e6 + 0.01).toFixed(12));
  });

  it('refuses a web search without max_uses, and code execution, before holding or sending anything', async () => {
    const before = vendorCalls;
    const recordsBefore = await recordCount();
    for (const [tools, message] of [
      [
        [webSearch()],
        'tools[0].max_uses: required for web search, a whole number from 1 to 1000 (every search is held for before the call)',
      ],
      [
        [{ name: 'lookup', input_schema: { type: 'object' } }, webSearch(0)],
        'tools[1].max_uses: required for web search, a whole number from 1 to 1000 (every search is held for before the call)',
      ],
      [
        [{ type: 'code_execution_20250825', name: 'code_execution' }],
        'tools[0]: code_execution_20250825 is billed by the vendor for its run time, which gw does not meter',
      ],
    ] as const) {
      const refused = await ask({ tools });
      expect(refused.status).toBe(400);
      expect(await refused.json()).toMatchObject({
        type: 'error',
        error: { type: 'invalid_request_error', message },
      });
    }
    expect(vendorCalls).toBe(before);
    const recordsAfter = await recordCount();
    expect(recordsAfter).toBe(recordsBefore);
  });
});
