// Routes declared `idempotent: true` take an Idempotency-Key header (decision 372, Stripe's
// rule): the same key, route, caller and request answer what the first one answered,
// with `Idempotent-Replayed: true`, and change nothing; the key with another request is refused
// (409 gw_idempotency_key_reused); a second request while the first runs is refused (409
// gw_conflict), never run. Enforced here, once, around the route's handler. The first request
// holds its key by a lease it renews while it runs, and commits its change only while it holds
// it (decision 388): a key whose request died is the retry's within seconds. A route that
// declares how (`finishesCommitted`) has a first request that committed its change and then
// failed before answering, or stopped (its lease lapsed), finished by the retry, which answers
// and keeps the route's answer (decisions 542, 576); every other route answers such a retry 409.
import { runFenced } from '../../db/commit-fence.js';
import { gwError, isGwError } from '../../errors.js';
import { jsonHeaders } from '../../http/respond.js';
import type { HttpRequest } from '../../http/types.js';
import { idempotencyKeyOf } from '../../idempotency/key.js';
import {
  commitFenceOf,
  keepLease,
  requestFingerprint,
  type HeldKey,
  type IdempotencyKeys,
  type IdempotentRequest,
} from '../../idempotency/store.js';
import { JsonAnswer, type DeclaredRoute, type RouteResult } from './declaration.js';

/** The header of a replayed answer. */
export const REPLAYED_HEADER = 'idempotent-replayed';

/**
 * The organization a caller acts for (the path's for a member, its own for a service key), and
 * whose key it is (decision 379): another member of the organization sending the same key is a
 * request of their own, never a replay of an answer that may hold someone else's secret.
 */
function keyOwner(caller: unknown): { orgId: string; caller: string } {
  const { org, orgId, user, keyId } = caller as {
    org?: { id: string };
    orgId?: string;
    user?: { id: string };
    keyId?: string;
  };
  return {
    orgId: org?.id ?? orgId!,
    caller: user ? `user:${user.id}` : `service_key:${keyId!}`,
  };
}

/** A route's way to finish a first request that committed, then failed (finishesCommitted). */
export interface FinishCommitted {
  effectOf(committed: unknown): string | undefined;
  answer(effectRef: string): Promise<RouteResult>;
}

/**
 * Runs `run` (the route's handler) at most once per Idempotency-Key the request carries, and
 * answers a repeated request with the first answer; without a key, just runs it.
 */
export async function runIdempotently(
  keys: IdempotencyKeys,
  route: DeclaredRoute<never>,
  request: HttpRequest,
  call: { readonly caller: unknown; readonly body: unknown; readonly successStatus: number },
  run: () => Promise<RouteResult>,
  finish?: FinishCommitted,
): Promise<RouteResult> {
  const key = idempotencyKeyOf(request.headers);
  if (key === undefined) return run();
  if (isGwError(key)) return key;
  const owner = keyOwner(call.caller);
  const idempotent: IdempotentRequest = {
    orgId: owner.orgId,
    caller: owner.caller,
    route: `${route.method} ${route.path}`,
    key,
    requestHash: requestFingerprint(request.path, call.body),
  };
  const answers: KeptAnswers = {
    successStatus: call.successStatus,
    carriesSecret: route.answerCarriesSecret === true,
  };
  return runUnderKey(keys, idempotent, answers, run, finish);
}

/** How the answers of work run under a key are kept: a body alone is sent with `successStatus`. */
export interface KeptAnswers {
  readonly successStatus: number;
  /** The answer holds a secret shown once (kept sealed, or not at all). */
  readonly carriesSecret: boolean;
}

/**
 * What a claim the key refuses is answered (decision 393: each holds in every state the key's
 * row can be in). The routes' speak of the Idempotency-Key header; a caller whose key comes
 * otherwise (`gw wallet`'s --idempotency-key flag) says its own (decision 575).
 */
export interface KeyRefusals {
  /** The key came with another request: gw_idempotency_key_reused. */
  readonly reused: string;
  /** The rest are gw_conflict: a first request with the key ran or runs. */
  running(committed: boolean): string;
  abandoned(startedAt: string, committed: boolean): string;
  failed(committed: boolean): string;
  readonly unopenable: string;
  readonly unreplayable: string;
}

/** The routes' refusals, naming the Idempotency-Key header. */
export const HEADER_KEY_REFUSALS: KeyRefusals = {
  reused:
    'Idempotency-Key was already used with a different request (path or body); use a new key for a new request',
  running: (committed) =>
    committed
      ? 'a request with this Idempotency-Key is still being processed: it has committed its change and not yet recorded its answer; retry to get it'
      : 'a request with this Idempotency-Key is still being processed; retry once it has answered',
  abandoned: (startedAt, committed) =>
    committed
      ? `the first request with this Idempotency-Key started at ${startedAt} and committed its change, but has not recorded its answer: the gateway serving it stopped, or cannot reach Postgres. Check what it made before using a new key (should that gateway still record the answer, this key replays it)`
      : `the first request with this Idempotency-Key started at ${startedAt} and has not recorded its answer (the gateway serving it stopped, or lost Postgres, mid-request); it may or may not have taken effect: check, then use a new key`,
  failed: (committed) =>
    committed
      ? 'the first request with this Idempotency-Key committed its change, then failed before answering; check what it made, then use a new key'
      : 'the first request with this Idempotency-Key failed with an internal error and may or may not have taken effect; check, then use a new key',
  unopenable:
    'the first request with this Idempotency-Key succeeded; its answer was sealed under a master key this gateway no longer has (CREDENTIALS_PREVIOUS_KEYS); check what it made, or run `gw credentials rewrap` before dropping a previous key',
  unreplayable:
    'the first request with this Idempotency-Key succeeded; its answer held a secret shown once, which this gateway does not keep without CREDENTIALS_MASTER_KEY',
};

