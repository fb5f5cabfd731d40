// The page of a section whose API this gateway does not have yet: it says so plainly, and what
// to use meanwhile. Replacing the page's file with the real page is all it takes when it lands.
import type { ComponentChildren } from 'preact';
import { PageHeader } from '../ui.js';
import type { OrgPage } from './page.js';

export function notYetAvailable(page: {
  section: string;
  label: string;
  /** What the page will do. */
  purpose: string;
  /** What to use until then. */
  meanwhile: ComponentChildren;
}): OrgPage {
  return {
    section: page.section,
    label: page.label,
    notYetAvailable: true,
    Component: () => (
      <>
        <PageHeader title={page.label}>{page.purpose}</PageHeader>
        <section class="card slot" aria-labelledby="not-yet-heading">
          <h2 id="not-yet-heading">
            Not available in the dashboard yet <span class="badge">coming</span>
          </h2>
          <p>
            This gateway has no dashboard API for {page.label.toLowerCase()} yet, so this page has
            nothing to show or change.
          </p>
          <p class="muted">{page.meanwhile}</p>
        </section>
      </>
    ),
  };
}
