// The organization a user last opened in this browser (localStorage, per user): where they land
// after signing in again (landing.ts).
const lastOrgKey = (userId: string): string => `gw:last-org:${userId}`;

/** The organization this user last opened in this browser (null: none, or no storage). */
export function lastUsedOrg(userId: string): string | null {
  try {
    return localStorage.getItem(lastOrgKey(userId));
  } catch {
    return null; // storage turned off: land by the rule alone
  }
}

export function rememberLastUsedOrg(userId: string, orgId: string): void {
  try {
    localStorage.setItem(lastOrgKey(userId), orgId);
  } catch {
    // storage turned off or full: nothing to remember
  }
}
