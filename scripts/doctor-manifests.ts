/**
 * Applies each manifest set of a folder (default `../shared/data/manifests`) to a fresh embedded cluster
 * (workload controllers on, no scheduler/kubelet: pods stay Pending as they would before capenter acts),
 * together with one KWOKNodeClass NodePool with limits, and prints `capenter doctor`'s findings per set.
 * Usage: `npx tsx scripts/doctor-manifests.ts [DIR] [--json]`.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { KubeObject } from '../src/apis/core.ts';
import { diagnose, readSnapshot } from '../src/doctor/index.ts';
import { applyObjects } from '../src/embedded/apply.ts';
import { startSimulatedCluster } from '../src/embedded/cluster.ts';
import { RealClock } from '../src/kube/clock.ts';

const args = process.argv.slice(2);
const json = args.includes('--json');
const dir =
  args.find((a) => !a.startsWith('--')) ??
  join(import.meta.dirname, '..', '..', 'shared', 'data', 'manifests');

function yamlFiles(path: string): string[] {
  if (statSync(path).isFile()) return /\.ya?ml$/.test(path) ? [path] : [];
  return readdirSync(path)
    .sort()
    .flatMap((f) => yamlFiles(join(path, f)));
}

const pool: KubeObject[] = [
  { apiVersion: 'karpenter.kwok.sh/v1alpha1', kind: 'KWOKNodeClass', metadata: { name: 'default' } },
  {
    apiVersion: 'karpenter.sh/v1',
    kind: 'NodePool',
    metadata: { name: 'default' },
    spec: {
      limits: { cpu: '1000' },
      template: {
        spec: {
          nodeClassRef: { group: 'karpenter.kwok.sh', kind: 'KWOKNodeClass', name: 'default' },
          requirements: [{ key: 'kubernetes.io/os', operator: 'In', values: ['linux'] }],
        },
      },
    },
  } as KubeObject,
];

const report: Record<string, unknown> = {};
for (const set of readdirSync(dir).sort()) {
  const objs: KubeObject[] = [];
  for (const f of yamlFiles(join(dir, set)))
    for (const d of parseAllDocuments(readFileSync(f, 'utf8'))) {
      const o = d.toJS() as KubeObject | null;
      if (o && typeof o === 'object' && o.kind) objs.push(o);
    }
  const sim = await startSimulatedCluster({ components: { scheduler: false, kubelet: false, podGC: false } });
  try {
    const applied = await applyObjects(sim.client, [...pool, ...objs]);
    // Let the workload controllers create their pods (until the pod count stops changing).
    let last = -1;
    for (let i = 0; i < 50; i++) {
      const n = (await sim.client.list('Pod')).items.length;
      if (n === last) break;
      last = n;
      await new Promise((r) => setTimeout(r, 200));
    }
    const findings = diagnose(await readSnapshot(sim.client, new RealClock()));
    const failed = applied.filter((a) => a.result === 'failed').length;
    report[set] = { objects: objs.length, notApplied: failed, pods: last, findings };
    if (!json) {
      console.log(`## ${set}: ${objs.length} objects (${failed} not applied), ${last} pods`);
      for (const f of findings)
        console.log(`- ${f.severity} ${f.check}: ${f.objects.join(', ')} — ${f.message}`);
      if (findings.length === 0) console.log('- no findings');
    }
  } finally {
    await sim.stop();
  }
}
if (json) console.log(JSON.stringify(report, null, 2));
