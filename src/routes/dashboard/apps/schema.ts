// The app object of the dashboard API, and where an app route finds its organization.
import { z } from 'zod';

export const appSchema = z.object({
  id: z.string(),
  org_id: z.string(),
  name: z.string(),
  created_at: z.string(),
});

/** Routes under /dashboard/api/orgs/{org_id}/… act on that organization. */
export const inOrg = { param: 'org_id', table: 'organizations' } as const;
