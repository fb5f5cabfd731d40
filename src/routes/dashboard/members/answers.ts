// The member object of the dashboard API: zod and other answers alone, read
// by the dashboard as types (web/dashboard/src/types.ts; test/dashboard-types.test.ts).
import { z } from 'zod';
import { roleSchema } from '../answers.js';

export const memberSchema = z.object({
  user_id: z.string(),
  email: z.string(),
  role: roleSchema,
  /** This is the member's personal organization: they always own it (no role change, no removal). */
  personal_organization: z.boolean(),
  created_at: z.string(),
});
