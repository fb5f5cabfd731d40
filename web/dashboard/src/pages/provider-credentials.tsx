// Provider credentials: your own vendor keys (BYOK) (its API is not in this gateway yet).
import { notYetAvailable } from './not-yet-available.js';

export const providerCredentialsPage = notYetAvailable({
  section: 'provider-credentials',
  label: 'Provider credentials',
  purpose:
    'Your own vendor API keys: add with validation, fingerprint, priority, model policy, routing mode, disable and delete.',
  meanwhile: (
    <>
      Meanwhile an operator manages them with <code>gw credentials</code> (see{' '}
      <code>gw --help</code>).
    </>
  ),
});
