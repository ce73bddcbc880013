import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { KubeClient } from './client.ts';
import { FakeClock } from './clock.ts';
import { isConnectionError } from './errors.ts';
import { Informer } from './informer.ts';

/** A loopback port with nothing listening (bound, then closed). */
async function deadPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

function kubeconfig(port: number): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: dead\n  cluster:\n    server: https://127.0.0.1:${port}\n    insecure-skip-tls-verify: true`,
    'users:',
    '- name: u\n  user:\n    token: t',
    'contexts:',
    '- name: dead\n  context:\n    cluster: dead\n    user: u',
    'current-context: dead',
    '',
  ].join('\n');
}

describe('KubeClient without a server', () => {
  it('throws KubeApiError code 0 (ConnectionError) naming the request', async () => {
    const client = KubeClient.fromKubeconfig(kubeconfig(await deadPort()));
    const err = await client.get('Pod', 'p', 'ns').catch((e: unknown) => e);
    expect(isConnectionError(err)).toBe(true);
    expect(String((err as Error).message)).toMatch(
      /GET \/api\/v1\/namespaces\/ns\/pods\/p → 0 ConnectionError/,
    );
    await expect(client.evict({ name: 'p', namespace: 'ns' })).rejects.toThrow(/ConnectionError/);
  });

  it('rejects unreadable kubeconfig paths and unknown kinds with clear errors', () => {
    expect(() => KubeClient.fromKubeconfig('/nonexistent/kubeconfig')).toThrow(
      /cannot read "\/nonexistent\/kubeconfig"/,
    );
    const client = KubeClient.fromKubeconfig(kubeconfig(1));
    expect(() => client.resource('Gizmo')).toThrow(/unknown kind "Gizmo": register it/);
    expect(client.path(client.resource('Pod'), 'ns', 'p', 'eviction')).toBe(
      '/api/v1/namespaces/ns/pods/p/eviction',
    );
    expect(client.path(client.resource('NodePool'), undefined, 'default')).toBe(
      '/apis/karpenter.sh/v1/nodepools/default',
    );
  });
});

describe('Informer reconnect backoff', () => {
  it('retries a failing list with exponential backoff on the injected clock', async () => {
    const clock = new FakeClock(0);
    const client = KubeClient.fromKubeconfig(kubeconfig(await deadPort()));
    const errors: string[] = [];
    // resolved by the error callback itself; the informer registers its backoff timer in the same turn, before
    // the awaiting test resumes
    let errored: () => void = () => {};
    const inf = new Informer(client, 'Pod', {
      clock,
      backoff: { initialMs: 800, maxMs: 30_000, factor: 2, jitter: 0 },
      onError: (_e, phase) => {
        errors.push(phase);
        errored();
      },
    });
    const waitErrors = (n: number): Promise<void> =>
      errors.length >= n
        ? Promise.resolve()
        : new Promise<void>((r) => {
            errored = () => {
              if (errors.length >= n) r();
            };
          });
    inf.start();
    await waitErrors(1);
    expect(errors).toEqual(['list']);
    expect(clock.nextTimerAt()).toBe(800);
    clock.advance(800);
    await waitErrors(2);
    expect(errors).toEqual(['list', 'list']);
    expect(clock.nextTimerAt()).toBe(800 + 1600);
    clock.advance(1600);
    await waitErrors(3);
    expect(errors).toEqual(['list', 'list', 'list']);
    expect(clock.nextTimerAt()).toBe(800 + 1600 + 3200);
    expect(inf.hasSynced()).toBe(false);
    const pending = inf.waitForSync();
    await inf.stop();
    await expect(pending).rejects.toThrow(/stopped before sync/);
  });
});
