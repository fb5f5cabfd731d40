// Where the app routes find their organization (the app objects: answers.ts).
/** Routes under /dashboard/api/apps/{app_id} and …/{app_id}/… act on the app's organization. */
export const ofApp = { param: 'app_id', table: 'apps' } as const;
