// The credit-grant object of the dashboard API and where its routes find it.
export { creditGrantSchema, creditGrantWithCreditsSchema } from '../../answers.js';

/** Routes under /dashboard/api/credit-grants/{grant_id} act on the grant's organization. */
export const ofCreditGrant = { param: 'grant_id', table: 'credit_grants' } as const;
