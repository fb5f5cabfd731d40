// Connected apps: OAuth apps acting for this organization (not in this gateway yet).
import { notYetAvailable } from './not-yet-available.js';

export const connectedAppsPage = notYetAvailable({
  section: 'connected-apps',
  label: 'Connected apps',
  purpose: 'Apps you allowed to act for this organization through OAuth, and revoking them.',
  meanwhile: <>gw does not offer OAuth sign-in for other apps yet.</>,
});
