/**
 * `capenter simulate --disruption` and `karpenter.sh/do-not-disrupt` durations (issue 27, parity D16), on the
 * shared case `do-not-disrupt-duration-still-running-blocks` (its copy in test/cases, as every case test reads it) (node-big, m5.2xlarge, one 500m/1Gi pod started
 * 2026-11-01) with the pod's and the Node's annotation varied.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { parseManifests } from '../../src/apis/load.ts';
import { disruptionJSON, formatDisruptionTable, simulateDisruption } from '../../src/simulate/disruption.ts';

const here = dirname(fileURLToPath(import.meta.url));
const caseInput = (
  parseYaml(
    readFileSync(join(here, '../cases/do-not-disrupt-duration-still-running-blocks.yaml'), 'utf8'),
  ) as { input: string }
).input;
const NOW = Date.parse('2026-12-02T00:00:00Z');

async function run(podValue: string, nodeValue?: string) {
  let text = caseInput.replace(
    'karpenter.sh/do-not-disrupt: 87600h',
    `karpenter.sh/do-not-disrupt: "${podValue}"`,
  );
  if (nodeValue)
    text = text.replace(
      '  name: node-big\n  labels:',
      `  name: node-big\n  annotations:\n    karpenter.sh/do-not-disrupt: "${nodeValue}"\n  labels:`,
    );
  const r = await simulateDisruption(parseManifests(text, 'case.yaml'), { region: 'us-east-1', now: NOW });
  expect(r.errors).toEqual([]);
  return r;
}

describe('simulate --disruption with do-not-disrupt durations', () => {
  it('"87600h" started 2026-11-01 still protects on 2026-12-02: no command, the reason names the end', async () => {
    const r = await run('87600h');
    expect(r.commands).toEqual([]);
    expect(r.blocked).toEqual([
      {
        node: 'node-big',
        reason:
          'pod default/batch-1-eeeee is annotated karpenter.sh/do-not-disrupt: "87600h" until 2036-10-29T00:00:00Z',
      },
    ]);
    expect(disruptionJSON(r).notices).toBeUndefined();
  });

  it('"720h" started 2026-11-01 has elapsed on 2026-12-02: node-big is replaced by a cheaper node', async () => {
    const r = await run('720h');
    expect(r.commands.map((c) => [c.decision, c.reason, c.candidates])).toEqual([
      ['replace', 'Underutilized', ['node-big']],
    ]);
  });

  it('an invalid pod value and a Node duration protect nothing, and simulate says so', async () => {
    const r = await run('abc', '1h');
    expect(r.commands.map((c) => c.decision)).toEqual(['replace']);
    const notices = [
      'Node node-big: karpenter.sh/do-not-disrupt "1h" protects nothing; on Nodes and NodeClaims only "true" counts (durations apply to pods). Use "true", or annotate the pods.',
      'Pod default/batch-1-eeeee: invalid karpenter.sh/do-not-disrupt annotation: failed to parse "abc" as a duration: time: invalid duration "abc", ignoring annotation (InvalidDoNotDisruptAnnotation). Use "true" or a positive Go duration such as "30m", "1h30m" or "87600h".',
    ];
    expect(disruptionJSON(r).notices).toEqual(notices);
    expect(formatDisruptionTable(r)).toContain(`Disruption notices:\n  - ${notices[0]}\n  - ${notices[1]}\n`);
  });
});

describe('simulate --disruption with NodeOverlays (NodeOverlay gate)', () => {
  const cheapM5 = `---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: cheap-m5-2xlarge}
spec:
  requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m5.2xlarge]}]
  price: "0.001"
`;
  const text = `${caseInput.replace('karpenter.sh/do-not-disrupt: 87600h', 'karpenter.sh/do-not-disrupt: "720h"')}\n${cheapM5}`;
  it('node-big (m5.2xlarge) overlaid to $0.001/h has no cheaper replacement: no command with the gate, replace without', async () => {
    const on = await simulateDisruption(parseManifests(text, 'case.yaml'), {
      region: 'us-east-1',
      now: NOW,
      nodeOverlay: true,
    });
    expect(on.errors).toEqual([]);
    expect(on.commands).toEqual([]);
    const off = await simulateDisruption(parseManifests(text, 'case.yaml'), {
      region: 'us-east-1',
      now: NOW,
    });
    expect(off.commands.map((c) => [c.decision, c.reason, c.candidates])).toEqual([
      ['replace', 'Underutilized', ['node-big']],
    ]);
    expect(off.notices.join('\n')).toContain('1 NodeOverlay(s) ignored (cheap-m5-2xlarge)');
  });
});
