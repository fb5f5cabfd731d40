// What the API warns of when it stores a key or a credential: exact model ids of its policy the
// catalogue does not list (yet; decisions 338, 350), and for a credential, that it is granted
// to no app connection, so serves no request (decision 456). A notice, not an error: the key or
// credential is stored as written.
import type { ComponentChildren } from 'preact';

export function PolicyWarnings(props: {
  warnings: readonly string[];
  /** What was done with the policy's holder: `Issued`, `Added`, `Saved`. */
  done: string;
  /** What the warnings are about (`its allowed models`), when they are all about one thing. */
  about?: string;
  /** What to do about them, after the list. */
  children: ComponentChildren;
}) {
  const { warnings } = props;
  if (warnings.length === 0) return null;
  return (
    <div class="warning" role="status">
      <p>
        <strong>
          {props.done}, with {warnings.length === 1 ? 'a warning' : `${warnings.length} warnings`}
          {props.about ? ` about ${props.about}` : ''}:
        </strong>
      </p>
      <ul>
        {warnings.map((warning) => (
          <li key={warning}>{warning}</li>
        ))}
      </ul>
      <p>{props.children}</p>
    </div>
  );
}
