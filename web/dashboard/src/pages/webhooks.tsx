// Webhooks: event deliveries to your endpoints (not in this gateway yet).
import { notYetAvailable } from './not-yet-available.js';

export const webhooksPage = notYetAvailable({
  section: 'webhooks',
  label: 'Webhooks',
  purpose: 'Endpoints that gw notifies of events such as caps reached and credits running low.',
  meanwhile: <>gw does not send webhooks yet.</>,
});
