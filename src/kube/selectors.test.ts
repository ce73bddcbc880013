import { describe, expect, it } from 'vitest';
import {
  fieldValue,
  formatFieldSelector,
  formatLabelSelector,
  matchesFields,
  matchesLabels,
  parseFieldSelector,
  parseLabelSelector,
} from './selectors.ts';

describe('label selectors', () => {
  it('formats a LabelSelector in API syntax', () => {
    expect(
      formatLabelSelector({
        matchLabels: { app: 'web' },
        matchExpressions: [
          { key: 'tier', operator: 'In', values: ['b', 'a'] },
          { key: 'env', operator: 'NotIn', values: ['dev'] },
          { key: 'karpenter.sh/nodepool', operator: 'Exists' },
          { key: 'gone', operator: 'DoesNotExist' },
        ],
      }),
    ).toBe('app=web,tier in (a,b),env notin (dev),karpenter.sh/nodepool,!gone');
    expect(formatLabelSelector({ a: '1', b: '2' })).toBe('a=1,b=2');
    expect(formatLabelSelector({})).toBe('');
  });

  it('parses every operator', () => {
    expect(parseLabelSelector('a=1, b==2,c!=3,d in (x, y),e notin (z),f,!g,h>5,i<7')).toEqual([
      { key: 'a', op: '=', values: ['1'] },
      { key: 'b', op: '=', values: ['2'] },
      { key: 'c', op: '!=', values: ['3'] },
      { key: 'd', op: 'in', values: ['x', 'y'] },
      { key: 'e', op: 'notin', values: ['z'] },
      { key: 'f', op: 'exists', values: [] },
      { key: 'g', op: '!', values: [] },
      { key: 'h', op: 'gt', values: ['5'] },
      { key: 'i', op: 'lt', values: ['7'] },
    ]);
    expect(parseLabelSelector('')).toEqual([]);
  });

  it('rejects bad syntax naming the fragment', () => {
    expect(() => parseLabelSelector('a in x')).toThrow(/expected "\(" after "in"/);
    expect(() => parseLabelSelector('a foo (b)')).toThrow(/expected an operator after "a", found "foo"/);
    expect(() => parseLabelSelector('a>b')).toThrow(/"b" is not an integer/);
  });

  it('matches with apimachinery semantics', () => {
    const labels = { app: 'web', tier: 'front', n: '10' };
    expect(matchesLabels('app=web', labels)).toBe(true);
    expect(matchesLabels('app!=web', labels)).toBe(false);
    expect(matchesLabels('missing!=x', labels)).toBe(true); // != matches absent keys
    expect(matchesLabels('tier in (front,back)', labels)).toBe(true);
    expect(matchesLabels('tier notin (front)', labels)).toBe(false);
    expect(matchesLabels('missing notin (front)', labels)).toBe(true);
    expect(matchesLabels('app,!missing', labels)).toBe(true);
    expect(matchesLabels('n>9,n<11', labels)).toBe(true);
    expect(matchesLabels('n>10', labels)).toBe(false);
    expect(
      matchesLabels({ matchExpressions: [{ key: 'tier', operator: 'In', values: ['back'] }] }, labels),
    ).toBe(false);
    expect(matchesLabels('', undefined)).toBe(true);
    expect(matchesLabels('app', undefined)).toBe(false);
  });
});

describe('field selectors', () => {
  const pod = {
    metadata: { name: 'p', namespace: 'ns' },
    spec: { nodeName: 'n1' },
    status: { phase: 'Running' },
  };
  it('parses, formats and matches dotted paths', () => {
    expect(parseFieldSelector('spec.nodeName=n1,status.phase!=Failed')).toEqual([
      { field: 'spec.nodeName', op: '=', value: 'n1' },
      { field: 'status.phase', op: '!=', value: 'Failed' },
    ]);
    expect(formatFieldSelector({ 'spec.nodeName': '' })).toBe('spec.nodeName=');
    expect(matchesFields('spec.nodeName=n1,metadata.namespace==ns', pod)).toBe(true);
    expect(matchesFields('spec.nodeName=', pod)).toBe(false);
    expect(matchesFields('spec.nodeName=', { spec: {} })).toBe(true);
    expect(matchesFields('status.phase!=Running', pod)).toBe(false);
    expect(fieldValue(pod, 'spec.missing.deep')).toBe('');
    expect(parseFieldSelector('a=x\\,y')).toEqual([{ field: 'a', op: '=', value: 'x,y' }]);
    expect(() => parseFieldSelector('nonsense')).toThrow(/term "nonsense" has no operator/);
  });
});
