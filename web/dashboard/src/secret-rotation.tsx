// What a rotate dialog offers and says about the old secrets, shared by the webhook signing
// secret's (decision 371) and the OAuth client secret's (decision 374): the grace choices and
// the notes on secrets retired by earlier rotations.
import { useState } from 'preact/hooks';
import { formatTime } from './ui.js';
import { MAX_RETIRING_SECRETS } from '../../../src/retiring-secrets.js';

/**
 * How long the old secret keeps working after a rotation, as the dialogs offer it (the API's
 * `grace_seconds`: 24 h by default, at most 7 days; 0 stops every old secret at once).
 */
export const ROTATION_GRACES = [
  { seconds: 86_400, label: '24 hours (the default)', span: '24 hours' },
  { seconds: 3_600, label: '1 hour', span: '1 hour' },
  { seconds: 7 * 86_400, label: '7 days', span: '7 days' },
  { seconds: 0, label: 'Not at all: the old secret has leaked', span: '' },
] as const;

export type RotationGrace = (typeof ROTATION_GRACES)[number];

/** What an old secret does, as the dialog words it: signs deliveries, or authenticates. */
export interface SecretUse {
  /** "sign" */
  readonly verb: string;
  /** "signing" */
  readonly ing: string;
  /** "signs" */
  readonly third: string;
  /** Who switches to the new secret: "a receiver". */
  readonly switcher: string;
}

/** The grace the admin chose (24 hours until they choose). */
export function useRotationGrace(): [RotationGrace, (grace: RotationGrace) => void] {
  return useState<RotationGrace>(ROTATION_GRACES[0]);
}

/** The grace choice of a rotate dialog. */
export function GraceChoice(props: {
  use: SecretUse;
  grace: RotationGrace;
  onChange(grace: RotationGrace): void;
}) {
  return (
    <label>
      The old secret keeps {props.use.ing} for
      <select
        name="rotation-grace"
        value={String(props.grace.seconds)}
        onChange={(event) =>
          props.onChange(
            ROTATION_GRACES.find(
              (choice) => String(choice.seconds) === event.currentTarget.value,
            ) ?? ROTATION_GRACES[0],
          )
        }
      >
        {ROTATION_GRACES.map((choice) => (
          <option key={choice.seconds} value={String(choice.seconds)}>
            {choice.label}
          </option>
        ))}
      </select>
    </label>
  );
}

/**
 * What happens to the secrets earlier rotations retired (`retiredEnds`: until when each still
 * works, soonest first): they keep working until their own grace ends; at the limit gw refuses
 * another rotation with a grace; a rotation without grace stops them too.
 */
export function RetiredSecretsNote(props: {
  use: SecretUse;
  retiredEnds: readonly string[];
  leaked: boolean;
}) {
  const { use, retiredEnds: retired, leaked } = props;
  if (retired.length === 0) return null;
  if (leaked) {
    return (
      <p class="warning" role="note">
        {retired.length === 1
          ? `The old secret that still ${use.third} stops too.`
          : `All ${retired.length} old secrets that still ${use.verb} stop too.`}
      </p>
    );
  }
  if (retired.length >= MAX_RETIRING_SECRETS) {
    return (
      <p class="warning" role="note">
        {MAX_RETIRING_SECRETS} old secrets already {use.verb} beside the current one, the most gw
        keeps, so gw refuses another rotation until the first of them stops, at{' '}
        {formatTime(retired[0]!)}: rotating now would end it early and could break {use.switcher}{' '}
        still switching. If a secret has leaked, choose &ldquo;Not at all&rdquo; above to stop every
        old secret at once.
      </p>
    );
  }
  return (
    <p class="muted small">
      {retired.length === 1
        ? `The secret retired before it keeps ${use.ing}`
        : `The ${retired.length} secrets retired before it keep ${use.ing}`}{' '}
      until their own grace is over (the first until {formatTime(retired[0]!)}).
    </p>
  );
}
