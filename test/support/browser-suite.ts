// The setup the dashboard's browser test files share: a gateway in the test's process (session
// cookies over plain HTTP), the worker's browser, the file's seeded organization and its
// dashboard users, their sessions, and the sign-in steps every file took. A file calls
// `browserSuite` from its beforeAll with its own isolated context (test/support/context.ts:
// its own key prefix, organization and users) and `close` from its afterAll.
import type { Browser, Page } from 'playwright-core';
import { SharedSessions, sharedBrowser, signIn } from './browser.js';
import { createMember, createUser, TEST_PASSWORD, type DashboardClient } from './dashboard.js';
import { seed, startGateway, type GatewayProcess, type SeededOrg } from './processes.js';

export interface BrowserSuiteOptions {
  /** The gateway's environment beyond the file's context and plain-HTTP session cookies. */
  readonly gatewayEnv?: Readonly<Record<string, string>>;
  /** `gw seed` arguments of the file's organization (its name, a wallet); none: no organization. */
  readonly seed?: readonly string[];
  /**
   * Dashboard users to make with the test password, in this order: e-mail → their role in the
   * seeded organization, or null for a user of their own personal organization only.
   */
  readonly users?: Readonly<Record<string, string | null>>;
}

export interface SignInOptions {
  /** The test password unless given. */
  readonly password?: string;
  /** The file's gateway unless given. */
  readonly gateway?: GatewayProcess;
}

/** What `gw admin create-user` answers. */
export interface MadeUser {
  readonly id: string;
  readonly personal_org_id: string;
}

export class BrowserSuite {
  /** One session per user for the file's windows and API clients (see SharedSessions). */
  readonly sessions: SharedSessions;
  private readonly gateways: GatewayProcess[];

  private constructor(
    private readonly env: Record<string, string>,
    readonly gateway: GatewayProcess,
    readonly browser: Browser,
    private readonly seeded: SeededOrg | undefined,
    /** The users made for the file, by e-mail. */
    readonly users: Readonly<Record<string, MadeUser>>,
  ) {
    this.gateways = [gateway];
    this.sessions = new SharedSessions(gateway.url, TEST_PASSWORD);
  }

  static async start(
    env: Record<string, string>,
    options: BrowserSuiteOptions = {},
  ): Promise<BrowserSuite> {
    // the organization and users are rows and keys of the file's own: made while the gateway
    // starts, which looks them up when asked
    const [gateway, browser, made] = await Promise.allSettled([
      startGateway({ DASHBOARD_INSECURE_COOKIES: 'true', ...env, ...options.gatewayEnv }),
      sharedBrowser(),
      seedOrgAndUsers(env, options),
    ]);
    if (
      gateway.status === 'fulfilled' &&
      browser.status === 'fulfilled' &&
      made.status === 'fulfilled'
    ) {
      return new BrowserSuite(
        env,
        gateway.value,
        browser.value,
        made.value.seeded,
        made.value.users,
      );
    }
    // no gateway left serving the worker's next files
    if (gateway.status === 'fulfilled') await gateway.value.stop();
    throw [gateway, browser, made].find((step) => step.status === 'rejected')!.reason;
  }

  /** The organization `gw seed` made for the file. */
  get org(): SeededOrg {
    if (!this.seeded) throw new Error('this file seeded no organization (options.seed)');
    return this.seeded;
  }

  /**
   * Signs `page` in as `email` through the dashboard's sign-in form (a password check of its
   * own) on the file's gateway or another, and waits for the signed-in dashboard.
   */
  async signIn(
    page: Page,
    email: string,
    { password = TEST_PASSWORD, gateway = this.gateway }: SignInOptions = {},
  ): Promise<void> {
    await signIn(page, gateway.url, email, password);
    await page.getByRole('button', { name: 'Sign out', exact: true }).waitFor();
  }

  /**
   * Opens `path` of the gateway in `page`, signed in with `email`'s shared session (no form,
   * no password check: for tests about a page, not about signing in), once it shows its
   * "Sign out" button and a page heading.
   */
  async visit(page: Page, email: string, path: string): Promise<void> {
    await this.sessions.give(page, email);
    await page.goto(`${this.gateway.url}${path}`);
    await page.getByRole('button', { name: 'Sign out', exact: true }).waitFor();
    await page.getByRole('heading', { level: 1 }).waitFor();
  }

  /** An API client in `email`'s shared session (see SharedSessions.client). */
  client(email: string): Promise<DashboardClient> {
    return this.sessions.client(email);
  }

  /** One more gateway on the file's context, with more of its environment; stopped by close. */
  async startGateway(gatewayEnv: Readonly<Record<string, string>>): Promise<GatewayProcess> {
    const gateway = await startGateway({
      DASHBOARD_INSECURE_COOKIES: 'true',
      ...this.env,
      ...gatewayEnv,
    });
    this.gateways.push(gateway);
    return gateway;
  }

  /**
   * Closes the windows the file left open (a failed test's) and stops its gateways; the
   * browser stays for the worker's next file.
   */
  async close(): Promise<void> {
    await Promise.all(this.browser.contexts().map((context) => context.close()));
    await Promise.all(this.gateways.map((gateway) => gateway.stop()));
  }
}

async function seedOrgAndUsers(
  env: Record<string, string>,
  options: BrowserSuiteOptions,
): Promise<{ seeded: SeededOrg | undefined; users: Record<string, MadeUser> }> {
  const seeded = options.seed && (await seed(env, [...options.seed]));
  const users: Record<string, MadeUser> = {};
  for (const [email, role] of Object.entries(options.users ?? {})) {
    if (role === null) users[email] = await createUser(env, email);
    else if (seeded) users[email] = await createMember(env, email, seeded.org_id, role);
    else throw new Error(`no organization seeded to make ${email} its ${role}`);
  }
  return { seeded, users };
}

/** Starts a file's browser suite (see BrowserSuite); call from its beforeAll. */
export const browserSuite = (
  env: Record<string, string>,
  options?: BrowserSuiteOptions,
): Promise<BrowserSuite> => BrowserSuite.start(env, options);
