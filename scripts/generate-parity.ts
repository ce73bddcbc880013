/**
 * Writes docs/parity.md from the parity table (src/parity/table.ts via src/parity/render.ts).
 * Run with `npm run generate:parity`; test/parity.test.ts fails when the file differs from this output.
 */
import { writeFileSync } from 'node:fs';
import { renderParityDoc } from '../src/parity/render.ts';

writeFileSync(new URL('../docs/parity.md', import.meta.url), renderParityDoc());
console.log('wrote docs/parity.md');
