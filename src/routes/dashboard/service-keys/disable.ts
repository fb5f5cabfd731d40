// POST /dashboard/api/service-keys/{id}/disable: disables a service key (admin or owner).
import { serviceKeyStatusRoute } from './schema.js';

export const disableServiceKeyRoute = serviceKeyStatusRoute('disable');
