// What the API warns of when it stores a model policy (decisions 338, 350): exact model ids the
// catalogue does not list (yet). A notice, not an error: the key or credential is stored, and
// serves such a model once the catalogue has it.
import type { ComponentChildren } from 'preact';

export function PolicyWarnings(props: {
  warnings: readonly string[];
  /** What was done with the policy's holder: `Issued`, `Added`, `Saved`. */
  done: string;
  /** What to do about them, after the list. */
  children: ComponentChildren;
}) {
  const { warnings } = props;
  if (warnings.length === 0) return null;
  return (
    <div class="warning" role="status">
      <p>
        <strong>
          {props.done}, with {warnings.length === 1 ? 'a warning' : `${warnings.length} warnings`}{' '}
          about its allowed models:
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
