// Wallet: the organization's balance and top-ups (its API is not in this gateway yet).
import { notYetAvailable } from './not-yet-available.js';

export const walletPage = notYetAvailable({
  section: 'wallet',
  label: 'Wallet',
  purpose: 'The organization’s wallet balance, top-ups and what was charged to it.',
  meanwhile: (
    <>
      Meanwhile an operator reads it with <code>gw wallet show</code> and tops it up with{' '}
      <code>gw wallet topup</code>. What was charged to it per day, model and connection is under
      Usage (wallet cost).
    </>
  ),
});
