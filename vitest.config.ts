import { configDefaults, defineConfig } from 'vitest/config';
import SlowFirstSequencer from './test/sequencer.ts';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // the real-control-plane tests run in `npm run test:cluster` (vitest.cluster.config.ts)
    exclude: [...configDefaults.exclude, 'test/cluster/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // A worker's files share its module graph (not re-imported per file): on 2 cores `npm test` went from 507 s (import
    // 220 s of it, 900 CPU-seconds) to 361 s (import 40 s, 684 CPU-seconds), 2026-12-03. The price: module state
    // outlives a file, so a file sets what it relies on (test/apiserver's transport) and restores what it changes
    // (process.env, timers).
    isolate: false,
    // most files wait on real timers, moto or child processes: 4 workers on 2 cores (3: 507 s, 4: 467 s with isolation)
    maxWorkers: 4,
    // the known-slow files start first, so none starts last on a clean clone (no duration cache): test/sequencer.ts
    sequence: { sequencer: SlowFirstSequencer },
    reporters: ['default', './test/summary-reporter.ts'],
  },
});
