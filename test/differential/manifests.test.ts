/**
 * Real workload manifests (`test/fixtures/manifests/`, vendored from ../shared/data/manifests) applied with
 * `kubectl apply -f` (client-side OpenAPI lookup, server-side field validation) to the embedded API server
 * and, when `CAPENTER_TEST_KUBECONFIG` is set, to that real cluster: every set applies on both, except the
 * objects whose CRDs neither server has (kube-prometheus's Prometheus and Alertmanager), which both answer
 * "no matches for kind". Each set goes into its own namespace (Namespace objects dropped, namespaces
 * rewritten) so sets cannot collide. kubectl: `CAPENTER_KUBECTL`, else ~/.cache/realk8s/bin/kubectl
 * (v1.34.4), else `kubectl` on PATH; without any, the file is skipped with a message.
 */
import { execFile, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { embeddedTarget, realTarget, type Target } from './targets.ts';

const ROOT = join(import.meta.dirname, '../fixtures/manifests');

function findKubectl(): string | undefined {
  const candidates = [
    process.env.CAPENTER_KUBECTL,
    join(homedir(), '.cache/realk8s/bin/kubectl'),
    'kubectl',
  ].filter((c): c is string => Boolean(c));
  return candidates.find((c) => spawnSync(c, ['version', '--client'], { encoding: 'utf8' }).status === 0);
}
const kubectlBin = findKubectl();
if (!kubectlBin) console.warn('kubectl not found: skipping the manifest apply tests (CI installs kubectl)');

/** Kinds of the sets that are cluster-scoped (their namespace is left alone). */
const CLUSTER_SCOPED = new Set([
  'ClusterRole',
  'ClusterRoleBinding',
  'StorageClass',
  'PriorityClass',
  'RuntimeClass',
  'IngressClass',
  'NodePool',
  'EC2NodeClass',
  'CustomResourceDefinition',
  'PersistentVolume',
]);

/** What a set's apply shows besides objects applied: the answers of a real kube-apiserver v1.34. */
interface Outcome {
  /** kinds neither server serves (their CRDs are not part of the sets): "no matches for kind" */
  notServed?: string[];
  /** `Kind/name` rejected as invalid (422), e.g. upstream examples with mistakes */
  invalid?: string[];
  /** objects rejected with a strict decoding error (unknown nested fields) */
  strictErrors?: number;
}

const OUTCOMES: Record<string, Outcome> = {
  'kube-prometheus': { notServed: ['Alertmanager', 'Prometheus'] },
  // windows-custom-userdata.yaml sets nodeClassRef.group "karpenter.k8s.aws/v1" (pattern ^[^/]*$)
  'karpenter-examples/v1': { invalid: ['NodePool/windows2022'] },
  // four Deployments carry securityContext.allowPrivilegedEscalation (sic)
  'karpenter-examples/workloads': { strictErrors: 4 },
};

/** Differences kept on purpose (docs/apiserver.md): set → why, and what the embedded server shows. */
const KNOWN: Record<string, { why: string; embedded: Outcome }> = {
  'karpenter-examples/workloads': {
    why: 'unknown fields nested inside built-in kinds are not detected (no built-in schemas)',
    embedded: {},
  },
};

/** The sets: each top-level file, and each directory holding YAML files directly. */
function manifestSets(): { name: string; files: string[] }[] {
  const sets: { name: string; files: string[] }[] = [];
  const walk = (dir: string): void => {
    const entries = readdirSync(dir).sort();
    const yamls = entries.filter((e) => /\.ya?ml$/.test(e)).map((e) => join(dir, e));
    if (dir === ROOT) for (const f of yamls) sets.push({ name: relative(ROOT, f), files: [f] });
    else if (yamls.length > 0) sets.push({ name: relative(ROOT, dir), files: yamls });
    for (const e of entries) if (statSync(join(dir, e)).isDirectory()) walk(join(dir, e));
  };
  walk(ROOT);
  return sets;
}

interface Prepared {
  yaml: string;
  /** `kind/name` of every object sent */
  objects: string[];
}

function prepare(files: string[], ns: string): Prepared {
  // the set's namespace first (`kubectl create namespace` would send protobuf, which the embedded server refuses)
  const docs: Record<string, unknown>[] = [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }];
  for (const f of files)
    for (const d of parseAllDocuments(readFileSync(f, 'utf8'))) {
      const o = d.toJS() as Record<string, unknown> | null;
      if (!o || typeof o !== 'object' || !o.kind || o.kind === 'Namespace') continue;
      const meta = (o.metadata ?? {}) as Record<string, unknown>;
      if (!CLUSTER_SCOPED.has(String(o.kind))) meta.namespace = ns;
      o.metadata = meta;
      docs.push(o);
    }
  return {
    yaml: docs.map((d) => stringify(d)).join('---\n'),
    objects: docs.map((d) => `${String(d.kind)}/${String((d.metadata as { name?: string }).name)}`),
  };
}

