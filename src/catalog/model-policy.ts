// Model policies (an API key's, a provider credential's): the one check every writer uses (the
// CLI, the dashboard API, the services under them), so no key or credential is stored with a
// pattern that can never match a model (decision 338). A pattern matches as modelPolicyAllows
// (models.ts) reads it: `*`, `<provider>/*`, or an exact model id `<provider>/<model>`.
import type { DbPool } from '../db/pool.js';
import { PROVIDER_IDS } from '../providers/registry.js';

/** At most this many patterns in one policy. */
export const MAX_MODEL_POLICY_PATTERNS = 100;

/** The model part of an exact id, as the catalogue's ids have it (`claude-sonnet-4-5`). */
const MODEL_NAME = /^[\w.:-]+$/;

/** A pattern as an answer shows it: JSON-quoted (control characters escaped), 80 at most. */
function quoted(pattern: string): string {
  return JSON.stringify(pattern.length > 80 ? `${pattern.slice(0, 80)}…` : pattern);
}

/**
 * Why a pattern can never match a model, or undefined when it can. `provider`: the policy is
 * a credential's, which serves only its own provider's models.
 */
export function modelPatternProblem(
  pattern: string,
  provider?: string,
  providers: readonly string[] = PROVIDER_IDS,
): string | undefined {
  const known = (provider === undefined ? providers : [provider]).map((id) => `${id}/`);
  const examples = `e.g. ${known[0]}* or ${known[0]}<model>`;
  if (pattern === '*') return undefined;
  const shown = quoted(pattern);
  const slash = pattern.indexOf('/');
  if (slash < 0) {
    return `${shown} names no provider: a pattern is *, <provider>/* or <provider>/<model> (${examples}), with a provider of ${known.map((prefix) => prefix.slice(0, -1)).join(', ')}`;
  }
  const prefix = pattern.slice(0, slash + 1);
  if (!known.includes(prefix)) {
    const which =
      provider === undefined ? 'no registered provider' : `another provider than the credential's`;
    return `${shown} names ${which}: patterns start with ${known.join(' or ')} (${examples})`;
  }
  const model = pattern.slice(slash + 1);
  if (model === '*') return undefined;
  if (!MODEL_NAME.test(model)) {
    return `${shown} is not a pattern: after ${prefix} comes * (every model) or one model id (letters, digits, . _ : -); * matches only as the whole model part`;
  }
  return undefined;
}

/** Why a policy cannot be stored (empty, too long, a pattern that never matches), or undefined. */
export function modelPolicyProblem(
  policy: readonly string[],
  provider?: string,
): string | undefined {
  if (policy.length === 0) return 'must allow at least one model';
  if (policy.length > MAX_MODEL_POLICY_PATTERNS)
    return `must have at most ${MAX_MODEL_POLICY_PATTERNS} patterns`;
  for (const pattern of policy) {
    const problem = modelPatternProblem(pattern, provider);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/** What holds a policy, as its warnings name it. */
export type PolicyHolder = 'key' | 'credential';

/**
 * The policy's exact model ids the catalogue does not list (enabled) now: stored all the same,
 * since models are added to the catalogue while the gateway runs, but worth a warning (one
 * sentence each, naming the `holder`: what the user just issued or saved).
 */
export async function modelPolicyWarnings(
  db: Pick<DbPool, 'query'>,
  policy: readonly string[],
  holder: PolicyHolder,
): Promise<string[]> {
  const exact = [...new Set(policy.filter((pattern) => !pattern.endsWith('*')))];
  if (exact.length === 0) return [];
  const { rows } = await db.query<{ id: string }>(
    'SELECT id FROM models WHERE enabled AND id = ANY($1)',
    [exact],
  );
  const listed = new Set(rows.map((row) => row.id));
  return exact
    .filter((id) => !listed.has(id))
    .map(
      (id) => `${id} is not in the model catalogue (yet): the ${holder} serves it once it is added`,
    );
}
