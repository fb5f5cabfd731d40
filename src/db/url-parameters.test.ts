import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config.js';
import { poolSettingsInUrl } from './url-parameters.js';

describe('the pool settings a DATABASE_URL names', () => {
  it('finds them as parameters and in options, and nothing else', () => {
    expect(poolSettingsInUrl('postgres://u:p%40ss@db:5432/gw?sslmode=require')).toEqual([]);
    expect(
      poolSettingsInUrl(
        'postgres://db/gw?application_name=mine&idle_in_transaction_session_timeout=0',
      ),
    ).toEqual(['application_name', 'idle_in_transaction_session_timeout']);
    expect(poolSettingsInUrl('postgres://db/gw?options=-c%20statement_timeout%3D0')).toEqual([
      'statement_timeout',
    ]);
    expect(poolSettingsInUrl('postgres://db/gw?options=--query_timeout%3D5')).toEqual([
      'query_timeout',
    ]);
    // Another server setting in options is the operator's own.
    expect(poolSettingsInUrl('postgres://db/gw?options=-c%20search_path%3Dgw')).toEqual([]);
  });

  it('leaves a URL without them to the configuration as it was', () => {
    const url = 'postgres://u@db:5432/gw?sslmode=require&options=-c%20search_path%3Dgw';
    expect(loadConfig({ DATABASE_URL: url }).DATABASE_URL).toBe(url);
  });
});
