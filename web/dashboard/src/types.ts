// The shapes the dashboard API answers (src/routes/dashboard/**), as the pages read them.
import type { CreditMode, OverrunPolicy } from './pages/connection-settings.js';

export interface AppRow {
  readonly id: string;
  readonly org_id: string;
  readonly name: string;
  readonly created_at: string;
}

/** One app as its page shows it (GET /dashboard/api/apps/{id}). */
export interface AppDetail extends AppRow {
  readonly status: 'active' | 'deleted';
  readonly deleted_at: string | null;
  readonly counts: {
    readonly connections: number;
    readonly api_keys: number;
    readonly product_users: number;
  };
}

export interface ConnectionRow {
  readonly id: string;
  readonly app_id: string;
  readonly name: string;
  readonly status: 'active' | 'revoked';
  readonly credit_mode: CreditMode;
  readonly overrun_policy: OverrunPolicy;
  readonly requires_product_user: boolean;
  /** Set on a connection made by OAuth consent: its only credential is the app's token. */
  readonly oauth_client_id: string | null;
  readonly created_at: string;
  readonly updated_at: string;
}

export interface ApiKeyRow {
  readonly id: string;
  readonly app_connection_id: string;
  readonly name: string | null;
  readonly key_hint: string;
  /** 'oauth_token': the `gw_oauth_…` token of an OAuth connection (never rotated; its limits
   * are set as a key's). */
  readonly kind: 'api_key' | 'oauth_token';
  readonly status: 'active' | 'revoked' | 'expired';
  readonly model_policy: string[];
  readonly created_at: string;
  readonly revoked_at: string | null;
  readonly expires_at: string | null;
  readonly replaced_by: string | null;
  /** Requests a minute made with the key (null: unlimited; docs/limits.md). */
  readonly requests_per_minute: number | null;
  /** Requests a minute of each product user attributed through the key (null: unlimited). */
  readonly product_user_requests_per_minute: number | null;
}

export type ServiceKeyScope = 'product_users:read' | 'product_users:write';

export interface ServiceKeyRow {
  readonly id: string;
  readonly key_hint: string;
  readonly scopes: ServiceKeyScope[];
  readonly status: 'active' | 'revoked' | 'disabled' | 'expired';
  readonly expires_at: string | null;
  readonly created_at: string;
}

/** A key as created or rotated: the raw key is in this answer only. */
export interface IssuedKey {
  readonly id: string;
  readonly key: string;
  readonly key_hint: string;
}

/** A new API key as its create answer has it. */
export interface CreatedApiKey extends IssuedKey {
  /** Exact model ids of its policy the catalogue does not list: issued all the same. */
  readonly warnings: readonly string[];
}

export interface ProductUserSummary {
  readonly product_end_user_id: string;
  readonly app_id: string;
  readonly external_user_id: string;
  readonly display_name: string;
  readonly status: 'active' | 'blocked';
  readonly created_at: string;
}

export interface Credits {
  readonly currency: string;
  readonly available_credits: string;
  readonly active_grant_count: number;
  readonly expiring_soon_amount: string;
  readonly spent_this_month: string;
  readonly spent_total: string;
  readonly last_grant_at: string | null;
  readonly last_used_at: string | null;
}

export interface UsageTotals {
  readonly sell_cost: string;
  readonly input_tokens: number;
  readonly output_tokens: number;
  readonly total_tokens: number;
  readonly request_count: number;
}

export interface ProductUserProfile {
  readonly product_end_user_id: string;
  readonly app_id: string;
  readonly external_user_id: string;
  readonly display_name: string;
  readonly status: 'active' | 'blocked';
  readonly allowance_starts_at: string | null;
  readonly last_app_connection_id: string;
  readonly allowance?: {
    readonly credit_mode: CreditMode;
    readonly overrun_policy: OverrunPolicy;
    readonly currency: string;
    readonly period_start: string;
    readonly period_end: string;
    readonly cap_amount: string;
    readonly spent_this_period: string;
    readonly remaining_base_allowance: string;
    readonly available_credits: string;
    readonly available_allowance: string;
  };
  /** null when no cap applies to the user. */
  readonly cap: {
    readonly amount: string;
    readonly currency: string;
    readonly spent_this_period: string;
    readonly reset_at: string;
  } | null;
  readonly credits: Credits;
  readonly usage: { readonly this_month: UsageTotals; readonly total: UsageTotals };
}