let embedded: Target & { cluster: { kubeconfig: string } };
let dir: string;
const clusters: { name: string; kubeconfig: string }[] = [];
const id = randomBytes(3).toString('hex');

function kubectl(
  kubeconfig: string,
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      kubectlBin!,
      [
        '--kubeconfig',
        kubeconfig,
        '--cache-dir',
        join(dir, 'cache', String(clusters.findIndex((c) => c.kubeconfig === kubeconfig))),
        ...args,
      ],
      { timeout: 120_000, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, HOME: dir } },
      (err, stdout, stderr) => {
        const code = err
          ? typeof (err as { code?: unknown }).code === 'number'
            ? (err as { code: number }).code
            : 1
          : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

beforeAll(async () => {
  if (!kubectlBin) return;
  dir = mkdtempSync(join(tmpdir(), 'capenter-manifests-'));
  embedded = await embeddedTarget();
  const path = join(dir, 'embedded.kubeconfig');
  writeFileSync(path, embedded.cluster.kubeconfig);
  clusters.push({ name: 'embedded', kubeconfig: path });
  const real = process.env.CAPENTER_TEST_KUBECONFIG;
  if (real && existsSync(real)) {
    await realTarget(real); // capenter's CRDs created and Established there too
    clusters.push({ name: 'real', kubeconfig: real });
  }
}, 60_000);

afterAll(async () => {
  if (!kubectlBin) return;
  for (const c of clusters.filter((x) => x.name === 'real'))
    for (const set of manifestSets()) {
      const ns = `mf-${id}-${set.name.replace(/[^a-z0-9]+/g, '-').slice(0, 30)}`.replace(/-+$/, '');
      await kubectl(c.kubeconfig, ['delete', 'namespace', ns, '--wait=false', '--ignore-not-found']);
    }
  await embedded?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!kubectlBin)('kubectl apply -f of real manifests', () => {
  for (const set of manifestSets()) {
    const known = KNOWN[set.name];
    it(`${set.name} applies${known ? ` (known difference: ${known.why})` : ''}`, async () => {
      const ns = `mf-${id}-${set.name.replace(/[^a-z0-9]+/g, '-').slice(0, 30)}`.replace(/-+$/, '');
      const prepared = prepare(set.files, ns);
      const file = join(dir, `${ns}.yaml`);
      writeFileSync(file, prepared.yaml);
      for (const c of clusters) {
        const want =
          c.name === 'embedded' && KNOWN[set.name] ? KNOWN[set.name]!.embedded : (OUTCOMES[set.name] ?? {});
        const r = await kubectl(c.kubeconfig, ['apply', '-f', file]);
        const lines = r.stderr.split('\n').filter((l) => l.trim());
        const got = {
          cluster: c.name,
          applied: r.stdout.split('\n').filter((l) => / (created|configured|unchanged)$/.test(l)).length,
          notServed: [
            ...new Set([...r.stderr.matchAll(/no matches for kind "(\w+)"/g)].map((m) => m[1])),
          ].sort(),
          invalid: [...r.stderr.matchAll(/The (\w+) "([^"]+)" is invalid/g)]
            .map((m) => `${m[1]}/${m[2]}`)
            .sort(),
          strictErrors: lines.filter((l) => l.includes('strict decoding error')).length,
          // warnings (deprecated fields) are not errors; every other line must be accounted for above
          otherErrors: lines.filter(
            (l) =>
              !/^Warning: |no matches for kind|ensure CRDs are installed first|strict decoding error|is invalid|^\* /.test(
                l,
              ),
          ),
        };
        const rejected = (want.invalid?.length ?? 0) + (want.strictErrors ?? 0);
        const notServed = want.notServed ?? [];
        const sent = prepared.objects.filter((o) => !notServed.includes(o.split('/')[0]!)).length;
        expect(got, r.stderr).toEqual({
          cluster: c.name,
          applied: sent - rejected,
          notServed,
          invalid: want.invalid ?? [],
          strictErrors: want.strictErrors ?? 0,
          otherErrors: [],
        });
      }
    });
  }
});
