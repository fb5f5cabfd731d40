// What an organization's page is: a section of the URL, its name in the navigation, and its
// component. The registry (index.ts) lists them; adding a page is one file and one line there.
import type { FunctionComponent } from 'preact';
import type { OrgSummary, SignedIn } from '../api.js';

export interface OrgPageProps {
  readonly org: OrgSummary;
  readonly session: SignedIn;
  /** The object the path names after the section (an app, a connection, a product user). */
  readonly id: string | undefined;
}

export interface OrgPage {
  /** The URL segment after /dashboard/orgs/<org>/ ('' for the overview). */
  readonly section: string;
  /** Its name in the navigation and the window title. */
  readonly label: string;
  /** True while the gateway has no API for it: the page says so, the navigation marks it. */
  readonly notYetAvailable?: boolean;
  readonly Component: FunctionComponent<OrgPageProps>;
}
