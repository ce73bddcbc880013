/**
 * The operator against a cluster without capenter's CRDs (embedded API server, which like a real one serves
 * no karpenter.sh resources until their CRDs are created): one error naming the missing CRDs and the fix,
 * `/readyz` naming them, controllers started once they are applied; `installCRDs` applies them itself.
 * The same flow through the real CLI against a real control plane: test/cluster/controller.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { crdObjects } from '../apis/crds.ts';
import { KubeClient } from '../kube/client.ts';
import { type EmbeddedCluster, startEmbeddedCluster } from '../sim/apiserver/index.ts';
import { checkCRDs, crdProblem, installCRDs, requiredCRDs } from './crds.ts';
import { createLogger } from './logger.ts';
import { createOperator, type Operator } from './operator.ts';
import { embeddedOptions } from './options.ts';

const KWOK_AND_EC2 = [
  { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass' },
  { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass' },
];
const ALL = [
  'nodepools.karpenter.sh',
  'nodeclaims.karpenter.sh',
  'kwoknodeclasses.karpenter.kwok.sh',
  'ec2nodeclasses.karpenter.k8s.aws',
];

let srv: EmbeddedCluster | undefined;
let op: Operator | undefined;
let client: KubeClient | undefined;
afterEach(async () => {
  await op?.stop();
  client?.close();
  await srv?.stop();
  op = srv = client = undefined;
});

async function until<T>(fn: () => T | Promise<T>, what: string): Promise<NonNullable<T>> {
  const end = Date.now() + 30_000;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

interface LogLine {
  level: string;
  message: string;
  missing?: string[];
  fix?: string;
}

function start(installCRDsFlag: boolean): { lines: LogLine[] } {
  const lines: LogLine[] = [];
  const logger = createLogger({
    level: 'info',
    destination: { write: (s: string) => void lines.push(JSON.parse(s) as LogLine) },
  });
  op = createOperator({
    client: client as KubeClient,
    logger,
    options: { ...embeddedOptions(), leaderElect: false },
    installCRDs: installCRDsFlag,
    defaultMetrics: false,
    tuning: { crdRecheckSeconds: 0.05 },
  });
  return { lines };
}

async function readyz(): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://127.0.0.1:${op?.healthProbePort}/readyz`);
  return { status: res.status, body: await res.text() };
}

describe('required CRDs', () => {
  it('NodePool, NodeClaim and the CRD of each supported NodeClass capenter ships', () => {
    expect(requiredCRDs(KWOK_AND_EC2).map((r) => r.name)).toEqual(ALL);
    expect(requiredCRDs([{ group: 'example.com', kind: 'OtherNodeClass' }]).map((r) => r.name)).toEqual([
      'nodepools.karpenter.sh',
      'nodeclaims.karpenter.sh',
    ]);
  });

  it('checkCRDs names the missing ones until installCRDs applies crds/', async () => {
    srv = await startEmbeddedCluster();
    client = KubeClient.fromKubeconfig(srv.kubeconfig);
    const req = requiredCRDs(KWOK_AND_EC2);
    const before = await checkCRDs(client, req);
    expect(before).toEqual({ missing: ALL });
    expect(crdProblem(before)).toBe(
      'CustomResourceDefinitions not installed: nodepools.karpenter.sh, nodeclaims.karpenter.sh, ' +
        'kwoknodeclasses.karpenter.kwok.sh, ec2nodeclasses.karpenter.k8s.aws; install with ' +
        '`kubectl apply -f crds/` (or run `capenter controller --install-crds`)',
    );
    expect(await installCRDs(client)).toEqual(Object.values(crdObjects()).map((c) => c.metadata.name));
    const after = await until(async () => {
      const c = await checkCRDs(client as KubeClient, req);
      return c.missing.length === 0 ? c : undefined;
    }, 'CRDs served');
    expect(after).toEqual({ missing: [] });
    expect(crdProblem(after)).toBeUndefined();
    // applying again (an existing copy) is a no-op, not an error
    await installCRDs(client);
  });
});

describe('operator without the CRDs', () => {
  it('logs one error naming the CRDs and the fix, /readyz names them, controllers start once applied', async () => {
    srv = await startEmbeddedCluster();
    client = KubeClient.fromKubeconfig(srv.kubeconfig);
    const { lines } = start(false);
    await op?.start();
    const errors = await until(() => {
      const e = lines.filter((l) => l.level === 'ERROR');
      return e.length > 0 ? e : undefined;
    }, 'the missing-CRD error');
    expect(errors[0]?.missing).toEqual(ALL);
    expect(errors[0]?.fix).toBe('kubectl apply -f crds/');
    expect(errors[0]?.message).toContain('nodepools.karpenter.sh');
    const r = await readyz();
    expect(r.status).toBe(503);
    expect(r.body).toContain('not ready: CustomResourceDefinitions not installed: nodepools.karpenter.sh');
    expect(r.body).toContain('kubectl apply -f crds/');
    // several re-checks later (every 50 ms): still exactly one error, no controller started
    await new Promise((res) => setTimeout(res, 300));
    expect(lines.filter((l) => l.level === 'ERROR')).toHaveLength(1);
    expect(lines.some((l) => l.message === 'starting controllers')).toBe(false);
    // a user applies the CRDs (as kubectl apply -f crds/): the operator proceeds on its own
    await installCRDs(client);
    await until(() => op?.readiness() === undefined, 'ready');
    expect((await readyz()).status).toBe(200);
    expect(lines.map((l) => l.message)).toContain('CustomResourceDefinitions served');
    expect(lines.map((l) => l.message)).toContain('starting controllers');
    expect(lines.filter((l) => l.level === 'ERROR')).toHaveLength(1);
  });

  it('installCRDs (--install-crds) applies them: no error, ready', async () => {
    srv = await startEmbeddedCluster();
    client = KubeClient.fromKubeconfig(srv.kubeconfig);
    const { lines } = start(true);
    await op?.start();
    await until(() => op?.readiness() === undefined, 'ready');
    expect(lines.filter((l) => l.level === 'ERROR')).toEqual([]);
    expect(lines.find((l) => l.message.startsWith('applied CustomResourceDefinitions'))).toMatchObject({
      level: 'INFO',
    });
    expect((await checkCRDs(client, requiredCRDs(KWOK_AND_EC2))).missing).toEqual([]);
  });
});
