# capenter's controller image: multi-stage, non-root, read-only-root-filesystem friendly.
# Not built in this repository's CI (no image registry here); kept minimal on purpose:
#   docker build -t capenter:0.1.0 .   then   helm install capenter charts/capenter --set controller.image.repository=…
# Node 24 LTS on Debian 13 (trixie) in both stages (package.json `engines`).
# Stage 1 compiles (`npm run build`: dist/capenter.mjs + dist/data) and drops the dev dependencies and the optional
# ones: the only optional dependencies are the pinned Node 24 binaries (`node-linux-<arch>`) that give a checkout on a
# machine with an older Node its runtime; the image has its own Node.
FROM node:24-trixie-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json ./
COPY bin ./bin
COPY scripts ./scripts
COPY src ./src
COPY examples ./examples
RUN npm run build && npm prune --omit=dev --omit=optional --no-audit --no-fund

# Stage 2: distroless Node 24 on Debian 13, user nonroot (65532), only what runs.
FROM gcr.io/distroless/nodejs24-debian13:nonroot
WORKDIR /app
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/bin ./bin
COPY --from=build /src/dist ./dist
COPY --from=build /src/examples ./examples
USER 65532:65532
EXPOSE 8080 8081
ENTRYPOINT ["/nodejs/bin/node", "/app/bin/capenter.js"]
CMD ["controller"]