export interface CreditGrant {
  readonly grant_id: string;
  readonly amount: string;
  readonly currency: string;
  readonly expires_at: string | null;
  readonly reason: string | null;
  readonly status: 'active' | 'revoked';
  readonly created_at: string;
}

export type UsageGroup = 'day' | 'model' | 'connection' | 'product_user';

export interface UsageRow {
  readonly key: string | null;
  readonly currency: string;
  readonly requests: number;
  readonly input_tokens: number;
  readonly output_tokens: number;
  readonly total_tokens: number;
  /**
   * Of input_tokens: written to the prompt cache (of them kept an hour), read from it; and the
   * web searches. Absent from an API older than them (a page served during a rolling deploy).
   */
  readonly cache_write_tokens?: number;
  readonly cache_write_1h_tokens?: number;
  readonly cache_read_tokens?: number;
  readonly web_search_requests?: number;
  readonly cost: string;
  readonly wallet_cost: string;
}

export interface Usage {
  readonly group_by: UsageGroup;
  readonly from: string;
  readonly to: string;
  readonly data: UsageRow[];
}

export interface CapRule {
  readonly cap_rule_id: string;
  readonly amount: string | null;
  readonly per_user_amount: string | null;
  readonly currency: string;
  readonly period: 'monthly';
  readonly credit_mode: CreditMode | null;
  readonly overrun_policy: OverrunPolicy | null;
  readonly status: 'active';
  readonly updated_at: string;
}

export interface CapState {
  readonly scope: 'org' | 'app_connection' | 'product_user';
  readonly org_id: string;
  readonly app_connection_id: string | null;
  readonly product_end_user_id: string | null;
  readonly cap: CapRule | null;
  readonly connection?: {
    readonly credit_mode: CreditMode;
    readonly overrun_policy: OverrunPolicy;
    readonly requires_product_user: boolean;
  };
}

/** A set cap's answer: the level, and the API's warnings (the cap is already used up). */
export interface CapSetAnswer extends CapState {
  readonly warnings: readonly string[];
}

export interface Wallet {
  readonly org_id: string;
  readonly balance: string;
  readonly reserved: string;
  readonly available: string;
  readonly currency: string;
  /** Whether this gateway takes top-ups from the dashboard (DASHBOARD_WALLET_TOPUP). */
  readonly top_ups_enabled: boolean;
}

export interface WalletTransaction {
  readonly id: string;
  readonly kind: 'topup' | 'set' | 'usage_archived';
  readonly amount: string;
  readonly currency: string;
  readonly created_by: string | null;
  readonly created_at: string;
}

export interface WalletAlert {
  readonly org_id: string;
  readonly low_balance_threshold: string | null;
  readonly currency: string;
}

export interface Overview {
  readonly org_id: string;
  readonly currency: string;
  readonly period_start: string;
  readonly period_end: string;
  readonly spent_this_period: string;
  readonly wallet_cost_this_period: string;
  readonly requests_this_period: number;
  readonly org_cap: {
    readonly cap_rule_id: string;
    readonly amount: string;
    readonly remaining: string;
  } | null;
  readonly wallet: {
    readonly balance: string;
    readonly reserved: string;
    readonly available: string;
  };
  /** Apps that are not deleted and their connections, counted by the API. */
  readonly counts: {
    readonly apps: number;
    readonly active_connections: number;
    readonly revoked_connections: number;
  };
}

export interface CredentialRow {
  readonly id: string;
  readonly org_id: string;
  readonly provider: string;
  readonly secret_kind: 'api_key';
  readonly name: string;
  readonly model_policy: string[];
  readonly routing_mode: string;
  readonly priority: number;
  readonly status: 'active' | 'disabled' | 'deleted';
  readonly fingerprint: string;
  readonly app_connection_ids: string[];
  readonly created_at: string;
}

/** A credential as its create, change or grant answers it. */
export interface WrittenCredential extends CredentialRow {
  /** That it is granted to no connection (first), exact model ids of the policy written that the
   * catalogue does not list: stored all the same (decisions 338, 456). */
  readonly warnings: readonly string[];
}
