import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ItemExponentialRateLimiter } from '../../kube/backoff.ts';
import { FakeClock } from '../../kube/clock.ts';
import { silentLogger } from '../../kube/logger.ts';
import { WorkQueue } from '../../kube/workqueue.ts';
import { QueueController } from './controller.ts';
import { workQueueMetrics } from './metrics.ts';

/** `name{labels} value` lines of one metric family in the exposition text. */
async function lines(registry: Registry, name: string): Promise<string[]> {
  return (await registry.getSingleMetricAsString(name))
    .split('\n')
    .filter((l) => l.startsWith(name) && !l.startsWith('#'));
}

describe('controller-runtime and workqueue metrics', () => {
  it('work queue: adds (not re-adds while queued), depth, queue and work durations, unfinished work, retries', async () => {
    const registry = new Registry();
    const clock = new FakeClock();
    const m = workQueueMetrics(registry, 'nodeclaim.lifecycle');
    const q = new WorkQueue<string>({
      clock,
      observer: m,
      rateLimiter: new ItemExponentialRateLimiter(0.005, 1000),
    });
    m.track(q as WorkQueue<unknown>);
    q.add('a');
    q.add('a');
    q.add('b');
    expect(await lines(registry, 'workqueue_adds_total')).toEqual([
      'workqueue_adds_total{name="nodeclaim.lifecycle",controller="nodeclaim.lifecycle"} 2',
    ]);
    expect(await lines(registry, 'workqueue_depth')).toEqual([
      'workqueue_depth{name="nodeclaim.lifecycle",controller="nodeclaim.lifecycle",priority=""} 2',
    ]);
    clock.advance(3000);
    expect(q.tryGet()).toBe('a');
    // a key added again while it is processed counts once, and not again when done re-queues it
    q.add('a');
    clock.advance(1500);
    expect(await lines(registry, 'workqueue_unfinished_work_seconds')).toEqual([
      'workqueue_unfinished_work_seconds{name="nodeclaim.lifecycle",controller="nodeclaim.lifecycle"} 1.5',
    ]);
    expect(await lines(registry, 'workqueue_longest_running_processor_seconds')).toEqual([
      'workqueue_longest_running_processor_seconds{name="nodeclaim.lifecycle",controller="nodeclaim.lifecycle"} 1.5',
    ]);
    q.addRateLimited('c');
    q.done('a');
    expect(await lines(registry, 'workqueue_adds_total')).toEqual([
      'workqueue_adds_total{name="nodeclaim.lifecycle",controller="nodeclaim.lifecycle"} 3',
    ]);
    expect(await lines(registry, 'workqueue_retries_total')).toEqual([
      'workqueue_retries_total{name="nodeclaim.lifecycle",controller="nodeclaim.lifecycle"} 1',
    ]);
    const queued = await lines(registry, 'workqueue_queue_duration_seconds');
    expect(queued).toContain(
      'workqueue_queue_duration_seconds_sum{name="nodeclaim.lifecycle",controller="nodeclaim.lifecycle"} 3',
    );
    expect(queued).toContain(
      'workqueue_queue_duration_seconds_count{name="nodeclaim.lifecycle",controller="nodeclaim.lifecycle"} 1',
    );
    expect(await lines(registry, 'workqueue_work_duration_seconds')).toContain(
      'workqueue_work_duration_seconds_sum{name="nodeclaim.lifecycle",controller="nodeclaim.lifecycle"} 1.5',
    );
    // b and the re-queued a wait; nothing is processed any more
    expect(await lines(registry, 'workqueue_depth')).toEqual([
      'workqueue_depth{name="nodeclaim.lifecycle",controller="nodeclaim.lifecycle",priority=""} 2',
    ]);
    expect(await lines(registry, 'workqueue_unfinished_work_seconds')).toEqual([
      'workqueue_unfinished_work_seconds{name="nodeclaim.lifecycle",controller="nodeclaim.lifecycle"} 0',
    ]);
  });

  it('reconciles: results success / requeue / requeue_after / error, errors, time, workers', async () => {
    const registry = new Registry();
    const clock = new FakeClock();
    // one outcome per key; the requeues wait on the fake clock, so every key is reconciled once
    const outcomes: Record<string, () => Promise<{ requeue?: boolean; requeueAfter?: number } | undefined>> =
      {
        a: async () => {
          clock.advance(250);
          return undefined;
        },
        b: async () => ({ requeue: true }),
        c: async () => ({ requeueAfter: 30 }),
        d: async () => ({}),
        e: async () => {
          throw new Error('boom');
        },
      };
    let calls = 0;
    let during: string[] = [];
    const c = new QueueController({
      name: 'nodepool.counter',
      clock,
      logger: silentLogger(),
      concurrency: 3,
      registry,
      reconcile: async (key) => {
        calls++;
        if (key === 'a') during = await lines(registry, 'controller_runtime_active_workers');
        return outcomes[key]!();
      },
    });
    expect(await lines(registry, 'controller_runtime_reconcile_total')).toEqual([
      'controller_runtime_reconcile_total{controller="nodepool.counter",result="success"} 0',
      'controller_runtime_reconcile_total{controller="nodepool.counter",result="error"} 0',
      'controller_runtime_reconcile_total{controller="nodepool.counter",result="requeue"} 0',
      'controller_runtime_reconcile_total{controller="nodepool.counter",result="requeue_after"} 0',
    ]);
    const ac = new AbortController();
    const run = c.start(ac.signal);
    for (const key of Object.keys(outcomes)) {
      c.enqueue(key);
      // the reconcile of this key settles before the next is queued (event-loop turns, no timers)
      for (let i = 0; i < 50 && c.queue.processingLen() + c.queue.len() > 0; i++)
        await new Promise((r) => setImmediate(r));
    }
    ac.abort();
    await run;
    expect(calls).toBe(5);
    expect(during).toEqual(['controller_runtime_active_workers{controller="nodepool.counter"} 1']);
    expect(await lines(registry, 'controller_runtime_reconcile_total')).toEqual([
      'controller_runtime_reconcile_total{controller="nodepool.counter",result="success"} 2',
      'controller_runtime_reconcile_total{controller="nodepool.counter",result="error"} 1',
      'controller_runtime_reconcile_total{controller="nodepool.counter",result="requeue"} 1',
      'controller_runtime_reconcile_total{controller="nodepool.counter",result="requeue_after"} 1',
    ]);
    expect(await lines(registry, 'controller_runtime_reconcile_errors_total')).toEqual([
      'controller_runtime_reconcile_errors_total{controller="nodepool.counter"} 1',
    ]);
    for (const zero of [
      'controller_runtime_reconcile_panics_total',
      'controller_runtime_terminal_reconcile_errors_total',
      'controller_runtime_reconcile_timeouts_total',
    ])
      expect(await lines(registry, zero)).toEqual([`${zero}{controller="nodepool.counter"} 0`]);
    expect(await lines(registry, 'controller_runtime_max_concurrent_reconciles')).toEqual([
      'controller_runtime_max_concurrent_reconciles{controller="nodepool.counter"} 3',
    ]);
    expect(await lines(registry, 'controller_runtime_active_workers')).toEqual([
      'controller_runtime_active_workers{controller="nodepool.counter"} 0',
    ]);
    const time = await lines(registry, 'controller_runtime_reconcile_time_seconds');
    expect(time).toContain(
      'controller_runtime_reconcile_time_seconds_sum{controller="nodepool.counter"} 0.25',
    );
    expect(time).toContain(
      'controller_runtime_reconcile_time_seconds_count{controller="nodepool.counter"} 5',
    );
    expect(time).toContain(
      'controller_runtime_reconcile_time_seconds_bucket{le="0.25",controller="nodepool.counter"} 5',
    );
    expect(time).toContain(
      'controller_runtime_reconcile_time_seconds_bucket{le="0.2",controller="nodepool.counter"} 4',
    );
  });
});
