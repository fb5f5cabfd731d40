// The app object of the dashboard API.
import { z } from 'zod';

export const appSchema = z.object({
  id: z.string(),
  org_id: z.string(),
  name: z.string(),
  created_at: z.string(),
});
