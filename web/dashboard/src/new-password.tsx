// A new password typed twice, as the account page's change and a reset link's form ask for it,
// with the gateway's length rule (src/accounts/password-rule.ts) checked before sending.
import { PASSWORD_MIN_LENGTH, passwordCharacters } from '../../../src/accounts/password-rule.js';

/** Why the two typed passwords cannot be sent, or null when they can. */
export function newPasswordProblem(next: string, again: string): string | null {
  if (passwordCharacters(next) < PASSWORD_MIN_LENGTH)
    return `The new password needs at least ${PASSWORD_MIN_LENGTH} characters.`;
  if (next !== again) return 'The two new passwords differ.';
  return null;
}

/** The two fields and the rule under them; side by side where the form is wide. */
export function NewPasswordFields(props: {
  next: string;
  again: string;
  onNext(value: string): void;
  onAgain(value: string): void;
  sideBySide?: boolean;
}) {
  const fields = (
    <>
      <label>
        New password
        <input
          type="password"
          name="new-password"
          autocomplete="new-password"
          required
          aria-describedby="new-password-rule"
          value={props.next}
          onInput={(event) => props.onNext(event.currentTarget.value)}
        />
      </label>
      <label>
        New password again
        <input
          type="password"
          name="new-password-again"
          autocomplete="new-password"
          required
          value={props.again}
          onInput={(event) => props.onAgain(event.currentTarget.value)}
        />
      </label>
    </>
  );
  return (
    <>
      {props.sideBySide ? <div class="row">{fields}</div> : fields}
      <p class="hint" id="new-password-rule">
        At least {PASSWORD_MIN_LENGTH} characters.
      </p>
    </>
  );
}
