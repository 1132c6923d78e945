# syntax=docker/dockerfile:1
# Fieldchart server (and operator CLI) for production: compiled JavaScript on Node 20, run as
# the unprivileged `node` user. See README "Deploying" and docs/operations.md.

# ---- build: install everything, compile, then keep production dependencies only ----
FROM node:20-bookworm-slim AS build
# fs-ext (the data-dir lock) compiles a native addon; argon2 ships prebuilt binaries.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
COPY schema/package.json schema/
COPY server/package.json server/
COPY cli/package.json cli/
COPY client-lib/package.json client-lib/
# npm ci's postinstall applies patches/ to dependencies (patches/README.md says why).
COPY patches patches/
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY scripts scripts
COPY schema schema
COPY server server
COPY cli cli
# The field app (served at /app) is built with the client library's sources.
COPY client-lib client-lib
COPY app app
# The workspaces are bundled into dist/; their links would point at sources not copied below.
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund \
 && rm -rf node_modules/@fieldchart

# ---- run ----
FROM node:20-bookworm-slim
# ffmpeg normalises recordings for the AI pipeline (docs/ai-pipeline.md); tini reaps and
# forwards SIGTERM so shutdown is graceful.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ffmpeg tini \
 && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    FIELDCHART_DATA_DIR=/data
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 3000
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--"]
# The CLI: docker compose exec app node dist/cli/main.js --help
CMD ["node", "dist/server/main.js"]
