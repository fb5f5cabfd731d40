// The organization's pages in navigation order. A page is one file exporting an OrgPage; the
// ones whose API has not landed yet come from notYetAvailable() and move up when they do.
import { apiKeysPage } from './api-keys.js';
import { appsPage } from './apps.js';
import { auditLogPage } from './audit-log.js';
import { capsPage } from './caps.js';
import { connectedAppsPage } from './connected-apps.js';
import { membersPage } from './members.js';
import { overviewPage } from './overview.js';
import type { OrgPage } from './page.js';
import { productUsersPage } from './product-users.js';
import { providerCredentialsPage } from './provider-credentials.js';
import { serviceKeysPage } from './service-keys.js';
import { usagePage } from './usage.js';
import { walletPage } from './wallet.js';
import { webhooksPage } from './webhooks.js';

export const orgPages: readonly OrgPage[] = [
  overviewPage,
  usagePage,
  productUsersPage,
  appsPage,
  apiKeysPage,
  serviceKeysPage,
  membersPage,
  auditLogPage,
  capsPage,
  walletPage,
  providerCredentialsPage,
  webhooksPage,
  connectedAppsPage,
];

export const orgPageOf = (section: string): OrgPage | undefined =>
  orgPages.find((page) => page.section === section);
