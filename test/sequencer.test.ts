/** `npm test`'s file order (test/sequencer.ts): the known-slow files first, slowest first, each still a test file. */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { SLOW_TEST_FILES, slowFirst } from './sequencer.ts';

describe('slow-first sequencer', () => {
  it('names existing test files, once each', () => {
    const root = fileURLToPath(new URL('..', import.meta.url));
    expect(SLOW_TEST_FILES.filter((f) => !existsSync(`${root}${f}`) || !f.endsWith('.test.ts'))).toEqual([]);
    expect(new Set(SLOW_TEST_FILES).size).toBe(SLOW_TEST_FILES.length);
  });

  it('puts the listed files first in their listed order, the others after in their given order', () => {
    const files = [
      '/r/test/a.test.ts',
      '/r/test/e2e/cases.test.ts',
      '/r/test/b.test.ts',
      '/r/test/aws/e2e-disruption.test.ts',
      '/r/other/test/e2e/cases.test.tsx',
    ];
    expect(slowFirst(files, (f) => f)).toEqual([
      '/r/test/aws/e2e-disruption.test.ts',
      '/r/test/e2e/cases.test.ts',
      '/r/test/a.test.ts',
      '/r/test/b.test.ts',
      '/r/other/test/e2e/cases.test.tsx',
    ]);
  });
});
