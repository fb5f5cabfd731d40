// POST /dashboard/api/service-keys/{id}/revoke: revokes a service key for good (admin or owner).
import { serviceKeyStatusRoute } from './schema.js';

export const revokeServiceKeyRoute = serviceKeyStatusRoute('revoke');
