// The controls of a connection's settings, shared by "create" and "change", and the one
// choice control (a select with what the choice does under it) the caps page uses too.
import type { ConnectionSettings, Choice } from './connection-settings.js';
import { creditModes, hintOf, overrunPolicies } from './connection-settings.js';

export function ChoiceField<Value extends string>(props: {
  id: string;
  /** The form field's name (the id when omitted). */
  name?: string;
  label: string;
  choices: readonly Choice<Value>[];
  value: Value;
  disabled?: boolean | undefined;
  /** The label of an empty choice ('') that inherits the setting from elsewhere. */
  inherit?: string;
  onChange(value: Value): void;
}) {
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      <select
        id={props.id}
        name={props.name ?? props.id}
        aria-describedby={`${props.id}-hint`}
        disabled={props.disabled}
        value={props.value}
        onChange={(event) => props.onChange(event.currentTarget.value as Value)}
      >
        {props.inherit !== undefined && <option value="">{props.inherit}</option>}
        {props.choices.map((choice) => (
          <option key={choice.value} value={choice.value}>
            {choice.label}
          </option>
        ))}
      </select>
      <span class="hint" id={`${props.id}-hint`}>
        {hintOf(props.choices, props.value)}
      </span>
    </div>
  );
}

export function SettingsFields(props: {
  idPrefix: string;
  value: ConnectionSettings;
  disabled?: boolean;
  onChange(value: ConnectionSettings): void;
}) {
  const { value, idPrefix } = props;
  return (
    <div class="settings">
      <ChoiceField
        id={`${idPrefix}-credit-mode`}
        label="Credit mode"
        choices={creditModes}
        value={value.credit_mode}
        disabled={props.disabled}
        onChange={(credit_mode) => props.onChange({ ...value, credit_mode })}
      />
      <ChoiceField
        id={`${idPrefix}-overrun`}
        label="Overrun policy"
        choices={overrunPolicies}
        value={value.overrun_policy}
        disabled={props.disabled}
        onChange={(overrun_policy) => props.onChange({ ...value, overrun_policy })}
      />
      <label class="check" for={`${idPrefix}-attribution`}>
        <input
          id={`${idPrefix}-attribution`}
          type="checkbox"
          disabled={props.disabled}
          checked={value.requires_product_user}
          onChange={(event) =>
            props.onChange({ ...value, requires_product_user: event.currentTarget.checked })
          }
        />
        Require a product user on every request (attribution)
      </label>
    </div>
  );
}
