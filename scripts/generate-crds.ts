/**
 * Writes the CRDs generated from src/apis/schemas.ts into crds/ (one file per kind).
 * Usage: `npx tsx scripts/generate-crds.ts [outDir]` (default: crds/ at the repository root).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateCRDs } from '../src/apis/crds.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const outDir = resolve(process.argv[2] ?? join(root, 'crds'));
mkdirSync(outDir, { recursive: true });
for (const [file, text] of Object.entries(generateCRDs())) {
  writeFileSync(join(outDir, file), text);
  console.log(`wrote ${join(outDir, file)} (${text.length} bytes)`);
}
