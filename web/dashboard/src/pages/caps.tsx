// Caps: spending caps of the organization, its connections and product users (its API is not
// in this gateway yet).
import { notYetAvailable } from './not-yet-available.js';

export const capsPage = notYetAvailable({
  section: 'caps',
  label: 'Caps',
  purpose: 'Monthly spending caps for the organization, each connection and each product user.',
  meanwhile: (
    <>
      Meanwhile an operator sets caps with <code>gw cap set</code> (see <code>gw --help</code>
      ). A product user’s cap already shows on their profile under Product users.
    </>
  ),
});
