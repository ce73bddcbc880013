#!/usr/bin/env node
// capenter's executable: runs the compiled CLI (`dist/capenter.mjs`, built by `npm ci` / `npm run build`) in this
// very process, so signals sent to this PID (SIGTERM from `kill`, a supervisor or the kubelet) reach the
// controller, which stops cleanly and releases its leader Lease. From a source checkout without a build it loads
// the TypeScript through tsx's in-process loader instead (still one process).
//
// capenter needs Node.js 24 or newer (package.json `engines`). This file is written so that any Node since 14
// parses it: an older Node gets one line naming the Node it needs and how to get it, and exit code 1, instead of
// a syntax error from the bundle. `npm ci` installs a pinned Node 24 into node_modules/.bin (the
// `node-linux-<arch>` optional dependency), which `npx capenter` and every npm script use.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The oldest Node.js major capenter runs on (keep in step with package.json `engines`). */
const MIN_NODE_MAJOR = 24;
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const major = Number(process.versions.node.split('.')[0]);
if (!(major >= MIN_NODE_MAJOR)) {
  const local = join(root, 'node_modules', '.bin', 'node');
  const hint = existsSync(local)
    ? `run it with the Node ${MIN_NODE_MAJOR} that npm ci installed: npx capenter … (or ${local} ${process.argv[1] ?? 'bin/capenter.js'} …)`
    : `install Node.js ${MIN_NODE_MAJOR} LTS, or run npm ci here on Linux (x64, arm64) to get a pinned Node ${MIN_NODE_MAJOR} in node_modules/.bin, then npx capenter …`;
  process.stderr.write(
    `capenter: needs Node.js ${MIN_NODE_MAJOR} or newer; this is Node.js ${process.versions.node} (${process.execPath}). ${hint}\n`,
  );
  process.exit(1);
}
const compiled = join(root, 'dist', 'capenter.mjs');
if (existsSync(compiled)) {
  await import(pathToFileURL(compiled).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(pathToFileURL(join(root, 'src', 'cli', 'main.ts')).href);
}
