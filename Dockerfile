# syntax=docker/dockerfile:1
# Build stage: compile TypeScript and bundle the dashboard.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY bench ./bench
COPY web ./web
COPY scripts/forget-incomplete-build.mjs ./scripts/
RUN npm run build

# Runtime stage: production dependencies, compiled code, SQL migrations and Lua scripts.
FROM node:20-bookworm-slim
ENV NODE_ENV=production PORT=8080
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY src/db/migrations ./src/db/migrations
COPY lua ./lua
COPY bin ./bin
# The settle spool (SPOOL_DIR): settles that met an unreachable Redis wait here until it is back.
RUN mkdir -p /app/var/spool && chown node:node /app/var/spool
VOLUME /app/var/spool
USER node
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthz').then(r => process.exit(r.ok ? 0 : 1)).catch(() => process.exit(1))"]
CMD ["node", "dist/src/main.js"]
