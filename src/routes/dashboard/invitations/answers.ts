// The invitation objects of the dashboard API: zod and other answers alone, read
// by the dashboard as types (web/dashboard/src/types.ts; test/dashboard-types.test.ts).
import { z } from 'zod';
import { roleSchema } from '../answers.js';

export const invitationSchema = z.object({
  id: z.string(),
  org_id: z.string(),
  org_name: z.string(),
  email: z.string(),
  role: roleSchema,
  status: z.enum(['pending', 'accepted', 'declined', 'revoked', 'expired']),
  invited_by: z.string().describe('the user id of the member who sent it'),
  invited_by_email: z.string().nullable(),
  created_at: z.string(),
  expires_at: z.string(),
});

export const createdInvitationSchema = invitationSchema.extend({
  accept_token: z
    .string()
    .describe('shown once: the invitee accepts with it (required where anyone may sign up)'),
  accept_url: z
    .string()
    .describe('shown once: the dashboard link to send the invitee, carrying the accept token'),
});
