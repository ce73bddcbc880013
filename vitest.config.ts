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
    // most files wait on real timers, moto or child processes (user CPU is ~40% of wall time): 3 workers on 2 cores
    maxWorkers: 3,
    // the known-slow files start first, so none starts last on a clean clone (no duration cache): test/sequencer.ts
    sequence: { sequencer: SlowFirstSequencer },
    reporters: ['default', './test/summary-reporter.ts'],
  },
});
