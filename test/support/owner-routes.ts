// Dashboard routes served in the test's process to one dashboard user taken for an owner of
// whatever organization a path names (no session or CSRF to set up): the router, the HTTP
// adapter and the idempotency store as the gateway has them, over the test's own deps.
import { loadDashboardUser } from '../../src/accounts/users.js';
import type { DbPool } from '../../src/db/pool.js';
import { createHttpServer, type HttpServer } from '../../src/http/server.js';
import { IdempotencyStore } from '../../src/idempotency/store.js';
import { createLogger } from '../../src/log.js';
import { bindRoutes } from '../../src/routes/framework/bind.js';
import type { Authenticators } from '../../src/routes/framework/declaration.js';

export async function serveAsOwner(
  db: DbPool,
  userId: string,
  routes: Parameters<typeof bindRoutes>[0],
  deps: unknown,
): Promise<{ readonly url: string; readonly server: HttpServer }> {
  const authenticators = {
    async orgMember(head: { params: Record<string, string> }) {
      const user = (await loadDashboardUser(db, userId))!;
      const orgId = head.params.org_id!;
      return {
        user,
        session: { handle: 'h', userId, csrfToken: 'c', createdAtMs: 0, epoch: 0 },
        actor: { userId },
        org: { id: orgId, name: orgId, role: 'owner', personal: false },
      };
    },
  } as unknown as Authenticators;
  const server = createHttpServer({
    maxBodyBytes: 64 * 1024,
    logger: createLogger('silent'),
    routes: bindRoutes(routes, deps as never, authenticators, new IdempotencyStore(db, undefined)),
  });
  return { url: `http://127.0.0.1:${await server.listen('127.0.0.1', 0)}`, server };
}
