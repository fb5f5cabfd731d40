// Where the product-user routes find their organization (the product-user objects: answers.ts).

/** Routes under /dashboard/api/product-users/{product_end_user_id} act on its organization. */
export const ofProductUser = { param: 'product_end_user_id', table: 'product_users' } as const;
