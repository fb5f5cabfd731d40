// The controls of a connection's settings, shared by "create" and "change".
import type { ConnectionSettings, CreditMode, OverrunPolicy } from './connection-settings.js';
import { creditModes, overrunPolicies } from './connection-settings.js';

export function SettingsFields(props: {
  idPrefix: string;
  value: ConnectionSettings;
  disabled?: boolean;
  onChange(value: ConnectionSettings): void;
}) {
  const { value, idPrefix } = props;
  return (
    <div class="settings">
      <label for={`${idPrefix}-credit-mode`}>
        Credit mode
        <select
          id={`${idPrefix}-credit-mode`}
          disabled={props.disabled}
          value={value.credit_mode}
          onChange={(event) =>
            props.onChange({ ...value, credit_mode: event.currentTarget.value as CreditMode })
          }
        >
          {creditModes.map((mode) => (
            <option key={mode.value} value={mode.value}>
              {mode.label}
            </option>
          ))}
        </select>
      </label>
      <label for={`${idPrefix}-overrun`}>
        Overrun policy
        <select
          id={`${idPrefix}-overrun`}
          disabled={props.disabled}
          value={value.overrun_policy}
          onChange={(event) =>
            props.onChange({ ...value, overrun_policy: event.currentTarget.value as OverrunPolicy })
          }
        >
          {overrunPolicies.map((policy) => (
            <option key={policy.value} value={policy.value}>
              {policy.label}
            </option>
          ))}
        </select>
      </label>
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
