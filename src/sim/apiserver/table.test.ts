import { describe, expect, it } from 'vitest';
import { jsonPath } from './table.ts';

describe('jsonPath (printer columns)', () => {
  it('reads label keys with escaped dots, as the NodeClaim CRD printer columns use', () => {
    const nc = { metadata: { labels: { 'node.kubernetes.io/instance-type': 'm5.large' } } };
    expect(jsonPath(nc, '.metadata.labels.node\\.kubernetes\\.io/instance-type')).toEqual(['m5.large']);
  });
  it('indexes arrays', () => {
    const o = { status: { conditions: [{ type: 'Ready' }, { type: 'Launched' }] } };
    expect(jsonPath(o, '.status.conditions[1].type')).toEqual(['Launched']);
    expect(jsonPath(o, '{.status.conditions[*].type}')).toEqual(['Ready', 'Launched']);
  });
});
