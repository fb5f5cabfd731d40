// Where the connected-app routes find the paying organization (the connected app: answers.ts).

/** /dashboard/api/connected-apps/{connection_id} acts on the paying organization. */
export const ofConnectedApp = { param: 'connection_id', table: 'app_connections' } as const;