/**
 * Runs `run` at most once per idempotency key, whoever asks (a route's request, a CLI command
 * such as `gw wallet topup`): the first answer replayed, a key in use or of unknown outcome
 * refused with gw_conflict, one that came with another request with gw_idempotency_key_reused
 * (in `refusals`' words), and a first run that committed and then failed finished by `finish`
 * when given (542).
 */
export async function runUnderKey(
  keys: IdempotencyKeys,
  idempotent: IdempotentRequest,
  answers: KeptAnswers,
  run: () => Promise<RouteResult>,
  finish?: FinishCommitted,
  refusals: KeyRefusals = HEADER_KEY_REFUSALS,
): Promise<RouteResult> {
  const claim = await keys.claim(idempotent);
  switch (claim.kind) {
    case 'replay':
      return replayed(claim.status, claim.body);
    case 'reused':
      return gwError('gw_idempotency_key_reused', refusals.reused);
    case 'running':
      return gwError('gw_conflict', refusals.running(claim.committed), {
        headers: { 'retry-after': '1' },
      });
    case 'abandoned':
      // Its request stopped after committing what it named (576): finished as a failed one.
      if (finish && claim.effectRef !== undefined) {
        return finishCommitted(keys, idempotent, answers, claim.effectRef, finish);
      }
      return gwError(
        'gw_conflict',
        refusals.abandoned(claim.startedAt, claim.effect === 'committed'),
      );
    case 'unopenable':
      return gwError('gw_conflict', refusals.unopenable);
    case 'failed':
      if (finish && claim.effectRef !== undefined) {
        return finishCommitted(keys, idempotent, answers, claim.effectRef, finish);
      }
      return gwError('gw_conflict', refusals.failed(claim.effect === 'committed'));
    case 'unreplayable':
      return gwError('gw_conflict', refusals.unreplayable);
    case 'claimed':
      break;
  }
  const stopRenewing = keepLease(keys, claim.held);
  try {
    return await runHolding(keys, claim.held, answers, run, finish?.effectOf);
  } finally {
    stopRenewing();
  }
}

/** An answer kept for the key, sent again: marked as replayed. */
function replayed(status: number, body: unknown): JsonAnswer {
  return new JsonAnswer(status, body, { [REPLAYED_HEADER]: 'true', ...jsonHeaders });
}

/** What the router records for a handler's success (a JsonAnswer, or a body). */
function answerOf(
  result: RouteResult,
  { successStatus, carriesSecret }: KeptAnswers,
): { status: number; body: unknown; carriesSecret: boolean } {
  return result instanceof JsonAnswer
    ? { status: result.status, body: result.body, carriesSecret }
    : { status: successStatus, body: result, carriesSecret };
}

/**
 * A retry of a first request that committed `effectRef` and then failed before answering, or
 * stopped and let its lease lapse (its process killed, its Postgres lost: decision 576): the
 * route finishes it (the top-up's Redis step: applied once, whoever applies it) and answers
 * what it answers on success, marked as replayed (this retry changed nothing of its own). The
 * answer is kept for the key, so every later retry replays it; a retry that finished it at the
 * same time, or a stopped first request that came back and kept its own, has that answer sent
 * instead. A finish that fails (Redis still down) leaves the key as it was, for the next retry.
 */
async function finishCommitted(
  keys: IdempotencyKeys,
  idempotent: IdempotentRequest,
  answers: KeptAnswers,
  effectRef: string,
  finish: FinishCommitted,
): Promise<RouteResult> {
  const result = await finish.answer(effectRef);
  if (isGwError(result) || result === undefined) return result;
  const answer = answerOf(result, answers);
  if (!(await keys.completeUnanswered(idempotent, effectRef, answer))) {
    const kept = await keys.claim(idempotent);
    if (kept.kind === 'replay') return replayed(kept.status, kept.body);
  }
  return replayed(answer.status, answer.body);
}

/** Runs the handler of a request holding its key, and records how it ended. */
async function runHolding(
  keys: IdempotencyKeys,
  held: HeldKey,
  answers: KeptAnswers,
  run: () => Promise<RouteResult>,
  effectOf: FinishCommitted['effectOf'] | undefined,
): Promise<RouteResult> {
  let result: RouteResult;
  try {
    // Every transaction the handler commits marks the key as having taken effect (with what it
    // committed, for a route that names it), and commits only while this request still holds
    // the key; one that returns a refusal rolls back.
    result = await runFenced(commitFenceOf(keys, held, effectOf), run);
  } catch (error) {
    // Its key is freed if nothing of it committed (a thrown refusal, a break before any
    // commit), else marked failed.
    await keys.release(held);
    throw error;
  }
  // No answer to keep: a refusal (its transactions rolled back), or an answer the handler wrote
  // itself (no such route is declared idempotent).
  if (isGwError(result) || result === undefined) {
    await keys.release(held);
    return result;
  }
  const answer = answerOf(result, answers);
  // The effect happened: its answer goes out even if it could not be kept (the key's lease
  // then lapses with its effect marked: reported as committed and unanswered, never run again).
  await keys.complete(held, answer).catch(() => undefined);
  return result;
}
