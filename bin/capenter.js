#!/usr/bin/env node
// capenter's executable: runs the compiled CLI (`dist/capenter.mjs`, built by `npm ci` / `npm run build`) in this
// very process, so signals sent to this PID (SIGTERM from `kill`, a supervisor or the kubelet) reach the
// controller, which stops cleanly and releases its leader Lease. From a source checkout without a build it loads
// the TypeScript through tsx's in-process loader instead (still one process).
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const compiled = join(root, 'dist', 'capenter.mjs');
if (existsSync(compiled)) {
  await import(pathToFileURL(compiled).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(pathToFileURL(join(root, 'src', 'cli', 'main.ts')).href);
}
