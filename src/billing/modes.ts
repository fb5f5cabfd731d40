// How an app connection holds its product users to their allowance (the spec's
// `credit_mode` and `overrun_policy`): settings of the money layer, carried by API keys.
export type CreditMode = 'enforce' | 'track_only' | 'disabled';
export type OverrunPolicy = 'limit_output' | 'reject';
